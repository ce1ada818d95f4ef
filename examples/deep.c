/* SPDX-License-Identifier: MIT */
/*
 * deep.c - recursion a million calls deep.
 *
 * Usage: deep [DEPTH]   (default 1000000)
 *
 * main starts one thread with a 512 MiB stack (the main thread's stack is
 * limited by RLIMIT_STACK); the thread calls dive(DEPTH), which calls
 * dive(n - 1) until n is 1, so dive runs DEPTH times, nested DEPTH deep.
 * Then main calls leaf() once, to show that the thread's call path was
 * unwound properly.
 *
 * Expected counts (one process, two threads):
 *   main      1
 *   start     1   (the thread's function)
 *   dive  DEPTH
 *   leaf      1
 * Expected arcs, and no others:
 *   start -> dive  1
 *   dive  -> dive  DEPTH-1
 *   main  -> leaf  1
 * The deepest call path is DEPTH + 1 frames (start, then DEPTH dives).
 * Exit status 0. stdout: "deep: depth=DEPTH dives=DEPTH".
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static unsigned long n_dive;
static volatile unsigned long sink;

COUNTED static unsigned long dive(unsigned long n)
{
	n_dive++;
	if (n <= 1)
		return 1;
	/* not a tail call: the frame must stay */
	unsigned long r = dive(n - 1) + 1;
	sink += r;
	return r;
}

COUNTED static void *start(void *arg)
{
	return (void *)dive((unsigned long)(uintptr_t)arg);
}

COUNTED static void leaf(void)
{
	sink++;
}

int main(int argc, char **argv)
{
	unsigned long depth = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
	pthread_attr_t a;
	pthread_t th;
	void *ret;

	pthread_attr_init(&a);
	if (pthread_attr_setstacksize(&a, 512UL << 20) ||
	    pthread_create(&th, &a, start, (void *)(uintptr_t)depth)) {
		fprintf(stderr, "deep: cannot start a thread with a 512 MiB stack\n");
		return 2;
	}
	pthread_join(th, &ret);
	leaf();
	printf("deep: depth=%lu dives=%lu\n", (unsigned long)(uintptr_t)ret, n_dive);
	return (unsigned long)(uintptr_t)ret == depth ? 0 : 1;
}
