/* SPDX-License-Identifier: MIT */
/* cmd-report.c - cygprof report: gprof-style flat profile and call graph,
 * calling-context trees, or JSON, from exact instrumented times. */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "profile.h"
#include "report-util.h"

enum sort_key { SORT_SELF, SORT_TOTAL, SORT_CALLS, SORT_NAME };

struct report_opts {
	int per_thread;
	int flat, graph, tree;
	int json;
	enum sort_key sort;
	const char *pattern;
	const char *file;
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
		"  -h, --help             this help\n");
}

static int matches(const struct report_opts *o, const char *name)
{
	return !o->pattern || fnmatch(o->pattern, name, 0) == 0;
}

/* ---- sorting ------------------------------------------------------------- */

static const struct profile *sort_prof;
static enum sort_key sort_by;

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a < b ? 1 : a > b ? -1 : 0;
}

static int cmp_flat(const void *pa, const void *pb)
{
	const struct profile_fn *a = &sort_prof->fns[*(const uint32_t *)pa];
	const struct profile_fn *b = &sort_prof->fns[*(const uint32_t *)pb];
	int c = 0;

	switch (sort_by) {
	case SORT_SELF:
		c = cmp_u64_desc(a->self_ns, b->self_ns);
		if (!c)
			c = cmp_u64_desc(a->calls, b->calls);
		break;
	case SORT_TOTAL:
		c = cmp_u64_desc(a->total_ns, b->total_ns);
		if (!c)
			c = cmp_u64_desc(a->self_ns, b->self_ns);
		if (!c)
			c = cmp_u64_desc(a->calls, b->calls);
		break;
	case SORT_CALLS:
		c = cmp_u64_desc(a->calls, b->calls);
		if (!c)
			c = cmp_u64_desc(a->self_ns, b->self_ns);
		break;
	case SORT_NAME:
		break;
	}
	return c ? c : strcmp(a->name, b->name);
}

/* gprof's call-graph order: total time, then calls, then name. */
static int cmp_graph(const void *pa, const void *pb)
{
	const struct profile_fn *a = &sort_prof->fns[*(const uint32_t *)pa];
	const struct profile_fn *b = &sort_prof->fns[*(const uint32_t *)pb];
	int c = cmp_u64_desc(a->total_ns, b->total_ns);

	if (!c)
		c = cmp_u64_desc(a->calls, b->calls);
	return c ? c : strcmp(a->name, b->name);
}

static int cmp_arc_asc(const void *pa, const void *pb)
{
	const struct profile_arc *a = &sort_prof->arcs[*(const uint32_t *)pa];
	const struct profile_arc *b = &sort_prof->arcs[*(const uint32_t *)pb];
	int c = -cmp_u64_desc(a->total_ns, b->total_ns);

	if (!c)
		c = -cmp_u64_desc(a->calls, b->calls);
	return c;
}

static int cmp_arc_desc(const void *pa, const void *pb)
{
	return -cmp_arc_asc(pa, pb);
}

/* Functions worth listing (gprof hides those with no calls and no time). */
static uint32_t *sorted_fns(const struct profile *p, enum sort_key key,
			    int (*cmp)(const void *, const void *), size_t *n)
{
	uint32_t *v = malloc((p->nfns ? p->nfns : 1) * sizeof(*v));
	size_t i, k = 0;

	if (!v)
		cli_die(1, "out of memory");
	for (i = 0; i < p->nfns; i++)
		if (p->fns[i].calls || p->fns[i].self_ns || p->fns[i].total_ns)
			v[k++] = (uint32_t)i;
	sort_prof = p;
	sort_by = key;
	qsort(v, k, sizeof(*v), cmp);
	*n = k;
	return v;
}

/* ---- flat profile -------------------------------------------------------- */

static void print_flat(const struct profile *p, const struct report_opts *o)
{
	static const struct {
		double div;
		const char *unit;
	} units[] = {
		{1e9, "s/call"}, {1e6, "ms/call"}, {1e3, "us/call"}, {1, "ns/call"},
	};
	double total = (double)p->total_self_ns, cum = 0, max_pc = 0, div = 1e9;
	const char *unit = "Ts/call";
	uint32_t *v;
	size_t n, i, u;

	v = sorted_fns(p, o->sort, cmp_flat, &n);
	for (i = 0; i < n; i++) {
		const struct profile_fn *f = &p->fns[v[i]];

		if (f->calls && matches(o, f->name) && (double)f->total_ns / f->calls > max_pc)
			max_pc = (double)f->total_ns / f->calls;
	}
	if (max_pc > 0) {
		for (u = 0; u < sizeof(units) / sizeof(units[0]); u++)
			if (max_pc >= units[u].div || u == sizeof(units) / sizeof(units[0]) - 1)
				break;
		div = units[u].div;
		unit = units[u].unit;
	}

	printf("Flat profile:\n\n");
	printf("Times are exact (instrumented); total self time %.6f seconds.\n",
	       total / 1e9);
	printf("%5.5s %10.10s %8.8s %8.8s %8.8s %8.8s  %-8.8s\n", "%  ", "cumulative", "self  ",
	       "", "self  ", "total ", "");
	printf("%5.5s %9.9s  %8.8s %8.8s %8.8s %8.8s  %-8.8s\n", "time", "seconds", "seconds",
	       "calls", unit, unit, "name");
	if (!p->total_self_ns)
		printf(" no time accumulated\n");
	for (i = 0; i < n; i++) {
		const struct profile_fn *f = &p->fns[v[i]];

		if (!matches(o, f->name))
			continue;
		cum += (double)f->self_ns;
		printf("%6.2f %9.2f %8.2f", total > 0 ? 100.0 * (double)f->self_ns / total : 0.0,
		       cum / 1e9, (double)f->self_ns / 1e9);
		if (f->calls)
			printf(" %8" PRIu64 " %8.2f %8.2f  ", f->calls,
			       (double)f->self_ns / (double)f->calls / div,
			       (double)f->total_ns / (double)f->calls / div);
		else
			printf(" %8.8s %8.8s %8.8s  ", "", "", "");
		printf("%s\n", f->name);
	}
	free(v);
}

/* ---- call graph ---------------------------------------------------------- */

/* Arcs grouped by callee (in) and by caller (out): CSR-style index lists. */
struct arc_index {
	uint32_t *in_start, *in, *out_start, *out;
};

static void arc_index_build(const struct profile *p, struct arc_index *x)
{
	size_t i;

	x->in_start = calloc(p->nfns + 1, sizeof(uint32_t));
	x->out_start = calloc(p->nfns + 1, sizeof(uint32_t));
	x->in = malloc((p->narcs ? p->narcs : 1) * sizeof(uint32_t));
	x->out = malloc((p->narcs ? p->narcs : 1) * sizeof(uint32_t));
	if (!x->in_start || !x->out_start || !x->in || !x->out)
		cli_die(1, "out of memory");
	for (i = 0; i < p->narcs; i++) {
		x->in_start[p->arcs[i].callee + 1]++;
		x->out_start[p->arcs[i].caller + 1]++;
	}
	for (i = 0; i < p->nfns; i++) {
		x->in_start[i + 1] += x->in_start[i];
		x->out_start[i + 1] += x->out_start[i];
	}
	{
		uint32_t *ip = calloc(p->nfns + 1, sizeof(uint32_t));
		uint32_t *op = calloc(p->nfns + 1, sizeof(uint32_t));

		if (!ip || !op)
			cli_die(1, "out of memory");
		for (i = 0; i < p->narcs; i++) {
			uint32_t ce = p->arcs[i].callee, cr = p->arcs[i].caller;

			x->in[x->in_start[ce] + ip[ce]++] = (uint32_t)i;
			x->out[x->out_start[cr] + op[cr]++] = (uint32_t)i;
		}
		free(ip);
		free(op);
	}
}

static void arc_index_free(struct arc_index *x)
{
	free(x->in_start);
	free(x->in);
	free(x->out_start);
	free(x->out);
}

static void print_name_idx(const struct profile *p, const uint32_t *gidx, uint32_t f)
{
	if (gidx[f])
		printf("%s [%u]\n", p->fns[f].name, gidx[f]);
	else
		printf("%s\n", p->fns[f].name);
}

static void print_graph(const struct profile *p, const struct report_opts *o)
{
	double total = (double)p->total_self_ns;
	struct arc_index x;
	uint32_t *v, *gidx, *tmp;
	size_t n, i, j;

	v = sorted_fns(p, SORT_SELF, cmp_graph, &n);
	gidx = calloc(p->nfns ? p->nfns : 1, sizeof(*gidx));
	tmp = malloc((p->narcs ? p->narcs : 1) * sizeof(*tmp));
	if (!gidx || !tmp)
		cli_die(1, "out of memory");
	for (i = 0; i < n; i++)
		gidx[v[i]] = (uint32_t)i + 1;
	arc_index_build(p, &x);

	printf("\t\t     Call graph\n\n\n");
	printf("granularity: exact instrumented times; %.6f seconds\n\n", total / 1e9);
	printf("index %% time    self  children    called     name\n");
	for (i = 0; i < n; i++) {
		uint32_t fi = v[i];
		const struct profile_fn *f = &p->fns[fi];
		uint64_t ncalls = f->calls - f->rec_calls;
		uint64_t children = f->total_ns > f->self_ns ? f->total_ns - f->self_ns : 0;
		size_t k, m;
		char ibuf[16];

		if (!matches(o, f->name))
			continue;

		/* callers, smallest first; self-recursion and <spontaneous> on top */
		if (f->root_calls)
			printf("%6.6s %5.5s %7.7s %7.7s %7.7s %7.7s     <spontaneous>\n", "", "", "",
			       "", "", "");
		if (f->rec_calls) {
			printf("%6.6s %5.5s %7.7s %7.7s %7" PRIu64 " %7.7s     ", "", "", "", "",
			       f->rec_calls, "");
			print_name_idx(p, gidx, fi);
		}
		m = 0;
		for (k = x.in_start[fi]; k < x.in_start[fi + 1]; k++)
			if (p->arcs[x.in[k]].caller != fi)
				tmp[m++] = x.in[k];
		sort_prof = p;
		qsort(tmp, m, sizeof(*tmp), cmp_arc_asc);
		for (k = 0; k < m; k++) {
			const struct profile_arc *a = &p->arcs[tmp[k]];

			printf("%6.6s %5.5s %7.2f %7.2f %7" PRIu64 "/%-7" PRIu64 "     ", "", "",
			       (double)a->self_ns / 1e9, (double)a->children_ns / 1e9, a->calls,
			       ncalls);
			print_name_idx(p, gidx, a->caller);
		}

		/* the primary line */
		snprintf(ibuf, sizeof(ibuf), "[%u]", gidx[fi]);
		printf("%-6.6s %5.1f %7.2f %7.2f", ibuf,
		       total > 0 ? 100.0 * (double)f->total_ns / total : 0.0,
		       (double)f->self_ns / 1e9, (double)children / 1e9);
		printf(" %7" PRIu64, ncalls);
		if (f->rec_calls)
			printf("+%-7" PRIu64 " ", f->rec_calls);
		else
			printf(" %7.7s ", "");
		print_name_idx(p, gidx, fi);

		/* callees, largest first; self-recursion last */
		m = 0;
		for (k = x.out_start[fi]; k < x.out_start[fi + 1]; k++)
			if (p->arcs[x.out[k]].callee != fi)
				tmp[m++] = x.out[k];
		sort_prof = p;
		qsort(tmp, m, sizeof(*tmp), cmp_arc_desc);
		for (k = 0; k < m; k++) {
			const struct profile_arc *a = &p->arcs[tmp[k]];
			const struct profile_fn *c = &p->fns[a->callee];

			printf("%6.6s %5.5s %7.2f %7.2f %7" PRIu64 "/%-7" PRIu64 "     ", "", "",
			       (double)a->self_ns / 1e9, (double)a->children_ns / 1e9, a->calls,
			       c->calls - c->rec_calls);
			print_name_idx(p, gidx, a->callee);
		}
		if (f->rec_calls) {
			printf("%6.6s %5.5s %7.7s %7.7s %7" PRIu64 " %7.7s     ", "", "", "", "",
			       f->rec_calls, "");
			print_name_idx(p, gidx, fi);
		}
		for (j = 0; j < 47; j++)
			putchar('-');
		putchar('\n');
	}
	printf("\n");
	arc_index_free(&x);
	free(tmp);
	free(gidx);
	free(v);
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

	if (th->n > 1 && o->pattern) {
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
	if (o->pattern && !any) {
		free(keep);
		return; /* nothing of interest in this thread */
	}
	printf("# calling-context tree: pid %u tid %u (%s), %" PRIu64 " call paths\n",
	       th->info.pid, th->info.tid, th->info.name, (uint64_t)(th->n ? th->n - 1 : 0));
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

static void print_json(struct cygprof_capture *cap, const struct profile *p,
		       const struct report_opts *o, const struct cygprof_proc *procs,
		       size_t nprocs, const struct cygprof_thread *threads, size_t nthreads)
{
	static const char *const meta_keys[] = {
		"command", "mode", "start_time", "duration_ns", "clock", "filters", "drop_mode",
	};
	uint32_t *v;
	size_t n, i, k;
	const char *sep = "";

	printf("{\n  \"capture\": {");
	for (i = 0; i < sizeof(meta_keys) / sizeof(meta_keys[0]); i++) {
		char *val = NULL;

		if (cygprof_capture_get_meta(cap, meta_keys[i], &val))
			continue;
		printf("%s", sep);
		json_str(stdout, meta_keys[i]);
		printf(": ");
		json_str(stdout, val);
		sep = ", ";
		free(val);
	}
	printf("},\n");
	printf("  \"total_self_ns\": %" PRIu64 ",\n", p->total_self_ns);

	v = sorted_fns(p, o->sort, cmp_flat, &n);
	printf("  \"functions\": [");
	for (i = 0, k = 0; i < n; i++) {
		const struct profile_fn *f = &p->fns[v[i]];

		if (!matches(o, f->name))
			continue;
		printf("%s\n    {\"name\": ", k++ ? "," : "");
		json_str(stdout, f->name);
		printf(", \"calls\": %" PRIu64 ", \"self_ns\": %" PRIu64 ", \"total_ns\": %" PRIu64
		       ", \"recursive_calls\": %" PRIu64 ", \"spontaneous_calls\": %" PRIu64 "}",
		       f->calls, f->self_ns, f->total_ns, f->rec_calls, f->root_calls);
	}
	printf("%s],\n", k ? "\n  " : "");
	free(v);

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
	printf("%s],\n", k ? "\n  " : "");

	printf("  \"processes\": [");
	for (i = 0; i < nprocs; i++) {
		const struct cygprof_proc *pr = &procs[i];
		char eb[32];

		printf("%s\n    {\"idx\": %u, \"pid\": %u, \"ppid\": %u, \"command\": ",
		       i ? "," : "", pr->idx, pr->pid, pr->ppid);
		json_str(stdout, pr->command);
		printf(", \"exe\": ");
		json_str(stdout, pr->exe);
		printf(", \"end\": ");
		json_str(stdout, proc_end_str(pr, eb, sizeof(eb)));
		printf(", \"start_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64 "}", pr->start_ns,
		       pr->end_ns);
	}
	printf("%s],\n", nprocs ? "\n  " : "");

	printf("  \"threads\": [");
	for (i = 0; i < nthreads; i++) {
		const struct cygprof_thread *t = &threads[i];
		uint64_t tot = 0;

		for (k = 0; k < p->nthreads; k++)
			if (p->threads[k].info.idx == t->idx)
				tot = p->threads[k].total_ns;
		printf("%s\n    {\"idx\": %u, \"tid\": %u, \"pid\": %u, \"name\": ", i ? "," : "",
		       t->idx, t->tid, thread_pid(t, procs, nprocs));
		json_str(stdout, t->name);
		printf(", \"calls\": %" PRIu64 ", \"events\": %" PRIu64 ", \"lost\": %" PRIu64
		       ", \"waits\": %" PRIu64 ", \"wait_ns\": %" PRIu64 ", \"unpaired\": %" PRIu64
		       ", \"unwound\": %" PRIu64 ", \"total_ns\": %" PRIu64 "}",
		       t->calls, t->events, t->lost, t->waits, t->wait_ns, t->unpaired, t->unwound,
		       tot);
	}
	printf("%s],\n", nthreads ? "\n  " : "");
	printf("  \"lost_events\": %" PRIu64 "\n}\n", threads_lost(threads, nthreads));
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
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hF:", lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case 'F':
			o->pattern = optarg;
			break;
		case O_THREADS:
			o->per_thread = 1;
			break;
		case O_SORT:
			if (!strcmp(optarg, "self"))
				o->sort = SORT_SELF;
			else if (!strcmp(optarg, "total"))
				o->sort = SORT_TOTAL;
			else if (!strcmp(optarg, "calls"))
				o->sort = SORT_CALLS;
			else if (!strcmp(optarg, "name"))
				o->sort = SORT_NAME;
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
			if (!strcmp(optarg, "json"))
				o->json = 1;
			else if (!strcmp(optarg, "text"))
				o->json = 0;
			else
				cli_die(2, "report: unknown format '%s' (text, json)", optarg);
			break;
		case ':':
			cli_die(2, "report: option '%s' needs an argument (see 'cygprof report --help')",
				argv[optind - 1]);
		default:
			if (optopt)
				cli_die(2, "report: unknown option '-%c' (see 'cygprof report --help')",
					optopt);
			cli_die(2, "report: unknown option '%s' (see 'cygprof report --help')",
				argv[optind - 1]);
		}
	}
	if (optind < argc)
		o->file = argv[optind++];
	if (optind < argc)
		cli_die(2, "report: unexpected argument '%s' (see 'cygprof report --help')",
			argv[optind]);
	if (!o->flat && !o->graph && !o->tree) {
		o->flat = 1;
		o->graph = !o->per_thread;
	}
}

static struct profile *load(struct cygprof_capture *cap, const char *file, const uint32_t *idx,
			    size_t n)
{
	struct profile *p;
	int err = profile_load(cap, idx, n, &p);

	if (err)
		cli_die(1, "%s: %s", file, cygprof_strerror(err));
	return p;
}

static void print_sections(const struct profile *p, const struct report_opts *o)
{
	size_t i;

	if (o->flat) {
		print_flat(p, o);
		printf("\n");
	}
	if (o->graph)
		print_graph(p, o);
	if (o->tree)
		for (i = 0; i < p->nthreads; i++)
			print_tree(p, &p->threads[i], o);
}

int cmd_report(int argc, char **argv)
{
	struct cygprof_thread *threads = NULL;
	struct cygprof_proc *procs = NULL;
	struct cygprof_capture *cap;
	struct report_opts o;
	struct profile *p;
	size_t nthreads = 0, nprocs = 0, i;
	uint64_t lost;
	const char *file;
	int err;

	parse_opts(argc, argv, &o);
	file = o.file ? o.file : CYGPROF_DEFAULT_CAPTURE;
	cap = cli_open_capture(file);
	err = cygprof_capture_get_threads(cap, &threads, &nthreads);
	if (!err)
		err = cygprof_capture_get_procs(cap, &procs, &nprocs);
	if (err)
		cli_die(1, "%s: %s", file, cygprof_strerror(err));
	lost = threads_lost(threads, nthreads);

	if (o.json) {
		p = load(cap, file, NULL, 0);
		print_json(cap, p, &o, procs, nprocs, threads, nthreads);
		profile_free(p);
	} else {
		if (lost)
			printf("warning: %" PRIu64 " timeline events were lost during recording "
			       "(see 'cygprof info')\n\n",
			       lost);
		char *full = NULL;
		if (!cygprof_capture_get_meta(cap, "shm_full", &full)) {
			printf("warning: the shared mapping filled up during recording: some "
			       "threads or calls were not recorded (see 'cygprof record --shm-size')\n\n");
			free(full);
		}
		if (o.per_thread) {
			for (i = 0; i < nthreads; i++) {
				uint32_t ti = threads[i].idx;

				p = load(cap, file, &ti, 1);
				printf("==== pid %u tid %u (%s) ====\n\n",
				       thread_pid(&threads[i], procs, nprocs), threads[i].tid,
				       threads[i].name);
				print_sections(p, &o);
				profile_free(p);
			}
		} else {
			p = load(cap, file, NULL, 0);
			print_sections(p, &o);
			profile_free(p);
		}
	}
	if (procs)
		cygprof_procs_free(procs, nprocs);
	free(threads);
	if (fflush(stdout) || ferror(stdout)) {
		cygprof_capture_close(cap);
		cli_die(1, "write error on standard output");
	}
	cygprof_capture_close(cap);
	return 0;
}
