/* SPDX-License-Identifier: MIT */
/*
 * timefilter.c - known slow and fast calls, for the timeline's time filter.
 *
 * main calls fast() 1000 times (a few hundred nanoseconds each), then slow()
 * 3 times; slow sleeps 5 ms (nanosleep, not instrumented).
 *
 * Expected counts (one process, one thread), with or without -t:
 *   main     1
 *   fast  1000
 *   slow     3
 * Expected arcs, and no others:
 *   main -> fast  1000
 *   main -> slow     3
 * Recorded with --timeline -t 1ms, the timeline keeps main() and the three
 * slow() calls and no fast() call; the call trees (report) are unchanged.
 * Exit status 0. stdout: "timefilter: fast=1000 slow=3".
 */
#include <stdio.h>
#include <time.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

#define N_FAST 1000
#define N_SLOW 3

static unsigned n_fast, n_slow;
static volatile unsigned long sink;

COUNTED static void fast(void)
{
	unsigned long i;

	n_fast++;
	for (i = 0; i < 100; i++)
		sink += i;
}

COUNTED static void slow(void)
{
	struct timespec ts = {0, 5 * 1000 * 1000};

	n_slow++;
	while (nanosleep(&ts, &ts) != 0)
		;
}

int main(void)
{
	int i;

	for (i = 0; i < N_FAST; i++)
		fast();
	for (i = 0; i < N_SLOW; i++)
		slow();
	printf("timefilter: fast=%u slow=%u\n", n_fast, n_slow);
	return 0;
}
