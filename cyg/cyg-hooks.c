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
 * adds no ticks.  The exported hook only tests cyg_noclock (set once at
 * attach, so the branch always goes the same way) and tail-calls its
 * mode's body.  A function pointer instead (an indirect tail jump) measured
 * the same on calls.c; the branch needs no writable pointer.
 */
#include "cyg-private.h"

#define ALWAYS_INLINE __attribute__((always_inline)) inline

NOINSTR static ALWAYS_INLINE void enter_body(uint64_t fn, uint64_t site, uint64_t cfa,
					     const int clocked)
{
	struct cyg_thread *t = cyg_tls.t;

	/* No writer yet, inside a hook already (a signal handler), or past
	 * the depth limit. */
	if (UNLIKELY(!t || t->busy || t->ovf)) {
		cyg__enter_rare(fn, site, cfa);
		return;
	}
	t->busy = 1;

	uint64_t now = clocked ? cyg_now() : 0;
	struct cyg_frame *stk = cyg_tls.stk;
	uint32_t d = t->depth;

	/* A live caller's frame sits strictly above this one on the stack; a
	 * frame below it was abandoned (longjmp) without its exit.  At the same
	 * position is a function inlined into its caller, unless a longjmp
	 * just happened (cyg__unwind_dead tells them apart). */
	if (UNLIKELY(stk[d].cfa < cfa) || UNLIKELY(stk[d].cfa == cfa && t->leave_ts) ||
	    UNLIKELY(d + 1 >= t->lim)) {
		cyg__enter_slow(t, fn, site, now, cfa);
		return;
	}
	/* Call paths are keyed by function (a node keeps its first call site):
	 * keyed by site too, binary recursion would make a node per call. */
	struct cyg_node *p = CYG_NODE(cyg_base, stk[d].node);
	uint32_t g = p->hint;
	struct cyg_node *c = CYG_NODE(cyg_base, g);
	if (UNLIKELY(c->fn != fn)) {
		/* Two callees taking turns: the one before is the other hint. */
		g = p->hint2;
		c = CYG_NODE(cyg_base, g);
		if (UNLIKELY(c->fn != fn)) {
			cyg__enter_slow(t, fn, site, now, cfa);
			return;
		}
		p->hint2 = p->hint;
		p->hint = g;
	}
	c->calls++;
	d++;
	if (clocked)
		stk[d].ts = now;
	stk[d].cfa = cfa;
	stk[d].node = g;
	if (UNLIKELY(c->site != site)) {
		/* called from another site than the node's first: finished
		 * out of line, so that the hook calls nothing but tail calls */
		cyg__enter_site(t, c, site, d, now);
		return;
	}
	stk[d].site = 0;
	t->depth = d;
	if (clocked && cyg_timeline)
		cyg_ring_put(t, CYG_EV_ENTER, stk[d].node, now);
	t->busy = 0;
}

NOINSTR static ALWAYS_INLINE void exit_body(uint64_t fn, uint64_t cfa, const int clocked)
{
	struct cyg_thread *t = cyg_tls.t;

	if (UNLIKELY(!t || t->busy)) {
		if (!t) /* none yet, or a TLS shared with a clone() child */
			cyg__exit_rare(fn, cfa);
		return;
	}
	t->busy = 1;

	uint64_t now = clocked ? cyg_now() : 0;
	struct cyg_frame *stk = cyg_tls.stk;
	uint32_t d = t->depth;
	struct cyg_node *c = CYG_NODE(cyg_base, stk[d].node);

	if (UNLIKELY(c->fn != fn || t->ovf || t->leave_ts || stk[d].site)) {
		cyg__exit_slow(t, fn, now, cfa);
		return;
	}
	if (clocked)
		c->ticks += now - stk[d].ts;
	t->depth = d - 1;
	if (clocked && cyg_timeline)
		cyg_ring_put(t, CYG_EV_EXIT, stk[d].node, now);
	t->busy = 0;
}

/* Each body out of line, reached by a tail call from its hook, which
 * itself saves no register: the bodies call nothing but tail calls, so
 * they save none either (the enter of the exact mode pushes some only on
 * its CLOCK_MONOTONIC path). */
NOINSTR static __attribute__((noinline)) void enter_clock(uint64_t fn, uint64_t site,
							 uint64_t cfa)
{
	enter_body(fn, site, cfa, 1);
}

NOINSTR static __attribute__((noinline)) void exit_clock(uint64_t fn, uint64_t cfa)
{
	exit_body(fn, cfa, 1);
}

NOINSTR static __attribute__((noinline)) void enter_noclock(uint64_t fn, uint64_t site,
							   uint64_t cfa)
{
	enter_body(fn, site, cfa, 0);
}

NOINSTR static __attribute__((noinline)) void exit_noclock(uint64_t fn, uint64_t cfa)
{
	exit_body(fn, cfa, 0);
}

/* The stack position is taken here, in the function the compiler's call
 * went to, and passed on. */
NOINSTR EXPORT void __cyg_profile_func_enter(void *fn, void *site)
{
	if (cyg_noclock)
		enter_noclock((uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)site, CYG_CFA());
	else
		enter_clock((uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)site, CYG_CFA());
}

NOINSTR EXPORT void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	if (cyg_noclock)
		exit_noclock((uint64_t)(uintptr_t)fn, CYG_CFA());
	else
		exit_clock((uint64_t)(uintptr_t)fn, CYG_CFA());
}
