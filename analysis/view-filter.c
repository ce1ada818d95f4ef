/* SPDX-License-Identifier: MIT */
/* view-filter.c - filters after the fact (view_set_filter()): -F, -N, -D
 * and --time-range applied to a finished capture's trees and timeline.
 *
 * The tree filters decide each node exactly as the collector decides them
 * while recording (collector/tree.c), so `report -F b` of a capture equals
 * the report of a capture recorded with `-F b`: a node is in scope when it
 * or an ancestor matches a -F pattern (no -F: everything is); a node out of
 * scope, matching a -N pattern, or deeper than -D (counted in the filtered
 * tree) is left out and its children attach to its nearest kept ancestor;
 * kept nodes with the same function under the same parent are merged, their
 * calls and times summed.
 *
 * --time-range first recomputes every node's calls and time from the
 * thread's timeline: a call counts when it starts inside the range, and its
 * time is the part of it inside the range. */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "view-private.h"

int view_set_filter(struct view *v, const struct view_filter *f)
{
	if (v->trees)
		for (size_t i = 0; i < v->nthreads; i++)
			if (v->trees[i].state)
				return -EBUSY; /* trees were read unfiltered */
	memset(&v->filter, 0, sizeof v->filter);
	v->filtering = 0;
	if (!f)
		return 0;
	v->filter = *f;
	v->filtering = f->nfilter || f->nnotrace || f->depth || f->has_range;
	return 0;
}

int view_filtered(const struct view *v)
{
	return v->filtering;
}

const struct view_filter *view_get_filter(const struct view *v)
{
	return v->filtering ? &v->filter : NULL;
}

/* Whether the function's name matches one of pats: as shown, and without
 * its parameter list ("ns::f" matches "ns::f(int)"). */
int view_name_matches(const char *const *pats, size_t n, const char *name)
{
	const char *paren = strchr(name, '(');

	for (size_t i = 0; i < n; i++) {
		if (!fnmatch(pats[i], name, 0))
			return 1;
		if (paren) {
			char buf[512];
			size_t len = (size_t)(paren - name);
			if (len < sizeof buf) {
				memcpy(buf, name, len);
				buf[len] = 0;
				if (!fnmatch(pats[i], buf, 0))
					return 1;
			}
		}
	}
	return 0;
}

/* ---- --time-range: calls and times from the timeline ---------------------- */

struct range_walk {
	struct cygprof_node *nodes;
	size_t n;
	uint64_t t0, t1;
	struct { uint32_t node; uint64_t ts; } *stack;
	size_t depth, cap;
};

static void range_add(struct range_walk *w, uint32_t node, uint64_t a, uint64_t b)
{
	if (a < w->t0)
		a = w->t0;
	if (b > w->t1)
		b = w->t1;
	if (b > a)
		w->nodes[node].total_ns += b - a;
}

static int range_event(const struct cygprof_event *ev, size_t n, void *data)
{
	struct range_walk *w = data;

	for (size_t i = 0; i < n; i++) {
		const struct cygprof_event *e = &ev[i];
		if (e->node >= w->n)
			return CYGPROF_E_CORRUPT;
		if (e->kind == CYGPROF_EV_ENTER) {
			if (ARRAY_GROW(w->stack, w->cap, w->depth + 1))
				return -ENOMEM;
			w->stack[w->depth].node = e->node;
			w->stack[w->depth++].ts = e->ts_ns;
			if (e->ts_ns >= w->t0 && e->ts_ns < w->t1)
				w->nodes[e->node].calls++;
			continue;
		}
		/* an exit closes the innermost open call of its node */
		while (w->depth && w->stack[w->depth - 1].node != e->node) {
			w->depth--; /* unpaired (cannot be in a sound capture): close it */
			range_add(w, w->stack[w->depth].node, w->stack[w->depth].ts, e->ts_ns);
		}
		if (w->depth) {
			w->depth--;
			range_add(w, e->node, w->stack[w->depth].ts, e->ts_ns);
		}
	}
	return 0;
}

static int range_times(struct view *v, uint32_t thread, struct cygprof_node *nodes, size_t n)
{
	struct range_walk w = {.nodes = nodes, .n = n, .t0 = v->filter.t0, .t1 = v->filter.t1};
	const struct cygprof_thread *th = view_thread(v, thread);
	uint64_t end;
	int err;

	if (!view_mode_has(v, "timeline"))
		return VIEW_E_NO_TIMELINE;
	for (size_t i = 0; i < n; i++)
		nodes[i].calls = nodes[i].total_ns = 0;
	err = cygprof_capture_foreach_event(v->cap, thread, range_event, &w);
	if (err == CYGPROF_E_NOTFOUND)
		err = 0;
	/* calls still open at the end: up to the thread's end */
	end = th && th->end_ns ? th->end_ns : view_duration_ns(v);
	while (!err && w.depth) {
		w.depth--;
		range_add(&w, w.stack[w.depth].node, w.stack[w.depth].ts, end);
	}
	free(w.stack);
	return err;
}

/* ---- -F, -N, -D ------------------------------------------------------------- */

#define SCOPE 0x80000000u

/* The kept nodes, by (new parent, fn). */
struct kept {
	const struct cygprof_node *out;
	const uint32_t *ofn;
};

struct kept_key {
	uint32_t parent, fn;
};

static uint64_t kept_hash(uint32_t parent, uint32_t fn)
{
	return hash64((uint64_t)parent << 32 | fn);
}

static int kept_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct kept *t = ctx;
	const struct kept_key *k = key;

	return t->out[i].parent == k->parent && t->ofn[i] == k->fn;
}

static uint64_t kept_hash_at(const void *ctx, uint32_t i)
{
	const struct kept *t = ctx;

	return kept_hash(t->out[i].parent, t->ofn[i]);
}

int view_filter_tree(struct view *v, uint32_t thread, struct cygprof_node **nodesp,
		     uint32_t **fnp, size_t *np, uint32_t **mapp)
{
	const struct view_filter *f = &v->filter;
	struct cygprof_node *in = *nodesp, *out = NULL;
	uint32_t *fn = *fnp, *ofn = NULL, *map = NULL, *attach = NULL, *depth = NULL;
	struct hindex kept = {0}; /* the new nodes by (new parent, fn) */
	struct kept kt;
	size_t n = *np, m = 0, i;
	int err = 0;

	*mapp = NULL;
	if (f->has_range && (err = range_times(v, thread, in, n)))
		return err;
	if (!n)
		return 0;
	out = calloc(n, sizeof *out);
	ofn = calloc(n, sizeof *ofn);
	map = malloc(n * sizeof *map);
	attach = malloc(n * sizeof *attach); /* per old node: kept index (or its
					      * nearest kept ancestor's) | SCOPE */
	depth = calloc(n, sizeof *depth);    /* per new node */
	kt = (struct kept){out, ofn};
	if (!out || !ofn || !map || !attach || !depth ||
	    hindex_reserve(&kept, n, kept_hash_at, &kt)) {
		err = -ENOMEM;
		goto done;
	}
	out[0] = in[0];
	out[0].parent = CYGPROF_NONE; /* indexed, never looked up */
	ofn[0] = fn[0];
	hindex_add(&kept, kept_hash(CYGPROF_NONE, fn[0]), kept_hash_at, &kt); /* reserved */
	map[0] = 0;
	attach[0] = f->nfilter ? 0 : SCOPE;
	m = 1;
	for (i = 1; i < n; i++) {
		uint32_t p = in[i].parent, at, scope, keep = 1;
		const struct view_fn *vf = view_fn(v, fn[i]);
		const char *name = vf ? vf->name : "";

		if (p >= i) {
			err = CYGPROF_E_CORRUPT;
			goto done;
		}
		at = attach[p] & ~SCOPE;
		scope = attach[p] & SCOPE;
		if (!scope && f->nfilter && view_name_matches(f->filter, f->nfilter, name))
			scope = SCOPE;
		if (!scope)
			keep = 0;
		if (keep && f->nnotrace && view_name_matches(f->notrace, f->nnotrace, name))
			keep = 0;
		if (keep && f->depth && depth[at] + 1 > f->depth)
			keep = 0;
		/* a time range: paths with no call and no time in it are gone
		 * (their callees had none either) */
		if (keep && f->has_range && !in[i].calls && !in[i].total_ns)
			keep = 0;
		if (!keep) {
			map[i] = VIEW_NONE;
			attach[i] = at | scope;
			continue;
		}
		/* the kept node of fn under at, made or merged */
		struct kept_key kk = {at, fn[i]};
		uint64_t h = kept_hash(at, fn[i]);
		long r = hindex_find(&kept, h, kept_eq, &kt, &kk);

		if (r < 0) {
			out[m] = in[i];
			out[m].parent = at;
			out[m].calls = out[m].total_ns = 0;
			ofn[m] = fn[i];
			depth[m] = depth[at] + 1;
			hindex_add(&kept, h, kept_hash_at, &kt); /* reserved */
			r = (long)m++;
		}
		uint32_t k = (uint32_t)r;
		out[k].calls += in[i].calls;
		out[k].total_ns += in[i].total_ns;
		map[i] = k;
		attach[i] = k | scope;
	}
done:
	free(attach);
	free(depth);
	hindex_release(&kept);
	if (err) {
		free(out);
		free(ofn);
		free(map);
		return err;
	}
	free(in);
	free(fn);
	*nodesp = out;
	*fnp = ofn;
	*np = m;
	*mapp = map;
	return 0;
}

/* ---- the timeline ---------------------------------------------------------- */

struct event_remap {
	const struct view *v;
	const uint32_t *map;
	size_t nmap;
	cygprof_event_fn fn;
	void *data;
	struct cygprof_event buf[256];
};

static int remap_events(const struct cygprof_event *ev, size_t n, void *data)
{
	struct event_remap *r = data;
	const struct view_filter *f = &r->v->filter;
	size_t k = 0;
	int err;

	for (size_t i = 0; i < n; i++) {
		struct cygprof_event e = ev[i];
		if (f->has_range && (e.ts_ns < f->t0 || e.ts_ns >= f->t1))
			continue;
		if (r->map) {
			if (e.node >= r->nmap || r->map[e.node] == VIEW_NONE)
				continue;
			e.node = r->map[e.node];
		}
		r->buf[k++] = e;
		if (k == sizeof r->buf / sizeof r->buf[0]) {
			if ((err = r->fn(r->buf, k, r->data)))
				return err;
			k = 0;
		}
	}
	return k ? r->fn(r->buf, k, r->data) : 0;
}

int view_filter_events(struct view *v, uint32_t thread, const uint32_t *map, size_t nmap,
		       cygprof_event_fn fn, void *data)
{
	struct event_remap *r = malloc(sizeof *r);
	int err;

	(void)thread;
	if (!r)
		return -ENOMEM;
	r->v = v;
	r->map = map;
	r->nmap = nmap;
	r->fn = fn;
	r->data = data;
	err = cygprof_capture_foreach_event(v->cap, thread, remap_events, r);
	free(r);
	return err == CYGPROF_E_NOTFOUND ? 0 : err;
}

/* ---- call sites ------------------------------------------------------------ */

int view_filter_sites(struct view *v, const struct view_tree_slot *s,
		      struct cygprof_callsite **sitesp, size_t *np)
{
	struct cygprof_callsite *in = *sitesp, *out;
	size_t n = *np, m = 0;

	if (v->filter.has_range) {
		/* the stored sites count the whole run: one per kept path */
		out = calloc(s->t.n ? s->t.n : 1, sizeof *out);
		if (!out)
			return -ENOMEM;
		for (size_t i = 1; i < s->t.n; i++) {
			const struct cygprof_node *nd = &s->t.nodes[i];
			if (!nd->calls && !nd->total_ns)
				continue;
			out[m].node = (uint32_t)i;
			out[m].site = nd->site;
			out[m].calls = nd->calls;
			out[m++].total_ns = nd->total_ns;
		}
	} else {
		out = in; /* in place: m <= n */
		for (size_t i = 0; i < n; i++) {
			if (!s->map || in[i].node >= s->nmap || s->map[in[i].node] == VIEW_NONE)
				continue;
			out[m] = in[i];
			out[m++].node = s->map[in[i].node];
		}
		in = NULL;
	}
	free(in);
	*sitesp = out;
	*np = m;
	return 0;
}
