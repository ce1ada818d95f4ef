/* SPDX-License-Identifier: MIT */
/* timemodel.c - the times every reader shows (view_tree(), timemodel.h).
 *
 * Two measurements of the same call path disagree in known ways:
 *
 *   hooks    the enter/exit clock reads: exact per call, but they hold the
 *            hooks' own cost (taken out by profile_compensate() as a
 *            constant per call, which is wrong around short functions that
 *            wait on memory: the hooks evict what they would have found in
 *            the cache, or the function hides the hooks' cost behind its own
 *            stalls), and every moment the thread was off the CPU;
 *   samples  the runtime's CPU-time samples charged to the thread's current
 *            node (cyg/cyg-sample.c): never a moment the thread did not
 *            run, never the hooks (those samples are "overhead"), but only
 *            period_ns apart, so a node with k samples is known to about
 *            sqrt(k) of them.
 *
 * A node's self time is its compensated hook time less the time its thread
 * waited for a CPU while it was innermost (cyg/cyg-switch.c): that is not
 * work.  Its blocked time (sleep, I/O, locks) is the program's but not
 * work either: by default it is taken out too, so that what ranks first is
 * what used the CPU (a server's threads block most of their wall time: in
 * the wall clock its idle loops and background threads come first); the
 * readers show it in a column of its own, and `--times=wall` keeps it in
 * (TIMEMODEL_KEEP_BLOCKED).  No sample sees it: where samples exist and the thread's switches were
 * tracked (else blocked time cannot be told from a bias), the hooks' figure
 * without it, H, and the samples' S = k * period are combined as
 *
 *     self = H + (S - H) * d^2 / (d^2 + var),   d = S - H,
 *     var  = 4 (k + 1) * period^2   (twice the samples' standard deviation),
 *
 * which keeps H where the two agree within the samples' noise (the hooks'
 * figure is the less noisy one) and moves to S where they disagree by more
 * (the hooks' figure is then biased: its compensation or a preemption the
 * switch records missed).  Totals are the sums of self times over each
 * subtree, so totals, shares, the flat profile and every reader agree.
 * Last, every call gets back glibc's empty hooks' cost (floor_ns): the
 * compensation and the samples in the hooks took the hooks out whole,
 * while the program without a profiler still calls those.  Measured back
 * to back (the collector's loop) that cost is lower than among the
 * program's own code, as is the calibration of our hooks: so it is scaled
 * by how much more our hooks cost in place than in their calibration, the
 * samples taken inside them against calls times the calibrated cost
 * (about 1.6 on sqlite3 and gawk on the project's VM).
 *
 * bench/true-times.py (bench/RESULTS.md) chose the constants: twice the
 * samples' standard deviation (once: worse on sqlite3's memory-bound page
 * cache; four times: worse on gawk), the floor scaled by the ratio (without
 * it, functions of many tiny calls fall 15-25% short of the floor).
 *
 * A capture recorded with --time=sampled has no clock reads: its self
 * times are the samples' alone.
 *
 * bench/true-times.py measures the result against perf on the same binary
 * with glibc's empty hooks (the floor): bench/RESULTS.md. */
#include "timemodel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int timemodel_apply(struct cygprof_node *nodes, size_t n, const struct cygprof_cpu_node *rows,
		    size_t nrows, uint64_t period_ns, int flags, double floor_ns, double hooks_ns,
		    struct timemodel_stats *st)
{
	int switches = !!(flags & TIMEMODEL_SWITCHES), sampled_only = !!(flags & TIMEMODEL_SAMPLED);
	int keep = !!(flags & TIMEMODEL_KEEP_BLOCKED);
	uint64_t *kids, *smp, *wait, *blk;
	double *self;
	size_t i;

	memset(st, 0, sizeof *st);
	if (n == 0)
		return 0;
	for (i = 1; i < n; i++)
		if (nodes[i].parent >= i)
			return -EINVAL;
	kids = calloc(n, sizeof *kids);
	smp = calloc(n, sizeof *smp);
	wait = calloc(n, sizeof *wait);
	blk = calloc(n, sizeof *blk);
	self = calloc(n, sizeof *self);
	if (!kids || !smp || !wait || !blk || !self) {
		free(kids);
		free(smp);
		free(wait);
		free(blk);
		free(self);
		return -ENOMEM;
	}
	for (i = 0; i < nrows; i++)
		if (rows[i].node && rows[i].node < n) { /* the root has no time of its own */
			smp[rows[i].node] = rows[i].samples;
			wait[rows[i].node] = rows[i].wait_ns;
			blk[rows[i].node] = rows[i].blocked_ns;
		}
	for (i = 1; i < n; i++)
		kids[nodes[i].parent] += nodes[i].total_ns;
	/* the hooks' cost in place against their calibration: the samples
	 * taken inside them against calls times the calibrated pair */
	st->ratio = 1;
	if (period_ns && hooks_ns > 0) {
		double ov = 0, calls = 0;

		for (i = 0; i < nrows; i++)
			ov += (double)rows[i].overhead;
		for (i = 1; i < n; i++)
			calls += (double)nodes[i].calls;
		if (ov >= TIMEMODEL_MIN_OVERHEAD && calls > 0)
			st->ratio = ov * (double)period_ns / (calls * hooks_ns);
		if (st->ratio < 0.5)
			st->ratio = 0.5;
		if (st->ratio > 4)
			st->ratio = 4;
	}
	floor_ns *= st->ratio;
	for (i = 1; i < n; i++) {
		double e = (double)nodes[i].calls * floor_ns, p = (double)period_ns;
		double h, s, d, b, var;

		st->sampled_nodes += smp[i] != 0;
		if (sampled_only) {
			self[i] = (double)smp[i] * p + e;
			continue;
		}
		/* the hooks' figure, less what the thread waited for a CPU */
		h = nodes[i].total_ns > kids[i] ? (double)(nodes[i].total_ns - kids[i]) : 0;
		d = (double)wait[i] < h ? (double)wait[i] : h;
		h -= d;
		st->wait_ns += (uint64_t)d;
		/* blocked time is the program's (its sleep, its I/O), but no
		 * sample sees it: compare the samples with the rest */
		b = (double)blk[i] < h ? (double)blk[i] : h;
		h -= b;
		st->blocked_ns += (uint64_t)b;
		if (!keep)
			b = 0;
		if (period_ns && switches) {
			/* the samples', and the two combined */
			s = (double)smp[i] * p;
			d = s - h;
			var = TIMEMODEL_SIGMAS * TIMEMODEL_SIGMAS * ((double)smp[i] + 1) * p * p;
			if (d * d > var)
				st->corrected++;
			h += d * (d * d / (d * d + var));
		}
		self[i] = (h < 0 ? 0 : h) + b + e;
	}
	/* totals: children after their parents, so walk backwards */
	memset(kids, 0, n * sizeof *kids);
	for (i = n - 1; i >= 1; i--) {
		uint64_t t = (uint64_t)(self[i] + 0.5) + kids[i];

		nodes[i].total_ns = t;
		kids[nodes[i].parent] += t;
	}
	nodes[0].total_ns = kids[0];
	free(kids);
	free(smp);
	free(wait);
	free(blk);
	free(self);
	return 0;
}
