/* SPDX-License-Identifier: MIT */
/* cpu-restart.c - a program's blocking calls and signals behave as without
 * cygprof while CPU samples fire (tests/cputime).
 *
 *   cpu-restart ROUNDS
 *
 * Each round spins about 2 ms (so that samples fire), then blocks in
 * epoll_wait() (timeout 0, then 2 ms), nanosleep() (1 ms), poll() and
 * select() (1 ms each), read() on a pipe that its thread feeder() writes to
 * 1 ms later, and sigwait() for a SIGUSR2 it raised while blocking it; its
 * own SIGUSR1 handler runs for a raise(SIGUSR1).  None of them may fail,
 * return early or with EINTR.  It also checks what it reads back of the
 * samples' signal (SIGRTMAX - 2): a mask it blocked shows it blocked (and
 * unblocked, unblocked), and its own handler for it is the one sigaction()
 * returns, and runs for a raise().  Prints "ok ROUNDS" and exits 0; on any
 * failure a line saying which, exit 1.  Calls: main 1, round ROUNDS,
 * busy ROUNDS, feeder 1 (its thread). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile sig_atomic_t usr1, rt;
static int pipefd[2];
static sem_t go;

#define FAIL(...) do { printf(__VA_ARGS__); printf("\n"); exit(1); } while (0)

static void on_usr1(int sig)
{
	(void)sig;
	usr1++;
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code == SI_TKILL || si->si_code == SI_USER)
		rt++;
}

__attribute__((noinline)) void busy(void)
{
	struct timespec t0, t;
	unsigned long x = sink;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005UL + 1;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 2000000L);
	sink = x;
}

__attribute__((noinline)) void *feeder(void *arg)
{
	struct timespec ms = {0, 1000000};

	(void)arg;
	for (;;) {
		while (sem_wait(&go) && errno == EINTR)
			;
		nanosleep(&ms, NULL);
		if (write(pipefd[1], "x", 1) != 1)
			FAIL("feeder: write: %s", strerror(errno));
	}
	return NULL;
}

__attribute__((noinline)) void round_(int ep, int r)
{
	struct epoll_event ev;
	struct timespec ms = {0, 1000000};
	struct timeval tv = {0, 1000};
	sigset_t usr2;
	int n, sig;
	char c;

	busy();
	if ((n = epoll_wait(ep, &ev, 1, 0)) != 0)
		FAIL("round %d: epoll_wait(0) = %d (%s)", r, n, strerror(errno));
	busy();
	if ((n = epoll_wait(ep, &ev, 1, 2)) != 0)
		FAIL("round %d: epoll_wait(2) = %d (%s)", r, n, strerror(errno));
	busy();
	if (nanosleep(&ms, NULL))
		FAIL("round %d: nanosleep: %s", r, strerror(errno));
	if ((n = poll(NULL, 0, 1)) != 0)
		FAIL("round %d: poll = %d (%s)", r, n, strerror(errno));
	busy();
	if ((n = select(0, NULL, NULL, NULL, &tv)) != 0)
		FAIL("round %d: select = %d (%s)", r, n, strerror(errno));
	sem_post(&go);
	if ((n = (int)read(pipefd[0], &c, 1)) != 1)
		FAIL("round %d: read = %d (%s)", r, n, strerror(errno));
	/* sigwait for its own SIGUSR2, blocked */
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	if (sigprocmask(SIG_BLOCK, &usr2, NULL))
		FAIL("round %d: sigprocmask", r);
	raise(SIGUSR2);
	busy();
	if (sigwait(&usr2, &sig) || sig != SIGUSR2)
		FAIL("round %d: sigwait = %d", r, sig);
	if (sigprocmask(SIG_UNBLOCK, &usr2, NULL))
		FAIL("round %d: sigprocmask unblock", r);
	int before = usr1;
	raise(SIGUSR1);
	if (usr1 != before + 1)
		FAIL("round %d: SIGUSR1 handler ran %d times", r, usr1 - before);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 50, ours = SIGRTMAX - 2, ep;
	struct sigaction sa, old;
	sigset_t set, cur;
	pthread_t th;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR1, &sa, NULL))
		FAIL("sigaction SIGUSR1");
	/* the samples' signal as the program sees it: its own handler */
	if (sigaction(ours, NULL, &old) || old.sa_handler != SIG_DFL)
		FAIL("SIGRTMAX-2: not SIG_DFL at first");
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_rt;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(ours, &sa, NULL) || sigaction(ours, NULL, &old) ||
	    !(old.sa_flags & SA_SIGINFO) || old.sa_sigaction != on_rt)
		FAIL("SIGRTMAX-2: sigaction does not give back the program's handler");
	raise(ours);
	if (rt != 1)
		FAIL("SIGRTMAX-2: the program's handler ran %d times for one raise", (int)rt);
	/* its mask, as it set it */
	sigemptyset(&set);
	sigaddset(&set, ours);
	if (sigprocmask(SIG_BLOCK, &set, NULL) || sigprocmask(SIG_BLOCK, NULL, &cur) ||
	    !sigismember(&cur, ours))
		FAIL("SIGRTMAX-2: blocked, but the mask does not say so");
	if (pthread_sigmask(SIG_UNBLOCK, &set, &cur) || !sigismember(&cur, ours) ||
	    pthread_sigmask(SIG_SETMASK, NULL, &cur) || sigismember(&cur, ours))
		FAIL("SIGRTMAX-2: unblocked, but the mask does not say so");
	if ((ep = epoll_create1(0)) < 0 || pipe(pipefd) || sem_init(&go, 0, 0) ||
	    pthread_create(&th, NULL, feeder, NULL))
		FAIL("setup");
	for (int r = 0; r < rounds; r++)
		round_(ep, r);
	printf("ok %d\n", rounds);
	return 0;
}
