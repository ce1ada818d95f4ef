/* SPDX-License-Identifier: MIT */
/* uselib.c - a program NOT built with -finstrument-functions whose shared
 * library libwork is (attach-lib): record --attach points the library's
 * hook slots.
 *
 * Usage: uselib PIDFILE SECONDS
 * Writes its pid, then calls lib_work() 100 times and sleeps 1 ms, until
 * the file PIDFILE.stop appears (the test is done with it) or at the
 * latest for SECONDS; prints "uselib: done calls=N" (lib_work calls) and
 * exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "libwork.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long calls = 0;
	struct timespec ms = {0, 1000000};
	double end;
	char stopfile[4096];
	FILE *f;
	int i;

	if (argc < 3)
		return 2;
	f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	snprintf(stopfile, sizeof stopfile, "%s.stop", argv[1]);
	end = now() + atof(argv[2]);
	while (now() < end && access(stopfile, F_OK) != 0) {
		for (i = 0; i < 100; i++, calls++)
			lib_work();
		nanosleep(&ms, NULL);
	}
	printf("uselib: done calls=%lu\n", calls);
	return 0;
}
