/* SPDX-License-Identifier: MIT */
/* cyg-calib-stats.h - the robust summary of the calibration's rounds
 * (cyg-calib.c): which rounds to keep, their mean and their spread.
 *
 * A round whose figure lies more than CALIB_OUT_SIGMAS robust standard
 * deviations (1.4826 times the median absolute deviation) from the median
 * of all rounds is an outlier: a preemption, an interrupt or a migration
 * fell into it.  The threshold is at least 1/CALIB_OUT_FLOOR of the
 * median, so that rounds which agree to the tick (a MAD of 0) do not make
 * every other round an outlier.  The kept rounds give the mean and the
 * standard deviation (the spread the capture stores).
 *
 * Pure: no libc beyond the language, no libm (the square root is
 * Newton's), so that the runtime can use it and the unit test check it
 * (tests/unit/test-calib.c).
 */
#ifndef CYGPROF_CYG_CALIB_STATS_H
#define CYGPROF_CYG_CALIB_STATS_H

#include <stdint.h>

#define CALIB_MAX_ROUNDS 32 /* the most rounds calib_summary() takes */
#define CALIB_OUT_SIGMAS 3.0
#define CALIB_OUT_FLOOR 100 /* the threshold is at least median / 100 */

struct calib_summary {
	double median;
	double mean;   /* of the kept rounds */
	double spread; /* their standard deviation (0 with one round) */
	unsigned kept;
};

static inline __attribute__((no_instrument_function)) void calib_sort(double *v, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
}

/* The median of v[0..n) (sorted in place). */
static inline __attribute__((no_instrument_function)) double calib_median(double *v, unsigned n)
{
	calib_sort(v, n);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline __attribute__((no_instrument_function)) double calib_sqrt(double x)
{
	double r = x > 1 ? x : 1;

	if (!(x > 0))
		return 0;
	for (int i = 0; i < 200; i++) {
		double next = (r + x / r) / 2;
		if (next >= r)
			break;
		r = next;
	}
	return r;
}

/* Mark in keep[] (1 kept, 0 outlier) the rounds of x[0..n) within the
 * threshold of the median; returns how many are kept (n when n < 3: too
 * few rounds to call one an outlier).  n <= CALIB_MAX_ROUNDS. */
static inline __attribute__((no_instrument_function)) unsigned
calib_keep(const double *x, unsigned n, unsigned char *keep)
{
	double v[CALIB_MAX_ROUNDS], med, mad, lim;
	unsigned i, k = 0;

	if (n > CALIB_MAX_ROUNDS)
		n = CALIB_MAX_ROUNDS;
	for (i = 0; i < n; i++)
		keep[i] = 1;
	if (n < 3)
		return n;
	for (i = 0; i < n; i++)
		v[i] = x[i];
	med = calib_median(v, n);
	for (i = 0; i < n; i++)
		v[i] = x[i] > med ? x[i] - med : med - x[i];
	mad = calib_median(v, n);
	lim = CALIB_OUT_SIGMAS * 1.4826 * mad;
	if (lim < med / CALIB_OUT_FLOOR)
		lim = med / CALIB_OUT_FLOOR;
	for (i = 0; i < n; i++) {
		double d = x[i] > med ? x[i] - med : med - x[i];
		keep[i] = d <= lim;
		k += keep[i];
	}
	return k;
}

/* The median of x[0..n), and the mean and standard deviation (n - 1 in
 * the denominator) of the rounds keep[] marks. */
static inline __attribute__((no_instrument_function)) struct calib_summary
calib_summarize(const double *x, const unsigned char *keep, unsigned n)
{
	struct calib_summary s = {0, 0, 0, 0};
	double v[CALIB_MAX_ROUNDS], sum = 0, ss = 0;
	unsigned i;

	if (n > CALIB_MAX_ROUNDS)
		n = CALIB_MAX_ROUNDS;
	if (!n)
		return s;
	for (i = 0; i < n; i++)
		v[i] = x[i];
	s.median = calib_median(v, n);
	for (i = 0; i < n; i++)
		if (keep[i]) {
			sum += x[i];
			s.kept++;
		}
	if (!s.kept)
		return s;
	s.mean = sum / s.kept;
	for (i = 0; i < n; i++)
		if (keep[i])
			ss += (x[i] - s.mean) * (x[i] - s.mean);
	s.spread = s.kept > 1 ? calib_sqrt(ss / (s.kept - 1)) : 0;
	return s;
}

#endif
