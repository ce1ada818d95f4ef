/* SPDX-License-Identifier: MIT */
/* view.c - a capture opened once: metadata, processes and threads, limits,
 * call trees and call sites, timeline and memory events, each read on first
 * use and kept (objects, symbols and stacks are in view-symbols.c). */
#include "view-private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "srcline.h"

int view_new(struct cygprof_capture *cap, const struct view_opts *o, struct view **out)
{
	struct view *v = calloc(1, sizeof(*v));

	*out = NULL;
	if (!v)
		return -ENOMEM;
	v->cap = cap;
	if (o)
		v->opts = *o;
	*out = v;
	return 0;
}

int view_open(const char *path, const struct view_opts *o, struct view **out)
{
	struct cygprof_capture *cap;
	int err;

	*out = NULL;
	err = cygprof_capture_open(path, &cap);
	if (err)
		return err;
	err = view_new(cap, o, out);
	if (err) {
		cygprof_capture_close(cap);
		return err;
	}
	(*out)->own_cap = 1;
	return 0;
}

static void trees_free(struct view *v)
{
	size_t i;

	if (!v->trees)
		return;
	for (i = 0; i < v->nthreads; i++) {
		free(v->trees[i].nodes);
		free(v->trees[i].self_ns);
		free(v->trees[i].fn);
		free(v->trees[i].map);
		free(v->trees[i].own);
		free(v->trees[i].cpu_arr);
		free(v->trees[i].cut);
		view_latency_free(v->trees[i].lat);
		free(v->trees[i].scale);
		free(v->trees[i].percall);
		free(v->trees[i].sites);
	}
	free(v->trees);
}

void view_close(struct view *v)
{
	struct view_meta_ent *m, *next;

	if (!v)
		return;
	for (m = v->meta; m; m = next) {
		next = m->next;
		free(m->key);
		free(m->value);
		free(m);
	}
	trees_free(v);
	if (v->samples)
		for (size_t i = 0; i < v->ncounters; i++)
			free(v->samples[i].s);
	free(v->samples);
	free(v->psamples);
	free(v->offcpu);
	if (v->counters)
		cygprof_counters_free(v->counters, v->ncounters);
	view_symbols_release(v);
	srcline_free(v->sl);
	if (v->procs)
		cygprof_procs_free(v->procs, v->nprocs);
	free(v->threads);
	if (v->own_cap)
		cygprof_capture_close(v->cap);
	free(v);
}

uint64_t view_file_size(const struct view *v)
{
	return cygprof_capture_file_size(v->cap);
}

struct srcline *view_srcline(struct view *v)
{
	if (!v->sl)
		v->sl = srcline_new(v->opts.debuginfo);
	return v->sl;
}

/* ---- metadata -------------------------------------------------------------- */

int view_meta(struct view *v, const char *key, const char **value)
{
	struct view_meta_ent *m;
	char *val = NULL;
	int err;

	*value = NULL;
	for (m = v->meta; m; m = m->next)
		if (!strcmp(m->key, key)) {
			*value = m->value;
			return m->value ? 0 : CYGPROF_E_NOTFOUND;
		}
	err = cygprof_capture_get_meta(v->cap, key, &val);
	if (err && err != CYGPROF_E_NOTFOUND)
		return err;
	m = calloc(1, sizeof(*m));
	if (!m || !(m->key = strdup(key))) {
		free(m);
		free(val);
		return -ENOMEM;
	}
	m->value = err ? NULL : val;
	m->next = v->meta;
	v->meta = m;
	*value = m->value;
	return err;
}

const char *view_meta_str(struct view *v, const char *key)
{
	const char *s;

	return view_meta(v, key, &s) ? NULL : s;
}

int view_mode_has(struct view *v, const char *word)
{
	const char *mode = view_meta_str(v, "mode");

	return mode && strstr(mode, word);
}

uint64_t view_duration_ns(struct view *v)
{
	const struct cygprof_thread *t;
	const char *s = view_meta_str(v, "duration_ns");
	uint64_t d = s ? strtoull(s, NULL, 10) : 0;
	size_t n = 0, i;

	if (!d && !view_threads(v, &t, &n))
		for (i = 0; i < n; i++)
			if (t[i].end_ns > d)
				d = t[i].end_ns;
	return d;
}

int view_time_sampled(struct view *v)
{
	const char *tm = view_meta_str(v, "time");

	return tm && !strcmp(tm, "sampled");
}

/* ---- overhead compensation ------------------------------------------------- */

/* A stored figure in ns: a finite number from 0 to 1 ms, else -1. */
static double meta_ns(struct view *v, const char *key)
{
	const char *s = view_meta_str(v, key);
	char *end;
	double x;

	if (!s || !*s)
		return -1;
	x = strtod(s, &end);
	if (*end || !(x >= 0 && x <= 1e6))
		return -1;
	return x;
}

/* "min..max" of two stored figures in ns; 0 when it does not parse. */
static int meta_range(struct view *v, const char *key, double *lo, double *hi)
{
	const char *s = view_meta_str(v, key);
	char *end;

	if (!s)
		return 0;
	*lo = strtod(s, &end);
	if (end == s || strncmp(end, "..", 2))
		return 0;
	s = end + 2;
	*hi = strtod(s, &end);
	return end != s && !*end && *lo >= 0 && *hi >= *lo && *hi <= 1e6;
}

static uint32_t meta_u32(struct view *v, const char *key)
{
	const char *s = view_meta_str(v, key);
	char *end;
	unsigned long x;

	if (!s || !*s)
		return 0;
	x = strtoul(s, &end, 10);
	return *end || x > UINT32_MAX ? 0 : (uint32_t)x;
}

void view_overhead(struct view *v, struct view_overhead *o)
{
	if (!v->overhead_state) {
		struct view_overhead *w = &v->overhead;
		const char *m = view_meta_str(v, "overhead_mode");
		const char *rb = view_meta_str(v, "overhead_ring_bytes");
		memset(w, 0, sizeof *w);
		w->in_ns = meta_ns(v, "overhead_in_ns");
		w->out_ns = meta_ns(v, "overhead_out_ns");
		w->present = w->in_ns >= 0 && w->out_ns >= 0;
		if (!w->present)
			w->in_ns = w->out_ns = 0;
		/* stored with or without a calibration */
		w->floor_ns = meta_ns(v, "overhead_floor_ns");
		if (w->floor_ns < 0 || w->floor_ns > 1000)
			w->floor_ns = 0;
		w->in_spread_ns = meta_ns(v, "overhead_in_spread_ns");
		w->out_spread_ns = meta_ns(v, "overhead_out_spread_ns");
		if (w->in_spread_ns < 0 || w->out_spread_ns < 0)
			w->in_spread_ns = w->out_spread_ns = -1;
		w->calls = meta_u32(v, "overhead_calls");
		w->rounds = meta_u32(v, "overhead_rounds");
		w->kept = meta_u32(v, "overhead_rounds_kept");
		w->tries = meta_u32(v, "overhead_tries");
		if (m && strlen(m) < sizeof w->mode && strspn(m, "abcdefghijklmnopqrstuvwxyz+") == strlen(m))
			snprintf(w->mode, sizeof w->mode, "%s", m);
		w->ring_bytes = rb ? strtoull(rb, NULL, 10) : 0;
		w->images = meta_u32(v, "overhead_images");
		w->in_min = w->in_max = w->in_ns;
		w->out_min = w->out_max = w->out_ns;
		if (w->images > 1 &&
		    (!meta_range(v, "overhead_in_range_ns", &w->in_min, &w->in_max) ||
		     !meta_range(v, "overhead_out_range_ns", &w->out_min, &w->out_max))) {
			w->in_min = w->in_max = w->in_ns;
			w->out_min = w->out_max = w->out_ns;
		}
		v->overhead_state = 1;
	}
	*o = v->overhead;
}

/* A calibration's spreads of in and of full (in + out). */
static void spreads(const struct view_overhead *o, double *in, double *full)
{
	if (o->in_spread_ns >= 0 && o->out_spread_ns >= 0) {
		*in = o->in_spread_ns;
		*full = o->in_spread_ns + o->out_spread_ns;
	} else {
		*in = o->in_ns * VIEW_OVERHEAD_SPREAD_UNKNOWN;
		*full = (o->in_ns + o->out_ns) * VIEW_OVERHEAD_SPREAD_UNKNOWN;
	}
}

int view_overhead_differ(const struct view_overhead *a, const struct view_overhead *b,
			 double *per_call)
{
	double fa = a->in_ns + a->out_ns, fb = b->in_ns + b->out_ns, ia, fsa, ib, fsb;
	double din = a->in_ns > b->in_ns ? a->in_ns - b->in_ns : b->in_ns - a->in_ns;
	double dfull = fa > fb ? fa - fb : fb - fa;

	spreads(a, &ia, &fsa);
	spreads(b, &ib, &fsb);
	*per_call = din > dfull ? din : dfull;
	return din > ia + ib || dfull > fsa + fsb;
}

int view_compensated(struct view *v)
{
	struct view_overhead o;

	if (v->opts.raw_times)
		return 0;
	view_overhead(v, &o);
	return o.present;
}

/* ---- processes and threads ------------------------------------------------- */

int view_load_procs(struct view *v)
{
	int err;

	if (v->procs_state)
		return 0;
	err = cygprof_capture_get_procs(v->cap, &v->procs, &v->nprocs);
	if (err) {
		v->procs = NULL;
		v->nprocs = 0;
		return err;
	}
	v->procs_state = 1;
	return 0;
}

static int load_threads(struct view *v)
{
	int err;

	if (v->threads_state)
		return 0;
	err = cygprof_capture_get_threads(v->cap, &v->threads, &v->nthreads);
	if (err) {
		v->threads = NULL;
		v->nthreads = 0;
		return err;
	}
	v->threads_state = 1;
	return 0;
}

int view_procs(struct view *v, const struct cygprof_proc **procs, size_t *n)
{
	int err = view_load_procs(v);

	*procs = v->procs;
	*n = v->nprocs;
	return err;
}

int view_threads(struct view *v, const struct cygprof_thread **threads, size_t *n)
{
	int err = load_threads(v);

	*threads = v->threads;
	*n = v->nthreads;
	return err;
}

/* Indices are dense in a sound capture: look there first. */
static size_t thread_pos(struct view *v, uint32_t idx)
{
	size_t i;

	if (load_threads(v))
		return SIZE_MAX;
	if (idx < v->nthreads && v->threads[idx].idx == idx)
		return idx;
	for (i = 0; i < v->nthreads; i++)
		if (v->threads[i].idx == idx)
			return i;
	return SIZE_MAX;
}

const struct cygprof_thread *view_thread(struct view *v, uint32_t idx)
{
	size_t i = thread_pos(v, idx);

	return i == SIZE_MAX ? NULL : &v->threads[i];
}

const struct cygprof_proc *view_proc(struct view *v, uint32_t idx)
{
	size_t i;

	if (view_load_procs(v))
		return NULL;
	if (idx < v->nprocs && v->procs[idx].idx == idx)
		return &v->procs[idx];
	for (i = 0; i < v->nprocs; i++)
		if (v->procs[i].idx == idx)
			return &v->procs[i];
	return NULL;
}

uint32_t view_thread_pid(struct view *v, const struct cygprof_thread *t)
{
	if (view_load_procs(v) || t->proc_idx >= v->nprocs)
		return 0;
	return v->procs[t->proc_idx].pid;
}

const char *view_thread_name(const struct cygprof_thread *t, char buf[16])
{
	memcpy(buf, t->name, sizeof(t->name));
	buf[sizeof(t->name) - 1] = 0;
	return buf;
}

const char *view_proc_end(const struct cygprof_proc *p, char *buf, size_t len)
{
	switch (p->end_kind) {
	case CYGPROF_END_EXIT:
		snprintf(buf, len, "exit %d", (int)p->end_code);
		break;
	case CYGPROF_END_SIGNAL:
		snprintf(buf, len, "signal %d", (int)p->end_code);
		break;
	case CYGPROF_END_EXEC:
		snprintf(buf, len, "exec");
		break;
	default:
		snprintf(buf, len, "unknown");
		break;
	}
	return buf;
}

const char *view_thread_note(uint32_t flags)
{
	switch (flags & (CYGPROF_THREAD_SIGNAL | CYGPROF_THREAD_CLONED)) {
	case CYGPROF_THREAD_SIGNAL:
		return " [signal handlers]";
	case CYGPROF_THREAD_CLONED:
		return " [raw clone]";
	case CYGPROF_THREAD_SIGNAL | CYGPROF_THREAD_CLONED:
		return " [raw clone, signal handlers]";
	}
	return "";
}

void view_limits(struct view *v, struct view_limits *l)
{
	const struct cygprof_thread *t;
	const char *s;
	size_t n = 0, i;

	memset(l, 0, sizeof(*l));
	if (!view_threads(v, &t, &n))
		for (i = 0; i < n; i++) {
			l->lost += t[i].lost;
			l->overflow += t[i].overflow;
			l->sig_lost += t[i].sig_lost;
			l->mem_lost += t[i].mem_lost;
			l->unpaired += t[i].unpaired;
			if ((t[i].flags & CYGPROF_THREAD_TRIMMED) && !l->trimmed++) {
				l->trimmed_idx = t[i].idx;
				l->trimmed_events = t[i].events;
			}
		}
	s = view_meta_str(v, "shm_full");
	if (s) {
		l->shm_full_set = 1;
		l->shm_full = strtoull(s, NULL, 10);
	}
	l->damaged = view_meta_str(v, "damaged");
	l->incomplete = view_meta(v, "complete", &s) != 0;
	l->in_progress = cygprof_capture_in_progress(v->cap);
	l->checkpoint_ns = l->incomplete ? view_duration_ns(v) : 0;
	l->ended = view_meta_str(v, "ended");
}

/* ---- call trees -------------------------------------------------------------- */

static struct view_tree_slot *tree_slot(struct view *v, uint32_t thread)
{
	size_t i = thread_pos(v, thread);

	if (i == SIZE_MAX)
		return NULL;
	if (!v->trees) {
		v->trees = calloc(v->nthreads ? v->nthreads : 1, sizeof(*v->trees));
		if (!v->trees)
			return NULL;
	}
	return &v->trees[i];
}

struct view_tree_slot *view_slot(struct view *v, uint32_t thread)
{
	return tree_slot(v, thread);
}

int view_tree(struct view *v, uint32_t thread, const struct view_tree **out)
{
	const struct cygprof_thread *th = view_thread(v, thread);
	struct view_tree_slot *s;
	struct cygprof_node *nodes = NULL;
	size_t n = 0, i;
	int err;

	*out = NULL;
	if (!th)
		return v->threads_state ? CYGPROF_E_NOTFOUND : load_threads(v);
	s = tree_slot(v, thread);
	if (!s)
		return -ENOMEM;
	if (s->state) {
		*out = &s->t;
		return 0;
	}
	err = cygprof_capture_get_tree(v->cap, thread, &nodes, &n);
	if (err == CYGPROF_E_NOTFOUND) {
		nodes = NULL;
		n = 0;
	} else if (err) {
		return err;
	}
	s->fn = calloc(n ? n : 1, sizeof(*s->fn));
	if (!s->fn) {
		err = -ENOMEM;
		goto fail;
	}
	s->fn[0] = VIEW_NONE;
	for (i = 1; i < n; i++) {
		err = view_fn_at(v, th->proc_idx, nodes[i].fn, &s->fn[i]);
		if (err)
			goto fail;
	}
	/* The hooks' cost out of the stored tree, before the filters: a node
	 * that -N or -D leaves out still cost its callers its hooks.  A time
	 * range recomputes the times from the timeline: compensated after. */
	int comp = view_compensated(v);
	struct profile_overhead ov = {v->overhead.in_ns, v->overhead.in_ns + v->overhead.out_ns};
	if (comp && !(v->filtering && v->filter.has_range)) {
		s->cut = calloc(n ? n : 1, sizeof(*s->cut));
		if (!s->cut) {
			err = -ENOMEM;
			goto fail;
		}
		s->ncut = n;
		if ((err = profile_compensate(nodes, n, &ov, s->cut, &s->t.clamped))) {
			err = err == -EINVAL ? CYGPROF_E_CORRUPT : err;
			goto fail;
		}
	}
	/* Then the time model (timemodel.h): waiting for a CPU out, the
	 * CPU samples where the hooks' figure is off by more than their
	 * noise; the samples alone for --time=sampled.  A time range has
	 * no samples per moment: its times stay the hooks'. */
	if (!v->opts.raw_times && v->opts.times != VIEW_TIMES_HOOKS &&
	    !(v->filtering && v->filter.has_range)) {
		struct cygprof_cpu crec;
		struct cygprof_cpu_node *rows = NULL;
		size_t nrows = 0;
		int sonly = view_time_sampled(v) || v->opts.times == VIEW_TIMES_SAMPLES;
		struct view_overhead vo;

		view_overhead(v, &vo);

		err = cygprof_capture_get_cpu(v->cap, thread, &crec, &rows, &nrows);
		if (!err && (!sonly || crec.samples) && n) {
			/* each node's factor, for its call sites (view_sites()) */
			s->scale = malloc(n * sizeof *s->scale);
			if (!s->scale)
				err = -ENOMEM;
			for (i = 0; !err && i < n; i++)
				s->scale[i] = (double)nodes[i].total_ns;
		}
		if (!err && (!sonly || crec.samples))
			err = timemodel_apply(nodes, n, rows, nrows, crec.period_ns,
					      (crec.flags & CYGPROF_CPU_SWITCHES ? TIMEMODEL_SWITCHES : 0) |
						      (sonly ? TIMEMODEL_SAMPLED : 0) |
						      (v->opts.times == VIEW_TIMES_WALL
							       ? TIMEMODEL_KEEP_BLOCKED
							       : 0),
					      v->opts.times == VIEW_TIMES_SAMPLES ? 0 : vo.floor_ns,
					      vo.present ? vo.in_ns + vo.out_ns : 0,
					      &s->t.model);
		if (!err)
			s->t.modelled = !sonly || crec.samples;
		if (!err && s->scale && !(s->percall = malloc(n * sizeof *s->percall)))
			err = -ENOMEM;
		for (i = 0; !err && s->scale && i < n; i++) {
			s->scale[i] = s->scale[i] > 0 ? (double)nodes[i].total_ns / s->scale[i] : 0;
			s->percall[i] = nodes[i].calls ? (double)nodes[i].total_ns /
								  (double)nodes[i].calls
							: 0;
		}
		s->nscale = s->scale && s->percall ? n : 0;
		free(rows);
		if (err == CYGPROF_E_NOTFOUND)
			err = 0;
		if (err) {
			err = err == -EINVAL ? CYGPROF_E_CORRUPT : err;
			goto fail;
		}
	}
	if (v->filtering) {
		size_t nstored = n;
		err = view_filter_tree(v, thread, &nodes, &s->fn, &n, &s->map, &s->own);
		if (err)
			goto fail;
		s->nmap = nstored;
		if (comp && v->filter.has_range &&
		    (err = profile_compensate(nodes, n, &ov, NULL, &s->t.clamped))) {
			err = err == -EINVAL ? CYGPROF_E_CORRUPT : err;
			goto fail;
		}
	}
	s->self_ns = calloc(n ? n : 1, sizeof(*s->self_ns));
	if (!s->self_ns) {
		err = -ENOMEM;
		goto fail;
	}
	err = profile_self_times(nodes, n, s->self_ns, &s->t.total_ns);
	if (err) {
		err = CYGPROF_E_CORRUPT;
		goto fail;
	}
	s->nodes = nodes;
	s->t.thread = thread;
	s->t.nodes = nodes;
	s->t.n = n;
	s->t.self_ns = s->self_ns;
	s->t.fn = s->fn;
	s->state = 1;
	*out = &s->t;
	return 0;
fail:
	free(nodes);
	free(s->self_ns);
	free(s->fn);
	free(s->map);
	free(s->own);
	free(s->cut);
	free(s->scale);
	free(s->percall);
	s->scale = s->percall = NULL;
	s->nscale = 0;
	s->self_ns = NULL;
	s->fn = NULL;
	s->map = NULL;
	s->own = NULL;
	s->cut = NULL;
	s->ncut = 0;
	s->t.total_ns = 0;
	s->t.clamped = 0;
	return err;
}

int view_compensation_clamped(struct view *v, uint64_t *clamped)
{
	const struct cygprof_thread *th;
	size_t n;
	int err;

	*clamped = 0;
	if (!view_compensated(v))
		return 0;
	if ((err = view_threads(v, &th, &n)))
		return err;
	for (size_t i = 0; i < n; i++) {
		const struct view_tree *t;
		if ((err = view_tree(v, th[i].idx, &t)))
			return err;
		*clamped += t->clamped;
	}
	return 0;
}

/* A node's time shared among its call sites by their calls (the times of
 * view_set_times(), which are not measured per site). */
static void sites_by_calls(struct view_tree_slot *s)
{
	for (size_t i = 0; i < s->nsites; i++) {
		struct cygprof_callsite *c = &s->sites[i];
		const struct cygprof_node *nd;

		if (c->node >= s->t.n)
			continue;
		nd = &s->nodes[c->node];
		c->total_ns = nd->calls ? (uint64_t)((double)nd->total_ns * (double)c->calls /
							 (double)nd->calls + 0.5)
					: 0;
	}
}

int view_set_times(struct view *v, uint32_t thread, const uint64_t *total_ns, size_t n)
{
	struct view_tree_slot *s = tree_slot(v, thread);

	if (!s || !s->state || n != s->t.n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		s->nodes[i].total_ns = total_ns[i];
	if (profile_self_times(s->nodes, n, s->self_ns, &s->t.total_ns))
		return CYGPROF_E_CORRUPT;
	s->sampled = 1;
	if (s->sites_state)
		sites_by_calls(s);
	return 0;
}

int view_sites(struct view *v, uint32_t thread, const struct cygprof_callsite **sites,
	       size_t *n)
{
	struct view_tree_slot *s;
	int err;

	*sites = NULL;
	*n = 0;
	if (!view_thread(v, thread))
		return v->threads_state ? CYGPROF_E_NOTFOUND : load_threads(v);
	s = tree_slot(v, thread);
	if (!s)
		return -ENOMEM;
	if (!s->sites_state) {
		err = cygprof_capture_get_sites(v->cap, thread, &s->sites, &s->nsites);
		if (err == CYGPROF_E_NOTFOUND) {
			s->sites = NULL;
			s->nsites = 0;
		} else if (err) {
			s->sites = NULL;
			s->nsites = 0;
			return err;
		}
		s->sites_state = 1;
		{
			/* the tree first: its cut per call, its time model's
			 * factors and its filter's map */
			const struct view_tree *t;
			if ((err = view_tree(v, thread, &t)))
				goto fail;
		}
		/* each call of a site loses what a call of its node does */
		for (size_t i = 0; s->cut && i < s->nsites; i++) {
			struct cygprof_callsite *c = &s->sites[i];
			if (c->node >= s->ncut)
				continue;
			double x = (double)c->total_ns - (double)c->calls * s->cut[c->node];
			c->total_ns = x > 0 ? (uint64_t)(x + 0.5) : 0;
		}
		/* then the time model: a site's share of its node kept (a node
		 * the hooks saw no time in gets its calls' share) */
		for (size_t i = 0; s->scale && i < s->nsites; i++) {
			struct cygprof_callsite *c = &s->sites[i];
			if (c->node >= s->nscale)
				continue;
			if (s->scale[c->node] > 0) {
				c->total_ns = (uint64_t)((double)c->total_ns * s->scale[c->node] + 0.5);
			} else {
				c->total_ns = (uint64_t)(s->percall[c->node] * (double)c->calls + 0.5);
			}
		}
		if (v->filtering && (err = view_filter_sites(v, s, &s->sites, &s->nsites)))
			goto fail;
		if (s->sampled)
			sites_by_calls(s);
	}
	*sites = s->sites;
	*n = s->nsites;
	return 0;
fail:
	free(s->sites);
	s->sites = NULL;
	s->nsites = 0;
	s->sites_state = 0;
	return err;
}

/* ---- CPU samples and off-CPU time ----------------------------------------------- */

int view_cpu(struct view *v, uint32_t thread, const struct view_cpu **out)
{
	const struct view_tree *t;
	struct view_tree_slot *s;
	struct cygprof_cpu_node *rows = NULL;
	size_t nrows = 0, i;
	int err;

	*out = NULL;
	if ((err = view_tree(v, thread, &t)))
		return err;
	s = tree_slot(v, thread);
	if (!s)
		return -ENOMEM;
	if (s->cpu_state) {
		*out = &s->cpu;
		return 0;
	}
	struct view_cpu *c = &s->cpu;
	memset(c, 0, sizeof *c);
	err = cygprof_capture_get_cpu(v->cap, thread, &c->thread, &rows, &nrows);
	if (err == CYGPROF_E_NOTFOUND || (!err && v->filtering && v->filter.has_range)) {
		/* none, or a time range: the samples carry no time */
		free(rows);
		memset(c, 0, sizeof *c);
		s->cpu_state = 1;
		*out = c;
		return 0;
	}
	if (err)
		return err;
	s->cpu_arr = calloc(4 * (t->n ? t->n : 1), sizeof *s->cpu_arr);
	if (!s->cpu_arr) {
		free(rows);
		return -ENOMEM;
	}
	uint64_t *sa = s->cpu_arr, *ov = sa + t->n, *wa = ov + t->n, *bl = wa + t->n;
	for (i = 0; i < nrows; i++) {
		uint32_t k = rows[i].node;
		/* the stored node's figures go to the node the view keeps for
		 * it: itself, or (a filter) its kept node or nearest kept
		 * ancestor */
		if (s->own)
			k = k < s->nmap ? s->own[k] : VIEW_NONE;
		if (k >= t->n) {
			c->dropped++;
			continue;
		}
		sa[k] += rows[i].samples;
		ov[k] += rows[i].overhead;
		wa[k] += rows[i].wait_ns;
		bl[k] += rows[i].blocked_ns;
	}
	free(rows);
	c->present = 1;
	c->n = t->n;
	c->samples = sa;
	c->overhead = ov;
	c->wait_ns = wa;
	c->blocked_ns = bl;
	c->period_ns = c->thread.period_ns;
	s->cpu_state = 1;
	*out = c;
	return 0;
}

/* ---- timeline and memory events ------------------------------------------------ */

int view_events(struct view *v, uint32_t thread, cygprof_event_fn fn, void *data)
{
	int err;

	if (v->filtering) {
		/* the events of the filtered tree: read it first */
		const struct view_tree *t;
		struct view_tree_slot *s;
		if ((err = view_tree(v, thread, &t)))
			return err;
		s = tree_slot(v, thread);
		return view_filter_events(v, thread, s ? s->map : NULL, s ? s->nmap : 0, fn, data);
	}
	err = cygprof_capture_foreach_event(v->cap, thread, fn, data);

	return err == CYGPROF_E_NOTFOUND ? 0 : err;
}

struct ev_buf {
	struct cygprof_event *ev;
	size_t n, cap;
};

static int collect(const struct cygprof_event *ev, size_t n, void *data)
{
	struct ev_buf *b = data;

	if (ARRAY_GROW(b->ev, b->cap, b->n + n))
		return -ENOMEM;
	memcpy(b->ev + b->n, ev, n * sizeof(*ev));
	b->n += n;
	return 0;
}

int view_events_read(struct view *v, uint32_t thread, struct cygprof_event **ev, size_t *n)
{
	struct ev_buf b = {0};
	int err = view_events(v, thread, collect, &b);

	if (err) {
		free(b.ev);
		b.ev = NULL;
		b.n = 0;
	}
	*ev = b.ev;
	*n = b.n;
	return err;
}

/* A pull cursor over a thread's events as the view shows them: a block at
 * a time from the capture's cursor, remapped to the filtered tree (-F, -N,
 * -D); with a time range, the window's events at once (view_events()). */
struct view_ecursor {
	struct cygprof_event_cursor *cur; /* NULL: ev holds everything */
	const uint32_t *map;              /* node map of a filtered tree */
	size_t nmap;
	struct cygprof_event *ev;
	size_t n, cap;
	int given; /* the events read at once were given */
	uint64_t read, total; /* view_ecursor_progress() */
};

int view_ecursor_open(struct view *v, uint32_t thread, struct view_ecursor **out)
{
	struct view_ecursor *c = calloc(1, sizeof *c);
	int err = 0;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	if (v->filtering && v->filter.has_range) {
		err = view_events_read(v, thread, &c->ev, &c->n);
		c->total = c->n;
	} else {
		const struct cygprof_thread *th = view_thread(v, thread);

		c->total = th ? th->events : 0;
		if (v->filtering) {
			const struct view_tree *t;
			struct view_tree_slot *s;

			if (!(err = view_tree(v, thread, &t)) && (s = tree_slot(v, thread))) {
				c->map = s->map;
				c->nmap = s->nmap;
			}
		}
		if (!err)
			err = cygprof_event_cursor_open(v->cap, thread, &c->cur);
	}
	if (err) {
		view_ecursor_close(c);
		return err;
	}
	*out = c;
	return 0;
}

int view_ecursor_next(struct view_ecursor *c, const struct cygprof_event **ev, size_t *n)
{
	const struct cygprof_event *e;
	size_t k;
	int err;

	*ev = NULL;
	*n = 0;
	if (!c->cur) {
		if (!c->given) {
			c->given = 1;
			*ev = c->ev;
			*n = c->n;
			c->read = c->n;
		}
		return 0;
	}
	if (!c->map) {
		err = cygprof_event_cursor_next(c->cur, ev, n);
		c->read += *n;
		return err;
	}
	/* the next block with a kept event */
	do {
		if ((err = cygprof_event_cursor_next(c->cur, &e, &k)) || !k)
			return err;
		c->read += k;
		if (ARRAY_GROW(c->ev, c->cap, k))
			return -ENOMEM;
		c->n = 0;
		for (size_t i = 0; i < k; i++) {
			if (e[i].node >= c->nmap || c->map[e[i].node] == VIEW_NONE)
				continue;
			c->ev[c->n] = e[i];
			c->ev[c->n++].node = c->map[e[i].node];
		}
	} while (!c->n);
	*ev = c->ev;
	*n = c->n;
	return 0;
}

void view_ecursor_progress(const struct view_ecursor *c, uint64_t *read, uint64_t *total)
{
	*read = c->read;
	*total = c->total;
}

void view_ecursor_close(struct view_ecursor *c)
{
	if (!c)
		return;
	cygprof_event_cursor_close(c->cur);
	free(c->ev);
	free(c);
}

int view_mem_cursor(struct view *v, uint32_t thread, struct cygprof_mem_cursor **cur)
{
	return cygprof_mem_cursor_open(v->cap, thread, cur);
}

int view_mem_count(struct view *v, uint64_t *n)
{
	const struct cygprof_thread *t;
	uint64_t k;
	size_t nt, i;
	int err;

	*n = 0;
	err = view_threads(v, &t, &nt);
	for (i = 0; !err && i < nt; i++) {
		err = cygprof_capture_mem_count(v->cap, t[i].idx, &k);
		*n += err ? 0 : k;
	}
	return err;
}

/* ---- counters ------------------------------------------------------------------ */

int view_counters(struct view *v, const struct cygprof_counter **c, size_t *n)
{
	int err = 0;

	if (!v->counters_state) {
		err = cygprof_capture_get_counters(v->cap, &v->counters, &v->ncounters);
		if (err == CYGPROF_E_NOTFOUND)
			err = 0;
		if (!err && v->ncounters) {
			v->samples = calloc(v->ncounters, sizeof(*v->samples));
			if (!v->samples)
				err = -ENOMEM;
		}
		if (err) {
			if (v->counters)
				cygprof_counters_free(v->counters, v->ncounters);
			v->counters = NULL;
			v->ncounters = 0;
		} else {
			v->counters_state = 1;
		}
	}
	*c = v->counters;
	*n = v->ncounters;
	return err;
}

/* The end of loading an array of the capture once: none is empty, and the
 * capture's getters leave the array empty after an error (the next call
 * tries again). */
static int view_loaded(int err, int *state)
{
	if (err == CYGPROF_E_NOTFOUND)
		err = 0;
	if (!err)
		*state = 1;
	return err;
}

int view_psamples(struct view *v, const struct cygprof_psample **s, size_t *n)
{
	int err = 0;

	if (!v->psamples_state)
		err = view_loaded(cygprof_capture_get_psamples(v->cap, &v->psamples, &v->npsamples),
				  &v->psamples_state);
	*s = v->psamples;
	*n = v->npsamples;
	return err;
}

/* The stored intervals, the program's (flags 0) first and the waits for
 * the collector (CYGPROF_OFFCPU_WAIT) after them, each in start order. */
static int offcpu_load(struct view *v)
{
	int err = 0;

	if (v->offcpu_state)
		return 0;
	err = view_loaded(cygprof_capture_get_offcpu(v->cap, &v->offcpu, &v->noffcpu),
			  &v->offcpu_state);
	if (err || !v->noffcpu)
		return err;
	struct cygprof_offcpu *w = malloc(v->noffcpu * sizeof *w);
	size_t k = 0, nw = 0;
	if (!w) {
		v->offcpu_state = 0;
		free(v->offcpu);
		v->offcpu = NULL;
		v->noffcpu = 0;
		return -ENOMEM;
	}
	for (size_t i = 0; i < v->noffcpu; i++) {
		if (v->offcpu[i].flags & CYGPROF_OFFCPU_WAIT)
			w[nw++] = v->offcpu[i];
		else
			v->offcpu[k++] = v->offcpu[i];
	}
	memcpy(v->offcpu + k, w, nw * sizeof *w);
	free(w);
	v->noffcpu = k;
	v->nwaits = nw;
	return 0;
}

int view_offcpu(struct view *v, const struct cygprof_offcpu **o, size_t *n)
{
	int err = offcpu_load(v);

	*o = v->offcpu;
	*n = v->noffcpu;
	return err;
}

int view_waits(struct view *v, const struct cygprof_offcpu **o, size_t *n)
{
	int err = offcpu_load(v);

	*o = v->offcpu ? v->offcpu + v->noffcpu : NULL;
	*n = v->nwaits;
	return err;
}

int view_samples(struct view *v, uint32_t id, const struct cygprof_sample **s, size_t *n)
{
	const struct cygprof_counter *c;
	size_t nc;
	int err = view_counters(v, &c, &nc);

	*s = NULL;
	*n = 0;
	if (err)
		return err;
	if (id >= nc)
		return CYGPROF_E_NOTFOUND;
	if (!v->samples[id].state) {
		err = cygprof_capture_get_samples(v->cap, id, &v->samples[id].s, &v->samples[id].n);
		if (err == CYGPROF_E_NOTFOUND)
			err = 0;
		if (err)
			return err;
		v->samples[id].state = 1;
	}
	*s = v->samples[id].s;
	*n = v->samples[id].n;
	return 0;
}
