/* SPDX-License-Identifier: MIT */
/* rows.c - cygprof top's rows: a collector snapshot made into rows per
 * (function, thread) and merged over the threads, with the last interval
 * against the previous snapshot, in the view's order; heap stacks that
 * read the same merged (see top.h). */
#define _GNU_SOURCE
#include "top.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const top_key_names[TOP_NKEYS] = {"self", "total", "calls", "name"};

int top_key_find(const char *name)
{
	for (int i = 0; i < TOP_NKEYS; i++)
		if (!strcmp(name, top_key_names[i]))
			return i;
	return -1;
}

double top_per_s(uint64_t v, uint64_t ns)
{
	return ns ? v * 1e9 / ns : 0;
}

static void free_rows(struct top_row *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

static void free_frames(struct top_stack *h)
{
	for (size_t j = 0; j < h->nframes; j++)
		free(h->frames[j]);
	free(h->frames);
}

void top_snap_free(struct top_snap *s)
{
	free_rows(s->merged, s->nmerged);
	free_rows(s->per, s->nper);
	free(s->thr);
	for (size_t i = 0; i < s->nhs; i++)
		free_frames(&s->hs[i]);
	free(s->hs);
	memset(s, 0, sizeof *s);
}

/* ---- orders ---------------------------------------------------------------------- */

/* By name, then thread: the rows' key. */
static int by_key(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static uint64_t fig(const struct top_row *r, enum top_key k, int interval)
{
	switch (k) {
	case TOP_SELF:
		return interval ? r->iself_ns : r->self_ns;
	case TOP_TOTAL:
		return interval ? r->itotal_ns : r->total_ns;
	case TOP_CALLS:
		return interval ? r->icalls : r->calls;
	default:
		return 0;
	}
}

static int by_sort(const void *a, const void *b, void *arg)
{
	const struct top_row *x = a, *y = b;
	const struct top_view *v = arg;

	for (size_t i = 0; i < v->nsort; i++) {
		enum top_key k = v->sort[i];
		if (k == TOP_NAME) {
			int c = strcmp(x->name, y->name);
			if (c)
				return c;
			continue;
		}
		uint64_t p = fig(x, k, v->interval), q = fig(y, k, v->interval);
		if (p != q)
			return p < q ? 1 : -1;
	}
	return by_key(a, b);
}

void top_sort(const struct top_view *v, struct top_snap *s)
{
	qsort_r(s->per, s->nper, sizeof *s->per, by_sort, (void *)v);
	qsort_r(s->merged, s->nmerged, sizeof *s->merged, by_sort, (void *)v);
}

/* The thread blocks: live first, then by sum, then tid. */
struct block_order {
	const struct top_snap *s;
	const uint64_t *sum;
};

static int by_block(const void *a, const void *b, void *arg)
{
	const struct block_order *o = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	const struct top_thread *tx = &o->s->thr[x], *ty = &o->s->thr[y];

	if (tx->ended != ty->ended)
		return tx->ended - ty->ended;
	if (o->sum[x] != o->sum[y])
		return o->sum[x] < o->sum[y] ? 1 : -1;
	return tx->tid < ty->tid ? -1 : tx->tid > ty->tid;
}

void top_thread_order(const struct top_view *v, const struct top_snap *s, size_t *order)
{
	order[0] = 0;
	if (!v->threads)
		return;
	uint64_t *sum = calloc(s->nthr + 1, sizeof *sum);
	for (size_t b = 0; b < s->nthr; b++) {
		order[b] = b;
		for (size_t i = 0; sum && i < s->nper; i++)
			if (s->per[i].tid == s->thr[b].tid && v->sort[0] != TOP_NAME)
				sum[b] += fig(&s->per[i], v->sort[0], v->interval);
	}
	if (sum) {
		struct block_order o = {s, sum};
		qsort_r(order, s->nthr, sizeof *order, by_block, &o);
	}
	free(sum);
}

/* ---- building a snapshot ---------------------------------------------------------- */

/* rows v (sorted by key) with the figures of the previous snapshot's rows p
 * (sorted by key) taken off: the last interval. */
static void take_interval(struct top_row *v, size_t n, const struct top_row *p, size_t np)
{
	for (size_t i = 0; i < n; i++) {
		const struct top_row *q = np ? bsearch(&v[i], p, np, sizeof *v, by_key) : NULL;
#define SUB(a, b) ((a) - (q && q->b <= (a) ? q->b : 0))
		v[i].icalls = SUB(v[i].calls, calls);
		v[i].iself_ns = SUB(v[i].self_ns, self_ns);
		v[i].itotal_ns = SUB(v[i].total_ns, total_ns);
#undef SUB
	}
}

/* Rows sorted by key, merged when two have the same (name, tid). */
static size_t merge_rows(struct top_row *v, size_t n)
{
	size_t k = 0;

	qsort(v, n, sizeof *v, by_key);
	for (size_t i = 0; i < n; i++) {
		if (k && !by_key(&v[k - 1], &v[i])) {
			v[k - 1].calls += v[i].calls;
			v[k - 1].self_ns += v[i].self_ns;
			v[k - 1].total_ns += v[i].total_ns;
			free(v[i].name);
			continue;
		}
		v[k++] = v[i];
	}
	return k;
}

static int same_frames(const struct top_stack *a, const struct top_stack *b)
{
	if (a->nframes != b->nframes)
		return 0;
	for (size_t i = 0; i < a->nframes; i++)
		if (strcmp(a->frames[i], b->frames[i]))
			return 0;
	return 1;
}

static int by_live(const void *a, const void *b)
{
	const struct top_stack *x = a, *y = b;

	if (x->live_bytes != y->live_bytes)
		return x->live_bytes < y->live_bytes ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Stacks that read the same (the same named frames) are shown as one. */
static void merge_stacks(struct top_snap *n)
{
	size_t k = 0;

	for (size_t i = 0; i < n->nhs; i++) {
		struct top_stack *h = &n->hs[i];
		size_t j;
		for (j = 0; j < k && !same_frames(&n->hs[j], h); j++)
			;
		if (j == k) {
			n->hs[k++] = *h;
			continue;
		}
		n->hs[j].live_bytes += h->live_bytes;
		n->hs[j].live_blocks += h->live_blocks;
		n->hs[j].allocations += h->allocations;
		n->hs[j].bytes += h->bytes;
		if (h->id < n->hs[j].id)
			n->hs[j].id = h->id;
		free_frames(h);
	}
	n->nhs = k;
	if (k)
		qsort(n->hs, k, sizeof *n->hs, by_live);
}

/* The rows of s: one per function and thread, and a copy with tid 0. */
static int take_rows(const struct collector_snapshot *s, struct top_snap *n)
{
	n->per = calloc(s->nfns + 1, sizeof *n->per);
	n->merged = calloc(s->nfns + 1, sizeof *n->merged);
	if (!n->per || !n->merged)
		return -ENOMEM;
	for (size_t i = 0; i < s->nfns; i++) {
		const struct collector_fn *f = &s->fns[i];
		n->per[i] = (struct top_row){.name = strdup(f->name ? f->name : "?"),
					     .tid = f->tid,
					     .calls = f->calls,
					     .self_ns = f->self_ns,
					     .total_ns = f->total_ns};
		n->merged[i] = n->per[i];
		n->merged[i].tid = 0;
		n->merged[i].name = n->per[i].name ? strdup(n->per[i].name) : NULL;
		n->nper = n->nmerged = i + 1;
		if (!n->per[i].name || !n->merged[i].name)
			return -ENOMEM;
	}
	n->nper = merge_rows(n->per, n->nper);
	n->nmerged = merge_rows(n->merged, n->nmerged);
	return 0;
}

/* The heap's stacks of s, copied. */
static int take_stacks(const struct collector_heap *hp, struct top_snap *n)
{
	n->hs = calloc(hp->nstacks + 1, sizeof *n->hs);
	if (!n->hs)
		return -ENOMEM;
	for (size_t k = 0; k < hp->nstacks; k++) {
		const struct collector_stack *x = &hp->stacks[k];
		struct top_stack *h = &n->hs[k];
		*h = (struct top_stack){x->id, x->live_bytes, x->live_blocks, x->allocations,
					x->bytes, calloc(x->nframes + 1, sizeof(char *)), 0};
		n->nhs = k + 1;
		if (!h->frames)
			return -ENOMEM;
		for (size_t j = 0; j < x->nframes; j++) {
			h->frames[j] = strdup(x->frames[j]);
			if (!h->frames[j])
				return -ENOMEM;
			h->nframes = j + 1;
		}
	}
	merge_stacks(n);
	return 0;
}

int top_snap_build(struct top_snap *prev, const struct collector_snapshot *s,
		   const struct top_view *v, struct top_snap *out)
{
	struct top_snap n;
	int err;

	memset(&n, 0, sizeof n);
	n.final = s->final;
	n.elapsed_ns = s->elapsed_ns;
	n.interval_ns = s->elapsed_ns - (prev && prev->elapsed_ns <= s->elapsed_ns
						 ? prev->elapsed_ns
						 : 0);
	n.thr = calloc(s->threads + 1, sizeof *n.thr);
	err = n.thr ? take_rows(s, &n) : -ENOMEM;
	if (err)
		goto fail;
	for (size_t i = 0; i < s->threads; i++) {
		n.thr[i].pid = s->thread[i].pid;
		n.thr[i].tid = s->thread[i].tid;
		n.thr[i].ended = s->thread[i].ended;
		snprintf(n.thr[i].name, sizeof n.thr[i].name, "%s",
			 s->thread[i].name ? s->thread[i].name : "");
	}
	n.nthr = s->threads;
	/* the previous rows are in the view's order: by key for the lookup */
	if (prev) {
		qsort(prev->per, prev->nper, sizeof *prev->per, by_key);
		qsort(prev->merged, prev->nmerged, sizeof *prev->merged, by_key);
	}
	take_interval(n.per, n.nper, prev ? prev->per : NULL, prev ? prev->nper : 0);
	take_interval(n.merged, n.nmerged, prev ? prev->merged : NULL, prev ? prev->nmerged : 0);
	for (size_t i = 0; i < n.nmerged; i++) {
		n.calls += n.merged[i].calls;
		n.icalls += n.merged[i].icalls;
	}
	n.rings = s->rings;
	n.ring_fill_pct = s->ring_fill_pct;
	n.ring_lost = s->ring_lost;
	n.ring_waits = s->ring_waits;
	if (s->heap) {
		n.has_heap = 1;
		n.heap = *s->heap;
		n.heap.stacks = NULL;
		n.iallocations = n.heap.allocations -
				 (prev && prev->heap.allocations <= n.heap.allocations
					  ? prev->heap.allocations
					  : 0);
		err = take_stacks(s->heap, &n);
		if (err)
			goto fail;
	}
	top_sort(v, &n);
	*out = n;
	return 0;
fail:
	top_snap_free(&n);
	memset(out, 0, sizeof *out);
	return err;
}
