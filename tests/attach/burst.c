/* SPDX-License-Identifier: MIT */
/*
 * burst.c - a program to attach to that makes an exact number of calls
 * when told, so that an attach can be checked call by call.
 *
 * Usage: burst PIDFILE N [THREADS]   (THREADS workers besides main, default 2)
 *
 * main starts THREADS workers, writes its pid into PIDFILE, then waits
 * (polling every millisecond in uninstrumented code) for PIDFILE.go1,
 * PIDFILE.go2, ...  When PIDFILE.goK appears, main and every worker call
 * burst() once, which calls unit() N times; once all have, main creates
 * PIDFILE.doneK.  When PIDFILE.stop appears, everything stops, main prints
 * "burst: done rounds=K" and exits 0.  A program that cannot start its
 * threads exits 1.
 *
 * Calls of one round: burst 1 + THREADS, unit N * (1 + THREADS); call
 * paths main -> burst -> unit and worker -> burst -> unit.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif
#define QUIET __attribute__((no_instrument_function))

#define MAX_THREADS 32

static const char *pidfile;
static long ncalls;
static volatile int stop;
static int round_no;       /* the round main announced (release-stored) */
static int finished;       /* workers done with the current round */
static volatile unsigned long sink;

QUIET static void nap_ms(void)
{
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
}

QUIET static int exists(const char *what, int k)
{
	char p[4096];

	if (k)
		snprintf(p, sizeof p, "%s.%s%d", pidfile, what, k);
	else
		snprintf(p, sizeof p, "%s.%s", pidfile, what);
	return access(p, F_OK) == 0;
}

COUNTED static void unit(void)
{
	sink++;
}

COUNTED static void burst(void)
{
	for (long i = 0; i < ncalls; i++)
		unit();
}

COUNTED static void *worker(void *arg)
{
	int done = 0;

	(void)arg;
	while (!stop) {
		if (__atomic_load_n(&round_no, __ATOMIC_ACQUIRE) > done) {
			burst();
			done++;
			__atomic_add_fetch(&finished, 1, __ATOMIC_RELEASE);
		}
		nap_ms();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_THREADS];
	int nthreads = 2, i, k;
	char p[4096];
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: burst PIDFILE N [THREADS]\n");
		return 2;
	}
	pidfile = argv[1];
	ncalls = atol(argv[2]);
	if (argc > 3)
		nthreads = atoi(argv[3]);
	if (nthreads < 0 || nthreads > MAX_THREADS) {
		fprintf(stderr, "burst: 0 to %d threads\n", MAX_THREADS);
		return 2;
	}
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, worker, NULL)) {
			fprintf(stderr, "burst: cannot start a thread\n");
			return 1;
		}
	f = fopen(pidfile, "w");
	if (!f) {
		perror(pidfile);
		return 1;
	}
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	for (k = 1;; k++) {
		while (!exists("go", k) && !exists("stop", 0))
			nap_ms();
		if (exists("stop", 0))
			break;
		__atomic_store_n(&round_no, k, __ATOMIC_RELEASE);
		burst();
		while (__atomic_load_n(&finished, __ATOMIC_ACQUIRE) < k * nthreads)
			nap_ms();
		snprintf(p, sizeof p, "%s.done%d", pidfile, k);
		int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			perror(p);
			return 1;
		}
		close(fd);
	}
	stop = 1;
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	printf("burst: done rounds=%d\n", k - 1);
	return 0;
}
