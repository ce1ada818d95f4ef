/* SPDX-License-Identifier: MIT */
/* latency.h - the distribution of calls' inclusive durations per call path
 * and per function, from the latency histograms the runtime keeps in every
 * node (schema 8: cygprof_capture_get_latency()).
 *
 * A distribution is a list of segments: each bucket of a stored histogram
 * says that `n` calls took between lo and hi ns, and is read as those calls
 * spread evenly over [lo, hi) (the interpolation within a bucket), clipped
 * to the node's exact least and greatest call.  Distributions of several
 * nodes (a function's call paths, a path's threads) are the union of their
 * segments, so nothing is re-bucketed and their percentiles are those of
 * the mixture.  A bucket is at most 1/8 of its lower bound wide: a
 * percentile is within 6.25% of the exact one, and usually much closer.
 *
 * Times are compensated as the trees' are (profile_compensate()): each
 * node's durations lose the hooks' cost per call taken out of that node
 * (its `cut`), at >= 0; raw with the view's raw_times.  A time range
 * (--time-range) has none: the histograms are of the whole run.
 *
 * Error convention: 0 or a negative errno / CYGPROF_E_*; nothing here
 * prints or exits. */
#ifndef ANALYSIS_LATENCY_H
#define ANALYSIS_LATENCY_H

#include <stddef.h>
#include <stdint.h>

struct view;

struct lat_seg {
	double lo, hi; /* ns; lo == hi: calls of exactly that duration */
	uint64_t n;
};

struct lat_dist {
	uint64_t count;   /* calls */
	double min, max;  /* exact (compensated) */
	double sum;       /* of the calls' durations (compensated): the mean's */
	struct lat_seg *seg;
	size_t nseg, cap;
};

/* What a report shows of a distribution. */
struct lat_stats {
	uint64_t count;
	double min, mean, p50, p90, p99, p999, max;
};

/* The latency of one thread's tree as the view shows it (view_tree():
 * filtered, merged), per node. */
struct view_latency {
	int present;               /* the thread has histograms */
	size_t n;                  /* nodes, as the view's tree of the thread */
	const struct lat_dist *node; /* per node (count 0: none) */
};

/** The latency per node of a thread (read once, borrowed until
 * view_close()).  A thread without histograms (a capture before schema 8,
 * --time=sampled, a time range) gets present = 0.  Errors: as view_tree(),
 * or the capture's reading the record. */
int view_latency(struct view *v, uint32_t thread, const struct view_latency **out);
/** Whether any thread of the view has histograms (reading them). */
int view_latency_present(struct view *v, int *present);

/** Add src's calls to d.  0 or -ENOMEM. */
int lat_dist_merge(struct lat_dist *d, const struct lat_dist *src);
/** Free d's segments; d is zeroed. */
void lat_dist_release(struct lat_dist *d);
/** The value under which a fraction q (0..1) of d's calls fall, interpolated
 * within the segments; 0 for an empty d. */
double lat_quantile(const struct lat_dist *d, double q);
/** count, min, mean, p50, p90, p99, p99.9, max of d. */
void lat_stats(struct lat_dist *d, struct lat_stats *st);

#endif
