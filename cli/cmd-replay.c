/* SPDX-License-Identifier: MIT */
/* cmd-replay.c - cygprof replay: the recorded timeline as an indented call
 * trace with durations (uftrace replay style), threads merged by time. */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "cli.h"
#include "debuginfo.h"
#include "profile.h"
#include "format.h"
#include "progress.h"
#include "view.h"
#include "textesc.h"

/* What a wait for the collector is called in the trace. */
#define REPLAY_WAIT_NAME "[cygprof: waiting for the collector]"

static void usage(FILE *f)
{
	fprintf(f, "usage: cygprof replay [options] [FILE]\n"
		   "\n"
		   "Print the timeline of a capture recorded with --timeline (FILE defaults to\n"
		   CYGPROF_DEFAULT_CAPTURE ") as an indented call trace with durations; the\n"
		   "threads are merged by time.  A thread's waits for cygprof's collector (its\n"
		   "ring was full) are lines of their own, \"" REPLAY_WAIT_NAME "\",\n"
		   "inside the call they interrupted.\n"
		   "\n"
		   "options:\n"
		   "  --tid N                only the thread(s) with this tid\n"
		   "  --function PATTERN     only calls to functions matching the glob PATTERN\n"
		   "                         and the calls made inside them (shown at their\n"
		   "                         depth in the whole trace)\n"
		   "  --no-progress          no progress line on standard error (shown when it is\n"
		   "                         a terminal, standard output is not, and the replay\n"
		   "                         runs past a second; give it when piping to a pager)\n"
		   CLI_FILTER_HELP
		   "                         (replay shows the calls running at START or\n"
		   "                         END too, whole and marked: found by time, the\n"
		   "                         rest of the timeline is not read)\n"
		   CLI_DEBUG_HELP
		   "  -h, --help             this help\n");
}

struct frame {
	uint32_t node;
	uint64_t ts;
};

struct rthread {
	const struct profile_thread *pt;
	/* the events read and not yet printed: a block at a time from cur, or
	 * (a filtered view) all of them */
	struct cygprof_event *ev;
	size_t nev, pos, evcap;
	struct view_ecursor *cur;
	int done; /* cur has no more blocks */
	struct frame *stack;
	size_t depth, stack_cap;
	uint32_t *base; /* per node: depth of the outermost shown ancestor, 0 = hidden */
	/* its waits for the collector (view_waits()), in start order, and the
	 * next one to print */
	const struct cygprof_offcpu **wait;
	size_t nwait, wpos;
};

static void push(struct rthread *t, uint32_t node, uint64_t ts)
{
	if (ARRAY_GROW(t->stack, t->stack_cap, t->depth + 1))
		cli_die(1, "out of memory");
	t->stack[t->depth].node = node;
	t->stack[t->depth].ts = ts;
	t->depth++;
}

/* Pop up to and including node; returns 1 with its entry time when found. */
static int pop(struct rthread *t, uint32_t node, uint64_t *ts)
{
	size_t i = t->depth;

	while (i > 0 && t->stack[i - 1].node != node)
		i--;
	if (!i)
		return 0;
	*ts = t->stack[i - 1].ts;
	t->depth = i - 1;
	return 1;
}

static const char *node_name(const struct profile *p, const struct rthread *t, uint32_t node)
{
	if (node == 0 || node >= t->pt->n)
		return "?";
	return p->fns[t->pt->nodes[node].fn].name;
}

/* Deeper calls are indented as deep as this, with their depth in brackets:
 * a recursion a million deep would otherwise print terabytes of spaces. */
#define REPLAY_INDENT_MAX 100

static void line_head(const struct rthread *t, int has_dur, uint64_t ns, uint32_t node)
{
	char buf[32];
	uint32_t d = 0;

	if (node < t->pt->n && t->base[node])
		d = t->pt->nodes[node].depth - t->base[node];
	printf("%11s [%6u] | ", has_dur ? fmt_dur(buf, sizeof(buf), ns) : "", t->pt->info.tid);
	if (d > REPLAY_INDENT_MAX) /* a deep recursion: its depth, not a wall of spaces */
		printf("%*s[%u] ", REPLAY_INDENT_MAX * 2, "", d);
	else
		printf("%*s", (int)d * 2, "");
}

static int shown(const struct rthread *t, uint32_t node)
{
	return node < t->pt->n && t->base[node];
}

/* At least two events ahead (a leaf call is an enter and its exit), unless
 * the thread has no more: the next block from the cursor. */
static void refill(struct rthread *t, const char *file)
{
	while (t->cur && !t->done && t->nev - t->pos < 2) {
		const struct cygprof_event *e;
		size_t n, left = t->nev - t->pos;

		if (left && t->pos)
			memmove(t->ev, t->ev + t->pos, left * sizeof(*t->ev));
		t->nev = left;
		t->pos = 0;
		cli_check(view_ecursor_next(t->cur, &e, &n), file);
		if (!n) {
			t->done = 1;
			break;
		}
		if (ARRAY_GROW(t->ev, t->evcap, t->nev + n))
			cli_die(1, "out of memory");
		memcpy(t->ev + t->nev, e, n * sizeof(*e));
		t->nev += n;
	}
}

/* --time-range: the window (the calls that cross its edges are shown with
 * their true times, marked) */
static const struct view_filter *range;

static const char *before(uint64_t ts)
{
	return range && ts < range->t0 ? " /* entered before the range */" : "";
}

static const char *after(uint64_t ts)
{
	return range && ts >= range->t1 ? " /* ends after the range */" : "";
}

/* The start of the thread's next wait for the collector, UINT64_MAX when
 * none is left. */
static uint64_t next_wait(const struct rthread *t)
{
	return t->wpos < t->nwait ? t->wait[t->wpos]->start_ns : UINT64_MAX;
}

/* The thread's next wait for the collector, as a line inside the call it
 * interrupted (its time is out of the hooks' figures, not out of the
 * timeline's). */
static void step_wait(struct rthread *t, const char *pattern)
{
	const struct cygprof_offcpu *w = t->wait[t->wpos++];
	uint32_t d = 0, node = t->depth ? t->stack[t->depth - 1].node : 0;
	char buf[32];

	if (pattern && !shown(t, node))
		return;
	if (shown(t, node))
		d = t->pt->nodes[node].depth - t->base[node] + 1;
	printf("%11s [%6u] | ", fmt_dur(buf, sizeof(buf), w->end_ns - w->start_ns),
	       t->pt->info.tid);
	if (d > REPLAY_INDENT_MAX)
		printf("%*s[%u] ", REPLAY_INDENT_MAX * 2, "", d);
	else
		printf("%*s", (int)d * 2, "");
	printf("%s\n", REPLAY_WAIT_NAME);
}

/* Print the thread's next event (two for a leaf call). */
static void step(const struct profile *p, struct rthread *t)
{
	const struct cygprof_event *e = &t->ev[t->pos];
	uint64_t ts;

	if (e->kind == CYGPROF_EV_ENTER) {
		const struct cygprof_event *x = t->pos + 1 < t->nev ? e + 1 : NULL;

		/* a leaf call in one line, unless it waited for the collector */
		if (x && x->node == e->node && next_wait(t) >= x->ts_ns &&
		    (x->kind == CYGPROF_EV_EXIT || x->kind == CYGPROF_EV_UNWIND)) {
			if (shown(t, e->node)) {
				line_head(t, 1, x->ts_ns - e->ts_ns, e->node);
				printf("%s();%s%s%s\n", text_esc(node_name(p, t, e->node)),
				       x->kind == CYGPROF_EV_UNWIND ? " /* unwound */" : "",
				       before(e->ts_ns), after(x->ts_ns));
			}
			t->pos += 2;
			return;
		}
		if (shown(t, e->node)) {
			line_head(t, 0, 0, e->node);
			printf("%s() {%s\n", text_esc(node_name(p, t, e->node)), before(e->ts_ns));
		}
		push(t, e->node, e->ts_ns);
	} else {
		int found = pop(t, e->node, &ts);

		if (shown(t, e->node)) {
			line_head(t, found, found ? e->ts_ns - ts : 0, e->node);
			printf("} /* %s */%s%s\n", text_esc(node_name(p, t, e->node)),
			       e->kind == CYGPROF_EV_UNWIND ? " /* unwound */" : "",
			       after(e->ts_ns));
		}
	}
	t->pos++;
}

/* The events the threads' cursors have read, of all they will read. */
static void show_progress(struct cli_progress *pg, const struct rthread *rt, size_t n)
{
	uint64_t read = 0, total = 0, r, t;
	size_t i;

	for (i = 0; i < n; i++) {
		view_ecursor_progress(rt[i].cur, &r, &t);
		read += r;
		total += t;
	}
	cli_progress_set(pg, NULL, read, total);
}

int cmd_replay(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"tid", required_argument, NULL, 't'},
		{"function", required_argument, NULL, 0x4200},
		{"no-progress", no_argument, NULL, 0x4201},
		CLI_FILTER_OPTIONS,
		CLI_DEBUG_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct debuginfo *di = cli_debuginfo_new();
	struct cli_filter filt = {0};
	const struct cygprof_thread *threads;
	const struct cygprof_proc *procs;
	struct rthread *rt;
	struct profile *p;
	struct view *v;
	const char *file, *pattern = NULL;
	uint32_t *sel;
	size_t nthreads, nprocs, nsel = 0, i, j;
	struct view_limits lim;
	struct cli_progress pg;
	long tid = -1;
	int c, tail = 0, no_progress = 0;
	unsigned steps = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hF:N:D:", lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			debuginfo_free(di);
			return 0;
		case 0x4200:
			pattern = optarg;
			break;
		case 0x4201:
			no_progress = 1;
			break;
		case CLI_O_FILTER:
		case CLI_O_NOTRACE:
		case CLI_O_DEPTH:
		case CLI_O_TIME_RANGE:
			cli_filter_option(&filt, "replay", c, optarg);
			break;
		case 't':
			tid = (long)cli_parse_uint("replay", "--tid", optarg, 1, UINT32_MAX);
			break;
		case CLI_O_DEBUG_DIR:
		case CLI_O_SYMFS:
			cli_debug_option(di, "replay", c, optarg);
			break;
		default:
			cli_bad_option("replay", c, argv);
		}
	}
	file = cli_capture_arg("replay", argc, argv);
	cli_debuginfo_env(di);
	/* the events read; not over the trace itself on a terminal */
	cli_progress_init(&pg, "replay", "events", !no_progress && !isatty(STDOUT_FILENO));

	v = cli_open_view(file, di);
	cli_need(v, file, "timeline", "timeline");
	cli_filter_apply(&filt, v, "replay", file);
	range = view_get_filter(v);
	if (range && !range->has_range)
		range = NULL;

	cli_check(view_threads(v, &threads, &nthreads), file);
	cli_check(view_procs(v, &procs, &nprocs), file);
	sel = calloc(nthreads ? nthreads : 1, sizeof(*sel));
	if (!sel)
		cli_die(1, "out of memory");
	for (i = 0; i < nthreads; i++) {
		if (tid >= 0 && threads[i].tid != (uint32_t)tid)
			continue;
		sel[nsel++] = threads[i].idx;
	}
	if (tid >= 0 && !nsel)
		cli_die(1, "%s: no thread with tid %ld", file, tid);

	cli_check(profile_load(v, sel, nsel, &p), file);
	rt = calloc(nsel ? nsel : 1, sizeof(*rt));
	if (!rt)
		cli_die(1, "out of memory");
	for (i = 0; i < nsel; i++) {
		struct rthread *t = &rt[i];
		const struct profile_tnode *nd;

		t->pt = &p->threads[i];
		nd = t->pt->nodes;
		t->base = calloc(t->pt->n ? t->pt->n : 1, sizeof(*t->base));
		if (!t->base)
			cli_die(1, "out of memory");
		for (j = 1; j < t->pt->n; j++) {
			if (t->base[nd[j].parent])
				t->base[j] = t->base[nd[j].parent];
			else if (!pattern || !fnmatch(pattern, p->fns[nd[j].fn].name, 0))
				t->base[j] = nd[j].depth;
		}
		/* a block at a time (a time range: its window at once) */
		cli_check(view_ecursor_open(v, sel[i], &t->cur), file);
		/* its waits for the collector (in a time range: those in it) */
		const struct cygprof_offcpu *w;
		size_t nw;
		cli_check(view_waits(v, &w, &nw), file);
		t->wait = calloc(nw ? nw : 1, sizeof(*t->wait));
		if (!t->wait)
			cli_die(1, "out of memory");
		for (j = 0; j < nw; j++)
			if (w[j].thread_idx == sel[i] &&
			    (!range || (w[j].start_ns >= range->t0 && w[j].start_ns < range->t1)))
				t->wait[t->nwait++] = &w[j];
	}

	/* A capture cut off or still being written: its trees are those of the
	 * last checkpoint, and the events after it are marked as a tail. */
	view_limits(v, &lim);
	printf("# DURATION     TID     FUNCTION\n");
	show_progress(&pg, rt, nsel);
	for (;;) {
		struct rthread *next = NULL;

		for (i = 0; i < nsel; i++)
			refill(&rt[i], file);
		uint64_t at = UINT64_MAX, wt;
		int wait = 0;
		for (i = 0; i < nsel; i++) {
			if (rt[i].pos < rt[i].nev && rt[i].ev[rt[i].pos].ts_ns < at) {
				next = &rt[i];
				at = rt[i].ev[rt[i].pos].ts_ns;
				wait = 0;
			}
			/* a wait before the thread's next event (after its last) */
			if ((wt = next_wait(&rt[i])) != UINT64_MAX && wt <= at &&
			    (rt[i].pos < rt[i].nev ? wt <= rt[i].ev[rt[i].pos].ts_ns : 1)) {
				next = &rt[i];
				at = wt;
				wait = 1;
			}
		}
		if (!next)
			break;
		if (wait) {
			step_wait(next, pattern);
			continue;
		}
		if (lim.incomplete && !tail && next->ev[next->pos].ts_ns > lim.checkpoint_ns) {
			printf("# --- the last checkpoint (%.3f s): a partial tail follows, "
			       "its new call paths shown as ? ---\n", (double)lim.checkpoint_ns / 1e9);
			tail = 1;
		}
		step(p, next);
		if (!(++steps & 0xfff))
			show_progress(&pg, rt, nsel);
	}

	for (i = 0; i < nsel; i++) {
		free(rt[i].ev);
		view_ecursor_close(rt[i].cur);
		free(rt[i].stack);
		free(rt[i].base);
		free(rt[i].wait);
	}
	free(rt);
	free(sel);
	profile_free(p);
	cli_finish(v);
	cli_progress_end(&pg);
	debuginfo_free(di);
	return 0;
}
