/* SPDX-License-Identifier: MIT */
/*
 * memgrow.c - memory the counters can see: 64 MiB allocated and touched,
 * held, then freed; with an argument, a forked child does the same with
 * 16 MiB while the parent holds its 64 MiB.
 *
 * Usage: memgrow [fork]
 *
 * Timeline: sleep 30 ms; grow(): malloc 64 MiB and write every page; hold
 * 120 ms; [fork: the child mallocs and touches 16 MiB, holds it 80 ms,
 * frees it and exits 0; the parent waits for it]; free the 64 MiB; sleep
 * 30 ms; exit 0.  No other allocation (no stdio).
 *
 * Expected figures under `cygprof record -i counters,memory`:
 *   parent  statm/resident grows by about 64 MiB (tested: at least 63) between
 *           its lowest and highest sample; heap/live_bytes peaks at
 *           exactly 67108864 (= `cygprof memory` peak_bytes without fork)
 *   child   (fork) its own statm, stat/cpu_time and heap counters under
 *           its pid, sampled only while it lived; heap/live_bytes peaks at
 *           exactly 16777216
 * Expected counts: main 1, grow 1 (2 with fork: the child's), hold 1 (2).
 * Exit status 0, nothing on stdout.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

#define MIB (1024 * 1024)

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts))
		;
}

static COUNTED char *grow(size_t bytes)
{
	char *p = malloc(bytes);

	if (!p)
		_exit(3);
	for (size_t i = 0; i < bytes; i += 4096)
		p[i] = (char)i;
	return p;
}

static COUNTED void hold(long ms)
{
	sleep_ms(ms);
}

int main(int argc, char **argv)
{
	char *big;

	sleep_ms(30);
	big = grow(64 * MIB);
	hold(120);
	if (argc > 1 && !strcmp(argv[1], "fork")) {
		pid_t pid = fork();
		int st;

		if (pid < 0)
			return 4;
		if (pid == 0) {
			char *c = grow(16 * MIB);

			hold(80);
			free(c);
			_exit(0);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 5;
	}
	free(big);
	sleep_ms(30);
	return 0;
}
