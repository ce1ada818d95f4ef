/* SPDX-License-Identifier: MIT */
/*
 * asthreads.c - four threads under a small address-space limit.
 *
 * Usage: asthreads [N]   (N defaults to 1000)
 *
 * Meant to run under `ulimit -v 262144` (RLIMIT_AS of 256 MB), where it
 * works without cygprof: its four threads take 4 x 8 MB of stack at most.
 * main starts 4 threads with pthread_create; each calls work() N times;
 * main joins them.  A pthread_create that fails is counted, not retried.
 *
 * Expected counts (one process, 5 threads):
 *   main 1, worker 4, work 4*N
 * Arcs: worker -> work 4*N.
 * Exit status 0 when all four threads were created, else 1.
 * stdout: "asthreads: created=4 failed=0 work=<4N>".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static unsigned long n_work, niter = 1000;
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

COUNTED int main(int argc, char **argv)
{
	pthread_t th[4];
	int ok[4], created = 0, failed = 0, i;

	if (argc > 1)
		niter = strtoul(argv[1], NULL, 10);
	for (i = 0; i < 4; i++) {
		ok[i] = pthread_create(&th[i], NULL, worker, NULL) == 0;
		created += ok[i];
		failed += !ok[i];
	}
	for (i = 0; i < 4; i++)
		if (ok[i])
			pthread_join(th[i], NULL);
	printf("asthreads: created=%d failed=%d work=%lu\n", created, failed, n_work);
	return failed ? 1 : 0;
}
