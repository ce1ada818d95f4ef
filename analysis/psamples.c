/* SPDX-License-Identifier: MIT */
/* psamples.c - perf samples and off-CPU intervals charged to the functions
 * and call paths of an exact profile (see psamples.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "psamples.h"
#include "view.h"

/* What one stack of the stash says, worked out once. */
struct stack_info {
	int done;
	int overhead;      /* the innermost frame is cygprof's runtime */
	uint32_t inst;     /* innermost instrumented function, or PROFILE_NONE */
	uint32_t *path;    /* instrumented functions, outermost first */
	uint32_t npath;
	const char *leaf;  /* the innermost frame when it is not instrumented */
	const char *leaf_obj;
	uint32_t leaf_idx[2]; /* its psamp_leaf (user, kernel), UINT32_MAX: not yet */
};

struct ctx {
	struct view *v;
	const struct profile *p;
	struct psamp *s;
	struct stack_info *si; /* per stack id (si[id - 1]) */
	size_t nst;
	uint32_t *mark;        /* per profile function: the last sample that held it + 1 */
	uint32_t nmark;
	uint32_t *thread_of;   /* capture thread idx -> profile thread + 1 (0: none) */
	size_t nthread_of;
	int all_threads;
};

int psamp_runtime_frame(const char *name, const char *object_path)
{
	if (object_path) {
		const char *b = strrchr(object_path, '/');
		b = b ? b + 1 : object_path;
		if (!strncmp(b, "libcygprof-cyg.", 15) || !strncmp(b, "libcygprof-mem.", 15))
			return 1;
	}
	return name && !strncmp(name, "__cyg_profile_func_", 19);
}

int psamp_stack(struct view *v, uint32_t id, unsigned flags, struct view_frame **frames,
		size_t *n, int *overhead)
{
	size_t i, k;
	int err = view_stack(v, id, flags, NULL, frames, n);

	*overhead = 0;
	if (err)
		return err;
	for (i = k = 0; i < *n; i++) {
		struct view_frame *f = &(*frames)[i];
		if (psamp_runtime_frame(f->name, f->obj ? f->obj->path : NULL)) {
			if (!i)
				*overhead = 1;
			continue;
		}
		(*frames)[k++] = *f;
	}
	*n = k;
	return 0;
}

static int stack_info(struct ctx *x, uint32_t id, struct stack_info **out)
{
	struct stack_info *si;
	struct view_frame *f = NULL;
	size_t n = 0, i, k;
	int err;

	*out = NULL;
	if (!id || id > x->nst)
		return 0;
	si = &x->si[id - 1];
	if (si->done) {
		*out = si;
		return 0;
	}
	err = psamp_stack(x->v, id, 0, &f, &n, &si->overhead);
	if (err)
		return err;
	si->inst = PROFILE_NONE;
	si->leaf_idx[0] = si->leaf_idx[1] = UINT32_MAX;
	si->path = malloc((n ? n : 1) * sizeof *si->path);
	if (!si->path) {
		free(f);
		return -ENOMEM;
	}
	/* outermost first: frames are innermost first */
	for (i = n, k = 0; i-- > 0;) {
		long fi = profile_find(x->p, f[i].name);
		if (fi < 0)
			continue;
		si->path[k++] = (uint32_t)fi;
		si->inst = (uint32_t)fi;
	}
	si->npath = (uint32_t)k;
	if (n && profile_find(x->p, f[0].name) < 0) {
		si->leaf = f[0].name;
		si->leaf_obj = f[0].obj ? f[0].obj->path : NULL;
	}
	si->done = 1;
	free(f);
	*out = si;
	return 0;
}

static int leaf_of(struct ctx *x, struct stack_info *si, int kernel, uint32_t *idx)
{
	struct psamp *s = x->s;
	size_t i;

	if (si->leaf_idx[kernel] != UINT32_MAX) {
		*idx = si->leaf_idx[kernel];
		return 0;
	}
	for (i = 0; i < s->nleaf; i++) {
		const struct psamp_leaf *l = &s->leaf[i];
		if (l->caller == si->inst && l->kernel == kernel && !strcmp(l->name, si->leaf) &&
		    (l->object == si->leaf_obj ||
		     (l->object && si->leaf_obj && !strcmp(l->object, si->leaf_obj))))
			break;
	}
	if (i == s->nleaf) {
		if (ARRAY_GROW(s->leaf, s->leaf_cap, s->nleaf + 1))
			return -ENOMEM;
		memset(&s->leaf[i], 0, sizeof s->leaf[i]);
		s->leaf[i].name = si->leaf;
		s->leaf[i].object = si->leaf_obj;
		s->leaf[i].caller = si->inst;
		s->leaf[i].kernel = kernel;
		s->nleaf++;
	}
	si->leaf_idx[kernel] = (uint32_t)i;
	*idx = (uint32_t)i;
	return 0;
}

/* The node of profile thread t that the stack's path reaches, or
 * PROFILE_NONE. */
static uint32_t node_of(const struct profile_thread *t, const struct stack_info *si)
{
	uint32_t cur = 0;

	if (!t->n || !si->npath)
		return PROFILE_NONE;
	for (uint32_t k = 0; k < si->npath; k++) {
		uint32_t c = t->nodes[cur].first_child;
		while (c != PROFILE_NONE && t->nodes[c].fn != si->path[k])
			c = t->nodes[c].next_sibling;
		if (c == PROFILE_NONE)
			return PROFILE_NONE;
		cur = c;
	}
	return cur;
}

static uint64_t pl_hash(uint32_t thread, uint32_t node, uint32_t leaf)
{
	return hash_pair((uint64_t)thread << 32 | node, leaf);
}

static int pl_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct psamp_path_leaf *e = &((const struct psamp *)ctx)->path_leaf[i], *k = key;

	return e->thread == k->thread && e->node == k->node && e->leaf == k->leaf;
}

static uint64_t pl_hash_at(const void *ctx, uint32_t i)
{
	const struct psamp_path_leaf *e = &((const struct psamp *)ctx)->path_leaf[i];

	return pl_hash(e->thread, e->node, e->leaf);
}

/* The path_leaf entry of (thread, node, leaf), made when absent; NULL when
 * out of memory. */
static struct psamp_path_leaf *path_leaf(struct psamp *s, uint32_t thread, uint32_t node,
					  uint32_t leaf)
{
	struct psamp_path_leaf k = {.thread = thread, .node = node, .leaf = leaf}, *e;
	uint64_t h = pl_hash(thread, node, leaf);
	long i = hindex_find(&s->pl_index, h, pl_eq, s, &k);

	if (i >= 0)
		return &s->path_leaf[i];
	if (ARRAY_GROW(s->path_leaf, s->path_leaf_cap, s->npath_leaf + 1) ||
	    hindex_add(&s->pl_index, h, pl_hash_at, s))
		return NULL;
	e = &s->path_leaf[s->npath_leaf++];
	*e = k;
	return e;
}

static void add(struct psamp_cost *c, uint64_t samples, uint64_t sample_ns, uint64_t off_ns,
		uint64_t off_n)
{
	c->samples += samples;
	c->sample_ns += sample_ns;
	c->offcpu_ns += off_ns;
	c->offcpu_n += off_n;
}

/* Charge one sample (off_n == 0; flags CYGPROF_SAMPLE_*) or interval. */
static int charge(struct ctx *x, uint32_t thread_idx, uint32_t stack, uint32_t flags,
		  uint64_t samples, uint64_t sample_ns, uint64_t off_ns, uint64_t off_n)
{
	struct psamp *s = x->s;
	struct stack_info *si;
	uint32_t pt = 0, li = UINT32_MAX;
	int kernel = (flags & CYGPROF_SAMPLE_KERNEL) != 0;
	int err;

	if (thread_idx != CYGPROF_NONE && thread_idx < x->nthread_of)
		pt = x->thread_of[thread_idx];
	if (!pt && !x->all_threads)
		return 0;
	add(&s->total, samples, sample_ns, off_ns, off_n);
	if (kernel)
		s->kernel_samples++;
	if (flags & CYGPROF_SAMPLE_IMPORTED)
		s->imported++;
	err = stack_info(x, stack, &si);
	if (err)
		return err;
	if (!si) {
		s->unplaced += samples + off_n;
		return 0;
	}
	if (si->overhead) {
		add(&s->overhead, samples, sample_ns, off_ns, off_n);
		return 0;
	}
	if (si->inst != PROFILE_NONE)
		add(&s->fn[si->inst], samples, sample_ns, off_ns, off_n);
	if (samples) {
		x->nmark++;
		for (uint32_t k = 0; k < si->npath; k++) {
			uint32_t fi = si->path[k];
			if (x->mark[fi] == x->nmark)
				continue;
			x->mark[fi] = x->nmark;
			s->fn[fi].incl_samples += samples;
			s->fn[fi].incl_ns += sample_ns;
		}
	}
	if (si->leaf) {
		if (samples)
			s->uninstr_samples += samples;
		err = leaf_of(x, si, kernel, &li);
		if (err)
			return err;
		add(&s->leaf[li].cost, samples, sample_ns, off_ns, off_n);
	}
	if (pt && s->node[pt - 1]) {
		uint32_t nd = node_of(&x->p->threads[pt - 1], si);
		if (nd != PROFILE_NONE) {
			add(&s->node[pt - 1][nd], samples, sample_ns, off_ns, off_n);
			if (li != UINT32_MAX) {
				struct psamp_path_leaf *e = path_leaf(s, pt - 1, nd, li);
				if (!e)
					return -ENOMEM;
				add(&e->cost, samples, sample_ns, off_ns, off_n);
			}
		} else if (si->inst != PROFILE_NONE)
			s->unplaced += samples + off_n;
	}
	return 0;
}

static int cost_cmp(const struct psamp_cost *x, const struct psamp_cost *y)
{
	uint64_t tx = x->sample_ns + x->offcpu_ns, ty = y->sample_ns + y->offcpu_ns;

	return tx != ty ? (tx > ty ? -1 : 1) : 0;
}

static int leaf_cmp(const void *a, const void *b)
{
	const struct psamp_leaf *x = a, *y = b;
	int c = cost_cmp(&x->cost, &y->cost);

	if (c)
		return c;
	if (x->caller != y->caller)
		return x->caller < y->caller ? -1 : 1;
	if (x->kernel != y->kernel)
		return x->kernel - y->kernel;
	return strcmp(x->name, y->name);
}

static int path_leaf_cmp(const void *a, const void *b)
{
	const struct psamp_path_leaf *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	int c = cost_cmp(&x->cost, &y->cost);
	if (c)
		return c;
	return x->leaf < y->leaf ? -1 : x->leaf > y->leaf;
}

/* Sort the leaves heaviest first, renumber the path leaves' references to
 * them, and order the path leaves by thread, node, then heaviest first. */
static int sort_leaves(struct psamp *s)
{
	struct { struct psamp_leaf l; uint32_t old; } *t;
	uint32_t *newidx;
	size_t i;

	if (!s->nleaf)
		return 0;
	t = malloc(s->nleaf * sizeof *t);
	newidx = malloc(s->nleaf * sizeof *newidx);
	if (!t || !newidx) {
		free(t);
		free(newidx);
		return -ENOMEM;
	}
	for (i = 0; i < s->nleaf; i++) {
		t[i].l = s->leaf[i];
		t[i].old = (uint32_t)i;
	}
	/* the leaf is the first member: leaf_cmp sorts t */
	qsort(t, s->nleaf, sizeof *t, leaf_cmp);
	for (i = 0; i < s->nleaf; i++) {
		s->leaf[i] = t[i].l;
		newidx[t[i].old] = (uint32_t)i;
	}
	for (i = 0; i < s->npath_leaf; i++)
		s->path_leaf[i].leaf = newidx[s->path_leaf[i].leaf];
	if (s->npath_leaf)
		qsort(s->path_leaf, s->npath_leaf, sizeof *s->path_leaf, path_leaf_cmp);
	free(t);
	free(newidx);
	hindex_release(&s->pl_index);
	return 0;
}

void psamp_free(struct psamp *s)
{
	if (!s)
		return;
	if (s->node)
		for (size_t i = 0; i < s->nthreads; i++)
			free(s->node[i]);
	free(s->node);
	free(s->fn);
	free(s->leaf);
	free(s->path_leaf);
	hindex_release(&s->pl_index);
	free(s);
}

int psamp_load(struct view *v, const struct profile *p, int all_threads, struct psamp **out)
{
	const struct cygprof_psample *ps;
	const struct cygprof_offcpu *oc;
	const struct cygprof_stack_node *st;
	const struct cygprof_thread *th;
	struct ctx x;
	size_t nps, noc, nth, i;
	int err;

	*out = NULL;
	err = view_psamples(v, &ps, &nps);
	if (!err)
		err = view_offcpu(v, &oc, &noc);
	if (err)
		return err;
	if (!nps && !noc)
		return 0;
	memset(&x, 0, sizeof x);
	err = view_stash(v, &st, &x.nst);
	if (!err)
		err = view_threads(v, &th, &nth);
	if (err)
		return err;
	x.v = v;
	x.p = p;
	x.all_threads = all_threads;
	x.s = calloc(1, sizeof *x.s);
	x.si = calloc(x.nst ? x.nst : 1, sizeof *x.si);
	x.nthread_of = nth;
	x.thread_of = calloc(nth ? nth : 1, sizeof *x.thread_of);
	x.mark = calloc(p->nfns ? p->nfns : 1, sizeof *x.mark);
	err = -ENOMEM;
	if (!x.s || !x.si || !x.thread_of || !x.mark)
		goto out;
	x.s->fn = calloc(p->nfns ? p->nfns : 1, sizeof *x.s->fn);
	x.s->node = calloc(p->nthreads ? p->nthreads : 1, sizeof *x.s->node);
	if (!x.s->fn || !x.s->node)
		goto out;
	x.s->nthreads = p->nthreads;
	for (i = 0; i < p->nthreads; i++) {
		const struct profile_thread *t = &p->threads[i];
		if (t->info.idx < nth)
			x.thread_of[t->info.idx] = (uint32_t)i + 1;
		if (t->n && !(x.s->node[i] = calloc(t->n, sizeof **x.s->node)))
			goto out;
	}
	err = 0;
	for (i = 0; i < nps && !err; i++) {
		err = charge(&x, ps[i].thread_idx, ps[i].stack, ps[i].flags, 1, ps[i].weight_ns, 0,
			     0);
	}
	for (i = 0; i < noc && !err; i++)
		err = charge(&x, oc[i].thread_idx, oc[i].stack, 0, 0, 0, oc[i].end_ns - oc[i].start_ns,
			     1);
	if (!err)
		err = sort_leaves(x.s);
out:
	if (x.si)
		for (i = 0; i < x.nst; i++)
			free(x.si[i].path);
	free(x.si);
	free(x.mark);
	free(x.thread_of);
	if (err) {
		psamp_free(x.s);
		return err;
	}
	*out = x.s;
	return 0;
}
