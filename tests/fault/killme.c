/* SPDX-License-Identifier: MIT */
/*
 * killme.c - the program of the kill-anywhere tests (fault/kill.py): two
 * threads that call top() -> mid() -> leaf() and allocate, and print their
 * progress with the time, so that a test can say what a capture cut off at
 * a given moment must hold.
 *
 * Usage: killme MS [K [US [STOP]]]   (K defaults to 500, US to 0)
 *
 * main starts a second thread; both run rounds until MS milliseconds have
 * passed since main started, or until the file STOP exists (looked for
 * after every round).  A round calls top() K times; top() calls
 * mid(), mid() calls leaf(), leaf() mallocs 16 + 8*(i % 8) bytes and frees
 * them.  After each round the thread prints (one write, flushed)
 *
 *   killme: thread=T round=R mono_ns=NS
 *
 * and sleeps US microseconds (nanosleep, not instrumented).
 * T is 0 (main) or 1, R counts the thread's rounds from 1 and NS is
 * CLOCK_MONOTONIC when the round ended.  A capture whose checkpoint was
 * stamped at time S holds, per thread, at least K * (the rounds printed
 * with NS < S) calls of each of top, mid and leaf, and every printed round
 * ended before the next one's calls: at most K * (rounds printed + 1)
 * calls per thread.  At the end main prints
 *
 *   killme: done rounds=R0+R1 calls=K*(R0+R1)
 *
 * and exits 0.  Expected counts: top, mid, leaf K*(R0+R1) each; main 1,
 * worker 1.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static unsigned long k = 500, pause_us;
static uint64_t t0, until_ns;
static const char *stop;
static volatile unsigned long sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

COUNTED static void leaf(unsigned long i)
{
	char *p = malloc(16 + 8 * (i % 8));

	if (p) {
		p[0] = (char)i;
		sink += (unsigned char)p[0];
	}
	free(p);
}

COUNTED static void mid(unsigned long i)
{
	leaf(i);
}

COUNTED static void top(unsigned long i)
{
	mid(i);
}

static unsigned long rounds(int t)
{
	unsigned long r = 0;
	char line[128];

	while (now_ns() - t0 < until_ns && !(stop && access(stop, F_OK) == 0)) {
		for (unsigned long i = 0; i < k; i++)
			top(i);
		r++;
		int n = snprintf(line, sizeof line, "killme: thread=%d round=%lu mono_ns=%llu\n", t,
				 r, (unsigned long long)now_ns());
		/* one write: the lines of the two threads never mix */
		if (write(1, line, (size_t)n) != n)
			exit(3);
		if (pause_us) {
			struct timespec ts = {(time_t)(pause_us / 1000000), (long)(pause_us % 1000000) * 1000};
			nanosleep(&ts, NULL);
		}
	}
	return r;
}

COUNTED static void *worker(void *arg)
{
	(void)arg;
	return (void *)(uintptr_t)rounds(1);
}

int main(int argc, char **argv)
{
	pthread_t th;
	void *r1;

	if (argc < 2 || argc > 5) {
		fprintf(stderr, "usage: killme MS [K [US [STOP]]]\n");
		return 2;
	}
	t0 = now_ns();
	until_ns = strtoull(argv[1], NULL, 10) * 1000000ULL;
	if (argc > 2)
		k = strtoul(argv[2], NULL, 10);
	if (argc > 3)
		pause_us = strtoul(argv[3], NULL, 10);
	if (argc > 4)
		stop = argv[4];
	if (pthread_create(&th, NULL, worker, NULL))
		return 1;
	unsigned long r0 = rounds(0);
	pthread_join(th, &r1);
	unsigned long r = r0 + (unsigned long)(uintptr_t)r1;
	printf("killme: done rounds=%lu calls=%lu\n", r, r * k);
	return 0;
}
