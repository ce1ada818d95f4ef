/* SPDX-License-Identifier: MIT */
/*
 * recursion.c - direct and mutual recursion.
 *
 * main calls run() once; run calls fib(20) 3 times. fib(n) calls fib(n-1) and
 * fib(n-2) for n >= 2, so one fib(20) makes 2*F(21)-1 = 2*10946-1 = 21891
 * calls, and 3 of them make 65673 calls, of which 3 come from run.
 * main then calls is_even(10) and is_odd(7) once each:
 *   is_even(10): even 10,8,6,4,2,0 (6) and odd 9,7,5,3,1 (5)
 *   is_odd(7):   odd 7,5,3,1 (4) and even 6,4,2,0 (4)
 *
 * Expected counts (one process, one thread):
 *   main        1
 *   run         1
 *   fib     65673
 *   is_even    10
 *   is_odd      9
 * Expected arcs, and no others:
 *   main    -> run          1
 *   run     -> fib          3
 *   fib     -> fib      65670
 *   main    -> is_even      1
 *   main    -> is_odd       1
 *   is_even -> is_odd       8   (5 + 3)
 *   is_odd  -> is_even      9   (5 + 4)
 * Exit status 0. stdout: "recursion: fib=65673 value=6765 even=10 odd=9".
 */
#include <stdio.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static unsigned long n_fib, n_even, n_odd;

COUNTED static unsigned long fib(unsigned n)
{
	n_fib++;
	if (n < 2)
		return n;
	return fib(n - 1) + fib(n - 2);
}

COUNTED static unsigned long run(void)
{
	unsigned long v = 0;
	int i;

	for (i = 0; i < 3; i++)
		v = fib(20);
	return v;
}

COUNTED static int is_odd(unsigned n);

COUNTED static int is_even(unsigned n)
{
	n_even++;
	if (n == 0)
		return 1;
	return is_odd(n - 1);
}

COUNTED static int is_odd(unsigned n)
{
	n_odd++;
	if (n == 0)
		return 0;
	return is_even(n - 1);
}

int main(void)
{
	unsigned long v = run();
	int e = is_even(10), o = is_odd(7);

	printf("recursion: fib=%lu value=%lu even=%lu odd=%lu\n", n_fib, v, n_even, n_odd);
	return (v == 6765 && e == 1 && o == 1) ? 0 : 1;
}
