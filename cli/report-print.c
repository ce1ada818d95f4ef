/* SPDX-License-Identifier: MIT */
/* report-print.c - flat profile and call graph in gprof's layout, with
 * cygprof report's exact-time headers or gprof's own (cygprof gprof). */
#include "config.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report-print.h"
#include "textesc.h"

int print_matches(const struct print_opts *o, const char *name)
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

/* The calls column: all entries for report; gprof's, which leaves out the
 * self-recursive ones (shown as "+N" in its call graph). */
static uint64_t flat_calls(const struct profile_fn *f, int gprof)
{
	return gprof ? f->calls - f->rec_calls : f->calls;
}

/* Short explanations after each table (gprof without -b); our own words. */
static const char flat_blurb[] =
	"\n"
	" %         share of the total self time spent in this function.\n"
	"time\n"
	"\n"
	"cumulative running sum of the self seconds of this line and those above.\n"
	" seconds\n"
	"\n"
	" self      seconds spent in this function itself (exact, instrumented);\n"
	"seconds    the major sort of this table.\n"
	"\n"
	"calls      times the function was entered, self-recursive calls left out.\n"
	"\n"
	" self      average self time per call, in the unit of the header.\n"
	"per call\n"
	"\n"
	" total     average time per call in this function and its callees.\n"
	"per call\n"
	"\n"
	"name       the function; the minor sort of this table.\n"
	"\n"
	"Times come from cygprof's exact -finstrument-functions recording, shown\n"
	"as samples of one nanosecond each.\n";

static const char graph_blurb[] =
	"\n"
	" Each entry of the table shows one function on its primary line, the\n"
	" line starting with its index [N].  Above it are its callers (parents),\n"
	" below it the functions it calls (children).\n"
	"\n"
	" primary line:\n"
	"     index     the function's number in this table.\n"
	"     % time    share of the total time spent in the function and its\n"
	"               callees.\n"
	"     self      seconds spent in the function itself.\n"
	"     children  seconds spent in its callees on its behalf.\n"
	"     called    calls from other functions, then \"+\" and the\n"
	"               self-recursive calls.\n"
	"\n"
	" caller and callee lines:\n"
	"     self      the callee's self seconds under that caller.\n"
	"     children  the callee's children seconds under that caller.\n"
	"     called    calls along this arc / all non-recursive calls of the\n"
	"               callee.\n"
	"\n"
	" <spontaneous> marks calls with no recorded caller (a thread's first\n"
	" function, or calls from code that is not instrumented).  Times are\n"
	" exact: nothing is estimated from call counts.\n";

void print_flat(const struct profile *p, const struct print_opts *o)
{
	static const struct {
		double div;
		const char *unit;
	} units[] = {
		{1e9, "s/call"}, {1e6, "ms/call"}, {1e3, "us/call"}, {1, "ns/call"},
	};
	double total = (double)p->total_self_ns, cum = 0, max_pc = 0, div = 1e9;
	const char *unit = "s/call";
	int gprof = o->style == STYLE_GPROF;
	uint32_t *v;
	size_t n, i, u;

	v = sorted_fns(p, o->sort, cmp_flat, &n);
	for (i = 0; i < n; i++) {
		const struct profile_fn *f = &p->fns[v[i]];

		uint64_t calls = flat_calls(f, gprof);

		if (calls && print_matches(o, f->name) && (double)f->total_ns / calls > max_pc)
			max_pc = (double)f->total_ns / calls;
	}
	if (max_pc > 0) {
		for (u = 0; u < sizeof(units) / sizeof(units[0]); u++)
			if (max_pc >= units[u].div || u == sizeof(units) / sizeof(units[0]) - 1)
				break;
		div = units[u].div;
		unit = units[u].unit;
	}

	printf("Flat profile:\n\n");
	if (gprof) {
		/* exact nanoseconds, shown as gprof's samples of 1 ns */
		printf("Each sample counts as 1e-09 seconds.\n");
		if (!p->total_self_ns)
			printf(" no time accumulated\n\n");
	} else if (o->times_note) {
		printf("Times are %s; total self time %.6f seconds.\n", o->times_note, total / 1e9);
	} else if (o->sampled_times) {
		printf("Times are sampled (perf samples on CPU plus off-CPU intervals; calls are"
		       " exact); total sampled self time %.6f seconds.\n", total / 1e9);
	} else if (o->no_times) {
		printf("%s\n", PRINT_NO_TIMES_NOTE);
	} else {
		printf("Times are exact (instrumented); total self time %.6f seconds.\n",
		       total / 1e9);
	}
	printf("%5.5s %10.10s %8.8s %8.8s %8.8s %8.8s  %-8.8s\n", "%  ", "cumulative", "self  ",
	       "", "self  ", "total ", "");
	printf("%5.5s %9.9s  %8.8s %8.8s %8.8s %8.8s  %-8.8s\n", "time", "seconds", "seconds",
	       "calls", unit, unit, "name");
	if (!p->total_self_ns && !gprof && !o->no_times)
		printf(" no time accumulated\n");
	for (i = 0; i < n; i++) {
		const struct profile_fn *f = &p->fns[v[i]];
		uint64_t calls = flat_calls(f, gprof);

		if (!print_matches(o, f->name))
			continue;
		cum += (double)f->self_ns;
		printf("%s%6.2f%s %9.2f %8.2f",
		       cli_hot(total > 0 ? (double)f->self_ns / total : 0),
		       total > 0 ? 100.0 * (double)f->self_ns / total : 0.0, cli_reset(), cum / 1e9,
		       (double)f->self_ns / 1e9);
		if (calls)
			printf(" %8" PRIu64 " %8.2f %8.2f  ", calls,
			       (double)f->self_ns / (double)calls / div,
			       (double)f->total_ns / (double)calls / div);
		else
			printf(" %8.8s %8.8s %8.8s  ", "", "", "");
		printf("%s\n", text_esc(f->name));
	}
	if (gprof) {
		if (!o->brief)
			fputs(flat_blurb, stdout);
		printf("\f\n");
	}
	free(v);
}

/* A time with its own unit, 10 characters while under 1000 s: "  40.000 ns",
 * "   1.234 us", "   5.678 ms", "   1.234  s" (fmt_dur()'s, with ns). */
static const char *fmt_time(char *buf, size_t len, double ns)
{
	if (ns < 999.9995)
		snprintf(buf, len, "%7.3f ns", ns);
	else if (ns < 999999.5)
		snprintf(buf, len, "%7.3f us", ns / 1e3);
	else if (ns < 999999999.5)
		snprintf(buf, len, "%7.3f ms", ns / 1e6);
	else
		snprintf(buf, len, "%7.3f  s", ns / 1e9);
	return buf;
}

int print_flat_kept(const struct profile *p, const struct print_opts *o,
		    const struct profile_fn *f)
{
	double v, total = 0;

	if (o->min_percent <= 0)
		return 1;
	switch (o->sort) {
	case SORT_TOTAL:
		v = (double)f->total_ns;
		total = (double)p->total_self_ns;
		break;
	case SORT_CALLS:
		v = (double)f->calls;
		for (size_t i = 0; i < p->nfns; i++)
			total += (double)p->fns[i].calls;
		break;
	default:
		v = (double)f->self_ns;
		total = (double)p->total_self_ns;
		break;
	}
	return total > 0 && v * 100.0 >= o->min_percent * total;
}

void print_flat_report(const struct profile *p, const struct print_opts *o)
{
	double total = (double)p->total_self_ns, cum = 0;
	size_t n, i, shown = 0, more = 0, under = 0;
	char b1[32], b2[32], b3[32], b4[32];
	uint32_t *v;

	v = sorted_fns(p, o->sort, cmp_flat, &n);
	printf("Flat profile:\n\n");
	if (o->times_note)
		printf("Times are %s; total self time %.6f seconds.\n", o->times_note, total / 1e9);
	else if (o->sampled_times)
		printf("Times are sampled (perf samples on CPU plus off-CPU intervals; calls are"
		       " exact); total sampled self time %.6f seconds.\n", total / 1e9);
	else if (o->no_times)
		printf("%s\n", PRINT_NO_TIMES_NOTE);
	else
		printf("Times are exact (instrumented); total self time %.6f seconds.\n",
		       total / 1e9);
	printf("%7s %7s %11s %11s %11s %11s %11s  %s\n", "% self", "cumul%", "self time",
	       "total time", "calls", "self/call", "total/call", "name");
	if (!p->total_self_ns && !o->no_times)
		printf(" no time accumulated\n");
	for (i = 0; i < n; i++) {
		const struct profile_fn *f = &p->fns[v[i]];
		double share = total > 0 ? 100.0 * (double)f->self_ns / total : 0.0;

		if (!print_matches(o, f->name))
			continue;
		if (!print_flat_kept(p, o, f)) {
			under++;
			continue;
		}
		if (o->limit && shown == o->limit) {
			more++;
			continue;
		}
		shown++;
		cum += (double)f->self_ns;
		printf("%s%7.2f%s %7.2f", cli_hot(total > 0 ? (double)f->self_ns / total : 0), share,
		       cli_reset(), total > 0 ? 100.0 * cum / total : 0.0);
		if (o->no_times)
			printf(" %11s %11s", "-", "-");
		else
			printf(" %11s %11s", fmt_time(b1, sizeof(b1), (double)f->self_ns),
			       fmt_time(b2, sizeof(b2), (double)f->total_ns));
		if (f->calls && !o->no_times)
			printf(" %11" PRIu64 " %11s %11s  ", f->calls,
			       fmt_time(b3, sizeof(b3), (double)f->self_ns / (double)f->calls),
			       fmt_time(b4, sizeof(b4), (double)f->total_ns / (double)f->calls));
		else if (f->calls)
			printf(" %11" PRIu64 " %11s %11s  ", f->calls, "-", "-");
		else
			printf(" %11s %11s %11s  ", "", "", "");
		printf("%s\n", text_esc(f->name));
	}
	if (more)
		printf("(%zu more function%s: -n 0 shows all)\n", more, more == 1 ? "" : "s");
	if (under)
		printf("(%zu function%s under %g%% of the %s hidden: --min-percent 0 shows all)\n",
		       under, under == 1 ? "" : "s", o->min_percent,
		       o->sort == SORT_TOTAL ? "total self time by their total time"
		       : o->sort == SORT_CALLS ? "calls" : "self time");
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
		printf("%s [%u]\n", text_esc(p->fns[f].name), gidx[f]);
	else
		printf("%s\n", text_esc(p->fns[f].name));
}

static int cmp_name(const void *pa, const void *pb)
{
	return strcmp(sort_prof->fns[*(const uint32_t *)pa].name,
		      sort_prof->fns[*(const uint32_t *)pb].name);
}

/* gprof's "Index by function name": names sorted, down three columns of
 * 28 characters, each "[N]" right-aligned in 6 then the name. */
static void print_index(const struct profile *p, const struct print_opts *o,
			const uint32_t *gidx)
{
	uint32_t *v = malloc((p->nfns ? p->nfns : 1) * sizeof(*v));
	size_t n = 0, rows, r, c, i;

	if (!v)
		cli_die(1, "out of memory");
	for (i = 0; i < p->nfns; i++)
		if (gidx[i] && print_matches(o, p->fns[i].name))
			v[n++] = (uint32_t)i;
	sort_prof = p;
	qsort(v, n, sizeof(*v), cmp_name);
	printf("Index by function name\n\n");
	rows = (n + 2) / 3;
	for (r = 0; r < rows; r++) {
		int col = 0;

		for (c = 0; c < 3; c++) {
			size_t k = c * rows + r;
			char ibuf[16];
			int w;

			if (k >= n)
				break;
			while (col < (int)c * 28) {
				putchar(' ');
				col++;
			}
			if (c && col > (int)c * 28) {
				putchar(' ');
				col++;
			}
			snprintf(ibuf, sizeof(ibuf), "[%u]", gidx[v[k]]);
			w = printf("%6s %s", ibuf, text_esc(p->fns[v[k]].name));
			col += w > 0 ? w : 0;
		}
		putchar('\n');
	}
	free(v);
}

void print_graph(const struct profile *p, const struct print_opts *o)
{
	double total = (double)p->total_self_ns;
	struct arc_index x;
	int gprof = o->style == STYLE_GPROF;
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

	if (!gprof) {
		printf("\t\t     Call graph\n\n\n");
		if (o->times_note)
			printf("granularity: %s; %.6f seconds\n\n", o->times_note, total / 1e9);
		else if (o->sampled_times)
			printf("granularity: sampled times (perf samples on CPU plus off-CPU"
			       " intervals; calls are exact); %.6f seconds\n\n", total / 1e9);
		else if (o->no_times)
			printf("%s\n\n", PRINT_NO_TIMES_NOTE);
		else
			printf("granularity: exact instrumented times; %.6f seconds\n\n",
			       total / 1e9);
	} else {
		printf(o->brief ? "\t\t\tCall graph\n\n\n"
				: "\t\t     Call graph (explanation follows)\n\n\n");
		printf("granularity: each sample hit covers 1 byte(s)");
		if (total > 0)
			printf(" for %.2f%% of %.2f seconds\n\n", 100.0 / total, total / 1e9);
		else
			printf(" no time propagated\n\n");
	}
	printf("index %% time    self  children    called     name\n");
	for (i = 0; i < n; i++) {
		uint32_t fi = v[i];
		const struct profile_fn *f = &p->fns[fi];
		uint64_t ncalls = f->calls - f->rec_calls;
		uint64_t children = f->total_ns > f->self_ns ? f->total_ns - f->self_ns : 0;
		size_t k, m;
		char ibuf[16];

		if (!print_matches(o, f->name))
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
	if (gprof) {
		if (!o->brief)
			fputs(graph_blurb, stdout);
		printf("\f\n");
		print_index(p, o, gidx);
	} else {
		printf("\n");
	}
	arc_index_free(&x);
	free(tmp);
	free(gidx);
	free(v);
}
uint32_t *print_sorted_fns(const struct profile *p, enum sort_key key, size_t *n)
{
	return sorted_fns(p, key, cmp_flat, n);
}
