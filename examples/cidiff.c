/* SPDX-License-Identifier: MIT */
/*
 * cidiff.c - a run to compare run against run: main calls hot() 20 times
 * and steady() 20 times, each spinning a loop; hot's loop is PERCENT% of
 * steady's length (default 100; a fraction allowed), so `cidiff 130` makes
 * hot 30% slower and leaves steady as it was, and `cidiff 0.1` against
 * `cidiff 1.6` makes a hot of 0.1% of the run 16 times slower.  main also calls extra() EXTRA times (default
 * 0): a change of calls.
 *
 * Usage: cidiff [PERCENT [EXTRA [ITERATIONS]]]   (ITERATIONS: steady's loop,
 * default 300000 per call)
 *
 * Expected counts (one process, one thread): main 1, hot 20, steady 20,
 * extra EXTRA.  Exit status 0; stdout "cidiff: hot=20 steady=20 extra=E".
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static volatile unsigned long sink;
static unsigned n_hot, n_steady, n_extra;

COUNTED static void hot(unsigned long n)
{
	n_hot++;
	for (unsigned long i = 0; i < n; i++)
		sink += i ^ (sink >> 3);
}

COUNTED static void steady(unsigned long n)
{
	n_steady++;
	for (unsigned long i = 0; i < n; i++)
		sink += i ^ (sink >> 3);
}

COUNTED static void extra(void)
{
	n_extra++;
	sink++;
}

int main(int argc, char **argv)
{
	/* a fraction (0.1) makes hot small: under 0.5% of the run */
	double pct = argc > 1 ? strtod(argv[1], NULL) : 100;
	unsigned long nextra = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
	unsigned long iters = argc > 3 ? strtoul(argv[3], NULL, 10) : 300000;

	for (int r = 0; r < 20; r++) {
		hot((unsigned long)((double)iters * pct / 100));
		steady(iters);
	}
	for (unsigned long i = 0; i < nextra; i++)
		extra();
	printf("cidiff: hot=%u steady=%u extra=%u\n", n_hot, n_steady, n_extra);
	return 0;
}
