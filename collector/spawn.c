/* SPDX-License-Identifier: MIT */
/* spawn.c - starting the program: the descriptors it inherits (only those
 * the caller of cygprof left open, and the memfd), LD_PRELOAD and
 * CYGPROF_SHM_FD, an exec failure reported back, and SIGINT, SIGTERM,
 * SIGQUIT and SIGHUP forwarded to it while it runs, unless the program got
 * them already (a terminal's Ctrl-C, a kill of the process group). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector-private.h"

/* The signals a terminal or a shell sends to stop a program. */
static const int fwd_sigs[] = {SIGINT, SIGTERM, SIGQUIT, SIGHUP};
#define N_FWD (sizeof fwd_sigs / sizeof fwd_sigs[0])

static volatile sig_atomic_t child_pid;

/*
 * Whether a signal cygprof got was sent to its process group (which holds
 * the program too, unless the program left it) or to cygprof alone: only
 * the latter is forwarded, else the program would get it twice (Redis
 * takes a second SIGINT as "You insist... exiting now").  siginfo cannot
 * tell: kill(pid) and kill(-pgid) both give SI_USER and the sender's pid.
 * A witness can: a process of cygprof's group that keeps the four signals
 * blocked and counts, through a signalfd, those it gets; only a group
 * signal reaches it.  The kernel queues a group signal to the group's
 * newest members first (attach_pid() adds at the head of the pgrp's
 * list), so the witness, forked after cygprof joined its group, has it
 * queued before cygprof's handler runs.  The handler asks the witness for
 * its counts through a socket; the witness reads the request, then drains
 * its signalfd, then answers, so a signal queued before the request is
 * counted.  The witness ("cygprof-signals" in ps) is a child without an
 * exit signal (see collector_witness_start()): the poll loop (wait4(-1))
 * still ends when the program's tree has.  It ends when its socket closes
 * (cygprof done or dead).  Without a witness: a terminal's
 * signals (SI_KERNEL) went to the group, others to cygprof alone.
 */
static int wit_fd = -1;
static pid_t wit_pid = -1;
static uint32_t wit_seen[N_FWD];

static int fwd_index(int sig)
{
	for (size_t i = 0; i < N_FWD; i++)
		if (fwd_sigs[i] == sig)
			return (int)i;
	return -1;
}

static void fwd_set(sigset_t *set)
{
	sigemptyset(set);
	for (size_t i = 0; i < N_FWD; i++)
		sigaddset(set, fwd_sigs[i]);
}

/* The witness's life: raw system calls and async-signal-safe functions only. */
static _Noreturn void witness_run(int fd)
{
	uint32_t count[N_FWD] = {0};
	sigset_t set;
	int sfd;

	fwd_set(&set);
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0)
		_exit(1);
	for (;;) {
		/* the signals taken as they come, not left pending: two of a
		 * kind pending are one */
		struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		struct signalfd_siginfo si;
		char q[16];
		ssize_t n = 0;

		if (poll(pf, 2, -1) < 0)
			continue;
		if (pf[0].revents) {
			n = read(fd, q, sizeof q);
			if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
				_exit(0); /* cygprof closed it, or is gone */
		}
		/* after the request was read: a signal queued before it is
		 * counted in the answer */
		while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
			int i = fwd_index((int)si.ssi_signo);
			if (i >= 0)
				count[i]++;
		}
		for (; n > 0; n--)
			if (send(fd, count, sizeof count, MSG_NOSIGNAL) != (ssize_t)sizeof count)
				_exit(0);
	}
}

/* Close every descriptor but keep (no malloc: a copy of a process that
 * may have threads). */
static void close_all_but(int keep)
{
#ifdef SYS_close_range
	if ((keep == 0 || !syscall(SYS_close_range, 0U, (unsigned)keep - 1, 0U)) &&
	    !syscall(SYS_close_range, (unsigned)keep + 1, ~0U, 0U))
		return;
#endif
	/* before Linux 5.9: one at a time */
	long max = sysconf(_SC_OPEN_MAX);

	for (int fd = 0; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
		if (fd != keep)
			close(fd);
}

void collector_witness_start(void)
{
	int sv[2];
	sigset_t set, old;
	long pid;

	if (wit_fd >= 0)
		return;
	/* a socket, not pipes: send() with MSG_NOSIGNAL to a witness gone
	 * must not kill cygprof with SIGPIPE */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	fwd_set(&set);
	sigprocmask(SIG_BLOCK, &set, &old);
	/* A copy, as fork makes (no CLONE_* flag), without an exit signal:
	 * only a wait with __WCLONE sees it, so the poll loop's wait4(-1)
	 * still ends when the program's tree has.  cygprof's child, reaped
	 * here at the end (an orphan would be left to an init that may not
	 * reap, as in a container). */
	pid = syscall(SYS_clone, 0L, NULL, NULL, NULL, NULL);
	if (pid == 0) {
		/* hold nothing cygprof opened (the capture, its lock, the
		 * terminal, the caller's pipes); named for ps */
		close_all_but(sv[1]);
		prctl(PR_SET_NAME, "cygprof-signals", 0, 0, 0);
		witness_run(sv[1]);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return;
	}
	wit_pid = (pid_t)pid;
	wit_fd = sv[0];
	memset(wit_seen, 0, sizeof wit_seen);
}

/* The witness ends when its socket closes; reaped. */
static void witness_end(void)
{
	if (wit_fd < 0)
		return;
	close(wit_fd);
	wit_fd = -1;
	while (waitpid(wit_pid, NULL, __WCLONE) < 0 && errno == EINTR)
		;
	wit_pid = -1;
}

/* Did the group get signal number i (index in fwd_sigs) since last asked?
 * -1: no witness to ask.  Called in the handler (the four signals blocked). */
static int witness_saw(int i)
{
	uint32_t count[N_FWD];
	size_t got = 0;

	if (wit_fd < 0 || send(wit_fd, "?", 1, MSG_NOSIGNAL) != 1)
		return -1;
	while (got < sizeof count) {
		struct pollfd pf = {.fd = wit_fd, .events = POLLIN};
		/* a witness that does not answer (stopped alone) within 2 s
		 * is given up: the fallback decides from now on */
		int r = poll(&pf, 1, 2000);
		ssize_t n;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			goto gone;
		n = read(wit_fd, (char *)count + got, sizeof count - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto gone;
		got += (size_t)n;
	}
	int saw = count[i] != wit_seen[i];
	wit_seen[i] = count[i];
	return saw;
gone:
	kill(wit_pid, SIGKILL); /* stopped alone, or stuck */
	witness_end();
	return -1;
}

static void forward_signal(int sig, siginfo_t *si, void *uc)
{
	int e = errno, i = fwd_index(sig), group;
	pid_t pid = child_pid;

	(void)uc;
	if (pid <= 0 || i < 0)
		goto out;
	group = witness_saw(i);
	if (group < 0)
		group = si->si_code == SI_KERNEL;
	/* the program, still in cygprof's group, got it already */
	if (group && getpgid(pid) == getpgrp())
		goto out;
	kill(pid, sig);
out:
	errno = e;
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
	/* The forwarded signals stay blocked until child_pid is known, so
	 * none that arrives meanwhile is lost: it is forwarded once unblocked. */
	sigset_t block, old;
	fwd_set(&block);
	sigprocmask(SIG_BLOCK, &block, &old);
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		for (size_t i = 0; i < N_FWD; i++)
			signal(fwd_sigs[i], SIG_DFL);
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

	collector_witness_start(); /* made earlier, before the subreaper */
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = forward_signal;
	sa.sa_flags = SA_SIGINFO;
	/* one at a time: the handler talks to the witness */
	fwd_set(&sa.sa_mask);
	for (size_t i = 0; i < N_FWD; i++)
		sigaction(fwd_sigs[i], &sa, &c->old_fwd[i]);
}

void collector_forward_end(struct collector *c)
{
	sigset_t set, old;

	fwd_set(&set);
	sigprocmask(SIG_BLOCK, &set, &old);
	child_pid = 0;
	for (size_t i = 0; i < N_FWD; i++)
		sigaction(fwd_sigs[i], &c->old_fwd[i], NULL);
	witness_end();
	sigprocmask(SIG_SETMASK, &old, NULL);
}
