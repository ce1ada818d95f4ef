/* SPDX-License-Identifier: MIT */
/* cmd-top.c - cygprof top: run a program under the collector and show, as
 * it runs, its hottest functions (self time, calls, total time) over the
 * last interval and in total, per thread on request, and with --memory its
 * live heap and the stacks that hold it.
 *
 * The options, the JSON, and the glue: the collector calls back at every
 * turn of its poll loop (keys, the window's size) and with a snapshot every
 * --delay (collector_opts.snapshot); the engine (top/: the rows, the view's
 * layout and keys, the terminal) makes them into what is shown.  On a
 * terminal the view takes the whole screen (the alternate screen, put back
 * at the end) and the program's output goes to a file (--output-of,
 * /dev/null by default); elsewhere each snapshot is printed as a plain
 * table.  --once: no live view, one snapshot at the end (text or JSON). */
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
#include <unistd.h>

#include "cli.h"
#include "attach-elf.h"
#include "textesc.h"
#include "collector.h"
#include "json.h"
#include "term.h"
#include "top.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof top [options] [--] PROG [ARGS...]\n"
		"       cygprof top --attach PID [--duration SEC] [options]\n\n"
		"Run PROG (built with -finstrument-functions) and show, refreshed as it runs, its\n"
		"hottest functions: self time and calls over the last interval and in total,\n"
		"and total time.  Exits with PROG's exit status, or 128+N when signal N ended\n"
		"it (q stops it with SIGTERM: 143).  With --attach, watch a running process\n"
		"built with -finstrument-functions instead (as 'record --attach'); q detaches\n"
		"and it runs on.\n\n"
		"options:\n"
		"      --attach PID       watch the running process PID instead of starting one\n"
		"                         (docs/attach.md); it runs on after q, --duration or\n"
		"                         Ctrl-C.  Not with --memory\n"
		"      --duration SEC     with --attach: detach after SEC (e.g. 500ms, 10s)\n"
		"  -d, --delay SECS       refresh every SECS seconds (default 1; 0.05 to 3600)\n"
		"  -s, --sort KEY[,KEY]   order by these keys: self, total, calls, name\n"
		"                         (default self,calls); numbers largest first\n"
		"      --view=interval|total  sort and share by the last interval (default)\n"
		"                         or by the whole run\n"
		"      --threads          one block per thread (tid and name)\n"
		"      --memory           also trace the malloc family (as 'record --memory')\n"
		"                         and show the live heap and the stacks holding it\n"
		"  -n, --limit N          show at most N functions (per thread with --threads)\n"
		"                         and N heap stacks (default 20, 0: all)\n"
		"  -O, --output-of FILE   PROG's standard output and error go to FILE (appended);\n"
		"                         on a terminal by default to /dev/null (they would\n"
		"                         garble the view), and its input is /dev/null;\n"
		"                         with --format=json too (stdout holds only JSON)\n"
		"      --once             no live view: run PROG to its end, then print one\n"
		"                         snapshot (PROG's output passes through, but for\n"
		"                         --format=json)\n"
		"      --format=text|json text (default) or JSON: one object per snapshot, one\n"
		"                         a line (no full screen; with --once the last only)\n"
		"  -o, --output FILE      also keep the capture (as 'cygprof record -o' writes\n"
		"                         it); only an earlier capture there is replaced\n"
		"  -q, --quiet            no warning when no instrumented function was called\n"
		CLI_TIME_HELP
		"  -h, --help             this help\n\n"
		"Keys on a terminal: q (or ^C) stop PROG (SIGTERM; twice: SIGKILL) and quit,\n"
		"p pause the display, s next sort key, t per thread or merged, d last interval\n"
		"or total, h or ? help.\n");
}

struct top {
	struct top_view v; /* what is shown and how: the keys change it */
	int once, json, quiet, memory;
	uint64_t delay_ns;
	int keys;          /* keys are read from key_fd */
	int key_fd;
	FILE *out;         /* where the view goes */
	int quitting;
	int pid;
	uint64_t duration_ns;
	struct attach_target *target;
	struct top_snap cur;
	int have;
	unsigned rows, cols;
};

/* ---- output --------------------------------------------------------------------- */

static void json_row(FILE *f, const struct top_row *x, int tid)
{
	fputs("{\"name\":", f);
	json_str(f, x->name);
	if (tid)
		fprintf(f, ",\"tid\":%u", x->tid);
	fprintf(f,
		",\"calls\":%llu,\"self_ns\":%llu,\"total_ns\":%llu,"
		"\"interval_calls\":%llu,\"interval_self_ns\":%llu,\"interval_total_ns\":%llu}",
		(unsigned long long)x->calls, (unsigned long long)x->self_ns,
		(unsigned long long)x->total_ns, (unsigned long long)x->icalls,
		(unsigned long long)x->iself_ns, (unsigned long long)x->itotal_ns);
}

/* One snapshot as one line of JSON; status: PROG's wait status (the last
 * one), or -1 (a live one). */
static void print_json(struct top *t, FILE *f, int status)
{
	struct top_snap *s = &t->cur;
	size_t shown = 0;

	fprintf(f, "{\"elapsed_ns\":%llu,\"interval_ns\":%llu,\"final\":%s,\"threads\":%zu,",
		(unsigned long long)s->elapsed_ns, (unsigned long long)s->interval_ns,
		status == -1 ? "false" : "true", s->nthr);
	if (status == -1)
		;
	else if (t->v.attach_pid)
		fprintf(f, "\"attached\":%d,", t->v.attach_pid);
	else if (WIFSIGNALED(status))
		fprintf(f, "\"signal\":%d,", WTERMSIG(status));
	else
		fprintf(f, "\"exit_status\":%d,", WEXITSTATUS(status));
	fprintf(f, "\"view\":\"%s\",\"sort\":[", t->v.interval ? "interval" : "total");
	for (size_t i = 0; i < t->v.nsort; i++)
		fprintf(f, "%s\"%s\"", i ? "," : "", top_key_names[t->v.sort[i]]);
	fprintf(f, "],\"calls\":%llu,\"interval_calls\":%llu,", (unsigned long long)s->calls,
		(unsigned long long)s->icalls);
	fprintf(f, "\"rings\":{\"count\":%u,\"fullest_pct\":%u,\"lost\":%llu,\"waits\":%llu},",
		s->rings, s->ring_fill_pct, (unsigned long long)s->ring_lost,
		(unsigned long long)s->ring_waits);
	fprintf(f, "\"functions\":[");
	for (size_t i = 0; i < s->nmerged && (!t->v.limit || i < t->v.limit); i++) {
		if (i)
			fputc(',', f);
		json_row(f, &s->merged[i], 0);
	}
	fprintf(f, "],\"per_thread\":[");
	for (size_t b = 0; b < s->nthr; b++) {
		fprintf(f, "%s{\"tid\":%u,\"pid\":%u,\"name\":", b ? "," : "", s->thr[b].tid,
			s->thr[b].pid);
		json_str(f, s->thr[b].name);
		fprintf(f, ",\"ended\":%s,\"functions\":[", s->thr[b].ended ? "true" : "false");
		shown = 0;
		for (size_t i = 0; i < s->nper; i++) {
			if (s->per[i].tid != s->thr[b].tid || (t->v.limit && shown >= t->v.limit))
				continue;
			if (shown++)
				fputc(',', f);
			json_row(f, &s->per[i], 1);
		}
		fputs("]}", f);
	}
	fputs("]", f);
	if (s->has_heap) {
		const struct collector_heap *h = &s->heap;
		fprintf(f,
			",\"memory\":{\"live_bytes\":%llu,\"live_blocks\":%llu,\"peak_bytes\":%llu,"
			"\"allocations\":%llu,\"frees\":%llu,\"allocated_bytes\":%llu,"
			"\"freed_bytes\":%llu,\"untracked_frees\":%llu,"
			"\"interval_allocations\":%llu,\"allocations_per_s\":%.3f,\"stacks\":[",
			(unsigned long long)h->live_bytes, (unsigned long long)h->live_blocks,
			(unsigned long long)h->peak_bytes, (unsigned long long)h->allocations,
			(unsigned long long)h->frees, (unsigned long long)h->allocated_bytes,
			(unsigned long long)h->freed_bytes, (unsigned long long)h->untracked_frees,
			(unsigned long long)s->iallocations, top_per_s(s->iallocations, s->interval_ns));
		for (size_t i = 0; i < s->nhs && (!t->v.limit || i < t->v.limit); i++) {
			const struct top_stack *x = &s->hs[i];
			fprintf(f,
				"%s{\"id\":%u,\"live_bytes\":%llu,\"live_blocks\":%llu,"
				"\"allocations\":%llu,\"bytes\":%llu,\"frames\":[",
				i ? "," : "", x->id, (unsigned long long)x->live_bytes,
				(unsigned long long)x->live_blocks, (unsigned long long)x->allocations,
				(unsigned long long)x->bytes);
			for (size_t j = 0; j < x->nframes; j++) {
				if (j)
					fputc(',', f);
				json_str(f, x->frames[j]);
			}
			fputs("]}", f);
		}
		fputs("]}", f);
	}
	fputs("}\n", f);
}

/* The view, or the plain table: on the screen, drawn over the last one,
 * every line cut at the width. */
static void show(struct top *t)
{
	if (!t->have) {
		if (t->v.screen && top_term_winched()) {
			top_term_size(t->out, &t->rows, &t->cols);
			fprintf(t->out, "\033[2J\033[Hcygprof top: %s: waiting for the first snapshot",
				t->v.prog);
			fflush(t->out);
		}
		return;
	}
	if (t->json) {
		print_json(t, t->out, -1);
		fflush(t->out);
		return;
	}
	if (!t->v.screen) {
		top_render(&t->v, &t->cur, t->out, 0);
		fputc('\n', t->out);
		fflush(t->out);
		return;
	}
	if (top_term_winched()) {
		top_term_size(t->out, &t->rows, &t->cols);
		fputs("\033[2J", t->out);
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return;
	top_render(&t->v, &t->cur, m, t->rows);
	fclose(m);
	top_term_draw(t->out, buf, len, t->rows, t->cols);
	free(buf);
}

/* ---- the collector's calls -------------------------------------------------- */

/* The keys typed since the last turn: q stops PROG (SIGTERM; again:
 * SIGKILL), or detaches from the process attached to. */
static void read_keys(struct top *t)
{
	struct pollfd pfd = {.fd = t->key_fd, .events = POLLIN};
	char buf[64];
	ssize_t n;
	int redraw = 0;

	while (poll(&pfd, 1, 0) > 0 && (n = read(t->key_fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n; i++) {
			enum top_action a = top_key_press(&t->v, buf[i]);
			if (a == TOP_QUIT) {
				if (t->v.attach_pid)
					raise(SIGINT); /* the attach ends: detach, it runs on */
				else if (t->pid > 0)
					kill(t->pid, t->quitting ? SIGKILL : SIGTERM);
				t->quitting = 1;
			}
			redraw |= a != TOP_NONE;
		}
	if (redraw && t->have) {
		top_sort(&t->v, &t->cur);
		show(t);
	}
}

static void on_turn(void *arg, int pid)
{
	struct top *t = arg;

	t->pid = pid;
	if (t->keys)
		read_keys(t);
	if (top_term_winch_pending() && t->v.screen)
		show(t);
}

/* The collector's snapshot: made into rows against the previous one; shown
 * (live) or kept (--once). */
static void on_snapshot(void *arg, const struct collector_snapshot *s)
{
	struct top *t = arg;
	struct top_snap n;

	t->pid = s->pid;
	if (top_snap_build(t->have ? &t->cur : NULL, s, &t->v, &n))
		return;
	top_snap_free(&t->cur);
	t->cur = n;
	t->have = 1;
	/* paused: the figures on the screen stay (keys redraw with the new ones) */
	if (!t->once && !s->final && !t->v.paused)
		show(t);
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

static void parse_sort(struct top *t, char *arg)
{
	char *save = NULL, *k;

	t->v.nsort = 0;
	for (k = strtok_r(arg, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
		int i = top_key_find(k);
		if (i < 0)
			cli_die(2, "top: unknown sort key '%s' (self, total, calls, name)", k);
		if (t->v.nsort == TOP_SORT_MAX)
			cli_die(2, "top: at most %d sort keys", TOP_SORT_MAX);
		t->v.sort[t->v.nsort++] = (enum top_key)i;
	}
	if (!t->v.nsort)
		cli_die(2, "top: --sort needs a key (self, total, calls, name)");
}

/* Start the program under the collector and run it to its end; the one
 * place that fills in how it starts (--attach will set its field here). */
static int run_collector(struct top *t, struct collector_opts *o, struct collector_result *r,
			 char *err, size_t errlen)
{
	o->quiet = 1;
	o->snapshot = on_snapshot;
	o->snapshot_arg = t;
	o->snapshot_ns = t->once ? 0 : t->delay_ns;
	o->snapshot_stacks = t->v.limit;
	o->turn = t->once ? NULL : on_turn;
	o->memory = t->memory;
	if (t->memory)
		o->instruments = "calls,memory";
	if (t->v.attach_pid)
		return collector_attach(o, t->target, t->duration_ns, r, err, errlen);
	return collector_record(o, r, err, errlen);
}

int cmd_top(int argc, char **argv)
{
	enum { OPT_ONCE = 256, OPT_FORMAT, OPT_VIEW, OPT_THREADS, OPT_MEMORY, OPT_ATTACH,
	       OPT_DURATION };
	static const struct option opts[] = {
		{"once", no_argument, NULL, OPT_ONCE},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"limit", required_argument, NULL, 'n'},
		{"output", required_argument, NULL, 'o'},
		{"output-of", required_argument, NULL, 'O'},
		{"delay", required_argument, NULL, 'd'},
		{"sort", required_argument, NULL, 's'},
		{"view", required_argument, NULL, OPT_VIEW},
		{"threads", no_argument, NULL, OPT_THREADS},
		{"memory", no_argument, NULL, OPT_MEMORY},
		{"attach", required_argument, NULL, OPT_ATTACH},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"quiet", no_argument, NULL, 'q'},
		CLI_TIME_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct top t = {.v = {.limit = 20, .interval = 1, .sort = {TOP_SELF, TOP_CALLS}, .nsort = 2},
			.delay_ns = 1000000000ULL, .key_fd = -1};
	struct collector_opts o;
	struct collector_result r;
	struct stat prog_st;
	char err[4608], tmpdir[4096] = "", tmpcap[4200];
	int c, rc;

	memset(&o, 0, sizeof o);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:n:o:O:d:s:qh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_ONCE:
			t.once = 1;
			break;
		case OPT_FORMAT:
			t.json = cli_format_json("top", optarg);
			break;
		case CLI_O_RAW_TIMES:
		case CLI_O_TIMES:
			cli_time_option("top", c);
			o.raw_times = cli_raw_times;
			break;
		case 'n':
			t.v.limit = (size_t)cli_parse_uint("top", "--limit", optarg, 0, 1000000000);
			break;
		case 'o':
			o.output = optarg;
			break;
		case 'O':
			if (!*optarg)
				cli_die(2, "top: --output-of needs a file name");
			t.v.output_of = optarg;
			break;
		case 'd':
			t.delay_ns = (uint64_t)(cli_parse_real("top", "--delay", optarg, 0.05, 3600) *
						1e9);
			break;
		case 's':
			parse_sort(&t, optarg);
			break;
		case OPT_VIEW:
			if (!strcmp(optarg, "interval"))
				t.v.interval = 1;
			else if (!strcmp(optarg, "total"))
				t.v.interval = 0;
			else
				cli_die(2, "top: unknown --view '%s' (interval, total)", optarg);
			break;
		case OPT_THREADS:
			t.v.threads = 1;
			break;
		case OPT_MEMORY:
			t.memory = 1;
			break;
		case OPT_ATTACH:
			t.v.attach_pid = (int)cli_parse_uint("top", "--attach", optarg, 1, INT_MAX);
			break;
		case OPT_DURATION:
			t.duration_ns = cli_parse_duration("top", "--duration", optarg, "s",
							   86400000000000ULL * 365);
			if (!t.duration_ns)
				cli_die(2, "top: bad --duration value '%s' (more than 0)", optarg);
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
	if (t.duration_ns && !t.v.attach_pid)
		cli_die(2, "top: --duration goes with --attach (a program started runs to its end)");
	if (t.v.attach_pid) {
		char exe[64];

		if (optind < argc)
			cli_die(2, "top: --attach PID takes no program");
		if (t.memory)
			cli_die(2, "top: --attach shows calls only: not with --memory");
		if (t.v.output_of)
			cli_die(2, "top: --output-of goes with a program top starts, not --attach");
		t.target = calloc(1, sizeof *t.target);
		if (!t.target)
			cli_die(1, "top: out of memory");
		if (attach_check(t.v.attach_pid, t.target, err, sizeof err) < 0)
			cli_die(1, "top: %s", err);
		snprintf(exe, sizeof exe, "/proc/%d/exe", t.v.attach_pid);
		if (stat(exe, &prog_st) < 0)
			cli_die(1, "top: attach: no process %d", t.v.attach_pid);
		t.v.prog = t.target->exe;
	} else {
		if (optind >= argc)
			cli_die(2, "top: no program given (usage: cygprof top [options] -- PROG "
				"[ARGS...])");
		o.argv = argv + optind;
		t.v.prog = o.argv[0];
		cli_check_program(o.argv[0], &prog_st);
	}
	if (o.output && !*o.output)
		cli_die(2, "top: --output needs a file name");
	if (o.output) {
		cli_output_check("top", o.output, OUT_CAPTURE, 0, &prog_st);
		cli_output_lock("top", o.output);
	}
	if (t.v.output_of) {
		struct stat st;
		if (!stat(t.v.output_of, &st) && (S_ISDIR(st.st_mode) ||
						(st.st_dev == prog_st.st_dev &&
						 st.st_ino == prog_st.st_ino)))
			cli_die(1, "top: %s: %s", t.v.output_of,
				S_ISDIR(st.st_mode) ? "is a directory"
						    : "is the program itself");
	}
	const char *rtname = t.memory ? "libcygprof-mem.so" : "libcygprof-cyg.so";
	char *rt = cli_find_runtime(rtname);
	if (!rt)
		cli_die(1, "cannot find the runtime %s next to this cygprof", rtname);
	o.runtime = rt;
	if (!o.output) {
		const char *td = getenv("TMPDIR");
		snprintf(tmpdir, sizeof tmpdir, "%s/cygprof-top.XXXXXX", td && *td ? td : "/tmp");
		if (!mkdtemp(tmpdir))
			cli_die(1, "top: cannot make a temporary directory in %s: %s",
				td && *td ? td : "/tmp", strerror(errno));
		snprintf(tmpcap, sizeof tmpcap, "%s/top.cyg", tmpdir);
		o.output = tmpcap;
		o.no_compact = 1;
	}

	t.out = stdout;
	atexit(top_term_restore);
	if (!t.once && !t.json && isatty(STDOUT_FILENO)) {
		/* the full screen: PROG's output to the file, its input from
		 * /dev/null; the keys; the alternate screen */
		t.v.screen = 1;
		if (!t.v.output_of)
			t.v.output_of = "/dev/null";
		if (top_term_redirect(t.v.output_of, 1, &t.out, err, sizeof err) < 0)
			cli_die(1, "top: %s", err);
		t.key_fd = top_term_saved_in();
		t.keys = top_term_keys(t.key_fd, 1);
		top_term_screen(t.out);
	} else {
		/* JSON on stdout is JSON only: PROG's output goes elsewhere */
		if (t.json && !t.v.output_of && !t.v.attach_pid) {
			t.v.output_of = "/dev/null";
			fprintf(stderr, "cygprof: top: --format=json: %s's output goes to /dev/null "
				"(-O FILE keeps it)\n", text_esc(o.argv[0]));
		}
		if (t.v.output_of && top_term_redirect(t.v.output_of, 0, &t.out, err, sizeof err) < 0)
			cli_die(1, "top: %s", err);
		if (!t.once && isatty(STDIN_FILENO)) {
			t.key_fd = STDIN_FILENO;
			t.keys = top_term_keys(STDIN_FILENO, 0);
		}
	}
	rc = run_collector(&t, &o, &r, err, sizeof err);
	top_term_restore(); /* closes t.out, our copy of the standard output */
	t.out = stdout;
	t.v.screen = 0;
	free(rt);
	if (tmpdir[0])
		remove_dir(tmpdir);
	if (rc) {
		top_snap_free(&t.cur);
		if (r.exec_errno)
			cli_die(r.exec_errno == ENOENT ? 127 : 126, "%s", err);
		cli_die(1, "%s", err);
	}
	if (t.json)
		print_json(&t, stdout, r.status);
	else if (t.have) {
		/* the last snapshot (after a live view: on the normal screen) */
		top_render(&t.v, &t.cur, stdout, 0);
	}
	if (fflush(stdout))
		cli_die(1, "write error on standard output");
	if (r.damaged[0])
		cli_warn("warning: %s", r.damaged);
	cli_compact_warn(o.output, r.compact_err);
	if (!r.calls && !(t.memory && r.mem_events) && !t.quiet && !t.v.attach_pid)
		cli_warn("warning: no instrumented function was called: build %s with "
			 "-finstrument-functions",
			 o.argv[0]);
	top_snap_free(&t.cur);
	free(t.target);
	if (t.v.attach_pid)
		return 0; /* detached (or the process ended): it was never ours to wait for */
	if (WIFSIGNALED(r.status))
		return 128 + WTERMSIG(r.status);
	return WEXITSTATUS(r.status);
}
