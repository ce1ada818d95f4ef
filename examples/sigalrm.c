/* SPDX-License-Identifier: MIT */
/*
 * sigalrm.c - a signal handler that calls instrumented functions and
 * allocates, interrupting the program 20,000 times a second (so, most of
 * the time, inside a hook of cygprof's runtime).
 *
 * Usage: sigalrm [TICKS]   (default 4000)
 *
 * A 50 us interval timer (setitimer ITIMER_REAL) sends SIGALRM.  The
 * handler calls on_tick(), which calls tick_work() and allocates and frees
 * one 32-byte block.  Meanwhile main calls work() in a loop until TICKS
 * signals have been handled; work() calls leaf() twice.  The numbers of
 * ticks and of work() calls depend on timing: the program prints them.
 * main itself allocates nothing until the signal is blocked (malloc is not
 * async-signal-safe: a handler's malloc must not interrupt main's).
 *
 * Expected counts (one process; the handler's calls may be recorded in a
 * writer of their own, a thread record flagged "signal" with main's tid):
 *   main        1
 *   handler     T   (T = ticks printed)
 *   on_tick     T
 *   tick_work   T
 *   work        W   (W = work calls printed)
 *   leaf        2W
 * Allocations (with --memory): on_tick T blocks of 32 bytes, all freed.
 * Exit status 0. stdout: "sigalrm: ticks=T work=W".
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static volatile sig_atomic_t ticks;
static volatile unsigned long sink;
static void *volatile keep; /* the blocks escape: the allocations stay */
static unsigned long n_work;

COUNTED static void tick_work(void)
{
	sink++;
}

COUNTED static void on_tick(void)
{
	char *p = malloc(32);
	keep = p;
	tick_work();
	free(p);
}

static void handler(int sig)
{
	(void)sig;
	on_tick();
	ticks++;
}

COUNTED static void leaf(void)
{
	sink++;
}

COUNTED static void work(void)
{
	leaf();
	leaf();
}

int main(int argc, char **argv)
{
	long want = argc > 1 ? atol(argv[1]) : 4000;
	struct sigaction sa;
	struct itimerval it = {{0, 50}, {0, 50}}, off = {{0, 0}, {0, 0}};

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	while (ticks < want) {
		work();
		n_work++;
	}
	setitimer(ITIMER_REAL, &off, NULL);
	/* block the signal before reading the counts: none may come after */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("sigalrm: ticks=%ld work=%lu\n", (long)ticks, n_work);
	return 0;
}
