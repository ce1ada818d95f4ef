/* SPDX-License-Identifier: MIT */
/* report-latency.c - the distribution of each function's and each call
 * path's call durations: report --latency (text) and the "latency" object
 * of report --format=json.
 *
 * The figures are those uftrace's `report --avg-total` gives (min, average,
 * max of the inclusive time per call) and the percentiles a server
 * engineer asks for (p50, p90, p99, p99.9), from the histograms the hooks
 * keep in every call path (analysis/latency.h): the whole run, no timeline
 * needed.  Ranked by p99: the tail first. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "format.h"
#include "json.h"
#include "latency.h"
#include "pathtree.h"
#include "report-latency.h"
#include "report-print.h"
#include "textesc.h"

static int match(const char *pattern, const char *name)
{
	struct print_opts po = {0};

	po.pattern = pattern;
	return print_matches(&po, name);
}

/* The distributions of a profile: per function and per merged call path. */
struct lat_all {
	int present;
	struct lat_dist *fn;       /* p->nfns */
	struct pathtree pt;
	struct lat_dist *path;     /* pt.len */
	struct lat_stats *fst, *pst;
};

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		cli_die(1, "out of memory");
	return p;
}

static void lat_all_load(struct view *v, const struct profile *p, const char *file,
			 struct lat_all *a)
{
	size_t i, k;

	memset(a, 0, sizeof *a);
	a->fn = xcalloc(p->nfns, sizeof *a->fn);
	if (pathtree_init(&a->pt))
		cli_die(1, "out of memory");
	size_t had = 0; /* paths with a distribution so far */
	for (i = 0; i < p->nthreads; i++) {
		const struct profile_thread *th = &p->threads[i];
		const struct view_latency *l;
		uint32_t *at = xcalloc(th->n, sizeof *at);

		cli_check(view_latency(v, th->info.idx, &l), file);
		if (pathtree_add_thread(&a->pt, th, NULL, at))
			cli_die(1, "out of memory");
		size_t len = a->pt.len;
		if (len > had) {
			a->path = realloc(a->path, len * sizeof *a->path);
			if (!a->path)
				cli_die(1, "out of memory");
			memset(a->path + had, 0, (len - had) * sizeof *a->path);
			had = len;
		}
		if (!l->present || l->n != th->n) {
			free(at);
			continue;
		}
		a->present = 1;
		for (k = 1; k < th->n; k++) {
			const struct lat_dist *d = &l->node[k];
			const struct profile_tnode *nd = &th->nodes[k];
			if (!d->count)
				continue;
			if (lat_dist_merge(&a->fn[nd->fn], d) || lat_dist_merge(&a->path[at[k]], d))
				cli_die(1, "out of memory");
		}
		free(at);
	}
	if (!a->present)
		return;
	a->fst = xcalloc(p->nfns, sizeof *a->fst);
	for (i = 0; i < p->nfns; i++)
		lat_stats(&a->fn[i], &a->fst[i]);
	a->pst = xcalloc(a->pt.len, sizeof *a->pst);
	for (i = 0; i < a->pt.len; i++)
		lat_stats(&a->path[i], &a->pst[i]);
}

static void lat_all_free(struct lat_all *a, const struct profile *p)
{
	size_t i;

	for (i = 0; a->fn && i < p->nfns; i++)
		lat_dist_release(&a->fn[i]);
	for (i = 0; a->path && i < a->pt.len; i++)
		lat_dist_release(&a->path[i]);
	free(a->fn);
	free(a->path);
	free(a->fst);
	free(a->pst);
	pathtree_release(&a->pt);
}

static const struct lat_stats *sort_st;

static int by_p99(const void *x, const void *y)
{
	const struct lat_stats *a = &sort_st[*(const uint32_t *)x], *b = &sort_st[*(const uint32_t *)y];

	if (a->p99 != b->p99)
		return a->p99 > b->p99 ? -1 : 1;
	if (a->max != b->max)
		return a->max > b->max ? -1 : 1;
	return (*(const uint32_t *)x > *(const uint32_t *)y) - (*(const uint32_t *)x < *(const uint32_t *)y);
}

/* The call path of merged node k as "main > a > b" into a growing buffer. */
static const char *path_name(const struct profile *p, const struct pathtree *pt, uint32_t k,
			     char **buf, size_t *cap)
{
	uint32_t chain[4096];
	size_t n = 0, len = 0;

	while (k && k != PROFILE_NONE && n < 4096) {
		chain[n++] = k;
		k = pt->n[k].parent;
	}
	for (size_t i = n; i-- > 0;) {
		const char *name = p->fns[pt->n[chain[i]].fn].name;
		size_t need = len + strlen(name) + 4;
		if (need > *cap) {
			*cap = need * 2;
			*buf = realloc(*buf, *cap);
			if (!*buf)
				cli_die(1, "out of memory");
		}
		len += (size_t)sprintf(*buf + len, "%s%s", len ? " > " : "", name);
	}
	if (!len) {
		if (*cap < 1) {
			*buf = realloc(*buf, 16);
			*cap = 16;
		}
		(*buf)[0] = 0;
	}
	return *buf;
}

static void row(const struct lat_stats *s, const char *name)
{
	char b[7][32];

	printf("%10" PRIu64 " %s %s %s %s %s %s %s  %s\n", s->count,
	       fmt_dur(b[0], 32, (uint64_t)(s->min + 0.5)), fmt_dur(b[1], 32, (uint64_t)(s->mean + 0.5)),
	       fmt_dur(b[2], 32, (uint64_t)(s->p50 + 0.5)), fmt_dur(b[3], 32, (uint64_t)(s->p90 + 0.5)),
	       fmt_dur(b[4], 32, (uint64_t)(s->p99 + 0.5)),
	       fmt_dur(b[5], 32, (uint64_t)(s->p999 + 0.5)),
	       fmt_dur(b[6], 32, (uint64_t)(s->max + 0.5)), text_esc(name));
}

/* ---- the slowest calls, from the timeline ------------------------------------ */

struct slow {
	uint64_t dur, start;
	uint32_t tid;
};

struct slow_walk {
	const struct profile_thread *th;
	const unsigned char *want; /* per function: its calls are kept */
	struct slow *top;          /* nfns * k, each function's slowest first */
	uint32_t *ntop;
	int k;
	struct { uint32_t node; uint64_t ts; } *stk;
	size_t depth, cap;
};

static void slow_add(struct slow_walk *w, uint32_t fn, uint64_t start, uint64_t dur)
{
	struct slow *t = w->top + (size_t)fn * (size_t)w->k;
	uint32_t n = w->ntop[fn], i;

	if (n == (uint32_t)w->k && dur <= t[n - 1].dur)
		return;
	if (n < (uint32_t)w->k)
		n = ++w->ntop[fn];
	for (i = n - 1; i > 0 && t[i - 1].dur < dur; i--)
		t[i] = t[i - 1];
	t[i] = (struct slow){dur, start, w->th->info.tid};
}

static int slow_events(const struct cygprof_event *ev, size_t n, void *data)
{
	struct slow_walk *w = data;

	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == CYGPROF_EV_ENTER) {
			if (w->depth == w->cap) {
				w->cap = w->cap ? w->cap * 2 : 256;
				w->stk = realloc(w->stk, w->cap * sizeof *w->stk);
				if (!w->stk)
					return -1;
			}
			w->stk[w->depth].node = ev[i].node;
			w->stk[w->depth++].ts = ev[i].ts_ns;
			continue;
		}
		if (!w->depth)
			continue;
		w->depth--;
		uint32_t node = w->stk[w->depth].node;
		if (node >= w->th->n || !node)
			continue;
		uint32_t fn = w->th->nodes[node].fn;
		if (w->want[fn])
			slow_add(w, fn, w->stk[w->depth].ts, ev[i].ts_ns - w->stk[w->depth].ts);
	}
	return 0;
}

/* How much of a call's time (from the timeline) its thread spent waiting
 * for the collector: the hooks' figures leave it out, the timeline not. */
static uint64_t waited(struct view *v, const char *file, const struct slow *s)
{
	const struct cygprof_offcpu *w;
	size_t n, i;
	uint64_t in = 0, end = s->start + s->dur;

	cli_check(view_waits(v, &w, &n), file);
	for (i = 0; i < n && w[i].start_ns < end; i++) {
		const struct cygprof_thread *t = view_thread(v, w[i].thread_idx);
		if (!t || t->tid != s->tid || w[i].end_ns <= s->start)
			continue;
		in += (w[i].end_ns < end ? w[i].end_ns : end) -
		      (w[i].start_ns > s->start ? w[i].start_ns : s->start);
	}
	return in;
}

static void print_slowest(struct view *v, const struct profile *p, const struct latency_opts *o,
			  const uint32_t *fns, size_t nshown)
{
	struct slow_walk w = {0};
	size_t i;
	char b1[32], b2[32];

	if (!view_mode_has(v, "timeline")) {
		printf("The slowest calls need a timeline: record --timeline.\n\n");
		return;
	}
	w.k = o->slowest;
	w.want = xcalloc(p->nfns, 1);
	w.top = xcalloc((size_t)p->nfns * (size_t)w.k, sizeof *w.top);
	w.ntop = xcalloc(p->nfns, sizeof *w.ntop);
	for (i = 0; i < nshown; i++)
		((unsigned char *)w.want)[fns[i]] = 1;
	for (i = 0; i < p->nthreads; i++) {
		w.th = &p->threads[i];
		w.depth = 0;
		if (view_events(v, w.th->info.idx, slow_events, &w) == -1)
			cli_die(1, "out of memory");
	}
	printf("The slowest calls (as measured, from the timeline; replay --time-range START,END "
	       "shows one):\n");
	for (i = 0; i < nshown; i++) {
		uint32_t fn = fns[i];
		const struct slow *t = w.top + (size_t)fn * (size_t)w.k;
		if (!w.ntop[fn])
			continue;
		printf("  %s\n", text_esc(p->fns[fn].name));
		for (uint32_t j = 0; j < w.ntop[fn]; j++) {
			uint64_t in = waited(v, o->file, &t[j]);
			printf("    %s  at %.9f s  tid %u  (--time-range %.9f,%.9f)",
			       fmt_dur(b1, sizeof b1, t[j].dur), (double)t[j].start / 1e9, t[j].tid,
			       (double)t[j].start / 1e9, (double)(t[j].start + t[j].dur + 1) / 1e9);
			if (in)
				printf("  of which %s waiting for the collector",
				       fmt_dur(b2, sizeof b2, in));
			printf("\n");
		}
	}
	printf("\n");
	free((void *)w.want);
	free(w.top);
	free(w.ntop);
	free(w.stk);
}

void report_latency_text(struct view *v, const struct profile *p, const struct latency_opts *o)
{
	struct lat_all a;
	uint32_t *idx;
	size_t i, n = 0, limit = o->top ? (size_t)o->top : SIZE_MAX;
	char *buf = NULL;
	size_t cap = 0;

	lat_all_load(v, p, o->file, &a);
	if (!a.present) {
		printf("This capture has no latency data (recorded before cygprof kept latency "
		       "histograms, with --time=sampled, or read with --time-range).\n");
		lat_all_free(&a, p);
		return;
	}
	printf("Latency of the calls of each function (inclusive wall time per call, %s; waiting "
	       "for a CPU is in it, unlike the profile's times; percentiles from the hooks' "
	       "histograms, within 6.25%%):\n\n",
	       o->raw ? "as measured" : "the hooks' cost out");
	idx = xcalloc(p->nfns > a.pt.len ? p->nfns : a.pt.len, sizeof *idx);
	for (i = 0; i < p->nfns; i++)
		if (a.fst[i].count && match(o->pattern, p->fns[i].name))
			idx[n++] = (uint32_t)i;
	sort_st = a.fst;
	qsort(idx, n, sizeof *idx, by_p99);
	const char *hdr = "     calls        min       mean        p50        p90        p99      "
			  "p99.9        max  ";
	printf("%sfunction\n", hdr);
	for (i = 0; i < n && i < limit; i++) {
		const struct lat_stats *s = &a.fst[idx[i]];
		row(s, p->fns[idx[i]].name);
	}
	if (n > limit)
		printf("(%zu more functions: --top 0 shows all)\n", n - limit);
	size_t nfn_shown = n < limit ? n : limit;
	uint32_t *shown = xcalloc(nfn_shown, sizeof *shown);
	memcpy(shown, idx, nfn_shown * sizeof *shown);

	n = 0;
	for (i = 1; i < a.pt.len; i++)
		if (a.pst[i].count && match(o->pattern, p->fns[a.pt.n[i].fn].name))
			idx[n++] = (uint32_t)i;
	sort_st = a.pst;
	qsort(idx, n, sizeof *idx, by_p99);
	printf("\nLatency per call path (threads merged):\n\n");
	printf("%scall path\n", hdr);
	for (i = 0; i < n && i < limit; i++) {
		const struct lat_stats *s = &a.pst[idx[i]];
		row(s, path_name(p, &a.pt, idx[i], &buf, &cap));
	}
	if (n > limit)
		printf("(%zu more call paths: --top 0 shows all)\n", n - limit);
	printf("\n");
	if (o->slowest)
		print_slowest(v, p, o, shown, nfn_shown);
	free(shown);
	free(buf);
	free(idx);
	lat_all_free(&a, p);
}

static void json_stats(const struct lat_stats *s)
{
	printf("\"calls\": %" PRIu64 ", \"min_ns\": %.0f, \"mean_ns\": %.0f, \"p50_ns\": %.0f, "
	       "\"p90_ns\": %.0f, \"p99_ns\": %.0f, \"p999_ns\": %.0f, \"max_ns\": %.0f",
	       s->count, s->min, s->mean, s->p50, s->p90, s->p99, s->p999, s->max);
}

void report_latency_json(struct view *v, const struct profile *p, const struct latency_opts *o)
{
	struct lat_all a;
	size_t i, k = 0;

	lat_all_load(v, p, o->file, &a);
	if (!a.present) {
		printf("\"latency\": null,\n  ");
		lat_all_free(&a, p);
		return;
	}
	printf("\"latency\": {\"compensated\": %s, \"functions\": [",
	       view_compensated(v) ? "true" : "false");
	for (i = 0; i < p->nfns; i++) {
		const struct lat_stats *s = &a.fst[i];
		if (!s->count || !match(o->pattern, p->fns[i].name))
			continue;
		printf("%s\n    {\"name\": ", k++ ? "," : "");
		json_str(stdout, p->fns[i].name);
		printf(", ");
		json_stats(s);
		printf("}");
	}
	printf("%s],\n  \"paths\": [", k ? "\n  " : "");
	k = 0;
	for (i = 1; i < a.pt.len; i++) {
		const struct lat_stats *s = &a.pst[i];
		if (!s->count || !match(o->pattern, p->fns[a.pt.n[i].fn].name))
			continue;
		/* each path by its parent's id (0: a top-level path), as
		 * --tree's JSON: no string of the whole path, which a deep
		 * recursion would make quadratic */
		printf("%s\n    {\"id\": %zu, \"parent\": %u, \"name\": ", k++ ? "," : "", i,
		       a.pt.n[i].parent == PROFILE_NONE ? 0 : a.pt.n[i].parent);
		json_str(stdout, p->fns[a.pt.n[i].fn].name);
		printf(", \"depth\": %u, ", a.pt.n[i].depth);
		json_stats(s);
		printf("}");
	}
	printf("%s]},\n  ", k ? "\n  " : "");
	lat_all_free(&a, p);
}

struct lat_stats *report_latency_fns(struct view *v, const struct profile *p, const char *file)
{
	struct lat_all a;
	struct lat_stats *r = NULL;

	lat_all_load(v, p, file, &a);
	if (a.present) {
		r = a.fst;
		a.fst = NULL;
	}
	lat_all_free(&a, p);
	return r;
}

/* d's calls in bins of a quarter of a power of two of ns, a segment's calls
 * spread over the bins it overlaps: the bins (first) to (last) into
 * bins[], their number returned (at most 256). */
#define HTML_BINS 256
static int html_bins(const struct lat_dist *d, int *first, double *bins)
{
	int lo = (int)floor(4 * log2(d->min > 1 ? d->min : 1));
	int hi = (int)floor(4 * log2(d->max > 1 ? d->max : 1));

	if (hi - lo + 1 > HTML_BINS)
		lo = hi - HTML_BINS + 1;
	memset(bins, 0, HTML_BINS * sizeof *bins);
	for (size_t i = 0; i < d->nseg; i++) {
		const struct lat_seg *s = &d->seg[i];
		double a = s->lo > 1 ? s->lo : 1, b = s->hi > 1 ? s->hi : 1;
		int ba = (int)floor(4 * log2(a)), bb = (int)floor(4 * log2(b));
		if (ba < lo)
			ba = lo;
		if (bb > hi)
			bb = hi;
		if (bb < ba)
			bb = ba;
		if (b - a < 1e-9 || ba == bb) {
			bins[ba - lo] += (double)s->n;
			continue;
		}
		for (int k = ba; k <= bb; k++) {
			double x0 = pow(2, k / 4.0), x1 = pow(2, (k + 1) / 4.0);
			double o0 = x0 > a ? x0 : a, o1 = x1 < b ? x1 : b;
			if (o1 > o0)
				bins[k - lo] += (double)s->n * (o1 - o0) / (b - a);
		}
	}
	*first = lo;
	return hi - lo + 1;
}

void report_latency_html(FILE *f, struct view *v, const struct profile *p, const char *file)
{
	struct lat_all a;
	double bins[HTML_BINS];
	size_t i, k = 0;

	lat_all_load(v, p, file, &a);
	if (!a.present) {
		fputs("null", f);
		lat_all_free(&a, p);
		return;
	}
	fputs("{\"fns\":{", f);
	for (i = 0; i < p->nfns; i++) {
		const struct lat_stats *s = &a.fst[i];
		int first, nb;
		if (!s->count)
			continue;
		nb = html_bins(&a.fn[i], &first, bins);
		fprintf(f, "%s\"%zu\":[%" PRIu64 ",%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%d,[", k++ ? "," : "",
			i, s->count, s->min, s->mean, s->p50, s->p90, s->p99, s->p999, s->max, first);
		/* fractions (a segment spread over its bins): rounded each,
		 * the bins did not sum to the calls */
		for (int b = 0; b < nb; b++)
			fprintf(f, "%s%.2f", b ? "," : "", bins[b]);
		fputs("]]", f);
	}
	fputs("}}", f);
	lat_all_free(&a, p);
}

void report_waits_html(FILE *f, struct view *v, const char *file)
{
	const struct cygprof_thread *th;
	const struct cygprof_offcpu *w;
	size_t nth, n, i, j;
	const char *sep = "";

	cli_check(view_threads(v, &th, &nth), file);
	cli_check(view_waits(v, &w, &n), file);
	fputs("{\"thread\":[", f);
	for (i = 0; i < n; i++)
		for (j = 0; j < nth; j++)
			if (th[j].idx == w[i].thread_idx) {
				fprintf(f, "%s%zu", sep, j);
				sep = ",";
				break;
			}
	fputs("],\"start\":[", f);
	sep = "";
	for (i = 0; i < n; i++)
		for (j = 0; j < nth; j++)
			if (th[j].idx == w[i].thread_idx) {
				fprintf(f, "%s%" PRIu64, sep, w[i].start_ns);
				sep = ",";
				break;
			}
	fputs("],\"dur\":[", f);
	sep = "";
	for (i = 0; i < n; i++)
		for (j = 0; j < nth; j++)
			if (th[j].idx == w[i].thread_idx) {
				fprintf(f, "%s%" PRIu64, sep, w[i].end_ns - w[i].start_ns);
				sep = ",";
				break;
			}
	fputs("]}", f);
}

void report_latency_json_fn(const struct lat_stats *all, size_t fn)
{
	const struct lat_stats *st = all ? &all[fn] : NULL;

	printf(", \"latency\": ");
	if (!st || !st->count) {
		printf("null");
		return;
	}
	printf("{");
	json_stats(st);
	printf("}");
}
