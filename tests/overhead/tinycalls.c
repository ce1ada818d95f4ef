/* SPDX-License-Identifier: MIT */
/* tinycalls.c - overhead compensation's test program: main calls many()
 * once, which calls tiny() 1000000 times, then work() once, a loop of
 * 20000000 additions without a call.  Exact counts: main 1, many 1,
 * tiny 1000000, work 1.  Measured raw, many() carries the hooks' cost of
 * its million calls; compensated, work() gets the larger share. */
#include <stdio.h>

static volatile unsigned long sink;

static __attribute__((noinline)) void tiny(unsigned long i)
{
	sink += i;
}

static __attribute__((noinline)) void many(void)
{
	for (unsigned long i = 0; i < 1000000; i++)
		tiny(i);
}

static __attribute__((noinline)) void work(void)
{
	for (unsigned long i = 0; i < 20000000; i++)
		sink += i * 3;
}

int main(void)
{
	many();
	work();
	printf("%lu\n", sink);
	return 0;
}
