/* SPDX-License-Identifier: MIT */
/*
 * dlfifo-lib.c - the small instrumented library that examples/dlfifo.c
 * copies, loads with dlopen and then takes away from under the program.
 *
 * lib_entry(n) calls lib_leaf() n times and returns how many calls it made.
 */
#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

int lib_entry(int n);

static volatile unsigned long sink;

COUNTED static void lib_leaf(void)
{
	unsigned long i;

	for (i = 0; i < 100; i++)
		sink += i;
}

COUNTED int lib_entry(int n)
{
	int i;

	for (i = 0; i < n; i++)
		lib_leaf();
	return n;
}
