/* SPDX-License-Identifier: MIT */
/*
 * waitsig.c - runs until a signal comes (sent to cygprof, which forwards it).
 *
 * Usage: waitsig N          (default disposition: the signal kills it)
 *        waitsig N handle   (SIGINT and SIGTERM handled: exit status 42)
 *
 * main calls work() N times, prints "waitsig: work=N ready" (flushed: the
 * test waits for this line before it signals cygprof), then calls waiter(),
 * which blocks in sigsuspend() (not instrumented) until a signal arrives.
 * No instrumented call is made between the "ready" line and the signal, so
 * the counts are exact whenever the signal comes.
 *
 * Without "handle" the signal kills the process: SIGTERM gives end
 * "signal 15" and record exits 143. Expected counts:
 *   main    1
 *   work    N
 *   waiter  1
 * Expected arcs, and no others:
 *   main -> work    N
 *   main -> waiter  1
 *
 * With "handle": on_signal() runs once (called by the kernel while waiter is
 * the innermost instrumented frame), waiter returns, main prints
 * "waitsig: signal=S" and exits with status 42 (end "exit 42").
 * Expected counts: main 1, work N, waiter 1, on_signal 1; arcs as above plus
 *   waiter -> on_signal  1
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static unsigned n_work;
static volatile sig_atomic_t got_signal;
static volatile unsigned long sink;

COUNTED static void work(void)
{
	unsigned long i;

	n_work++;
	for (i = 0; i < 1000; i++)
		sink += i;
}

COUNTED static void on_signal(int sig)
{
	got_signal = sig;
}

COUNTED static void waiter(sigset_t *old)
{
	while (!got_signal)
		sigsuspend(old);
}

int main(int argc, char **argv)
{
	unsigned long n = 10, i;
	sigset_t block, old;

	if (argc > 1)
		n = strtoul(argv[1], NULL, 10);
	/* Block the signals until sigsuspend so none is missed. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigdelset(&old, SIGINT);
	sigdelset(&old, SIGTERM);
	if (argc > 2 && strcmp(argv[2], "handle") == 0) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	for (i = 0; i < n; i++)
		work();
	printf("waitsig: work=%u ready\n", n_work);
	fflush(stdout);
	waiter(&old);
	printf("waitsig: signal=%d\n", (int)got_signal);
	return 42;
}
