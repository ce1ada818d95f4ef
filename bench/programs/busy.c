/* SPDX-License-Identifier: MIT */
/* busy.c - a busy loop of few calls, for the cost of CPU samples
 * (bench.py's cpu section): main calls step() N times (default 2000), each
 * spinning K iterations (default 1000000, about 1 ms here) of a
 * multiply-add; the hooks' own cost is next to nothing. */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) void step(unsigned long k)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < k; i++)
		x = x * 6364136223846793005UL + i;
	sink = x;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	unsigned long k = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000000;

	for (int i = 0; i < n; i++)
		step(k);
	printf("%lu\n", sink & 1);
	return 0;
}
