/* SPDX-License-Identifier: MIT */
/* attach-ptrace.c - stop and resume every thread of a process for
 * record --attach (docs/attach.md, step 3): PTRACE_SEIZE + INTERRUPT. */
#include "config.h"

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach-elf.h"

static int seized(const struct attach_threads *a, pid_t tid)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (a->tid[i] == tid)
			return 1;
	return 0;
}

/* tid is traced by this process already: 1, 0 not, -1 it is gone or
 * exiting. */
static int traced_by_us(pid_t tid)
{
	char p[64], line[256];
	int tracer = 0;
	FILE *f;

	snprintf(p, sizeof p, "/proc/%d/status", (int)tid);
	f = fopen(p, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		char state = 0;
		if (sscanf(line, "State: %c", &state) == 1 && (state == 'Z' || state == 'X')) {
			fclose(f);
			return -1;
		}
		if (sscanf(line, "TracerPid: %d", &tracer) == 1)
			break;
	}
	fclose(f);
	return tracer == getpid();
}

int attach_stop_all(pid_t pid, struct attach_threads *a, char *err, size_t errlen)
{
	char p[64];
	int added = 1, rounds;

	memset(a, 0, sizeof *a);
	a->pid = pid;
	snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
	/* again until no new thread appeared while we seized the others */
	for (rounds = 0; added && rounds < 100; rounds++) {
		DIR *d = opendir(p);
		struct dirent *de;

		added = 0;
		if (!d) {
			snprintf(err, errlen, "attach: no process %d", (int)pid);
			attach_resume_all(a);
			return -1;
		}
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			int st;
			if (tid <= 0 || seized(a, tid))
				continue;
			if (a->n == ATTACH_MAX_THREADS) {
				closedir(d);
				snprintf(err, errlen, "attach: process %d has more than %d threads",
					 (int)pid, ATTACH_MAX_THREADS);
				attach_resume_all(a);
				return -1;
			}
			if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)PTRACE_O_TRACECLONE) < 0) {
				if (errno == ESRCH)
					continue; /* gone meanwhile */
				int e0 = errno, ours = e0 == EPERM ? traced_by_us(tid) : 0;
				if (ours < 0)
					continue; /* an exiting thread: gone by now */
				errno = e0;
				if (ours) {
					/* created by a thread we seized (TRACECLONE):
					 * ours already, stopping on its own */
					a->tid[a->n++] = tid;
					added = 1;
					while (waitpid(tid, &st, __WALL) < 0 && errno == EINTR)
						;
					continue;
				}
				int e = errno;
				closedir(d);
				snprintf(err, errlen, "attach: cannot ptrace process %d: %s%s", (int)pid,
					 strerror(e),
					 e == EPERM ? " (see /proc/sys/kernel/yama/ptrace_scope)" : "");
				attach_resume_all(a);
				return -1;
			}
			a->tid[a->n++] = tid;
			added = 1;
			if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
				continue;
			while (waitpid(tid, &st, __WALL) < 0 && errno == EINTR)
				;
		}
		closedir(d);
	}
	return 0;
}

void attach_resume_all(struct attach_threads *a)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		ptrace(PTRACE_DETACH, a->tid[i], 0, 0);
	a->n = 0;
}
