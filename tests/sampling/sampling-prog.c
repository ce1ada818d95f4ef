/* SPDX-License-Identifier: MIT */
/* sampling-prog.c - the program of tests/sampling/sampling.py (record --sample).
 *
 * Built twice: without -finstrument-functions (sampling-prog-plain) and
 * with it (sampling-prog-cyg).  Prints "sampling-prog: spin=ADDR nap=ADDR"
 * (the run-time addresses, so the test can place sample IPs with nm -S on a
 * position-independent binary), then:
 *   no argument   spin() computes for SPIN_MS of wall time, then nap()
 *                 sleeps NAP_MS;
 *   threads       two threads spin() for SPIN_MS / 2 each while main
 *                 nap()s, then a forked child spin()s for SPIN_MS / 3;
 *                 prints "sampling-prog: tid=T" per thread and
 *                 "sampling-prog: child=PID";
 *   libc          fill() spends FILL_MS in libc's memset (not instrumented)
 *                 on a 4 MiB buffer, then returns. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SPIN_MS 300
#define NAP_MS 200
#define FILL_MS 250

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

volatile double sink;
void spin(double ms);
void nap(int ms);

__attribute__((noinline)) void spin(double ms)
{
	double t0 = now_ms(), x = 0;

	while (now_ms() - t0 < ms)
		for (int i = 0; i < 20000; i++)
			x += i * 0.5;
	sink = x;
}

__attribute__((noinline)) void nap(int ms)
{
	usleep((useconds_t)ms * 1000);
}

static char buf[4 << 20];
void fill(int ms);

__attribute__((noinline)) void fill(int ms)
{
	double t0 = now_ms();
	int k = 0;

	while (now_ms() - t0 < ms)
		memset(buf, k++, sizeof buf);
	sink = buf[k % sizeof buf];
}

static void *worker(void *arg)
{
	(void)arg;
	printf("sampling-prog: tid=%d\n", gettid());
	fflush(stdout);
	spin(SPIN_MS / 2);
	return NULL;
}

int main(int argc, char **argv)
{
	printf("sampling-prog: spin=%p nap=%p\n", (void *)spin, (void *)nap);
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "threads")) {
		pthread_t t[2];
		for (int i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, worker, NULL);
		nap(NAP_MS / 4);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		pid_t pid = fork();
		if (pid == 0) {
			spin(SPIN_MS / 3);
			_exit(0);
		}
		printf("sampling-prog: child=%d\n", pid);
		fflush(stdout);
		waitpid(pid, NULL, 0);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "libc")) {
		fill(FILL_MS);
		return 0;
	}
	spin(SPIN_MS);
	nap(NAP_MS);
	return 0;
}
