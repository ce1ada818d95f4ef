/* SPDX-License-Identifier: MIT */
/* debuginfo-private.h - what the files of the debug-info search share
 * (internal to symbols/): the context, the search for a debug file
 * (debuginfo.c), the libdwfl session of each object (modules.c) and mount
 * tables (mountinfo.c). */
#ifndef SYM_DEBUGINFO_PRIVATE_H
#define SYM_DEBUGINFO_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <elfutils/libdwfl.h>

#include "debuginfo.h"

#define DBG_BID_MAX 64
#define DBG_SYSTEM_DIR "/usr/lib/debug"

/* ---- mount tables (mountinfo.c) ------------------------------------------ */

/* A mount of a process, and the host directory it shows (NULL when the
 * host cannot reach it, e.g. a tmpfs of the process's own). */
struct sym_mount {
	char *dir;
	char *host;
};

/* A process's mount table, in mount order (a later mount over the same
 * directory hides the earlier one). */
struct sym_mounts {
	struct sym_mount *v;
	size_t n;
};

/** Match the text of /proc/PID/mountinfo (proc) with that of the host's
 * /proc/self/mountinfo (host) by device and root: each mount of the process
 * gets the host directory that shows the same files.  Malformed lines are
 * skipped.  Returns 0 or -ENOMEM. */
int sym_mounts_parse(const char *proc, size_t proc_len, const char *host, size_t host_len,
		     struct sym_mounts *out);
/** The host path of path (absolute, as the process sees it), through the
 * innermost mount containing it.
 * @return owned: free(); NULL when the host cannot reach it (errno ENOENT)
 *         or out of memory (errno ENOMEM). */
char *sym_mounts_path(const struct sym_mounts *m, const char *path);
void sym_mounts_release(struct sym_mounts *m);

/* ---- the context ---------------------------------------------------------- */

/* Where files are looked for before their own paths: a prefix (a --symfs
 * sysroot, /proc/PID/root) or a process's mount table. */
struct dbg_root {
	char *prefix;
	struct sym_mounts mounts;
};

struct dbg_module;

struct debuginfo {
	char **dirs; /* --debug-dir, CYGPROF_DEBUG_DIRS */
	size_t ndirs;
	struct dbg_root *roots; /* the symfs first, then processes */
	size_t nroots;
	int has_symfs;
	char **warned;
	size_t nwarned;
	debuginfo_warn_fn warn;
	void *warn_arg;
	Dwfl *dfd;                 /* file-less modules asking debuginfod */
	struct dbg_module **mods;  /* libdwfl sessions, one per object file */
	size_t nmods;
};

void dbg_warn(struct debuginfo *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Path under root r (0 <= r < d->nroots) of path, or of path itself for
 * r == d->nroots.  Owned: free(); NULL when the root cannot reach it or
 * out of memory (errno says which). */
char *dbg_root_path(const struct debuginfo *d, size_t r, const char *path);

/* ---- the search (debuginfo.c) --------------------------------------------- */

/* What an ELF file offers the search. */
struct dbg_probe {
	bool dwarf;  /* a .debug_info with contents */
	bool symtab; /* a .symtab with symbols */
	uint8_t bid[DBG_BID_MAX];
	size_t bid_len;
	char *link; /* .gnu_debuglink name (owned), NULL when none */
	uint32_t crc;
	dev_t dev;
	ino_t ino;
};

/** Read what the search needs from the ELF file at path, without mapping
 * it.  Returns 0, -errno of the open (-ENOENT, -ENOTSUP for what is not a
 * regular file), -ENOEXEC (not ELF), -ENOMEM.  dbg_probe_release() after. */
int dbg_probe_file(const char *path, struct dbg_probe *p);
void dbg_probe_release(struct dbg_probe *p);

/* The object a debug file is looked for. */
struct dbg_target {
	const char *path;   /* as recorded; NULL when unknown */
	const uint8_t *bid; /* recorded, else the object file's */
	size_t bid_len;
	const struct dbg_probe *self; /* the object file found, NULL when gone */
};

/** The object at t->path: the first file under the roots, then at the path
 * itself, that is ELF and has the build-id t->bid (a file with another one
 * is refused with a warning).
 * @param[out] file owned: free(); the path opened.
 * Returns 0, -ENOENT, -ENOMEM. */
int dbg_find_object(struct debuginfo *d, const struct dbg_target *t, char **file,
		    struct dbg_probe *p);

/** The separate debug file of t (see debuginfo.h for the order).
 * @param[out] out owned: free().
 * Returns 0, -ENOENT, -ENOMEM. */
int dbg_search(struct debuginfo *d, const struct dbg_target *t, char **out);

/** The debug file with build-id bid by DIR/.build-id/ in every debug and
 * system directory, then through debuginfod; what a dwz file
 * (.gnu_debugaltlink) is found by.  of names the file that refers to it
 * in warnings.  Same returns as dbg_search(). */
int dbg_search_build_id(struct debuginfo *d, const char *of, const uint8_t *bid, size_t bid_len,
			char **out);

/* ---- libdwfl sessions (modules.c) ----------------------------------------- */

/** The libdwfl module of the object at path with build-id bid, reported at
 * bias 0 (module addresses are the object's ELF addresses) in a session of
 * its own; one per (path, build-id) and context.
 * @param[out] mod borrowed until debuginfo_free(); NULL when neither the
 *             object nor a debug file of it was found.
 * Returns 0 or -ENOMEM. */
int dbg_module(struct debuginfo *d, const char *path, const uint8_t *bid, size_t bid_len,
	       Dwfl_Module **mod);
void dbg_modules_free(struct debuginfo *d);

#endif
