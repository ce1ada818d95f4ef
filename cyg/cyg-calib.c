/* SPDX-License-Identifier: MIT */
/* cyg-calib.c - the hooks' own cost, measured once per process image at
 * attach, in the traced process (its CPU, its frequency, its caches), with
 * the hooks the recording runs, so that the readers can take it out of the
 * times (overhead compensation, analysis/profile.c profile_compensate()).
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
 * after a warm-up round, over CALIB_ROUNDS rounds.  A round that a
 * preemption, an interrupt or a migration disturbed stands out from the
 * others: the rounds more than 3 robust standard deviations from the
 * median are dropped (cyg-calib-stats.h), the rest give the mean and the
 * spread (standard deviation) of o_in and o_out.  An attempt that keeps
 * fewer than CALIB_MIN_KEPT rounds was disturbed throughout: it is made
 * again, up to CALIB_TRIES times, and the best attempt is stored (better():
 * one that kept enough rounds, then the fastest, as a disturbance only
 * ever adds time).
 *
 * With a timeline the hooks also write every enter and exit into the
 * thread's ring, and what that costs depends on where the ring's lines
 * are: a real ring (4 MiB by default) is far larger than L1 and L2, so in
 * a run each line written was last touched a whole ring ago and has left
 * the core's caches.  The calibration writes a ring of the run's size
 * (ctl->ring_words), round after round without going back, each attempt's
 * span faulted in first and flushed from the caches (ring_prepare()), so
 * that its stores miss as in a run.  That ring is then handed to the
 * first writer this process image makes (cyg__spare_ring()), its first
 * pages faulted in already: the calibration costs the mapping nothing.
 * (Measured on bench/programs/calls.c, a ring's stores cost the hooks
 * little even when they miss: the store buffer hides them.  What the
 * calibration cannot see is the collector draining the ring on another
 * core while the program runs, a few ns a call more: README.md.)
 *
 * The calls go to a scratch writer that is not on the thread list,
 * switched into the TLS for the time of the measure with every signal
 * blocked: the collector never sees its nodes and the thread's own tree is
 * untouched.  Nothing here runs on the hooks' fast path; the scratch
 * writer takes some 17 KiB of the mapping (its nodes' first chunk, its
 * stack) once per process image.  The rounds take about 0.5 ms (11 rounds
 * of 2000 calls), with a timeline the span of the ring they write (384
 * KiB: its page faults and flushes) some 0.3 ms more.  Runs inside the
 * traced program, on the attach's cold path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cyg-calib-stats.h"
#include "cyg-cold.h"

#define CALIB_CALLS 2000  /* enter/exit pairs per round */
#define CALIB_WARM 200    /* pairs of the warm-up round */
#define CALIB_ROUNDS 11   /* rounds per attempt */
#define CALIB_MIN_KEPT 8  /* an attempt keeping fewer rounds was disturbed */
#define CALIB_TRIES 3     /* attempts at most */
#define CALIB_STACK 8     /* frames of the scratch writer's stack */

_Static_assert(CALIB_ROUNDS <= CALIB_MAX_ROUNDS, "cyg-calib-stats.h takes CALIB_MAX_ROUNDS");

/* The runtime's own hooks (never another object's of the same name: a
 * runtime loaded by record --attach), called through a pointer loaded at
 * each call, as a program's calls go through its GOT. */
static void (*volatile calib_enter)(void *, void *) = cyg__hook_enter;
static void (*volatile calib_exit)(void *, void *) = cyg__hook_exit;

/* The timeline ring of the calibration, for the first writer of this
 * process image: its offset, and the pid it belongs to (a fork child, or
 * a raw clone() one, must not write its parent's ring). */
static uint64_t spare_ring;
static pid_t spare_pid;

/* An instrumented function with an empty body, as the compiler makes it.
 * The empty asm after the exit keeps the call from becoming a tail jump
 * (which would leave the frame first). */
NOINSTR static __attribute__((noinline)) void calib_inner(void)
{
	calib_enter((void *)calib_inner, __builtin_return_address(0));
	__asm__ volatile("" ::: "memory");
	calib_exit((void *)calib_inner, __builtin_return_address(0));
	__asm__ volatile("" ::: "memory");
}

/* The same function uninstrumented: the loop's and the call's own cost. */
NOINSTR static __attribute__((noinline)) void calib_empty(void)
{
	__asm__ volatile("" ::: "memory");
}

NOINSTR static __attribute__((noinline)) void calib_outer(unsigned k)
{
	calib_enter((void *)calib_outer, __builtin_return_address(0));
	for (unsigned i = 0; i < k; i++)
		calib_inner();
	calib_exit((void *)calib_outer, __builtin_return_address(0));
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
static struct cyg_thread *scratch_writer(uint64_t ring)
{
	uint64_t off = cyg__area_alloc(sizeof(struct cyg_thread));
	uint64_t stack = cyg__area_alloc(CALIB_STACK * sizeof(struct cyg_frame));

	if (!off || !stack)
		return NULL;
	return cyg__writer_init(off, stack, CALIB_STACK, CALIB_STACK, ring, cyg_proc_off, 0);
}

/* Room in the scratch ring for a round of k calls: on along it from where
 * the last round stopped (lines ring_prepare() left out of the caches),
 * back to its start only when the round would not fit, and never full
 * (nobody drains it: what was written counts as drained). */
static void ring_room(struct cyg_thread *t, unsigned k, uint64_t ring_words)
{
	if (ring_words && t->head + 2 * (uint64_t)k + 8 > ring_words)
		t->head = 0;
	t->tail_seen = t->head;
}

/* Before an attempt: the ring words its rounds (and its warm-up) will
 * write, from head on, faulted in (one store a page would do; one a line
 * costs little more) and then flushed from the caches, where a real
 * ring's lines are when it comes round again (written a whole ring ago,
 * read since by the collector on another core).  The attempt starts where
 * its span fits without wrapping; a ring smaller than the span is done
 * whole (and wraps round by round, as a ring that small does in a run). */
static void ring_prepare(struct cyg_thread *t, unsigned k, uint64_t ring_words)
{
	uint64_t span = (CALIB_ROUNDS + 1) * (2 * (uint64_t)k + 8), *ring = cyg_ringbuf(t);

	if (t->head + span > ring_words)
		t->head = 0;
	if (span > ring_words)
		span = ring_words;
	for (uint64_t i = 0; i < span; i += CYG_CACHELINE / 8)
		__atomic_store_n(&ring[t->head + i], 0, __ATOMIC_RELAXED);
#if defined(__x86_64__) || defined(__i386__)
	for (uint64_t i = 0; i < span; i += CYG_CACHELINE / 8)
		_mm_clflush(&ring[t->head + i]);
	_mm_mfence();
#endif
}

/* One attempt: the figures of its rounds, per round in ticks per k calls.
 * Returns 0 when every round ran as planned. */
static int calib_attempt(struct cyg_thread *t, unsigned k, uint64_t ring_words, double *in,
			 double *out)
{
	struct cyg_node *root = CYG_NODE(cyg_base, t->root), *outer, *inner;
	unsigned r;

	if (ring_words)
		ring_prepare(t, k, ring_words);
	ring_room(t, k, ring_words);
	calib_round(k < CALIB_WARM ? k : CALIB_WARM); /* makes the nodes, warms up */
	if (!root->first_child || t->depth != 0 || t->ovf)
		return -1;
	outer = CYG_NODE(cyg_base, root->first_child);
	if (!outer->first_child)
		return -1;
	inner = CYG_NODE(cyg_base, outer->first_child);
	for (r = 0; r < CALIB_ROUNDS; r++) {
		ring_room(t, k, ring_words);
		outer->ticks = inner->ticks = 0;
		outer->calls = inner->calls = 0;
		calib_round(k);
		uint64_t base = calib_base(k);
		if (outer->calls != 1 || inner->calls != k || t->depth != 0)
			return -1;
		/* the outer call's own o_in, as one inner call's */
		double i = (double)inner->ticks, o = (double)outer->ticks - (double)base - i / k;
		in[r] = i;
		out[r] = o > i ? o - i : 0;
	}
	return 0;
}

/* Whether attempt a (its in and out) beats attempt b: one that kept
 * CALIB_MIN_KEPT rounds beats one that did not; of two that did, the
 * faster one (a disturbance only ever adds time); of two that did not, the
 * one that kept more, then the faster. */
static int better(const struct calib_summary *ain, const struct calib_summary *aout,
		  const struct calib_summary *bin, const struct calib_summary *bout)
{
	int ga = ain->kept >= CALIB_MIN_KEPT, gb = bin->kept >= CALIB_MIN_KEPT;

	if (!bin->kept)
		return ain->kept > 0;
	if (ga != gb)
		return ga;
	if (!ga && ain->kept != bin->kept)
		return ain->kept > bin->kept;
	return ain->mean + aout->mean < bin->mean + bout->mean;
}

uint64_t cyg__spare_ring(void)
{
	uint64_t off = __atomic_exchange_n(&spare_ring, 0, __ATOMIC_ACQ_REL);

	return off && spare_pid == getpid() ? off : 0;
}

void cyg__calibrate(void)
{
	struct cyg_tls_save saved = {cyg_tls.t, cyg_tls.stk, cyg_tls.ring, cyg_tls.swh};
	double in[CALIB_ROUNDS], out[CALIB_ROUNDS];
	struct calib_summary best_in = {0, 0, 0, 0}, best_out = {0, 0, 0, 0};
	unsigned k = CALIB_CALLS, tries = 0;
	uint64_t ring_words = 0, ring = 0;
	struct cyg_thread *t;
	struct cyg_proc *p;
	sigset_t all, old;
	int err = errno;

	__atomic_store_n(&spare_ring, 0, __ATOMIC_RELEASE);
	if (cyg_noclock || !cyg_proc_off || cyg_state <= 0)
		return; /* --time=sampled: no clock, nothing to take out */
	p = AT(cyg_proc_off);
	if (cyg_timeline) {
		/* a ring of the run's size, as a writer gets; the rounds go on
		 * along it without wrapping inside one */
		ring_words = cyg_ctl->ring_words;
		if (ring_words < 24)
			return;
		if (ring_words < CALIB_CALLS * 2 + 16)
			k = (unsigned)(ring_words - 8) / 2;
		ring = cyg__area_alloc(ring_words * 8);
		if (!ring) {
			errno = err;
			return;
		}
	}
	t = scratch_writer(ring);
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

	t->head = t->tail_seen = 0;
	while (tries < CALIB_TRIES) {
		unsigned char keep[CALIB_ROUNDS], keep_out[CALIB_ROUNDS];
		tries++;
		if (calib_attempt(t, k, ring_words, in, out))
			break;
		/* a round is kept when neither of its figures is an outlier */
		calib_keep(in, CALIB_ROUNDS, keep);
		calib_keep(out, CALIB_ROUNDS, keep_out);
		for (unsigned r = 0; r < CALIB_ROUNDS; r++)
			keep[r] = keep[r] && keep_out[r];
		struct calib_summary si = calib_summarize(in, keep, CALIB_ROUNDS);
		struct calib_summary so = calib_summarize(out, keep, CALIB_ROUNDS);
		if (better(&si, &so, &best_in, &best_out)) {
			best_in = si;
			best_out = so;
		}
		if (si.kept >= CALIB_MIN_KEPT)
			break;
	}

	/* back to what the thread had, t last (as cyg__tls_use) */
	cyg_tls.stk = saved.stk;
	cyg_tls.ring = saved.ring;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cyg_tls.t = saved.t;
	cyg_tls.swh = saved.swh ? saved.swh : &cyg_sw_zero;
	cyg__real_sigmask(SIG_SETMASK, &old, NULL);
	if (ring) {
		spare_pid = getpid();
		__atomic_store_n(&spare_ring, ring, __ATOMIC_RELEASE);
	}
	if (best_in.kept) {
		p->calib_in = (uint64_t)(best_in.mean + 0.5);
		p->calib_full = (uint64_t)(best_in.mean + best_out.mean + 0.5);
		p->calib_in_sd = (uint64_t)(best_in.spread + 0.5);
		p->calib_out_sd = (uint64_t)(best_out.spread + 0.5);
		p->calib_rounds = CALIB_ROUNDS;
		p->calib_kept = best_in.kept;
		p->calib_tries = tries;
		p->calib_mode = (ring ? CYG_CALIB_TIMELINE : 0) |
				((cyg_ctl->flags & CYG_F_MEMORY) ? CYG_CALIB_MEMORY : 0);
		p->calib_ring_words = ring_words;
		__atomic_store_n(&p->calib_calls, k, __ATOMIC_RELEASE);
	}
	errno = err;
}
