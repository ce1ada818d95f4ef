/* SPDX-License-Identifier: MIT */
/*
 * longjmp.c - non-local exits that skip the exit hooks of three frames.
 *
 * Usage: longjmp [K]   (K defaults to 5)
 *
 * main calls setjmp, then deep1 -> deep2 -> deep3, and deep3 longjmps back to
 * main, skipping the returns of deep3, deep2 and deep1. This is done K times.
 * Then main calls after(), which calls leaf(). A profiler that did not
 * notice the longjmp would see after() as a callee of deep3 (or deeper).
 *
 * Expected counts (one process, one thread):
 *   main   1
 *   deep1  K
 *   deep2  K
 *   deep3  K
 *   after  1
 *   leaf   1
 * Expected arcs, and no others:
 *   main  -> deep1  K
 *   deep1 -> deep2  K
 *   deep2 -> deep3  K
 *   main  -> after  1
 *   after -> leaf   1
 * Exit status 0. stdout: "longjmp: jumps=K deep3=K after=1".
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static jmp_buf env;
static unsigned n_deep3, n_after;
static volatile unsigned long sink;

COUNTED static void deep3(void)
{
	n_deep3++;
	longjmp(env, 1);
}

COUNTED static void deep2(void)
{
	deep3();
	sink++; /* not reached */
}

COUNTED static void deep1(void)
{
	deep2();
	sink++; /* not reached */
}

COUNTED static void leaf(void)
{
	unsigned long i;

	for (i = 0; i < 1000; i++)
		sink += i;
}

COUNTED static void after(void)
{
	n_after++;
	leaf();
}

int main(int argc, char **argv)
{
	volatile unsigned k = 5, i, jumps = 0;

	if (argc > 1)
		k = (unsigned)strtoul(argv[1], NULL, 10);
	for (i = 0; i < k; i++) {
		if (setjmp(env) == 0)
			deep1();
		else
			jumps++;
	}
	after();
	printf("longjmp: jumps=%u deep3=%u after=%u\n", jumps, n_deep3, n_after);
	return jumps == k ? 0 : 1;
}
