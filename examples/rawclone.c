/* SPDX-License-Identifier: MIT */
/*
 * rawclone.c - children made by clone() directly, not by fork() or
 * pthread_create(): a process without CLONE_VM, a thread with CLONE_VM and
 * no TLS of its own (it shares the TLS of the thread that made it), and a
 * CLONE_VM|CLONE_VFORK child.
 *
 * Usage: rawclone [K]   (default 1000)
 *
 * 1. clone(proc_child, SIGCHLD): a process of its own; it calls
 *    proc_work() K times and exits 3; main waits for it.
 * 2. clone(thread_child, CLONE_VM|CLONE_THREAD|... without CLONE_SETTLS):
 *    a thread that shares main's TLS; it calls thread_work() K times while
 *    main calls main_work() K times, then it ends (main waits on the
 *    CLONE_CHILD_CLEARTID futex).
 * 3. clone(vfork_child, CLONE_VM|CLONE_VFORK|SIGCHLD): runs while main is
 *    suspended, calls vfork_work() K times and exits 5.
 * Each child touches nothing of libc that uses TLS.
 *
 * Expected counts:
 *   main          1
 *   proc_child    1     proc_work    K
 *   thread_child  1     thread_work  K
 *   vfork_child   1     vfork_work   K
 *   main_work     K
 * Expected arcs, and no others:
 *   proc_child -> proc_work K, thread_child -> thread_work K,
 *   vfork_child -> vfork_work K, main -> main_work K
 * Processes: main (exit 0), the clone child (exit 3), the vfork child (exit 5).
 * Exit status 0. stdout: "rawclone: proc=3 thread=K vfork=5 main=K".
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static unsigned long k = 1000;
static volatile unsigned long sink;
static volatile unsigned long n_thread, n_main;
static volatile pid_t ctid;

COUNTED static void proc_work(void) { sink++; }
COUNTED static void thread_work(void) { n_thread++; }
COUNTED static void vfork_work(void) { sink++; }
COUNTED static void main_work(void) { n_main++; }

COUNTED static int proc_child(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < k; i++)
		proc_work();
	return 3;
}

COUNTED static int thread_child(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < k; i++)
		thread_work();
	return 0;
}

COUNTED static int vfork_child(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < k; i++)
		vfork_work();
	return 5;
}

static char *new_stack(void)
{
	size_t sz = 1 << 20;
	char *s = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
		       -1, 0);
	if (s == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return s + sz;
}

int main(int argc, char **argv)
{
	int st, proc_status, vfork_status;
	pid_t pid, ptid;

	if (argc > 1)
		k = strtoul(argv[1], NULL, 10);

	/* 1: a process */
	pid = clone(proc_child, new_stack(), SIGCHLD, NULL);
	if (pid < 0 || waitpid(pid, &st, 0) != pid) {
		perror("clone 1");
		return 2;
	}
	proc_status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;

	/* 2: a thread sharing main's TLS */
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
		    CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	ctid = 1;
	pid = clone(thread_child, new_stack(), flags, NULL, &ptid, NULL, &ctid);
	if (pid < 0) {
		perror("clone 2");
		return 2;
	}
	for (unsigned long i = 0; i < k; i++)
		main_work();
	while (ctid) /* cleared by the kernel when the thread ends */
		syscall(SYS_futex, &ctid, FUTEX_WAIT, pid, NULL, NULL, 0);

	/* 3: a vfork-like child: main waits until it exits */
	pid = clone(vfork_child, new_stack(), CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	if (pid < 0 || waitpid(pid, &st, 0) != pid) {
		perror("clone 3");
		return 2;
	}
	vfork_status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;

	printf("rawclone: proc=%d thread=%lu vfork=%d main=%lu\n", proc_status, n_thread,
	       vfork_status, n_main);
	return 0;
}
