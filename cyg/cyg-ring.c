/* SPDX-License-Identifier: MIT */
/* cyg-ring.c - the timeline ring's rare cases: the full ring, the wait for
 * the collector to drain it, and the multi-word records of memory tracing;
 * and the clock when there is no TSC.
 *
 * A writer appends to its ring without a lock (cyg_ring_put() in
 * cyg-private.h); only a ring seen full comes here.  In drop mode the
 * event is dropped and counted; otherwise the writer waits, as long as the
 * collector lives (it holds ctl->alive: getting that lock means it is
 * gone), and the wait is measured.  Runs inside the traced program; the
 * program's errno is kept across the wait.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <time.h>

#include "cyg-lock.h"
#include "cyg-cold.h"

uint64_t cyg__mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait up to ns nanoseconds for the collector to die: it holds ctl->alive
 * for its whole life, so getting the lock (EOWNERDEAD) means it is gone.
 * Returns 1 when it is (and marks it gone for every writer), else 0.  With
 * ns 0 it only looks (the deadline has passed: the lock is tried once). */
int cyg__collector_dead(long ns)
{
	struct timespec dl;
	int r;

	if (__atomic_load_n(&cyg_ctl->collector_gone, __ATOMIC_RELAXED))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_nsec += ns;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	r = cyg_lock(&cyg_ctl->alive, NULL, &dl);
	if (r == -ETIMEDOUT || r == -EINTR || r == -EBUSY)
		return 0;
	if (r >= 0) {
		cyg_unlock(&cyg_ctl->alive, NULL);
	} else if (r != -ENOTRECOVERABLE) {
		/* EDEADLK: its owner's tid is ours in another pid namespace;
		 * nothing to learn from the lock: just wait. */
		struct timespec ts = {0, ns};
		nanosleep(&ts, NULL);
		return 0;
	}
	__atomic_store_n(&cyg_ctl->collector_gone, 1, __ATOMIC_RELAXED);
	return 1;
}

/* The wait of w ticks is the recording's, not the program's: it happened
 * inside the interval of every frame open, so their entry times move that
 * much later and their calls' times leave it out.  A wait in an enter hook
 * comes after its clock read and after the new frame counts in depth, one
 * in an exit hook after the leaving frame's time was added and depth went
 * down: frames 1..depth are exactly those whose intervals hold it.  The
 * root's frame (0) keeps its time: the thread's span stays the clock's.
 * Without a clock (CYG_F_NOCLOCK) frames carry no time. */
static void frames_skip(struct cyg_thread *t, uint64_t w)
{
	struct cyg_frame *stk = cyg_stk(t);
	uint32_t d = t->depth;

	if (cyg_noclock || !w)
		return;
	if (d >= t->stack_cap)
		d = t->stack_cap - 1;
	/* the stack's place is the mapping's (the program may write it) */
	if (!t->stack_cap || !cyg_span_ok(t->stack_off, ((uint64_t)d + 1) * sizeof *stk))
		return;
	for (uint32_t i = 1; i <= d; i++)
		stk[i].ts += w;
}

/* Wait until `need` words are free.  Returns 0, or -1 to drop the event
 * (drop mode, unless `force`; or the collector is gone).  The time waited
 * is counted in wait_ticks and left out of the open frames' times. */
/* The record of a wait for the collector (CYG_X_WAIT: from t0, w ticks),
 * written after the event that waited, in the room ring_wait() kept for
 * it: that event's time was read before the wait, the wait follows it. */
static void wait_record(struct cyg_thread *t, uint64_t t0, uint64_t w)
{
	uint64_t *ring = cyg_ringbuf(t), h = t->head;

	if (h + CYG_X_WAIT_WORDS - t->tail_seen > cyg_ring_mask + 1)
		return; /* no room kept (a ring too small for it) */
	ring[h & cyg_ring_mask] = cyg_x_make(CYG_X_WAIT, t0 & CYG_EV_DELTA_MAX);
	ring[(h + 1) & cyg_ring_mask] = w;
	__atomic_store_n(&t->head, h + CYG_X_WAIT_WORDS, __ATOMIC_RELEASE);
}

/* Wait until need words (and a wait's record after them) are free: *t0
 * and *w say when and how long it waited (*w 0: it did not). */
static int ring_wait(struct cyg_thread *t, uint64_t need, int force, uint64_t *wt0,
		     uint64_t *ww)
{
	uint64_t size = cyg_ring_mask + 1;
	uint64_t t0, spins = 0, w;
	/* room for the wait's own record too (CYG_X_WAIT), once waiting */
	uint64_t rec = size >= need + 2 * CYG_X_WAIT_WORDS ? CYG_X_WAIT_WORDS : 0;

	*wt0 = *ww = 0;

	t->tail_seen = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
	if (t->head + need - t->tail_seen <= size)
		return 0;
	if ((!force && (cyg_ctl->flags & CYG_F_DROP)) ||
	    __atomic_load_n(&cyg_ctl->collector_gone, __ATOMIC_RELAXED))
		return -1;
	/* More unread than the ring holds: the program wrote head or tail,
	 * and the collector gave the ring up; nobody will make room. */
	if (t->head - t->tail_seen > size)
		return -1;

	/* Lossless mode: wait for the collector as long as it lives (stopped,
	 * under a debugger, or slow), and measure the wait. */
	cyg__sw_catchup(t); /* the switches before the wait are the program's */
	t0 = cyg_now();
	t->waits++;
	for (;;) {
		t->tail_seen = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
		if (t->head + need + rec - t->tail_seen <= size)
			break;
		if (t->head - t->tail_seen > size) { /* as above, meanwhile */
			t->wait_ticks += cyg_now() - t0;
			return -1;
		}
		/* Detached meanwhile, or attached again after the collector
		 * died (the writer belongs to the earlier mapping, whose tail
		 * nobody moves, and cyg_ctl is the new collector's): drop. */
		if (CYG_DETACHED() || cyg_stale(t)) {
			t->wait_ticks += cyg_now() - t0;
			return -1;
		}
		if (++spins < 100) {
			sched_yield();
			continue;
		}
		if (cyg__collector_dead(50000)) {
			t->wait_ticks += cyg_now() - t0;
			return -1;
		}
	}
	w = cyg_now() - t0;
	t->wait_ticks += w;
	frames_skip(t, w);
	/* the wait as an event of the thread's (the caller writes it after
	 * its own): replay and the exports show it for what it is */
	if (rec) {
		*wt0 = t0;
		*ww = w ? w : 1;
	}
	/* the time off the CPU during the wait is out of the frames' times
	 * already: not off-CPU time of the program's */
	cyg__sw_discard(t);
	return 0;
}

void cyg__ring_slow(struct cyg_thread *t, unsigned kind, uint32_t gid, uint64_t now)
{
	uint64_t h;
	int saved = errno; /* waiting may sleep: the program's errno stays */
	int waited;

	if (CYG_DETACHED())
		return;
	if (!cyg_span_ok(t->ring_off, (cyg_ring_mask + 1) * 8)) {
		t->lost++; /* the program wrote the ring's offset */
		return;
	}
	uint64_t wt0, ww;
	waited = ring_wait(t, 1, 0, &wt0, &ww);

	errno = saved;
	if (waited < 0) {
		t->lost++;
		return;
	}
	h = t->head;
	cyg_ringbuf(t)[h & cyg_ring_mask] = cyg_ev_make(kind, gid, now & CYG_EV_DELTA_MAX);
	__atomic_store_n(&t->head, h + 1, __ATOMIC_RELEASE);
	if (ww)
		wait_record(t, wt0, ww);
}

void cyg__ring_write(struct cyg_thread *t, uint64_t *w, unsigned n, uint64_t now)
{
	uint64_t h;
	unsigned i;

	if (now)
		w[0] |= now & CYG_EV_DELTA_MAX;
	if (!t->ring_off || !cyg_span_ok(t->ring_off, (cyg_ring_mask + 1) * 8)) {
		t->lost++; /* no ring, or the program wrote its offset */
		return;
	}
	h = t->head;
	uint64_t wt0 = 0, ww = 0;
	/* Room by the tail last seen: no need to read the collector's line. */
	if (UNLIKELY(h + n - t->tail_seen > cyg_ring_mask + 1)) {
		int saved = errno;
		int waited = ring_wait(t, n, 1, &wt0, &ww);
		errno = saved;
		if (waited < 0) {
			t->lost++;
			return;
		}
	}
	uint64_t *ring = cyg_ringbuf(t);
	for (i = 0; i < n; i++)
		ring[h++ & cyg_ring_mask] = w[i];
	__atomic_store_n(&t->head, h, __ATOMIC_RELEASE);
	if (ww)
		wait_record(t, wt0, ww);
}
