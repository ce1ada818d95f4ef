/* SPDX-License-Identifier: MIT */
/* report-latency.h - cygprof report --latency and the latency figures of
 * report --format=json (analysis/latency.h). */
#ifndef CLI_REPORT_LATENCY_H
#define CLI_REPORT_LATENCY_H

#include "profile.h"
#include <stdio.h>

#include "view.h"

struct lat_stats;

struct latency_opts {
	const char *file;
	const char *pattern; /* --function, or NULL */
	int top;             /* rows of each table (0: all) */
	int slowest;         /* --slowest: the slowest calls of each function shown */
	int raw;             /* --raw-times */
};

/** The latency tables: per function ranked by p99, then the call paths
 * ranked by p99; with slowest, each function's slowest calls from the
 * timeline.  A capture without histograms says so. */
void report_latency_text(struct view *v, const struct profile *p, const struct latency_opts *o);
/** "latency": {...}, (with the comma and the next line's indent) for the
 * JSON report: per function and per call path, times in ns; null without
 * histograms. */
void report_latency_json(struct view *v, const struct profile *p, const struct latency_opts *o);

/** The HTML report's "latency" value on f: null without histograms, else
 * {"fns": {"FN": [calls, min, mean, p50, p90, p99, p999, max, first,
 * [counts]]}} per function index FN with calls, times in ns, the counts
 * of bins of a quarter of a power of two from 2^(first / 4) ns (for the
 * histogram beside the sandwich). */
void report_latency_html(FILE *f, struct view *v, const struct profile *p, const char *file);
/** The timeline's "waits" value on f: each interval a thread waited for
 * the collector, {"thread": [index in view_threads()], "start": [ns],
 * "dur": [ns]}. */
void report_waits_html(FILE *f, struct view *v, const char *file);
/** ", \"latency\": {calls, min_ns, mean_ns, p50_ns, p90_ns, p99_ns,
 * p999_ns, max_ns}" of function fn (all from report_latency_fns()), or
 * null when all is NULL or fn has no calls. */
void report_latency_json_fn(const struct lat_stats *all, size_t fn);
/** The latency of every function of p (p->nfns of them; count 0: none),
 * NULL when the capture has no histograms.  @return owned: free(). */
struct lat_stats *report_latency_fns(struct view *v, const struct profile *p, const char *file);

#endif
