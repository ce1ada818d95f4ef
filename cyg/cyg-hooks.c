/* SPDX-License-Identifier: MIT */
/* cyg-hooks.c - __cyg_profile_func_enter/exit: the hot path.
 *
 * Runs inside the traced program on every call and return.  Each thread
 * writes only its own calling-context tree, shadow stack and ring, all in
 * the shared mapping: no lock, no syscall (the clock is rdtsc or the vDSO),
 * no allocation.  Anything rare is a tail call into cyg-thread.c, so the
 * common path needs almost no registers saved.
 *
 * Each hook has two bodies, made from one always-inlined template with a
 * constant `clocked`: the exact-time one, and the one of CYG_F_NOCLOCK
 * (record --time=sampled) that reads no clock, stores no entry time and
 * adds no ticks.  The hook picks one on cyg_noclock, set once at attach: a
 * branch that is always taken the same way costs next to nothing, where
 * a call through a function pointer would cost a mispredicted-free but
 * unavoidable indirect call on every event.
 */
#include "cyg-private.h"

#define ALWAYS_INLINE __attribute__((always_inline)) inline

NOINSTR static ALWAYS_INLINE void enter_body(uint64_t fn, uint64_t site, const int clocked)
{
	struct cyg_thread *t = cyg_tls.t;

	/* No writer yet, inside a hook already (a signal handler), or past
	 * the depth limit. */
	if (UNLIKELY(!t || t->busy || t->ovf)) {
		cyg__enter_rare(fn, site, CYG_CFA());
		return;
	}
	t->busy = 1;

	uint64_t now = clocked ? cyg_now() : 0;
	uint64_t cfa = CYG_CFA();
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
	stk[d].site = LIKELY(c->site == site) ? 0 : cyg__other_site(t, c, site);
	t->depth = d;
	if (clocked && cyg_timeline)
		cyg_ring_put(t, CYG_EV_ENTER, stk[d].node, now);
	t->busy = 0;
}

NOINSTR static ALWAYS_INLINE void exit_body(uint64_t fn, const int clocked)
{
	struct cyg_thread *t = cyg_tls.t;

	if (UNLIKELY(!t || t->busy)) {
		if (!t) /* none yet, or a TLS shared with a clone() child */
			cyg__exit_rare(fn, CYG_CFA());
		return;
	}
	t->busy = 1;

	uint64_t now = clocked ? cyg_now() : 0;
	struct cyg_frame *stk = cyg_tls.stk;
	uint32_t d = t->depth;
	struct cyg_node *c = CYG_NODE(cyg_base, stk[d].node);

	if (UNLIKELY(c->fn != fn || t->ovf || t->leave_ts || stk[d].site)) {
		cyg__exit_slow(t, fn, now, CYG_CFA());
		return;
	}
	if (clocked)
		c->ticks += now - stk[d].ts;
	t->depth = d - 1;
	if (clocked && cyg_timeline)
		cyg_ring_put(t, CYG_EV_EXIT, stk[d].node, now);
	t->busy = 0;
}

NOINSTR EXPORT void __cyg_profile_func_enter(void *fn, void *site)
{
	if (UNLIKELY(cyg_noclock))
		enter_body((uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)site, 0);
	else
		enter_body((uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)site, 1);
}

NOINSTR EXPORT void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	if (UNLIKELY(cyg_noclock))
		exit_body((uint64_t)(uintptr_t)fn, 0);
	else
		exit_body((uint64_t)(uintptr_t)fn, 1);
}
