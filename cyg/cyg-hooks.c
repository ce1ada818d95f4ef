/* SPDX-License-Identifier: MIT */
/* cyg-hooks.c - __cyg_profile_func_enter/exit: the hot path.
 *
 * Runs inside the traced program on every call and return.  Each thread
 * writes only its own calling-context tree, shadow stack and ring, all in
 * the shared mapping: no lock, no syscall (the clock is rdtsc or the vDSO),
 * no allocation.  Anything rare is a tail call into the cold part
 * (cyg-stack.c, cyg-tree.c, cyg-ring.c: cyg-cold.h lists its files), so
 * the common path needs almost no registers saved.
 *
 * Each hook has two bodies, made from one always-inlined template with a
 * constant `clocked`: the exact-time one, and the one of CYG_F_NOCLOCK
 * (record --time=sampled) that reads no clock, stores no entry time and
 * adds no ticks.  The exported hook tests cyg_noclock (set once at attach,
 * so the branch always goes the same way): the no-clock body is inlined
 * into it, the exact-time one is a tail call (a jump more, next to an
 * rdtsc that costs ten times as much).
 *
 * What each part of the common path costs, and why it is there (issue 19
 * measured them on bench/programs/fib.c, the cheapest calls there are):
 *  - A call from a node's second call site (fib calls fib from two places,
 *    so half of its calls) used to end in the cold path's hash table on
 *    enter and in cyg__exit_slow() on exit: 2.5x the run time of the
 *    empty hooks for time=sampled on fib.  The node now remembers that
 *    site and its cyg_site entry (site2, site2_ix, written by the cold
 *    path), the enter counts the call there itself, and the exit adds the
 *    entry's ticks itself (exact mode) or has nothing to do for it
 *    (sampled).
 *  - depth and busy are always loaded and stored together, as one
 *    8-byte word at the same address (db_load, db_store): an 8-byte load
 *    of {busy, ovf} just after a 4-byte store of busy could not take its
 *    value from the store buffer and waited for the store (a third of the
 *    enter hook's samples).  The enter takes busy and finally releases it
 *    with the new depth in one store each; the depth it stores is
 *    reloaded from that word rather than kept in a register.
 *  - The no-clock exit does not take busy: its only write is the store of
 *    the new depth, one instruction.  A signal handler that interrupts it
 *    between the load of depth and that store runs its (balanced) calls
 *    above the exiting frame and leaves depth as it found it; one that
 *    does not come back (longjmp) leaves a frame that the next hook
 *    repairs as it would anywhere else in the function.  The exact-time
 *    exit still takes busy: it adds to the node's and the site's ticks
 *    and writes the ring.
 *  - The frame's node and site, and a node's two hints when they swap,
 *    are written with one 8-byte store each.
 *  - The no-clock enter takes the CFA (8(%rsp) of the exported hook)
 *    where it uses it instead of keeping it in a register: with the
 *    above, its common path saves one register instead of three.
 * Together: time=sampled on fib went from 2.4x to about 1.25x the run time
 * with glibc's empty hooks (bench.py's fib section).
 *  - The exit (exact times) compares the data_head of the thread's
 *    switch records with what it read (cyg-switch.c): a TLS load, a load
 *    of the page and one of the hot line; new records take the slow path,
 *    which reads them before the frame goes.
 * What is left is the floor of a shadow stack: the thread's record and
 * stack from TLS (initial-exec: one GOT load and %fs-relative loads), the
 * dead-frame check on the caller's frame (one compare of the CFA), the
 * hint of the parent node, the count, the frame, the depth; on exit the
 * check that the top frame is the function's.
 */
#include <string.h>

#include "cyg-private.h"

#define ALWAYS_INLINE __attribute__((always_inline)) inline

_Static_assert(__builtin_offsetof(struct cyg_thread, depth) == 0 &&
		       __builtin_offsetof(struct cyg_thread, busy) == 4,
	       "depth and busy are read and written as one 8-byte word");
_Static_assert(__builtin_offsetof(struct cyg_node, hint2) ==
		       __builtin_offsetof(struct cyg_node, hint) + 4,
	       "a node's hints are written as one 8-byte word");
_Static_assert(__builtin_offsetof(struct cyg_frame, site) ==
		       __builtin_offsetof(struct cyg_frame, node) + 4,
	       "a frame's node and site are written as one 8-byte word");

/* {depth, busy} as one 8-byte word: depth in the low half, busy in the
 * high half (on a big-endian machine the word is only ever compared with
 * itself and made by db_make, so the halves are swapped consistently).
 * Every hot load and store of depth and busy goes through these, always
 * 8 bytes at the same address: a load that overlaps an earlier store of
 * another size or offset cannot take its value from the store buffer and
 * waits for the store to complete (a 4-byte store of busy followed by an
 * 8-byte load of {busy, ovf} cost fib's sampled run a third of its hook
 * time). */
struct db_pair {
	uint32_t depth, busy;
};

NOINSTR static ALWAYS_INLINE uint64_t db_load(const struct cyg_thread *t)
{
	uint64_t w;
	memcpy(&w, &t->depth, sizeof w);
	return w;
}

NOINSTR static ALWAYS_INLINE uint64_t db_make(uint32_t depth, uint32_t busy)
{
	struct db_pair x = {depth, busy};
	uint64_t w;
	memcpy(&w, &x, sizeof w);
	return w;
}

NOINSTR static ALWAYS_INLINE uint32_t db_depth(uint64_t w)
{
	struct db_pair x;
	memcpy(&x, &w, sizeof x);
	return x.depth;
}

NOINSTR static ALWAYS_INLINE int db_busy(uint64_t w)
{
	struct db_pair x;
	memcpy(&x, &w, sizeof x);
	return x.busy != 0;
}

NOINSTR static ALWAYS_INLINE void db_store(struct cyg_thread *t, uint32_t depth, uint32_t busy)
{
	uint64_t w = db_make(depth, busy);
	memcpy(&t->depth, &w, sizeof w);
}

/* Entry s (1-based, as a frame's site) of the writer's call-site table,
 * or NULL when the program wrote the table's offset or the frame's site
 * out of the window (the offset is checked as such: the sum cannot wrap
 * to a pointer below cyg_base). */
NOINSTR static ALWAYS_INLINE struct cyg_site *site_entry(const struct cyg_thread *t, uint32_t s)
{
	uint64_t o = t->sites_off + (uint64_t)(s - 1) * sizeof(struct cyg_site);
	if (UNLIKELY(o > (uint64_t)(__atomic_load_n(&cyg_end, __ATOMIC_RELAXED) - cyg_base) -
			     sizeof(struct cyg_site)))
		return NULL;
	return (struct cyg_site *)(void *)(cyg_base + o);
}

/* a node's hint and hint2 in one store */
NOINSTR static ALWAYS_INLINE void set_hints(struct cyg_node *p, uint32_t hint, uint32_t hint2)
{
	struct {
		uint32_t hint, hint2;
	} x = {hint, hint2};
	memcpy(&p->hint, &x, sizeof x);
}

/* node and site of frame f in one store */
NOINSTR static ALWAYS_INLINE void set_node_site(struct cyg_frame *f, uint32_t node, uint32_t site)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t w = (uint64_t)site << 32 | node;
	memcpy(&f->node, &w, sizeof w);
#else
	f->node = node;
	f->site = site;
#endif
}

NOINSTR static ALWAYS_INLINE void enter_body(uint64_t fn, uint64_t site, uint64_t cfa0,
					     const int clocked)
{
	struct cyg_thread *t = cyg_tls.t;
	/* the no-clock body is inlined into the exported hook: its CFA is
	 * taken where it is used, a register less to keep */
#define CFA_NOW (clocked ? cfa0 : CYG_CFA())

	/* No writer yet, inside a hook already (a signal handler), or past
	 * the depth limit. */
	if (UNLIKELY(!t)) {
		cyg__enter_rare(fn, site, CFA_NOW);
		return;
	}
	uint64_t db = db_load(t);
	if (UNLIKELY(db_busy(db)) || UNLIKELY(t->ovf)) {
		cyg__enter_rare(fn, site, CFA_NOW);
		return;
	}
	uint32_t d = db_depth(db);
	db_store(t, d, 1);

	uint64_t now = clocked ? cyg_now() : 0;
	struct cyg_frame *f = cyg_tls.stk + d; /* the caller's frame; ours is f + 1 */

	/* The depth, the frame's node and the hints are the mapping's: each
	 * pointer made from them is checked against the window's end (one
	 * compare each) before it is followed, and the slow path checks the
	 * whole writer (cyg__writer_ok()). */
	if (UNLIKELY(!CYG_IN(f + 1))) {
		cyg__enter_slow(t, fn, site, now, CFA_NOW);
		return;
	}
	/* A live caller's frame sits strictly above this one on the stack; a
	 * frame below it was abandoned (longjmp) without its exit.  At the same
	 * position is a function inlined into its caller, unless a longjmp
	 * just happened (cyg__unwind_dead tells them apart). */
	if (UNLIKELY(f->cfa <= CFA_NOW) || UNLIKELY(d + 1 >= t->lim)) {
		if (f->cfa < CFA_NOW || t->leave_ts || d + 1 >= t->lim) {
			cyg__enter_slow(t, fn, site, now, CFA_NOW);
			return;
		}
	}
	/* Call paths are keyed by function (a node keeps its first call site):
	 * keyed by site too, binary recursion would make a node per call. */
	struct cyg_node *p = CYG_NODE(cyg_base, f->node);
	if (UNLIKELY(!CYG_IN(p))) {
		cyg__enter_slow(t, fn, site, now, CFA_NOW);
		return;
	}
	uint32_t g = p->hint;
	struct cyg_node *c = CYG_NODE(cyg_base, g);
	if (UNLIKELY(!CYG_IN(c)) || UNLIKELY(c->fn != fn)) {
		/* Two callees taking turns: the one before is the other hint. */
		g = p->hint2;
		c = CYG_NODE(cyg_base, g);
		if (UNLIKELY(!CYG_IN(c)) || UNLIKELY(c->fn != fn)) {
			cyg__enter_slow(t, fn, site, now, CFA_NOW);
			return;
		}
		set_hints(p, g, p->hint);
	}
	c->calls++;
	f++;
	if (clocked)
		f->ts = now;
	f->cfa = CFA_NOW;
	uint32_t s = 0;
	if (c->site != site) {
		if (UNLIKELY(c->site2 != site)) {
			/* a third site, or the second one's first call: its
			 * entry found (or made) out of line, so that the hook
			 * calls nothing but tail calls */
			f->node = g;
			cyg__enter_site(t, c, site, d + 1, now);
			return;
		}
		/* the node's second site: its entry's count */
		s = c->site2_ix;
		struct cyg_site *e = site_entry(t, s);
		if (UNLIKELY(!e)) {
			f->node = g;
			cyg__enter_site(t, c, site, d + 1, now);
			return;
		}
		e->calls++;
	}
	set_node_site(f, g, s);
	d = db_depth(db_load(t)) + 1; /* reloaded: a register less to keep */
	if (clocked && cyg_timeline) {
		db_store(t, d, 1);
		cyg_ring_put(t, CYG_EV_ENTER, g, now);
	}
	db_store(t, d, 0);
}
#undef CFA_NOW

NOINSTR static ALWAYS_INLINE void exit_body(uint64_t fn, uint64_t cfa, const int clocked)
{
	struct cyg_thread *t = cyg_tls.t;

	if (UNLIKELY(!t)) { /* none yet, or a TLS shared with a clone() child */
		cyg__exit_rare(fn, cfa);
		return;
	}
	uint64_t db = db_load(t);
	if (UNLIKELY(db_busy(db)))
		return;
	uint32_t d = db_depth(db);
	/* The no-clock exit writes only the depth, in one store: no busy
	 * (the top comment says why that is safe). */
	if (clocked)
		db_store(t, d, 1);

	uint64_t now = clocked ? cyg_now() : 0;
	struct cyg_frame *f = cyg_tls.stk + d;
	if (UNLIKELY(!CYG_IN(f))) { /* a depth out of the window: checked there */
		if (!clocked)
			db_store(t, d, 1);
		cyg__exit_slow(t, fn, now, cfa);
		return;
	}
	struct cyg_node *c = CYG_NODE(cyg_base, f->node);
	uint32_t s = f->site;

	/* not the top frame's function, frames past max_depth or left by a
	 * longjmp, the end of a signal handler's call, or (exact times) new
	 * switch records to read before the frame goes: one load of the
	 * page's data_head through cyg_tls.swh (a constant 0 when there are
	 * none to read) against sw_seen, on the line of depth */
	if (UNLIKELY(!CYG_IN_SLOT(c) || c->fn != fn || t->ovf || t->leave_ts || s == CYG_SITE_HOST) ||
	    (clocked && UNLIKELY(__atomic_load_n(cyg_tls.swh, __ATOMIC_RELAXED) != t->sw_seen))) {
		if (!clocked)
			db_store(t, d, 1);
		cyg__exit_slow(t, fn, now, cfa);
		return;
	}
	if (clocked) {
		uint64_t dt = now - f->ts;
		c->ticks += dt;
		/* the call closed before into its histogram (its operands long
		 * ready), this one for the next exit (lat_gid's comment) */
		uint32_t pg = t->lat_gid;
		uint64_t pdt = t->lat_dt;
		t->lat_gid = f->node;
		t->lat_dt = dt;
		if (LIKELY(pg)) {
			struct cyg_node *pn = CYG_NODE(cyg_base, pg);
			if (LIKELY(CYG_IN_SLOT(pn)))
				cyg_lat_add(pn, pdt);
		}
		if (s) { /* from the node's second (or a later) call site */
			struct cyg_site *e = site_entry(t, s);
			if (LIKELY(e))
				e->ticks += dt;
		}
		if (cyg_timeline) {
			db_store(t, d - 1, 1);
			cyg_ring_put(t, CYG_EV_EXIT, f->node, now);
		}
	}
	db_store(t, d - 1, 0);
}

/* The exact-time bodies out of line, reached by a tail call from the
 * hooks: they call nothing but tail calls, so they save registers only on
 * their CLOCK_MONOTONIC path. */
NOINSTR static __attribute__((noinline)) void enter_clock(uint64_t fn, uint64_t site,
							 uint64_t cfa)
{
	enter_body(fn, site, cfa, 1);
}

NOINSTR static __attribute__((noinline)) void exit_clock(uint64_t fn, uint64_t cfa)
{
	exit_body(fn, cfa, 1);
}

/* The stack position is taken here, in the function the compiler's call
 * went to, and passed on.  The no-clock body is inlined here: a jump less
 * for the mode whose whole cost is a few loads and stores. */
NOINSTR EXPORT void __cyg_profile_func_enter(void *fn, void *site)
{
	if (!cyg_noclock) {
		enter_clock((uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)site, CYG_CFA());
		return;
	}
	enter_body((uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)site, CYG_CFA(), 0);
}

NOINSTR EXPORT void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	if (!cyg_noclock) {
		exit_clock((uint64_t)(uintptr_t)fn, CYG_CFA());
		return;
	}
	exit_body((uint64_t)(uintptr_t)fn, CYG_CFA(), 0);
}

/* The same two hooks under names only this object has: a call of the
 * exported names from inside the runtime goes through its PLT, which in a
 * runtime that record --attach loaded with dlopen binds to the first
 * definition in the global scope, libc's empty hooks (the calibration
 * measured those, found no nodes, and an attach capture had none). */
void cyg__hook_enter(void *fn, void *site) __attribute__((alias("__cyg_profile_func_enter")));
void cyg__hook_exit(void *fn, void *site) __attribute__((alias("__cyg_profile_func_exit")));
