/* SPDX-License-Identifier: MIT */
/*
 * manythreads.c - many short-lived threads, started in waves.
 *
 * Usage: manythreads T W K   (defaults 200 20 50)
 *
 * main starts T threads in waves of W: it creates the W threads of a wave,
 * joins them all, then starts the next wave (T must be a multiple of W).
 * The threads of a wave meet at a barrier (pthread_barrier_wait, not
 * instrumented) before they work, so W threads are alive at once. Each
 * thread runs worker(), which calls work() K times and returns.
 *
 * Expected (one process, T + 1 threads, all ending by themselves):
 *   main    1
 *   worker  T
 *   work    T*K
 * Expected arcs (worker is a thread start routine: no instrumented caller):
 *   worker -> work  T*K
 * Exit status 0. stdout: "manythreads: threads=T wave=W work=T*K".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static unsigned long n_work, niter = 50;
static pthread_barrier_t barrier;
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
	pthread_barrier_wait(&barrier);
	for (i = 0; i < niter; i++)
		work();
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long total = 200, wave = 20, started = 0, i;
	pthread_t *tids;

	if (argc > 1)
		total = strtoul(argv[1], NULL, 10);
	if (argc > 2)
		wave = strtoul(argv[2], NULL, 10);
	if (argc > 3)
		niter = strtoul(argv[3], NULL, 10);
	if (wave == 0 || total % wave != 0)
		return 2;
	tids = calloc(wave, sizeof(*tids));
	if (!tids || pthread_barrier_init(&barrier, NULL, (unsigned)wave))
		return 1;
	while (started < total) {
		for (i = 0; i < wave; i++)
			if (pthread_create(&tids[i], NULL, worker, NULL))
				return 1;
		for (i = 0; i < wave; i++)
			pthread_join(tids[i], NULL);
		started += wave;
	}
	pthread_barrier_destroy(&barrier);
	free(tids);
	printf("manythreads: threads=%lu wave=%lu work=%lu\n", started, wave, n_work);
	return 0;
}
