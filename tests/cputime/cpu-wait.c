/* SPDX-License-Identifier: MIT */
/* cpu-wait.c - time off the CPU told apart: waiting for a CPU (preempted)
 * and blocked (tests/cputime).
 *
 *   cpu-wait ROUNDS YIELDS
 *
 * The program pins itself to one CPU (the first it may run on) and forks a
 * child, pinned to the same CPU, that spins in hog() until it is killed.
 * Once the hog runs, main calls nothing() ROUNDS times; nothing() calls
 * sched_yield() YIELDS times and does nothing else: each yield hands the
 * CPU to the hog for its time slice, so nothing()'s wall time is time
 * spent runnable, waiting for the CPU (preempted), not work.  Then the hog
 * is killed, the pin lifted, and main calls sleeper() (nanosleep 60 ms),
 * poller() (poll on no descriptor, 40 ms) and reader() (read() on a pipe
 * that the thread writer() writes to after 50 ms): blocked time.
 *
 * Calls: main 1, nothing ROUNDS, sleeper 1, poller 1, reader 1, writer 1
 * (its own thread), hog 1 (in the child process, killed by SIGKILL).
 * Prints "ready", then "done" and exits 0; 1 when something fails. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static int pipefd[2];

/* not instrumented: its blocked time is its caller's */
__attribute__((no_instrument_function)) static void ms_sleep(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

__attribute__((noinline)) void hog(int ready)
{
	unsigned long x = 1;
	if (write(ready, "r", 1) != 1)
		_exit(3);
	for (;;)
		sink = x = x * 6364136223846793005UL + 1;
}

__attribute__((noinline)) void nothing(int yields)
{
	for (int i = 0; i < yields; i++)
		sched_yield();
}

__attribute__((noinline)) void sleeper(void)
{
	ms_sleep(60);
}

__attribute__((noinline)) void poller(void)
{
	if (poll(NULL, 0, 40) != 0)
		exit(1);
}

__attribute__((noinline)) void *writer(void *arg)
{
	(void)arg;
	ms_sleep(50);
	if (write(pipefd[1], "x", 1) != 1)
		exit(1);
	return NULL;
}

__attribute__((noinline)) void reader(void)
{
	char c;
	if (read(pipefd[0], &c, 1) != 1)
		exit(1);
}

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? atoi(argv[1]) : 20, yields = argc > 2 ? atoi(argv[2]) : 5;
	cpu_set_t all, one;
	int ready[2], cpu = 0;
	pthread_t th;
	pid_t hogpid;
	char c;

	if (sched_getaffinity(0, sizeof all, &all))
		return 1;
	while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &all))
		cpu++;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof one, &one) || pipe(ready) || pipe(pipefd))
		return 1;
	hogpid = fork();
	if (hogpid < 0)
		return 1;
	if (hogpid == 0) {
		close(ready[0]);
		hog(ready[1]);
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1) /* the hog runs */
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (int r = 0; r < rounds; r++)
		nothing(yields);
	kill(hogpid, SIGKILL);
	waitpid(hogpid, NULL, 0);
	if (sched_setaffinity(0, sizeof all, &all))
		return 1;
	sleeper();
	poller();
	if (pthread_create(&th, NULL, writer, NULL))
		return 1;
	reader();
	pthread_join(th, NULL);
	printf("done\n");
	return 0;
}
