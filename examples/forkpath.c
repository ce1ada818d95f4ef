/* SPDX-License-Identifier: MIT */
/*
 * forkpath.c - fork children on their true path, while the parent moves on.
 *
 * Usage: forkpath [ROUNDS]   (default 20)
 *
 * Shaped like a server's background save: main -> serve -> handle ->
 * save_background -> do_fork calls fork().  The parent returns at once,
 * all the way out to main, and waits for the child in
 * main -> idle -> wait_child (blocked in waitpid), as a server goes back
 * to its event loop.  The child returns from fork() inside do_fork and
 * calls child_save() from save_background, which calls child_write()
 * 3 times, then exits 0 from there.  The child may still be starting
 * while the parent has left those frames: the child's path is the one
 * the parent had at fork(), never the parent's later one.
 *
 * Expected, merged over the parent and its ROUNDS children (R = ROUNDS):
 *   main 1, serve R, handle R, save_background R, do_fork R,
 *   idle R, wait_child R, child_save R, child_write 3R
 * Expected arcs, and no others:
 *   main -> serve R, serve -> handle R, handle -> save_background R,
 *   save_background -> do_fork R, save_background -> child_save R,
 *   child_save -> child_write 3R, main -> idle R, idle -> wait_child R
 * Processes: R + 1, each ends "exit 0".  stdout: "forkpath: rounds=R".
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static volatile unsigned long sink;
static pid_t child;

COUNTED static void child_write(int i)
{
	for (int k = 0; k < 10000; k++)
		sink += (unsigned long)(k ^ i);
}

COUNTED static void child_save(void)
{
	for (int i = 0; i < 3; i++)
		child_write(i);
}

COUNTED static pid_t do_fork(void)
{
	return fork();
}

COUNTED static void save_background(void)
{
	pid_t p = do_fork();

	if (p == 0) {
		child_save();
		exit(0);
	}
	if (p < 0) {
		perror("fork");
		exit(2);
	}
	child = p;
}

COUNTED static void handle(void)
{
	save_background();
}

COUNTED static void serve(void)
{
	handle();
}

COUNTED static int wait_child(void)
{
	int st;

	if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	return 0;
}

COUNTED static int idle(void)
{
	return wait_child();
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20;

	for (int r = 0; r < rounds; r++) {
		serve();
		if (idle()) {
			fprintf(stderr, "forkpath: a child failed\n");
			return 1;
		}
	}
	printf("forkpath: rounds=%d\n", rounds);
	return 0;
}
