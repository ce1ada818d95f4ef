/* SPDX-License-Identifier: MIT */
/* latency-prog.c - one function called with known durations, for the
 * latency histograms: `latency-prog [SHORT_NS LONG_NS]` calls work() 1000
 * times, every tenth call busy for LONG_NS (default 100000: 100 us), the
 * others for SHORT_NS (default 1000: 1 us), so that work() has exactly
 * 1000 calls, its p50 is a short call and its p99 a long one (the 990th of
 * 1000 sorted durations is one of the 100 long ones).  The clock is read
 * by an uninstrumented helper: work() calls no instrumented function, its
 * durations are its own. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

__attribute__((no_instrument_function)) static uint64_t now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

void work(uint64_t ns);

__attribute__((noinline)) void work(uint64_t ns)
{
	uint64_t end = now() + ns;

	while (now() < end)
		;
}

int main(int argc, char **argv)
{
	uint64_t short_ns = argc > 2 ? strtoull(argv[1], NULL, 10) : 1000;
	uint64_t long_ns = argc > 2 ? strtoull(argv[2], NULL, 10) : 100000;

	for (int i = 0; i < 1000; i++)
		work(i % 10 == 9 ? long_ns : short_ns);
	return 0;
}
