/* SPDX-License-Identifier: MIT */
/*
 * sigcount.c - counts the SIGINTs it receives and exits cleanly after the
 * first (as a server's shutdown does), but only when told: the test needs
 * the time to see that no second SIGINT comes.
 *
 * Usage: sigcount STOPFILE
 *
 * Prints "sigcount: ready" (flushed) once its handler is in place, then
 * waits for a SIGINT; prints "sigcount: got" at the first, then waits for
 * STOPFILE to exist and prints "sigcount: sigint=N", N the SIGINTs it got,
 * and exits 0.  Counts: main 1, on_sigint N, wait_stop 1.
 */
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static volatile sig_atomic_t n_sigint;

COUNTED static void on_sigint(int sig)
{
	(void)sig;
	n_sigint++;
}

COUNTED static void wait_stop(const char *stop)
{
	struct timespec ms = {0, 1000000};

	/* polled, not a fixed wait: the test creates the file when it has
	 * seen what it needs */
	while (access(stop, F_OK) != 0)
		nanosleep(&ms, NULL);
}

int main(int argc, char **argv)
{
	struct sigaction sa = {0};
	sigset_t block, old;

	if (argc != 2) {
		fprintf(stderr, "usage: sigcount STOPFILE\n");
		return 2;
	}
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigdelset(&old, SIGINT);
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL);
	printf("sigcount: ready\n");
	fflush(stdout);
	while (!n_sigint)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
	printf("sigcount: got\n");
	fflush(stdout);
	wait_stop(argv[1]);
	printf("sigcount: sigint=%d\n", (int)n_sigint);
	return 0;
}
