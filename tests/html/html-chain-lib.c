/* SPDX-License-Identifier: MIT */
/*
 * html-chain-lib.c - the shared library of html-chain.c: right(), so that
 * the report has functions in two objects (its colours by object).
 */
#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static volatile unsigned long sink;

COUNTED void right(void);
COUNTED void right(void)
{
	unsigned long i;

	for (i = 0; i < 100000; i++)
		sink += i;
}
