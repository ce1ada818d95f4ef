/* SPDX-License-Identifier: MIT */
/*
 * crash.c - a SIGSEGV after some recorded calls.
 *
 * Usage: crash [N]   (N defaults to 10)
 *
 * main calls work() N times, then crash_l1() -> crash_l2(), and crash_l2
 * stores through a NULL pointer (read from a volatile, so the compiler
 * cannot turn it into a trap instruction): the process dies of SIGSEGV.
 *
 * Expected: record exits with 128+11 = 139; one process, end "signal 11".
 * Expected counts:
 *   main      1
 *   work      N
 *   crash_l1  1
 *   crash_l2  1
 * Expected arcs, and no others:
 *   main     -> work      N
 *   main     -> crash_l1  1
 *   crash_l1 -> crash_l2  1
 * stdout (flushed before the crash): "crash: work=N".
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static int *volatile null_ptr;
static unsigned n_work;
static volatile unsigned long sink;

COUNTED static void work(void)
{
	unsigned long i;

	n_work++;
	for (i = 0; i < 1000; i++)
		sink += i;
}

COUNTED static void crash_l2(void)
{
	*null_ptr = 1;
}

COUNTED static void crash_l1(void)
{
	crash_l2();
	sink++; /* not reached */
}

int main(int argc, char **argv)
{
	unsigned long n = 10, i;

	if (argc > 1)
		n = strtoul(argv[1], NULL, 10);
	for (i = 0; i < n; i++)
		work();
	printf("crash: work=%u\n", n_work);
	fflush(stdout);
	crash_l1();
	return 0; /* not reached */
}
