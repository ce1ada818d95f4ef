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
#include "profile.h"
#include "format.h"
#include "json.h"
#include "view.h"

enum { V_CALLS, V_SELF, V_TOTAL, NV };

/* One capture's side of the comparison. */
struct side {
	const char *file;
	struct view *v;
	struct profile *p;
	const char **obj;          /* per profile function: its object's base name */
	size_t nobj;
	struct diff_entry *fns, *paths;
	size_t nfns, npaths;
	uint64_t total_ns;         /* the sum of the threads' totals */
};

struct diff_opts {
	int json, paths;
	int sort;                  /* a value or DIFF_BY_NAME */
	const char *pattern;
	struct debuginfo *di;
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
		"  -F, --function PATTERN only functions (paths ending in one) matching the\n"
		"                         glob PATTERN\n"
		"  --format FMT           text (default) or json\n"
		CLI_DEBUG_HELP
		"  -h, --help             this help\n");
}

static void parse_opts(int argc, char **argv, struct diff_opts *o)
{
	enum { O_SORT = 256, O_PATHS, O_FORMAT };
	static const struct option lopts[] = {
		{"sort", required_argument, NULL, O_SORT},
		{"paths", no_argument, NULL, O_PATHS},
		{"function", required_argument, NULL, 'F'},
		{"format", required_argument, NULL, O_FORMAT},
		CLI_DEBUG_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->sort = V_SELF;
	o->di = cli_debuginfo_new();
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
		case CLI_O_DEBUG_DIR:
		case CLI_O_SYMFS:
			cli_debug_option(o->di, "diff", c, optarg);
			break;
		default:
			cli_bad_option("diff", c, argv);
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

static const char *base_name(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;

	return b ? b + 1 : path ? path : "?";
}

/* The profile function of view function id, keyed "OBJECT\x1fNAME" where
 * OBJECT is the object's base name, empty for the process's executable. */
static uint32_t fn_of(struct side *s, uint32_t **map, size_t *nmap, uint32_t id)
{
	const struct view_fn *vf;
	const struct cygprof_object *exe;
	const char *okey, *oname;
	char *key;
	long f;
	size_t n;

	if (id >= *nmap) {
		uint32_t *t;

		n = view_nfns(s->v);
		t = realloc(*map, n * sizeof(*t));
		if (!t)
			oom();
		memset(t + *nmap, 0, (n - *nmap) * sizeof(*t));
		*map = t;
		*nmap = n;
	}
	if ((*map)[id])
		return (*map)[id] - 1;
	vf = view_fn(s->v, id);
	if (!vf)
		cli_die(1, "%s: %s", s->file, cygprof_strerror(CYGPROF_E_CORRUPT));
	exe = view_exe_object(s->v, vf->proc);
	oname = vf->obj ? base_name(vf->obj->path) : "?";
	okey = vf->obj && vf->obj == exe ? "" : oname;
	n = strlen(okey) + strlen(vf->name) + 2;
	key = malloc(n);
	if (!key)
		oom();
	snprintf(key, n, "%s\x1f%s", okey, vf->name);
	f = profile_intern(s->p, key);
	free(key);
	if (f < 0)
		oom();
	if (s->nobj < s->p->nfns) {
		const char **no = realloc(s->obj, s->p->nfns * sizeof(*no));

		if (!no)
			oom();
		s->obj = no;
		s->nobj = s->p->nfns;
	}
	s->obj[f] = oname;
	(*map)[id] = (uint32_t)f + 1;
	return (uint32_t)f;
}

/* The name part of a profile function's key. */
static const char *fn_name(const struct side *s, uint32_t f)
{
	const char *k = s->p->fns[f].name, *sep = strchr(k, '\x1f');

	return sep ? sep + 1 : k;
}

static void load_profile(struct side *s, struct debuginfo *di)
{
	const struct cygprof_thread *threads;
	uint32_t *map = NULL, *idx = NULL;
	size_t nthreads, nmap = 0, k, cap = 0;
	int err;

	s->v = cli_open_view(s->file, di);
	err = view_threads(s->v, &threads, &nthreads);
	cli_check(err, s->file);
	s->p = profile_new();
	if (!s->p)
		oom();
	for (k = 0; k < nthreads; k++) {
		const struct view_tree *t;
		struct profile_thread_info info;
		size_t j;

		err = view_tree(s->v, threads[k].idx, &t);
		cli_check(err, s->file);
		memset(&info, 0, sizeof(info));
		info.idx = threads[k].idx;
		info.tid = threads[k].tid;
		info.pid = view_thread_pid(s->v, &threads[k]);
		info.flags = threads[k].flags;
		view_thread_name(&threads[k], info.name);
		if (t->n > cap) {
			uint32_t *nx = realloc(idx, t->n * sizeof(*nx));

			if (!nx)
				oom();
			idx = nx;
			cap = t->n;
		}
		for (j = 1; j < t->n; j++)
			idx[j] = fn_of(s, &map, &nmap, t->fn[j]);
		if (t->n)
			idx[0] = 0;
		err = profile_add_tree_self(s->p, &info, t->nodes, idx, t->self_ns, t->n);
		if (err == -EINVAL)
			err = CYGPROF_E_CORRUPT;
		cli_check(err, s->file);
		s->total_ns += t->total_ns;
	}
	free(map);
	free(idx);
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
		e->name = fn_name(s, (uint32_t)i);
		e->object = s->obj[i];
		e->v[V_CALLS] = f->calls;
		e->v[V_SELF] = f->self_ns;
		e->v[V_TOTAL] = f->total_ns;
	}
	diff_merge(s->fns, &s->nfns, NV);
}

/* The call paths of both captures, numbered together: a path is its
 * parent path and its function, both by number, so a path is matched in O(1)
 * however deep it is.  fns numbers the functions' keys, paths the
 * "PARENT:FN" pairs (fixed-width hex: the key of a path's entries); parent
 * and fn give each path number's parts back. */
static struct {
	struct profile *fns, *paths;
	uint32_t *parent, *fn;
	size_t cap;
} pt;

#define PATH_ROOT UINT32_MAX

static uint32_t path_intern(uint32_t parent, const char *fnkey)
{
	char key[32];
	long f = profile_intern(pt.fns, fnkey), g;

	if (f < 0)
		oom();
	/* the root's children first, and in key order a parent before its
	 * children (it was numbered first) */
	snprintf(key, sizeof(key), "%08" PRIx32 ":%08" PRIx32,
		 parent == PATH_ROOT ? 0 : parent + 1, (uint32_t)f);
	g = profile_intern(pt.paths, key);
	if (g < 0)
		oom();
	if ((size_t)g >= pt.cap) {
		size_t cap = pt.cap ? 2 * pt.cap : 256;
		uint32_t *a = realloc(pt.parent, cap * sizeof(*a)), *b;

		if (!a)
			oom();
		pt.parent = a;
		b = realloc(pt.fn, cap * sizeof(*b));
		if (!b)
			oom();
		pt.fn = b;
		pt.cap = cap;
	}
	pt.parent[g] = parent;
	pt.fn[g] = (uint32_t)f;
	return (uint32_t)g;
}

/* Every node of every thread as a path keyed by its number (name NULL: the
 * output spells it with path_names()). */
static void side_paths(struct side *s)
{
	size_t t, total = 0;

	if (!pt.fns) {
		pt.fns = profile_new();
		pt.paths = profile_new();
		if (!pt.fns || !pt.paths)
			oom();
	}
	for (t = 0; t < s->p->nthreads; t++)
		total += s->p->threads[t].n;
	s->paths = calloc(total + 1, sizeof(*s->paths));
	if (!s->paths)
		oom();
	for (t = 0; t < s->p->nthreads; t++) {
		const struct profile_thread *th = &s->p->threads[t];
		uint32_t *at = calloc(th->n + 1, sizeof(*at));
		size_t i;

		if (!at)
			oom();
		for (i = 1; i < th->n; i++) {
			const struct profile_tnode *nd = &th->nodes[i];
			uint32_t up = nd->parent && nd->parent < i ? at[nd->parent] : PATH_ROOT;
			uint32_t g = path_intern(up, s->p->fns[nd->fn].name);
			struct diff_entry *e = &s->paths[s->npaths++];

			e->key = pt.paths->fns[g].name;
			e->name = NULL;
			e->object = NULL;
			e->v[V_CALLS] = nd->calls;
			e->v[V_SELF] = nd->self_ns;
			e->v[V_TOTAL] = nd->total_ns;
			at[i] = g;
		}
		free(at);
	}
	diff_merge(s->paths, &s->npaths, NV);
}

/* The name part of a function key. */
static const char *key_name(const char *k)
{
	const char *sep = strchr(k, '\x1f');

	return sep ? sep + 1 : k;
}

/* The number of a path row. */
static uint32_t row_path(const struct diff_row *r)
{
	long g = profile_find(pt.paths, (r->new ? r->new : r->old)->key);

	return g < 0 ? PATH_ROOT : (uint32_t)g;
}

/* The function names of path g from the root (owned: free()). */
static const char **path_names(uint32_t g, size_t *n)
{
	const char **v;
	size_t k = 0, d = 0;
	uint32_t x;

	for (x = g; x != PATH_ROOT; x = pt.parent[x])
		d++;
	v = malloc((d + 1) * sizeof(*v));
	if (!v)
		oom();
	for (x = g; x != PATH_ROOT; x = pt.parent[x])
		v[d - ++k] = key_name(pt.fns->fns[pt.fn[x]].name);
	*n = d;
	return v;
}

static void print_path(uint32_t g)
{
	size_t n, i;
	const char **v = path_names(g, &n);

	for (i = 0; i < n; i++)
		printf("%s%s", i ? ";" : "", v[i]);
	free(v);
}

static void side_free(struct side *s)
{
	free(s->fns);
	free(s->paths);
	free(s->obj);
	profile_free(s->p);
}

/* ---- output ---------------------------------------------------------------- */

static const char *const value_names[NV] = {"calls", "self_ns", "total_ns"};

/* The function a row is about: the name, or a path's last function. */
static const char *leaf(const struct diff_row *r)
{
	const struct diff_entry *e = r->new ? r->new : r->old;
	uint32_t g;

	if (e->name)
		return e->name;
	g = row_path(r);
	return g == PATH_ROOT ? "" : key_name(pt.fns->fns[pt.fn[g]].name);
}

static int shown(const struct diff_opts *o, const struct diff_row *r)
{
	return !o->pattern || fnmatch(o->pattern, leaf(r), 0) == 0;
}

static const char *fmt_rel(char *buf, size_t len, const struct diff_row *r, int k)
{
	double rel = diff_rel(r->ov[k], r->nv[k]);

	if (r->ov[k] == r->nv[k])
		snprintf(buf, len, "%9s", "0.0%");
	else if (isnan(rel))
		snprintf(buf, len, "%9s", "new");
	else
		snprintf(buf, len, "%+8.1f%%", rel * 100.0);
	return buf;
}

static const char *fmt_sdur(char *buf, size_t len, int64_t d)
{
	char b[32];
	uint64_t m = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
	const char *s = fmt_dur(b, sizeof(b), m);

	while (*s == ' ')
		s++;
	snprintf(buf, len, "%*s%c%s", (int)(10 - strlen(s)), "", d < 0 ? '-' : d > 0 ? '+' : ' ', s);
	return buf;
}

static void print_rows_text(const struct diff_opts *o, const struct diff_row *rows, size_t n,
			    int paths)
{
	size_t i;

	printf("#  CALLS OLD    CALLS NEW       CHANGE          %%    SELF OLD    SELF NEW  "
	       "     CHANGE          %%   TOTAL OLD   TOTAL NEW       CHANGE          %%  %s\n",
	       paths ? "CALL PATH" : "FUNCTION [OBJECT]");
	for (i = 0; i < n; i++) {
		const struct diff_row *r = &rows[i];
		char b[8][48];
		const char *obj = diff_row_object(r);

		if (!shown(o, r))
			continue;
		if (r->delta[V_CALLS])
			snprintf(b[1], sizeof b[1], "%+" PRId64, r->delta[V_CALLS]);
		else
			snprintf(b[1], sizeof b[1], "0");
		printf("%12" PRIu64 " %12" PRIu64 " %12s %s", r->ov[V_CALLS], r->nv[V_CALLS], b[1],
		       fmt_rel(b[0], sizeof b[0], r, V_CALLS));
		printf("  %s  %s %s  %s", fmt_dur(b[1], sizeof b[1], r->ov[V_SELF]),
		       fmt_dur(b[2], sizeof b[2], r->nv[V_SELF]),
		       fmt_sdur(b[3], sizeof b[3], r->delta[V_SELF]),
		       fmt_rel(b[4], sizeof b[4], r, V_SELF));
		printf("  %s  %s %s  %s", fmt_dur(b[5], sizeof b[5], r->ov[V_TOTAL]),
		       fmt_dur(b[6], sizeof b[6], r->nv[V_TOTAL]),
		       fmt_sdur(b[7], sizeof b[7], r->delta[V_TOTAL]),
		       fmt_rel(b[0], sizeof b[0], r, V_TOTAL));
		printf("  ");
		if (paths)
			print_path(row_path(r));
		else
			printf("%s", diff_row_name(r));
		if (obj && !paths)
			printf(" [%s]", obj);
		if (r->status == DIFF_ADDED || r->status == DIFF_REMOVED)
			printf("  (%s)", diff_status_str(r->status));
		printf("\n");
	}
}

static void counts(const struct diff_opts *o, const struct diff_row *rows, size_t n,
		   size_t c[4])
{
	size_t i;

	memset(c, 0, 4 * sizeof(*c));
	for (i = 0; i < n; i++)
		if (shown(o, &rows[i]))
			c[rows[i].status]++;
}

static const char *sort_name(int sort)
{
	return sort == DIFF_BY_NAME ? "name" : sort == V_CALLS ? "calls" : sort == V_TOTAL ? "total"
											  : "self";
}

static void print_text(const struct diff_opts *o, struct side *old, struct side *new,
		       const struct diff_row *fr, size_t nfr, const struct diff_row *pr,
		       size_t npr)
{
	const char *oc = view_meta_str(old->v, "command"), *nc = view_meta_str(new->v, "command");
	char b1[32], b2[32], b3[32];
	size_t c[4];

	printf("# cygprof diff\n");
	printf("# OLD: %s%s%s%s\n", old->file, oc ? " (" : "", oc ? oc : "", oc ? ")" : "");
	printf("# NEW: %s%s%s%s\n", new->file, nc ? " (" : "", nc ? nc : "", nc ? ")" : "");
	printf("# total time: %s -> %s (%s)\n", fmt_dur(b1, sizeof b1, old->total_ns),
	       fmt_dur(b2, sizeof b2, new->total_ns),
	       fmt_sdur(b3, sizeof b3, (int64_t)new->total_ns - (int64_t)old->total_ns));
	counts(o, fr, nfr, c);
	printf("# functions: %zu unchanged, %zu changed, %zu added, %zu removed; "
	       "sorted by %s%s\n\n",
	       c[DIFF_SAME], c[DIFF_CHANGED], c[DIFF_ADDED], c[DIFF_REMOVED], sort_name(o->sort),
	       o->sort == DIFF_BY_NAME ? "" : " change");
	print_rows_text(o, fr, nfr, 0);
	if (o->paths) {
		counts(o, pr, npr, c);
		printf("\n# call paths: %zu unchanged, %zu changed, %zu added, %zu removed\n\n",
		       c[DIFF_SAME], c[DIFF_CHANGED], c[DIFF_ADDED], c[DIFF_REMOVED]);
		print_rows_text(o, pr, npr, 1);
	}
}

static void json_side(const char *what, struct side *s)
{
	const char *cmd = view_meta_str(s->v, "command");

	printf("  \"%s\": {\"file\": ", what);
	json_str(stdout, s->file);
	printf(", \"command\": ");
	json_str_null(stdout, cmd);
	printf(", \"total_ns\": %" PRIu64 "},\n", s->total_ns);
}

static void json_rows(const struct diff_opts *o, const char *what, const struct diff_row *rows,
		      size_t n, int paths)
{
	size_t i, k, m = 0;

	printf("  \"%s\": [", what);
	for (i = 0; i < n; i++) {
		const struct diff_row *r = &rows[i];

		if (!shown(o, r))
			continue;
		printf("%s\n    {", m++ ? "," : "");
		if (paths) {
			size_t np, j;
			const char **v = path_names(row_path(r), &np);

			printf("\"path\": [");
			for (j = 0; j < np; j++) {
				if (j)
					printf(", ");
				json_str(stdout, v[j]);
			}
			printf("]");
			free(v);
		} else {
			printf("\"name\": ");
			json_str(stdout, diff_row_name(r));
			printf(", \"object\": ");
			json_str(stdout, diff_row_object(r));
		}
		printf(", \"status\": \"%s\"", diff_status_str(r->status));
		for (k = 0; k < NV; k++)
			json_change(stdout, value_names[k], r->ov[k], r->nv[k], r->delta[k],
				    diff_rel(r->ov[k], r->nv[k]));
		printf("}");
	}
	printf("%s]", m ? "\n  " : "");
}

static void print_json(const struct diff_opts *o, struct side *old, struct side *new,
		       const struct diff_row *fr, size_t nfr, const struct diff_row *pr,
		       size_t npr)
{
	size_t c[4];

	printf("{\n");
	json_side("old", old);
	json_side("new", new);
	printf("  \"sort\": \"%s\",\n", sort_name(o->sort));
	counts(o, fr, nfr, c);
	printf("  \"summary\": {\"same\": %zu, \"changed\": %zu, \"added\": %zu, \"removed\": %zu},\n",
	       c[DIFF_SAME], c[DIFF_CHANGED], c[DIFF_ADDED], c[DIFF_REMOVED]);
	json_rows(o, "functions", fr, nfr, 0);
	if (o->paths) {
		printf(",\n");
		json_rows(o, "paths", pr, npr, 1);
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
	load_profile(&old, o.di);
	load_profile(&new, o.di);
	side_functions(&old);
	side_functions(&new);
	err = diff_match(old.fns, old.nfns, new.fns, new.nfns, NV, &fr, &nfr);
	if (err)
		oom();
	diff_sort(fr, nfr, o.sort);
	if (o.paths) {
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
	profile_free(pt.paths);
	free(pt.parent);
	free(pt.fn);
	view_close(old.v);
	cli_finish(new.v);
	debuginfo_free(o.di);
	return 0;
}
