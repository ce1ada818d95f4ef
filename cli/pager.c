/* SPDX-License-Identifier: MIT */
/* pager.c - long text output through a pager on a terminal, as git and perf
 * do: when standard output is a terminal, the commands that print a report
 * (cygprof.c's paged list) write into a pipe read by CYGPROF_PAGER, else
 * PAGER, else less (with LESS=FRX unless LESS is set: quit if one screen,
 * colours raw, no screen clearing).  An empty pager or "cat", a standard
 * output that is not a terminal, or `cygprof --no-pager CMD` (or
 * `CMD --no-pager`) print directly.  The command waits for the pager at
 * exit, so the shell prompt comes back after it. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

int cli_paged;
int cli_color;
static pid_t pager_pid;

const char *cli_hot(double share)
{
	if (!cli_color)
		return "";
	return share >= 0.10 ? "\033[1;31m" : share >= 0.01 ? "\033[33m" : "";
}

const char *cli_reset(void)
{
	return cli_color ? "\033[m" : "";
}

int cli_color_decide(const char *when)
{
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");

	if (!when || !strcmp(when, "auto"))
		return isatty(STDOUT_FILENO) && !(nc && *nc) && !(term && !strcmp(term, "dumb"));
	if (!strcmp(when, "always"))
		return 1;
	if (!strcmp(when, "never"))
		return 0;
	return -1;
}

static void pager_wait(void)
{
	int st;

	if (pager_pid <= 0)
		return;
	fflush(stdout);
	fflush(stderr);
	/* the pager sees the end of its input */
	close(STDOUT_FILENO);
	while (waitpid(pager_pid, &st, 0) < 0 && errno == EINTR)
		;
	pager_pid = 0;
}

/* Whether the pager's first word names a program found in PATH (or a path
 * to one): a pager that cannot start would swallow the output. */
static int runnable(const char *cmd)
{
	char word[256], path[4096];
	const char *p = getenv("PATH"), *e;
	size_t n = strcspn(cmd, " \t");

	if (!n || n >= sizeof word)
		return 0;
	memcpy(word, cmd, n);
	word[n] = 0;
	if (strchr(word, '/'))
		return access(word, X_OK) == 0;
	for (; p && *p; p = *e ? e + 1 : e) {
		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		if (snprintf(path, sizeof path, "%.*s/%s", (int)(e - p), p, word) <
			    (int)sizeof path &&
		    access(path, X_OK) == 0)
			return 1;
	}
	return 0;
}

void cli_pager_start(void)
{
	const char *pg = getenv("CYGPROF_PAGER");
	int fd[2];
	pid_t pid;

	if (!isatty(STDOUT_FILENO))
		return;
	if (!pg)
		pg = getenv("PAGER");
	if (!pg)
		pg = "less";
	if (!*pg || !strcmp(pg, "cat") || !runnable(pg))
		return;
	if (pipe(fd) < 0)
		return;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return;
	}
	if (pid == 0) {
		dup2(fd[0], STDIN_FILENO);
		close(fd[0]);
		close(fd[1]);
		setenv("LESS", "FRX", 0);
		execl("/bin/sh", "sh", "-c", pg, (char *)NULL);
		_exit(127);
	}
	dup2(fd[1], STDOUT_FILENO);
	close(fd[0]);
	close(fd[1]);
	pager_pid = pid;
	cli_paged = 1;
	/* quitting the pager early ends the command quietly (EPIPE) */
	signal(SIGPIPE, SIG_DFL);
	atexit(pager_wait);
}
