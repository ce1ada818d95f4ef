/* SPDX-License-Identifier: MIT */
/*
 * recurtime.c - direct and mutual recursion with the time at the bottom:
 * the inclusive figures of recursive calls are counted once.
 *
 * Usage: recurtime [ITERATIONS]   (the busy loop's length, default 20000000)
 *
 * main calls descend(8) once (line L_TOP_DESCEND); descend(n) calls
 * descend(n - 1) (line L_REC) while n > 0 and spin() at n == 0 (line
 * L_SPIN_D).  Then main calls ping(8) once (line L_TOP_PING); ping(n) calls
 * pong(n - 1) (line L_PING) while n > 0, pong(n) calls ping(n - 1) (line
 * L_PONG) while n > 0; ping(0) calls spin() (line L_SPIN_P).  Nearly all
 * the time of the run is in the two spin() calls, at the bottom of 9
 * frames of recursion each.
 *
 * Expected counts (one process, one thread):
 *   main       1
 *   descend    9   (8 .. 0)
 *   ping       5   (8, 6, 4, 2, 0)
 *   pong       4   (7, 5, 3, 1)
 *   spin       2
 * Expected arcs, and no others:
 *   main    -> descend   1
 *   descend -> descend   8
 *   descend -> spin      1
 *   main    -> ping      1
 *   ping    -> pong      4
 *   pong    -> ping      4
 *   ping    -> spin      1
 * Expected inclusive times, each counted once (the recursion adds nothing):
 *   line L_REC     8 calls, the time of descend(7), the outermost of them
 *                  (not the sum of descend(7) .. descend(0), 8 times it)
 *   line L_PING    4 calls, the time of pong(7); line L_PONG 4 calls, the
 *                  time of ping(6)
 *   descend, ping, pong: the time of descend(8), ping(8), pong(7)
 *   no line, function or arc more than the run.
 * Exit status 0. stdout: "recurtime: descend=9 ping=5 pong=4 spin=2".
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static unsigned long n_descend, n_ping, n_pong, n_spin, iterations = 20000000;
static volatile unsigned long sink;

COUNTED static void spin(void)
{
	unsigned long i;

	n_spin++;
	for (i = 0; i < iterations; i++)
		sink += i;
}

COUNTED static void descend(unsigned n)
{
	n_descend++;
	if (n > 0)
		descend(n - 1); /* L_REC */
	else
		spin(); /* L_SPIN_D */
	sink++;
}

COUNTED static void pong(unsigned n);

COUNTED static void ping(unsigned n)
{
	n_ping++;
	if (n > 0)
		pong(n - 1); /* L_PING */
	else
		spin(); /* L_SPIN_P */
	sink++;
}

COUNTED static void pong(unsigned n)
{
	n_pong++;
	if (n > 0)
		ping(n - 1); /* L_PONG */
	sink++;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		iterations = strtoul(argv[1], NULL, 10);
	descend(8); /* L_TOP_DESCEND */
	ping(8); /* L_TOP_PING */
	printf("recurtime: descend=%lu ping=%lu pong=%lu spin=%lu\n", n_descend, n_ping, n_pong,
	       n_spin);
	return 0;
}
