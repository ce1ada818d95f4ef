/* SPDX-License-Identifier: MIT */
/* collector.h - start a program under the runtime, drain it, write the capture. */
#ifndef CYGPROF_COLLECTOR_H
#define CYGPROF_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

/* The counters interval without a value (record --counters). */
#define CYGPROF_COUNTERS_DEFAULT_NS 10000000ULL
/* CYGPROF_CHECKPOINT_MS: ms between the checkpoints of the profile while
 * the program runs, 0 (only at the end) to this (a day). */
#define CYGPROF_CHECKPOINT_MAX_MS 86400000ULL

/* One function of one thread in a snapshot (collector_opts.snapshot); the
 * figures are computed by analysis/profile.c, as for `cygprof report`. */
struct collector_fn {
	const char *name;      /* as the capture names it (symbols/fnname.h): demangled;
				* without a symbol "libfoo.so+0x..." or "0x..." */
	uint32_t tid;          /* the thread */
	uint64_t calls;        /* calls so far */
	uint64_t self_ns;      /* time in it, not in what it called */
	uint64_t total_ns;     /* time in it with what it called (recursion counted once) */
};

/* One thread in a snapshot. */
struct collector_thread {
	uint32_t pid, tid;
	const char *name;      /* its name (comm, up to 15 bytes); "" when unknown */
	int ended;             /* it has ended (or was cut off) */
};

/* One allocating stack in a snapshot (--memory): what it allocated, and what
 * of that is still live. */
struct collector_stack {
	uint32_t id;           /* the capture's stack id (stash) */
	uint64_t live_bytes, live_blocks;
	uint64_t allocations, bytes;
	const char *const *frames; /* function names, innermost first, as `cygprof
				    * memory` names them: the allocator's own frames
				    * (malloc, operator new, the runtime) at the
				    * innermost end left out (memory_frame_skipped());
				    * a function's frame right after a return address
				    * in the same function once */
	size_t nframes;
};

/* The live heap (--memory), from the events drained so far, merged over the
 * threads by time.  The figures are `cygprof memory`'s, computed by the same
 * code (analysis/memory.h): an allocation at an address already live
 * replaces that block; a free of an address not live is untracked; address
 * 0 is ignored; each process image has its own addresses. */
struct collector_heap {
	uint64_t allocations, frees, allocated_bytes, freed_bytes;
	uint64_t live_bytes, live_blocks, peak_bytes;
	uint64_t untracked_frees;
	const struct collector_stack *stacks; /* the stacks with live blocks, most live
					       * bytes first (at most snapshot_stacks) */
	size_t nstacks;
};

/* What the collector has folded so far: every snapshot_ns while the program
 * runs (read from the shared mapping, with the time of the frames still
 * open up to now), and once at the end (final: the profile the capture
 * stores).  Valid during the call only. */
struct collector_snapshot {
	int final;             /* the program is gone: the last snapshot */
	int pid;               /* the program started (to stop it: cygprof top's q) */
	uint64_t elapsed_ns;   /* since the program started */
	uint32_t threads;
	const struct collector_thread *thread; /* [threads], in the order they were found */
	const struct collector_fn *fns; /* one per function and thread */
	size_t nfns;
	/* the rings (--memory, --timeline): how many, the fullest one's share
	 * not drained yet (percent), and what the writers lost or waited for */
	uint32_t rings, ring_fill_pct;
	uint64_t ring_lost, ring_waits;
	const struct collector_heap *heap; /* --memory; NULL without */
};

/* The profile of one interval (record --push): what the program did
 * between two checkpoints (the one that ended the last interval and this
 * one), per call path (merged over the threads and processes by function
 * names), as the difference of the two checkpoints' calling-context trees; the last one (final) ends with the
 * capture's final profile, so the calls of every interval add up to the
 * capture's.  Valid during the call only. */
struct collector_interval {
	int final;             /* the last one: the program is gone (or detached) */
	uint64_t seq;          /* 0, 1, ... */
	uint64_t from_ns, until_ns; /* CLOCK_REALTIME (unix ns): until of one is
				     * from of the next */
	size_t npaths;         /* path 0 is the root; a parent precedes its children */
	const uint32_t *parent, *fn; /* per path; fn indexes names */
	const char *const *names;
	size_t nnames;
	const int64_t *calls;  /* per path: calls in the interval */
	const int64_t *self_ns; /* per path: exact self time in the interval,
				  * compensated for the hooks' cost (a path whose
				  * time went down counts 0) */
	uint64_t calls_total;  /* the sum of calls */
	int pid;               /* the program started (0: attached) */
};

struct collector_opts {
	const char *output;    /* capture path (unused with send_to) */
	int no_compact;        /* the capture is thrown away (top without -o): not
				* compacted at the end */
	/* record --send: stream the capture over send_fd (connected, past the
	 * handshake: remote/net.h) instead of writing output; send_to names
	 * the peer in messages.  No LMDB file is opened then.  send_zwlog: the
	 * compression the handshake agreed (struct netp_enc's zwlog). */
	const char *send_to;
	int send_fd;
	unsigned send_zwlog;
	char *const *argv;     /* the program and its arguments */
	const char *runtime;   /* absolute path of libcygprof-cyg.so */
	int timeline;          /* keep every enter/exit event */
	int drop;              /* full ring: drop and count instead of waiting */
	int memory;            /* trace the malloc family (runtime: libcygprof-mem.so) */
	uint64_t counters_ns;  /* sample the counters every this many ns (0: no counters) */
	int memdump;           /* let the memdump API report (sampled every counters_ns,
				* or CYGPROF_COUNTERS_DEFAULT_NS without --counters) */
	uint32_t sample_hz;    /* perf sampling frequency (0: no sampling) */
	const char *sample_event; /* "cpu-clock" (default), "cycles", ... */
	int rr_ticks;          /* each sample also reads rr's tick counter (rr-ticks.c) */
	int time_sampled;      /* --time=sampled: the hooks read no clock */
	uint32_t cpu_hz;       /* CPU-time samples per second of each thread's CPU time,
				* taken inside the program, and (but --time=sampled) its
				* context switches tracked; 0: neither (record --no-cpu) */
	const char *instruments; /* the instruments recorded, comma-separated (meta
				  * "instruments"), e.g. "calls,memory,counters" */
	int quiet;             /* no summary line */
	uint64_t ring_bytes;   /* per-thread ring size (power of two) */
	uint64_t shm_bytes;    /* size of the shared mapping */
	uint32_t max_depth;    /* keep call paths at most this deep (0: no limit) */
	uint32_t record_depth; /* the runtime's limit: deeper calls are counted, not
				* placed in the tree (0: CYG_DEPTH_MAX) */
	const char **only;     /* -F: only these functions and what they call */
	size_t n_only;
	const char **except;   /* -N: hide these functions (their callees stay) */
	size_t n_except;
	/* set to 1 by the collector for each pattern of only and except that
	 * named a function the program called (NULL: not wanted) */
	unsigned char *only_hit, *except_hit;
	uint64_t min_ns;       /* timeline: drop calls shorter than this */
	const char *filters;   /* the filter options as given, for the capture */
	const char **debug_dirs; /* where separate debug files are (--debug-dir) */
	size_t n_debug_dirs;
	/* called with each snapshot (cygprof top); NULL: none */
	void (*snapshot)(void *arg, const struct collector_snapshot *s);
	void *snapshot_arg;
	uint64_t snapshot_ns;  /* live snapshots this often (0: only the final one) */
	int raw_times;         /* snapshots' times as measured, not compensated for
				* the hooks' cost (cygprof top --raw-times) */
	size_t snapshot_stacks; /* heap stacks in a snapshot (0: all with live blocks) */
	/* called with snapshot_arg and the program's pid at every turn of the
	 * poll loop (at most about 10 ms apart while the program runs: cygprof
	 * top reads its keys there); NULL: none */
	void (*turn)(void *arg, int pid);
	/* record --push: after the first checkpoint committed at least
	 * interval_ns after the last interval's end (checkpoints come about
	 * every second, and at least every interval_ns), interval() with the
	 * profile of the interval (in the collector's thread: it must only queue it), and at
	 * the end interval_end(), which returns what the capture's meta then
	 * says (push_sent, push_dropped).  NULL: none. */
	uint64_t interval_ns;
	void (*interval)(void *arg, const struct collector_interval *iv);
	void (*interval_end)(void *arg, uint64_t *sent, uint64_t *dropped);
	void *interval_arg;
};

struct collector_result {
	int status;            /* wait status of the program */
	int exec_errno;        /* non-zero: the program could not be started */
	uint32_t procs, threads;
	uint64_t calls, events, lost, waits, mem_events;
	uint64_t samples;      /* perf samples taken (--sample) */
	uint64_t cpu_samples;  /* CPU samples the runtime took (--cpu-freq) */
	uint64_t capture_bytes; /* of the file, or sent (send_to) */
	int attach_ended;      /* record --attach: the process ended while attached */
	uint32_t attach_seeded; /* ... threads whose open frames were handed over */
	char damaged[256];     /* non-empty: what was rejected of what the program wrote into
				* the shared mapping (the capture's "damaged" line) */
	/* The capture's write failed (write_err: CYGPROF_E_FULL for a full
	 * disk, else the error) write_err_ns after the start; the program ran
	 * on to its end.  The capture holds the calls up to kept_ns when kept
	 * (its last checkpoint committed), and ended_stored when the reason
	 * went into it (meta "ended", sealed). */
	int write_err;
	uint64_t write_err_ns;
	int kept;
	uint64_t kept_ns;
	/* --timeline, --memory: the events drained up to events_kept_ns were
	 * committed (0: none) */
	uint64_t events_kept_ns;
	int ended_stored;
	/* The capture sealed, cygprof_capture_compact() failed with
	 * compact_err: it is kept whole, with its free pages; else
	 * compact_saved bytes of free pages were dropped (0: too few). */
	int compact_err;
	uint64_t compact_saved;
	/* The calls of the capture's trees, and of those the functions
	 * defined in system headers (view_sysheader_calls()): both 0 when
	 * not told (sent, --time=sampled, an error). */
	uint64_t sysheader_calls, tree_calls;
};

/** Run the program and record it.  Returns 0 when the capture was written
 * (whatever the program did), or a negative error (message in err). */
int collector_record(const struct collector_opts *o, struct collector_result *res, char *err,
		     size_t errlen);

struct attach_target;
/** Attach to the running process t (attach_check() passed): record it until
 * duration_ns (0: until SIGINT or SIGTERM) or its end, then detach; the
 * process runs on.  Returns 0 when the capture was written, -EPERM when
 * the attach failed (nothing written, the process untouched; message in
 * err), or another negative error. */
int collector_attach(const struct collector_opts *o, struct attach_target *t,
		     uint64_t duration_ns, struct collector_result *res, char *err,
		     size_t errlen);

#endif
