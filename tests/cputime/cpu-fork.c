/* SPDX-License-Identifier: MIT */
/* cpu-fork.c - CPU samples in a forked child, in its parent and in an exec'd
 * image (tests/cputime).
 *
 *   cpu-fork K        main calls parent_work(K), forks: the child calls
 *                     child_work(K) and then execs this program as
 *                     "cpu-fork exec K"; the parent calls parent_work(K)
 *                     again and waits for it.
 *   cpu-fork exec K   main calls exec_work(K).
 *   cpu-fork raw K    main forks with the raw system call (syscall(SYS_clone,
 *                     SIGCHLD): no atfork handler runs); the child calls
 *                     child_work(K), prints "raw child done" and exits 0;
 *                     main exits 0 when it did (3 when it died).
 *
 * Each work function spins K units (50000000: some 0.1 s here).  Before
 * the fork a second thread, helper(), is running (blocked until the parent
 * is done): the child prints "child perf fds: N", the perf event
 * descriptors it has (its own sampler's only: none of the parent's
 * threads').  Calls: parent_work 2 (the parent), child_work 1 (the child),
 * exec_work 1 (the exec'd image), helper 1; main 1 in the parent and the
 * exec'd image. */
#include <dirent.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static sem_t started, done;

__attribute__((noinline)) void *helper(void *arg)
{
	(void)arg;
	sem_post(&started);
	sem_wait(&done);
	return NULL;
}

/* The perf event descriptors of this process. */
static int perf_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], link[64];
	int n = 0;

	while (d && (e = readdir(d))) {
		snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
		ssize_t k = readlink(path, link, sizeof link - 1);
		if (k > 0) {
			link[k] = 0;
			n += !strcmp(link, "anon_inode:[perf_event]");
		}
	}
	if (d)
		closedir(d);
	return n;
}

static volatile unsigned long sink;

__attribute__((always_inline, no_instrument_function)) static inline void spin(unsigned long k)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < k; i++)
		x = x * 6364136223846793005UL + i;
	sink = x;
}

__attribute__((noinline)) void parent_work(unsigned long k)
{
	spin(k);
}

__attribute__((noinline)) void child_work(unsigned long k)
{
	spin(k);
}

__attribute__((noinline)) void exec_work(unsigned long k)
{
	spin(k);
}

int main(int argc, char **argv)
{
	unsigned long k;
	int st;
	pid_t pid;
	pthread_t th;

	if (argc == 3 && !strcmp(argv[1], "exec")) {
		exec_work(strtoul(argv[2], NULL, 10));
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "raw")) {
		k = strtoul(argv[2], NULL, 10);
		parent_work(k);
		pid = (pid_t)syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
		if (pid < 0)
			return 1;
		if (pid == 0) {
			child_work(k);
			printf("raw child done\n");
			fflush(stdout);
			_exit(0);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 3;
		return 0;
	}
	if (argc != 2)
		return 2;
	k = strtoul(argv[1], NULL, 10);
	if (sem_init(&started, 0, 0) || sem_init(&done, 0, 0) ||
	    pthread_create(&th, NULL, helper, NULL))
		return 1;
	sem_wait(&started);
	parent_work(k);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		printf("child perf fds: %d\n", perf_fds());
		fflush(stdout);
		child_work(k);
		execl("/proc/self/exe", argv[0], "exec", argv[1], (char *)NULL);
		_exit(127);
	}
	parent_work(k);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	sem_post(&done);
	pthread_join(th, NULL);
	printf("done\n");
	return 0;
}
