/* SPDX-License-Identifier: MIT */
/* cmd-report.c - cygprof report: gprof-style flat profile and call graph,
 * calling-context trees, or JSON, from exact instrumented times. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "debuginfo.h"
#include "profile.h"
#include "psamples.h"
#include "report-print.h"
#include "report-latency.h"
#include "format.h"
#include "cpu.h"
#include "json.h"
#include "view.h"
#include "textesc.h"

struct report_opts {
	int per_thread;
	int flat, graph, tree;
	int json;
	struct print_opts print; /* style, sort, pattern */
	char times_note[256];    /* print.times_note */
	struct view *v;          /* the capture printed */
	const char *file;
	struct debuginfo *di;
	struct cli_filter filt;
	int top;                 /* uninstrumented functions listed (--top) */
	const struct psamp *ps;  /* the samples of the profile printed, or NULL */
	uint32_t pthread;        /* print_tree: the profile thread printed */
	int sort_given;          /* --sort: the tree's order too */
	double min_percent;      /* --tree: paths under this share are hidden */
	int min_percent_given;   /* --min-percent given: the flat profile's too */
	int latency;             /* --latency: the distributions of call durations */
	int slowest;             /* --slowest N: each function's slowest calls */
	int raw_times;           /* --raw-times given */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof report [options] [FILE]\n"
		"\n"
		"Exact flat profile and call graph (gprof layout) of a capture\n"
		"(FILE defaults to " CYGPROF_DEFAULT_CAPTURE ").  Functions are merged by name\n"
		"across threads and processes.  A capture with perf samples (record\n"
		"--sample, import-perf) also gets each function's sampled on-CPU time and\n"
		"off-CPU time beside its exact self time, and the uninstrumented functions\n"
		"(libc, libraries) the samples found, under their instrumented caller.\n"
		"\n"
		"options:\n"
		"  --flat                 only the flat profile\n"
		"  --graph                only the call graph\n"
		"  --tree                 the calling-context tree of every thread\n"
		"                         (call paths with calls, total and self time),\n"
		"                         children by total time, largest first\n"
		"  --min-percent P        hide the call paths under P%% of their thread's\n"
		"                         total time (--tree; default 0.5; 0: all) and the\n"
		"                         flat profile's functions under P%% of the total of\n"
		"                         the --sort key (self time by default; given only)\n"
		"  -n, --limit N          the flat profile's first N functions (0: all,\n"
		"                         the default)\n"
		"  --latency              each function's and call path's call durations:\n"
		"                         calls, min, mean, p50, p90, p99, p99.9, max,\n"
		"                         ranked by p99 (the tail first); --avg-total\n"
		"                         (uftrace's name) is the same\n"
		"  --slowest N            --latency with a timeline: the N slowest calls of\n"
		"                         each function listed, with their start times\n"
		"  --threads              one report per thread (flat profile unless\n"
		"                         --graph/--tree are given)\n"
		"  --sort KEY             flat profile order: self (default), total, calls,\n"
		"                         name; given, the tree's children's order too\n"
		"                         (default: total)\n"
		"  --function PATTERN     only show functions matching the glob PATTERN\n"
		CLI_FILTER_HELP
		"  --top N                uninstrumented functions listed from samples\n"
		"                         (default 20; 0: all)\n"
		"  --format FMT           text (default) or json\n"
		CLI_TIME_HELP CLI_DEBUG_HELP
		"  -h, --help             this help\n");
}

static int matches(const struct report_opts *o, const char *name)
{
	return print_matches(&o->print, name);
}

/* ---- calling-context tree ------------------------------------------------ */

static const char *base_name(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;

	return b ? b + 1 : path ? path : "?";
}

/* The uninstrumented functions samples found under node of the printed
 * thread, as rows below it: only the sampled columns, the name with its
 * object.  prefix is the node's children's, connector included. */
static void print_tree_leaves(const struct report_opts *o, uint32_t node, const char *prefix)
{
	const struct psamp *ps = o->ps;
	size_t lo = 0, hi = ps->npath_leaf, shown = 0;

	while (lo < hi) { /* the first entry of (pthread, node) */
		size_t mid = lo + (hi - lo) / 2;
		const struct psamp_path_leaf *e = &ps->path_leaf[mid];
		if (e->thread < o->pthread || (e->thread == o->pthread && e->node < node))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < ps->npath_leaf && (!o->top || shown < (size_t)o->top); lo++) {
		const struct psamp_path_leaf *e = &ps->path_leaf[lo];
		const struct psamp_leaf *l;
		char xb[32], ob[32];

		if (e->thread != o->pthread || e->node != node)
			break;
		l = &ps->leaf[e->leaf];
		shown++;
		printf("%8s  %10s  %10s %10s  %s  %s : %s%s (%s, sampled%s)\n", "", "", "", "",
		       fmt_dur(xb, sizeof(xb), e->cost.sample_ns),
		       fmt_dur(ob, sizeof(ob), e->cost.offcpu_ns), prefix, text_esc(l->name),
		       text_esc(base_name(l->object)), l->kernel ? ", in the kernel" : "");
	}
}

/* Which nodes of a thread's tree --tree shows (1), NULL when none: with
 * --function, the paths through a matching function (the match, its
 * ancestors and its whole subtree); never a path under --min-percent of
 * the thread's total time (its calls when the capture has no times),
 * counted in *hidden. */
static unsigned char *tree_shown(const struct profile *p, const struct profile_thread *th,
				 const struct report_opts *o, uint64_t *hidden)
{
	const struct profile_tnode *t = th->nodes;
	unsigned char *keep = calloc(th->n ? th->n : 1, 1);
	uint64_t base = 0, v;
	size_t i;

	*hidden = 0;
	if (!keep)
		cli_die(1, "out of memory");
	if (o->print.pattern) {
		for (i = 1; i < th->n; i++)
			if (matches(o, p->fns[t[i].fn].name) || (keep[t[i].parent] & 2))
				keep[i] = 3;
		for (i = th->n - 1; i >= 1; i--)
			if (keep[i])
				keep[t[i].parent] |= 1;
		if (!keep[0] && th->n > 1) {
			free(keep);
			return NULL;
		}
	} else {
		memset(keep, 1, th->n ? th->n : 1);
	}
	for (i = 1; i < th->n; i++)
		if (t[i].parent == 0)
			base += o->print.no_times ? t[i].calls : t[i].total_ns;
	for (i = 1; i < th->n; i++) {
		v = o->print.no_times ? t[i].calls : t[i].total_ns;
		if (!keep[i])
			continue;
		/* parents precede children: a hidden parent hides its subtree */
		if (!keep[t[i].parent] || (o->min_percent > 0 &&
					   (double)v * 100.0 < o->min_percent * (double)base)) {
			keep[i] = 0;
			++*hidden;
		}
	}
	return keep;
}

static void print_tree(const struct profile *p, const struct profile_thread *th,
		       const struct report_opts *o)
{
	const struct profile_tnode *t = th->nodes;
	unsigned char *keep;
	uint64_t hidden;
	char *prefix = NULL;
	size_t cap = 0;
	uint32_t cur;

	uint64_t base = 0; /* the thread's time: what a path's colour is a share of */
	uint64_t cbase = 0; /* its top-level calls: the share without times */

	keep = tree_shown(p, th, o, &hidden);
	if (!keep)
		return; /* nothing of interest in this thread */
	for (size_t i = 1; i < th->n; i++)
		if (t[i].parent == 0) {
			base += t[i].total_ns;
			cbase += t[i].calls;
		}
	printf("# calling-context tree: pid %u tid %u (%s)%s, %" PRIu64 " call paths\n",
	       th->info.pid, th->info.tid, text_esc(th->info.name), view_thread_note(th->info.flags),
	       (uint64_t)(th->n ? th->n - 1 : 0));
	if (o->print.sampled_times)
		printf("# %s\n", PRINT_SAMPLED_TIMES_NOTE);
	else if (o->v && cpu_times_sampled(o->v) && o->print.times_note)
		printf("# times: %s\n", o->print.times_note);
	else if (o->print.no_times)
		printf("# %s\n", PRINT_NO_TIMES_NOTE);
	const struct psamp_cost *pc = o->ps && o->pthread < o->ps->nthreads
					      ? o->ps->node[o->pthread] : NULL;
	/* waiting for a CPU and blocked per call path (cpu.h): the first
	 * never in its times, the second only with --times=wall */
	const struct view_cpu *vc = NULL;
	if (!pc && o->v && view_cpu(o->v, th->info.idx, &vc) == 0 &&
	    (!vc->present || !(vc->thread.wait_ns + vc->thread.blocked_ns) || vc->n != th->n))
		vc = NULL;
	int wall = cli_raw_times || cli_times == VIEW_TIMES_WALL || cli_times == VIEW_TIMES_HOOKS;
	/* TOTAL%: the path's share of its thread's time (of its calls when
	 * the capture has no times) */
	if (pc)
		printf("# TOTAL%%  TOTAL TIME   SELF TIME      CALLS     SAMPLED     OFF-CPU   FUNCTION\n");
	else if (vc)
		printf("# TOTAL%%  TOTAL TIME   SELF TIME      CALLS     WAITING     BLOCKED   FUNCTION  "
		       "(waiting for a CPU: not in the times; blocked: %s)\n",
		       wall ? "in them" : "not in them, --times=wall puts it in");
	else
		printf("# TOTAL%%  TOTAL TIME   SELF TIME      CALLS   FUNCTION\n");
	if (th->n <= 1) {
		printf("\n");
		free(keep);
		return;
	}
	/* prefix[(L - 1) * 2] is '|' while the level-L node being walked has a
	 * later shown sibling; the top level draws no connector */
	cur = t[0].first_child;
	while (cur != PROFILE_NONE) {
		const struct profile_tnode *nd = &t[cur];
		uint32_t d = nd->depth - 1, s;
		char tb[32], sb[32];

		if (keep[cur]) {
			if (cap < (size_t)d * 2 + 3) {
				cap = (size_t)d * 2 + 64;
				prefix = realloc(prefix, cap);
				if (!prefix)
					cli_die(1, "out of memory");
			}
			prefix[d ? (d - 1) * 2 : 0] = 0;
			printf("%7.2f%%  ", o->print.no_times
				   ? (cbase ? 100.0 * (double)nd->calls / (double)cbase : 0.0)
				   : (base ? 100.0 * (double)nd->total_ns / (double)base : 0.0));
			printf("%s  %s %10" PRIu64, fmt_dur(tb, sizeof(tb), nd->total_ns),
			       fmt_dur(sb, sizeof(sb), nd->self_ns), nd->calls);
			if (pc) {
				char xb[32], ob[32];
				printf("  %s  %s", fmt_dur(xb, sizeof(xb), pc[cur].sample_ns),
				       fmt_dur(ob, sizeof(ob), pc[cur].offcpu_ns));
			} else if (vc) {
				char wb[32], bb[32];
				printf("  %s  %s", fmt_dur(wb, sizeof(wb), vc->wait_ns[cur]),
				       fmt_dur(bb, sizeof(bb), vc->blocked_ns[cur]));
			}
			printf(" : %s%s%s%s%s\n", prefix, d ? "+-" : "",
			       cli_hot(base ? (double)nd->total_ns / (double)base : 0),
			       text_esc(p->fns[nd->fn].name), cli_reset());
			if (pc && o->ps->npath_leaf) {
				/* the node's children's prefix: its own, then
				 * '|' while it has a later shown sibling */
				char *cp = malloc((size_t)d * 2 + 3);
				size_t k = d ? (size_t)(d - 1) * 2 : 0;
				if (!cp)
					cli_die(1, "out of memory");
				memcpy(cp, prefix, k);
				if (d) {
					s = nd->next_sibling;
					while (s != PROFILE_NONE && !keep[s])
						s = t[s].next_sibling;
					cp[k++] = s != PROFILE_NONE ? '|' : ' ';
					cp[k++] = ' ';
				}
				memcpy(cp + k, "+-", 3);
				print_tree_leaves(o, cur, cp);
				free(cp);
			}
			if (nd->first_child != PROFILE_NONE) {
				if (d) {
					s = nd->next_sibling;
					while (s != PROFILE_NONE && !keep[s])
						s = t[s].next_sibling;
					prefix[(d - 1) * 2] = s != PROFILE_NONE ? '|' : ' ';
					prefix[(d - 1) * 2 + 1] = ' ';
				}
				cur = nd->first_child;
				continue;
			}
		}
		/* leaf or skipped subtree: on to the next sibling up the tree */
		while (cur != 0 && t[cur].next_sibling == PROFILE_NONE)
			cur = t[cur].parent;
		cur = cur == 0 ? PROFILE_NONE : t[cur].next_sibling;
	}
	if (hidden)
		printf("# %" PRIu64 " call path%s under %g%% of the thread's %s hidden "
		       "(--min-percent 0 shows all)\n", hidden, hidden == 1 ? "" : "s",
		       o->min_percent, o->print.no_times ? "calls" : "time");
	printf("\n");
	free(prefix);
	free(keep);
}

/* ---- samples beside exact times ------------------------------------------ */

static const struct psamp *sort_ps;
static const struct profile *sort_p;

static int cmp_sampled(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct psamp_cost *cx = &sort_ps->fn[x], *cy = &sort_ps->fn[y];

	if (cx->sample_ns != cy->sample_ns)
		return cx->sample_ns > cy->sample_ns ? -1 : 1;
	if (cx->offcpu_ns != cy->offcpu_ns)
		return cx->offcpu_ns > cy->offcpu_ns ? -1 : 1;
	if (sort_p->fns[x].self_ns != sort_p->fns[y].self_ns)
		return sort_p->fns[x].self_ns > sort_p->fns[y].self_ns ? -1 : 1;
	return strcmp(sort_p->fns[x].name, sort_p->fns[y].name);
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

/* The samples' section: each instrumented function's sampled on-CPU and
 * off-CPU time beside its exact self time, then the uninstrumented
 * functions the samples found, under their instrumented caller. */
/* On and off the CPU (the runtime's samples and context switches, cpu.h):
 * what each function's time was made of.  Its self time is the time it
 * ran; waiting for a CPU (preempted, runnable) is not in it (timemodel.h),
 * nor is blocked time (the program's own sleep or I/O) unless --times=wall. */
static const struct cpu_sum *sort_cs;

static int cmp_offcpu(const void *a, const void *b)
{
	const struct cpu_cost *x = &sort_cs->fn[*(const uint32_t *)a];
	const struct cpu_cost *y = &sort_cs->fn[*(const uint32_t *)b];
	uint64_t u = x->wait_ns + x->blocked_ns, w = y->wait_ns + y->blocked_ns;

	return u < w ? 1 : u > w ? -1 : 0;
}

static void print_offcpu(struct view *v, const struct profile *p, const struct report_opts *o)
{
	struct cpu_sum *cs = NULL;
	uint32_t *idx;
	size_t i, n = 0, limit = 20;

	cli_check(cpu_sum_load(v, p, &cs), o->file);
	if (!cs->present || !cs->switches ||
	    !(cs->total.wait_ns + cs->total.blocked_ns + cs->root.wait_ns + cs->root.blocked_ns)) {
		cpu_sum_free(cs);
		return;
	}
	printf("Off the CPU: %.6f seconds waiting for a CPU (preempted: not counted as any "
	       "function's time), %.6f seconds blocked (sleep, I/O, locks: %s).\n",
	       (double)(cs->total.wait_ns + cs->root.wait_ns) / 1e9,
	       (double)(cs->total.blocked_ns + cs->root.blocked_ns) / 1e9,
	       cli_raw_times || cli_times == VIEW_TIMES_WALL || cli_times == VIEW_TIMES_HOOKS
		       ? "counted as the time of the function that blocked"
		       : "not in the times above, which are CPU time; --times=wall counts it as "
			 "the time of the function that blocked");
	idx = malloc((p->nfns ? p->nfns : 1) * sizeof *idx);
	if (!idx)
		cli_die(1, "out of memory");
	for (i = 0; i < p->nfns; i++)
		if (cs->fn[i].wait_ns + cs->fn[i].blocked_ns && matches(o, p->fns[i].name))
			idx[n++] = (uint32_t)i;
	sort_cs = cs;
	qsort(idx, n, sizeof *idx, cmp_offcpu);
	if (n)
		printf("\n   self (ran)      waiting      blocked  name\n");
	for (i = 0; i < n && i < limit; i++) {
		const struct cpu_cost *c = &cs->fn[idx[i]];

		printf("%13.6f %12.6f %12.6f  %s\n", (double)p->fns[idx[i]].self_ns / 1e9,
		       (double)c->wait_ns / 1e9, (double)c->blocked_ns / 1e9,
		       text_esc(p->fns[idx[i]].name));
	}
	if (n > limit)
		printf("(%zu more functions were off the CPU: report --format=json lists them all)\n",
		       n - limit);
	printf("\n");
	free(idx);
	cpu_sum_free(cs);
}

static void print_sampled(struct view *v, const struct profile *p, const struct report_opts *o)
{
	const struct psamp *ps = o->ps;
	const char *ev = view_meta_str(v, "sample_event"), *hz = view_meta_str(v, "sample_hz");
	char b1[32], b2[32], b3[32];
	uint32_t *idx;
	size_t i, n = 0, shown = 0;

	printf("Samples");
	if (ev)
		printf(" (perf %s%s%s%s)", ev, hz ? " at " : "", hz ? hz : "", hz ? " Hz" : "");
	else if (ps->imported)
		printf(" (imported from perf)");
	printf(": %" PRIu64 " samples, %.3f s on CPU; %" PRIu64 " off-CPU intervals, %.3f s off CPU.\n",
	       ps->total.samples, (double)ps->total.sample_ns / 1e9, ps->total.offcpu_n,
	       (double)ps->total.offcpu_ns / 1e9);
	printf("Sampled times are estimates from the samples; a function's times include the\n"
	       "uninstrumented code it calls, as its exact self time does.\n");
	if (ps->total.samples || ps->overhead.offcpu_n)
		printf("Profiler overhead: %" PRIu64 " samples (%.2f%%), %.3f s on CPU, in cygprof's"
		       " runtime (hooks, malloc wrappers), charged to no function.\n",
		       ps->overhead.samples, pct(ps->overhead.samples, ps->total.samples),
		       (double)ps->overhead.sample_ns / 1e9);
	if (ps->kernel_samples)
		printf("%" PRIu64 " samples were in the kernel, charged to the code that called it.\n",
		       ps->kernel_samples);
	if (ps->unplaced)
		printf("%" PRIu64 " samples and intervals had a call chain that left the call tree:"
		       " counted per function, not per call path.\n", ps->unplaced);
	idx = malloc((p->nfns ? p->nfns : 1) * sizeof *idx);
	if (!idx)
		cli_die(1, "out of memory");
	for (i = 0; i < p->nfns; i++)
		if ((p->fns[i].calls || ps->fn[i].samples || ps->fn[i].offcpu_n) &&
		    matches(o, p->fns[i].name))
			idx[n++] = (uint32_t)i;
	sort_ps = ps;
	sort_p = p;
	qsort(idx, n, sizeof *idx, cmp_sampled);
	if (n) {
		printf("\n  exact self     sampled  samples  %%samples     off-CPU       calls  name\n");
		for (i = 0; i < n; i++) {
			const struct profile_fn *f = &p->fns[idx[i]];
			const struct psamp_cost *c = &ps->fn[idx[i]];
			if (o->print.no_times)
				printf("  %10s", "-");
			else
				printf("  %s", fmt_dur(b1, sizeof b1, f->self_ns));
			printf("  %s %8" PRIu64 "  %7.2f%%  %s  %10" PRIu64 "  %s\n",
			       fmt_dur(b2, sizeof b2, c->sample_ns), c->samples,
			       pct(c->samples, ps->total.samples), fmt_dur(b3, sizeof b3, c->offcpu_ns),
			       f->calls, text_esc(f->name));
		}
	}
	free(idx);
	for (i = 0; i < ps->nleaf; i++)
		if (matches(o, ps->leaf[i].name) ||
		    (ps->leaf[i].caller != PROFILE_NONE && matches(o, p->fns[ps->leaf[i].caller].name)))
			shown++;
	if (!shown) {
		printf("\n");
		return;
	}
	printf("\nUninstrumented functions found by samples%s, under their instrumented caller:\n",
	       o->top && shown > (size_t)o->top ? " (the first --top)" : "");
	printf("     sampled  samples  %%samples     off-CPU  function  [object]  <- caller\n");
	for (i = 0, shown = 0; i < ps->nleaf && (!o->top || shown < (size_t)o->top); i++) {
		const struct psamp_leaf *l = &ps->leaf[i];
		const char *caller = l->caller != PROFILE_NONE ? p->fns[l->caller].name : NULL;
		if (!matches(o, l->name) && !(caller && matches(o, caller)))
			continue;
		shown++;
		printf("  %s %8" PRIu64 "  %7.2f%%  %s  %s%s  [%s]  <- %s\n",
		       fmt_dur(b1, sizeof b1, l->cost.sample_ns), l->cost.samples,
		       pct(l->cost.samples, ps->total.samples), fmt_dur(b2, sizeof b2, l->cost.offcpu_ns),
		       text_esc(l->name), l->kernel ? " (in the kernel)" : "",
		       text_esc(base_name(l->object)), caller ? text_esc(caller) : "(no instrumented caller)");
	}
	printf("\n");
}

/* ---- latency (report-latency.c) ------------------------------------------- */

static void latency_opts(const struct report_opts *o, struct latency_opts *lo)
{
	memset(lo, 0, sizeof *lo);
	lo->file = o->file;
	lo->pattern = o->print.pattern;
	lo->top = o->top;
	lo->slowest = o->slowest;
	lo->raw = o->raw_times;
}

static void print_json_latency(struct view *v, const struct profile *p,
			       const struct report_opts *o)
{
	struct latency_opts lo;

	latency_opts(o, &lo);
	report_latency_json(v, p, &lo);
}

/* ---- JSON ------------------------------------------------------------------ */

/* --tree in JSON: per thread, its shown call paths in the text's order
 * (preorder, children ranked), each with its parent's id (0: a top-level
 * path), so that no reader has to recurse. */
static void print_json_tree(const struct profile *p, const struct report_opts *o)
{
	printf("\"tree\": [");
	for (size_t ti = 0; ti < p->nthreads; ti++) {
		const struct profile_thread *th = &p->threads[ti];
		const struct profile_tnode *t = th->nodes;
		uint64_t hidden;
		unsigned char *keep = tree_shown(p, th, o, &hidden);
		uint32_t cur = th->n > 1 ? t[0].first_child : PROFILE_NONE;
		int first = 1;

		printf("%s\n    {\"pid\": %u, \"tid\": %u, \"min_percent\": %g, "
		       "\"hidden_paths\": %" PRIu64 ", \"paths\": [", ti ? "," : "", th->info.pid,
		       th->info.tid, o->min_percent, hidden);
		while (keep && cur != PROFILE_NONE) {
			const struct profile_tnode *nd = &t[cur];

			if (keep[cur]) {
				printf("%s\n      {\"id\": %u, \"parent\": %u, \"depth\": %u, \"name\": ",
				       first ? "" : ",", cur, nd->parent, nd->depth);
				json_str(stdout, p->fns[nd->fn].name);
				printf(", \"calls\": %" PRIu64 ", \"total_ns\": %" PRIu64
				       ", \"self_ns\": %" PRIu64 "}", nd->calls, nd->total_ns, nd->self_ns);
				first = 0;
				if (nd->first_child != PROFILE_NONE) {
					cur = nd->first_child;
					continue;
				}
			}
			while (cur != 0 && t[cur].next_sibling == PROFILE_NONE)
				cur = t[cur].parent;
			cur = cur == 0 ? PROFILE_NONE : t[cur].next_sibling;
		}
		printf("%s]}", first ? "" : "\n    ");
		free(keep);
	}
	printf("%s],\n  ", p->nthreads ? "\n  " : "");
}

static void print_json(struct view *v, const struct profile *p, const struct report_opts *o)
{
	struct view_limits l;
	struct cpu_sum *cs;
	uint32_t *fns;
	size_t n, i, k, hidden_fns = 0;

	cli_check(cpu_sum_load(v, p, &cs), o->file);
	printf("{\n  \"meta\": ");
	cli_json_meta_object(stdout, v);
	printf(",\n");
	/* whether the hooks' cost was taken out of the times (view_overhead()) */
	printf("  \"times_compensated\": %s,\n", view_compensated(v) ? "true" : "false");
	/* call paths whose compensation stopped at their children's time */
	uint64_t clamped;
	cli_check(view_compensation_clamped(v, &clamped), o->file);
	printf("  \"compensation_clamped\": %" PRIu64 ",\n", clamped);
	printf("  \"total_self_ns\": %" PRIu64 ",\n", p->total_self_ns);
	/* --time=sampled --sample: self and total times are the samples' */
	printf("  \"sampled_times\": %s,\n",
	       o->print.sampled_times || cpu_times_sampled(v) ? "true" : "false");
	/* the runtime's CPU samples (record --cpu-freq) */
	printf("  \"cpu_sampler\": \"%s\",\n  \"cpu_period_ns\": %" PRIu64 ",\n", cpu_sampler(v),
	       cpu_period_ns(v));

	/* each function's latency too (report-latency.c), NULL without */
	struct lat_stats *ls = report_latency_fns(v, p, o->file);
	fns = print_sorted_fns(p, o->print.sort, &n);
	printf("  \"functions\": [");
	for (i = 0, k = 0; i < n; i++) {
		const struct profile_fn *f = &p->fns[fns[i]];

		if (!matches(o, f->name))
			continue;
		/* --min-percent and -n as the text's flat profile */
		if (!print_flat_kept(p, &o->print, f) || (o->print.limit && k == o->print.limit)) {
			hidden_fns++;
			continue;
		}
		printf("%s\n    {\"name\": ", k++ ? "," : "");
		json_str(stdout, f->name);
		printf(", \"calls\": %" PRIu64 ", \"self_ns\": %" PRIu64 ", \"total_ns\": %" PRIu64
		       ", \"recursive_calls\": %" PRIu64 ", \"spontaneous_calls\": %" PRIu64,
		       f->calls, f->self_ns, f->total_ns, f->rec_calls, f->root_calls);
		const struct cpu_cost *cc = &cs->fn[fns[i]];
		printf(", \"cpu_samples\": %" PRIu64 ", \"overhead_samples\": %" PRIu64
		       ", \"wait_ns\": %" PRIu64 ", \"blocked_ns\": %" PRIu64,
		       cc->samples, cc->overhead, cc->wait_ns, cc->blocked_ns);
		if (o->ps) {
			const struct psamp_cost *c = &o->ps->fn[fns[i]];
			printf(", \"samples\": %" PRIu64 ", \"sampled_ns\": %" PRIu64
			       ", \"offcpu_ns\": %" PRIu64,
			       c->samples, c->sample_ns, c->offcpu_ns);
		}
		report_latency_json_fn(ls, fns[i]);
		printf("}");
	}
	printf("%s],\n", k ? "\n  " : "");
	/* the functions --min-percent and --limit left out (added field) */
	printf("  \"functions_hidden\": %zu,\n", hidden_fns);
	free(fns);
	free(ls);

	printf("  \"arcs\": [");
	for (i = 0, k = 0; i < p->narcs; i++) {
		const struct profile_arc *a = &p->arcs[i];

		if (!matches(o, p->fns[a->caller].name) && !matches(o, p->fns[a->callee].name))
			continue;
		printf("%s\n    {\"caller\": ", k++ ? "," : "");
		json_str(stdout, p->fns[a->caller].name);
		printf(", \"callee\": ");
		json_str(stdout, p->fns[a->callee].name);
		printf(", \"calls\": %" PRIu64 ", \"self_ns\": %" PRIu64
		       ", \"children_ns\": %" PRIu64 "}",
		       a->calls, a->self_ns, a->children_ns);
	}
	printf("%s],\n  ", k ? "\n  " : "");
	if (o->ps) {
		const struct psamp *ps = o->ps;
		printf("\"samples\": {\"samples\": %" PRIu64 ", \"sampled_ns\": %" PRIu64
		       ", \"offcpu_intervals\": %" PRIu64 ", \"offcpu_ns\": %" PRIu64
		       ", \"kernel_samples\": %" PRIu64 ", \"imported_samples\": %" PRIu64
		       ", \"unplaced\": %" PRIu64 ",\n    \"overhead\": {\"samples\": %" PRIu64
		       ", \"sampled_ns\": %" PRIu64 ", \"offcpu_intervals\": %" PRIu64
		       ", \"offcpu_ns\": %" PRIu64 "},\n    \"uninstrumented\": [",
		       ps->total.samples, ps->total.sample_ns, ps->total.offcpu_n,
		       ps->total.offcpu_ns, ps->kernel_samples, ps->imported, ps->unplaced,
		       ps->overhead.samples, ps->overhead.sample_ns, ps->overhead.offcpu_n,
		       ps->overhead.offcpu_ns);
		for (i = 0; i < ps->nleaf; i++) {
			const struct psamp_leaf *lf = &ps->leaf[i];
			printf("%s\n      {\"name\": ", i ? "," : "");
			json_str(stdout, lf->name);
			printf(", \"object\": ");
			json_str_null(stdout, lf->object);
			printf(", \"caller\": ");
			if (lf->caller != PROFILE_NONE)
				json_str(stdout, p->fns[lf->caller].name);
			else
				printf("null");
			printf(", \"kernel\": %s, \"samples\": %" PRIu64 ", \"sampled_ns\": %" PRIu64
			       ", \"offcpu_ns\": %" PRIu64 "}",
			       lf->kernel ? "true" : "false", lf->cost.samples, lf->cost.sample_ns,
			       lf->cost.offcpu_ns);
		}
		printf("%s]},\n  ", ps->nleaf ? "\n    " : "");
	}
	if (o->tree)
		print_json_tree(p, o);
	print_json_latency(v, p, o);
	cli_json_procs(v, o->file);
	printf(",\n  ");
	cli_json_threads(v, o->file, 1);
	printf(",\n  ");
	view_limits(v, &l);
	cli_limits_json(stdout, &l);
	printf(",\n  \"lost_events\": %" PRIu64 "\n}\n", l.lost);
	cpu_sum_free(cs);
}

/* ---- driver ---------------------------------------------------------------- */

static void parse_opts(int argc, char **argv, struct report_opts *o)
{
	enum { O_THREADS = 256, O_SORT, O_FLAT, O_GRAPH, O_TREE, O_FORMAT, O_TOP, O_FUNCTION,
	       O_MIN_PERCENT, O_LATENCY, O_SLOWEST };
	/* -n/--limit: report's -n was free (gprof's -n is another option, but
	 * cygprof gprof has its own parser) */
	static const struct option lopts[] = {
		{"threads", no_argument, NULL, O_THREADS},
		{"sort", required_argument, NULL, O_SORT},
		{"function", required_argument, NULL, O_FUNCTION},
		CLI_FILTER_OPTIONS,
		{"flat", no_argument, NULL, O_FLAT},
		{"graph", no_argument, NULL, O_GRAPH},
		{"tree", no_argument, NULL, O_TREE},
		{"min-percent", required_argument, NULL, O_MIN_PERCENT},
		{"limit", required_argument, NULL, 'n'},
		{"latency", no_argument, NULL, O_LATENCY},
		{"avg-total", no_argument, NULL, O_LATENCY},
		{"slowest", required_argument, NULL, O_SLOWEST},
		{"format", required_argument, NULL, O_FORMAT},
		{"top", required_argument, NULL, O_TOP},
		CLI_DEBUG_OPTIONS,
		CLI_TIME_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->top = 20;
	o->min_percent = 0.5;
	o->di = cli_debuginfo_new();
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hF:N:D:n:", lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case O_FUNCTION:
			o->print.pattern = optarg;
			break;
		case CLI_O_FILTER:
		case CLI_O_NOTRACE:
		case CLI_O_DEPTH:
		case CLI_O_TIME_RANGE:
			cli_filter_option(&o->filt, "report", c, optarg);
			break;
		case CLI_O_RAW_TIMES:
			o->raw_times = 1;
			/* fall through */
		case CLI_O_TIMES:
			cli_time_option("report", c);
			break;
		case O_LATENCY:
			o->latency = 1;
			break;
		case O_SLOWEST:
			o->latency = 1;
			o->slowest = (int)cli_parse_uint("report", "--slowest", optarg, 1, 1000);
			break;
		case O_THREADS:
			o->per_thread = 1;
			break;
		case O_MIN_PERCENT:
			o->min_percent = cli_parse_real("report", "--min-percent", optarg, 0, 100);
			o->min_percent_given = 1;
			o->print.min_percent = o->min_percent;
			break;
		case 'n':
			o->print.limit = (size_t)cli_parse_uint("report", "--limit", optarg, 0,
								 1000000000);
			break;
		case O_SORT:
			o->sort_given = 1;
			if (!strcmp(optarg, "self"))
				o->print.sort = SORT_SELF;
			else if (!strcmp(optarg, "total"))
				o->print.sort = SORT_TOTAL;
			else if (!strcmp(optarg, "calls"))
				o->print.sort = SORT_CALLS;
			else if (!strcmp(optarg, "name"))
				o->print.sort = SORT_NAME;
			else
				cli_die(2, "report: unknown sort key '%s' (self, total, calls, name)",
					optarg);
			break;
		case O_FLAT:
			o->flat = 1;
			break;
		case O_GRAPH:
			o->graph = 1;
			break;
		case O_TREE:
			o->tree = 1;
			break;
		case O_FORMAT:
			o->json = cli_format_json("report", optarg);
			break;
		case O_TOP:
			o->top = (int)cli_parse_uint("report", "--top", optarg, 0, 1000000);
			break;
		case CLI_O_DEBUG_DIR:
		case CLI_O_SYMFS:
			cli_debug_option(o->di, "report", c, optarg);
			break;
		default:
			cli_bad_option("report", c, argv);
		}
	}
	o->file = cli_capture_arg("report", argc, argv);
	cli_debuginfo_env(o->di);
	if (!o->flat && !o->graph && !o->tree && !o->latency) {
		o->flat = 1;
		o->graph = !o->per_thread;
	}
}

/* The profile of the threads idx (all: NULL) and, in o->ps, its samples
 * (those of threads without a tree too when all threads are asked). */
static struct profile *load(struct view *v, struct report_opts *o, const uint32_t *idx, size_t n)
{
	struct profile *p;
	struct psamp *ps;

	cli_check(profile_load(v, idx, n, &p), o->file);
	cli_check(psamp_load(v, p, idx == NULL, &ps), o->file);
	o->ps = ps;
	/* --time=sampled --sample: the samples gave the times (profile_load()) */
	o->print.sampled_times = o->print.no_times && ps && ps->total.samples;
	/* the tree ranked: by --sort when given, else by total time (calls
	 * when the capture has no times) */
	if (o->tree) {
		static const enum profile_order by[] = {
			[SORT_SELF] = PROFILE_BY_SELF, [SORT_TOTAL] = PROFILE_BY_TOTAL,
			[SORT_CALLS] = PROFILE_BY_CALLS, [SORT_NAME] = PROFILE_BY_NAME,
		};
		enum profile_order k = o->sort_given	   ? by[o->print.sort]
				       : o->print.no_times ? PROFILE_BY_CALLS
							   : PROFILE_BY_TOTAL;
		if (profile_sort_children(p, k))
			cli_die(1, "out of memory");
	}
	return p;
}

static void unload(struct profile *p, struct report_opts *o)
{
	psamp_free((struct psamp *)o->ps);
	o->ps = NULL;
	profile_free(p);
}

/* Say how many call paths the compensation clamped (profile_compensate()):
 * the hooks' cost was more than their measured time, so they show none of
 * their own. */
static void clamp_note(struct view *v, const struct report_opts *o)
{
	uint64_t n;

	cli_check(view_compensation_clamped(v, &n), o->file);
	if (n && !o->print.no_times)
		printf("Compensation clamped %" PRIu64 " call path%s: the hooks' calibrated cost "
		       "exceeded the time measured there, so %s no self time (--raw-times shows "
		       "the times as measured).\n\n",
		       n, n == 1 ? "" : "s", n == 1 ? "it shows" : "they show");
}

static void print_sections(struct view *v, const struct profile *p, struct report_opts *o)
{
	size_t i;

	if (o->flat) {
		print_flat_report(p, &o->print);
		printf("\n");
		print_offcpu(v, p, o);
		if (o->ps)
			print_sampled(v, p, o);
	}
	if (o->graph)
		print_graph(p, &o->print);
	if (o->tree)
		for (i = 0; i < p->nthreads; i++) {
			o->pthread = (uint32_t)i;
			print_tree(p, &p->threads[i], o);
		}
	if (o->latency) {
		struct latency_opts lo;
		latency_opts(o, &lo);
		report_latency_text(v, p, &lo);
	}
}

int cmd_report(int argc, char **argv)
{
	const struct cygprof_thread *threads;
	const struct cygprof_proc *procs;
	struct report_opts o;
	struct profile *p;
	struct view *v;
	size_t nthreads, nprocs, i;

	parse_opts(argc, argv, &o);
	v = cli_open_view(o.file, o.di);
	o.v = v;
	cli_filter_apply(&o.filt, v, "report", o.file);
	/* record --time=sampled: exact calls, no times */
	o.print.no_times = view_time_sampled(v) && !cpu_times_sampled(v);
	o.print.times_note = cli_times_note(v, o.times_note, sizeof o.times_note);
	cli_check(view_threads(v, &threads, &nthreads), o.file);
	cli_check(view_procs(v, &procs, &nprocs), o.file);

	if (o.json) {
		p = load(v, &o, NULL, 0);
		print_json(v, p, &o);
		unload(p, &o);
	} else if (o.per_thread) {
		clamp_note(v, &o);
		/* one profile per thread, from the trees the view read once */
		for (i = 0; i < nthreads; i++) {
			uint32_t ti = threads[i].idx;
			char name[16];

			p = load(v, &o, &ti, 1);
			printf("==== pid %u tid %u (%s)%s ====\n\n", view_thread_pid(v, &threads[i]),
			       threads[i].tid, text_esc(view_thread_name(&threads[i], name)),
			       view_thread_note(threads[i].flags));
			print_sections(v, p, &o);
			unload(p, &o);
		}
	} else {
		struct view_overhead ov;
		view_overhead(v, &ov);
		char shn[400];
		if (!o.print.no_times && cli_sysheader_note(v, shn, sizeof shn))
			printf("Warning: %s.\n\n", shn);
		/* overhead_floor_ns came with the calibration's second form: a
		 * capture that has it was made by a recorder that calibrates */
		if (!ov.present && !o.print.no_times)
			printf("Times are as measured: this capture has no calibration of the hooks' "
			       "cost (%s).\n\n", ov.floor_ns > 0 ? "the runtime's measure of it did "
			       "not complete" : "recorded before it existed");
		clamp_note(v, &o);
		p = load(v, &o, NULL, 0);
		print_sections(v, p, &o);
		unload(p, &o);
	}
	cli_finish(v);
	debuginfo_free(o.di);
	return 0;
}
