/* fib.c - the cheapest possible calls: naive recursive fib, nothing else.
 *
 * Usage: fib [n [rounds]]   (default n = 32, rounds = 11)
 *
 * Each call of fib() does one compare and one add besides its two calls, so
 * a run is almost nothing but calls and returns: the workload on which the
 * hooks' own cost shows most (issue 19: "a program of 78 M tiny calls").
 * fib is noipa (no inlining, cloning or IPA), so every call is a real call
 * through the instrumentation hooks.  main() counts the calls of fib with a
 * counter and checks them against the closed form rounds * (2 F(n+1) - 1);
 * it prints the count and exits 3 on a mismatch.
 *
 * Defaults: 11 * (2 * F(33) - 1) = 11 * 7,049,155 = 77,540,705 calls of fib.
 */
#include <stdio.h>
#include <stdlib.h>

#define NOIPA __attribute__((noipa))

static unsigned long n_fib;

NOIPA unsigned long fib(unsigned n)
{
	n_fib++;
	if (n < 2)
		return n;
	unsigned long a = fib(n - 1);
	unsigned long b = fib(n - 2);
	/* keep both calls real calls (no accumulator tail recursion) */
	__asm__ volatile("" : "+r"(a), "+r"(b));
	return a + b;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 32;
	unsigned rounds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 11;
	unsigned long r = 0, f0 = 0, f1 = 1;

	for (unsigned i = 0; i < rounds; i++)
		r += fib(n);
	/* F(n + 1) */
	for (unsigned i = 0; i < n + 1; i++) {
		unsigned long t = f0 + f1;
		f0 = f1;
		f1 = t;
	}
	unsigned long want = (unsigned long)rounds * (2 * f0 - 1);
	printf("fib calls %lu (expected %lu), result %lu\n", n_fib, want, r);
	return n_fib == want ? 0 : 3;
}
