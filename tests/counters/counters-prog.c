/* SPDX-License-Identifier: MIT */
/*
 * counters-prog.c - a program for `record --counters` (tests/counters/counters.py).
 *
 * Usage: counters-prog [MS]
 *
 * Prints "counters-prog: pid=PID", waits 250 ms (the collector, slowed
 * down by a sanitizer on a busy machine, may first see the process late),
 * touches 32 MiB (its
 * resident size grows by that) and holds it 150 ms (several counter ticks
 * even when the collector is slowed down: a sanitized build on a busy
 * machine), forks a child that touches 8 MiB and lives about 60 ms, prints
 * "counters-prog: child=PID", waits for it, then waits MS ms (default 60)
 * and ends: about 520 ms in all by default.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static char *touch(size_t n)
{
	char *p = malloc(n);

	if (p)
		memset(p, 1, n);
	return p;
}

int main(int argc, char **argv)
{
	long end_ms = argc > 1 ? atol(argv[1]) : 60;
	char *big, *small;
	pid_t pid;
	int st;

	printf("counters-prog: pid=%d\n", (int)getpid());
	fflush(stdout);
	pause_ms(250);
	big = touch((size_t)32 << 20);
	pause_ms(150);
	pid = fork();
	if (pid == 0) {
		small = touch((size_t)8 << 20);
		pause_ms(60);
		free(small);
		_exit(0);
	}
	printf("counters-prog: child=%d\n", (int)pid);
	fflush(stdout);
	waitpid(pid, &st, 0);
	pause_ms(end_ms);
	free(big);
	return 0;
}
