/* SPDX-License-Identifier: MIT */
/* memdump-cost.c - ns per call of the memory-dump API, against an empty loop
 * in the same process (bench.py's memdump section).
 *
 * Usage: memdump-cost [N]   (N calls per loop, default 20000000; bench.py
 * builds it with -finstrument-functions: main is the one instrumented call)
 * Prints "<loop> <ns per iteration>" for: empty, delta, total, needs.
 *
 * Built with -DFAKE_TABLE (and -rdynamic) it defines cyg__memdump_table()
 * itself, returning a table of its own: the library then takes the path it
 * takes under `cygprof record --memdump` (the table in the program's memory
 * instead of the shared mapping).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cygprof/memdump.h>

#ifdef FAKE_TABLE
#include "cyg-shm.h"
static struct cyg_memdump fake = {.nslots = CYG_MEMDUMP_SLOTS, .interval_ms = 10};
struct cyg_memdump *cyg__memdump_table(void);
__attribute__((visibility("default"))) struct cyg_memdump *cyg__memdump_table(void)
{
	return &fake;
}
#endif

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define LOOP(label, body)                                                                          \
	do {                                                                                       \
		double t0 = now();                                                                 \
		for (long i = 0; i < n; i++) {                                                     \
			body;                                                                      \
			__asm__ volatile("" : : "r"(i) : "memory");                                \
		}                                                                                  \
		printf("%s %.3f\n", label, (now() - t0) / (double)n);                              \
	} while (0)

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000000L;
	int sink = 0;

	cygprof_memdump_report_byte_delta("Bench", 0); /* the first call looks the table up */
	LOOP("empty", (void)0);
	LOOP("delta", cygprof_memdump_report_byte_delta("Bench", 1));
	LOOP("total", cygprof_memdump_report_byte_total("Bench", (uint64_t)i));
	LOOP("needs", sink += cygprof_memdump_needs_report("Bench"));
	return sink == -1;
}
