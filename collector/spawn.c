/* SPDX-License-Identifier: MIT */
/* spawn.c - starting the program: the descriptors it inherits (only those
 * the caller of cygprof left open, and the memfd), LD_PRELOAD and
 * CYGPROF_SHM_FD, an exec failure reported back, and SIGINT/SIGTERM
 * forwarded to it while it runs. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "collector-private.h"

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

static char *preload_value(const char *runtime)
{
	const char *old = getenv("LD_PRELOAD");
	size_t n = strlen(runtime) + (old ? strlen(old) : 0) + 2;
	char *v = malloc(n);

	if (v)
		snprintf(v, n, "%s%s%s", runtime, old && *old ? ":" : "", old && *old ? old : "");
	return v;
}

/* Append fd to the list v[0..*k) of capacity *cap; -ENOMEM when it cannot grow. */
static int fd_push(int **v, size_t *k, size_t *cap, int fd)
{
	if (ARRAY_GROW(*v, *cap, *k + 1))
		return -ENOMEM;
	(*v)[(*k)++] = fd;
	return 0;
}

/* The open file descriptors. */
int collector_list_fds(int **out, size_t *n)
{
	DIR *d = opendir("/proc/self/fd");
	int *v = NULL, err = 0;
	size_t k = 0, cap = 0;

	*out = NULL;
	*n = 0;
	if (d) {
		struct dirent *e;
		while (!err && (e = readdir(d))) {
			if (e->d_name[0] < '0' || e->d_name[0] > '9')
				continue;
			int fd = atoi(e->d_name);
			if (fd != dirfd(d))
				err = fd_push(&v, &k, &cap, fd);
		}
		closedir(d);
	} else {
		/* no /proc: ask every descriptor up to the limit */
		long max = sysconf(_SC_OPEN_MAX);
		if (max < 0 || max > 65536)
			max = 65536;
		for (int fd = 0; fd < max && !err; fd++)
			if (fcntl(fd, F_GETFD) >= 0)
				err = fd_push(&v, &k, &cap, fd);
	}
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*n = k;
	return 0;
}

static int fd_in(const int *v, size_t n, int fd)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == fd)
			return 1;
	return 0;
}

/* Nothing the collector opened itself (the capture, its lock file, what a
 * library opened) reaches the program: only the descriptors the caller of
 * cygprof left open, and the memfd. */
static void cloexec_own_fds(const int *caller, size_t ncaller, int memfd)
{
	int *now;
	size_t n, i;

	if (!caller || collector_list_fds(&now, &n))
		return; /* what the caller gave is unknown: leave everything */
	for (i = 0; i < n; i++) {
		int fd = now[i], fl;
		if (fd <= 2 || fd == memfd || fd_in(caller, ncaller, fd))
			continue;
		fl = fcntl(fd, F_GETFD);
		if (fl >= 0 && !(fl & FD_CLOEXEC))
			fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
	}
	free(now);
}

pid_t collector_spawn(struct collector *c, int memfd, const int *caller, size_t ncaller,
		      int *exec_errno)
{
	int pfd[2], gfd[2] = {-1, -1};
	char fdbuf[16];
	char *pre = preload_value(c->o->runtime);
	pid_t pid;
	int e = 0;

	if (!pre || pipe2(pfd, O_CLOEXEC) < 0) {
		free(pre);
		return -1;
	}
	/* --sample: the child waits at gfd until its perf events are open */
	if (c->o->sample_hz && pipe2(gfd, O_CLOEXEC) < 0) {
		free(pre);
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	cloexec_own_fds(caller, ncaller, memfd);
	snprintf(fdbuf, sizeof fdbuf, "%d", memfd);
	fflush(NULL);
	/* SIGINT/SIGTERM stay blocked until child_pid is known, so none that
	 * arrives meanwhile is lost: it is forwarded once unblocked. */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		setenv("LD_PRELOAD", pre, 1);
		setenv(CYG_SHM_FD_ENV, fdbuf, 1);
		if (gfd[0] >= 0) {
			char go;
			close(gfd[1]);
			while (read(gfd[0], &go, 1) < 0 && errno == EINTR)
				;
		}
		execvp(c->o->argv[0], c->o->argv);
		e = errno;
		(void)!write(pfd[1], &e, sizeof e);
		_exit(127);
	}
	free(pre);
	close(pfd[1]);
	if (gfd[0] >= 0) {
		close(gfd[0]);
		if (pid > 0)
			collector_sampling_open(c, pid);
		close(gfd[1]); /* the child goes on to exec */
	}
	if (pid > 0)
		child_pid = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		close(pfd[0]);
		return -1;
	}
	ssize_t r;
	do
		r = read(pfd[0], &e, sizeof e);
	while (r < 0 && errno == EINTR);
	if (r == (ssize_t)sizeof e)
		*exec_errno = e;
	close(pfd[0]);
	return pid;
}

void collector_forward_signals(struct collector *c)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = forward_signal;
	sigaction(SIGINT, &sa, &c->old_int);
	sigaction(SIGTERM, &sa, &c->old_term);
}

void collector_forward_end(struct collector *c)
{
	child_pid = 0;
	sigaction(SIGINT, &c->old_int, NULL);
	sigaction(SIGTERM, &c->old_term, NULL);
}
