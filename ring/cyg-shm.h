/* SPDX-License-Identifier: MIT */
/* cyg-shm.h - layout of the shared mapping between the traced program and
 * the collector.
 *
 * The collector creates one memfd (private to the user), sizes it sparsely
 * (pages exist only once touched), maps it and starts the program with the
 * fd inherited and named in CYGPROF_SHM_FD.  Every process of the traced
 * tree (fork children inherit the mapping; exec'd images map it again from
 * the fd) writes into the same mapping:
 *
 *   [ctl page][null node][... bump-allocated area ...]
 *
 * Everything in the area is addressed by byte offsets from the start of the
 * mapping (the two sides map it at different addresses).  Nodes of the
 * calling-context trees are named by "gid" = offset / 64 (CYG_NODE_SIZE);
 * each takes a slot of CYG_NODE_SLOT bytes: the 64-byte struct cyg_node,
 * then its struct cyg_node_ext (CPU samples, off-CPU time, the least and
 * greatest call), then its latency histogram (struct cyg_node_lat).
 *
 * Who writes what:
 *  - struct cyg_ctl: set up by the collector; alloc_off, threads_off,
 *    nthreads and oom changed by the runtime by compare-and-swap (or
 *    atomic add); free_stacks, pool_tail, procs_off and nprocs under the
 *    cold-path lock; heartbeat, pool_head, ring_pool[] and the ring tails
 *    by the collector.
 *  - struct cyg_thread and its nodes, stack and ring: written only by the
 *    thread that owns it (single writer), read by the collector.
 *
 * Trust: the collector treats everything in the mapping as untrusted input
 * (the traced program can write anywhere in it): it bounds-checks every
 * offset, count and id it reads, bounds every list walk, and never takes
 * `lock` (a program could hold it forever).  The memfd is sealed against
 * shrinking and growing, so the mapping cannot turn into SIGBUS under the
 * collector.  The runtime trusts the collector.
 *
 * Liveness: the collector holds `alive`, a robust process-shared mutex, for
 * as long as it lives.  A writer that waits for room in its ring waits on
 * `alive` with a timeout: a timeout means the collector lives (stopped,
 * traced, or slow) and the wait goes on; EOWNERDEAD means the collector
 * died, and the writer sets collector_gone and runs on without it.
 *
 * This header is shared by cyg/ (inside the traced program) and collector/;
 * it must stay free of anything but libc types and the capture's public
 * header (types only, for the codes both share), included by its path.
 */
#ifndef CYGPROF_CYG_SHM_H
#define CYGPROF_CYG_SHM_H

#include <pthread.h>
#include <stdint.h>

#include "../include/cygprof/cygprof-capture.h"

#include "cyg-limits.h"

#define CYG_SHM_MAGIC 0x3130465250475943ULL /* "CYGPRF01" little-endian */
#define CYG_SHM_VERSION 7
#define CYG_SHM_FD_ENV "CYGPROF_SHM_FD"
#define CYG_NODE_SIZE 64
#define CYG_NULL_OFF 4096 /* the null node: fn 0, never matches a function */
#define CYG_GID_NULL (CYG_NULL_OFF / CYG_NODE_SIZE)
#define CYG_AREA_OFF 8192 /* first byte the allocator hands out */
#define CYG_RING_POOL 64         /* drained rings handed back by the collector */
#define CYG_CACHELINE 64

/* ctl->flags */
enum {
	CYG_F_TIMELINE = 1, /* write enter/exit events into the per-thread ring */
	CYG_F_DROP = 2,     /* ring full: drop and count instead of waiting */
	CYG_F_TSC = 4,      /* timestamps are rdtsc ticks (else CLOCK_MONOTONIC ns) */
	CYG_F_MEMORY = 8,   /* trace the malloc family (libcygprof-mem.so) */
	CYG_F_MEMDUMP = 16, /* the memdump API reports into the mapping (struct cyg_memdump) */
	CYG_F_NOCLOCK = 32, /* record --time=sampled: the hooks count calls and keep call
			     * paths but read no clock; node, site and frame times stay 0
			     * (never with CYG_F_TIMELINE).  A runtime that does not know
			     * the flag reads the clock: the collector ignores its times. */
	CYG_F_CPUSAMPLE = 64, /* a CPU-time sample every cpu_period_ns of each thread's
			       * CPU time, charged to its current node (cyg-sample.c) */
	CYG_F_SWITCHES = 128, /* each thread's context switches: its off-CPU time
			       * charged to the frame open when it left the CPU
			       * (never with CYG_F_NOCLOCK: frames carry no time) */
};

/* cyg_proc.calib_mode: what the calibration's hooks did */
enum {
	CYG_CALIB_TIMELINE = 1, /* wrote enter/exit events into a ring of the run's size */
	CYG_CALIB_MEMORY = 2,   /* ran under memory tracing (the same enter/exit hooks) */
};

/* cyg_thread.state */
enum {
	CYG_T_ACTIVE = 1,
	CYG_T_ENDED = 2, /* thread exited: its frames closed, its writer flushed */
	CYG_T_CUT = 3,   /* its image was replaced by exec: frames closed at end_ts by the collector */
};

/* cyg_proc.state (the collector translates them into the capture's end kinds) */
enum {
	CYG_P_RUNNING = 0,
	CYG_P_EXIT = 1,
	CYG_P_SIGNAL = 2,
	CYG_P_EXEC = 3,
	CYG_P_GONE = 4, /* the process ended, status not seen yet */
};

struct cyg_ctl {
	uint64_t magic;
	uint32_t version;
	uint32_t flags;
	uint64_t size;          /* size of the mapping */
	uint64_t ring_words;    /* timeline ring size per thread, in 8-byte words (power of 2) */
	uint32_t collector_pid;
	uint32_t max_depth;     /* deepest call path kept per thread (<= CYG_DEPTH_MAX) */
	char mnt_ns[64];        /* the collector's mount namespace ("mnt:[N]") */
	uint64_t tsc_per_sec;   /* informative; the collector calibrates itself */
	uint32_t memdump_ms;    /* CYG_F_MEMDUMP: the dumper thread's period in ms */
	int32_t cpu_signo;      /* CYG_F_CPUSAMPLE: the samples' signal (SIGRTMAX -
				 * CYG_CPU_SIG_FROM_MAX in the collector's libc) */
	uint64_t cpu_period_ns; /* CYG_F_CPUSAMPLE: the sampling period, in ns of a
				 * thread's CPU time */
	/* cold-path state, changed under lock */
	pthread_mutex_t lock;   /* process-shared, robust */
	uint64_t alloc_off;     /* bump pointer */
	uint64_t threads_off;   /* head of the thread list (newest first), 0 = none */
	uint64_t procs_off;     /* head of the process list (newest first) */
	uint64_t pool_tail;     /* ring_pool entries taken by the runtime */
	uint64_t free_stacks;   /* list of shadow stacks given back (first word: next,
				 * second: capacity in frames) */
	uint32_t nthreads;      /* threads registered so far */
	uint32_t nprocs;        /* process images registered so far */
	uint64_t oom;           /* allocations refused because the mapping was full */
	uint64_t rt_dropped;    /* writers the runtime found written over and dropped
				 * (cyg__writer_bad()), and its lists cut short */
	char pad0[56];
	/* written by the collector */
	uint64_t heartbeat __attribute__((aligned(64))); /* one per poll-loop turn (informative) */
	uint32_t collector_gone; /* set by a writer that found the collector dead */
	uint32_t pad1;
	uint64_t pool_head;      /* ring_pool entries published (release) */
	uint64_t ring_pool[CYG_RING_POOL]; /* [i % CYG_RING_POOL]: offset of a drained ring */
	pthread_mutex_t alive __attribute__((aligned(64))); /* held by the collector */
};

/* A calling-context tree node: one call path of one thread.  Nodes come
 * from the thread's own chunks, which the bump allocator hands out in
 * increasing offsets: a parent's gid is smaller than its children's,
 * first_child points to the youngest child and next_sibling to an older
 * (smaller) one.  The collector relies on it to reject cycles. */
struct cyg_node {
	uint64_t fn;
	uint64_t site;
	uint64_t calls;
	uint64_t ticks;        /* inclusive ticks of the closed calls */
	uint32_t parent;       /* gid */
	uint32_t first_child;  /* gid, 0 = none */
	uint32_t next_sibling; /* gid, 0 = none */
	uint32_t hint;         /* gid of the child matched last (CYG_GID_NULL at first) */
	uint32_t hint2;        /* the one matched before it */
	/* The writer's own cache, never read by the collector: the call site
	 * other than `site` this node was last called from, and 1 + the index
	 * of its entry in the writer's cyg_site table (0: none), so that a
	 * function called from two places (fib) finds its second site's
	 * counter without the cold path's hash lookup. */
	uint32_t site2_ix;
	uint64_t site2;
};
_Static_assert(sizeof(struct cyg_node) == CYG_NODE_SIZE, "cyg_node changed size");

/* What a node gets besides its calls and time, right after it in its slot
 * (CYG_NODE_EXT()): written only by the thread that owns the node (its
 * sample signal handler, its hooks' cold path), read by the collector like
 * calls and ticks.  The u32 counters may wrap: the collector keeps 64-bit
 * totals from their deltas. */
struct cyg_node_ext {
	uint32_t samples;    /* CPU samples taken while this node was current and
			      * the thread outside the runtime: its SELF CPU time
			      * (its function, or uninstrumented code it called) */
	uint32_t ovh;        /* samples taken inside a hook (or a memory hook) while
			      * this node was current: profiler overhead */
	uint64_t wait_ns;    /* SELF off-CPU time, runnable but preempted, of the
			      * intervals that began while this was the innermost
			      * open frame */
	uint64_t blocked_ns; /* the same, blocked (sleeping, waiting for I/O...) */
	/* the exit hook (and the cold paths that close a frame): the longest
	 * closed call in ticks, and UINT64_MAX minus the shortest one (so that
	 * 0, a fresh slot, means none and both are kept by one compare) */
	uint64_t lat_max;
	uint64_t lat_nmin;
	uint64_t reserved[3];
};
#define CYG_NODE_EXT_SIZE 64
_Static_assert(sizeof(struct cyg_node_ext) == CYG_NODE_EXT_SIZE, "cyg_node_ext changed size");

/* ---- latency histograms ------------------------------------------------ */
/* Each node counts its closed calls by inclusive duration, in log-linear
 * buckets as HdrHistogram makes them: the duration in ticks shifted right
 * by CYG_LAT_SHIFT is u units (16 ticks: 4-8 ns of rdtsc at 2-4 GHz, or
 * 16 ns), and u + 8 falls into one of 8 equal sub-buckets of its power of
 * two.  So a bucket is at most 1/8 of its lower bound wide (a percentile
 * read from it is off by at most 6.25% of the value, less interpolated),
 * the first 8 units are exact, and 256 buckets reach 2^35 units (2^39
 * ticks: 2 to 9 minutes; longer calls go into the last one, the exact
 * maximum is lat_max).  The shift is a constant, the same for both clocks,
 * so that the exit hook loads nothing to find the bucket.  u32 counters,
 * 1 KiB a node: a bucket wraps after 2^32 calls, which the collector puts
 * back from the node's u64 call count.  Written only by the node's thread
 * (its exit hook), read by the collector. */
#define CYG_LAT_SUB 8       /* sub-buckets per power of two */
#define CYG_LAT_BUCKETS 256
#define CYG_LAT_SHIFT 4     /* ticks per unit: 16 */
struct cyg_node_lat {
	uint32_t n[CYG_LAT_BUCKETS];
};

/* The bucket of a duration of dt ticks: that of u = dt >> CYG_LAT_SHIFT
 * (u + 8 in sub-bucket (u + 8) >> e & 7 of power e + 3), computed on
 * w = dt + (8 << CYG_LAT_SHIFT), whose top bits are u + 8's: one bsr, one
 * shift, no load (the exit hook's). */
static inline unsigned cyg_lat_idx(uint64_t dt)
{
	uint64_t w = dt + ((uint64_t)CYG_LAT_SUB << CYG_LAT_SHIFT);
	unsigned e = 63 - (unsigned)__builtin_clzll(w) - 3; /* >= CYG_LAT_SHIFT */
	unsigned i = (e << 3) + (unsigned)((w >> e) & 7) - 8 * CYG_LAT_SHIFT;
	return i < CYG_LAT_BUCKETS ? i : CYG_LAT_BUCKETS - 1;
}
/* The least duration in units of bucket i (i <= CYG_LAT_BUCKETS: the end
 * of the last bucket); in ticks: << CYG_LAT_SHIFT. */
static inline uint64_t cyg_lat_lo(unsigned i)
{
	return ((uint64_t)(CYG_LAT_SUB + (i & 7)) << (i >> 3)) - CYG_LAT_SUB;
}

/* The bytes a node takes: the node, its ext, its histogram. */
#define CYG_NODE_SLOT (CYG_NODE_SIZE + CYG_NODE_EXT_SIZE + (uint64_t)sizeof(struct cyg_node_lat))
_Static_assert(CYG_NODE_SLOT % CYG_NODE_SIZE == 0, "a slot is a whole number of gids");

/* An entry of a thread's child table: finds a node's child by function
 * when the parent's hint misses (a parent with many callees). */
struct cyg_kid {
	uint64_t fn;
	uint32_t parent;
	uint32_t child;
};

/* A shadow-stack frame. */
struct cyg_frame {
	uint64_t ts;   /* entry time */
	uint64_t cfa;  /* the instrumented function's stack position at entry */
	uint32_t node; /* gid */
	uint32_t site; /* 0: called from the node's own site, else 1 + index of
			* the thread's cyg_site entry for the call site used */
};

/* Calls of a node made from another call site than the node's first one
 * (a function calling the same callee from two places): counted apart so
 * reports give calls and time per call site.  Append-only per thread. */
struct cyg_site {
	uint32_t node;  /* gid */
	uint32_t pad;
	uint64_t site;
	uint64_t calls;
	uint64_t ticks; /* inclusive ticks of the closed calls from this site */
};

struct cyg_thread {
	/* line 0: the owner's hot fields */
	uint32_t depth;     /* current shadow depth; frame 0 is the root */
	uint32_t busy;      /* inside a hook (re-entry from a signal handler is dropped) */
	uint32_t ovf;       /* current frames past max_depth (counted, not recorded) */
	uint32_t lim;       /* an enter at depth + 1 >= lim takes the slow path:
			     * min(stack_cap, max_depth) */
	uint64_t head;      /* ring words written and published (release) */
	uint64_t tail_seen; /* the owner's cached copy of tail */
	/* The last call the exit hook closed, not yet in its node's latency
	 * histogram (gid 0: none): the next fast exit counts it, the writer's
	 * end too, and the collector adds it to what it reads of a writer
	 * that has not ended.  Deferred so that finding the bucket (a chain
	 * of dependent instructions from the clock's value) is off the path
	 * to the next clock read: counted in the same hook, it cost rdtsc's
	 * waiting for it, some 8 ns a call on fib (bench.py's latency). */
	uint32_t lat_gid;
	uint32_t pad0;
	uint64_t lat_dt;    /* its duration in ticks */
	uint64_t leave_ts;  /* set by longjmp/exit wrappers: when frames were abandoned */
	uint64_t sw_seen;   /* CYG_F_SWITCHES: the position (data_head) up to which
			     * this thread's switch records were read; the exit
			     * hook compares it with the page's data_head */
	/* line 1: the owner's cold counters */
	uint64_t lost __attribute__((aligned(64)));
	uint64_t waits;
	uint64_t wait_ticks;
	uint64_t unpaired;
	uint64_t unwound;
	uint64_t overflow;  /* calls past max_depth, total */
	uint64_t chunk_size;
	uint64_t kids_off;   /* hash (parent gid, fn) -> child gid: struct cyg_kid[] */
	/* node allocation (cold): the next free offset and the chunk's end */
	uint64_t chunk_next __attribute__((aligned(64)));
	uint64_t chunk_end;
	/* line 2: written by the collector */
	uint64_t tail __attribute__((aligned(64))); /* ring words consumed */
	/* line 3: identity, set once */
	uint32_t pid __attribute__((aligned(64)));
	uint32_t tid;
	uint32_t state;     /* CYG_T_* (release-stored) */
	uint32_t seq;       /* registration order */
	uint32_t flags;     /* CYG_TF_* */
	uint32_t root;      /* gid of this thread's root node */
	uint64_t stack_off; /* struct cyg_frame[stack_cap]; replaced by a bigger one as
			     * the thread goes deeper (release-stored after stack_cap) */
	uint64_t ring_off;  /* uint64_t[ring_words], 0 without timeline */
	uint64_t proc_off;  /* its process image */
	uint64_t start_ts;
	uint64_t end_ts;
	uint64_t next;      /* thread list */
	uint64_t seen_off;  /* memory: hashes of the stacks this thread defined */
	uint32_t kids_mask; /* slots - 1 */
	uint32_t kids_n;    /* entries */
	uint64_t sites_off; /* struct cyg_site[CYG_SITES_MAX], 0 until needed */
	uint64_t sidx_off;  /* hash (node, site) -> 1 + entry index, uint32_t[] */
	uint32_t sites_n;
	uint32_t sidx_mask;
	uint64_t mem_events; /* memory: events written */
	uint64_t mem_nested; /* memory: calls not traced (inside a hook or the runtime) */
	char name[16];
	uint32_t stack_cap;  /* frames in the shadow stack at stack_off */
	uint32_t level;      /* 0, or for a writer of signal handlers (CYG_TF_SIGNAL)
			      * how deeply it nests: 1 in a thread's hook, 2 in the
			      * hook of a level-1 writer... */
	uint64_t alt_off;    /* the writer of signal handlers that interrupt this
			      * writer's hooks (0 until needed) */
	uint64_t host_off;   /* for such a writer (CYG_TF_SIGNAL): the writer it nests in */
	uint64_t sig_lost;   /* calls and allocations of signal handlers that could not
			      * be recorded (nested too deep, or no room) */
	uint32_t kids_partial; /* some children are missing from the kids table (no
				* room): a miss there walks the sibling list */
	uint32_t pad3;
	/* CPU samples and switch tracking (cyg/cyg-sample.c): written by the
	 * owner (its handler, its cold paths), and at the process's end by the
	 * thread that ends it for a thread that is off the CPU; read by the
	 * collector.  Addresses and descriptors are the process's own. */
	uint32_t smp_method;    /* CYG_SMP_* */
	int32_t smp_fd;         /* CYG_SMP_PERF: its event's descriptor, else -1 */
	uint64_t smp_timer;     /* CYG_SMP_TIMER: its timer_t */
	uint64_t smp_period_ns; /* the period asked for (the timer's is at least a tick) */
	uint64_t smp_samples;   /* samples taken on this writer: on a node, in a hook,
				 * or with no node */
	uint64_t smp_ovh;       /* of those, inside a hook */
	uint64_t smp_nonode;    /* of those, with no node (a depth out of bounds) */
	uint64_t cpu_ns;        /* the thread's CPU time from its writer's start to its
				 * end (or the process's), 0 when not known */
	uint64_t cpu0_ns;       /* the thread's CPU time when its writer started */
	uint32_t sw_on;         /* switch tracking runs for this thread */
	uint32_t sw_out_preempt; /* the pending OUT was a preemption */
	uint64_t sw_page;       /* the thread's perf mapping (control page + data) */
	uint64_t tls_addr;      /* its thread's runtime TLS (struct cyg_tls): what a
				 * detach stops for it while it is stopped */
	uint64_t sw_out_ns;     /* an OUT record not yet paired: when (CLOCK_MONOTONIC
				 * ns), 0 none */
	uint64_t sw_cut_ns;     /* the process's end charged the pending OUT up to
				 * this time (CLOCK_MONOTONIC ns), 0 none */
	uint64_t sw_records;    /* switch records read */
	uint64_t sw_lost;       /* switch records overwritten before they were read */
	uint64_t sw_wait_ns;    /* off-CPU time placed: preempted ... */
	uint64_t sw_blocked_ns; /* ... and blocked */
	uint64_t sw_unplaced_ns; /* off-CPU time of intervals whose frame was not known */
};

_Static_assert(__builtin_offsetof(struct cyg_thread, sw_seen) + 8 <= CYG_CACHELINE,
	       "sw_seen is on the hot line the exit hook reads");
_Static_assert(__builtin_offsetof(struct cyg_thread, lat_dt) + 8 <= CYG_CACHELINE,
	       "the pending latency is on the hot line the exit hook reads");

/* cyg_thread.smp_method */
enum {
	CYG_SMP_NONE = 0,
	CYG_SMP_PERF = 1,  /* perf_event_open task-clock, signal on overflow */
	CYG_SMP_TIMER = 2, /* timer_create(CLOCK_THREAD_CPUTIME_ID): scheduler ticks */
};

/* cyg_thread.flags (the collector translates them into the capture's
 * CYGPROF_THREAD_* flags) */
enum {
	CYG_TF_FORKED = 4,  /* first thread of a forked child */
	CYG_TF_SIGNAL = 8,  /* signal handlers that interrupted the hooks of host_off */
	CYG_TF_CLONED = 16, /* a thread or process made by a raw clone() */
};
#define CYG_SEEN_SLOTS 16384 /* per-thread table of defined stack hashes */

struct cyg_proc {
	uint32_t pid;
	uint32_t ppid;
	uint32_t state;      /* CYG_P_* */
	int32_t code;        /* exit status or signal number */
	uint32_t seq;        /* registration order */
	uint32_t exit_called; /* exit(code) was called: code is its status */
	uint64_t parent_off; /* process image that forked this one (0 = none) */
	uint64_t start_ts;
	uint64_t end_ts;
	uint64_t maps_off;   /* text of /proc/self/maps (file-backed lines) */
	uint64_t maps_len;
	uint64_t cmd_off;    /* command line, NUL-separated */
	uint64_t cmd_len;
	uint64_t next;       /* process list */
	uint32_t foreign;    /* in another mount namespace than the collector */
	uint32_t primed;     /* the collector opened its objects (set by the collector) */
	uint64_t memdump_off; /* its struct cyg_memdump, 0 = none yet (release store) */
	/* The hooks' cost measured at attach (cyg/cyg-calib.c), in ticks
	 * summed over calib_calls enter/exit pairs: the mean of the
	 * calib_kept rounds of calib_rounds that were not outliers
	 * (cyg/cyg-calib-stats.h), in the attempt kept of calib_tries.
	 * calib_in falls inside the callee's interval, calib_full is the
	 * whole pair as its caller sees it; calib_in_sd and calib_out_sd are
	 * the standard deviations of the kept rounds' in and full - in.
	 * calib_mode (CYG_CALIB_*) says which hooks ran, calib_ring_words
	 * the size of the ring they wrote (0: none).  calib_calls is stored
	 * last (release); 0: not measured (--time=sampled). */
	uint64_t calib_in;
	uint64_t calib_full;
	uint32_t calib_calls;
	uint32_t calib_rounds;
	uint64_t calib_in_sd;
	uint64_t calib_out_sd;
	uint32_t calib_kept;
	uint32_t calib_tries;
	uint32_t calib_mode;
	uint32_t calib_pad;
	uint64_t calib_ring_words;
	uint64_t smp_unattrib; /* CPU samples of its threads that had no writer (atomic) */
	char exe[256];
};

/* ---- the memdump API's table (CYG_F_MEMDUMP) ---------------------------- */
/* One per process image, allocated by the runtime when the process's
 * libcygprof-memdump first asks (cyg__memdump_table()), published in
 * cyg_proc.memdump_off.  A slot is claimed by a compare-and-swap of state
 * 0 -> 1, its name written, then state set to 2 (release); it is never
 * freed.  value is updated with atomic adds (deltas) or stores (totals),
 * then seq incremented (release); the collector samples a slot whose seq
 * changed since it last looked, on its counters interval, and once more at
 * the end.  Everything in it is written by the traced program: the
 * collector bounds-checks it like the rest of the mapping. */
#define CYG_MEMDUMP_SLOTS 64
#define CYG_MEMDUMP_NAME 48

struct cyg_memdump_slot {
	char name[CYG_MEMDUMP_NAME]; /* NUL-terminated within the array */
	uint32_t state;              /* 0 free, 1 being claimed, 2 ready */
	uint32_t pad;
	int64_t value;               /* bytes: the last total, or the sum of the deltas */
	uint64_t seq;                /* reports so far */
	uint64_t last_ns;            /* CLOCK_MONOTONIC ns of the last report */
};

struct cyg_memdump {
	uint32_t nslots;      /* CYG_MEMDUMP_SLOTS */
	uint32_t interval_ms; /* the dumper thread's period (set by the collector's option) */
	uint64_t pad;
	struct cyg_memdump_slot slot[CYG_MEMDUMP_SLOTS];
};

/* ---- the timeline ring: one 64-bit word per event --------------------- */
/* [kind:2][node gid:28][time:34]; time = the low 34 bits of the event's
 * timestamp.  The collector restores the high bits: consecutive events of a
 * thread are less than 2^33 ticks apart unless the collector saw the ring
 * unchanged at a drain in between (it drains every ring every few ms), and
 * a small step back (a thread moved to a core whose clock lags) is read as
 * no time passing.  A SYNC word (not written any more, still read) carries
 * an absolute timestamp. */
enum {
	CYG_EV_ENTER = 0,
	CYG_EV_EXIT = 1,
	CYG_EV_UNWIND = 2, /* synthetic exit of an abandoned frame */
	CYG_EV_EXT = 3,    /* [3:2][sub:4][payload:58], maybe followed by more words */
};
#define CYG_EV_SYNC CYG_EV_EXT

/* Sub-kinds of CYG_EV_EXT words. */
enum {
	CYG_X_SYNC = 0,  /* payload: absolute timestamp (58 bits) */
	CYG_X_ALLOC = 1, /* payload [nra:6][fn:6][shadow:1][time:34]; then addr, size,
			  * stack; stack = the gid of the shadow stack's top, followed by
			  * nra return addresses (innermost first: the caller of the
			  * allocator, then library frames up to the instrumented code),
			  * or the hash of an unwound stack (shadow 0, nra 0) */
	CYG_X_FREE = 2,  /* payload [fn:6][time:34]; then addr */
	CYG_X_STACK = 3, /* payload [n:16]; then the hash, then n return addresses,
			  * innermost first: defines an unwound stack before its first use */
	CYG_X_WAIT = 4,  /* payload [time:34]: the thread waited for room in its ring
			  * (the collector) from then; then its length in ticks.
			  * Written after the event that waited (whose time was
			  * read before the wait). */
};
#define CYG_X_WAIT_WORDS 2

/* The allocator function of an ALLOC or FREE record (its 6-bit fn field) is
 * the capture's own code, enum cygprof_mem_fn of <cygprof/cygprof-capture.h>:
 * one code from the hook to the capture, nothing to translate. */
_Static_assert(CYGPROF_FN_COUNT <= 64, "the fn field of ALLOC/FREE has 6 bits");

static inline uint64_t cyg_x_make(unsigned sub, uint64_t payload)
{
	return (3ULL << 62) | ((uint64_t)sub << 58) | (payload & ((1ULL << 58) - 1));
}
static inline unsigned cyg_x_sub(uint64_t w)
{
	return (unsigned)(w >> 58) & 15;
}
static inline uint64_t cyg_x_payload(uint64_t w)
{
	return w & ((1ULL << 58) - 1);
}
/* ALLOC/FREE payloads */
static inline uint64_t cyg_x_mem(unsigned fn, unsigned shadow, uint64_t delta)
{
	return ((uint64_t)fn << 35) | ((uint64_t)shadow << 34) | delta;
}
static inline uint64_t cyg_x_mem_nra(unsigned nra)
{
	return (uint64_t)nra << 41;
}
static inline unsigned cyg_x_mem_get_nra(uint64_t w)
{
	return (unsigned)(cyg_x_payload(w) >> 41) & 63;
}
static inline unsigned cyg_x_mem_fn(uint64_t w)
{
	return (unsigned)(cyg_x_payload(w) >> 35) & 63;
}
static inline unsigned cyg_x_mem_shadow(uint64_t w)
{
	return (unsigned)(cyg_x_payload(w) >> 34) & 1;
}
static inline uint64_t cyg_x_mem_delta(uint64_t w)
{
	return w & ((1ULL << 34) - 1);
}
#define CYG_EV_DELTA_BITS 34
#define CYG_EV_GID_BITS 28
#define CYG_EV_DELTA_MAX ((1ULL << CYG_EV_DELTA_BITS) - 1)
_Static_assert(CYG_SHM_MAX_BYTES / CYG_NODE_SIZE <= (1ULL << CYG_EV_GID_BITS),
	       "a gid must name every node of the largest mapping");

static inline uint64_t cyg_ev_make(unsigned kind, uint32_t gid, uint64_t delta)
{
	return ((uint64_t)kind << 62) | ((uint64_t)gid << CYG_EV_DELTA_BITS) | delta;
}
static inline uint64_t cyg_ev_sync(uint64_t ts)
{
	return cyg_x_make(CYG_X_SYNC, ts);
}
static inline unsigned cyg_ev_kind(uint64_t w)
{
	return (unsigned)(w >> 62);
}
static inline uint32_t cyg_ev_gid(uint64_t w)
{
	return (uint32_t)((w >> CYG_EV_DELTA_BITS) & ((1U << CYG_EV_GID_BITS) - 1));
}
static inline uint64_t cyg_ev_delta(uint64_t w)
{
	return w & CYG_EV_DELTA_MAX;
}
static inline uint64_t cyg_ev_sync_ts(uint64_t w)
{
	return cyg_x_payload(w);
}

/** Create the memfd, size it (sparse), seal its size, map it and initialise
 * the control page (collector side, ring/shm-create.c); the calling thread
 * then holds ctl->alive until it exits.  ring_bytes is rounded by
 * cyg_ring_words(); max_depth 0 means CYG_DEPTH_MAX.  Returns 0 or -errno. */
int cyg_shm_create(uint64_t size, uint32_t flags, uint64_t ring_bytes, uint32_t max_depth,
		   int *fd_out, struct cyg_ctl **ctl_out);

#define CYG_AT(base, off) ((void *)((char *)(base) + (off)))
#define CYG_NODE(base, gid) ((struct cyg_node *)((char *)(base) + (uint64_t)(gid) * CYG_NODE_SIZE))
#define CYG_NODE_EXT(n) ((struct cyg_node_ext *)(void *)((char *)(n) + CYG_NODE_SIZE))
#define CYG_NODE_LAT(n)                                                                            \
	((struct cyg_node_lat *)(void *)((char *)(n) + CYG_NODE_SIZE + CYG_NODE_EXT_SIZE))

#endif
