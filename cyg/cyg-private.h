/* SPDX-License-Identifier: MIT */
/* cyg-private.h - state shared by the runtime's hot hooks and its cold paths.
 * Everything here runs inside the traced program: libc, libdl and pthread only. */
#ifndef CYGPROF_CYG_PRIVATE_H
#define CYGPROF_CYG_PRIVATE_H

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "cyg-shm.h"

#define NOINSTR __attribute__((no_instrument_function))
#define HIDDEN __attribute__((visibility("hidden")))
#define EXPORT __attribute__((visibility("default")))
#define COLD __attribute__((cold, noinline))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TLS_IE __attribute__((tls_model("initial-exec")))

#define CYG_SIG_LEVELS 4 /* writers of signal handlers nested in one thread */
/* frame 1 of a signal handlers' writer: its exit switches back to the
 * writer whose hook the signal interrupted */
#define CYG_SITE_HOST UINT32_MAX

/* The thread's writer, reached through initial-exec TLS (no __tls_get_addr). */
struct cyg_tls {
	struct cyg_thread *t;
	struct cyg_frame *stk;
	uint64_t *ring;
	/* CYG_F_SWITCHES: the data_head of this thread's switch records, which
	 * the exit hook compares with t->sw_seen; cyg_sw_zero (a 0 that never
	 * changes) when there are none to read: tracking is off, the writer is
	 * a signal handler's, or a fork is under way (the child has no copy
	 * of the parent's perf mapping).  Never NULL once t is set. */
	const uint64_t *swh;
	int guard;   /* memory tracing: inside the runtime or the real allocator */
	int in_lock; /* this thread holds (or is taking) the cold-path lock */
	/* the CPU sampler of this OS thread (cyg-sample.c): what its handler
	 * recognises as its own samples */
	struct cyg_tls_smp {
		uint32_t method; /* CYG_SMP_* */
		int fd;          /* CYG_SMP_PERF: the event's descriptor */
		uint64_t timer;  /* CYG_SMP_TIMER: the timer */
		int tok;         /* CYG_SMP_TIMER: its si_value */
		void *sw_map;    /* the switch records' mapping, NULL when none */
		const uint64_t *sw_saved; /* swh while a fork is under way */
	} smp;
	/* what t, stk and ring were when a signal handler's writer of level
	 * i + 1 took over; put back exactly when it gives up */
	struct cyg_tls_save {
		struct cyg_thread *t;
		struct cyg_frame *stk;
		uint64_t *ring;
		const uint64_t *swh;
	} save[CYG_SIG_LEVELS];
};

extern __thread struct cyg_tls cyg_tls TLS_IE HIDDEN;
/* What cyg_tls.swh points to when there are no switch records to read. */
extern const uint64_t cyg_sw_zero HIDDEN;
extern char *cyg_base HIDDEN;
/* The end of the window of the mapping this process maps (only grows), and
 * the last place an object of at most 64 bytes (a node, a frame) can start
 * in it: cyg_end - 64, stored after cyg_end, so a hook that reads it
 * stale only takes its slow path. */
extern char *cyg_end HIDDEN;
extern char *cyg_lim HIDDEN;
extern struct cyg_ctl *cyg_ctl HIDDEN;
extern int cyg_use_tsc HIDDEN;
extern int cyg_timeline HIDDEN;
/* CYG_F_NOCLOCK (record --time=sampled): the hooks read no clock, frames
 * carry no time, and nothing adds ticks to a node or call site. */
extern int cyg_noclock HIDDEN;
extern uint64_t cyg_ring_mask HIDDEN;

extern uint32_t cyg_max_depth HIDDEN;
extern int cyg_memory HIDDEN; /* tracing the malloc family (libcygprof-mem.so, --memory) */
/* 0 not attached yet, 1 attached, <0 disabled (-1), attaching (-2) or
 * detached (CYG_STATE_DETACHED: cygprof_detach(), the hooks' cold paths
 * return without writing) */
extern int cyg_state HIDDEN;
#define CYG_STATE_DETACHED (-3)
/* cygprof_detach() ran: every cold path of the hooks returns at once. */
#define CYG_DETACHED() UNLIKELY(__atomic_load_n(&cyg_state, __ATOMIC_RELAXED) == CYG_STATE_DETACHED)
/* Attach before our constructor ran (an allocation in an earlier one). */
HIDDEN void cyg__attach_early(void) COLD;

/* What a library built on the runtime (preload/: libcygprof-mem.so) wants
 * to be told.  It registers once, at load (cyg__register()); the runtime
 * calls through these and never names a function of that library. */
struct cyg_callbacks {
	/* The mapping is attached and asks for memory tracing (CYG_F_MEMORY):
	 * set tracing up.  Called once, before cyg_memory is set. */
	void (*mem_attach)(void);
	/* The loaded objects changed (a dlopen), while memory is traced. */
	void (*objs_changed)(void);
};
/* The callbacks registered, or NULL. */
extern const struct cyg_callbacks *cyg_callbacks HIDDEN;
/* Register cb (idempotent).  If the runtime attached already (a hook or an
 * allocation came first), memory tracing starts now. */
HIDDEN void cyg__register(const struct cyg_callbacks *cb) COLD;

HIDDEN uint64_t cyg__mono(void) __attribute__((noinline));

NOINSTR static inline uint64_t cyg_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (LIKELY(cyg_use_tsc))
		return __rdtsc();
#endif
	return cyg__mono();
}

/* The time of a call's enter or exit for the hooks' cold paths: none (0)
 * under CYG_F_NOCLOCK. */
NOINSTR static inline uint64_t cyg_hook_now(void)
{
	return cyg_noclock ? 0 : cyg_now();
}

/* The stack position of the instrumented function that called the hook. */
#if defined(__GNUC__) && !defined(__clang__)
#define CYG_CFA() ((uint64_t)(uintptr_t)__builtin_dwarf_cfa())
#else
#define CYG_CFA() ((uint64_t)(uintptr_t)__builtin_frame_address(0) + 16)
#endif

/* The program can write anything into the mapping (a stray pointer, or on
 * purpose): what the runtime reads there as an offset, a gid or a depth is
 * checked before it is followed, so that a corrupt value can cost a
 * writer (cyg__writer_bad(): dropped and counted), never a crash, a write
 * outside the mapping or an endless loop.  *p, a node or a frame (at most
 * 64 bytes), lies in the window: every pointer made from the mapping's
 * values is at or above cyg_base (a u32 gid or depth times a small size
 * cannot wrap), so one compare with a global in memory, which takes no
 * register in the hooks (a plain read: it only grows). */
#define CYG_IN(p)                                                                                  \
	({                                                                                         \
		_Static_assert(sizeof(*(p)) <= CYG_NODE_SIZE, "CYG_IN: at most 64 bytes");         \
		LIKELY((const char *)(p) <= cyg_lim);                                              \
	})

/* The whole slot of node n (its ext and histogram too) lies in the
 * window: one compare, as CYG_IN. */
#define CYG_IN_SLOT(n) LIKELY((const char *)(n) + (CYG_NODE_SLOT - CYG_NODE_SIZE) <= cyg_lim)

/* Count a closed call of ticks dt in node n's histogram, least and
 * greatest (n's slot is in the window: CYG_IN_SLOT).  The hooks' exit and
 * the cold paths that close frames: no lock, the node is the thread's. */
static inline void cyg_lat_add(struct cyg_node *n, uint64_t dt)
{
	struct cyg_node_ext *e = CYG_NODE_EXT(n);

	CYG_NODE_LAT(n)->n[cyg_lat_idx(dt)]++;
	if (UNLIKELY(dt > e->lat_max))
		e->lat_max = dt;
	if (UNLIKELY(~dt > e->lat_nmin))
		e->lat_nmin = ~dt;
}

/* [off, off + len) lies in the window. */
static inline int cyg_span_ok(uint64_t off, uint64_t len)
{
	uint64_t win = (uint64_t)(__atomic_load_n(&cyg_end, __ATOMIC_RELAXED) - cyg_base);
	return off <= win && len <= win - off;
}

static inline uint32_t cyg_gid(const struct cyg_node *n)
{
	return (uint32_t)((uint64_t)((const char *)n - cyg_base) / CYG_NODE_SIZE);
}

/* A signal handler interrupted a hook of t (t->busy): the writer its
 * calls and allocations go to, switched in (NULL when none can be had:
 * counted in sig_lost).  *first is the level of the first switch, for
 * cyg__sig_leave. */
HIDDEN struct cyg_thread *cyg__sig_enter(struct cyg_thread *t, unsigned *first) COLD;
/* Put back what was there before the writer of level `level` took over. */
HIDDEN void cyg__sig_leave(unsigned level) COLD;

/* cold paths of the hooks (cyg-writer.c, cyg-stack.c, cyg-tree.c, cyg-ring.c) */
HIDDEN struct cyg_thread *cyg__thread_init(void) COLD;
HIDDEN void cyg__enter_rare(uint64_t fn, uint64_t site, uint64_t cfa) COLD;
HIDDEN void cyg__enter_slow(struct cyg_thread *t, uint64_t fn, uint64_t site, uint64_t now,
			    uint64_t cfa) COLD;
HIDDEN struct cyg_node *cyg__new_child(struct cyg_thread *t, struct cyg_node *p, uint64_t fn,
				       uint64_t site) COLD;
HIDDEN uint32_t cyg__unwind_dead(struct cyg_thread *t, uint64_t fn, uint64_t site, uint64_t cfa,
				 uint64_t now) COLD;
HIDDEN void cyg__exit_slow(struct cyg_thread *t, uint64_t fn, uint64_t now, uint64_t cfa) COLD;
/* An exit hook that found no current writer: a thread that shares its TLS
 * with a raw clone() child finds its writer by tid. */
HIDDEN void cyg__exit_rare(uint64_t fn, uint64_t cfa) COLD;
/* A call of node c from another site than c->site: 1 + its cyg_site index (0 if none). */
HIDDEN uint32_t cyg__other_site(struct cyg_thread *t, struct cyg_node *c, uint64_t site) COLD;
/* The end of an enter hook whose call of c (frame d, filled but for its
 * site) came from site, not c->site: the frame's site, the depth, the
 * timeline, busy released.  A tail call, so that the hooks save no
 * registers. */
HIDDEN void cyg__enter_site(struct cyg_thread *t, struct cyg_node *c, uint64_t site, uint32_t d,
			    uint64_t now) COLD;
/* Close frame f of a call from another site: add its time there too. */
HIDDEN void cyg__site_ticks(struct cyg_thread *t, const struct cyg_frame *f, uint64_t ticks) COLD;
HIDDEN void cyg__ring_slow(struct cyg_thread *t, unsigned kind, uint32_t gid, uint64_t now) COLD;
HIDDEN void cyg__close_frames(struct cyg_thread *t, uint32_t to_depth, uint64_t when) COLD;
/* Whether writer t's own record holds what the runtime follows (its stack,
 * tables, chunk, ring and links inside the window, its depth within its
 * stack): 1, or 0 after dropping it (cyg__writer_bad()).  Every cold
 * entry of the hooks checks its writer with this first. */
HIDDEN int cyg__writer_ok(struct cyg_thread *t) COLD;
/* Writer t holds what cannot be true: the thread records nothing more
 * (its TLS forgets t, no new writer is made for it), counted in
 * ctl->rt_dropped, and the process says so once on stderr.  busy stays
 * set on t, so a hook interrupted on it does nothing more there. */
HIDDEN void cyg__writer_bad(struct cyg_thread *t, const char *what) COLD;
/* The entries of writer t's call-site table: as many as its index has
 * slots, at most CYG_SITES_MAX (cyg-tree.c). */
static inline uint64_t cyg_sites_cap(const struct cyg_thread *t)
{
	uint64_t slots = (uint64_t)t->sidx_mask + 1;
	return slots < CYG_SITES_MAX ? slots : CYG_SITES_MAX;
}

/* The node of gid when its slot lies in the window, else the null node
 * (fn 0, matching no function), whose counters nobody reads. */
static inline struct cyg_node *cyg_node_at(uint32_t gid)
{
	struct cyg_node *n = CYG_NODE(cyg_base, gid);
	return CYG_IN_SLOT(n) ? n : CYG_NODE(cyg_base, CYG_GID_NULL);
}
/* Count writer t's pending call (lat_gid: the last one its exit hook
 * closed) in its node's histogram now (cold paths: the writer's end). */
static inline void cyg_lat_flush(struct cyg_thread *t)
{
	uint32_t g = t->lat_gid;

	t->lat_gid = 0;
	if (g)
		cyg_lat_add(cyg_node_at(g), t->lat_dt);
}

/* Append a multi-word record (memory events) to the thread's ring, waiting
 * for room even in drop mode: memory records are never dropped while the
 * collector lives.  For ALLOC/FREE, w[0]'s time field is filled in here
 * from `now`; a STACK record (now == 0) has none.  Caller holds t->busy. */
HIDDEN void cyg__ring_write(struct cyg_thread *t, uint64_t *w, unsigned n, uint64_t now);

/* The shadow stack and ring of writer t, from the mapping.  The hooks use
 * the copies in cyg_tls (the current writer's); cold paths use these, so
 * they also serve writers that are not current (a thread sharing its TLS
 * with a raw clone() child, a signal handler's writer being ended). */
static inline struct cyg_frame *cyg_stk(const struct cyg_thread *t)
{
	return (struct cyg_frame *)(void *)(cyg_base + t->stack_off);
}
static inline uint64_t *cyg_ringbuf(const struct cyg_thread *t)
{
	return (uint64_t *)(void *)(cyg_base + t->ring_off);
}

/* Append one event to ring, thread t's (timeline mode only; the caller
 * holds t->busy so a signal handler's hooks cannot interleave). */
NOINSTR static inline void cyg_ring_put_w(struct cyg_thread *t, uint64_t *ring, unsigned kind,
					  uint32_t gid, uint64_t now)
{
	uint64_t h = t->head;

	if (UNLIKELY(h - t->tail_seen > cyg_ring_mask - 1)) {
		cyg__ring_slow(t, kind, gid, now);
		return;
	}
	/* The low 34 bits of the time: the collector, which drains every
	 * ring far more often than they wrap, restores the rest. */
	ring[h & cyg_ring_mask] = cyg_ev_make(kind, gid, now & CYG_EV_DELTA_MAX);
	__atomic_store_n(&t->head, h + 1, __ATOMIC_RELEASE);
}

/* The same for the current writer (the hooks). */
NOINSTR static inline void cyg_ring_put(struct cyg_thread *t, unsigned kind, uint32_t gid,
					uint64_t now)
{
	cyg_ring_put_w(t, cyg_tls.ring, kind, gid, now);
}

#endif
