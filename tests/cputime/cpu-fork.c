/* SPDX-License-Identifier: MIT */
/* cpu-fork.c - CPU samples in a forked child, in its parent and in an exec'd
 * image (tests/cputime).
 *
 *   cpu-fork K        main calls parent_work(K), forks: the child calls
 *                     child_work(K) and then execs this program as
 *                     "cpu-fork exec K"; the parent calls parent_work(K)
 *                     again and waits for it.
 *   cpu-fork exec K   main calls exec_work(K).
 *
 * Each work function spins K units (50000000: some 0.1 s here).  Calls:
 * parent_work 2 (the parent), child_work 1 (the child), exec_work 1 (the
 * exec'd image); main 1 in the parent and the exec'd image. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

	if (argc == 3 && !strcmp(argv[1], "exec")) {
		exec_work(strtoul(argv[2], NULL, 10));
		return 0;
	}
	if (argc != 2)
		return 2;
	k = strtoul(argv[1], NULL, 10);
	parent_work(k);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		child_work(k);
		execl("/proc/self/exe", argv[0], "exec", argv[1], (char *)NULL);
		_exit(127);
	}
	parent_work(k);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	printf("done\n");
	return 0;
}
