/* SPDX-License-Identifier: MIT */
/* debuginfo.h - find the debug information of an object recorded in a
 * capture, and name its addresses from it (libdwfl, elfutils).
 *
 * An object is known by its path (as the traced process saw it), its GNU
 * build-id (as recorded) and, to name addresses, its load bias.  Files are
 * looked for under each root first (a --symfs sysroot, then the roots of
 * processes added with debuginfo_add_proc()), then as the path says.
 *
 * The search for a separate debug file tries, in order:
 *   1. by build-id: DIR/.build-id/xx/yyyy.debug in each debug directory
 *      (--debug-dir, then CYGPROF_DEBUG_DIRS, colon-separated), then in
 *      each system directory (ROOT/usr/lib/debug for each root, the host
 *      directory a process's /usr/lib/debug is mounted from, then
 *      /usr/lib/debug);
 *   2. DIR/<basename>.debug in each debug directory;
 *   3. by .gnu_debuglink (name and CRC32 read from the object): in the
 *      object's directory, its .debug/ subdirectory (under each root, then
 *      as is), SYSDIR/<object's directory> for each system directory, and
 *      each debug directory;
 *   4. through debuginfod (libdwfl's client, only when DEBUGINFOD_URLS is
 *      set).
 * A candidate with the object's DWARF (.debug_info) ends the search; one
 * with only a symbol table (objcopy --only-keep-debug of a program built
 * without -g) answers when no candidate has DWARF.  A candidate whose
 * build-id differs from the object's (or, by debuglink, whose CRC differs)
 * is refused with one warning; so is an object file whose build-id is not
 * the one recorded.  When the object is gone a debug file found by
 * build-id still answers.
 *
 * Files are opened only if they are regular files (sym_open_regular()).
 * The search and debuginfo_find() read files without mapping them (the
 * collector uses them on paths a traced program named); the lookups that
 * read DWARF and symbol tables (srcline.h, sym_name_from_debug()) let
 * libdwfl map them.
 *
 * Error convention: negative errno; nothing here exits.  Warnings go to the
 * warn callback (by default one "cygprof: warning: ..." line on stderr),
 * each at most once per context.  A context is not thread-safe. */
#ifndef SYM_DEBUGINFO_H
#define SYM_DEBUGINFO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct debuginfo;

typedef void (*debuginfo_warn_fn)(void *arg, const char *msg);

/** A search context with no directories but /usr/lib/debug (use
 * debuginfo_add_dir() and debuginfo_add_env()).  Owned: debuginfo_free(). */
struct debuginfo *debuginfo_new(void);
/** Free d, its debug files and the libdwfl sessions of its objects. */
void debuginfo_free(struct debuginfo *d);

/** Add a debug directory (searched before the ones added later).
 * Returns 0, -EINVAL (empty), -ENOMEM. */
int debuginfo_add_dir(struct debuginfo *d, const char *dir);
/** Add the directories of CYGPROF_DEBUG_DIRS (colon-separated). */
int debuginfo_add_env(struct debuginfo *d);
/** Where warnings go; fn NULL silences them. */
void debuginfo_set_warn(struct debuginfo *d, debuginfo_warn_fn fn, void *arg);

/** A sysroot, as perf's --symfs: objects and system debug files are looked
 * for under root first (ROOT/path, ROOT/usr/lib/debug/...), then where
 * their paths say; build-ids decide.  Set it before the first lookup.
 * Returns 0, -EINVAL (empty), -ENOMEM. */
int debuginfo_set_symfs(struct debuginfo *d, const char *root);

/** The files process pid saw, for a process in another mount namespace (a
 * container, a flatpak): its objects and /usr/lib/debug through
 * /proc/PID/root while it runs, and through the host directories its
 * mounts come from (/proc/PID/mountinfo against /proc/self/mountinfo),
 * which still serve after it ended.  Nothing is added for a process in
 * our own mount namespace.  Call it while the process runs.
 * Returns 0, -ENOMEM, or -errno when /proc/PID cannot be read. */
int debuginfo_add_proc(struct debuginfo *d, pid_t pid);

/** Find the file holding the debug information of the object at path (may
 * be NULL or gone) with build-id bid (bid_len 0 when unknown): the object
 * itself when it has DWARF, else a separate file (see the top of this
 * header).
 * @param[out] out owned: free().
 * Returns 0, -ENOENT when nothing usable was found, -ENOMEM. */
int debuginfo_find(struct debuginfo *d, const char *path, const uint8_t *bid, size_t bid_len,
		   char **out);

/** Name runtime address addr of the object at obj_path, loaded at bias
 * (runtime address - ELF address) with build-id bid (bid_len 0: unknown),
 * from its symbol table or that of its separate debug file: what a capture
 * left as an address (an object recorded stripped, or whose debug file was
 * found later) named at report time.  Function symbols only; among aliases
 * the same name the collector picks.  The object's symbols are read once
 * per context.
 * @param[out] name owned: free(); demangled (C++).
 * @param[out] start runtime address of the function (may be NULL).
 * @param[out] size its size, 0 when unknown (may be NULL).
 * Returns 0, -ENOENT (no symbol covers addr, or no symbols), -ENOMEM. */
int sym_name_from_debug(struct debuginfo *d, const char *obj_path, const uint8_t *bid,
			size_t bid_len, uint64_t bias, uint64_t addr, char **name, uint64_t *start,
			uint64_t *size);

/** CRC32 as .gnu_debuglink uses it (zlib's), continuing from crc. */
uint32_t debuginfo_crc32(uint32_t crc, const void *buf, size_t len);

#endif
