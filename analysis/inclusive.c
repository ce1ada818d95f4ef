/* SPDX-License-Identifier: MIT */
/* inclusive.c - inclusive times counted once (the rule is in inclusive.h):
 * one walk down a tree keeping, per key, the innermost node of the path
 * that has an entry of that key. */
#include "inclusive.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int incl_nearest(const struct cygprof_node *nodes, size_t n, const uint32_t *enode,
		 const uint32_t *ekey, size_t ne, uint32_t nkeys, uint32_t *near, uint32_t *via)
{
	uint32_t *first = NULL, *next = NULL, *depth = NULL, *path = NULL, *stack = NULL;
	uint32_t *start = NULL, *order = NULL, *inner = NULL, *saved = NULL;
	uint8_t *done = NULL, *set = NULL;
	size_t i, sp = 0;
	int err = -ENOMEM;

	for (i = 0; i < ne; i++)
		near[i] = INCL_NONE;
	if (via)
		for (i = 0; i < ne; i++)
			via[i] = INCL_NONE;
	if (n == 0)
		return ne ? -EINVAL : 0;
	if (n > UINT32_MAX - 1 || (!enode && ne != n))
		return -EINVAL;
	for (i = 1; i < n; i++)
		if (nodes[i].parent >= i)
			return -EINVAL;
	for (i = 0; enode && i < ne; i++)
		if (enode[i] >= n)
			return -EINVAL;

	first = malloc(n * sizeof(*first));
	next = malloc(n * sizeof(*next));
	depth = malloc(n * sizeof(*depth));
	path = malloc(n * sizeof(*path));
	stack = malloc(n * sizeof(*stack));
	start = calloc(n + 1, sizeof(*start));
	order = malloc((ne ? ne : 1) * sizeof(*order));
	inner = malloc((nkeys ? nkeys : 1) * sizeof(*inner));
	saved = malloc((ne ? ne : 1) * sizeof(*saved));
	set = calloc(ne ? ne : 1, 1);
	done = calloc(n, 1);
	if (!first || !next || !depth || !path || !stack || !start || !order || !inner || !saved ||
	    !set || !done)
		goto out;
	for (i = 0; i < nkeys; i++)
		inner[i] = INCL_NONE;
	/* the entries grouped by node (a counting sort keeping their order) */
	for (i = 0; i < ne; i++)
		start[(enode ? enode[i] : i) + 1]++;
	for (i = 0; i < n; i++)
		start[i + 1] += start[i];
	for (i = 0; i < ne; i++)
		order[start[enode ? enode[i] : i]++] = (uint32_t)i;
	for (i = n; i > 0; i--)
		start[i] = start[i - 1];
	start[0] = 0;
	/* children in array order, depths */
	for (i = 0; i < n; i++)
		first[i] = next[i] = INCL_NONE;
	depth[0] = 0;
	for (i = n - 1; i >= 1; i--) {
		uint32_t p = nodes[i].parent;

		next[i] = first[p];
		first[p] = (uint32_t)i;
	}
	for (i = 1; i < n; i++)
		depth[i] = depth[nodes[i].parent] + 1;

	stack[sp++] = 0;
	while (sp) {
		uint32_t x = stack[sp - 1], e, k, c;
		size_t j;

		if (!done[x]) { /* enter: the entries' nearest, then x becomes the innermost */
			done[x] = 1;
			path[depth[x]] = x;
			for (j = start[x]; x && j < start[x + 1]; j++) {
				e = order[j];
				k = ekey[e];
				if (k >= nkeys || inner[k] == INCL_NONE)
					continue;
				near[e] = inner[k];
				if (via)
					via[e] = path[depth[inner[k]] + 1];
			}
			for (j = start[x]; x && j < start[x + 1]; j++) {
				e = order[j];
				k = ekey[e];
				if (k >= nkeys || inner[k] == x)
					continue;
				saved[e] = inner[k];
				set[e] = 1;
				inner[k] = x;
			}
			/* children pushed last first: visited in array order */
			for (c = first[x]; c != INCL_NONE; c = next[c])
				sp++;
			j = sp;
			for (c = first[x]; c != INCL_NONE; c = next[c])
				stack[--j] = c;
		} else { /* leave: the outer nodes become the innermost again */
			sp--;
			for (j = start[x + 1]; j > start[x]; j--) {
				e = order[j - 1];
				if (set[e])
					inner[ekey[e]] = saved[e];
			}
		}
	}
	err = 0;
out:
	free(first);
	free(next);
	free(depth);
	free(path);
	free(stack);
	free(start);
	free(order);
	free(inner);
	free(saved);
	free(set);
	free(done);
	return err;
}

int incl_tops(const struct cygprof_node *nodes, size_t n, const uint32_t *key, uint32_t nkeys,
	      uint32_t *top)
{
	int err = incl_nearest(nodes, n, NULL, key, n, nkeys, top, NULL);
	size_t i;

	if (err)
		return err;
	/* an ancestor precedes its descendants: its top is known */
	for (i = 0; i < n; i++)
		top[i] = top[i] == INCL_NONE ? (uint32_t)i : top[top[i]];
	return 0;
}

int incl_outer(const struct cygprof_node *nodes, size_t n, const uint32_t *enode,
	       const uint32_t *ekey, size_t ne, uint32_t nkeys, uint8_t *outer)
{
	uint32_t *near = malloc((ne ? ne : 1) * sizeof(*near));
	size_t i;
	int err;

	if (!near)
		return -ENOMEM;
	err = incl_nearest(nodes, n, enode, ekey, ne, nkeys, near, NULL);
	for (i = 0; !err && i < ne; i++)
		outer[i] = near[i] == INCL_NONE;
	free(near);
	return err;
}
