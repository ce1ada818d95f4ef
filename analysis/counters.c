/* SPDX-License-Identifier: MIT */
/* counters.c - counter series from a view, and the live heap of each
 * process derived from its memory events (see counters.h). */
#include "counters.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "memory.h"
#include "view.h"

#define HEAP_POINTS 200

const char *counters_unit_name(uint32_t unit)
{
	switch (unit) {
	case CYGPROF_UNIT_BYTES:
		return "bytes";
	case CYGPROF_UNIT_NS:
		return "ns";
	default:
		return "count";
	}
}

static int push(struct counter_series *c, uint64_t t, int64_t value)
{
	if (ARRAY_GROW(c->own, c->cap, c->n + 1))
		return -ENOMEM;
	c->own[c->n].t_ns = t;
	c->own[c->n].value = value;
	c->n++;
	c->s = c->own;
	return 0;
}

/* One process's heap while the events stream by. */
struct heap_track {
	const uint64_t *ticks; /* interval ends, increasing */
	size_t nticks, next;   /* next: the tick whose interval is open */
	int64_t bytes, blocks; /* live now */
	int64_t max_bytes, max_blocks;
	uint64_t last_ts;
	int seen;
	struct counter_series *sb, *sk;
};

struct heap_ctx {
	struct view *v;
	struct heap_track *tr; /* per process index */
	size_t nprocs;
	int err;
};

/* Close the open interval with its maxima, and start the next one at the
 * live values. */
static int close_interval(struct heap_track *h, uint64_t t)
{
	int err = push(h->sb, t, h->max_bytes);

	if (!err)
		err = push(h->sk, t, h->max_blocks);
	h->max_bytes = h->bytes;
	h->max_blocks = h->blocks;
	return err;
}

static void heap_change(void *arg, uint32_t thread, uint64_t ts, int64_t bytes, int64_t blocks)
{
	struct heap_ctx *x = arg;
	const struct cygprof_thread *t = view_thread(x->v, thread);
	struct heap_track *h;

	if (x->err || !t || t->proc_idx >= x->nprocs)
		return;
	h = &x->tr[t->proc_idx];
	h->seen = 1;
	while (h->next < h->nticks && ts > h->ticks[h->next] && !x->err)
		x->err = close_interval(h, h->ticks[h->next++]);
	h->bytes += bytes;
	h->blocks += blocks;
	if (h->bytes > h->max_bytes)
		h->max_bytes = h->bytes;
	if (h->blocks > h->max_blocks)
		h->max_blocks = h->blocks;
	h->last_ts = ts;
}

/* The times of the process's first counter with samples, else a grid. */
static int proc_ticks(struct view *v, const struct counter_set *cs, uint32_t proc,
		      uint64_t **ticks, size_t *n)
{
	uint64_t dur = view_duration_ns(v);
	size_t i;

	for (i = 0; i < cs->n; i++) {
		const struct counter_series *c = &cs->v[i];

		if (c->proc_idx == proc && c->n && !c->own) {
			*ticks = malloc(c->n * sizeof(**ticks));
			if (!*ticks)
				return -ENOMEM;
			for (size_t k = 0; k < c->n; k++)
				(*ticks)[k] = c->s[k].t_ns;
			*n = c->n;
			return 0;
		}
	}
	*ticks = malloc(HEAP_POINTS * sizeof(**ticks));
	if (!*ticks)
		return -ENOMEM;
	for (i = 0; i < HEAP_POINTS; i++)
		(*ticks)[i] = dur * (i + 1) / HEAP_POINTS;
	*n = HEAP_POINTS;
	return 0;
}

static int add_series(struct counter_set *cs, const char *name, uint32_t proc, uint32_t pid,
		      uint32_t unit, struct counter_series **out)
{
	struct counter_series *v = realloc(cs->v, (cs->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	cs->v = v;
	memset(&v[cs->n], 0, sizeof(v[cs->n]));
	v[cs->n].name = name;
	v[cs->n].proc_idx = proc;
	v[cs->n].pid = pid;
	v[cs->n].unit = unit;
	*out = &v[cs->n++];
	return 0;
}

static int load_heap(struct view *v, struct counter_set *cs)
{
	const struct cygprof_proc *procs;
	struct heap_ctx x = {.v = v};
	struct memory_opts mo;
	struct memory *m = NULL;
	uint64_t **ticks;
	size_t nprocs, i, base = cs->n;
	int err = view_procs(v, &procs, &nprocs);

	if (err || !nprocs)
		return err;
	x.nprocs = nprocs;
	x.tr = calloc(nprocs, sizeof(*x.tr));
	ticks = calloc(nprocs, sizeof(*ticks));
	if (!x.tr || !ticks) {
		free(x.tr);
		free(ticks);
		return -ENOMEM;
	}
	/* two series per process, made now so that the pointers stay put */
	for (i = 0; !err && i < nprocs; i++) {
		struct counter_series *sb, *sk;

		err = proc_ticks(v, cs, procs[i].idx, &ticks[i], &x.tr[i].nticks);
		if (!err)
			err = add_series(cs, "heap/live_bytes", procs[i].idx, procs[i].pid,
					 CYGPROF_UNIT_BYTES, &sb);
		if (!err)
			err = add_series(cs, "heap/live_blocks", procs[i].idx, procs[i].pid,
					 CYGPROF_UNIT_COUNT, &sk);
	}
	for (i = 0; !err && i < nprocs; i++) {
		x.tr[i].ticks = ticks[i];
		x.tr[i].sb = &cs->v[base + 2 * i];
		x.tr[i].sk = &cs->v[base + 2 * i + 1];
	}
	if (!err) {
		memset(&mo, 0, sizeof(mo));
		mo.heap_change = heap_change;
		mo.heap_arg = &x;
		err = memory_load(v, &mo, &m);
		if (!err)
			err = x.err;
	}
	/* close the interval of the last event; drop processes without events */
	for (i = 0; !err && i < nprocs; i++) {
		struct heap_track *h = &x.tr[i];

		uint64_t end = procs[i].end_ns ? procs[i].end_ns : view_duration_ns(v);

		if (!h->seen)
			continue;
		if (h->next < h->nticks && h->last_ts <= h->ticks[h->next])
			err = close_interval(h, h->ticks[h->next++]);
		else
			err = close_interval(h, h->last_ts);
		/* the heap stays as it is until the process ends */
		while (!err && h->next < h->nticks && h->ticks[h->next] <= end)
			err = close_interval(h, h->ticks[h->next++]);
	}
	if (!err) {
		size_t k = base;

		for (i = 0; i < nprocs; i++) {
			if (x.tr[i].seen) {
				cs->v[k++] = cs->v[base + 2 * i];
				cs->v[k++] = cs->v[base + 2 * i + 1];
			} else {
				free(cs->v[base + 2 * i].own);
				free(cs->v[base + 2 * i + 1].own);
			}
		}
		cs->n = k;
	}
	for (i = 0; i < nprocs; i++)
		free(ticks[i]);
	free(ticks);
	free(x.tr);
	memory_free(m);
	return err;
}

/* The system's series first, then each process's (stable). */
static uint64_t owner_key(const struct counter_series *c)
{
	return c->proc_idx == CYGPROF_NONE ? 0 : (uint64_t)c->proc_idx + 1;
}

static void sort_by_owner(struct counter_set *cs)
{
	for (size_t i = 1; i < cs->n; i++) {
		struct counter_series t = cs->v[i];
		size_t j = i;

		for (; j > 0 && owner_key(&cs->v[j - 1]) > owner_key(&t); j--)
			cs->v[j] = cs->v[j - 1];
		cs->v[j] = t;
	}
}

int counters_load(struct view *v, int heap, struct counter_set *out)
{
	const struct cygprof_counter *c;
	size_t nc, i;
	int err;

	memset(out, 0, sizeof(*out));
	err = view_counters(v, &c, &nc);
	for (i = 0; !err && i < nc; i++) {
		const struct cygprof_proc *p = c[i].proc_idx == CYGPROF_NONE ? NULL
						: view_proc(v, c[i].proc_idx);
		struct counter_series *s;

		err = add_series(out, c[i].name, c[i].proc_idx, p ? p->pid : 0, c[i].unit, &s);
		if (!err)
			err = view_samples(v, c[i].id, &s->s, &s->n);
	}
	if (!err && heap && view_mode_has(v, "memory"))
		err = load_heap(v, out);
	if (err) {
		counters_release(out);
		return err;
	}
	sort_by_owner(out);
	return 0;
}

void counters_release(struct counter_set *cs)
{
	for (size_t i = 0; i < cs->n; i++)
		free(cs->v[i].own);
	free(cs->v);
	cs->v = NULL;
	cs->n = 0;
}
