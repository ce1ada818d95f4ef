/* SPDX-License-Identifier: MIT */
/* view.h - a capture as the analysis side reads it: opened once, every part
 * fetched when first asked for and kept until view_close().
 *
 * Every command (report, replay, info, memory, gprof, annotate) and every
 * reader written later starts from a view instead of reading the capture
 * itself: the processes and threads, the metadata and the limits the
 * recording hit, per-process symbol lookup (address -> function, object,
 * build-id, bias), the call trees with their functions named and their self
 * times, the call sites, the stack stash resolved to frames (with inlined
 * frames and source lines through srcline.h), the timeline events and the
 * memory cursors.
 *
 * Naming: what the capture stored names an address (the symbols of its
 * process); when it has no name for it (a program recorded stripped, or
 * whose debug file was found later), the fallback is asked: a resolver set
 * with view_set_resolver(), else the debug-file search of the view's
 * options (sym_name_from_debug(): the object's symbol table as found now,
 * or its separate debug file's, matched by the recorded build-id);
 * failing that, the address in hex ("0x...") names it.
 *
 * Ownership: everything returned through a const pointer is borrowed from
 * the view and valid until view_close() (arrays are never moved once
 * fetched).  Error convention: 0 or a negative errno / CYGPROF_E_*; nothing
 * here prints or exits.  A view is not thread-safe: use it from one thread.
 */
#ifndef ANALYSIS_VIEW_H
#define ANALYSIS_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cygprof/cygprof-capture.h"
#include "timemodel.h"

#define VIEW_NONE UINT32_MAX

struct view;
struct debuginfo;
struct srcline;

struct view_opts {
	/* The debug-file search (borrowed, must outlive the view).  It gives
	 * source lines and, when no resolver is set, names what the capture
	 * left unnamed (see "Naming" above).  NULL: source lines from the
	 * directories of CYGPROF_DEBUG_DIRS and the defaults, and no names
	 * but the stored ones. */
	struct debuginfo *debuginfo;
	/* Times as measured: no overhead compensation (see view_overhead()). */
	int raw_times;
	/* Without raw_times, the times of the trees (timemodel.h) */
	int times;
};

enum {
	VIEW_TIMES_MODEL,   /* compensated, waits and blocked time out, corrected by
			     * the CPU samples: CPU time */
	VIEW_TIMES_HOOKS,   /* compensated only */
	VIEW_TIMES_SAMPLES, /* the CPU samples alone (threads without: compensated) */
	VIEW_TIMES_WALL,    /* the model with blocked time kept: wall time less the
			     * waits for a CPU */
};

/** Open the capture at path read-only (cygprof_capture_open(): same
 * errors) and make a view of it; the view owns the capture.  o may be NULL.
 * @param[out] out owned: view_close(). */
int view_open(const char *path, const struct view_opts *o, struct view **out);
/** A view of a capture opened by the caller (borrowed: it must outlive the
 * view, and view_close() leaves it open).  Returns 0 or -ENOMEM. */
int view_new(struct cygprof_capture *cap, const struct view_opts *o, struct view **out);
/** Close the view (and its capture when view_open() opened it).  NULL is a
 * no-op. */
void view_close(struct view *v);
/** The size of the capture's file in bytes (cygprof_capture_file_size()). */
uint64_t view_file_size(const struct view *v);

/* ---- metadata -------------------------------------------------------------- */

/** The value of a metadata key (see cygprof-capture.h for the keys).
 * @param[out] value borrowed; NULL with CYGPROF_E_NOTFOUND when absent.
 * A failed read is not remembered: the next call reads again. */
int view_meta(struct view *v, const char *key, const char **value);
/** The same, NULL when absent or unreadable. */
const char *view_meta_str(struct view *v, const char *key);
/** Whether the capture was recorded with --time=sampled: exact calls, no
 * clock read by the hooks (its meta "time" is "sampled"). */
int view_time_sampled(struct view *v);
/** Whether the recording mode ("profile+timeline+memory") holds word
 * ("timeline", "memory"). */
int view_mode_has(struct view *v, const char *word);
/** The capture's duration: "duration_ns", else the latest thread end. */
uint64_t view_duration_ns(struct view *v);

/* ---- overhead compensation ------------------------------------------------- */

/* The hooks' cost per enter/exit pair, measured by the runtime at attach
 * in the traced process, with the hooks the recording ran, and stored in
 * the metadata (overhead_*: docs/capture-format.md).  Unless the view was
 * opened with raw_times, every tree view_tree() gives, and with it every
 * figure of analysis/, has it taken out (profile_compensate()): a node's
 * total loses calls * in_ns and (calls below it) * (in_ns + out_ns), but
 * never goes below its children's, a call site the same per call of its
 * node.  The timeline stays as measured. */
struct view_overhead {
	int present;       /* the capture has the calibration */
	double in_ns;      /* inside the callee's interval */
	double out_ns;     /* in its caller's: before the enter, after the exit */
	/* glibc's empty hooks per call on the machine that recorded (what the
	 * program runs without a profiler: timemodel.h); 0 when not said */
	double floor_ns;
	/* the rounds' standard deviations; -1 when the capture does not say
	 * (recorded before they were stored) */
	double in_spread_ns, out_spread_ns;
	uint32_t calls;    /* enter/exit pairs per round */
	uint32_t rounds;   /* rounds measured */
	uint32_t kept;     /* rounds kept (not outliers); 0 when not said */
	uint32_t tries;    /* attempts made; 0 when not said */
	char mode[24];     /* the hooks calibrated: "plain", "timeline", "memory",
			    * "timeline+memory"; "" when not said */
	uint64_t ring_bytes; /* the ring the timeline hooks wrote (0: none) */
	uint32_t images;   /* process images calibrated (0: not said) */
	/* over those images (when images > 1): the least and the most */
	double in_min, in_max, out_min, out_max;
};
/** The calibration stored in the capture (present = 0: none, a capture
 * recorded before it existed or with --time=sampled). */
void view_overhead(struct view *v, struct view_overhead *o);
/** Whether two calibrations (both present) differ by more than their
 * spreads explain: |in_a - in_b| > in_spread_a + in_spread_b, or the same
 * of full = in + out with spread in_spread + out_spread (a bound of the
 * sum's).  A capture that does not say its spreads counts as
 * VIEW_OVERHEAD_SPREAD_UNKNOWN of each figure.  *per_call: the most one
 * call's compensated time can differ between them, max(|in_a - in_b|,
 * |full_a - full_b|) in ns. */
int view_overhead_differ(const struct view_overhead *a, const struct view_overhead *b,
			 double *per_call);
#define VIEW_OVERHEAD_SPREAD_UNKNOWN 0.05
/** Whether the trees' times are compensated: a calibration is present and
 * the view was not opened with raw_times. */
int view_compensated(struct view *v);

/* ---- processes and threads ------------------------------------------------- */

/** All processes ordered by idx (borrowed).  A failed read is retried on
 * the next call. */
int view_procs(struct view *v, const struct cygprof_proc **procs, size_t *n);
/** All threads ordered by idx (borrowed). */
int view_threads(struct view *v, const struct cygprof_thread **threads, size_t *n);
/** The thread or process of a capture index; NULL when there is none (or
 * the list cannot be read). */
const struct cygprof_thread *view_thread(struct view *v, uint32_t idx);
const struct cygprof_proc *view_proc(struct view *v, uint32_t idx);
/** The pid of a thread's process, 0 when unknown. */
uint32_t view_thread_pid(struct view *v, const struct cygprof_thread *t);
/** The thread's name as a C string in buf (at most 15 bytes, even when the stored
 * one is not terminated). */
const char *view_thread_name(const struct cygprof_thread *t, char buf[16]);
/** How a process ended, in buf: "exit N", "signal N", "exec" or "unknown". */
const char *view_proc_end(const struct cygprof_proc *p, char *buf, size_t len);
/** What the flags CYGPROF_THREAD_SIGNAL and CYGPROF_THREAD_CLONED say of a
 * thread, as a note after its name (static): " [signal handlers]",
 * " [raw clone]", " [raw clone, signal handlers]", or "" for neither. */
const char *view_thread_note(uint32_t flags);

/* ---- processes and threads as JSON (view-json.c) ------------------------------ */

/** "processes": [...] of the view on f, the one writer of the processes
 * JSON of every command (no separator before or after).  0, or the error
 * reading them (nothing written). */
int view_json_procs(struct view *v, FILE *f);
/** "threads": [...] of the view on f, the same way; with totals each
 * thread also gets its tree's total_ns.  0, or the error reading a tree
 * (what was written so far stays written). */
int view_json_threads(struct view *v, FILE *f, int totals);

/* ---- what the recording could not record ------------------------------------- */

/* The limits a recording hit, summed over the threads, and the capture's
 * own warnings (meta "shm_full", "damaged", no "complete"). */
struct view_limits {
	uint64_t lost;       /* timeline events dropped */
	uint64_t overflow;   /* calls past the depth limit (counted, not in the trees) */
	uint64_t sig_lost;   /* calls and allocations of signal handlers not recorded */
	uint64_t mem_lost;   /* allocations and frees not traced */
	uint64_t unpaired;   /* exits without an entry, ignored */
	uint64_t shm_full;   /* allocations the full shared mapping refused */
	int shm_full_set;
	const char *damaged; /* what the collector rejected from the mapping, or NULL
			      * (borrowed) */
	int incomplete;      /* no meta "complete": cut off, or still being written */
	int in_progress;     /* still being written when opened */
	uint64_t checkpoint_ns; /* incomplete: the time of the last checkpoint
				 * (its meta duration_ns), from the start */
	const char *ended;   /* why it ended early (meta "ended": a write of the
			      * capture failed, e.g. "no space left on device at
			      * 1.234 s"), or NULL (borrowed) */
	uint32_t trimmed;    /* threads whose record counts more events than its
			      * calls make (CYGPROF_THREAD_TRIMMED): shown up to
			      * the last consistent point ... */
	uint32_t trimmed_idx; /* ... the first of them ... */
	uint64_t trimmed_events; /* ... and the events it is shown with */
};

/** Fill l; what cannot be read counts as not hit. */
void view_limits(struct view *v, struct view_limits *l);

/* ---- objects and symbols ----------------------------------------------------- */

/** All objects ordered by idx (none: n = 0). */
int view_objects(struct view *v, const struct cygprof_object **objs, size_t *n);
/** The object of index idx, the one of process proc containing addr, the
 * executable of process proc (the object whose path is the process's exe);
 * NULL when none (or the objects cannot be read). */
const struct cygprof_object *view_object(struct view *v, uint32_t idx);
const struct cygprof_object *view_object_at(struct view *v, uint32_t proc, uint64_t addr);
const struct cygprof_object *view_exe_object(struct view *v, uint32_t proc);

/* What covers an address. */
struct view_sym {
	const char *name;                 /* NULL when no symbol covers the address */
	uint64_t start, size;             /* runtime start of the symbol; size 0: unknown */
	const struct cygprof_object *obj; /* the object containing it, NULL when none */
};

/** Look addr up in process proc: the stored symbol covering it (a symbol
 * whose stored name is empty or "0x..." counts as unnamed), else the
 * fallback resolver.  Returns 0 with a symbol (out->name set, possibly to
 * the stored "0x..." placeholder), -ENOENT with none (out->obj may still be
 * set), or the error reading the process's symbols (remembered). */
int view_symbol(struct view *v, uint32_t proc, uint64_t addr, struct view_sym *out);

/** The fallback: name an address of obj the capture left unnamed.
 * file_addr is addr - obj->bias.  Fill out (start as a file address, name
 * borrowed until the view is closed) and return 0, or return -ENOENT. */
typedef int (*view_resolve_fn)(void *arg, const struct cygprof_object *obj, uint64_t file_addr,
			       struct view_sym *out);
/** Set the fallback resolver (fn NULL: the debug-file search, when the
 * view has one), before the first lookup. */
void view_set_resolver(struct view *v, view_resolve_fn fn, void *arg);

/* A function of a process: the view numbers every (process, address) it
 * names, densely from 0, so readers can keep per-function arrays. */
struct view_fn {
	uint32_t proc;
	uint32_t has_sym;                 /* a symbol covers addr: start and size are its */
	uint64_t addr;                    /* the address named (runtime) */
	uint64_t start, size;
	const char *name;                 /* the symbol's name, else "0x<addr>"; never NULL */
	const struct cygprof_object *obj; /* NULL when no object contains addr */
};

/** The id of the function at addr in process proc (named on first use).
 * Returns 0, -ENOMEM, or the error reading the process's symbols. */
int view_fn_at(struct view *v, uint32_t proc, uint64_t addr, uint32_t *id);
/** A function by id (borrowed; the pointer stays valid); NULL for a bad id. */
const struct view_fn *view_fn(struct view *v, uint32_t id);
/** How many functions have ids so far. */
size_t view_nfns(const struct view *v);

/* Where a function is defined that the compiler's headers hold (the STL's
 * templates, inline functions): DWARF decl file under this. */
#define VIEW_SYSTEM_HEADERS "/usr/include/"
/* Functions looked up at most, the most called first: the others are so
 * rarely called that they cannot change the share much. */
#define VIEW_SYSHDR_MAX_FNS 5000

/** The calls, in every thread's tree as the view shows it, of functions
 * defined in a system header (VIEW_SYSTEM_HEADERS: the file of the line
 * of the function's entry address), and of all functions: their times are mostly the hooks' own
 * where most calls are there (report and record warn, naming
 * -finstrument-functions-exclude-file-list).  A function without DWARF
 * counts as not in one.  Reads every tree, and the DWARF of the objects
 * of the (at most VIEW_SYSHDR_MAX_FNS) most-called functions, down to
 * where the rest cannot make the system headers' most (then sys is what
 * was found so far, at most half of total).  Returns 0, or the error
 * reading a tree, -ENOMEM. */
int view_sysheader_calls(struct view *v, uint64_t *sys, uint64_t *total);

/** "0x<addr>", kept by the view (NULL when out of memory). */
const char *view_hex(struct view *v, uint64_t addr);

/** The source-line reader of the view (made on first use with the view's
 * debug-file search; borrowed), NULL when out of memory. */
struct srcline *view_srcline(struct view *v);

/* ---- call trees -------------------------------------------------------------- */

/* One thread's calling-context tree as stored (nodes[0] is the root), with
 * what every reader derives from it. */
struct view_tree {
	uint32_t thread;
	const struct cygprof_node *nodes;
	size_t n;                /* 0 for a thread without a tree */
	const uint64_t *self_ns; /* per node: its total_ns minus its children's */
	const uint32_t *fn;      /* per node: its function's id; fn[0] = VIEW_NONE */
	uint64_t total_ns;       /* the sum of the root's children's total_ns */
	uint64_t clamped;        /* nodes whose compensation was clamped
				  * (profile_compensate()); 0 uncompensated */
	/* the time model (timemodel.h) applied to the stored tree: modelled
	 * is 0 for raw times, a time range, or a thread without a CPU record */
	int modelled;
	struct timemodel_stats model;
};

/** A thread's tree (read and named once).  CYGPROF_E_NOTFOUND for an
 * unknown thread, CYGPROF_E_CORRUPT for a malformed tree. */
int view_tree(struct view *v, uint32_t thread, const struct view_tree **out);
/** The nodes whose compensation was clamped (the hooks' cost exceeded
 * their measured time: profile_compensate()), over every thread's tree,
 * reading the trees not read yet; 0 when the times are not compensated. */
int view_compensation_clamped(struct view *v, uint64_t *clamped);
/** Replace the times of a thread's tree (read before with view_tree()):
 * total_ns[i] for node i, n its node count; self times follow, and each
 * call site gets its node's time in proportion to its calls.  For times
 * that are not the hooks' (record --time=sampled --sample: profile_load()).
 * -EINVAL when the tree was not read or n differs. */
int view_set_times(struct view *v, uint32_t thread, const uint64_t *total_ns, size_t n);
/** A thread's call sites (none: n = 0). */
int view_sites(struct view *v, uint32_t thread, const struct cygprof_callsite **sites,
	       size_t *n);

/* ---- CPU samples and off-CPU time per call path (record --cpu-freq) ------ */

/* What the runtime measured inside a thread, on the thread's tree as the
 * view shows it (view_tree(): after -F, -N and -D, a node that a filter
 * leaves out gives its figures to the kept node its children attach to,
 * and merged nodes add theirs, as calls and times do).  Every figure is a
 * node's SELF figure: samples taken while it was current (its function, or
 * code it called that is not instrumented), samples inside cygprof's hooks
 * then (overhead), and the time off the CPU of the intervals that began
 * while its frame was the innermost open one, preempted (wait_ns: runnable,
 * waiting for a CPU) or blocked.  A time range (--time-range) has none:
 * the samples carry no time. */
struct view_cpu {
	int present;            /* the thread has a record (recorded with CPU samples
				 * or switch tracking, schema 6) */
	struct cygprof_cpu thread; /* its totals, as stored */
	size_t n;               /* nodes, as the view's tree of the thread */
	const uint64_t *samples, *overhead, *wait_ns, *blocked_ns; /* per node */
	uint64_t period_ns;     /* the sampling period (0: not sampled) */
	uint64_t dropped;       /* figures of nodes the tree does not have (damage) */
};

/** The CPU figures of a thread (read once; borrowed).  A thread without a
 * record gets present = 0 and n = 0.  Errors: as view_tree(), or the
 * capture's reading the record. */
int view_cpu(struct view *v, uint32_t thread, const struct view_cpu **out);

/* ---- filters after the fact ------------------------------------------------ */

/* What readers see of the trees and the timeline (record's -F, -N, -D, and
 * a time range), applied to a finished capture; see view-filter.c. */
struct view_filter {
	const char *const *filter;  /* -F: only what runs under a matching function */
	size_t nfilter;
	const char *const *notrace; /* -N: leave matching functions out (their
				     * callees attach to the nearest kept caller) */
	size_t nnotrace;
	uint32_t depth;             /* -D: call paths at most this deep (0: any) */
	int has_range;              /* --time-range: calls starting in [t0, t1) */
	uint64_t t0, t1;            /* ns from the capture's start */
};

/* A time range needs a timeline: view_tree() returns this without one. */
#define VIEW_E_NO_TIMELINE (-21001)

/** Filter every tree and timeline read from now on (f copied, its
 * patterns borrowed; NULL: no filter).  -EBUSY once a tree was read. */
int view_set_filter(struct view *v, const struct view_filter *f);
/** Whether a filter is set. */
int view_filtered(const struct view *v);
/** The filter set, or NULL. */
const struct view_filter *view_get_filter(const struct view *v);
/** Whether a function's name matches one of the patterns, as shown and
 * without its parameter list (the filters' rule). */
int view_name_matches(const char *const *pats, size_t n, const char *name);

/* ---- timeline and memory events ------------------------------------------------ */

/** Call fn with consecutive runs of the thread's timeline events in time
 * order (none: fn is not called); a non-zero return from fn stops the walk
 * and is returned. */
int view_events(struct view *v, uint32_t thread, cygprof_event_fn fn, void *data);
/** All of a thread's timeline events.  @param[out] ev owned: free(). */
int view_events_read(struct view *v, uint32_t thread, struct cygprof_event **ev, size_t *n);

/** A pull cursor over the thread's timeline as the view shows it: a block
 * at a time (cygprof_event_cursor_open()), remapped to the filtered tree
 * under -F, -N or -D; with a time range, the window's events in one run
 * (see view_events()).  next gives *n == 0 at the end. */
struct view_ecursor;
int view_ecursor_open(struct view *v, uint32_t thread, struct view_ecursor **cur);
int view_ecursor_next(struct view_ecursor *cur, const struct cygprof_event **ev, size_t *n);
void view_ecursor_close(struct view_ecursor *cur);
/** How far the cursor is, for a progress: the events read so far of its
 * total, stored events (those a filter leaves out too) or, with a time
 * range, the window's. */
void view_ecursor_progress(const struct view_ecursor *cur, uint64_t *read, uint64_t *total);
/** A cursor over the thread's memory events (cygprof_mem_cursor_open()). */
int view_mem_cursor(struct view *v, uint32_t thread, struct cygprof_mem_cursor **cur);
/** The number of memory events of all threads. */
int view_mem_count(struct view *v, uint64_t *n);

/* ---- counters ------------------------------------------------------------------ */

/** All counters ordered by id (none: n = 0; borrowed).  A failed read is
 * retried on the next call. */
int view_counters(struct view *v, const struct cygprof_counter **c, size_t *n);
/** The samples of counter id, in time order (read once; borrowed). */
int view_samples(struct view *v, uint32_t id, const struct cygprof_sample **s, size_t *n);

/* ---- perf samples and off-CPU intervals (record --sample, import-perf) ---- */

/** All perf samples in time order (none, or a capture before schema 4:
 * n = 0; borrowed, read once).  A failed read is retried on the next call. */
int view_psamples(struct view *v, const struct cygprof_psample **s, size_t *n);
/** All off-CPU intervals of the program ordered by start (none: n = 0;
 * borrowed): not the waits for the collector. */
int view_offcpu(struct view *v, const struct cygprof_offcpu **o, size_t *n);
/** The intervals where a thread waited for the collector (its timeline
 * ring full: CYGPROF_OFFCPU_WAIT), ordered by start (none: n = 0;
 * borrowed).  The hooks took them out of the call times already; the
 * timeline's events keep the clock's times, so a call that spans one
 * shows it in replay and the exports. */
int view_waits(struct view *v, const struct cygprof_offcpu **o, size_t *n);

/* ---- stacks -------------------------------------------------------------------- */

/** The stack stash (ordered by id: s[i].id == i + 1; none: n = 0). */
int view_stash(struct view *v, const struct cygprof_stack_node **s, size_t *n);

/* One frame of a stack. */
struct view_frame {
	const char *name;       /* the function's, else "0x<raw>" */
	const char *file;       /* VIEW_LINES: the source file, NULL when unknown */
	const char *inlined_in; /* VIEW_LINES: name is inlined into this function */
	const struct cygprof_object *obj;
	uint64_t raw;           /* the address as stored */
	uint64_t addr;          /* the address looked up: raw - 1 for a return address */
	uint32_t line;          /* VIEW_LINES: 0 when unknown */
	uint32_t proc;
	uint32_t kind;          /* enum cygprof_frame_kind */
};

enum {
	VIEW_LINES = 1, /* source lines, and a frame for each inlined function */
};

/* Whether a frame is to be left out at the innermost end of a stack. */
typedef int (*view_skip_fn)(const char *name, const char *object_path);

/** The frames of stack id, innermost first (an unknown id has none); the
 * innermost frames for which skip (may be NULL) says so are left out.  With
 * VIEW_LINES each frame gets its source line, and a frame in inlined code
 * becomes the inlined function's frame followed by its caller's at the
 * inlined call.  Without it, a return address in a caller into which the
 * innermost instrumented functions were inlined, named again further out,
 * is left out (it is theirs: zmalloc -> ztrymalloc_usable_internal, not ->
 * zmalloc again).  Symbols that cannot be read leave frames unnamed.
 * @param[out] frames owned: free() (the strings are the view's). */
int view_stack(struct view *v, uint32_t id, unsigned flags, view_skip_fn skip,
	       struct view_frame **frames, size_t *n);

#endif
