/* SPDX-License-Identifier: MIT */
/* cyg-hooks.c - __cyg_profile_func_enter/exit: the hot path.
 *
 * Runs inside the traced program on every call and return.  Each thread
 * writes only its own calling-context tree, shadow stack and ring, all in
 * the shared mapping: no lock, no syscall (the clock is rdtsc or the vDSO),
 * no allocation.  Anything rare goes to a cold function in cyg-thread.c.
 */
#include "cyg-private.h"

NOINSTR EXPORT void __cyg_profile_func_enter(void *fn_, void *site_)
{
	struct cyg_thread *t = cyg_tls.t;
	uint64_t fn = (uint64_t)(uintptr_t)fn_, site = (uint64_t)(uintptr_t)site_;

	if (UNLIKELY(!t)) {
		t = cyg__thread_init();
		if (!t)
			return;
	}
	if (UNLIKELY(t->busy))
		return; /* a signal handler interrupted a hook: see cyg__exit_slow */
	t->busy = 1;

	uint64_t now = cyg_now();
	uint64_t cfa = CYG_CFA();
	struct cyg_frame *stk = cyg_tls.stk;
	uint32_t d = t->depth;

	/* A live caller's frame sits strictly above this one on the stack; a
	 * frame at or below it was abandoned (longjmp) without its exit. */
	if (UNLIKELY(stk[d].cfa <= cfa))
		d = cyg__unwind_dead(t, cfa, now);
	if (UNLIKELY(d + 1 >= cyg_max_depth || t->ovf)) {
		t->ovf++;
		t->overflow++;
		t->busy = 0;
		return;
	}

	struct cyg_node *p = CYG_NODE(cyg_base, stk[d].node);
	struct cyg_node *c = CYG_NODE(cyg_base, p->hint);
	/* Call paths are keyed by function (a node keeps its first call
	 * site): keyed by site too, binary recursion would make one node per
	 * call. */
	if (UNLIKELY(c->fn != fn)) {
		uint32_t g;
		for (g = p->first_child; g; g = c->next_sibling) {
			c = CYG_NODE(cyg_base, g);
			if (c->fn == fn)
				break;
		}
		if (!g) {
			c = cyg__new_child(t, p, fn, site);
			if (UNLIKELY(!c)) { /* the mapping is full: count as overflow */
				t->ovf++;
				t->overflow++;
				t->busy = 0;
				return;
			}
		}
		p->hint = cyg_gid(c);
	}
	c->calls++;
	d++;
	stk[d].ts = now;
	stk[d].cfa = cfa;
	stk[d].node = cyg_gid(c);
	t->depth = d;
	if (cyg_timeline)
		cyg_ring_put(t, CYG_EV_ENTER, stk[d].node, now);
	t->busy = 0;
}

NOINSTR EXPORT void __cyg_profile_func_exit(void *fn_, void *site_)
{
	struct cyg_thread *t = cyg_tls.t;
	uint64_t fn = (uint64_t)(uintptr_t)fn_;

	(void)site_;
	if (UNLIKELY(!t) || UNLIKELY(t->busy))
		return;
	t->busy = 1;

	uint64_t now = cyg_now();
	struct cyg_frame *stk = cyg_tls.stk;
	uint32_t d = t->depth;
	struct cyg_node *c = CYG_NODE(cyg_base, stk[d].node);

	if (UNLIKELY(c->fn != fn || t->ovf || t->leave_ts)) {
		cyg__exit_slow(t, fn, now, CYG_CFA());
	} else {
		c->ticks += now - stk[d].ts;
		t->depth = d - 1;
		if (cyg_timeline)
			cyg_ring_put(t, CYG_EV_EXIT, stk[d].node, now);
	}
	t->busy = 0;
}
