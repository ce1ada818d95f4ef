/* SPDX-License-Identifier: MIT */
/* cyg-stack.c - the hooks' slow paths: every enter and exit the hot path
 * of cyg-hooks.c does not finish, the shadow stack's growth and repair,
 * and the frames a writer starts with.
 *
 * The hooks tail-call here for a thread's first hook, a hook inside a
 * hook (a signal handler), a call the node's hints do not name, a frame
 * past the stack's capacity, and any exit that does not match the top
 * frame.  Repair closes the frames a longjmp, an exception through code
 * without cleanups or a signal handler left without their exits (closed
 * at the time they were left, counted in `unwound`).  A writer starts
 * with frames it did not enter: a forked child's copies of its parent's,
 * or the seeds of `record --attach`.  Runs inside the traced program.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "cyg-cold.h"

/* Make room for frame d: a shadow stack twice as big (or as big as
 * needed), the live frames copied over.  Returns 0, or -1 when the mapping
 * is full or d is past the depth limit. */
static int stack_reserve(struct cyg_thread *t, uint32_t d)
{
	uint64_t cap = t->stack_cap, off;

	if (d < t->stack_cap)
		return 0;
	if (d >= cyg_max_depth)
		return -1;
	while (cap <= d)
		cap *= 2;
	if (cap > cyg_max_depth)
		cap = cyg_max_depth;
	off = cyg__area_alloc(cap * sizeof(struct cyg_frame));
	if (!off)
		return -1;
	memcpy(AT(off), cyg_stk(t), ((uint64_t)t->depth + 1) * sizeof(struct cyg_frame));
	uint64_t old = t->stack_off;
	uint32_t oldcap = t->stack_cap;
	if (cyg_tls.t == t)
		cyg_tls.stk = AT(off);
	t->stack_cap = (uint32_t)cap;
	__atomic_store_n(&t->stack_off, off, __ATOMIC_RELEASE);
	t->lim = (uint32_t)cap < cyg_max_depth ? (uint32_t)cap : cyg_max_depth;
	int saved = errno;
	cyg__stack_give(old, oldcap);
	errno = saved;
	return 0;
}

/* Close the frames above to_depth at time `when` (they were abandoned). */
void cyg__close_frames(struct cyg_thread *t, uint32_t to_depth, uint64_t when)
{
	struct cyg_frame *stk = cyg_stk(t);

	while (t->depth > to_depth) {
		struct cyg_frame *f = &stk[t->depth];
		struct cyg_node *n = cyg_node_at(f->node);
		if (!cyg_noclock && when > f->ts) {
			n->ticks += when - f->ts;
			cyg_lat_add(n, when - f->ts);
			if (f->site && f->site != CYG_SITE_HOST)
				cyg__site_ticks(t, f, when - f->ts);
		}
		t->unwound++;
		t->depth--;
		if (cyg_timeline)
			cyg_ring_put_w(t, cyg_ringbuf(t), CYG_EV_UNWIND, f->node, when);
	}
}

/* Frames abandoned before an enter of fn (called from site, at stack
 * position cfa): those below it on the stack.  A frame at the very same
 * position is the caller of a function inlined into it (same position, same
 * call site, another function) and lives; otherwise, right after a longjmp,
 * it is the dead frame of an earlier call from the same place. */
uint32_t cyg__unwind_dead(struct cyg_thread *t, uint64_t fn, uint64_t site, uint64_t cfa,
			  uint64_t now)
{
	struct cyg_frame *stk = cyg_stk(t);
	uint32_t d = t->depth;
	uint64_t when = t->leave_ts ? t->leave_ts : now;

	if (t->sw_page)
		cyg__sw_catchup(t); /* before the dead frames go */
	while (d > 0) {
		if (stk[d].cfa > cfa)
			break;
		if (stk[d].cfa == cfa) {
			const struct cyg_node *x = cyg_node_at(stk[d].node);
			if (!t->leave_ts || (x->site == site && x->fn != fn))
				break;
		}
		d--;
	}
	cyg__close_frames(t, d, when);
	t->leave_ts = 0;
	return d;
}

void cyg__exit_slow(struct cyg_thread *t, uint64_t fn, uint64_t now, uint64_t cfa)
{
	struct cyg_frame *stk;
	uint32_t d;

	if (CYG_DETACHED()) {
		t->busy = 0; /* the writer is closed (ovf diverts every hook here) */
		return;
	}
	if (UNLIKELY(cyg_stale(t))) {
		/* the first hook after an attach again: a new writer */
		t->busy = 0;
		cyg__tls_forget();
		t = cyg__thread_init();
		if (!t)
			return;
		t->busy = 1;
		now = cyg_hook_now(); /* not before its seeded frames' entry */
	}
	if (UNLIKELY(!cyg__writer_ok(t)))
		return;
	/* off-CPU intervals first, while the frames they began in are open */
	if (t->sw_page)
		cyg__sw_catchup(t);
again:
	stk = cyg_stk(t);
	if (t->ovf) {
		/* the overflowed call of a signal handler ends its writer's turn */
		if (!--t->ovf && t->level && !t->depth)
			cyg__sig_leave(t->level);
		goto out;
	}
	if (t->leave_ts) {
		/* A longjmp happened: frames strictly below the exiting
		 * function's are dead. */
		d = t->depth;
		while (d > 0 && stk[d].cfa < cfa)
			d--;
		cyg__close_frames(t, d, t->leave_ts);
		t->leave_ts = 0;
	}
	for (d = t->depth; d > 0; d--)
		if (cyg_node_at(stk[d].node)->fn == fn)
			break;
	if (!d) {
		struct cyg_thread *h = cyg_host_of(t);
		if (h && !h->busy) {
			/* A signal handler was left by a longjmp: this exit is
			 * the interrupted writer's, and the handler is over. */
			cyg__close_frames(t, 0, now);
			cyg__sig_leave(t->level);
			t->busy = 0;
			t = cyg_tls.t;
			t->busy = 1;
			goto again;
		}
		t->unpaired++;
		goto out;
	}
	/* Frames above the match were left without their exit (an exception
	 * through code without cleanups, or a longjmp we did not see). */
	cyg__close_frames(t, d, now);
	struct cyg_node *c = cyg_node_at(stk[d].node);
	if (!cyg_noclock) {
		c->ticks += now - stk[d].ts;
		cyg_lat_add(c, now - stk[d].ts);
		if (stk[d].site && stk[d].site != CYG_SITE_HOST)
			cyg__site_ticks(t, &stk[d], now - stk[d].ts);
	}
	t->depth = d - 1;
	if (cyg_timeline)
		cyg_ring_put_w(t, cyg_ringbuf(t), CYG_EV_EXIT, stk[d].node, now);
	if (stk[d].site == CYG_SITE_HOST)
		cyg__sig_leave(t->level); /* the handler's call is over */
out:
	t->busy = 0;
}

/* An exit hook with no current writer: a thread sharing its TLS with a
 * raw clone() child, or one whose first hook is an exit. */
void cyg__exit_rare(uint64_t fn, uint64_t cfa)
{
	struct cyg_thread *t;

	if (CYG_DETACHED())
		return;
	t = cyg__shared_writer(0);
	/* Attached to a running program: a thread's first hook may well be
	 * an exit (of a call made before the attach).  It registers the
	 * thread, whose seeded frames (if any) that exit pairs with. */
	if (!t && cyg_attached_late && !cyg_tls.t)
		t = cyg__thread_init();
	if (!t || t->busy)
		return;
	t->busy = 1;
	cyg__exit_slow(t, fn, cyg_hook_now(), cfa);
}

/* The rare starts of an enter: no writer yet, re-entered from a signal
 * handler, or past the depth limit. */
void cyg__enter_rare(uint64_t fn, uint64_t site, uint64_t cfa)
{
	struct cyg_thread *t = cyg_tls.t;

	if (CYG_DETACHED())
		return;
	if (t && UNLIKELY(cyg_stale(t))) {
		cyg__tls_forget();
		t = NULL;
	}
	if (!t) {
		t = cyg__thread_init();
		if (!t)
			return;
	}
	if (t->busy) {
		/* a signal handler interrupted a hook: its own writer */
		unsigned first;
		t = cyg__sig_enter(t, &first);
		if (!t)
			return;
	}
	if (t->ovf) {
		t->ovf++;
		t->overflow++;
		return;
	}
	t->busy = 1;
	cyg__enter_slow(t, fn, site, cyg_hook_now(), cfa);
}

/* The whole enter, for every case the hot path does not take (busy held). */
void cyg__enter_slow(struct cyg_thread *t, uint64_t fn, uint64_t site, uint64_t now,
		     uint64_t cfa)
{
	struct cyg_frame *stk;
	uint32_t d, g;

	if (CYG_DETACHED()) {
		t->busy = 0;
		return;
	}
	if (UNLIKELY(!cyg__writer_ok(t)))
		return;
	stk = cyg_stk(t);
	d = t->depth;
	if (stk[d].cfa < cfa || (stk[d].cfa == cfa && t->leave_ts))
		d = cyg__unwind_dead(t, fn, site, cfa, now);
	if (!d && t->level && !cyg_host_of(t)->busy) {
		/* A signal handler was left by a longjmp: this call is the
		 * interrupted writer's. */
		cyg__sig_leave(t->level);
		t->busy = 0;
		t = cyg_tls.t;
		t->busy = 1;
		cyg__enter_slow(t, fn, site, now, cfa);
		return;
	}
	if (d + 1 >= t->lim) {
		if (stack_reserve(t, d + 1) || d + 1 >= t->lim)
			goto overflow;
		stk = cyg_stk(t);
	}
	struct cyg_node *p = CYG_NODE(cyg_base, stk[d].node), *c;
	if (UNLIKELY(!CYG_IN(p))) {
		cyg__writer_bad(t, "shadow stack");
		return;
	}
	c = cyg__kid_find(t, stk[d].node, fn);
	if (!c && (!t->kids_off || t->kids_partial)) { /* the table misses some: walk */
		/* Siblings are older, so at smaller gids (cyg-shm.h): a list
		 * that goes back up was written over, and ends there. */
		uint32_t prev = UINT32_MAX;
		for (g = p->first_child; g && g < prev; prev = g, g = c->next_sibling) {
			c = CYG_NODE(cyg_base, g);
			if (!CYG_IN(c)) {
				g = 0;
				break;
			}
			if (c->fn == fn)
				break;
		}
		if (!g || g >= prev)
			c = NULL;
	}
	if (!c) {
		c = cyg__new_child(t, p, fn, site);
		if (!c)
			goto overflow; /* the mapping is full */
	}
	if (p->hint != cyg_gid(c)) {
		p->hint2 = p->hint;
		p->hint = cyg_gid(c);
	}
	c->calls++;
	d++;
	stk[d].cfa = cfa;
	stk[d].node = cyg_gid(c);
	if (UNLIKELY(t->level) && d == 1)
		stk[d].site = CYG_SITE_HOST; /* its exit ends the handler's turn */
	else
		stk[d].site = c->site == site ? 0 : cyg__other_site(t, c, site);
	/* The callee's time starts here, after the lookup: a call whose
	 * node the hints miss (a caller of many callees) would otherwise
	 * charge the child table's cost to a callee that may be a few
	 * instructions long, where no constant compensation can take it out
	 * (Lua's lua_type: 7% of main against perf's 0.6%).  Its caller,
	 * whose time runs on, pays it. */
	if (now)
		now = cyg_hook_now();
	stk[d].ts = now;
	t->depth = d;
	if (cyg_timeline)
		cyg_ring_put_w(t, cyg_ringbuf(t), CYG_EV_ENTER, stk[d].node, now);
	t->busy = 0;
	return;
overflow:
	t->ovf++;
	t->overflow++;
	t->busy = 0;
}

/* ---- frames a writer starts with ---------------------------------------- */

/* Writer t's first hook: the frames seeded for its tid go on its shadow
 * stack, as calls entered now from an unknown site.  Their stack position
 * is unknown: above every later frame (UINT64_MAX, as the root's), so no
 * later call takes them for abandoned; their exits find them by function. */
void cyg__seed_push(struct cyg_thread *t, uint64_t now)
{
	uint32_t n, k, d;
	const uint64_t *fns = cyg__seed_take(t->tid, &n);

	if (!fns)
		return;
	t->busy = 1;
	for (k = 0; k < n; k++) {
		d = t->depth;
		if (d + 1 >= t->lim && (stack_reserve(t, d + 1) || d + 1 >= t->lim))
			break;
		struct cyg_frame *stk = cyg_stk(t);
		struct cyg_node *p = CYG_NODE(cyg_base, stk[d].node);
		if (!CYG_IN(p))
			break;
		struct cyg_node *c = cyg__kid_find(t, stk[d].node, fns[k]);
		if (!c)
			c = cyg__new_child(t, p, fns[k], 0);
		if (!c)
			break;
		c->calls++;
		d++;
		stk[d].ts = now;
		stk[d].cfa = UINT64_MAX;
		stk[d].node = cyg_gid(c);
		stk[d].site = 0;
		t->depth = d;
		if (cyg_timeline)
			cyg_ring_put_w(t, cyg_ringbuf(t), CYG_EV_ENTER, stk[d].node, now);
	}
	t->busy = 0;
}

/* fork: the child's open frames (those that called fork) are copied as
 * call paths with no entries, so their exits in the child pair up and the
 * counts stay exact. */
void cyg__fork_frames(struct cyg_thread *t, const struct cyg_frame *ostk, uint32_t odepth,
		      uint32_t oovf, uint64_t fork_cfa, uint64_t now)
{
	uint32_t d;
	struct cyg_frame *stk = cyg_tls.stk;
	/* Frames at or below fork()'s caller were abandoned (a longjmp not yet
	 * noticed): the child does not inherit them. */
	uint32_t live = odepth < cyg_max_depth ? odepth : 0;
	while (fork_cfa && live > 0 && ostk[live].cfa < fork_cfa)
		live--;
	for (d = 1; d <= live && d + 1 < cyg_max_depth; d++) {
		if (stack_reserve(t, d))
			break;
		stk = cyg_tls.stk;
		struct cyg_node *on = cyg_node_at(ostk[d].node);
		struct cyg_node *p = cyg_node_at(stk[d - 1].node);
		struct cyg_node *c = cyg__new_child(t, p, on->fn, on->site);
		if (!c)
			break;
		stk[d].ts = now;
		stk[d].cfa = ostk[d].cfa;
		stk[d].node = cyg_gid(c);
		stk[d].site = 0;
		t->depth = d;
	}
	t->ovf = live == odepth ? oovf : 0;
}
