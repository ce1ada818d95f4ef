/* SPDX-License-Identifier: MIT */
/*
 * killself.c - SIGKILL sent to itself from depth 2, after some recorded calls.
 *
 * Usage: killself [N]   (N defaults to 20)
 *
 * main calls work() N times, then kill_l1() -> kill_l2(), and kill_l2 calls
 * kill(getpid(), SIGKILL): the process dies at once, with no chance to run
 * anything (no atexit, no signal handler, no destructor of the runtime).
 *
 * Expected: record exits with 128+9 = 137; one process, end "signal 9".
 * Expected counts:
 *   main     1
 *   work     N
 *   kill_l1  1
 *   kill_l2  1
 * Expected arcs, and no others:
 *   main    -> work     N
 *   main    -> kill_l1  1
 *   kill_l1 -> kill_l2  1
 * stdout (flushed before the kill): "killself: work=N".
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static unsigned n_work;
static volatile unsigned long sink;

COUNTED static void work(void)
{
	unsigned long i;

	n_work++;
	for (i = 0; i < 1000; i++)
		sink += i;
}

COUNTED static void kill_l2(void)
{
	kill(getpid(), SIGKILL);
	for (;;)
		pause(); /* not reached */
}

COUNTED static void kill_l1(void)
{
	kill_l2();
	sink++; /* not reached */
}

int main(int argc, char **argv)
{
	unsigned long n = 20, i;

	if (argc > 1)
		n = strtoul(argv[1], NULL, 10);
	for (i = 0; i < n; i++)
		work();
	printf("killself: work=%u\n", n_work);
	fflush(stdout);
	kill_l1();
	return 0; /* not reached */
}
