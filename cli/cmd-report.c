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
#include "report-print.h"
#include "report-util.h"
#include "view.h"

struct report_opts {
	int per_thread;
	int flat, graph, tree;
	int json;
	struct print_opts print; /* style, sort, pattern */
	const char *file;
	struct debuginfo *di;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof report [options] [FILE]\n"
		"\n"
		"Exact flat profile and call graph (gprof layout) of a capture\n"
		"(FILE defaults to " CYGPROF_DEFAULT_CAPTURE ").  Functions are merged by name\n"
		"across threads and processes.\n"
		"\n"
		"options:\n"
		"  --flat                 only the flat profile\n"
		"  --graph                only the call graph\n"
		"  --tree                 the calling-context tree of every thread\n"
		"                         (call paths with calls, total and self time)\n"
		"  --threads              one report per thread (flat profile unless\n"
		"                         --graph/--tree are given)\n"
		"  --sort KEY             flat profile order: self (default), total, calls, name\n"
		"  -F, --function PATTERN only functions matching the glob PATTERN\n"
		"  --format FMT           text (default) or json\n"
		CLI_DEBUG_HELP
		"  -h, --help             this help\n");
}

static int matches(const struct report_opts *o, const char *name)
{
	return print_matches(&o->print, name);
}

/* ---- calling-context tree ------------------------------------------------ */

static void print_tree(const struct profile *p, const struct profile_thread *th,
		       const struct report_opts *o)
{
	const struct profile_tnode *t = th->nodes;
	unsigned char *keep = NULL;
	int any = 0;
	char *prefix = NULL;
	size_t cap = 0, i;
	uint32_t cur;

	if (th->n > 1 && o->print.pattern) {
		/* keep paths through a matching function: the match, its
		 * ancestors and its whole subtree */
		keep = calloc(th->n, 1);
		if (!keep)
			cli_die(1, "out of memory");
		for (i = 1; i < th->n; i++)
			if (matches(o, p->fns[t[i].fn].name) || (keep[t[i].parent] & 2))
				keep[i] = 3;
		for (i = th->n - 1; i >= 1; i--)
			if (keep[i])
				keep[t[i].parent] |= 1;
		any = keep[0] != 0;
	}
	if (o->print.pattern && !any) {
		free(keep);
		return; /* nothing of interest in this thread */
	}
	printf("# calling-context tree: pid %u tid %u (%s)%s, %" PRIu64 " call paths\n",
	       th->info.pid, th->info.tid, th->info.name, thread_flags_note(th->info.flags),
	       (uint64_t)(th->n ? th->n - 1 : 0));
	if (o->print.no_times)
		printf("# %s\n", PRINT_NO_TIMES_NOTE);
	printf("# TOTAL TIME   SELF TIME      CALLS   FUNCTION\n");
	if (th->n <= 1) {
		printf("\n");
		return;
	}
	/* prefix[(L - 1) * 2] is '|' while the level-L node being walked has a
	 * later shown sibling; the top level draws no connector */
	cur = t[0].first_child;
	while (cur != PROFILE_NONE) {
		const struct profile_tnode *nd = &t[cur];
		uint32_t d = nd->depth - 1, s;
		char tb[32], sb[32];

		if (!keep || keep[cur]) {
			if (cap < (size_t)d * 2 + 3) {
				cap = (size_t)d * 2 + 64;
				prefix = realloc(prefix, cap);
				if (!prefix)
					cli_die(1, "out of memory");
			}
			prefix[d ? (d - 1) * 2 : 0] = 0;
			printf("%s  %s %10" PRIu64 " : %s%s%s\n",
			       fmt_dur(tb, sizeof(tb), nd->total_ns),
			       fmt_dur(sb, sizeof(sb), nd->self_ns), nd->calls, prefix,
			       d ? "+-" : "", p->fns[nd->fn].name);
			if (nd->first_child != PROFILE_NONE) {
				if (d) {
					s = nd->next_sibling;
					while (s != PROFILE_NONE && keep && !keep[s])
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
	printf("\n");
	free(prefix);
	free(keep);
}

/* ---- JSON ------------------------------------------------------------------ */

static void print_json(struct view *v, const struct profile *p, const struct report_opts *o)
{
	static const char *const meta_keys[] = {
		"command", "mode", "start_time", "duration_ns", "clock", "time", "filters",
		"drop_mode",
	};
	struct view_limits l;
	uint32_t *fns;
	size_t n, i, k;
	const char *sep = "";

	printf("{\n  \"capture\": {");
	for (i = 0; i < sizeof(meta_keys) / sizeof(meta_keys[0]); i++) {
		const char *val = view_meta_str(v, meta_keys[i]);

		if (!val)
			continue;
		printf("%s", sep);
		json_str(stdout, meta_keys[i]);
		printf(": ");
		json_str(stdout, val);
		sep = ", ";
	}
	printf("},\n");
	printf("  \"total_self_ns\": %" PRIu64 ",\n", p->total_self_ns);

	fns = print_sorted_fns(p, o->print.sort, &n);
	printf("  \"functions\": [");
	for (i = 0, k = 0; i < n; i++) {
		const struct profile_fn *f = &p->fns[fns[i]];

		if (!matches(o, f->name))
			continue;
		printf("%s\n    {\"name\": ", k++ ? "," : "");
		json_str(stdout, f->name);
		printf(", \"calls\": %" PRIu64 ", \"self_ns\": %" PRIu64 ", \"total_ns\": %" PRIu64
		       ", \"recursive_calls\": %" PRIu64 ", \"spontaneous_calls\": %" PRIu64 "}",
		       f->calls, f->self_ns, f->total_ns, f->rec_calls, f->root_calls);
	}
	printf("%s],\n", k ? "\n  " : "");
	free(fns);

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
	cli_json_procs(v, o->file);
	printf(",\n  ");
	cli_json_threads(v, o->file, 1);
	printf(",\n  ");
	view_limits(v, &l);
	cli_limits_json(stdout, &l);
	printf(",\n  \"lost_events\": %" PRIu64 "\n}\n", l.lost);
}

/* ---- driver ---------------------------------------------------------------- */

static void parse_opts(int argc, char **argv, struct report_opts *o)
{
	enum { O_THREADS = 256, O_SORT, O_FLAT, O_GRAPH, O_TREE, O_FORMAT };
	static const struct option lopts[] = {
		{"threads", no_argument, NULL, O_THREADS},
		{"sort", required_argument, NULL, O_SORT},
		{"function", required_argument, NULL, 'F'},
		{"flat", no_argument, NULL, O_FLAT},
		{"graph", no_argument, NULL, O_GRAPH},
		{"tree", no_argument, NULL, O_TREE},
		{"format", required_argument, NULL, O_FORMAT},
		CLI_DEBUG_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->di = cli_debuginfo_new();
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hF:", lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case 'F':
			o->print.pattern = optarg;
			break;
		case O_THREADS:
			o->per_thread = 1;
			break;
		case O_SORT:
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
	if (!o->flat && !o->graph && !o->tree) {
		o->flat = 1;
		o->graph = !o->per_thread;
	}
}

static struct profile *load(struct view *v, const char *file, const uint32_t *idx, size_t n)
{
	struct profile *p;

	cli_check(profile_load(v, idx, n, &p), file);
	return p;
}

static void print_sections(const struct profile *p, const struct report_opts *o)
{
	size_t i;

	if (o->flat) {
		print_flat(p, &o->print);
		printf("\n");
	}
	if (o->graph)
		print_graph(p, &o->print);
	if (o->tree)
		for (i = 0; i < p->nthreads; i++)
			print_tree(p, &p->threads[i], o);
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
	/* record --time=sampled: exact calls, no times */
	const char *tm = view_meta_str(v, "time");
	o.print.no_times = tm && !strcmp(tm, "sampled");
	cli_check(view_threads(v, &threads, &nthreads), o.file);
	cli_check(view_procs(v, &procs, &nprocs), o.file);

	if (o.json) {
		p = load(v, o.file, NULL, 0);
		print_json(v, p, &o);
		profile_free(p);
	} else if (o.per_thread) {
		/* one profile per thread, from the trees the view read once */
		for (i = 0; i < nthreads; i++) {
			uint32_t ti = threads[i].idx;
			char name[16];

			p = load(v, o.file, &ti, 1);
			printf("==== pid %u tid %u (%s)%s ====\n\n", view_thread_pid(v, &threads[i]),
			       threads[i].tid, view_thread_name(&threads[i], name),
			       thread_flags_note(threads[i].flags));
			print_sections(p, &o);
			profile_free(p);
		}
	} else {
		p = load(v, o.file, NULL, 0);
		print_sections(p, &o);
		profile_free(p);
	}
	cli_finish(v);
	debuginfo_free(o.di);
	return 0;
}
