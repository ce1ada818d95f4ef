/* SPDX-License-Identifier: MIT */
/* cpu-idle.c - threads blocked for the whole run, then exit() (tests/cputime).
 *
 *   cpu-idle K
 *
 * Two threads start and block: idle_cond() in pthread_cond_wait() on a
 * condition nobody signals, idle_poll() in poll() on no descriptor with no
 * timeout.  Once both are blocked (each says so through a semaphore before
 * it blocks; main then waits until /proc shows them sleeping), main calls
 * work(), which spins K units (100000000: some 0.2 s here), and then
 * exit(0) with both threads still blocked: their time is blocked time, not
 * work.  Calls: main 1, work 1, idle_cond 1, idle_poll 1 (never returning). */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile unsigned long sink;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t started;
static volatile pid_t tids[2];

__attribute__((noinline)) void *idle_cond(void *arg)
{
	(void)arg;
	tids[0] = (pid_t)syscall(SYS_gettid);
	pthread_mutex_lock(&mu);
	sem_post(&started);
	for (;;)
		pthread_cond_wait(&cv, &mu);
	return NULL;
}

__attribute__((noinline)) void *idle_poll(void *arg)
{
	(void)arg;
	tids[1] = (pid_t)syscall(SYS_gettid);
	sem_post(&started);
	for (;;)
		poll(NULL, 0, -1);
	return NULL;
}

/* Whether thread tid of this process sleeps (state S). */
static int sleeping(pid_t tid)
{
	char path[64], buf[512];
	FILE *f;
	int s = 0;

	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof buf, f)) {
		char *p = strrchr(buf, ')');
		s = p && p[1] == ' ' && p[2] == 'S';
	}
	fclose(f);
	return s;
}

__attribute__((noinline)) void work(unsigned long k)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < k; i++)
		x = x * 6364136223846793005UL + i;
	sink = x;
}

int main(int argc, char **argv)
{
	pthread_t a, b;

	if (argc != 2 || sem_init(&started, 0, 0))
		return 2;
	if (pthread_create(&a, NULL, idle_cond, NULL) || pthread_create(&b, NULL, idle_poll, NULL))
		return 1;
	sem_wait(&started);
	sem_wait(&started);
	while (!sleeping(tids[0]) || !sleeping(tids[1]))
		sched_yield();
	work(strtoul(argv[1], NULL, 10));
	printf("sink=%lu\n", (unsigned long)(sink & 1));
	fflush(stdout);
	exit(0);
}
