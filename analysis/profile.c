/* SPDX-License-Identifier: MIT */
/* profile.c - merge calling-context trees into a by-name function table,
 * caller->callee arcs and named per-thread trees (pure, no capture access). */
#define _GNU_SOURCE /* qsort_r */
#include "profile.h"
#include "inclusive.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct profile *profile_new(void)
{
	return calloc(1, sizeof(struct profile));
}

void profile_free(struct profile *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nfns; i++)
		free(p->fns[i].name);
	for (i = 0; i < p->nthreads; i++)
		free(p->threads[i].nodes);
	free(p->fns);
	free(p->arcs);
	free(p->threads);
	hindex_release(&p->fn_index);
	hindex_release(&p->arc_index);
	free(p);
}

#define FN_NAMES(p) ((struct name_array){(p)->fns, sizeof(*(p)->fns), offsetof(struct profile_fn, name)})

/* The arcs, keyed by (caller, callee), for arc_index. */
#define ARCS(p) HINDEX_PAIRS((p)->arcs, struct profile_arc, caller, callee)

long profile_find(const struct profile *p, const char *name)
{
	return name_index_find(&p->fn_index, FN_NAMES(p), name);
}

long profile_intern(struct profile *p, const char *name)
{
	void *base = p->fns;
	long i = name_intern(&p->fn_index, &base, &p->nfns, &p->fns_cap, sizeof(*p->fns),
			     offsetof(struct profile_fn, name), name);

	p->fns = base;
	return i;
}

const struct profile_arc *profile_find_arc(const struct profile *p, uint32_t caller,
					   uint32_t callee)
{
	long i = hindex_find_pair(&p->arc_index, ARCS(p), caller, callee);

	return i < 0 ? NULL : &p->arcs[i];
}

static long arc_intern(struct profile *p, uint32_t caller, uint32_t callee)
{
	long i = hindex_find_pair(&p->arc_index, ARCS(p), caller, callee);

	if (i >= 0)
		return i;
	if (ARRAY_GROW(p->arcs, p->arcs_cap, p->narcs + 1) ||
	    hindex_add_pair(&p->arc_index, ARCS(p), caller, callee))
		return -ENOMEM;
	p->arcs[p->narcs] = (struct profile_arc){.caller = caller, .callee = callee};
	return (long)p->narcs++;
}

static int add_thread(struct profile *p, const struct profile_thread_info *info,
		      struct profile_tnode *nodes, size_t n)
{
	struct profile_thread *th;

	if (ARRAY_GROW(p->threads, p->threads_cap, p->nthreads + 1))
		return -ENOMEM;
	th = &p->threads[p->nthreads++];
	memset(th, 0, sizeof(*th));
	if (info)
		th->info = *info;
	th->nodes = nodes;
	th->n = n;
	return 0;
}

int profile_self_times(const struct cygprof_node *nodes, size_t n, uint64_t *self,
		       uint64_t *total)
{
	size_t i;

	if (total)
		*total = 0;
	if (n == 0)
		return 0;
	for (i = 1; i < n; i++)
		if (nodes[i].parent >= i)
			return -EINVAL;
	/* children's sums first (into self), then each node's difference */
	memset(self, 0, n * sizeof(*self));
	for (i = 1; i < n; i++)
		self[nodes[i].parent] += nodes[i].total_ns;
	if (total)
		*total = self[0];
	for (i = 0; i < n; i++)
		self[i] = nodes[i].total_ns > self[i] ? nodes[i].total_ns - self[i] : 0;
	return 0;
}

int profile_compensate(struct cygprof_node *nodes, size_t n, const struct profile_overhead *o,
		       double *cut, uint64_t *clamped)
{
	uint64_t *desc, *kids, nclamped = 0;
	size_t i;

	if (clamped)
		*clamped = 0;
	if (n == 0)
		return 0;
	for (i = 1; i < n; i++)
		if (nodes[i].parent >= i)
			return -EINVAL;
	desc = calloc(n, sizeof *desc);
	kids = calloc(n, sizeof *kids);
	if (!desc || !kids) {
		free(desc);
		free(kids);
		return -ENOMEM;
	}
	/* Children come after their parents: walking backwards, a node's
	 * children are done when it comes, their calls summed in desc and
	 * their compensated totals in kids. */
	for (i = n - 1; i >= 1; i--) {
		struct cygprof_node *nd = &nodes[i];
		double c = (double)nd->calls * o->in_ns + (double)desc[i] * o->full_ns;
		double t = (double)nd->total_ns - c;
		uint64_t comp;

		if (t < (double)kids[i]) {
			/* the hooks' cost exceeds what was measured here: no
			 * less than the children, no self time below 0 */
			comp = kids[i];
			nclamped++;
		} else {
			comp = (uint64_t)(t + 0.5);
		}
		if (cut)
			cut[i] = nd->calls && nd->total_ns > comp
					 ? (double)(nd->total_ns - comp) / (double)nd->calls
					 : 0;
		nd->total_ns = comp;
		desc[nd->parent] += desc[i] + nd->calls;
		kids[nd->parent] += comp;
	}
	if (cut)
		cut[0] = 0;
	nodes[0].total_ns = kids[0];
	free(desc);
	free(kids);
	if (clamped)
		*clamped = nclamped;
	return 0;
}

int profile_add_tree_idx(struct profile *p, const struct profile_thread_info *info,
			 const struct cygprof_node *nodes, const uint32_t *fnidx, size_t n)
{
	return profile_add_tree_self(p, info, nodes, fnidx, NULL, n);
}

int profile_add_tree_self(struct profile *p, const struct profile_thread_info *info,
			  const struct cygprof_node *nodes, const uint32_t *fnidx,
			  const uint64_t *self, size_t n)
{
	struct profile_tnode *t = NULL;
	uint64_t *own = NULL, total = 0;
	uint32_t *top = NULL, *arcid = NULL;
	size_t i;
	int err = -ENOMEM;

	if (n == 0)
		return add_thread(p, info, NULL, 0);
	if (n > UINT32_MAX - 1)
		return -EINVAL;
	for (i = 1; i < n; i++)
		if (nodes[i].parent >= i || fnidx[i] >= p->nfns)
			return -EINVAL;

	t = calloc(n, sizeof(*t));
	top = malloc(n * sizeof(*top));
	arcid = malloc(n * sizeof(*arcid));
	if (!self)
		self = own = malloc(n * sizeof(*own));
	if (!t || !top || !arcid || !self)
		goto out;
	if (own)
		profile_self_times(nodes, n, own, NULL);

	for (i = 0; i < n; i++) {
		t[i].parent = i ? nodes[i].parent : PROFILE_NONE;
		t[i].fn = i ? fnidx[i] : PROFILE_NONE;
		t[i].first_child = PROFILE_NONE;
		t[i].next_sibling = PROFILE_NONE;
		t[i].depth = i ? t[t[i].parent].depth + 1 : 0;
		t[i].site = nodes[i].site;
		t[i].calls = nodes[i].calls;
		t[i].total_ns = nodes[i].total_ns;
		t[i].self_ns = self[i];
		if (i && !nodes[i].parent)
			total += nodes[i].total_ns;
	}
	/* children lists in array order: prepend walking backwards */
	for (i = n - 1; i >= 1; i--) {
		t[i].next_sibling = t[t[i].parent].first_child;
		t[t[i].parent].first_child = (uint32_t)i;
	}

	err = incl_tops(nodes, n, fnidx, (uint32_t)p->nfns, top);
	if (err)
		goto out;

	/* Ancestors precede descendants, so a node's top is done before it. */
	arcid[0] = PROFILE_NONE;
	for (i = 1; i < n; i++) {
		struct profile_tnode *nd = &t[i];
		uint32_t f = nd->fn, pf = t[nd->parent].fn;
		struct profile_fn *fn = &p->fns[f];
		long a;

		arcid[i] = PROFILE_NONE;
		fn->calls += nd->calls;
		fn->self_ns += nd->self_ns;
		p->total_self_ns += nd->self_ns;
		if (top[i] == i)
			fn->total_ns += nd->total_ns;
		if (pf == PROFILE_NONE) {
			fn->root_calls += nd->calls;
		} else {
			a = arc_intern(p, pf, f);
			if (a < 0) {
				err = (int)a;
				goto out;
			}
			p->arcs[a].calls += nd->calls;
			if (pf == f) {
				p->fns[f].rec_calls += nd->calls;
			} else if (top[i] == i) {
				p->arcs[a].total_ns += nd->total_ns;
				arcid[i] = (uint32_t)a;
			}
		}
		if (arcid[top[i]] != PROFILE_NONE)
			p->arcs[arcid[top[i]]].self_ns += nd->self_ns;
	}
	for (i = 0; i < p->narcs; i++) {
		struct profile_arc *a = &p->arcs[i];

		a->children_ns = a->total_ns > a->self_ns ? a->total_ns - a->self_ns : 0;
	}

	err = add_thread(p, info, t, n);
	if (err)
		goto out;
	p->threads[p->nthreads - 1].total_ns = total;
	t = NULL;
out:
	free(t);
	free(own);
	free(top);
	free(arcid);
	return err;
}

int profile_add_tree(struct profile *p, const struct profile_thread_info *info,
		     const struct cygprof_node *nodes, const char *const *names, size_t n)
{
	uint32_t *idx;
	size_t i;
	int err;

	if (n == 0)
		return profile_add_tree_idx(p, info, nodes, NULL, 0);
	idx = calloc(n, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (i = 1; i < n; i++) {
		long f = profile_intern(p, names[i] ? names[i] : "?");

		if (f < 0) {
			free(idx);
			return (int)f;
		}
		idx[i] = (uint32_t)f;
	}
	err = profile_add_tree_idx(p, info, nodes, idx, n);
	free(idx);
	return err;
}

/* ---- ranked trees ------------------------------------------------------------ */

struct child_order {
	const struct profile *p;
	const struct profile_tnode *t;
	enum profile_order key;
};

static int cmp_child(const void *pa, const void *pb, void *arg)
{
	const struct child_order *o = arg;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	const struct profile_tnode *x = &o->t[a], *y = &o->t[b];
	uint64_t u = 0, v = 0;
	int c;

	switch (o->key) {
	case PROFILE_BY_TOTAL:
		u = x->total_ns, v = y->total_ns;
		break;
	case PROFILE_BY_SELF:
		u = x->self_ns, v = y->self_ns;
		break;
	case PROFILE_BY_CALLS:
		u = x->calls, v = y->calls;
		break;
	case PROFILE_BY_NAME:
		c = strcmp(o->p->fns[x->fn].name, o->p->fns[y->fn].name);
		if (c)
			return c;
		break;
	}
	if (u != v)
		return u > v ? -1 : 1;
	return a < b ? -1 : a > b;
}

int profile_sort_children(struct profile *p, enum profile_order key)
{
	struct child_order o = { .p = p, .key = key };
	uint32_t *kids = NULL;
	size_t cap = 0;

	for (size_t ti = 0; ti < p->nthreads; ti++) {
		struct profile_tnode *t = p->threads[ti].nodes;

		o.t = t;
		for (size_t i = 0; i < p->threads[ti].n; i++) {
			size_t k = 0;

			for (uint32_t c = t[i].first_child; c != PROFILE_NONE; c = t[c].next_sibling) {
				if (k == cap) {
					size_t n = cap ? cap * 2 : 64;
					uint32_t *nk = realloc(kids, n * sizeof(*nk));
					if (!nk) {
						free(kids);
						return -ENOMEM;
					}
					kids = nk;
					cap = n;
				}
				kids[k++] = c;
			}
			if (k < 2)
				continue;
			qsort_r(kids, k, sizeof(*kids), cmp_child, &o);
			t[i].first_child = kids[0];
			for (size_t j = 0; j + 1 < k; j++)
				t[kids[j]].next_sibling = kids[j + 1];
			t[kids[k - 1]].next_sibling = PROFILE_NONE;
		}
	}
	free(kids);
	return 0;
}
