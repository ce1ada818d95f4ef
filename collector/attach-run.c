/* SPDX-License-Identifier: MIT */
/* attach-run.c - one recording of a running process (record --attach,
 * docs/attach.md): the capture and the mapping as for a program started,
 * the runtime loaded into the process and its hooks pointed at it
 * (attach-inject.c), the same poll loop until --duration, SIGINT/SIGTERM or
 * the process's end, then the hooks put back and the capture written. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach-elf.h"
#include "collector-private.h"
#include "net-proto.h"
#include "readfile.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

struct attach_run {
	pid_t pid;
	int pidfd;            /* readable once the process has ended; -1: use /proc */
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0: none */
	int ended;            /* the process ended while attached */
};

static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
	stop_sig = sig;
}

/* The process has ended (or is a zombie waiting for its parent). */
static int target_gone(const struct attach_run *a)
{
	char p[64], buf[512];
	int fd;
	ssize_t n;

	if (a->pidfd >= 0) {
		struct pollfd pf = {a->pidfd, POLLIN, 0};
		return poll(&pf, 1, 0) > 0;
	}
	snprintf(p, sizeof p, "/proc/%d/stat", (int)a->pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = 0;
	char *rp = strrchr(buf, ')');
	return rp && (rp[2] == 'Z' || rp[2] == 'X');
}

int collector_attach_over(struct collector *c)
{
	struct attach_run *a = c->attach;

	if (target_gone(a)) {
		a->ended = 1;
		return 1;
	}
	return stop_sig || (a->deadline_ns && collector_mono_ns() >= a->deadline_ns);
}

/* The process's command line as an argv (for the capture's "command"). */
static char **cmdline_argv(pid_t pid, char **buf)
{
	char p[64], *b, **v;
	size_t len = 0, n = 0, i;

	snprintf(p, sizeof p, "/proc/%d/cmdline", (int)pid);
	if (read_file(p, &b, &len)) { /* an empty command line */
		b = malloc(1);
		len = 0;
	}
	*buf = b;
	if (!b)
		return NULL;
	/* read_file() left room for the NUL of an unterminated last argument */
	if (!len || b[len - 1])
		b[len++] = 0;
	for (i = 0; i < len; i++)
		n += !b[i];
	v = calloc(n + 1, sizeof *v);
	if (!v)
		return NULL;
	for (i = 0, n = 0; i < len; i += strlen(b + i) + 1)
		v[n++] = b + i;
	return v;
}

static int put_meta_u64(struct collector *c, const char *key, uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
	return cygprof_capture_set_meta(c->cap, key, buf);
}

/* What the capture says of the attach (docs/capture-format.md). */
struct attach_meta {
	pid_t pid;
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC: hooks pointed, and put back */
	int ended;                 /* the process ended while attached */
};

static int put_attach_meta(struct collector *c, void *arg)
{
	const struct attach_meta *m = arg;
	int rc = put_meta_u64(c, "attach_pid", (uint64_t)m->pid);

	if (!rc)
		rc = put_meta_u64(c, "attach_start", m->start_ns);
	if (!rc)
		rc = put_meta_u64(c, "attach_end", m->end_ns);
	if (!rc)
		rc = cygprof_capture_set_meta(c->cap, "attach_exited", m->ended ? "1" : "0");
	return rc;
}

int collector_attach(const struct collector_opts *o0, struct attach_target *t,
		     uint64_t duration_ns, struct collector_result *res, char *err, size_t errlen)
{
	struct collector c;
	struct collector_opts o = *o0;
	struct netp_enc enc;
	int send_fd = o0->send_fd;
	struct attach_run a;
	struct attach_session *s = NULL;
	struct sigaction sa, old_int, old_term, old_hup;
	sigset_t block, oldmask;
	char *cmdbuf = NULL, **argv;
	int memfd = -1, rc = 0;
	uint64_t size;

	memset(&c, 0, sizeof c);
	memset(&enc, 0, sizeof enc);
	memset(res, 0, sizeof *res);
	memset(&a, 0, sizeof a);
	a.pid = t->pid;
	a.pidfd = -1;
	/* SIGINT/SIGTERM/SIGHUP end the attach (the process runs on).  Held
	 * from here until the process runs with the hooks pointed: a signal
	 * meanwhile neither leaves the capture's temporary file behind nor
	 * the process half attached; the attach then ends at once. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &oldmask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	argv = cmdline_argv(t->pid, &cmdbuf);
	if (!argv) {
		snprintf(err, errlen, "attach: out of memory");
		rc = -ENOMEM;
		goto out_free;
	}
	if (!argv[0][0])
		argv[0] = t->exe;
	o.argv = argv;
	c.o = &o;
	c.attach = &a;
	rc = collector_shm_size(&o, &size, err, errlen);
	if (rc)
		goto out_free;
	c.dbg = debuginfo_new();
	for (size_t i = 0; c.dbg && i < o.n_debug_dirs; i++)
		debuginfo_add_dir(c.dbg, o.debug_dirs[i]);
	if (c.dbg)
		debuginfo_add_env(c.dbg);
	c.filtering = o.n_only || o.n_except || o.max_depth;
	rc = collector_output_open(&c, &enc, &send_fd, err, errlen);
	if (rc) {
		debuginfo_free(c.dbg);
		goto out_free;
	}
	rc = collector_map(&c, size, &memfd, err, errlen);
	if (!rc) {
		rc = collector_counters_init(&c);
		if (rc)
			snprintf(err, errlen, "cannot set up the counters: %s", strerror(-rc));
	}
	if (rc)
		goto fail;
	collector_clock_origin(&c);
	collector_calibrate(&c);

	s = calloc(1, sizeof *s);
	rc = s ? attach_begin(s, t, o.runtime, getpid(), memfd, err, errlen) : -ENOMEM;
	if (rc) {
		if (!s)
			snprintf(err, errlen, "attach: out of memory");
		rc = -EPERM;
		goto fail;
	}
	uint64_t start_ns = s->run_ns;
	a.pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
	if (duration_ns)
		a.deadline_ns = start_ns + duration_ns;
	(void)cygprof_capture_publish(c.cap);
	sigprocmask(SIG_SETMASK, &oldmask, NULL); /* a signal held meanwhile ends it now */
	if (!o.quiet) {
		char was[96] = "";
		if (t->dead_attacher)
			snprintf(was, sizeof was, ", taken over from cygprof process %d, which died",
				 (int)t->dead_attacher);
		fprintf(stderr, "cygprof: attached to process %d (%s)%s%s\n", (int)t->pid, t->exe,
			was, duration_ns ? "" : "; Ctrl-C to detach");
	}

	collector_poll(&c, 0);
	uint64_t end_ns = collector_mono_ns();
	if (!a.ended) {
		char derr[512];
		sigset_t held;
		/* blocked while the process is stopped: never left stopped */
		sigprocmask(SIG_BLOCK, &block, &held);
		if (attach_end(s, derr, sizeof derr) < 0) {
			if (s->gone || target_gone(&a))
				a.ended = 1;
			else
				snprintf(res->damaged, sizeof res->damaged, "%.200s", derr);
		}
		sigprocmask(SIG_SETMASK, &held, NULL);
		if (s->stop_ns)
			end_ns = s->stop_ns;
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	res->attach_ended = a.ended;
	res->attach_seeded = (uint32_t)s->seeded;

	struct attach_meta am = {t->pid, start_ns, end_ns, a.ended};
	rc = collector_finish_run(&c, put_attach_meta, &am, res);
	rc = collector_output_end(&c, &enc, rc, 0, res, err, errlen);
	if (a.pidfd >= 0)
		close(a.pidfd);
	close(memfd);
	free(s);
	collector_free(&c);
	free(argv);
	free(cmdbuf);
	return rc;
fail:
	free(s);
	if (memfd >= 0)
		close(memfd);
	cygprof_capture_discard(c.cap);
	netp_enc_free(&enc);
	collector_free(&c);
out_free:
	free(argv);
	free(cmdbuf);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	return rc ? rc : -EIO;
}
