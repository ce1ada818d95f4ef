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
	gap = interval;
	/* the first checkpoint at once: a capture cut off before the next one
	 * still says what it holds (command, mode, threads) */
	if (interval)
		last_ckpt -= gap;
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
		} else if (interval && now - last_ckpt >= gap) {
			uint64_t cpu0 = collector_cpu_ns();
			/* The profile so far, so that a killed collector leaves a
			 * usable capture; at most a tenth of the collector's CPU
			 * time goes there. */
			c->in_checkpoint = 1;
			int e = collector_checkpoint(c, 0);
			c->in_checkpoint = 0;
			uint64_t upto = tick_ns(c, c->end_ts);
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
			if (!c->werr)
				cygprof_capture_begin(c->cap);
			last_ckpt = last_commit = collector_mono_ns();
			c->ckpt_ns = collector_cpu_ns() - cpu0;
			gap = c->ckpt_ns * POLL_CHECKPOINT_CPU_SHARE > interval
				      ? c->ckpt_ns * POLL_CHECKPOINT_CPU_SHARE
				      : interval;
		} else if (now - last_commit > POLL_COMMIT_NS) {
			int e = cygprof_capture_commit(c->cap);
			if (e) {
				collector_note_err(c, e);
				collector_write_failed(c, e);
			} else
				cygprof_capture_begin(c->cap);
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
