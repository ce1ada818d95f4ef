/* SPDX-License-Identifier: MIT */
/*
 * calls.c - the basic call-count example.
 *
 * main calls a() 3 times, a calls b() 2 times, b calls c() 5 times.
 * c does a little work so that its time is measurable.
 *
 * Expected counts (one process, one thread):
 *   main   1
 *   a      3
 *   b      6
 *   c     30
 * Expected arcs (caller -> callee: calls), and no others:
 *   main -> a   3
 *   a    -> b   6
 *   b    -> c  30
 * Times: total(main) >= total(a) >= total(b) >= total(c) > 0.
 * Exit status 0. stdout: "calls: a=3 b=6 c=30".
 */
#include <stdio.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static unsigned n_a, n_b, n_c;
static volatile unsigned long sink;

COUNTED static void c(void)
{
	unsigned long i;

	n_c++;
	for (i = 0; i < 2000; i++)
		sink += i;
}

COUNTED static void b(void)
{
	int i;

	n_b++;
	for (i = 0; i < 5; i++)
		c();
}

COUNTED static void a(void)
{
	int i;

	n_a++;
	for (i = 0; i < 2; i++)
		b();
}

int main(void)
{
	int i;

	for (i = 0; i < 3; i++)
		a();
	printf("calls: a=%u b=%u c=%u\n", n_a, n_b, n_c);
	return 0;
}
