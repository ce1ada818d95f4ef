/* SPDX-License-Identifier: MIT */
/*
 * names-prog.c - a program whose names hold control characters, for
 * tests/names/names.py: run from a path whose name holds a newline and an
 * ESC, with such arguments, it starts one thread that names itself
 * "w\tk\x1bz" (pthread_setname_np, before its first instrumented call:
 * the runtime reads the name there).
 *
 * Usage: names-prog ARGS...   (the arguments are only carried)
 *
 * Expected counts (one process, 2 threads):
 *   main     1
 *   worker   1 (the named thread's first instrumented call)
 *   work     5 (2 in main, 3 in worker)
 * Exit status 0; stdout "names-prog: work=5".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>

#define NOINSTR __attribute__((no_instrument_function))

static volatile int calls;

static __attribute__((noinline)) void work(void)
{
	calls++;
}

static __attribute__((noinline)) void worker(void)
{
	for (int i = 0; i < 3; i++)
		work();
}

/* Not instrumented: the thread is named before the runtime sees it. */
static NOINSTR void *start(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "w\tk\x1bz");
	worker();
	return NULL;
}

int main(void)
{
	pthread_t th;

	work();
	if (pthread_create(&th, NULL, start, NULL))
		return 1;
	pthread_join(th, NULL);
	work();
	printf("names-prog: work=%d\n", calls);
	return 0;
}
