/* SPDX-License-Identifier: MIT */
/* latency.c - distributions of call durations from the capture's latency
 * histograms (latency.h says what they are and how they are read). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "latency.h"
#include "view-private.h"

int lat_dist_merge(struct lat_dist *d, const struct lat_dist *src)
{
	if (!src->count)
		return 0;
	if (ARRAY_GROW(d->seg, d->cap, d->nseg + src->nseg))
		return -ENOMEM;
	memcpy(d->seg + d->nseg, src->seg, src->nseg * sizeof *src->seg);
	d->nseg += src->nseg;
	if (!d->count || src->min < d->min)
		d->min = src->min;
	if (!d->count || src->max > d->max)
		d->max = src->max;
	d->count += src->count;
	d->sum += src->sum;
	return 0;
}

void lat_dist_release(struct lat_dist *d)
{
	free(d->seg);
	memset(d, 0, sizeof *d);
}

/* One breakpoint of the distribution's CDF, a piecewise linear function
 * with steps (segments of no width). */
struct brk {
	double x;
	double slope; /* change of the slope (calls per ns) here */
	double step;  /* calls at exactly x */
};

static int brk_cmp(const void *a, const void *b)
{
	const struct brk *x = a, *y = b;

	return (x->x > y->x) - (x->x < y->x);
}

/* The quantiles qs[0..k) (increasing) of d into out. */
static void quantiles(const struct lat_dist *d, const double *qs, double *out, size_t k)
{
	struct brk *b;
	size_t nb = 0, i, j = 0;

	for (i = 0; i < k; i++)
		out[i] = 0;
	if (!d->count)
		return;
	b = malloc((2 * d->nseg + 1) * sizeof *b);
	if (!b) { /* out of memory: the bounds the node kept */
		for (i = 0; i < k; i++)
			out[i] = qs[i] < 0.5 ? d->min : d->max;
		return;
	}
	for (i = 0; i < d->nseg; i++) {
		const struct lat_seg *s = &d->seg[i];
		if (!s->n)
			continue;
		if (s->hi - s->lo < 1e-9) {
			b[nb++] = (struct brk){s->lo, 0, (double)s->n};
		} else {
			double r = (double)s->n / (s->hi - s->lo);
			b[nb++] = (struct brk){s->lo, r, 0};
			b[nb++] = (struct brk){s->hi, -r, 0};
		}
	}
	qsort(b, nb, sizeof *b, brk_cmp);
	/* walk the CDF: F at x, its slope after x */
	double F = 0, slope = 0, x = nb ? b[0].x : 0, total = (double)d->count;
	for (i = 0; i < nb && j < k; i++) {
		double Fb = F + slope * (b[i].x - x); /* F just before b[i].x */
		while (j < k && qs[j] * total <= Fb) {
			out[j] = slope > 0 ? x + (qs[j] * total - F) / slope : x;
			j++;
		}
		F = Fb + b[i].step;
		x = b[i].x;
		while (j < k && qs[j] * total <= F) {
			out[j] = x;
			j++;
		}
		slope += b[i].slope;
		if (slope < 1e-12)
			slope = 0;
	}
	for (; j < k; j++)
		out[j] = d->max;
	for (i = 0; i < k; i++) { /* never past what was measured */
		if (out[i] < d->min)
			out[i] = d->min;
		if (out[i] > d->max)
			out[i] = d->max;
	}
	free(b);
}

double lat_quantile(const struct lat_dist *d, double q)
{
	double r;

	quantiles(d, &q, &r, 1);
	return r;
}

void lat_stats(struct lat_dist *d, struct lat_stats *st)
{
	static const double qs[] = {0.5, 0.9, 0.99, 0.999};
	double r[4];

	quantiles(d, qs, r, 4);
	st->count = d->count;
	st->min = d->count ? d->min : 0;
	st->max = d->count ? d->max : 0;
	st->mean = d->count ? d->sum / (double)d->count : 0;
	/* a mean from the tree's totals can fall outside what the buckets
	 * say by their rounding: never past the exact bounds */
	if (st->mean < st->min)
		st->mean = st->min;
	if (st->mean > st->max)
		st->mean = st->max;
	st->p50 = r[0];
	st->p90 = r[1];
	st->p99 = r[2];
	st->p999 = r[3];
}

/* ---- per node, from the view's capture --------------------------------------- */

void view_latency_free(struct view_latency *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		lat_dist_release((struct lat_dist *)&l->node[i]);
	free((void *)l->node);
	free(l);
}

/* A stored node's rows (range first, then buckets) into d, shifted down by
 * cut ns per call and clipped to its range. */
static int add_rows(struct lat_dist *d, const struct cygprof_lat_row *r, size_t n, double cut,
		    double mean)
{
	struct lat_dist one = {0};
	double mn = (double)r[0].lo_ns - cut, mx = (double)r[0].hi_ns - cut;
	int err = 0;

	if (mn < 0)
		mn = 0;
	if (mx < 0)
		mx = 0;
	one.min = mn;
	one.max = mx;
	one.count = r[0].count;
	one.sum = mean > cut ? (mean - cut) * (double)one.count : 0;
	one.seg = malloc((n > 1 ? n - 1 : 1) * sizeof *one.seg);
	if (!one.seg)
		return -ENOMEM;
	for (size_t i = 1; i < n; i++) {
		double lo = (double)r[i].lo_ns - cut, hi = (double)r[i].hi_ns - cut;
		lo = lo < mn ? mn : lo > mx ? mx : lo;
		hi = hi < mn ? mn : hi > mx ? mx : hi;
		one.seg[one.nseg++] = (struct lat_seg){lo, hi, r[i].count};
	}
	err = lat_dist_merge(d, &one);
	free(one.seg);
	return err;
}

int view_latency(struct view *v, uint32_t thread, const struct view_latency **out)
{
	const struct view_tree *t;
	struct view_tree_slot *s;
	struct cygprof_latency h;
	struct cygprof_lat_row *rows = NULL;
	size_t nrows = 0, i, j;
	int err;

	*out = NULL;
	if ((err = view_tree(v, thread, &t)))
		return err;
	s = view_slot(v, thread);
	if (!s)
		return -ENOMEM;
	if (s->lat) {
		*out = s->lat;
		return 0;
	}
	struct view_latency *l = calloc(1, sizeof *l);
	if (!l)
		return -ENOMEM;
	err = cygprof_capture_get_latency(v->cap, thread, &h, &rows, &nrows);
	if (err == CYGPROF_E_NOTFOUND || (!err && v->filtering && v->filter.has_range)) {
		free(rows);
		s->lat = l;
		*out = l;
		return 0;
	}
	if (err) {
		free(l);
		return err;
	}
	struct lat_dist *nd = calloc(t->n ? t->n : 1, sizeof *nd);
	/* the stored tree, as measured: each node's mean call */
	struct cygprof_node *raw = NULL;
	size_t nraw = 0;
	err = cygprof_capture_get_tree(v->cap, thread, &raw, &nraw);
	if (!nd || err) {
		free(nd);
		free(raw);
		free(rows);
		free(l);
		return err ? err : -ENOMEM;
	}
	l->node = nd;
	l->n = t->n;
	l->present = 1;
	for (i = 0; i < nrows && !err; i = j) {
		uint32_t k = rows[i].node;
		for (j = i + 1; j < nrows && rows[j].node == k; j++)
			;
		double cut = s->cut && k < s->ncut ? s->cut[k] : 0;
		double mean = k < nraw && raw[k].calls
				      ? (double)raw[k].total_ns / (double)raw[k].calls : 0;
		/* the stored node's calls are the calls of the node the view
		 * keeps for it; none when a filter leaves it out */
		if (s->map)
			k = k < s->nmap ? s->map[k] : VIEW_NONE;
		if (k >= t->n)
			continue;
		err = add_rows(&nd[k], rows + i, j - i, cut, mean);
	}
	free(rows);
	free(raw);
	if (err) {
		view_latency_free(l);
		return err;
	}
	s->lat = l;
	*out = l;
	return 0;
}

int view_latency_present(struct view *v, int *present)
{
	const struct cygprof_thread *th;
	size_t n, i;
	int err;

	*present = 0;
	if ((err = view_threads(v, &th, &n)))
		return err;
	for (i = 0; i < n && !*present; i++) {
		const struct view_latency *l;
		if ((err = view_latency(v, th[i].idx, &l)))
			return err;
		*present = l->present;
	}
	return 0;
}
