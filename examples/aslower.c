/* SPDX-License-Identifier: MIT */
/*
 * aslower.c - a program that lowers its own address-space limit, then
 * starts threads.
 *
 * Usage: aslower MIB [THREADS [N]]   (THREADS defaults to 8, N to 10000)
 *
 * main calls setrlimit(RLIMIT_AS) with MIB MiB (soft and hard limit: it
 * may not raise it again), then starts THREADS threads (8 MiB of stack
 * each, the default), each calling work() N times; main joins them.
 * Alone it runs under 256 MiB with 8 threads; so must it under
 * `cygprof record`, whose mapping is not counted whole against the limit
 * (docs/DESIGN.md, "The mapping in the program").  A pthread_create that
 * fails is reported and ends the program with status 1.
 *
 * Expected counts (one process, 1 + THREADS threads):
 *   main 1, worker THREADS, work THREADS*N
 * Arcs: main -> worker none (a thread's start has no caller),
 *       worker -> work THREADS*N.
 * Exit status 0; stdout: "aslower: limit=MIB MiB threads=THREADS work=<THREADS*N>".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

#define MAX_THREADS 64

static unsigned long n_work, niter = 10000;
static volatile unsigned long sink;

COUNTED static void work(void)
{
	__atomic_fetch_add(&n_work, 1, __ATOMIC_RELAXED);
	sink++;
}

COUNTED static void *worker(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < niter; i++)
		work();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_THREADS];
	struct rlimit rl;
	int nthreads = 8, i, r;
	unsigned long mib;

	if (argc < 2) {
		fprintf(stderr, "usage: aslower MIB [THREADS [N]]\n");
		return 2;
	}
	mib = strtoul(argv[1], NULL, 10);
	if (argc > 2)
		nthreads = atoi(argv[2]);
	if (argc > 3)
		niter = strtoul(argv[3], NULL, 10);
	if (!mib || nthreads < 1 || nthreads > MAX_THREADS) {
		fprintf(stderr, "aslower: MIB > 0 and 1 to %d threads\n", MAX_THREADS);
		return 2;
	}
	rl.rlim_cur = rl.rlim_max = (rlim_t)mib << 20;
	if (setrlimit(RLIMIT_AS, &rl)) {
		perror("aslower: setrlimit");
		return 1;
	}
	for (i = 0; i < nthreads; i++) {
		r = pthread_create(&th[i], NULL, worker, NULL);
		if (r) {
			fprintf(stderr, "aslower: pthread_create of thread %d under %lu MiB: %s\n",
				i + 1, mib, strerror(r));
			return 1;
		}
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	printf("aslower: limit=%lu MiB threads=%d work=%lu\n", mib, nthreads, n_work);
	return 0;
}
