/* SPDX-License-Identifier: MIT */
/* stack-stash.c - a stack stash being written (stack-stash.h): nodes found
 * again by (parent, process, kind, address) through common/'s index. */
#include "stack-stash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

void stack_stash_init(struct stack_stash *s, uint32_t base)
{
	memset(s, 0, sizeof(*s));
	s->base = base;
}

void stack_stash_release(struct stack_stash *s)
{
	free(s->v);
	hindex_release(&s->index);
	stack_stash_init(s, s->base);
}

static uint64_t node_hash(const struct cygprof_stack_node *k)
{
	return hash_pair((uint64_t)k->parent << 32 | k->proc_idx, k->addr ^ k->kind);
}

static int node_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct cygprof_stack_node *v = &((const struct stack_stash *)ctx)->v[i], *k = key;

	return v->parent == k->parent && v->proc_idx == k->proc_idx && v->kind == k->kind &&
	       v->addr == k->addr;
}

static uint64_t node_hash_at(const void *ctx, uint32_t i)
{
	return node_hash(&((const struct stack_stash *)ctx)->v[i]);
}

static uint32_t fail(int *err, int e, uint32_t parent)
{
	if (!*err)
		*err = e;
	return parent;
}

uint32_t stack_stash_intern(struct stack_stash *s, int *err, uint32_t parent, uint32_t proc,
			    uint32_t kind, uint64_t addr)
{
	struct cygprof_stack_node k = {.parent = parent, .proc_idx = proc, .kind = kind,
				       .addr = addr};
	uint64_t h = node_hash(&k);
	long i = hindex_find(&s->index, h, node_eq, s, &k);

	if (i >= 0)
		return s->v[i].id;
	if ((uint64_t)s->base + s->n >= UINT32_MAX)
		return fail(err, -EOVERFLOW, parent);
	if (ARRAY_GROW(s->v, s->cap, s->n + 1) || hindex_add(&s->index, h, node_hash_at, s))
		return fail(err, -ENOMEM, parent);
	k.id = s->base + (uint32_t)s->n + 1;
	s->v[s->n++] = k;
	return k.id;
}

uint32_t stack_stash_chain(struct stack_stash *s, int *err, uint32_t proc, const uint64_t *f,
			   size_t n)
{
	uint32_t id = 0;

	for (size_t i = n; i-- > 0;)
		id = stack_stash_intern(s, err, id, proc, i ? CYGPROF_FRAME_RA : CYGPROF_FRAME_IP,
					f[i]);
	return id;
}

const struct cygprof_stack_node *stack_stash_get(const struct stack_stash *s, uint32_t id)
{
	return id > s->base && id - s->base - 1 < s->n ? &s->v[id - s->base - 1] : NULL;
}

int stack_stash_store(struct stack_stash *s, struct cygprof_capture *cap)
{
	int err = 0;

	if (s->n > s->stored)
		err = cygprof_capture_put_stacks(cap, s->v + s->stored, s->n - s->stored);
	s->stored = s->n;
	return err;
}
