/* SPDX-License-Identifier: MIT */
/* cmd-diff.c - cygprof diff: the profiles of two captures compared, function
 * by function (matched by name and object, so two builds of a program
 * compare) and, with --paths, call path by call path; or JSON.  The
 * matching, changes and order are analysis/diff.c's. */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "debuginfo.h"
#include "diff.h"
#include "diff-print.h"
#include "diff-latency.h"
#include "format.h"
#include "json.h"
#include "pathtree.h"
#include "profile.h"
#include "view.h"
#include "textesc.h"

enum { V_CALLS, V_SELF, V_TOTAL, NV };

/* One capture's side of the comparison. */
struct side {
	const char *file;
	struct view *v;
	struct profile *p;
	const char **obj;          /* per profile function: its object's base name */
	uint32_t *at;              /* --paths: per node of each thread, its path */
	struct diff_entry *fns, *paths;
	size_t nfns, npaths;
	uint64_t total_ns;         /* the sum of the threads' totals */
	const char *times;         /* "exact", "sampled" or "none" (side_times()) */
};

/* What a side's times are: measured by the hooks, estimated from perf
 * samples (record --time=sampled --sample: profile_load()), or none. */
static void side_times(struct side *s)
{
	const struct cygprof_psample *ps;
	size_t n = 0;

	if (!view_time_sampled(s->v))
		s->times = "exact";
	else if (!view_psamples(s->v, &ps, &n) && n)
		s->times = "sampled";
	else
		s->times = "none";
}

/* Warn in one line when the two sides' times were compensated with
 * calibrations that differ by more than their spreads explain
 * (view_overhead_differ()), or when one side is compensated and the other
 * is not: the same code then shows different times per call. */
static void calibration_warn(struct side *old, struct side *new)
{
	struct view_overhead a, b;
	int ca = view_compensated(old->v), cb = view_compensated(new->v);
	char s1[48], s2[48], s3[48], s4[48], modes[64] = "";
	double per_call;

	if (strcmp(old->times, "exact") || strcmp(new->times, "exact"))
		return; /* not the hooks' times: the "# times" line says it */
	view_overhead(old->v, &a);
	view_overhead(new->v, &b);
	if (ca != cb) {
		const struct view_overhead *o = ca ? &a : &b;
		cli_warn("diff: %s is compensated for the hooks' cost and %s is not (%s): "
			 "compensated times differ by up to %.1f ns per call",
			 ca ? "OLD" : "NEW", ca ? "NEW" : "OLD",
			 (ca ? b : a).present ? "--raw-times" : "no calibration",
			 o->in_ns + o->out_ns);
		return;
	}
	if (!ca || !view_overhead_differ(&a, &b, &per_call))
		return;
	if (strcmp(a.mode, b.mode))
		snprintf(modes, sizeof modes, "; %s vs %s hooks", a.mode[0] ? a.mode : "unknown",
			 b.mode[0] ? b.mode : "unknown");
	cli_warn("diff: OLD and NEW were calibrated differently (o_in %s vs %s, o_full %s vs %s%s): "
		 "compensated times differ by up to %.1f ns per call",
		 cli_overhead_fig(s1, sizeof s1, a.in_ns, a.in_spread_ns),
		 cli_overhead_fig(s2, sizeof s2, b.in_ns, b.in_spread_ns),
		 cli_overhead_fig(s3, sizeof s3, a.in_ns + a.out_ns,
				  a.in_spread_ns >= 0 ? a.in_spread_ns + a.out_spread_ns : -1),
		 cli_overhead_fig(s4, sizeof s4, b.in_ns + b.out_ns,
				  b.in_spread_ns >= 0 ? b.in_spread_ns + b.out_spread_ns : -1),
		 modes, per_call);
}

struct diff_opts {
	int json, paths;
	int latency;               /* --latency: each function's p50, p99, max */
	int sort;                  /* a value or DIFF_BY_NAME */
	const char *pattern;
	struct debuginfo *di;
	struct cli_filter filt;    /* -F, -N, -D, --time-range: both captures */
	const char *old, *new;
	double fail_above;         /* --fail-above PCT (< 0: not given) */
	int fail_calls;            /* --fail-calls: a change of calls fails too */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof diff [options] OLD NEW\n"
		"       cygprof diff [options] --fail-above PCT OLD1,OLD2,... NEW1,NEW2,...\n"
		"\n"
		"Compare the profiles of two captures: per function the calls, self and\n"
		"total time of OLD and NEW, the change and the relative change, and the\n"
		"functions added (only in NEW) and removed (only in OLD), largest change\n"
		"first.  Functions are matched by name and object: the object's file name,\n"
		"the program's own executable matching the other's whatever its name, so\n"
		"two builds of a program compare.\n"
		"\n"
		"options:\n"
		"  --sort KEY             order by the change of: self (default), total,\n"
		"                         calls; or name\n"
		"  --paths                also compare call paths (matched by their\n"
		"                         functions from the root)\n"
		"  --latency              also compare each function's call durations\n"
		"                         (p50, p99, max from the latency histograms),\n"
		"                         the p99 that moved most first\n"
		"  --function PATTERN     only functions (paths ending in one) matching the\n"
		"                         glob PATTERN\n"
		CLI_FILTER_HELP
		"  --format FMT           text (default) or json\n"
		"  --fail-above PCT       for CI: exit 3 when a function's self or total\n"
		"                         time got more than PCT%% worse beyond the runs'\n"
		"                         noise (every NEW run slower than every OLD run;\n"
		"                         3 or more captures per side, comma-separated,\n"
		"                         measure the noise); judges functions holding\n"
		"                         0.5%% of the OLD or of the NEW runs; lists only\n"
		"                         those\n"
		"  --fail-calls           with --fail-above, a change of calls fails too\n"
		"                         (off: argv, locale and the like change calls)\n"
		CLI_TIME_HELP CLI_DEBUG_HELP
		"  -h, --help             this help\n");
}

static void parse_opts(int argc, char **argv, struct diff_opts *o)
{
	enum { O_SORT = 256, O_PATHS, O_FORMAT, O_FAIL_ABOVE, O_FAIL_CALLS, O_LATENCY };
	static const struct option lopts[] = {
		{"sort", required_argument, NULL, O_SORT},
		{"paths", no_argument, NULL, O_PATHS},
		{"latency", no_argument, NULL, O_LATENCY},
		{"function", required_argument, NULL, 'f'},
		CLI_FILTER_OPTIONS,
		{"format", required_argument, NULL, O_FORMAT},
		{"fail-above", required_argument, NULL, O_FAIL_ABOVE},
		{"fail-calls", no_argument, NULL, O_FAIL_CALLS},
		CLI_DEBUG_OPTIONS,
		CLI_TIME_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_getopt g = {.cmd = "diff", .usage = usage, .shortopts = ":hF:N:D:",
			       .longopts = lopts};
	int c;

	memset(o, 0, sizeof(*o));
	o->sort = V_SELF;
	o->fail_above = -1;
	g.di = o->di = cli_debuginfo_new();
	g.filt = &o->filt;
	while ((c = cli_next_option(&g, argc, argv)) != -1) {
		switch (c) {
		case 'f':
			o->pattern = optarg;
			break;
		case O_SORT:
			if (!strcmp(optarg, "calls"))
				o->sort = V_CALLS;
			else if (!strcmp(optarg, "self"))
				o->sort = V_SELF;
			else if (!strcmp(optarg, "total"))
				o->sort = V_TOTAL;
			else if (!strcmp(optarg, "name"))
				o->sort = DIFF_BY_NAME;
			else
				cli_die(2, "diff: unknown sort key '%s' (self, total, calls, name)", optarg);
			break;
		case O_PATHS:
			o->paths = 1;
			break;
		case O_LATENCY:
			o->latency = 1;
			break;
		case O_FORMAT:
			o->json = cli_format_json("diff", optarg);
			break;
		case O_FAIL_ABOVE:
			o->fail_above = cli_parse_real("diff", "--fail-above", optarg, 0, 1000);
			break;
		case O_FAIL_CALLS:
			o->fail_calls = 1;
			break;
		}
	}
	if (argc - optind != 2)
		cli_die(2, "diff: needs two captures OLD NEW, %s (see 'cygprof diff --help')",
			argc - optind < 2 ? "got fewer" : "got more");
	if (o->fail_calls && o->fail_above < 0)
		cli_die(2, "diff: --fail-calls needs --fail-above");
	o->old = argv[optind];
	o->new = argv[optind + 1];
}

/* ---- one side -------------------------------------------------------------- */

static void oom(void)
{
	cli_die(1, "diff: out of memory");
}

/* The profile of one capture, its functions keyed by object and name
 * (analysis/profile.h, PROFILE_KEY_OBJECT). */
static void load_profile(struct side *s, struct debuginfo *di, struct cli_filter *filt)
{
	size_t k;

	s->v = cli_open_view(s->file, di);
	cli_filter_apply(filt, s->v, "diff", s->file);
	cli_check(profile_load_keyed(s->v, NULL, 0, PROFILE_KEY_OBJECT, &s->p, &s->obj), s->file);
	for (k = 0; k < s->p->nthreads; k++)
		s->total_ns += s->p->threads[k].total_ns;
}

static void side_functions(struct side *s)
{
	size_t i;

	s->fns = calloc(s->p->nfns + 1, sizeof(*s->fns));
	if (!s->fns)
		oom();
	for (i = 0; i < s->p->nfns; i++) {
		const struct profile_fn *f = &s->p->fns[i];
		struct diff_entry *e = &s->fns[s->nfns++];

		e->key = f->name;
		e->name = profile_key_name(f->name);
		e->object = s->obj[i];
		e->v[V_CALLS] = f->calls;
		e->v[V_SELF] = f->self_ns;
		e->v[V_TOTAL] = f->total_ns;
	}
	diff_merge(s->fns, &s->nfns, NV);
}

/* The call paths of both captures in one tree (analysis/pathtree.h), so
 * that a path is matched in O(1) however deep it is: fns numbers the
 * functions' keys of both, the tree their paths.  A path's entries are
 * keyed by its parent's node and its function (fixed-width hex), one key
 * per node in keys. */
#define PATH_KEY 18 /* "%08x:%08x" */

static struct {
	struct profile *fns;
	struct pathtree tree;
	char (*keys)[PATH_KEY];
} pt;

/* Lay the threads of s over the tree: s->at gets each tree node's path,
 * the threads one after the other.  The functions are numbered in the
 * order the paths meet them (a profile numbers its functions in the order
 * its trees meet them), so the keys, and the order of rows that tie, are
 * those of the paths' own order. */
static void side_number(struct side *s)
{
	uint32_t *fnmap = calloc(s->p->nfns + 1, sizeof(*fnmap)), *at;
	size_t t, i, total = 0;

	if (!fnmap)
		oom();
	if (!pt.fns && (!(pt.fns = profile_new()) || pathtree_init(&pt.tree)))
		oom();
	for (i = 0; i < s->p->nfns; i++) {
		long f = profile_intern(pt.fns, s->p->fns[i].name);

		if (f < 0)
			oom();
		fnmap[i] = (uint32_t)f;
	}
	for (t = 0; t < s->p->nthreads; t++)
		total += s->p->threads[t].n;
	s->at = at = calloc(total + 1, sizeof(*at));
	if (!at)
		oom();
	for (t = 0; t < s->p->nthreads; t++) {
		if (pathtree_add_thread(&pt.tree, &s->p->threads[t], fnmap, at))
			oom();
		at += s->p->threads[t].n;
	}
	free(fnmap);
}

/* The keys of every path (after both sides are numbered): the root's
 * children first, and in key order a parent before its children. */
static void path_keys(void)
{
	size_t g;

	pt.keys = calloc(pt.tree.len, sizeof(*pt.keys));
	if (!pt.keys)
		oom();
	for (g = 1; g < pt.tree.len; g++)
		snprintf(pt.keys[g], PATH_KEY, "%08" PRIx32 ":%08" PRIx32, pt.tree.n[g].parent,
			 pt.tree.n[g].fn);
}

/* Every node of every thread as a path keyed by its node's key (name
 * NULL: the output spells it with path_names()). */
static void side_paths(struct side *s)
{
	const uint32_t *at = s->at;
	size_t t, i;

	for (t = 0, i = 0; t < s->p->nthreads; t++)
		i += s->p->threads[t].n;
	s->paths = calloc(i + 1, sizeof(*s->paths));
	if (!s->paths)
		oom();
	for (t = 0; t < s->p->nthreads; t++) {
		const struct profile_thread *th = &s->p->threads[t];

		for (i = 1; i < th->n; i++) {
			const struct profile_tnode *nd = &th->nodes[i];
			struct diff_entry *e = &s->paths[s->npaths++];

			e->key = pt.keys[at[i]];
			e->name = NULL;
			e->object = NULL;
			e->v[V_CALLS] = nd->calls;
			e->v[V_SELF] = nd->self_ns;
			e->v[V_TOTAL] = nd->total_ns;
		}
		at += th->n;
	}
	diff_merge(s->paths, &s->npaths, NV);
}

/* The node of a path row: its key's place in pt.keys. */
static uint32_t row_path(const struct diff_row *r)
{
	const char *key = (r->new ? r->new : r->old)->key;

	return (uint32_t)((const char (*)[PATH_KEY])key - pt.keys);
}

/* The function names of path g from the root (owned: free()). */
static const char **path_names(uint32_t g, size_t *n)
{
	const char **v;
	uint32_t x, d = pt.tree.n[g].depth;

	v = malloc((d + 1) * sizeof(*v));
	if (!v)
		oom();
	for (x = g; x; x = pt.tree.n[x].parent)
		v[pt.tree.n[x].depth - 1] = profile_key_name(pt.fns->fns[pt.tree.n[x].fn].name);
	*n = d;
	return v;
}

static void side_free(struct side *s)
{
	free(s->fns);
	free(s->paths);
	free(s->obj);
	free(s->at);
	profile_free(s->p);
}

/* ---- output ---------------------------------------------------------------- */

static const char *const value_names[NV] = {"calls", "self_ns", "total_ns"};

/* Calls, then self and total time: OLD, NEW, the change and the relative
 * change of each. */
static const struct diff_col cols[] = {
	{"", 12, V_CALLS, DIFF_CELL_OLD, 0},     {" ", 12, V_CALLS, DIFF_CELL_NEW, 0},
	{" ", 12, V_CALLS, DIFF_CELL_CHANGE, 0}, {" ", 9, V_CALLS, DIFF_CELL_REL, 0},
	{"  ", 0, V_SELF, DIFF_CELL_OLD, 1},     {"  ", 0, V_SELF, DIFF_CELL_NEW, 1},
	{" ", 0, V_SELF, DIFF_CELL_CHANGE, 1},   {"  ", 9, V_SELF, DIFF_CELL_REL, 0},
	{"  ", 0, V_TOTAL, DIFF_CELL_OLD, 1},    {"  ", 0, V_TOTAL, DIFF_CELL_NEW, 1},
	{" ", 0, V_TOTAL, DIFF_CELL_CHANGE, 1},  {"  ", 9, V_TOTAL, DIFF_CELL_REL, 0},
};

/* The function a row is about: the name, or a path's last function. */
static const char *leaf(const struct diff_row *r)
{
	const struct diff_entry *e = r->new ? r->new : r->old;

	if (e->name)
		return e->name;
	return profile_key_name(pt.fns->fns[pt.tree.n[row_path(r)].fn].name);
}

static int shown(const struct diff_row *r, void *arg)
{
	const struct diff_opts *o = arg;

	return !o->pattern || fnmatch(o->pattern, leaf(r), 0) == 0;
}

/* A function: its name and object. */
static void fn_label(const struct diff_row *r, int json, void *arg)
{
	const char *obj = diff_row_object(r);

	(void)arg;
	if (!json) {
		printf("%s", text_esc(diff_row_name(r)));
		if (obj)
			printf(" [%s]", text_esc(obj));
		return;
	}
	printf("\"name\": ");
	json_str(stdout, diff_row_name(r));
	printf(", \"object\": ");
	json_str(stdout, obj);
}

/* A call path: its functions from the root. */
static void path_label(const struct diff_row *r, int json, void *arg)
{
	size_t n, i;
	const char **v = path_names(row_path(r), &n);

	(void)arg;
	if (json)
		printf("\"path\": [");
	for (i = 0; i < n; i++) {
		if (!json) {
			printf("%s%s", i ? ";" : "", text_esc(v[i]));
			continue;
		}
		if (i)
			printf(", ");
		json_str(stdout, v[i]);
	}
	if (json)
		printf("]");
	free(v);
}

static struct diff_table table(struct diff_opts *o, int paths)
{
	return (struct diff_table){
		.cols = cols,
		.ncols = sizeof(cols) / sizeof(cols[0]),
		.names = value_names,
		.nvalues = NV,
		.label = paths ? path_label : fn_label,
		.shown = shown,
		.arg = o,
	};
}

static void print_rows_text(struct diff_opts *o, const struct diff_row *rows, size_t n,
			    int paths)
{
	struct diff_table t = table(o, paths);

	printf("#  CALLS OLD    CALLS NEW       CHANGE          %%    SELF OLD    SELF NEW  "
	       "     CHANGE          %%   TOTAL OLD   TOTAL NEW       CHANGE          %%  %s\n",
	       paths ? "CALL PATH" : "FUNCTION [OBJECT]");
	diff_print_rows(&t, rows, n);
}

static const char *sort_name(int sort)
{
	return sort == DIFF_BY_NAME ? "name" : sort == V_CALLS ? "calls" : sort == V_TOTAL ? "total"
											  : "self";
}

static void print_latency(struct diff_opts *o, struct side *old, struct side *new)
{
	struct diff_latency_side a = {old->file, old->v, old->p}, b = {new->file, new->v, new->p};

	diff_latency(&a, &b, o->pattern, o->json);
}

static void print_text(struct diff_opts *o, struct side *old, struct side *new,
		       const struct diff_row *fr, size_t nfr, const struct diff_row *pr,
		       size_t npr)
{
	const char *oc = view_meta_str(old->v, "command"), *nc = view_meta_str(new->v, "command");
	struct diff_table ft = table(o, 0), ptab = table(o, 1);
	char b1[32], b2[32], b3[32];
	size_t c[4];

	printf("# cygprof diff\n");
	printf("# OLD: %s%s%s%s\n", text_esc(old->file), oc ? " (" : "", text_esc(oc), oc ? ")" : "");
	printf("# NEW: %s%s%s%s\n", text_esc(new->file), nc ? " (" : "", text_esc(nc), nc ? ")" : "");
	printf("# total time: %s -> %s (%s)\n", fmt_dur(b1, sizeof b1, old->total_ns),
	       fmt_dur(b2, sizeof b2, new->total_ns),
	       diff_print_sdur(b3, sizeof b3, (int64_t)new->total_ns - (int64_t)old->total_ns));
	if (strcmp(old->times, new->times))
		printf("# times: OLD %s, NEW %s: the time changes compare %s\n", old->times,
		       new->times,
		       !strcmp(old->times, "none") || !strcmp(new->times, "none")
			       ? "with a side that has no times (record --time=sampled without --sample)"
			       : "a measure with an estimate from samples (calls are exact on both)");
	diff_print_count(&ft, fr, nfr, c);
	diff_print_counts("functions", c);
	printf("; sorted by %s%s\n\n", sort_name(o->sort),
	       o->sort == DIFF_BY_NAME ? "" : " change");
	print_rows_text(o, fr, nfr, 0);
	if (o->paths) {
		diff_print_count(&ptab, pr, npr, c);
		printf("\n");
		diff_print_counts("call paths", c);
		printf("\n\n");
		print_rows_text(o, pr, npr, 1);
	}
	if (o->latency)
		print_latency(o, old, new);
}

static void json_side(const char *what, struct side *s)
{
	diff_print_json_side(what, s->file, view_meta_str(s->v, "command"));
	struct view_overhead ov;
	view_overhead(s->v, &ov);
	printf(", \"times\": \"%s\", \"total_ns\": %" PRIu64 ", \"compensated\": %s, \"calibration\": ",
	       s->times, s->total_ns, view_compensated(s->v) ? "true" : "false");
	cli_json_overhead(stdout, &ov);
	printf("},\n");
}

static void print_json(struct diff_opts *o, struct side *old, struct side *new,
		       const struct diff_row *fr, size_t nfr, const struct diff_row *pr,
		       size_t npr)
{
	struct diff_table ft = table(o, 0), ptab = table(o, 1);
	size_t c[4];

	printf("{\n");
	json_side("old", old);
	json_side("new", new);
	printf("  \"sort\": \"%s\",\n", sort_name(o->sort));
	diff_print_count(&ft, fr, nfr, c);
	diff_print_json_summary(c);
	diff_print_json_rows("functions", &ft, fr, nfr);
	if (o->paths) {
		printf(",\n");
		diff_print_json_rows("paths", &ptab, pr, npr);
	}
	if (o->latency)
		print_latency(o, old, new);
	printf("\n}\n");
}

/* ---- runs against runs: a verdict for CI (--fail-above) --------------------- */

/* Each side is one or more captures of the same program; per function, its
 * calls (exact: a NEW run outside the OLD runs' range is a change) and its
 * self and total times, one value per run.  A machine that is busier in one
 * run stretches every function of it, so each run's times are scaled by two
 * clocks: how much longer than its CPU time the run took (meta cpu_ns, the
 * program's processes' user and system time), and how long the rest of the
 * run took (its total without that function's time, where the rest is a
 * fifth of the run or more), each against the OLD runs' median.  The rest
 * moves when another function changed, the CPU time when the load did: a
 * verdict needs both to agree.  A time is worse when the NEW median is more
 * than PCT% above the OLD one, by more than 1.5 times either side's spread,
 * and every NEW run is more than PCT/2% above every OLD run, for a function
 * that holds at least 0.5% of the median OLD run or of the median NEW run
 * (below both, the noise of a few microseconds would decide; OLD alone
 * would let whatever was small grow unseen).  Calls are only a verdict
 * (exit 3) with --fail-calls: argv[0], the locale or the environment change
 * calls in a program whose time did not move.  With fewer than 3 runs a
 * side the spread says nothing: the noise is unknown (NAN).
 * bench/diffci.py measures the rates (bench/RESULTS.md). */

enum { VERDICT_SAME, VERDICT_FASTER, VERDICT_SLOWER, VERDICT_CALLS };
static const char *const verdict_names[] = {"same", "faster", "slower", "calls changed"};

struct run_fn {
	const char *key, *name, *object;
	uint64_t *v;              /* [run][V_CALLS, V_SELF, V_TOTAL], OLD runs first */
	double median[2][NV];     /* per side (times scaled) */
	double change[NV];        /* NEW median / OLD median - 1 (times) */
	double noise[NV];         /* the larger side's (max - min) / median; NAN: unknown */
	int verdict, worse[NV], judged[NV];
};

static int cmp_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static double median(double *x, size_t n)
{
	/* n is small: insertion sort */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && x[j - 1] > x[j]; j--) {
			double t = x[j];
			x[j] = x[j - 1];
			x[j - 1] = t;
		}
	return n ? (n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2) : 0;
}

/* The captures of a comma-separated list, each an OLD or NEW run. */
static size_t split_runs(char *list, char ***out)
{
	size_t n = 1, k = 0;
	char **v, *p;

	for (p = list; *p; p++)
		n += *p == ',';
	v = calloc(n, sizeof(*v));
	if (!v)
		oom();
	for (p = strtok(list, ","); p; p = strtok(NULL, ","))
		v[k++] = p;
	if (k != n)
		cli_die(2, "diff: an empty capture name in '%s'", list);
	*out = v;
	return k;
}

/* The median change of f's time k with each run's time divided by clock[r]
 * (NULL: the rest of that run, its total without that time, against the
 * OLD runs' median of it); lo/hi the extremes of each side; 0 when the
 * rest is not a clock (under a fifth of the run). */
static int scaled_times(const struct run_fn *f, int k, size_t nold, size_t nnew,
			const double *tot, const double *clock, double x[2][64], double lo[2],
			double hi[2])
{
	size_t nr = nold + nnew;
	double rest[64], rmed = 0;

	if (!clock) {
		double tt[64];

		for (size_t r = 0; r < nold; r++) {
			rest[r] = tot[r] - (double)f->v[r * NV + k];
			tt[r] = tot[r];
		}
		rmed = median(rest, nold);
		if (!(rmed > 0) || rmed < 0.2 * median(tt, nold))
			return 0;
	}
	for (int sd = 0; sd < 2; sd++) {
		lo[sd] = 1e300;
		hi[sd] = -1;
	}
	for (size_t r = 0; r < nr; r++) {
		int sd = r >= nold;
		size_t i = sd ? r - nold : r;
		double t = (double)f->v[r * NV + k], c = clock ? clock[r] : (tot[r] - t) / rmed;

		x[sd][i] = c > 0 ? t / c : t;
		lo[sd] = x[sd][i] < lo[sd] ? x[sd][i] : lo[sd];
		hi[sd] = x[sd][i] > hi[sd] ? x[sd][i] : hi[sd];
	}
	return 1;
}

static void judge(struct run_fn *f, size_t nold, size_t nnew, const double *tot,
		  const double *slow, double pct)
{
	size_t nr = nold + nnew;
	double x[2][64], y[2][64], shares[2][64], lo[2], hi[2], ylo[2], yhi[2];
	uint64_t cmin[2] = {UINT64_MAX, UINT64_MAX}, cmax[2] = {0, 0};

	for (size_t r = 0; r < nr; r++) {
		int sd = r >= nold;
		uint64_t c = f->v[r * NV + V_CALLS];
		cmin[sd] = c < cmin[sd] ? c : cmin[sd];
		cmax[sd] = c > cmax[sd] ? c : cmax[sd];
	}
	/* exact counts: a NEW run outside the OLD runs' range is a change (a
	 * deterministic program has one value a side) */
	f->verdict = cmin[1] < cmin[0] || cmax[1] > cmax[0] ? VERDICT_CALLS : VERDICT_SAME;
	for (int k = V_SELF; k <= V_TOTAL; k++) {
		double cpu_change, ym0, ym1;
		int rest;

		for (size_t r = 0; r < nr; r++)
			shares[r >= nold][r >= nold ? r - nold : r] =
				tot[r] > 0 ? (double)f->v[r * NV + k] / tot[r] : 0;
		/* the run's times as if it had run as fast as the OLD runs:
		 * against its CPU time (slow[r]), and against the rest of the
		 * run where the rest is a fifth of it or more */
		scaled_times(f, k, nold, nnew, tot, slow, y, ylo, yhi);
		rest = scaled_times(f, k, nold, nnew, tot, NULL, x, lo, hi);
		if (!rest) {
			memcpy(x, y, sizeof x);
			memcpy(lo, ylo, sizeof lo);
			memcpy(hi, yhi, sizeof hi);
		}
		ym0 = median(y[0], nold);
		ym1 = median(y[1], nnew);
		cpu_change = ym0 > 0 ? ym1 / ym0 - 1 : 0;
		f->median[0][k] = median(x[0], nold);
		f->median[1][k] = median(x[1], nnew);
		f->change[k] = f->median[0][k] > 0 ? f->median[1][k] / f->median[0][k] - 1 : 0;
		f->noise[k] = 0;
		for (int sd = 0; sd < 2; sd++)
			if (f->median[sd][k] > 0 && (hi[sd] - lo[sd]) / f->median[sd][k] > f->noise[k])
				f->noise[k] = (hi[sd] - lo[sd]) / f->median[sd][k];
		if (nold < 3 || nnew < 3)
			f->noise[k] = NAN;
		/* big in either side's median run (one preempted run does not
		 * make a function big); a function small in OLD that grew is
		 * judged by its NEW share */
		f->judged[k] = (median(shares[0], nold) >= 0.005 ||
				median(shares[1], nnew) >= 0.005) && f->median[0][k] > 0;
		if (!f->judged[k])
			continue;
		/* both clocks must agree: the rest of the run moves when another
		 * function changed, the CPU time when the machine's load did */
		/* and the change larger than either side's spread by half
		 * again: runs of one build split into their slowest and their
		 * fastest do not pass (one split in 20 separates them) */
		double spread = 1.5 * (hi[0] - lo[0] > hi[1] - lo[1] ? hi[0] - lo[0] : hi[1] - lo[1]);
		if (f->change[k] > pct / 100 && lo[1] > hi[0] * (1 + pct / 200) &&
		    cpu_change > pct / 200 && f->median[1][k] - f->median[0][k] > spread) {
			f->worse[k] = 1;
			if (f->verdict == VERDICT_SAME || f->verdict == VERDICT_FASTER)
				f->verdict = VERDICT_SLOWER;
		} else if (f->change[k] < -pct / 100 / (1 + pct / 100) &&
			   hi[1] * (1 + pct / 200) < lo[0] && cpu_change < -pct / 200 &&
			   f->median[0][k] - f->median[1][k] > spread &&
			   f->verdict == VERDICT_SAME) {
			f->verdict = VERDICT_FASTER;
		}
	}
}

static void print_runs_json(const struct diff_opts *o, char **olds, size_t nold, char **news,
			    size_t nnew, struct run_fn *fns, size_t nf, size_t failed)
{
	printf("{\n  \"old\": [");
	for (size_t i = 0; i < nold; i++) {
		printf("%s", i ? ", " : "");
		json_str(stdout, olds[i]);
	}
	printf("],\n  \"new\": [");
	for (size_t i = 0; i < nnew; i++) {
		printf("%s", i ? ", " : "");
		json_str(stdout, news[i]);
	}
	printf("],\n  \"fail_above\": ");
	if (o->fail_above >= 0)
		json_real(stdout, o->fail_above);
	else
		printf("null");
	printf(",\n  \"fail_calls\": %s", o->fail_calls ? "true" : "false");
	printf(",\n  \"noise_known\": %s", nold >= 3 && nnew >= 3 ? "true" : "false");
	printf(",\n  \"failed\": %zu,\n  \"functions\": [", failed);
	for (size_t i = 0; i < nf; i++) {
		const struct run_fn *f = &fns[i];

		printf("%s\n    {\"name\": ", i ? "," : "");
		json_str(stdout, f->name);
		printf(", \"object\": ");
		json_str_null(stdout, f->object);
		printf(", \"verdict\": \"%s\"", verdict_names[f->verdict]);
		for (int k = 0; k < NV; k++) {
			printf(", \"%s\": {\"old\": [", value_names[k]);
			for (size_t r = 0; r < nold + nnew; r++)
				printf("%s%s%" PRIu64, r == nold ? "], \"new\": [" : "",
				       r && r != nold ? ", " : "", f->v[r * NV + k]);
			printf("]");
			if (k != V_CALLS) {
				printf(", \"median_old\": %.0f, \"median_new\": %.0f, \"change\": ",
				       f->median[0][k], f->median[1][k]);
				json_real(stdout, f->change[k]);
				printf(", \"noise\": ");
				if (isnan(f->noise[k]))
					printf("null");
				else
					json_real(stdout, f->noise[k]);
				printf(", \"judged\": %s, \"worse\": %s", f->judged[k] ? "true" : "false",
				       f->worse[k] ? "true" : "false");
			}
			printf("}");
		}
		printf("}");
	}
	printf("%s]\n}\n", nf ? "\n  " : "");
}

static int fails(const struct diff_opts *o, const struct run_fn *f)
{
	return o->fail_above >= 0 && ((o->fail_calls && f->verdict == VERDICT_CALLS) ||
				      f->worse[V_SELF] || f->worse[V_TOTAL]);
}

static int cmp_run_fn(const void *a, const void *b)
{
	const struct run_fn *x = a, *y = b;
	double dx = x->median[1][V_SELF] - x->median[0][V_SELF];
	double dy = y->median[1][V_SELF] - y->median[0][V_SELF];

	if (x->verdict != y->verdict)
		return y->verdict - x->verdict; /* calls changed, slower, faster, same */
	if (dx != dy)
		return dx < dy ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int diff_runs(struct diff_opts *o)
{
	char *ol = strdup(o->old), *nl = strdup(o->new), **olds, **news;
	size_t nold, nnew, nr, nkeys = 0, ckeys = 0, nf = 0, failed = 0;
	struct side *sides;
	const char **keys = NULL;
	struct run_fn *fns;
	double *tot;
	double pct = o->fail_above >= 0 ? o->fail_above : 0;

	if (!ol || !nl)
		oom();
	nold = split_runs(ol, &olds);
	nnew = split_runs(nl, &news);
	nr = nold + nnew;
	if (nr > 128 || nold > 64 || nnew > 64)
		cli_die(2, "diff: at most 64 captures a side");
	if (o->paths)
		cli_die(2, "diff: --paths compares two captures, not runs");
	sides = calloc(nr, sizeof(*sides));
	tot = calloc(nr, sizeof(*tot));
	if (!sides || !tot)
		oom();
	for (size_t r = 0; r < nr; r++) {
		struct side *s = &sides[r];

		s->file = r < nold ? olds[r] : news[r - nold];
		load_profile(s, o->di, &o->filt);
		side_times(s);
		side_functions(s);
		tot[r] = (double)s->total_ns;
		for (size_t i = 0; i < s->nfns; i++) {
			if (nkeys == ckeys) {
				ckeys = ckeys ? ckeys * 2 : 256;
				keys = realloc(keys, ckeys * sizeof(*keys));
				if (!keys)
					oom();
			}
			keys[nkeys++] = s->fns[i].key;
		}
	}
	qsort(keys, nkeys, sizeof(*keys), cmp_keys);
	for (size_t i = 0; i < nkeys; i++)
		if (!nf || strcmp(keys[nf - 1], keys[i]))
			keys[nf++] = keys[i];
	fns = calloc(nf ? nf : 1, sizeof(*fns));
	if (!fns)
		oom();
	for (size_t i = 0; i < nf; i++) {
		fns[i].key = keys[i];
		fns[i].v = calloc(nr * NV, sizeof(uint64_t));
		if (!fns[i].v)
			oom();
	}
	for (size_t r = 0; r < nr; r++)
		for (size_t i = 0; i < sides[r].nfns; i++) {
			const struct diff_entry *e = &sides[r].fns[i];
			const char **at = bsearch(&e->key, keys, nf, sizeof(*keys), cmp_keys);
			struct run_fn *f = &fns[at - keys];

			f->name = e->name;
			f->object = e->object;
			for (int k = 0; k < NV; k++)
				f->v[r * NV + k] = e->v[k];
		}
	/* how much slower than its CPU time each run went (a machine busier
	 * in one run stretches all of it), against the OLD runs' median: the
	 * CPU time is meta cpu_ns (every process of the run, from wait4); a
	 * capture without it leaves every run unscaled */
	double *slow = calloc(nr, sizeof(*slow)), *ratio = calloc(nr, sizeof(*ratio)), base;
	int scaled = 1;
	if (!slow || !ratio)
		oom();
	for (size_t r = 0; r < nr; r++) {
		const char *m = view_meta_str(sides[r].v, "cpu_ns");
		double cpu = m ? strtod(m, NULL) : 0;

		slow[r] = cpu > 0 && tot[r] > 0 ? tot[r] / cpu : 0;
		scaled &= slow[r] > 0;
	}
	for (size_t r = 0; r < nold; r++)
		ratio[r] = slow[r];
	base = scaled ? median(ratio, nold) : 0;
	for (size_t r = 0; r < nr; r++)
		slow[r] = base > 0 ? slow[r] / base : 1;
	if (nold < 3 || nnew < 3)
		fprintf(stderr, "cygprof diff: noise unknown: %zu OLD and %zu NEW run%s; "
			"3 or more a side measure it\n", nold, nnew, nnew == 1 ? "" : "s");
	for (size_t i = 0; i < nf; i++) {
		judge(&fns[i], nold, nnew, tot, slow, pct);
		failed += fails(o, &fns[i]);
	}
	qsort(fns, nf, sizeof(*fns), cmp_run_fn);
	if (o->json) {
		print_runs_json(o, olds, nold, news, nnew, fns, nf, failed);
	} else {
		printf("# %zu OLD run%s, %zu NEW run%s", nold, nold == 1 ? "" : "s", nnew,
		       nnew == 1 ? "" : "s");
		if (o->fail_above >= 0)
			printf("; --fail-above %g%%%s: %zu function%s failed", o->fail_above,
			       o->fail_calls ? " --fail-calls" : "", failed, failed == 1 ? "" : "s");
		if (nold < 3 || nnew < 3)
			printf("; noise unknown");
		printf("\n# VERDICT        CALLS OLD -> NEW     SELF ms OLD -> NEW  CHANGE  NOISE"
		       "   TOTAL CHANGE  FUNCTION\n");
		for (size_t i = 0; i < nf; i++) {
			const struct run_fn *f = &fns[i];
			char cb[48], nb[24];

			/* with --fail-above, only what fails */
			if (o->fail_above >= 0 && !fails(o, f))
				continue;
			if (o->fail_above < 0 && o->pattern && fnmatch(o->pattern, f->name, 0))
				continue;
			snprintf(cb, sizeof cb, "%" PRIu64 " -> %" PRIu64, f->v[V_CALLS],
				 f->v[(nr - 1) * NV + V_CALLS]);
			if (isnan(f->noise[V_SELF]))
				snprintf(nb, sizeof nb, "noise unknown");
			else
				snprintf(nb, sizeof nb, "%5.1f%%", 100 * f->noise[V_SELF]);
			printf("%s%-13s%s %20s %9.3f -> %9.3f %+6.1f%% %6s %+13.1f%%  %s%s%s%s\n",
			       f->verdict >= VERDICT_SLOWER ? cli_hot(1)
			       : f->verdict == VERDICT_FASTER && cli_color ? "\033[32m" : "",
			       verdict_names[f->verdict], cli_reset(), cb, f->median[0][V_SELF] / 1e6,
			       f->median[1][V_SELF] / 1e6, 100 * f->change[V_SELF],
			       nb, 100 * f->change[V_TOTAL], text_esc(f->name),
			       f->object ? " [" : "", f->object ? text_esc(f->object) : "",
			       f->object ? "]" : "");
		}
	}
	for (size_t r = 0; r < nr; r++) {
		side_free(&sides[r]);
		view_close(sides[r].v);
	}
	for (size_t i = 0; i < nf; i++)
		free(fns[i].v);
	free(fns);
	free(keys);
	free(sides);
	free(tot);
	free(slow);
	free(ratio);
	free(olds);
	free(news);
	free(ol);
	free(nl);
	debuginfo_free(o->di);
	return failed ? 3 : 0;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_opts o;
	struct side old, new;
	struct diff_row *fr = NULL, *pr = NULL;
	size_t nfr = 0, npr = 0;
	int err;

	parse_opts(argc, argv, &o);
	cli_debuginfo_env(o.di);
	if (o.fail_above >= 0 || strchr(o.old, ',') || strchr(o.new, ','))
		return diff_runs(&o);
	memset(&old, 0, sizeof(old));
	memset(&new, 0, sizeof(new));
	old.file = o.old;
	new.file = o.new;
	load_profile(&old, o.di, &o.filt);
	load_profile(&new, o.di, &o.filt);
	side_times(&old);
	side_times(&new);
	calibration_warn(&old, &new);
	side_functions(&old);
	side_functions(&new);
	err = diff_match(old.fns, old.nfns, new.fns, new.nfns, NV, &fr, &nfr);
	if (err)
		oom();
	diff_sort(fr, nfr, o.sort);
	if (o.paths) {
		side_number(&old);
		side_number(&new);
		path_keys();
		side_paths(&old);
		side_paths(&new);
		err = diff_match(old.paths, old.npaths, new.paths, new.npaths, NV, &pr, &npr);
		if (err)
			oom();
		diff_sort(pr, npr, o.sort);
	}
	if (o.json)
		print_json(&o, &old, &new, fr, nfr, pr, npr);
	else
		print_text(&o, &old, &new, fr, nfr, pr, npr);
	free(fr);
	free(pr);
	side_free(&old);
	side_free(&new);
	profile_free(pt.fns);
	pathtree_release(&pt.tree);
	free(pt.keys);
	view_close(old.v);
	cli_finish(new.v);
	debuginfo_free(o.di);
	return 0;
}
