/* SPDX-License-Identifier: MIT */
/*
 * attachme.c - a long-running multithreaded program to attach to
 * (cygprof record --attach PID, docs/attach.md), which counts its own calls.
 *
 * Usage: attachme PIDFILE COUNTFILE [SECONDS [THREADS]]   (defaults 60 and 3)
 *
 * main starts THREADS threads running worker(), writes its pid into
 * PIDFILE, then every 20 ms appends a line "MONO_NS WORK LATE" to COUNTFILE
 * (flushed): CLOCK_MONOTONIC in ns and the calls of work() and of
 * late_work() made so far, so that a test can compare what an attach saw
 * with what the program did over the same time.  Each worker runs rounds:
 * round_() calls work() 200 times, then the worker sleeps 1 ms (nanosleep,
 * not instrumented).  When the file COUNTFILE.late appears, main starts
 * one more thread, late_worker(), which calls late_work() 100 times a
 * round the same way (a thread created while attached).  When the file
 * COUNTFILE.stop appears (the test is done with it), or at the latest
 * after SECONDS, everything stops; main prints "attachme: done work=N
 * late=M" and exits 0.
 *
 * Call paths (every call is made on one of them):
 *   main -> tick            (once per 20 ms line)
 *   worker -> round_ -> work
 *   late_worker -> late_work
 */
#define _GNU_SOURCE
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

#define MAX_THREADS 64
#define ROUND_CALLS 200
#define LATE_CALLS 100

/* each thread's own counter, on its own cache line */
static struct {
	unsigned long n;
	char pad[56];
} counts[MAX_THREADS + 1];
static volatile int stop;
static volatile unsigned long sink;

__attribute__((no_instrument_function)) static void nap_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

COUNTED static void work(unsigned long *n)
{
	unsigned long i;

	__atomic_store_n(n, *n + 1, __ATOMIC_RELAXED);
	for (i = 0; i < 20; i++)
		sink += i;
}

COUNTED static void round_(unsigned long *n)
{
	int i;

	for (i = 0; i < ROUND_CALLS; i++)
		work(n);
}

COUNTED static void *worker(void *arg)
{
	unsigned long *n = arg;

	while (!stop) {
		round_(n);
		nap_us(1000);
	}
	return NULL;
}

COUNTED static void late_work(unsigned long *n)
{
	unsigned long i;

	__atomic_store_n(n, *n + 1, __ATOMIC_RELAXED);
	for (i = 0; i < 20; i++)
		sink += i;
}

COUNTED static void *late_worker(void *arg)
{
	unsigned long *n = arg;
	int i;

	while (!stop) {
		for (i = 0; i < LATE_CALLS; i++)
			late_work(n);
		nap_us(1000);
	}
	return NULL;
}

/* main's call per tick: its thread is seen while attached too */
COUNTED static void tick(void)
{
	sink++;
}

static unsigned long long mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_THREADS], late;
	int nthreads = 3, i, have_late = 0;
	double seconds = 60;
	char latefile[4096], stopfile[4096];
	unsigned long long end;
	FILE *f, *cf;

	if (argc < 3) {
		fprintf(stderr, "usage: attachme PIDFILE COUNTFILE [SECONDS [THREADS]]\n");
		return 2;
	}
	if (argc > 3)
		seconds = atof(argv[3]);
	if (argc > 4)
		nthreads = atoi(argv[4]);
	if (nthreads < 1 || nthreads > MAX_THREADS) {
		fprintf(stderr, "attachme: 1 to %d threads\n", MAX_THREADS);
		return 2;
	}
	snprintf(latefile, sizeof latefile, "%s.late", argv[2]);
	snprintf(stopfile, sizeof stopfile, "%s.stop", argv[2]);
	cf = fopen(argv[2], "w");
	if (!cf) {
		perror(argv[2]);
		return 1;
	}
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, worker, &counts[i].n)) {
			fprintf(stderr, "attachme: cannot start a thread\n");
			return 1;
		}
	f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	end = mono_ns() + (unsigned long long)(seconds * 1e9);
	for (;;) {
		unsigned long long now = mono_ns();
		unsigned long sum = 0;
		tick();
		for (i = 0; i < nthreads; i++)
			sum += __atomic_load_n(&counts[i].n, __ATOMIC_RELAXED);
		fprintf(cf, "%llu %lu %lu\n", now, sum,
			__atomic_load_n(&counts[MAX_THREADS].n, __ATOMIC_RELAXED));
		fflush(cf);
		if (now >= end || access(stopfile, F_OK) == 0)
			break;
		if (!have_late && access(latefile, F_OK) == 0) {
			if (pthread_create(&late, NULL, late_worker, &counts[MAX_THREADS].n) == 0)
				have_late = 1;
		}
		nap_us(20000);
	}
	stop = 1;
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	if (have_late)
		pthread_join(late, NULL);
	fclose(cf);
	unsigned long sum = 0;
	for (i = 0; i < nthreads; i++)
		sum += counts[i].n;
	printf("attachme: done work=%lu late=%lu\n", sum, counts[MAX_THREADS].n);
	return 0;
}
