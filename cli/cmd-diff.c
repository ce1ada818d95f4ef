/* SPDX-License-Identifier: MIT */
/* cmd-diff.c - cygprof diff: the profiles of two captures compared, function
 * by function (matched by name and object, so two builds of a program
 * compare) and, with --paths, call path by call path; or JSON.  The
 * matching, changes and order are analysis/diff.c's. */
#include "config.h"

#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "debuginfo.h"
#include "diff.h"
#include "diff-print.h"
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

struct diff_opts {
	int json, paths;
	int sort;                  /* a value or DIFF_BY_NAME */
	const char *pattern;
	struct debuginfo *di;
	struct cli_filter filt;    /* -F, -N, -D, --time-range: both captures */
	const char *old, *new;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof diff [options] OLD NEW\n"
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
		"  --function PATTERN     only functions (paths ending in one) matching the\n"
		"                         glob PATTERN\n"
		CLI_FILTER_HELP
		"  --format FMT           text (default) or json\n"
		CLI_TIME_HELP CLI_DEBUG_HELP
		"  -h, --help             this help\n");
}

static void parse_opts(int argc, char **argv, struct diff_opts *o)
{
	enum { O_SORT = 256, O_PATHS, O_FORMAT };
	static const struct option lopts[] = {
		{"sort", required_argument, NULL, O_SORT},
		{"paths", no_argument, NULL, O_PATHS},
		{"function", required_argument, NULL, 'f'},
		CLI_FILTER_OPTIONS,
		{"format", required_argument, NULL, O_FORMAT},
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
		case O_FORMAT:
			o->json = cli_format_json("diff", optarg);
			break;
		}
	}
	if (argc - optind != 2)
		cli_die(2, "diff: needs two captures OLD NEW, %s (see 'cygprof diff --help')",
			argc - optind < 2 ? "got fewer" : "got more");
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
}

static void json_side(const char *what, struct side *s)
{
	diff_print_json_side(what, s->file, view_meta_str(s->v, "command"));
	printf(", \"times\": \"%s\", \"total_ns\": %" PRIu64 "},\n", s->times, s->total_ns);
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
	printf("\n}\n");
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
	memset(&old, 0, sizeof(old));
	memset(&new, 0, sizeof(new));
	old.file = o.old;
	new.file = o.new;
	load_profile(&old, o.di, &o.filt);
	load_profile(&new, o.di, &o.filt);
	side_times(&old);
	side_times(&new);
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
