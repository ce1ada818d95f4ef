/* SPDX-License-Identifier: MIT */
/* collector-private.h - the collector's internal state, shared by its files.
 *
 * The shared mapping is untrusted input: the traced program can write
 * anything anywhere in it, at any time.  The collector reads every value it
 * uses from the mapping once, into a local (RD/ACQ below), checks it against
 * its own copies of the mapping size and ring size (never ctl->size or
 * ctl->ring_words read back), bounds every walk, and writes only its own
 * fields (ring tails, the ring pool, the heartbeat, primed).  What it
 * rejects is counted (struct damage) and the capture says so in the meta
 * key "damaged". */
#ifndef CYGPROF_COLLECTOR_PRIVATE_H
#define CYGPROF_COLLECTOR_PRIVATE_H

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "collector.h"
#include "cyg-shm.h"
#include "cygprof/cygprof-capture.h"
#include "debuginfo.h"
#include "array.h"
#include "hmap.h"
#include "stack-stash.h"
#include "symbols.h"

/* One read of a field of the mapping (the program may change it at any time:
 * the value is read exactly once, into a local, then checked). */
#define RD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ACQ(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)

/* Limits of what the runtime writes (cyg-shm.h): a longer maps snapshot or
 * command line is damage. */
#define COLLECTOR_MAPS_MAX CYG_MAPS_MAX
#define COLLECTOR_CMD_MAX CYG_CMD_MAX

/* ---- the poll loop's timings (poll.c, drain.c, clock.c) ---------------- */

/* Sleep between two turns of the poll loop, by what the last drain found:
 * a ring at least 1/POLL_BUSY_SHARE full (writers may soon wait: come back
 * soon, but not at once, so they are not disturbed for every few events)... */
#define POLL_SLEEP_BUSY_NS 50000ULL
#define POLL_BUSY_SHARE 8
/* ... fewer words than that (events trickle in) ... */
#define POLL_SLEEP_TRICKLE_NS 200000ULL
/* ... rings, but nothing new in them ... */
#define POLL_SLEEP_IDLE_NS 1000000ULL
/* ... or no rings at all (neither --timeline nor --memory): only the ends
 * of processes to wait for.  A turn that reaped a process does not sleep. */
#define POLL_SLEEP_NO_RINGS_NS 10000000ULL
/* Commit the capture's open write batch (the events drained since) at least
 * this often: a collector killed later leaves them in the capture. */
#define POLL_COMMIT_NS 200000000ULL
/* Store a checkpoint (the whole profile so far) this often, unless
 * CYGPROF_CHECKPOINT_MS says otherwise (0: only at the end; at most a
 * day)... */
#define POLL_CHECKPOINT_NS 1000000000ULL
#define POLL_CHECKPOINT_MAX_MS CYGPROF_CHECKPOINT_MAX_MS
/* ... but at least POLL_CHECKPOINT_CPU_SHARE times the CPU time the last
 * checkpoint took apart: checkpoints get at most a tenth of the collector.
 * Its own CPU time: the drains a checkpoint makes meanwhile
 * (collector_yield()) and its commit, which writes the events drained since
 * the last one, are the rings' work, which goes on anyway, and do not count
 * (on a busy program they were most of it, and spaced checkpoints seconds
 * apart). */
#define POLL_CHECKPOINT_CPU_SHARE 10
/* Whatever the last one cost, the next checkpoint comes at most this long
 * after it: what a kill or a full disk loses is bounded. */
#define POLL_CHECKPOINT_GAP_MAX_NS 4000000000ULL
/* The first checkpoint as soon as a thread has calls, then the next ones
 * POLL_CHECKPOINT_RAMP_NS apart, doubling up to the interval: a recorder
 * killed early keeps the calls of its first tenths of a second (the first
 * checkpoint may come before the program's inner functions are called). */
#define POLL_CHECKPOINT_RAMP_NS 100000000ULL
/* A long checkpoint drains the rings when the last drain is this old
 * (collector_yield()), so writers do not wait for the checkpoint. */
#define POLL_YIELD_DRAIN_NS 2000000ULL
/* ... when a ring is 1/POLL_BUSY_SHARE full, or at the latest when the
 * last drain is this old. */
#define POLL_YIELD_MAX_NS 50000000ULL
/* The TSC is calibrated against CLOCK_MONOTONIC over at least this time
 * from the origin, while the program starts. */
#define CLOCK_CALIBRATE_NS 10000000ULL

static inline uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t h = a * 0x9E3779B97F4A7C15ULL;
	h ^= b + 0x632BE59BD9B4E019ULL + (h << 6) + (h >> 2);
	h ^= c * 0xC2B2AE3D27D4EB4FULL + (h << 6) + (h >> 2);
	return h ? h : 1;
}

/* The key to try next after a collision on a hashed key (never 0): the
 * interning tables probe the key space until the entry matches. */
static inline uint64_t hash_next(uint64_t key)
{
	key = key * 31 + 7;
	return key ? key : 1;
}

/* What the collector rejected from the mapping. */
struct damage {
	uint64_t events;  /* timeline words and memory records */
	uint64_t rings;   /* rings given up: head or position out of range */
	uint64_t threads; /* thread records and thread-list links */
	uint64_t procs;   /* process records and process-list links */
	uint64_t nodes;   /* call-tree nodes and links */
	uint64_t frames;  /* open frames of the shadow stacks */
	uint64_t sites;   /* call-site entries */
	uint64_t texts;   /* maps snapshots, command lines, names */
	uint64_t counts;  /* counters and times that cannot be true */
};

/* The tree the capture gets for one thread: the raw tree with the filters
 * applied.  Raw nodes (gids) map onto it as they are first seen. */
struct fnode {
	uint32_t parent;
	uint32_t depth;
	uint64_t fn, site, calls, ticks;
	/* SELF figures of the runtime's node ext (a node the filters leave
	 * out gives its own to the kept ancestor its children attach to) */
	uint64_t samples, ovh, wait_ns, blocked_ns;
};

/* The totals of a raw node's u32 sample counters, which may wrap: kept
 * from their deltas at every fold. */
struct extacc {
	uint32_t last_s, last_o;
	uint64_t s, o;
};

/* A latency histogram a capture-tree node gets (latency.c): a raw node's
 * (gid), or a call still open when the tree was stored (open: 1 + its
 * ticks so far). */
struct latref {
	uint32_t idx; /* capture-tree node */
	uint32_t gid;
	uint64_t open;
};

#define GID_DROP UINT32_MAX
#define GID_BAD (UINT32_MAX - 1)

struct cthread {
	/* identity, read once when the thread was found and checked */
	uint64_t off;        /* its struct cyg_thread */
	uint32_t idx;        /* capture index: order in which the collector found it */
	uint32_t pid, tid, flags;
	uint32_t root;       /* gid of its root node */
	uint64_t ring_off;   /* 0: no ring (or a ring given up) */
	uint64_t start_ts;
	struct cproc *proc;  /* NULL when unknown */
	/* draining */
	uint64_t tail;       /* ring words consumed (ours; published in t->tail) */
	uint64_t cur_ts;     /* full time of the last event decoded */
	uint64_t last_head;  /* head seen at the previous drain */
	uint64_t idle_lb;    /* a drain saw the ring unchanged at this time: later
			      * events are not older than it */
	uint64_t last_ev_ns, last_mev_ns; /* times stored last (they never go back) */
	struct fnode *nodes;
	size_t n, cap;
	struct hmap bykey;   /* hash3(parent, fn, 0) -> index (collisions: probe the next key) */
	struct hmap bygid;   /* gid -> decision (see cthread_resolve) */
	uint32_t cache_gid[256], cache_idx[256]; /* direct-mapped front of bygid */
	struct cygprof_event *ev; /* pending timeline events */
	size_t nev, capev;
	struct pend { uint32_t node; uint32_t written; uint64_t ts; } *pend; /* time filter */
	size_t npend, cappend;
	struct cygprof_mem_event *mev; /* pending memory events */
	size_t nmev, capmev;
	struct hmap shadow_ids; /* hash3(gid, return addresses) -> stash id */
	struct hmap prefix_ids; /* gid -> stash id of its callers' frames */
	struct shadow_slot { uint64_t ra; uint32_t gid, id; } *sc; /* [1024], its front for one
								 * address (memory only) */
	uint64_t mem_events; /* memory events stored */
	uint64_t events;     /* timeline events stored */
	uint64_t calls;      /* entries recorded (before filters), at the last checkpoint */
	uint64_t unwound_extra; /* frames the last checkpoint closed */
	uint64_t lost, waits;   /* as the last checkpoint stored them */
	int ring_done;
	int ring_bad;        /* given up for what the program wrote (damage) */
	/* checkpoints */
	int stored_ended;    /* stored after it ended: its tree changes no more */
	int stored;          /* its record is in the capture */
	size_t sym_next;     /* nodes whose symbols are stored */
	struct damage dmg;   /* what the last look at its tree, stack and sites rejected */
	struct damage rdmg;  /* ... and at its record (counters, name) */
	/* CPU samples (CYG_F_CPUSAMPLE): gid -> 1 + index into ext */
	struct hmap ext_at;
	struct extacc *ext;
	size_t next, capext;
	uint64_t cpu_samples; /* samples as the last checkpoint stored them */
	uint32_t cpu_method;  /* CYGPROF_CPU_* as the last checkpoint stored it */
	uint32_t cpu_switches; /* its switches were tracked */
	uint64_t cpu_ns;      /* its CPU time, when the runtime read it */
	/* waits for the collector (CYG_X_WAIT) not stored yet */
	struct cygprof_offcpu *xwait;
	size_t nxwait, capxwait;
	/* latency histograms of the last fold (latency.c) */
	struct latref *lat;
	size_t nlat, caplat;
	char comm[16];        /* its name as /proc/PID/task/TID/comm said at the last
			       * checkpoint while it ran ("": never read) */
};

/* One process image: symbols for filters and the capture's tables. */
struct cproc {
	uint64_t off;        /* its struct cyg_proc */
	uint32_t idx;        /* capture index: order in which the collector found it */
	uint32_t pid;        /* read once when found */
	struct procmaps maps;
	uint64_t maps_len, maps_off; /* the snapshot parsed (or rejected) last */
	uint64_t primed_len; /* maps_len when its objects were last opened */
	char *ns;            /* its mount namespace when not ours ("mnt:[N]") */
	/* the collector reaped it (its own table: wins over the mapping) */
	int reaped, status;
	uint64_t reap_ts;
	/* checkpoints: objects and symbols stored so far */
	struct hmap seen;    /* addr -> 1 named, 2 stored as a placeholder */
	uint64_t *retry;     /* placeholder addresses to name again */
	size_t nretry, capretry;
	uint32_t *objidx;    /* per map: capture object index */
	uint64_t objs_len;   /* maps_len when objects were stored */
	uint64_t objs_off;
	struct damage dmg;   /* what the last look at its record rejected */
	int stored;          /* its record is in the capture */
};

/* An object stored in the capture: its index stays the same at every checkpoint. */
struct cobj {
	uint32_t proc, idx;
	char *path;
};

struct collector {
	const struct collector_opts *o;
	/* The stack stash (capture/stack-stash.h): a trie of frames, outermost
	 * first, shared by all threads, node id at stash.v[id - 1]. */
	struct stack_stash stash;
	size_t stash_sym_next;    /* nodes whose symbols are stored */
	struct hmap stash_unwound; /* hash3(proc, stack hash, 0) -> id of its innermost frame */
	struct cygprof_capture *cap; /* where every capture write goes: a file, or a
				      * stream to the receiver (output.c) */
	char *base;
	struct cyg_ctl *ctl;
	/* our own copies: never read back from the mapping */
	uint64_t size;        /* of the mapping */
	uint64_t ring_words;  /* per ring, a power of two */
	uint32_t flags;       /* CYG_F_* */
	uint64_t heartbeat, pool_head;
	uint64_t tsc0, mono0;
	/* the tick read together with CLOCK_MONOTONIC and CLOCK_REALTIME at the
	 * origin and at the last metadata write (meta clock_start, clock_end) */
	struct clock_pair { uint64_t tick, mono_ns, real_ns; } clk_start, clk_end;
	double ns_per_tick;
	uint64_t mult;        /* ns = ticks * mult >> 32 */
	struct cthread **threads;
	size_t nthreads;
	struct hmap thread_at; /* thread record offset -> 1 + index, or 0: rejected */
	struct cproc **procs;
	size_t nprocs;
	struct hmap proc_at;   /* process record offset -> 1 + index, or 0: rejected */
	uint64_t procs_head;   /* head of the process list at the last scan */
	uint64_t threads_head;
	struct elfcache { char *path; struct sym_elf *elf; int err; } *elfs;
	size_t nelfs;
	struct cobj *objs;
	size_t nobjs;
	uint32_t *walk;       /* scratch stack of gids for the walks */
	size_t walk_cap;
	void *mwalk;          /* scratch of memory.c's walks */
	size_t mwalk_cap;     /* in bytes */
	uint64_t end_ts;      /* the end of the recording (so far, at a checkpoint) */
	uint64_t cpu_ns;      /* user + system CPU time of the processes reaped */
	int filtering;
	int final;            /* the program is gone: drain everything */
	int err;              /* first capture write error */
	uint64_t err_ns;      /* when it came (ns from the start) */
	/* The capture's write failed (a full disk, an I/O error): the writer
	 * keeps what it committed before and refuses everything after
	 * (cygprof_capture_end_failed()); the collector stops storing but goes
	 * on draining, so the program runs on unharmed. */
	int werr;
	uint64_t werr_ns;     /* when (ns from the start) */
	int kept;             /* a checkpoint was committed ... */
	uint64_t kept_ns;     /* ... holding the calls up to this time */
	struct damage dmg;    /* rejected while draining and finding records */
	struct debuginfo *dbg; /* separate debug files: names of stripped objects */
	int main_pid;         /* the program we started */
	int main_status;      /* its wait status */
	int main_reaped;
	char *own_ns;         /* our mount namespace */
	uint64_t ckpt_ns;     /* what the last checkpoint cost (its own CPU time) */
	uint64_t yield_cpu_ns; /* CPU time of the drains checkpoints made (collector_yield()) */
	int ckpt_calls;       /* a checkpoint with calls of a thread was taken */
	uint64_t events_kept_ns; /* the last commit holds the events drained up to this time */
	uint64_t last_drain;  /* CLOCK_MONOTONIC ns of the last drain */
	uint64_t drain_ts;    /* the tick when the last drain began */
	int in_checkpoint;    /* a checkpoint runs: collector_yield() may drain */
	void *scratch[3];     /* checkpoint buffers kept between checkpoints */
	size_t scratch_cap[3];
	struct sigaction old_fwd[4]; /* SIGINT, SIGTERM, SIGQUIT, SIGHUP: put back when the program is gone */
	struct counters *counters; /* counters.c: NULL without --counters and --memdump */
	struct sampling *sampling; /* sampling.c: NULL without --sample (or when it is off) */
	struct snapstate *snap;    /* snapshot.c: NULL without o->snapshot */
	struct attach_run *attach; /* attach-run.c: record --attach; NULL otherwise */
	struct pushstate *push;    /* push.c: record --push; NULL otherwise */
	uint64_t ckpt_interval_ns; /* poll.c: the checkpoints' interval (0: only at the end) */
	uint64_t cpu_period_ns; /* CYG_F_CPUSAMPLE: the sampling period, our copy */
};

/* The full timestamp of an event from its low 34 bits (see cyg-shm.h).  The
 * low bits come from the mapping: whatever they are, the result is within
 * 2^34 ticks of the previous event's time. */
static inline uint64_t restore_ts(struct cthread *ct, uint64_t low)
{
	const uint64_t half = 1ULL << 33, wrap = 1ULL << 34;
	uint64_t delta = (low - ct->cur_ts) & (wrap - 1);
	uint64_t full = ct->cur_ts + delta;

	if (delta >= half && ct->idle_lb <= ct->cur_ts + half)
		full = ct->cur_ts; /* a small step back: no time passed */
	else if (ct->idle_lb > full + half)
		full += (ct->idle_lb - full - half + wrap - 1) / wrap * wrap; /* after a long idle stretch */
	ct->cur_ts = full;
	return full;
}

static inline uint64_t ticks_to_ns(const struct collector *c, uint64_t ticks)
{
	return (uint64_t)(((unsigned __int128)ticks * c->mult + (1ULL << 31)) >> 32);
}

static inline uint64_t tick_ns(const struct collector *c, uint64_t ts)
{
	return ts <= c->tsc0 ? 0 : ticks_to_ns(c, ts - c->tsc0);
}

#define C_AT(c, off) ((void *)((c)->base + (off)))

/* [off, off + len) lies in the part of the mapping the runtime allocates
 * from, and off is aligned to 8 (so fields can be read atomically). */
static inline int shm_ok(const struct collector *c, uint64_t off, uint64_t len)
{
	return off >= CYG_AREA_OFF && !(off & 7) && off <= c->size && len <= c->size - off;
}

/* gid names a node of thread ct's tree as far as its place tells: its slot
 * (node and ext) inside the mapping and not older than the thread's root (nodes are allocated upwards:
 * a parent always has a smaller gid than its children). */
static inline int gid_ok(const struct collector *c, const struct cthread *ct, uint32_t gid)
{
	return gid >= ct->root && shm_ok(c, (uint64_t)gid * CYG_NODE_SIZE, CYG_NODE_SLOT);
}

static inline struct cyg_node *shm_node(const struct collector *c, uint32_t gid)
{
	return (struct cyg_node *)C_AT(c, (uint64_t)gid * CYG_NODE_SIZE);
}

/* clock.c */
uint64_t collector_mono_ns(void); /* CLOCK_MONOTONIC */
uint64_t collector_cpu_ns(void);  /* the collector's CPU time */
int collector_have_tsc(void);     /* rdtsc is usable as the clock (invariant TSC) */
/* The runtime's clock now: rdtsc ticks with CYG_F_TSC, else CLOCK_MONOTONIC ns. */
uint64_t collector_now(const struct collector *c);
void collector_clock_origin(struct collector *c);
/* The runtime's tick read together with CLOCK_MONOTONIC and CLOCK_REALTIME:
 * of several tries, the one whose two monotonic reads around the tick are
 * closest, each clock at the middle of its window. */
void collector_clock_pair(const struct collector *c, struct clock_pair *p);
void collector_calibrate(struct collector *c);
/* The hooks' cost the runtime measured at attach (cyg_proc.calib_*,
 * cyg/cyg-calib.c), per enter/exit pair in ns: inside the callee's
 * interval (in) and in its caller's (out), with their spreads (standard
 * deviations of the rounds kept), from the first process image (in the
 * collector's order) with a plausible one; and the range of in and out
 * over every image that has one. */
struct collector_overhead {
	double in_ns, out_ns;       /* the first image's */
	double in_sd_ns, out_sd_ns; /* their spreads */
	uint32_t calls;             /* pairs per round */
	uint32_t rounds;            /* rounds per attempt */
	uint32_t kept;              /* rounds kept */
	uint32_t tries;             /* attempts made */
	uint32_t mode;              /* CYG_CALIB_* */
	uint64_t ring_bytes;        /* the ring the hooks wrote (CYG_CALIB_TIMELINE) */
	uint32_t images;            /* process images with a calibration */
	double in_min, in_max, out_min, out_max; /* over those images */
};
/* Returns 1 when found, else 0 (none, or --time=sampled). */
int collector_overhead(const struct collector *c, struct collector_overhead *o);

/* setup.c: the mapping's size (--shm-size, or within ulimit -v), and the
 * mapping itself.  Both return 0 or a negative error, message in err. */
int collector_shm_size(const struct collector_opts *o, uint64_t *size, char *err, size_t errlen);
int collector_map(struct collector *c, uint64_t size, int *memfd, char *err, size_t errlen);

/* spawn.c: the open descriptors; fork and exec the program with the
 * runtime preloaded (returns its pid, or -1 with errno; *exec_errno set when
 * the exec failed); forward SIGINT, SIGTERM, SIGQUIT and SIGHUP sent to
 * cygprof alone to it (not those its process group got), and stop. */
int collector_list_fds(int **out, size_t *n);
pid_t collector_spawn(struct collector *c, int memfd, const int *caller, size_t ncaller,
		      int *exec_errno);
/* The witness of the process group's signals (spawn.c), made once before
 * the program starts. */
void collector_witness_start(void);
void collector_forward_signals(struct collector *c);
void collector_forward_end(struct collector *c);

/* record.c: free what the collector holds (not the capture). */
void collector_free(struct collector *c);
/* record.c: note err, the error of a capture call, when it is the first
 * (c->err, and its time c->err_ns). */
void collector_note_err(struct collector *c, int err);

/* record.c: the end of a run (the program gone, or detached from): the last
 * drain, the final checkpoint and snapshot, meta(c, arg) when not NULL (the
 * caller's meta keys), the commit; the totals and the damage line into res.
 * Returns the first error. */
int collector_finish_run(struct collector *c, int (*meta)(struct collector *c, void *arg),
			 void *arg, struct collector_result *res);

struct netp_enc;
/* output.c: the run's capture c->cap: a new capture at o->output, or with
 * o->send_to a stream capture whose frames go out on *send_fd (enc and
 * send_fd must outlive the run).  0, or an error with its line in err. */
int collector_output_open(struct collector *c, struct netp_enc *enc, int *send_fd, char *err,
			  size_t errlen);
/* output.c: close c->cap; rc: the run's error so far.  Sets
 * res->capture_bytes (of the file, or sent) and, on an error (a lost
 * connection too), its one line in err; returns the error. */
int collector_output_end(struct collector *c, struct netp_enc *enc, int rc, int status,
			 struct collector_result *res, char *err, size_t errlen);

/* output.c: the capture's write failed with err (a commit's error: the
 * writer refuses every write from then on): stop storing (c->werr, at the
 * time of the first error noted, else now); a failed write on a file
 * system with no room left is a full disk whatever LMDB said (EIO for a
 * short write). */
void collector_write_failed(struct collector *c, int err);

/* finish.c: the meta keys known from the start (mode, instruments, clock,
 * host...), into the first batch: a capture cut short before its first
 * checkpoint still says how it was recorded. */
int collector_put_start_meta(struct collector *c);
/* finish.c: the records of the threads (and their processes) found since
 * the last checkpoint, so that the events committed next belong to a
 * thread a reader knows; their trees are stored as they are (the calls
 * come with the next checkpoint). */
int collector_store_new_threads(struct collector *c);

/* attach-run.c: the attach is over (the duration, a signal, the process ended). */
int collector_attach_over(struct collector *c);

/* poll.c: drain, reap and checkpoint until no child is left; returns the
 * wait status of pid. */
int collector_poll(struct collector *c, pid_t pid);

/* drain.c: drain every ring; returns the largest number of words one ring had. */
uint64_t collector_drain_all(struct collector *c);
/* Called by a long checkpoint now and then: drains the rings if the last
 * drain is POLL_YIELD_DRAIN_NS old and a ring fills (POLL_YIELD_MAX_NS old:
 * whatever the rings), so writers do not wait for the checkpoint. */
void collector_yield(struct collector *c);

/* A time read from the mapping, clamped into [lo, hi]. */
static inline uint64_t clamp_ts(uint64_t ts, uint64_t lo, uint64_t hi)
{
	return ts < lo ? lo : ts > hi ? hi : ts;
}

/* tree.c: map raw node gid onto the thread's capture tree: its index, GID_DROP when
 * the filters hide it, GID_BAD when gid or a node on its path to the root
 * cannot be right (rejected, and remembered as such). */
uint32_t cthread_resolve(struct collector *c, struct cthread *ct, uint32_t gid);
/* The decision for a node whose parent's decision is pv (see tree.c). */
uint64_t cthread_decide(struct collector *c, struct cthread *ct, uint64_t fn, uint64_t site,
			uint64_t pv);
uint64_t cthread_root(struct collector *c, struct cthread *ct);
#define KEPT_BIT (1ULL << 32)
#define SCOPE_BIT (1ULL << 33)
#define BAD_BIT (1ULL << 34)
static inline uint32_t decision_idx(uint64_t v)
{
	return (v & BAD_BIT) ? GID_BAD : (v & KEPT_BIT) ? (uint32_t)v : GID_DROP;
}

/* latency.c: the histograms of a thread's fold.  Forget the last fold's;
 * note raw node gid (kept as capture node idx) or an open call of ticks;
 * store them (damaged: histograms left out as untrue). */
void collector_lat_reset(struct cthread *ct);
void collector_lat_node(struct cthread *ct, uint32_t idx, uint32_t gid);
void collector_lat_open(struct cthread *ct, uint32_t idx, uint64_t ticks);
int collector_put_latency(struct collector *c, struct cthread *ct, uint64_t max_ticks,
			  uint64_t *damaged);

/* mapping.c: finding and checking what the runtime registered. */
/* Pick up processes and threads registered since the last look; full: walk
 * the whole lists (at the end), so a broken link is seen. */
void collector_scan(struct collector *c, int full);
/* The process record at off (found now if new); NULL when off cannot be one. */
struct cproc *collector_proc(struct collector *c, uint64_t off);
/* Parse the process's maps snapshot again if the runtime took a new one. */
void collector_proc_maps(struct collector *c, struct cproc *cp);
/* We reaped pid (our child, or an orphan we adopted as subreaper). */
void collector_note_end(struct collector *c, pid_t pid, int status);
/* "the program wrote into cygprof's shared memory: ..." or NULL; owned. */
char *collector_damage_line(struct collector *c);
void collector_damage_add(struct damage *to, const struct damage *d);

/* names.c: the raw name of the function at addr in process cp (its start,
 * size, map and object when found), or NULL. */
const char *collector_fn_name(struct collector *c, struct cproc *cp, uint64_t addr, uint64_t *start,
			      uint64_t *size, struct procmap **map, struct sym_elf **elf);
/* The name of the function at addr in process cp as the capture stores it
 * (symbols/fnname.h, the one spelling): raw demangled, raw and m being what
 * collector_fn_name() found; without raw, the placeholder of m's object
 * ("libfoo.so+0x1234[ [deleted]]"), or "0x..." when m is NULL.  Owned;
 * NULL when out of memory. */
char *collector_fn_label(struct collector *c, struct cproc *cp, const char *raw,
			 struct procmap *m, uint64_t addr);
/* The ELF object of map in process cp (cached); *gone set when its file is
 * no more the one that was mapped (deleted, or replaced by something that is
 * not a regular file). */
struct sym_elf *collector_elf(struct collector *c, struct cproc *cp,
				  const struct procmap *m, int *gone);
/* Whether raw, its demangled form, or that without parameters matches one
 * of the n glob patterns. */
int collector_name_matches(const char **pats, size_t n, const char *raw, unsigned char *hits);
/* Open the objects of processes seen since the last call while they live:
 * through /proc/PID/root for a process in another mount namespace (a
 * container), so their files are found, and before they can be deleted. */
void collector_prime_procs(struct collector *c);

/* finish.c: store what the capture needs to be read as it is now: trees (with the
 * time of frames still open up to now added in the collector's copy),
 * sites, threads, processes, objects and symbols not stored yet, metadata.
 * final: the program is gone; the metadata then says the capture is
 * complete.  One path for the checkpoints and the end. */
int collector_checkpoint(struct collector *c, int final);
/* Meta command, mode and instruments (finish.c): at the capture's creation
 * and at every checkpoint. */
int collector_put_meta_static(struct collector *c);
/* ct's capture tree as the capture stores it (n = ct->n nodes, the root's
 * parent CYGPROF_NONE, times in ns), as the last checkpoint folded it. */
void collector_tree_nodes(const struct collector *c, const struct cthread *ct,
			  struct cygprof_node *v);

/* memory.c: the memory records (ALLOC, FREE, STACK) and the waits (WAIT) from ring position
 * tail on, as long as they come one after another and whole before head;
 * returns the position after the last one taken (tail: none), where the
 * drain's loop goes on with anything else (SYNC, a call event, a record
 * cut at head or damaged).  In one call: a call a record was a tenth of
 * the collector's work on a malloc/free loop. */
uint64_t collector_mem_records(struct collector *c, struct cthread *ct, const uint64_t *ring,
			       uint64_t mask, uint64_t tail, uint64_t head);
/* How many words the EXT record starting with w takes. */
static inline uint64_t collector_mem_len(uint64_t w)
{
	switch (cyg_x_sub(w)) {
	case CYG_X_ALLOC:
		return 4 + (cyg_x_mem_shadow(w) ? cyg_x_mem_get_nra(w) : 0);
	case CYG_X_FREE:
		return 2;
	case CYG_X_STACK:
		return (cyg_x_payload(w) & 0xffff) + 2;
	case CYG_X_WAIT:
		return CYG_X_WAIT_WORDS;
	default:
		return 1;
	}
}

/* counters.c: sampling the counters (--counters) and the memdump tables
 * (--memdump).  init: before the program runs (0 or -ENOMEM); tick: in the
 * poll loop, samples when an interval has passed and returns the ns until
 * the next tick (UINT64_MAX: no counters); final: the last read of every
 * memdump table, after the program is gone.  Errors of the capture go to
 * c->err. */
int collector_counters_init(struct collector *c);
uint64_t collector_counters_tick(struct collector *c);
void collector_counters_final(struct collector *c);
void collector_counters_release(struct collector *c);

/* sampling.c: perf samples and off-CPU intervals (record --sample).  open:
 * in the parent, after the fork and before the child may exec: one
 * inherited event per CPU on pid; where perf refuses, one warning line and
 * no sampling (never an error).  drain: each turn of the poll loop; final:
 * after the program is gone, everything.  Errors of the capture go to
 * c->err. */
void collector_sampling_open(struct collector *c, pid_t pid);
void collector_sampling_drain(struct collector *c);
void collector_sampling_final(struct collector *c);
void collector_sampling_release(struct collector *c);
/* How many samples were taken. */
uint64_t collector_sampling_count(const struct collector *c);
/* The metadata of sampling: "sample_event", "sample_hz", "sample_lost". */
int collector_sampling_meta(struct collector *c);

/* snapshot.c (cygprof top): final: the capture's trees, as the last
 * checkpoint folded them, to o->snapshot (when set).  turn: at every turn of
 * the poll loop; calls o->turn, and takes a live snapshot (from the mapping)
 * every o->snapshot_ns.  mem: the memory events of ct about to be flushed
 * (the live heap of --memory).  release: at the end. */
void collector_snapshot(struct collector *c, int final);
void collector_snapshot_turn(struct collector *c);
void collector_snapshot_mem(struct collector *c, const struct cthread *ct);
void collector_snapshot_release(struct collector *c);

/* push.c (record --push): the interval since the last checkpoint to
 * o->interval(), after a checkpoint (final: the last one); the counts of
 * pushes sent and dropped (o->interval_end()) into the meta.  0 or an error. */
int collector_push_interval(struct collector *c, int final);
int collector_push_meta(struct collector *c);
void collector_push_release(struct collector *c);

/* Write what the drain produced: new stash nodes, then the thread's events. */
void collector_mem_flush(struct collector *c, struct cthread *ct);
void collector_mem_release(struct collector *c);

#endif
