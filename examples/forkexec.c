/* SPDX-License-Identifier: MIT */
/*
 * forkexec.c - a fork child and an exec'd image, each its own process record.
 *
 * Usage: forkexec                 (the first image)
 *        forkexec --exec-image    (the image that the first one execs)
 *
 * The first image forks. The child calls child_work() 3 times (M) and
 * exits with status 7 (exit(7) from main). The parent calls parent_work()
 * 4 times (P), waits for the child, checks its status, and then execs
 * /proc/self/exe with "--exec-image". That image calls exec_image_work()
 * 5 times (Q) and returns 0 from main.
 *
 * The child enters no function of its own before fork() returns: its main
 * was entered in the parent, so it adds no call of main.
 *
 * Expected processes (3):
 *   the first image   pid P   end "exec"
 *   the fork child    pid C   end "exit 7"
 *   the exec'd image  pid P   end "exit 0"
 * Expected counts (merged over the 3 processes):
 *   main             2   (first image, exec'd image)
 *   child_work       3
 *   parent_work      4
 *   exec_image_work  5
 *   spin            12   (one per *_work call)
 * Expected arcs, and no others:
 *   main            -> child_work       3
 *   main            -> parent_work      4
 *   main            -> exec_image_work  5
 *   child_work      -> spin             3
 *   parent_work     -> spin             4
 *   exec_image_work -> spin             5
 * Exit status 0. stdout: "forkexec: child=3", "forkexec: parent=4 status=7",
 * "forkexec: exec-image=5" (child line and parent line in either order).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

#define M_CHILD 3
#define P_PARENT 4
#define Q_EXEC 5

static unsigned n_work;
static volatile unsigned long sink;

COUNTED static void spin(void)
{
	unsigned long i;

	for (i = 0; i < 1000; i++)
		sink += i;
}

COUNTED static void child_work(void)
{
	n_work++;
	spin();
}

COUNTED static void parent_work(void)
{
	n_work++;
	spin();
}

COUNTED static void exec_image_work(void)
{
	n_work++;
	spin();
}

int main(int argc, char **argv)
{
	char *args[3];
	pid_t pid;
	int i, status = 0;

	if (argc > 1 && !strcmp(argv[1], "--exec-image")) {
		for (i = 0; i < Q_EXEC; i++)
			exec_image_work();
		printf("forkexec: exec-image=%u\n", n_work);
		return 0;
	}

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		for (i = 0; i < M_CHILD; i++)
			child_work();
		printf("forkexec: child=%u\n", n_work);
		exit(7);
	}
	for (i = 0; i < P_PARENT; i++)
		parent_work();
	if (waitpid(pid, &status, 0) != pid) {
		perror("waitpid");
		return 1;
	}
	printf("forkexec: parent=%u status=%d\n", n_work,
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 7)
		return 1;
	fflush(stdout);
	args[0] = argv[0];
	args[1] = "--exec-image";
	args[2] = NULL;
	execv("/proc/self/exe", args);
	perror("execv");
	return 1;
}
