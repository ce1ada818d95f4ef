/* SPDX-License-Identifier: MIT */
/*
 * threads.c - several threads, and a thread that ends with pthread_exit.
 *
 * Usage: threads [N]   (N defaults to 1000)
 *
 * main starts 4 worker threads; each worker calls work() N times. main also
 * starts one "exiter" thread that calls exit_l1 -> exit_l2 -> exit_l3, and
 * exit_l3 calls pthread_exit() from depth 3 (so exit_l1..3 and exiter never
 * return). main joins all 5 threads, then calls after_join() once, which
 * calls work() once more.
 *
 * Expected counts (one process, 6 threads):
 *   main         1
 *   worker       4
 *   work         4*N + 1
 *   exiter       1
 *   exit_l1      1
 *   exit_l2      1
 *   exit_l3      1
 *   after_join   1
 * Expected arcs (thread start routines have no instrumented caller):
 *   worker     -> work        4*N
 *   exiter     -> exit_l1     1
 *   exit_l1    -> exit_l2     1
 *   exit_l2    -> exit_l3     1
 *   main       -> after_join  1
 *   after_join -> work        1
 * Exit status 0. stdout: "threads: work=<4N+1> exited=1".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

#define NWORKERS 4

static unsigned long n_work;
static unsigned long niter = 1000;
static volatile unsigned long sink;

COUNTED static void work(void)
{
	unsigned long i;

	__atomic_fetch_add(&n_work, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 100; i++)
		sink += i;
}

COUNTED static void *worker(void *arg)
{
	unsigned long i;

	(void)arg;
	for (i = 0; i < niter; i++)
		work();
	return NULL;
}

COUNTED static void exit_l3(void)
{
	pthread_exit((void *)42);
}

COUNTED static void exit_l2(void)
{
	exit_l3();
	sink++; /* not reached */
}

COUNTED static void exit_l1(void)
{
	exit_l2();
	sink++; /* not reached */
}

COUNTED static void *exiter(void *arg)
{
	(void)arg;
	exit_l1();
	return NULL; /* not reached */
}

COUNTED static void after_join(void)
{
	work();
}

int main(int argc, char **argv)
{
	pthread_t tids[NWORKERS], ex;
	void *ret = NULL;
	int i;

	if (argc > 1)
		niter = strtoul(argv[1], NULL, 10);
	for (i = 0; i < NWORKERS; i++)
		if (pthread_create(&tids[i], NULL, worker, NULL))
			return 1;
	if (pthread_create(&ex, NULL, exiter, NULL))
		return 1;
	for (i = 0; i < NWORKERS; i++)
		pthread_join(tids[i], NULL);
	pthread_join(ex, &ret);
	after_join();
	printf("threads: work=%lu exited=%d\n", n_work, ret == (void *)42);
	return 0;
}
