/* SPDX-License-Identifier: MIT */
/* report-print.h - the flat profile and call graph of a profile, shared by
 * `cygprof report` (exact-time headers) and `cygprof gprof` (GNU gprof's own
 * text layout, which gprof parsers such as gprof2dot read). */
#ifndef CYGPROF_REPORT_PRINT_H
#define CYGPROF_REPORT_PRINT_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

enum sort_key { SORT_SELF, SORT_TOTAL, SORT_CALLS, SORT_NAME };

enum print_style {
	STYLE_REPORT, /* cygprof report: "Times are exact" headers */
	STYLE_GPROF,  /* gprof's headers, form feeds, blurbs and index */
};

struct print_opts {
	enum print_style style;
	int brief;           /* STYLE_GPROF: no explanations (gprof -b) */
	enum sort_key sort;  /* flat profile order */
	const char *pattern; /* glob on function names, NULL for all */
	int no_times;        /* STYLE_REPORT: the capture has no times (record
			      * --time=sampled): the headers say so */
	int sampled_times;   /* STYLE_REPORT: the times are the perf samples'
			      * (--time=sampled --sample: profile_load()) */
	const char *times_note; /* STYLE_REPORT: where the times come from (the
				 * flat profile's and call graph's header); NULL:
				 * the notes above */
	size_t limit;        /* print_flat_report(): rows shown, 0 for all (-n) */
	double min_percent;  /* print_flat_report(): rows under this share of
			      * the sort key's total hidden (when > 0) */
};

/* The header line of a capture recorded with --time=sampled. */
#define PRINT_NO_TIMES_NOTE \
	"times: not measured (record --time=sampled; add --sample for sampled times)"
/* ... and of one recorded with --time=sampled --sample. */
#define PRINT_SAMPLED_TIMES_NOTE \
	"times: sampled (perf samples on CPU plus off-CPU intervals; calls are exact)"


/** Whether name passes the -F pattern. */
int print_matches(const struct print_opts *o, const char *name);

/** Indices of the functions worth listing (calls or time), sorted for the
 * flat profile.  Owned: free().  Dies on out of memory (cli only). */
uint32_t *print_sorted_fns(const struct profile *p, enum sort_key key, size_t *n);

void print_flat(const struct profile *p, const struct print_opts *o);
/** cygprof report's flat profile: each time with its own unit (ns, us, ms,
 * s, as uftrace shows them: a 40 ns function does not read 0.00), a share
 * of the total self time and its running sum, o->limit and
 * o->min_percent applied.  gprof's layout stays print_flat()'s. */
void print_flat_report(const struct profile *p, const struct print_opts *o);
/** Whether function f passes o->min_percent (the share of the sort key:
 * total time for SORT_TOTAL, calls for SORT_CALLS, else self time). */
int print_flat_kept(const struct profile *p, const struct print_opts *o,
		    const struct profile_fn *f);
/** The call graph; in STYLE_GPROF followed by gprof's index by name. */
void print_graph(const struct profile *p, const struct print_opts *o);

#endif
