/* SPDX-License-Identifier: MIT */
/*
 * longrun.c - a program that runs for a few seconds and keeps calling.
 *
 * Usage: longrun PIDFILE [ROUNDS [K]]   (defaults 30 and 2000)
 *
 * main first writes its pid into PIDFILE (so that a test can find it even
 * though it is a child of cygprof), then runs ROUNDS rounds: each calls
 * round_() once, which calls work() K times, prints a heartbeat line
 * "longrun: round=R" (flushed) and sleeps 100 ms (nanosleep, not
 * instrumented). With the defaults it runs about 3 s.  It stops after
 * fewer rounds when the file PIDFILE.stop appears (a test that only needs
 * a running program tells it so; the counts below are for ROUNDS).
 *
 * Expected counts (one process, one thread):
 *   main    1
 *   round_  ROUNDS
 *   work    ROUNDS*K
 * Expected arcs, and no others:
 *   main   -> round_  ROUNDS
 *   round_ -> work    ROUNDS*K
 * Exit status 0. stdout: ROUNDS heartbeat lines, then
 * "longrun: done rounds=ROUNDS work=ROUNDS*K".
 *
 * The test of a collector that dies (record-collector-gone-O2) SIGKILLs
 * cygprof while this runs: the program must still run to the end and exit 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static unsigned long n_work, n_round, niter = 2000;
static volatile unsigned long sink;

COUNTED static void work(void)
{
	unsigned long i;

	n_work++;
	for (i = 0; i < 50; i++)
		sink += i;
}

COUNTED static void round_(void)
{
	struct timespec ts = {0, 100 * 1000 * 1000};
	unsigned long i;

	n_round++;
	for (i = 0; i < niter; i++)
		work();
	printf("longrun: round=%lu\n", n_round);
	fflush(stdout);
	while (nanosleep(&ts, &ts) != 0)
		;
}

int main(int argc, char **argv)
{
	unsigned long rounds = 30, r;
	char stopfile[4096];
	FILE *f;

	if (argc < 2)
		return 2;
	if (argc > 2)
		rounds = strtoul(argv[2], NULL, 10);
	if (argc > 3)
		niter = strtoul(argv[3], NULL, 10);
	f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "%ld\n", (long)getpid());
	fclose(f);
	snprintf(stopfile, sizeof stopfile, "%s.stop", argv[1]);
	for (r = 0; r < rounds && access(stopfile, F_OK) != 0; r++)
		round_();
	printf("longrun: done rounds=%lu work=%lu\n", n_round, n_work);
	return 0;
}
