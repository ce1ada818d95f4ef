/* SPDX-License-Identifier: MIT */
/* timemodel.h - the times every reader shows: a thread's compensated hook
 * times, less what it waited for a CPU, corrected by its CPU samples where
 * the two disagree beyond the samples' noise (timemodel.c says how and why).
 * view_tree() applies it unless the view was opened with raw_times. */
#ifndef ANALYSIS_TIMEMODEL_H
#define ANALYSIS_TIMEMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "cygprof/cygprof-capture.h"

struct timemodel_stats {
	uint64_t wait_ns;       /* waiting for a CPU taken out of self times */
	uint64_t blocked_ns;    /* blocked (taken out unless TIMEMODEL_KEEP_BLOCKED) */
	uint64_t corrected;     /* nodes whose hook time and samples disagreed beyond
				 * the samples' noise */
	uint64_t sampled_nodes; /* nodes with samples */
	double ratio;           /* the hooks' cost in place over their calibration (1:
				 * not known) */
};

/* How far apart (in the samples' standard deviations) the hooks' figure and
 * the samples' must be for the samples to take over. */
#define TIMEMODEL_SIGMAS 2.0
/* The overhead samples a thread needs for its hooks' cost in place. */
#define TIMEMODEL_MIN_OVERHEAD 30

/* timemodel_apply()'s flags */
enum {
	TIMEMODEL_SWITCHES = 1,     /* the thread's context switches were tracked, so
				     * its blocked time is known */
	TIMEMODEL_SAMPLED = 2,      /* the tree has no clock (record --time=sampled):
				     * self times are the samples' */
	TIMEMODEL_KEEP_BLOCKED = 4, /* blocked time stays in the self times
				     * (--times=wall), else it is taken out */
};

/** Rewrite the total_ns of nodes[0..n) (a stored tree, parents before
 * children, total_ns compensated) from the thread's CPU rows (strictly
 * increasing nodes; period_ns 0 when not sampled), flags TIMEMODEL_*.
 * floor_ns: glibc's empty hooks per call, added to every call's self time
 * (both figures lack it: the compensation and the samples in the hooks
 * took out the hooks whole), scaled by the hooks' cost in place (the
 * overhead samples) over hooks_ns, their calibrated cost per call (0: not
 * calibrated, no scaling).
 * Returns 0, -EINVAL for a malformed tree, -ENOMEM. */
int timemodel_apply(struct cygprof_node *nodes, size_t n, const struct cygprof_cpu_node *rows,
		    size_t nrows, uint64_t period_ns, int flags, double floor_ns, double hooks_ns,
		    struct timemodel_stats *st);

#endif
