/* SPDX-License-Identifier: MIT */
/* cyg-calib.c - the hooks' own cost, measured once per process image at
 * attach, in the traced process (its CPU, its frequency, its caches), so
 * that the readers can take it out of the times (overhead compensation,
 * analysis/profile.c profile_compensate()).
 *
 * A call's enter and exit hooks cost time in two places: o_in falls inside
 * the callee's own interval (after the enter's clock read, before the
 * exit's), o_out in its caller's (before the enter's clock read, after the
 * exit's); o_full = o_in + o_out is what one call costs its callers.  Both
 * are measured by running the real exported hooks on two functions of
 * this file, calib_inner called CALIB_CALLS times from calib_outer:
 *
 *   o_in   = inner node's ticks / CALIB_CALLS
 *   o_full = (outer node's ticks - the same loop calling an empty
 *             function, clocked around) / CALIB_CALLS
 *
 * after a warm-up round, the median of CALIB_ROUNDS rounds of each.  The
 * calls go to a scratch writer that is not on the thread list, switched
 * into the TLS for the time of the measure with every signal blocked: the
 * collector never sees its nodes and the thread's own tree is untouched.
 * Nothing here runs on the hooks' fast path; the scratch writer takes some
 * 17 KiB of the mapping (its nodes' first chunk, its stack, with a
 * timeline a ring of CALIB_CALLS * 2 + 16 words) once per process image.
 * Runs inside the traced program, on the attach's cold path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cyg-cold.h"

#define CALIB_CALLS 2000  /* enter/exit pairs per round */
#define CALIB_WARM 200    /* pairs of the warm-up round */
#define CALIB_ROUNDS 5    /* rounds: the median of each figure is kept */
#define CALIB_STACK 8     /* frames of the scratch writer's stack */

void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);

/* An instrumented function with an empty body, as the compiler makes it.
 * The empty asm after the exit keeps the call from becoming a tail jump
 * (which would leave the frame first). */
NOINSTR static __attribute__((noinline)) void calib_inner(void)
{
	__cyg_profile_func_enter((void *)calib_inner, __builtin_return_address(0));
	__asm__ volatile("" ::: "memory");
	__cyg_profile_func_exit((void *)calib_inner, __builtin_return_address(0));
	__asm__ volatile("" ::: "memory");
}

/* The same function uninstrumented: the loop's and the call's own cost. */
NOINSTR static __attribute__((noinline)) void calib_empty(void)
{
	__asm__ volatile("" ::: "memory");
}

NOINSTR static __attribute__((noinline)) void calib_outer(unsigned k)
{
	__cyg_profile_func_enter((void *)calib_outer, __builtin_return_address(0));
	for (unsigned i = 0; i < k; i++)
		calib_inner();
	__cyg_profile_func_exit((void *)calib_outer, __builtin_return_address(0));
	__asm__ volatile("" ::: "memory");
}

/* Every call of calib_outer from one call site, as in a program's loop
 * (another site would make the node keep a table of its sites). */
NOINSTR static __attribute__((noinline)) void calib_round(unsigned k)
{
	calib_outer(k);
	__asm__ volatile("" ::: "memory");
}

NOINSTR static __attribute__((noinline)) uint64_t calib_base(unsigned k)
{
	uint64_t t0 = cyg_now();
	for (unsigned i = 0; i < k; i++)
		calib_empty();
	return cyg_now() - t0;
}

/* A writer for the measure only: not on the thread list, so the collector
 * never reads it. */
static struct cyg_thread *scratch_writer(unsigned ring_words)
{
	uint64_t off = cyg__area_alloc(sizeof(struct cyg_thread));
	uint64_t stack = cyg__area_alloc(CALIB_STACK * sizeof(struct cyg_frame));
	uint64_t ring = ring_words ? cyg__area_alloc((uint64_t)ring_words * 8) : 0;

	if (!off || !stack || (ring_words && !ring))
		return NULL;
	return cyg__writer_init(off, stack, CALIB_STACK, CALIB_STACK, ring, cyg_proc_off, 0);
}

static void sort_u64(uint64_t *v, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
			uint64_t x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
}

void cyg__calibrate(void)
{
	struct cyg_tls_save saved = {cyg_tls.t, cyg_tls.stk, cyg_tls.ring, cyg_tls.swh};
	uint64_t in[CALIB_ROUNDS], full[CALIB_ROUNDS];
	unsigned k = CALIB_CALLS, ring_words = 0, r;
	struct cyg_thread *t;
	struct cyg_proc *p;
	sigset_t all, old;
	int err = errno;

	if (cyg_noclock || !cyg_proc_off || cyg_state <= 0)
		return; /* --time=sampled: no clock, nothing to take out */
	p = AT(cyg_proc_off);
	if (cyg_timeline) {
		/* Enough ring for a round without wrapping (the ring is never
		 * drained: its head goes back to 0 before each round). */
		ring_words = CALIB_CALLS * 2 + 16;
		if (ring_words > cyg_ctl->ring_words)
			ring_words = (unsigned)cyg_ctl->ring_words;
		if (ring_words < 24)
			return;
		k = (ring_words - 8) / 2;
	}
	t = scratch_writer(ring_words);
	if (!t) {
		errno = err;
		return;
	}
	/* every signal blocked, the CPU samples' too: the runtime's own
	 * call, not its wrapper, which never blocks that one */
	sigfillset(&all);
	cyg__real_sigmask(SIG_SETMASK, &all, &old);
	cyg_tls.swh = &cyg_sw_zero; /* the scratch writer has no switch records */
	cyg__tls_use(t);

	struct cyg_node *root = CYG_NODE(cyg_base, t->root), *outer = root, *inner = root;
	calib_round(k < CALIB_WARM ? k : CALIB_WARM); /* makes the nodes, warms up */
	int ok = root->first_child && t->depth == 0 && !t->ovf;
	if (ok) {
		outer = CYG_NODE(cyg_base, root->first_child);
		ok = outer->first_child != 0;
	}
	if (ok)
		inner = CYG_NODE(cyg_base, outer->first_child);
	for (r = 0; ok && r < CALIB_ROUNDS; r++) {
		t->head = t->tail_seen = 0;
		outer->ticks = inner->ticks = 0;
		outer->calls = inner->calls = 0;
		calib_round(k);
		uint64_t base = calib_base(k);
		ok = outer->calls == 1 && inner->calls == k && t->depth == 0;
		in[r] = inner->ticks;
		full[r] = outer->ticks > base + in[r] / k ? outer->ticks - base - in[r] / k : 0;
	}

	/* back to what the thread had, t last (as cyg__tls_use) */
	cyg_tls.stk = saved.stk;
	cyg_tls.ring = saved.ring;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cyg_tls.t = saved.t;
	cyg_tls.swh = saved.swh ? saved.swh : &cyg_sw_zero;
	cyg__real_sigmask(SIG_SETMASK, &old, NULL);
	if (ok) {
		sort_u64(in, CALIB_ROUNDS);
		sort_u64(full, CALIB_ROUNDS);
		p->calib_in = in[CALIB_ROUNDS / 2];
		p->calib_full = full[CALIB_ROUNDS / 2] > p->calib_in ? full[CALIB_ROUNDS / 2]
								     : p->calib_in;
		p->calib_rounds = CALIB_ROUNDS;
		__atomic_store_n(&p->calib_calls, k, __ATOMIC_RELEASE);
	}
	errno = err;
}
