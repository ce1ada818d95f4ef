/* SPDX-License-Identifier: MIT */
/* pathtree.c - call paths merged into one tree (pathtree.h), found again by
 * (parent, function) through common/'s index. */
#include "pathtree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

/* The nodes, keyed by (parent, fn), for t->index. */
#define NODES(t) HINDEX_PAIRS((t)->n, struct pathtree_node, parent, fn)

long pathtree_push(struct pathtree *t, uint32_t parent, uint32_t fn)
{
	struct pathtree_node *nd;

	if (t->len >= UINT32_MAX || ARRAY_GROW(t->n, t->cap, t->len + 1))
		return -ENOMEM;
	nd = &t->n[t->len];
	memset(nd, 0, sizeof(*nd));
	nd->parent = parent;
	nd->fn = fn;
	nd->depth = parent < t->len ? t->n[parent].depth + 1 : 0;
	return (long)t->len++;
}

int pathtree_init(struct pathtree *t)
{
	memset(t, 0, sizeof(*t));
	/* the root is indexed too (no node has the parent PROFILE_NONE), so
	 * that index and nodes count alike */
	return pathtree_child(t, PROFILE_NONE, PROFILE_NONE) < 0 ? -ENOMEM : 0;
}

long pathtree_child(struct pathtree *t, uint32_t parent, uint32_t fn)
{
	long i = hindex_find_pair(&t->index, NODES(t), parent, fn);

	if (i >= 0)
		return i;
	if (ARRAY_GROW(t->n, t->cap, t->len + 1) || hindex_add_pair(&t->index, NODES(t), parent, fn))
		return -ENOMEM;
	return pathtree_push(t, parent, fn);
}

int pathtree_add_thread(struct pathtree *t, const struct profile_thread *th,
			const uint32_t *fnmap, uint32_t *at)
{
	uint32_t *own = NULL, *map = at;
	size_t j;

	if (!th->n)
		return 0;
	if (!map && !(map = own = malloc(th->n * sizeof(*map))))
		return -ENOMEM;
	map[0] = 0;
	for (j = 1; j < th->n; j++) {
		const struct profile_tnode *nd = &th->nodes[j];
		long k = pathtree_child(t, map[nd->parent], fnmap ? fnmap[nd->fn] : nd->fn);

		if (k < 0) {
			free(own);
			return -ENOMEM;
		}
		map[j] = (uint32_t)k;
		t->n[k].calls += nd->calls;
		t->n[k].total_ns += nd->total_ns;
		t->n[k].self_ns += nd->self_ns;
	}
	t->n[0].total_ns += th->total_ns;
	free(own);
	return 0;
}

int pathtree_build(struct pathtree *t, const struct profile *p)
{
	size_t i;
	int err = pathtree_init(t);

	for (i = 0; i < p->nthreads && !err; i++)
		err = pathtree_add_thread(t, &p->threads[i], NULL, NULL);
	if (err)
		pathtree_release(t);
	return err;
}

void pathtree_release(struct pathtree *t)
{
	free(t->n);
	hindex_release(&t->index);
	memset(t, 0, sizeof(*t));
}
