/* SPDX-License-Identifier: MIT */
/* import-perf.h - the samples of a separate `perf record -k CLOCK_MONOTONIC
 * -g` run, read from `perf script`'s text, added to a capture of the same
 * run (cygprof import-perf).
 *
 * The steps, each its own function so that the command says which failed:
 *   perf_script_read()    the whole text into samples: the time, pid/tid,
 *                         period and event of each, and its user frames
 *                         innermost first (kernel frames dropped, the
 *                         sample marked), each with the object perf named;
 *   import_target_load()  what the capture says of the run, from a view:
 *                         its clock pairing (meta "clock_start": the
 *                         CLOCK_MONOTONIC time of its start), its end, its
 *                         processes, threads and objects, the size of its
 *                         stack stash, and whether it holds imported
 *                         samples already;
 *   import_perf_open()    the capture reopened for writing
 *                         (cygprof_capture_open_rw(): a copy renamed over it
 *                         at the end, so a failure never damages it);
 *   import_perf_place()   each sample on the capture's clock, kept when it
 *                         falls within the recording and belongs to a
 *                         recorded process, matched to the recorded thread
 *                         by its tid and time (the process's when its thread
 *                         ran no instrumented code), its frames at runtime
 *                         addresses in the stack stash (capture/stack-stash.h)
 *                         continuing the capture's ids, in time order;
 *   import_perf_commit()  the new stack nodes and samples written, the
 *                         capture closed (discarded on error).
 *
 * Error convention: 0, a negative errno, a CYGPROF_E_* of the capture or
 * view, or one of the IMPORT_E_* below; nothing here prints or exits.
 */
#ifndef CYGPROF_IMPORT_PERF_H
#define CYGPROF_IMPORT_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cygprof/cygprof-capture.h"

/* A line of the text is not what perf script writes: its number and what
 * is wrong are in the script's err_line and err_what. */
#define IMPORT_E_LINE (-21101)
/* The text holds no sample. */
#define IMPORT_E_NO_SAMPLES (-21102)
/* The capture has no clock pairing (a capture of an older cygprof). */
#define IMPORT_E_NO_CLOCK (-21103)
/* The capture already holds imported samples. */
#define IMPORT_E_IMPORTED (-21104)

/* One sample of the text. */
struct perf_sample {
	uint64_t mono_ns;       /* CLOCK_MONOTONIC */
	uint64_t period;
	uint32_t pid, tid;      /* pid 0: not given */
	bool has_period;
	bool timed;             /* cpu-clock or task-clock: the period is ns */
	bool kernel;            /* it hit the kernel */
	size_t frame0, nframes; /* its frames in the script's arrays */
	size_t line;            /* of its header */
};

struct perf_script {
	struct perf_sample *s;
	size_t n, cap;
	uint64_t *frames;  /* user frames, each sample's innermost first */
	uint32_t *dso;     /* per frame: index into dsos, UINT32_MAX when not given */
	size_t nframes, cframes;
	char **dsos;       /* the object paths perf printed, each once */
	size_t ndsos;
	size_t err_line;      /* IMPORT_E_LINE: the line (from 1) */
	const char *err_what; /* and what is wrong with it (static) */
};

/** Read all of f.  Returns 0, IMPORT_E_LINE (err_line, err_what),
 * IMPORT_E_NO_SAMPLES, -EIO when f could not be read, -ENOMEM.
 * @param[out] out owned: perf_script_free(), also after an error. */
int perf_script_read(FILE *f, struct perf_script *out);
void perf_script_free(struct perf_script *s);

struct view;

/* The capture's processes, threads and clock (the view's: borrowed). */
struct import_target {
	struct view *v;
	uint64_t mono0;    /* CLOCK_MONOTONIC ns at the capture's start */
	uint64_t duration; /* ns: "duration_ns", the pairing at the end, and the
			    * latest process end, whichever is the latest */
	const struct cygprof_proc *procs;
	size_t nprocs;
	const struct cygprof_thread *threads;
	size_t nthreads;
	uint32_t nstacks;  /* the nodes of its stack stash: new ones continue
			    * their ids */
};

/** Returns 0, IMPORT_E_NO_CLOCK, IMPORT_E_IMPORTED, or the view's error. */
int import_target_load(struct view *v, struct import_target *t);

/* What import_perf_place() did with the samples. */
struct import_counts {
	size_t samples;     /* of the text */
	size_t imported;
	size_t outside;     /* outside the recording's time */
	size_t foreign;     /* of processes it did not record */
	size_t stack_nodes; /* new nodes of the stash */
};

struct import_perf;

/** Reopen the capture at path for writing (owned: import_perf_commit() or
 * import_perf_discard()).  Returns 0 or the capture's error. */
int import_perf_open(const char *path, struct import_perf **out);
/** Place the samples of s (see above).  Returns 0, -ENOMEM, or -EOVERFLOW
 * when the stash would pass the last 32-bit id. */
int import_perf_place(struct import_perf *imp, const struct import_target *t,
		      const struct perf_script *s, struct import_counts *c);
/** Write what was placed and close the capture, which replaces the file;
 * on error the capture is discarded (the file unchanged).  imp is freed
 * either way.  Returns 0 or the capture's error. */
int import_perf_commit(struct import_perf *imp);
/** Give up: the file stays as it was.  NULL is a no-op. */
void import_perf_discard(struct import_perf *imp);

#endif
