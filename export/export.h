/* SPDX-License-Identifier: MIT */
/* export.h - writers of the formats other tools read (cygprof export).
 *
 * Each format is one file here: a short reader on the capture view
 * (analysis/view.h) that writes one output to a FILE, or for gmon several
 * files (one per executable) it asks the caller for.  cli/cmd-export.c
 * parses the options and opens the view; cli_export() opens the output
 * files (through cli_output_open(): never replacing what is not an
 * earlier output of the same kind without --force) and calls the format's
 * write() or write_files().  cygprof gprof --gmon-out runs the gmon row
 * the same way.
 *
 * Error convention: write() returns 0, a negative errno or a CYGPROF_E_*
 * from the view; it prints nothing (warnings go through the warn callback)
 * and never exits.  Output errors are the caller's (ferror()). */
#ifndef EXPORT_EXPORT_H
#define EXPORT_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "out-kind.h"

struct view;

/* What the folded and pprof exports weigh stacks by. */
enum export_weight {
	EXPORT_W_DEFAULT = 0, /* the format's own choice: self time, or samples
			       * when the capture has no times */
	EXPORT_W_SELF,        /* exact self time (ns) */
	EXPORT_W_CALLS,       /* calls */
	EXPORT_W_SAMPLES,     /* perf samples */
	EXPORT_W_ALLOCATED,   /* --memory: bytes allocated */
	EXPORT_W_LEAKED,      /* --memory: bytes never freed */
	EXPORT_W_PEAK,        /* --memory: bytes live at the heap's peak */
};

struct export_opts {
	const char *file;          /* the capture's path, for messages */
	enum export_weight weight; /* --weight / --memory */
	int allocations;           /* chrome: allocations as instant events */
	/* one warning line, printed by the caller as "cygprof: warning: ..." */
	void (*warn)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
	/* one error line, printed by the caller as "cygprof: ...": what the
	 * capture lacks (write() then returns EXPORT_E_LACKS), or a note that
	 * is not a warning */
	void (*error)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
	/* one line on standard output, printed by the caller as "cygprof:
	 * ...": what write_files() wrote */
	void (*info)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
	/* Progress (may be NULL): called now and then from the loops that
	 * read the capture (at least once per thread or block of events, so
	 * the callee limits what it prints), with how many of unit
	 * ("events": timeline and memory events, "calls": the calls of the
	 * trees, "samples": perf samples) were read of the total the format
	 * reads; progress_arg is the caller's. */
	void (*progress)(const char *unit, uint64_t done, uint64_t total, void *arg);
	void *progress_arg;
};

/* ---- for the formats: their progress (exporters.c) ------------------------ */

/* What a format read so far, told to export_opts.progress. */
struct export_progress {
	const struct export_opts *o;
	const char *unit;
	uint64_t done, total;
};

/* Start at 0 of total (unit static). */
void export_progress_start(struct export_progress *pg, const struct export_opts *o,
			   const char *unit, uint64_t total);
/* n more read. */
void export_progress_add(struct export_progress *pg, uint64_t n);
/* done read in all (it never goes back). */
void export_progress_to(struct export_progress *pg, uint64_t done);
/* The timeline events of every thread (view_threads()' events), 0 when
 * they cannot be read; the calls of every thread's tree. */
uint64_t export_timeline_events(struct view *v);
uint64_t export_tree_calls(struct view *v);
/* A memory_opts.progress (analysis/memory.h) telling pg's progress: arg is
 * the struct export_progress, its total the memory events. */
void export_progress_mem(uint64_t done, uint64_t total, void *arg);

/* write() said through o->error (or write_files() through its files) what
 * went wrong: exit 1, nothing more printed. */
#define EXPORT_E_LACKS (-20100)

/* The slice a thread's wait for cygprof's collector (view_waits()) is in
 * the timeline exports. */
#define EXPORT_WAIT_NAME "[cygprof: waiting for the collector]"

/* The files of an exporter that writes several (gmon: one per
 * executable), made by the caller (cli/: cli_output_*(), the one rule of
 * what an output may replace).  One is open at a time. */
struct export_files {
	/* Whether path may be written (each is checked before the first is
	 * opened); the caller ends the program when not. */
	void (*check)(const struct export_files *fs, const char *path);
	/* A new file that becomes path when closed without error; NULL when
	 * it cannot be made (said by the caller). */
	FILE *(*open)(const struct export_files *fs, const char *path);
	/* The file last opened: kept when err is 0, else dropped and err said
	 * with its name.  0, or EXPORT_E_LACKS when something was said. */
	int (*close)(const struct export_files *fs, int err);
	void *ctx; /* the caller's */
};

struct exporter {
	const char *name;    /* --format NAME */
	const char *summary; /* one line for --help */
	const char *readers; /* the tools that read it, for the man page */
	/* the kind of its output files (common/out-kind.h): what it may replace */
	enum out_kind out_kind;
	const char *default_out; /* NULL: standard output */
	int binary;              /* not for a terminal */
	int (*write)(struct view *v, const struct export_opts *o, FILE *f);
	/* A format of several files has this instead of write(): their names
	 * are made from out (default_out when none was given). */
	int (*write_files)(struct view *v, const struct export_opts *o, const char *out,
			   const struct export_files *fs);
};

/* ---- pprof in memory (cygprof push, record --push) ----------------------- */

/* export --format=pprof's bytes (gzip'd profile.proto) in a new buffer
 * (*out, free()); 0 or an error as write()'s. */
int export_pprof_bytes(struct view *v, const struct export_opts *o, uint8_t **out, size_t *len);

/* Call paths by function name, path 0 the root, a path's parent before it:
 * the profile of an interval (record --push), one sample per path with a
 * non-zero value, one location and function per name. */
struct pprof_paths {
	size_t npaths;
	const uint32_t *parent, *fn; /* per path; fn indexes names */
	const char *const *names;
	size_t nnames;
	int nval, def;               /* sample types, and the default one */
	const char *vtype[4], *vunit[4];
	const int64_t *val[4];       /* per path */
	uint64_t time_ns, duration_ns; /* the interval (time: its start, unix ns) */
};

/* The gzip'd profile.proto of pp in a new buffer (*out, free()); 0 or -ENOMEM. */
int export_pprof_paths(const struct pprof_paths *pp, uint8_t **out, size_t *len);

/* Every format, NULL-terminated, in the order --help lists them. */
extern const struct exporter *const exporters[];
const struct exporter *exporter_find(const char *name);

#endif
