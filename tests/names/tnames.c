/* SPDX-License-Identifier: MIT */
/*
 * tnames.c - threads that name themselves after their first call, so that
 * the name a writer reads when it registers is the process's, not theirs.
 *
 * Usage: tnames STOPFILE
 *
 *   "worker-1"  calls work() once, names itself (pthread_setname_np), calls
 *               work() 10 times and ends; main joins it
 *   "early-2"   calls work() once, names itself with prctl(PR_SET_NAME)
 *               and ends at once, long before the collector's first
 *               checkpoint could see it named
 *   "runner-3"  calls work() once, names itself, calls work() 5 times and
 *               waits for ever: still running when main exits (its name
 *               is what the collector read while it ran)
 * main calls work() 2 times, then waits until STOPFILE exists (the test
 * creates it once a checkpoint shows "runner-3") and returns.
 *
 * Expected: work 20 (main 2, worker-1 11, early-2 1, runner-3 6), four
 * threads: main (the program's name), worker-1, early-2, runner-3.
 * Prints "tnames: work=20" before it returns; exit status 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif
#define PLAIN __attribute__((no_instrument_function))

static volatile unsigned long sink;
static unsigned long n_work;

COUNTED static void work(void)
{
	__atomic_fetch_add(&n_work, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 100; i++)
		sink += (unsigned long)i;
}

PLAIN static void *worker(void *arg)
{
	(void)arg;
	work();
	pthread_setname_np(pthread_self(), "worker-1");
	for (int i = 0; i < 10; i++)
		work();
	return NULL;
}

PLAIN static void *early(void *arg)
{
	(void)arg;
	work();
	prctl(PR_SET_NAME, "early-2", 0, 0, 0);
	return NULL;
}

static int runner_done;

PLAIN static void *runner(void *arg)
{
	(void)arg;
	work();
	pthread_setname_np(pthread_self(), "runner-3");
	for (int i = 0; i < 5; i++)
		work();
	__atomic_store_n(&runner_done, 1, __ATOMIC_RELEASE);
	for (;;)
		pause();
	return NULL;
}

PLAIN int main(int argc, char **argv)
{
	pthread_t w, e, r;

	if (argc != 2) {
		fprintf(stderr, "usage: tnames STOPFILE\n");
		return 2;
	}
	work();
	work();
	if (pthread_create(&w, NULL, worker, NULL) || pthread_create(&e, NULL, early, NULL) ||
	    pthread_create(&r, NULL, runner, NULL))
		return 1;
	pthread_join(w, NULL);
	pthread_join(e, NULL);
	while (!__atomic_load_n(&runner_done, __ATOMIC_ACQUIRE) || access(argv[1], F_OK)) {
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
	}
	printf("tnames: work=%lu\n", __atomic_load_n(&n_work, __ATOMIC_RELAXED));
	fflush(stdout);
	return 0;
}
