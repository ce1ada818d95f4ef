/* SPDX-License-Identifier: MIT */
/* poll.c - the poll-and-drain loop while the program runs: reap ended
 * processes, drain the rings, open the objects of new processes, commit and
 * checkpoint the capture, sleep.  The timings are named in
 * collector-private.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "collector-private.h"

/* How often the profile is stored while the program runs (0: only at the
 * end): CYGPROF_CHECKPOINT_MS, else POLL_CHECKPOINT_NS. */
static uint64_t checkpoint_interval_ns(void)
{
	const char *s = getenv("CYGPROF_CHECKPOINT_MS");
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return POLL_CHECKPOINT_NS;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > POLL_CHECKPOINT_MAX_MS)
		return POLL_CHECKPOINT_NS;
	return v * 1000000ULL;
}

static void sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
	nanosleep(&ts, NULL);
}

/* Some thread has entered an instrumented function: the raw root of its
 * tree has a child (a link from the program: only looked at, never
 * followed). */
static int collector_has_calls(struct collector *c)
{
	for (size_t i = 0; i < c->nthreads; i++) {
		const struct cthread *ct = c->threads[i];
		if (gid_ok(c, ct, ct->root) && ACQ(shm_node(c, ct->root)->first_child))
			return 1;
	}
	return 0;
}

/* How long after the checkpoint just taken the next one comes: the ramp
 * from the first checkpoint with calls (POLL_CHECKPOINT_RAMP_NS, doubling)
 * up to the interval, and at least POLL_CHECKPOINT_CPU_SHARE times the
 * checkpoint's own CPU time, but never more than
 * POLL_CHECKPOINT_GAP_MAX_NS (or the interval when that is longer). */
static uint64_t next_gap(const struct collector *c, uint64_t interval, uint64_t *ramp)
{
	uint64_t base = interval, cost = c->ckpt_ns * POLL_CHECKPOINT_CPU_SHARE;

	if (c->ckpt_calls && *ramp < interval) {
		*ramp = *ramp ? *ramp * 2 : POLL_CHECKPOINT_RAMP_NS;
		if (*ramp < interval)
			base = *ramp;
	}
	uint64_t gap = cost > base ? cost : base;
	uint64_t most = interval > POLL_CHECKPOINT_GAP_MAX_NS ? interval : POLL_CHECKPOINT_GAP_MAX_NS;
	return gap < most ? gap : most;
}

int collector_poll(struct collector *c, pid_t pid)
{
	uint64_t interval = checkpoint_interval_ns(), last_commit, last_ckpt, gap;
	int status = 0;

	/* record --push: a checkpoint at least every push interval (the
	 * pushes are made of checkpoints: push.c) */
	if (c->o->interval_ns && (!interval || interval > c->o->interval_ns))
		interval = c->o->interval_ns;
	c->ckpt_interval_ns = interval;

	/* committed at once: a disk that fills before the first commit of
	 * events leaves them anyway */
	cygprof_capture_begin(c->cap);
	collector_note_err(c, collector_put_start_meta(c));
	int e0 = cygprof_capture_commit(c->cap);
	if (e0) {
		collector_note_err(c, e0);
		collector_write_failed(c, e0);
	} else
		cygprof_capture_begin(c->cap);
	last_commit = last_ckpt = collector_mono_ns();
	/* The first checkpoint as soon as a thread has calls (below), else
	 * one interval in (a program that calls nothing instrumented still
	 * gets its processes and objects stored); then the ramp. */
	gap = interval;
	uint64_t ramp = 0;
	for (;;) {
		pid_t r;
		int st;
		int any = 0;

		int werr;
		struct rusage ru;
		while ((r = wait4(-1, &st, WNOHANG, &ru)) > 0) {
			if (!WIFEXITED(st) && !WIFSIGNALED(st))
				continue;
			/* the program's CPU time (meta cpu_ns): what diff
			 * compares its runs' times against */
			c->cpu_ns += (uint64_t)ru.ru_utime.tv_sec * 1000000000u +
				     (uint64_t)ru.ru_utime.tv_usec * 1000u +
				     (uint64_t)ru.ru_stime.tv_sec * 1000000000u +
				     (uint64_t)ru.ru_stime.tv_usec * 1000u;
			collector_note_end(c, r, st);
			if (r == pid)
				status = st;
			any = 1;
		}
		werr = errno;
		__atomic_store_n(&c->ctl->heartbeat, ++c->heartbeat, __ATOMIC_RELAXED);
		uint64_t most = collector_drain_all(c);
		collector_sampling_drain(c);
		collector_prime_procs(c);
		collector_snapshot_turn(c); /* cygprof top: keys, live snapshots */
		/* attached (attach-run.c): no child, until the attach ends */
		if (c->attach ? collector_attach_over(c) : r < 0 && werr == ECHILD)
			break;
		/* ns until the counters are due again (UINT64_MAX: none) */
		uint64_t due = collector_counters_tick(c);
		uint64_t now = collector_mono_ns();
		if (c->werr) {
			/* the capture's write failed: nothing more is stored, but
			 * the rings are still drained (above), so the program
			 * never waits for a collector that cannot write */
		} else if (interval && (now - last_ckpt >= gap ||
					(!c->ckpt_calls && collector_has_calls(c)))) {
			uint64_t cpu0 = collector_cpu_ns(), yield0 = c->yield_cpu_ns;
			int calls = c->ckpt_calls || collector_has_calls(c);
			/* The profile so far, so that a killed collector leaves a
			 * usable capture; at most a tenth of the collector's CPU
			 * time goes there. */
			c->in_checkpoint = 1;
			int e = collector_checkpoint(c, 0);
			c->in_checkpoint = 0;
			uint64_t upto = tick_ns(c, c->end_ts);
			uint64_t evto = tick_ns(c, c->drain_ts);
			/* its own CPU time: the commit writes the events drained
			 * since the last one too, the rings' work */
			c->ckpt_ns = collector_cpu_ns() - cpu0 - (c->yield_cpu_ns - yield0);
			int ce = cygprof_capture_commit(c->cap);
			collector_note_err(c, e ? e : ce);
			if (ce)
				collector_write_failed(c, ce);
			else if (!e) {
				c->kept = 1;
				c->kept_ns = upto;
				/* record --push: the interval that checkpoint ends
				 * (one that cannot be made, for want of memory,
				 * goes into the next: nothing is lost) */
				collector_push_interval(c, 0);
			}
			if (!ce)
				c->events_kept_ns = evto;
			/* tried: the ramp goes on from here, and a checkpoint
			 * that failed (no memory) is not tried again at once */
			c->ckpt_calls = calls;
			if (!c->werr)
				cygprof_capture_begin(c->cap);
			last_ckpt = last_commit = collector_mono_ns();
			gap = next_gap(c, interval, &ramp);
		} else if (now - last_commit > POLL_COMMIT_NS) {
			uint64_t evto = tick_ns(c, c->drain_ts);
			/* threads found since the checkpoint: their records, so
			 * that the events committed now have their thread */
			int e = collector_store_new_threads(c);
			/* (a failed write shows again at the commit) */
			collector_note_err(c, e);
			int ce = cygprof_capture_commit(c->cap);
			if (ce) {
				collector_note_err(c, ce);
				collector_write_failed(c, ce);
			} else {
				c->events_kept_ns = evto;
				cygprof_capture_begin(c->cap);
			}
			last_commit = collector_mono_ns();
		}
		/* Poll: at once while rings fill fast, briefly while events
		 * trickle in, rarely when there is only the end to wait for. */
		if (!any && most < c->ring_words / POLL_BUSY_SHARE) {
			int rings = c->o->timeline || c->o->memory;
			uint64_t ns = !rings ? POLL_SLEEP_NO_RINGS_NS
				      : most ? POLL_SLEEP_TRICKLE_NS
					     : POLL_SLEEP_IDLE_NS;
			/* wake for the counters' next tick */
			sleep_ns((long)(due < ns ? due : ns));
		} else if (!any) {
			/* rings fill fast: come back soon, but not at once, so the
			 * writers are not disturbed for every few events */
			sleep_ns(POLL_SLEEP_BUSY_NS);
		}
	}
	return status;
}
