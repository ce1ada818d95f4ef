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

/* ---- --time-range: the events of the calls in the window ------------------- */

/* What a time range reads of a thread's timeline: the events inside
 * [t0, t1), preceded by an enter at its true time for each call open at t0
 * and followed by an exit at its true time for each call still open at t1
 * (innermost first): a well-nested stream of every call that overlaps the
 * window, with true times.  On a schema 5 capture the cursor seeks to the
 * block of t0 (its open calls are stored with it) and finds each exit after
 * t1 by a binary search, so the cost is the window's, not the timeline's;
 * an older capture is read from its start until its last call closes. */
struct rcall {
	uint32_t node;
	uint64_t enter;
	int known; /* its enter was read (not one past the stored open calls) */
};

struct rstream {
	const uint32_t *map;
	size_t nmap;
	cygprof_event_fn fn;
	void *data;
	struct cygprof_event buf[256];
	size_t k;
};

static struct rstream *rs_new(const uint32_t *map, size_t nmap, cygprof_event_fn fn, void *data)
{
	struct rstream *r = malloc(sizeof *r);

	if (r)
		*r = (struct rstream){ .map = map, .nmap = nmap, .fn = fn, .data = data };
	return r;
}

static int rs_flush(struct rstream *r)
{
	int err = r->k ? r->fn(r->buf, r->k, r->data) : 0;

	r->k = 0;
	return err;
}

static int rs_put(struct rstream *r, uint32_t node, uint64_t ts, uint32_t kind)
{
	if (r->map) {
		if (node >= r->nmap || r->map[node] == VIEW_NONE)
			return 0;
		node = r->map[node];
	}
	r->buf[r->k].node = node;
	r->buf[r->k].ts_ns = ts;
	r->buf[r->k++].kind = kind;
	return r->k == sizeof r->buf / sizeof r->buf[0] ? rs_flush(r) : 0;
}

int view_range_events(struct view *v, uint32_t thread, const uint32_t *map, size_t nmap,
		      cygprof_event_fn fn, void *data)
{
	const struct view_filter *f = &v->filter;
	struct cygprof_event_cursor *cur = NULL;
	const struct cygprof_open_call *oc;
	const struct cygprof_event *ev;
	struct rstream *r = rs_new(map, nmap, fn, data);
	struct rcall *st = NULL;
	size_t n, depth = 0, cap = 0, i, noc, open_at = 0;
	uint32_t full;
	int phase = 0; /* 0 before t0, 1 inside, 2 after t1 */
	int seekable, err;

	if (!r)
		return -ENOMEM;
	err = cygprof_event_cursor_open(v->cap, thread, &cur);
	seekable = !err && !cygprof_event_cursor_seek(cur, f->t0);
	for (int first = 1; !err && phase < 2; first = 0) {
		if ((err = cygprof_event_cursor_next(cur, &ev, &n)) || !n)
			break;
		if (first && seekable &&
		    !cygprof_event_cursor_open_calls(cur, &oc, &noc, &full)) {
			/* the calls open at the block's start: those past the
			 * stored ones are known by their depth only */
			if (ARRAY_GROW(st, cap, full)) {
				err = -ENOMEM;
				break;
			}
			for (depth = 0; depth < full; depth++)
				st[depth] = depth < noc ? (struct rcall){ oc[depth].node,
									 oc[depth].enter_ns, 1 }
							: (struct rcall){ 0, 0, 0 };
		}
		for (i = 0; i < n && !err; i++) {
			const struct cygprof_event *e = &ev[i];

			if (phase == 0 && e->ts_ns >= f->t0) {
				phase = 1;
				for (size_t d = 0; d < depth && !err; d++)
					if (st[d].known)
						err = rs_put(r, st[d].node, st[d].enter,
							     CYGPROF_EV_ENTER);
			}
			if (phase == 1 && e->ts_ns >= f->t1) {
				phase = 2;
				break;
			}
			if (e->kind == CYGPROF_EV_ENTER) {
				if (ARRAY_GROW(st, cap, depth + 1)) {
					err = -ENOMEM;
					break;
				}
				st[depth++] = (struct rcall){ e->node, e->ts_ns, 1 };
			} else if (depth) {
				depth--;
			} else {
				continue; /* entered before the timeline (a fork child) */
			}
			if (phase == 1 && (e->kind == CYGPROF_EV_ENTER || st[depth].known))
				err = rs_put(r, e->node, e->ts_ns, e->kind);
		}
		if (phase < 2 || err)
			continue;
		/* after t1: the calls still open end at their true exits, in
		 * this block or, found by the cursor, in a later one */
		open_at = depth;
		for (; i < n && depth && !err; i++) {
			const struct cygprof_event *e = &ev[i];

			if (e->kind == CYGPROF_EV_ENTER) {
				depth++;
				continue;
			}
			if (--depth < open_at) {
				open_at = depth;
				if (st[depth].known)
					err = rs_put(r, st[depth].node, e->ts_ns, e->kind);
			}
		}
		while (!err && open_at && seekable) {
			uint64_t x;
			struct rcall *c;

			c = &st[--open_at];
			if (!c->known || open_at >= CYGPROF_OPEN_CALLS_MAX)
				continue; /* too deep to find: left open */
			err = cygprof_event_cursor_exit(cur, (uint32_t)open_at, c->enter, &x);
			if (err == CYGPROF_E_NOTFOUND) {
				err = 0;
				break; /* open to the end, and so are its callers */
			}
			if (!err)
				err = rs_put(r, c->node, x, CYGPROF_EV_EXIT);
		}
		if (!seekable && !err && open_at) {
			/* an older capture: read on until they close */
			while (!err && open_at &&
			       !(err = cygprof_event_cursor_next(cur, &ev, &n)) && n) {
				for (i = 0; i < n && open_at && !err; i++) {
					if (ev[i].kind == CYGPROF_EV_ENTER) {
						depth++;
						continue;
					}
					if (!depth)
						continue;
					if (--depth < open_at) {
						open_at = depth;
						if (st[depth].known)
							err = rs_put(r, st[depth].node,
								     ev[i].ts_ns, ev[i].kind);
					}
				}
			}
		}
	}
	if (!err)
		err = rs_flush(r);
	cygprof_event_cursor_close(cur);
	free(st);
	free(r);
	return err == CYGPROF_E_NOTFOUND ? 0 : err;
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
	err = view_range_events(v, thread, NULL, 0, range_event, &w);
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
		     uint32_t **fnp, size_t *np, uint32_t **mapp, uint32_t **ownp)
{
	const struct view_filter *f = &v->filter;
	struct cygprof_node *in = *nodesp, *out = NULL;
	uint32_t *fn = *fnp, *ofn = NULL, *map = NULL, *attach = NULL, *depth = NULL;
	struct hindex kept = {0}; /* the new nodes by (new parent, fn) */
	struct kept kt;
	size_t n = *np, m = 0, i;
	int err = 0;

	*mapp = NULL;
	*ownp = NULL;
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
	free(depth);
	hindex_release(&kept);
	if (err) {
		free(attach);
		free(out);
		free(ofn);
		free(map);
		return err;
	}
	/* where each stored node's own figures go: its kept node, or the
	 * nearest kept ancestor (view_cpu()) */
	for (i = 0; i < n; i++)
		attach[i] &= ~SCOPE;
	free(in);
	free(fn);
	*nodesp = out;
	*fnp = ofn;
	*np = m;
	*mapp = map;
	*ownp = attach;
	return 0;
}

/* ---- the timeline ---------------------------------------------------------- */

/* Each run of a thread's events through the range stream's buffer and node
 * map (rs_put()), flushed at the end of the run: what reaches fn is in
 * runs, as foreach_event gives them. */
static int remap_events(const struct cygprof_event *ev, size_t n, void *data)
{
	struct rstream *r = data;
	int err = 0;

	for (size_t i = 0; i < n && !err; i++)
		err = rs_put(r, ev[i].node, ev[i].ts_ns, ev[i].kind);
	return err ? err : rs_flush(r);
}

int view_filter_events(struct view *v, uint32_t thread, const uint32_t *map, size_t nmap,
		       cygprof_event_fn fn, void *data)
{
	struct rstream *r;
	int err;

	if (v->filter.has_range)
		return view_range_events(v, thread, map, nmap, fn, data);
	r = rs_new(map, nmap, fn, data);
	if (!r)
		return -ENOMEM;
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
