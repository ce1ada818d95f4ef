/* SPDX-License-Identifier: MIT */
/* debuginfo.h - find the DWARF of an object recorded in a capture.
 *
 * For an object (its path and the GNU build-id stored in the capture) the
 * search tries, in order:
 *   1. the object itself, when it exists, matches the build-id and has
 *      .debug_info;
 *   2. by build-id: DIR/.build-id/xx/yyyy.debug for each debug directory
 *      (--debug-dir, then CYGPROF_DEBUG_DIRS, colon-separated, then
 *      /usr/lib/debug), and DIR/<basename>.debug for each directory given
 *      (not /usr/lib/debug);
 *   3. by .gnu_debuglink (name and CRC32 read from the object): in the
 *      object's directory, its .debug/ subdirectory, /usr/lib/debug/<dir>,
 *      and each debug directory;
 *   4. through debuginfod (libdebuginfod.so.1, loaded with dlopen only when
 *      DEBUGINFOD_URLS is set).
 * A candidate whose build-id differs from the object's (or, by debuglink,
 * whose CRC differs) is refused with one warning; so is an object file whose
 * build-id is not the one recorded.  When the object is gone a debug file
 * found by build-id still answers.
 *
 * Error convention: negative errno; nothing here exits.  Warnings go to the
 * warn callback (by default one "cygprof: warning: ..." line on stderr),
 * each at most once per context. */
#ifndef SYM_DEBUGINFO_H
#define SYM_DEBUGINFO_H

#include <stddef.h>
#include <stdint.h>

struct debuginfo;

typedef void (*debuginfo_warn_fn)(void *arg, const char *msg);

/** A search context with no directories but /usr/lib/debug (use
 * debuginfo_add_dir() and debuginfo_add_env()). */
struct debuginfo *debuginfo_new(void);
void debuginfo_free(struct debuginfo *d);

/** Add a debug directory (searched before the ones added later). */
int debuginfo_add_dir(struct debuginfo *d, const char *dir);
/** Add the directories of CYGPROF_DEBUG_DIRS (colon-separated). */
int debuginfo_add_env(struct debuginfo *d);
/** Where warnings go; fn NULL silences them. */
void debuginfo_set_warn(struct debuginfo *d, debuginfo_warn_fn fn, void *arg);

/** Find the file holding the DWARF of the object at path (may be NULL or
 * gone) with build-id bid (bid_len 0 when unknown).
 * @param[out] out owned: free(); the object itself or a separate file.
 * Returns 0, -ENOENT when nothing usable was found, -ENOMEM. */
int debuginfo_find(struct debuginfo *d, const char *path, const uint8_t *bid, size_t bid_len,
		   char **out);

/** CRC32 as .gnu_debuglink uses it (zlib's), continuing from crc. */
uint32_t debuginfo_crc32(uint32_t crc, const void *buf, size_t len);

#endif
