/* SPDX-License-Identifier: MIT */
/*
 * exitdeep.c - exit() called from depth 4, so four frames never return.
 *
 * main calls prelude() twice (to have finished calls before the exit), then
 * level1 -> level2 -> level3 -> level4, and level4 calls exit(3).
 *
 * Expected: record exits with 3; one process, end "exit 3".
 * Expected counts:
 *   main     1
 *   prelude  2
 *   level1   1
 *   level2   1
 *   level3   1
 *   level4   1
 * Expected arcs, and no others:
 *   main   -> prelude  2
 *   main   -> level1   1
 *   level1 -> level2   1
 *   level2 -> level3   1
 *   level3 -> level4   1
 * stdout: "exitdeep: prelude=2 depth=4".
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static unsigned n_prelude, depth;
static volatile unsigned long sink;

COUNTED static void prelude(void)
{
	unsigned long i;

	n_prelude++;
	for (i = 0; i < 1000; i++)
		sink += i;
}

COUNTED static void level4(void)
{
	depth++;
	printf("exitdeep: prelude=%u depth=%u\n", n_prelude, depth);
	exit(3);
}

COUNTED static void level3(void)
{
	depth++;
	level4();
	sink++; /* not reached */
}

COUNTED static void level2(void)
{
	depth++;
	level3();
	sink++; /* not reached */
}

COUNTED static void level1(void)
{
	depth++;
	level2();
	sink++; /* not reached */
}

int main(void)
{
	prelude();
	prelude();
	level1();
	return 0; /* not reached */
}
