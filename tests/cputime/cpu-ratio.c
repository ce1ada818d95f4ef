/* SPDX-License-Identifier: MIT */
/* cpu-ratio.c - CPU samples in the ratio of the work (tests/cputime).
 *
 *   cpu-ratio K N     main calls hot() once; hot() runs N rounds, each
 *                     spinning K units of work itself and calling cold(),
 *                     which spins K/10 units: hot's self CPU time is ten
 *                     times cold's.  K 400000 (about 0.4 ms here) and N
 *                     1000 make about 0.4 s of CPU in hot and 0.04 s in
 *                     cold.  Calls: main 1, hot 1, cold N.
 *   cpu-ratio fib R   tiny calls: R rounds of fib(20) (21891 calls each):
 *                     fib 21891 R calls, much of its time in the hooks.
 *
 * The spin is inlined: no instrumented call inside it.  Prints "sink=..."
 * so that the work is not optimised away. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;

__attribute__((always_inline, no_instrument_function)) static inline void spin(unsigned long k)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < k; i++)
		x = x * 6364136223846793005UL + i;
	sink = x;
}

__attribute__((noinline)) void cold(unsigned long k)
{
	spin(k / 10);
}

__attribute__((noinline)) void hot(unsigned long k, int n)
{
	for (int i = 0; i < n; i++) {
		spin(k);
		cold(k);
	}
}

__attribute__((noinline)) unsigned long fib(unsigned n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "fib")) {
		unsigned long s = 0;
		for (int r = atoi(argv[2]); r > 0; r--)
			s += fib(20);
		printf("fib=%lu\n", s);
		return 0;
	}
	if (argc != 3)
		return 2;
	hot(strtoul(argv[1], NULL, 10), atoi(argv[2]));
	printf("sink=%lu\n", (unsigned long)(sink & 1));
	return 0;
}
