/* SPDX-License-Identifier: MIT */
/* diff-latency.h - cygprof diff --latency (diff-latency.c). */
#ifndef CLI_DIFF_LATENCY_H
#define CLI_DIFF_LATENCY_H

#include "profile.h"
#include "view.h"

/* One capture of the comparison: its view and its profile keyed by object
 * and name (profile_load_keyed()). */
struct diff_latency_side {
	const char *file;
	struct view *v;
	const struct profile *p;
};

/** The functions' p50, p99 and max in OLD and NEW, the largest change of
 * p99 first (functions matching pattern; NULL: all); in JSON a
 * ",\n  \"latency\": [...]" member (null when a side has no histograms). */
void diff_latency(const struct diff_latency_side *old, const struct diff_latency_side *new,
		  const char *pattern, int json);

#endif
