/* SPDX-License-Identifier: MIT */
/* cmd-top.c - cygprof top: run a program under the collector and show its
 * hottest functions (self time, calls) over the last interval and in total,
 * from the snapshots the collector takes at each checkpoint
 * (collector_opts.snapshot).  --once: one JSON snapshot at the end. */
#include "config.h"

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "collector.h"
#include "report-util.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof top [options] [--] PROG [ARGS...]\n\n"
		"Run PROG (built with -finstrument-functions) and show its hottest functions by\n"
		"self time, with their calls, over the last interval and in total.  Exits with\n"
		"PROG's exit status, or 128+N when signal N killed it.\n\n"
		"options:\n"
		"      --once             no live view: run PROG to its end, then print one\n"
		"                         snapshot\n"
		"      --format=text|json what --once prints (default text)\n"
		"  -n, --limit N          show at most N functions (default 20, 0: all)\n"
		"  -o, --output FILE      also keep the capture (as 'cygprof record -o' writes\n"
		"                         it); only an earlier capture there is replaced\n"
		"  -q, --quiet            no warning when no instrumented function was called\n"
		"  -h, --help             this help\n\n"
		"Snapshots come about once a second (CYGPROF_CHECKPOINT_MS).  On a terminal,\n"
		"keys act at the next snapshot: q stops PROG (SIGTERM) and quits, p pauses\n"
		"the display (and resumes it).\n");
}

/* One function merged over the threads. */
struct tfn {
	char *name;
	uint64_t calls, self_ns, total_ns;
	uint64_t icalls, iself_ns; /* in the last interval */
};

struct top {
	int once, json, quiet;
	int keys;            /* stdin is a terminal in cbreak mode: q, p */
	int paused, quitting;
	size_t limit;
	struct tfn *cur, *prev;
	size_t ncur, nprev;
	uint64_t elapsed_ns, prev_ns;
	uint32_t threads;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct tfn *)a)->name, ((const struct tfn *)b)->name);
}

/* Hottest first: self time, then calls, then name. */
static int by_self(const void *a, const void *b)
{
	const struct tfn *x = a, *y = b;

	if (x->self_ns != y->self_ns)
		return x->self_ns < y->self_ns ? 1 : -1;
	if (x->calls != y->calls)
		return x->calls < y->calls ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void free_fns(struct tfn *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

static void print_text(struct top *t, FILE *f)
{
	size_t n = t->limit && t->limit < t->ncur ? t->limit : t->ncur;

	fprintf(f, "%.3f s, %u thread%s, %zu functions\n\n", t->elapsed_ns / 1e9, t->threads,
		t->threads == 1 ? "" : "s", t->ncur);
	fprintf(f, "%12s %12s %12s %12s  %s\n", "self ms", "calls", "last self ms", "last calls",
		"function");
	for (size_t i = 0; i < n; i++) {
		const struct tfn *x = &t->cur[i];
		fprintf(f, "%12.3f %12llu %12.3f %12llu  %s\n", x->self_ns / 1e6,
			(unsigned long long)x->calls, x->iself_ns / 1e6,
			(unsigned long long)x->icalls, x->name);
	}
}

static void print_json(struct top *t, FILE *f, int status)
{
	size_t n = t->limit && t->limit < t->ncur ? t->limit : t->ncur;

	fprintf(f, "{\"elapsed_ns\":%llu,\"interval_ns\":%llu,\"threads\":%u,",
		(unsigned long long)t->elapsed_ns, (unsigned long long)(t->elapsed_ns - t->prev_ns),
		t->threads);
	if (WIFSIGNALED(status))
		fprintf(f, "\"signal\":%d,", WTERMSIG(status));
	else
		fprintf(f, "\"exit_status\":%d,", WEXITSTATUS(status));
	fprintf(f, "\"functions\":[");
	for (size_t i = 0; i < n; i++) {
		const struct tfn *x = &t->cur[i];
		fprintf(f, "%s\n{\"name\":", i ? "," : "");
		json_str(f, x->name);
		fprintf(f,
			",\"calls\":%llu,\"self_ns\":%llu,\"total_ns\":%llu,"
			"\"interval_calls\":%llu,\"interval_self_ns\":%llu}",
			(unsigned long long)x->calls, (unsigned long long)x->self_ns,
			(unsigned long long)x->total_ns, (unsigned long long)x->icalls,
			(unsigned long long)x->iself_ns);
	}
	fprintf(f, "]}\n");
}

/* The terminal's mode before top's cbreak mode (keys without Enter, no echo). */
static struct termios saved_tty;
static int tty_changed;

static void tty_restore(void)
{
	if (tty_changed) {
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tty);
		tty_changed = 0;
	}
}

static int tty_keys(void)
{
	struct termios raw;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO) || tcgetattr(STDIN_FILENO, &saved_tty))
		return 0;
	raw = saved_tty;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &raw))
		return 0;
	tty_changed = 1;
	atexit(tty_restore);
	return 1;
}

/* The keys typed since the last snapshot: q stops the program, p pauses. */
static void read_keys(struct top *t, int pid)
{
	struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
	char buf[64];
	ssize_t n;

	while (poll(&pfd, 1, 0) > 0 && (n = read(STDIN_FILENO, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n; i++) {
			if ((buf[i] == 'q' || buf[i] == 'Q') && !t->quitting) {
				t->quitting = 1;
				if (pid > 0)
					kill(pid, SIGTERM);
			} else if (buf[i] == 'p' || buf[i] == 'P')
				t->paused = !t->paused;
		}
}

/* The collector's snapshot: merge by name, take the interval against the
 * previous one, show it (live) or keep it (--once). */
static void on_snapshot(void *arg, const struct collector_snapshot *s)
{
	struct top *t = arg;
	struct tfn *v = calloc(s->nfns + 1, sizeof *v);
	size_t n = 0;

	if (!v)
		return;
	for (size_t i = 0; i < s->nfns; i++) {
		v[i].name = strdup(s->fns[i].name ? s->fns[i].name : "?");
		if (!v[i].name) {
			free_fns(v, i);
			return;
		}
		v[i].calls = s->fns[i].calls;
		v[i].self_ns = s->fns[i].self_ns;
		v[i].total_ns = s->fns[i].total_ns;
	}
	qsort(v, s->nfns, sizeof *v, by_name);
	for (size_t i = 0; i < s->nfns; i++) {
		if (n && !strcmp(v[n - 1].name, v[i].name)) {
			v[n - 1].calls += v[i].calls;
			v[n - 1].self_ns += v[i].self_ns;
			v[n - 1].total_ns += v[i].total_ns;
			free(v[i].name);
			continue;
		}
		v[n++] = v[i];
	}
	/* the last interval: against the previous snapshot (sorted by name) */
	for (size_t i = 0; i < n; i++) {
		const struct tfn *p = bsearch(&v[i], t->prev, t->nprev, sizeof *v, by_name);
		v[i].icalls = v[i].calls - (p && p->calls <= v[i].calls ? p->calls : 0);
		v[i].iself_ns = v[i].self_ns - (p && p->self_ns <= v[i].self_ns ? p->self_ns : 0);
	}
	free_fns(t->prev, t->nprev);
	t->prev = v;
	t->nprev = n;
	t->prev_ns = t->elapsed_ns;
	free_fns(t->cur, t->ncur);
	t->cur = calloc(n + 1, sizeof *t->cur);
	t->ncur = 0;
	if (!t->cur)
		return;
	for (size_t i = 0; i < n; i++) {
		t->cur[i] = v[i];
		t->cur[i].name = strdup(v[i].name);
		if (!t->cur[i].name)
			break;
		t->ncur++;
	}
	qsort(t->cur, t->ncur, sizeof *t->cur, by_self);
	t->elapsed_ns = s->elapsed_ns;
	t->threads = s->threads;
	if (t->keys)
		read_keys(t, s->pid);
	if (!t->once && !s->final && !t->paused) {
		if (isatty(STDOUT_FILENO))
			fputs("\033[H\033[2J", stdout);
		print_text(t, stdout);
		if (t->keys)
			fputs("\nq: quit  p: pause\n", stdout);
		fflush(stdout);
	} else if (t->keys && !t->once && !s->final) {
		fputs("\r(paused: p resumes)", stdout);
		fflush(stdout);
	}
}

/* The temporary capture of a run without -o, and its directory. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];

	if (d) {
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
				snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
				unlink(path);
			}
		closedir(d);
	}
	rmdir(dir);
}

int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{"once", no_argument, NULL, '1'},
		{"format", required_argument, NULL, 'O'},
		{"limit", required_argument, NULL, 'n'},
		{"output", required_argument, NULL, 'o'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct top t = {.limit = 20};
	struct collector_opts o;
	struct collector_result r;
	struct stat prog_st;
	char err[512], tmpdir[4096] = "", tmpcap[4200];
	int c, rc, format_given = 0;

	memset(&o, 0, sizeof o);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:n:o:qh", opts, NULL)) != -1) {
		switch (c) {
		case '1':
			t.once = 1;
			break;
		case 'O':
			t.json = cli_format_json("top", optarg);
			format_given = 1;
			break;
		case 'n':
			t.limit = (size_t)cli_parse_uint("top", "--limit", optarg, 0, 1000000000);
			break;
		case 'o':
			o.output = optarg;
			break;
		case 'q':
			t.quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			cli_bad_option("top", c, argv);
		}
	}
	if (optind >= argc)
		cli_die(2, "top: no program given (usage: cygprof top [options] -- PROG [ARGS...])");
	if (format_given && !t.once)
		cli_die(2, "top: --format goes with --once");
	if (o.output && !*o.output)
		cli_die(2, "top: --output needs a file name");
	o.argv = argv + optind;
	cli_check_program(o.argv[0], &prog_st);
	if (o.output)
		cli_output_check("top", o.output, CLI_OUT_CAPTURE, 0, &prog_st);
	char *rt = cli_find_runtime("libcygprof-cyg.so");
	if (!rt)
		cli_die(1, "cannot find the runtime libcygprof-cyg.so next to this cygprof");
	o.runtime = rt;
	o.quiet = 1;
	o.snapshot = on_snapshot;
	o.snapshot_arg = &t;
	if (!o.output) {
		const char *td = getenv("TMPDIR");
		snprintf(tmpdir, sizeof tmpdir, "%s/cygprof-top.XXXXXX", td && *td ? td : "/tmp");
		if (!mkdtemp(tmpdir))
			cli_die(1, "top: cannot make a temporary directory in %s: %s",
				td && *td ? td : "/tmp", strerror(errno));
		snprintf(tmpcap, sizeof tmpcap, "%s/top.cyg", tmpdir);
		o.output = tmpcap;
	}

	if (!t.once)
		t.keys = tty_keys();
	rc = collector_record(&o, &r, err, sizeof err);
	tty_restore();
	free(rt);
	if (tmpdir[0])
		remove_dir(tmpdir);
	if (rc) {
		free_fns(t.cur, t.ncur);
		free_fns(t.prev, t.nprev);
		if (r.exec_errno)
			cli_die(r.exec_errno == ENOENT ? 127 : 126, "%s", err);
		cli_die(1, "%s", err);
	}
	if (t.json)
		print_json(&t, stdout, r.status);
	else {
		if (!t.once && isatty(STDOUT_FILENO))
			fputs("\033[H\033[2J", stdout); /* the last snapshot in place */
		print_text(&t, stdout);
	}
	fflush(stdout);
	if (r.damaged[0])
		cli_warn("warning: %s", r.damaged);
	if (!r.calls && !t.quiet)
		cli_warn("warning: no instrumented function was called: build %s with "
			 "-finstrument-functions",
			 o.argv[0]);
	free_fns(t.cur, t.ncur);
	free_fns(t.prev, t.nprev);
	if (WIFSIGNALED(r.status))
		return 128 + WTERMSIG(r.status);
	return WEXITSTATUS(r.status);
}
