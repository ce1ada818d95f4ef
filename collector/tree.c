/* SPDX-License-Identifier: MIT */
/* tree.c - raw call-tree nodes (gids in the mapping) onto the capture's
 * per-thread trees, with the filters (-F, -N, -D) applied. */
#include <string.h>

#include "collector-private.h"

static uint32_t fnode_intern(struct cthread *ct, uint32_t parent, uint64_t fn, uint64_t site)
{
	uint64_t key = hash3(parent, fn, 0), v;

	/* Linear probing on the key space: keys are hashes; verify and step. */
	for (;;) {
		if (!hmap_get(&ct->bykey, key, &v))
			break;
		struct fnode *f = &ct->nodes[v];
		if (f->parent == parent && f->fn == fn)
			return (uint32_t)v;
		key = hash_next(key);
	}
	if (ARRAY_GROW(ct->nodes, ct->cap, ct->n + 1))
		return GID_DROP;
	if (hmap_put(&ct->bykey, key, ct->n))
		return GID_DROP;
	struct fnode *f = &ct->nodes[ct->n];
	memset(f, 0, sizeof *f);
	f->parent = parent;
	f->fn = fn;
	f->site = site;
	f->depth = parent == GID_DROP ? 0 : ct->nodes[parent].depth + 1;
	return (uint32_t)ct->n++;
}

/* The value kept per gid: bits 0-31 the capture-tree index of the node if
 * kept, else of the kept ancestor its children attach to; KEPT_BIT;
 * SCOPE_BIT (inside a -F function); BAD_BIT (rejected: the node or its path
 * to the root cannot be right). */
uint64_t cthread_root(struct collector *c, struct cthread *ct)
{
	uint64_t v;

	(void)c;
	if (hmap_get(&ct->bygid, ct->root, &v))
		return v;
	v = fnode_intern(ct, GID_DROP, 0, 0) | KEPT_BIT;
	hmap_put(&ct->bygid, ct->root, v);
	return v;
}

/* hits when one of its n patterns has named no function yet, else NULL:
 * then only the filters' own matching is done. */
static unsigned char *unhit(unsigned char *hits, size_t n)
{
	for (size_t i = 0; hits && i < n; i++)
		if (!hits[i])
			return hits;
	return NULL;
}

/* Decide one raw node (function fn, call site site) whose parent is decided
 * (value pv). */
uint64_t cthread_decide(struct collector *c, struct cthread *ct, uint64_t fn, uint64_t site,
			uint64_t pv)
{
	uint32_t attach = (uint32_t)pv;
	int in_scope = !!(pv & SCOPE_BIT), keep = 1;

	if (pv & BAD_BIT)
		return BAD_BIT;
	if (c->filtering) {
		const char *raw = NULL;
		if (c->o->n_only || c->o->n_except) {
			if (ct->proc)
				collector_proc_maps(c, ct->proc);
			raw = collector_fn_name(c, ct->proc, fn, NULL, NULL, NULL, NULL);
		}
		/* while a pattern has named nothing yet (record's warning),
		 * every name is matched, once per call path, in scope or not */
		unsigned char *oh = unhit(c->o->only_hit, c->o->n_only);
		unsigned char *eh = unhit(c->o->except_hit, c->o->n_except);
		if (c->o->n_only && (!in_scope || oh) &&
		    collector_name_matches(c->o->only, c->o->n_only, raw, oh))
			in_scope = 1;
		if (c->o->n_only && !in_scope)
			keep = 0;
		if (c->o->n_except && (keep || eh) &&
		    collector_name_matches(c->o->except, c->o->n_except, raw, eh))
			keep = 0;
		if (keep && c->o->max_depth && ct->nodes[attach].depth + 1 > c->o->max_depth)
			keep = 0;
	}
	if (keep) {
		uint32_t idx = fnode_intern(ct, attach, fn, site);
		if (idx != GID_DROP)
			return idx | KEPT_BIT | (in_scope ? SCOPE_BIT : 0);
	}
	return attach | (in_scope ? SCOPE_BIT : 0);
}

/* Walk up from gid to a node already decided (or the root), then decide
 * down.  Parents are in the mapping before any child is published, and a
 * parent's gid is smaller than its child's: the walk ends, within
 * CYG_DEPTH_MAX steps or it is rejected.  Iterative (paths can be 2^24
 * deep). */
uint32_t cthread_resolve(struct collector *c, struct cthread *ct, uint32_t gid)
{
	size_t depth = 0;
	uint64_t v;
	uint32_t g = gid;
	int bad = 0;

	if (hmap_get(&ct->bygid, gid, &v))
		return decision_idx(v);
	for (;;) {
		if (hmap_get(&ct->bygid, g, &v))
			break;
		if (g == ct->root) {
			v = cthread_root(c, ct);
			break;
		}
		if (!gid_ok(c, ct, g) || depth > CYG_DEPTH_MAX) {
			bad = 1;
			break;
		}
		if (ARRAY_GROW(c->walk, c->walk_cap, depth + 1))
			return GID_DROP;
		c->walk[depth++] = g;
		uint32_t parent = RD(shm_node(c, g)->parent);
		if (parent >= g) {
			bad = 1;
			break;
		}
		g = parent;
	}
	if (bad || (v & BAD_BIT)) {
		/* Remembered, so the same gids are rejected at once next time. */
		while (depth)
			hmap_put(&ct->bygid, c->walk[--depth], BAD_BIT);
		hmap_put(&ct->bygid, gid, BAD_BIT);
		return GID_BAD;
	}
	while (depth) {
		g = c->walk[--depth];
		struct cyg_node *n = shm_node(c, g);
		v = cthread_decide(c, ct, RD(n->fn), RD(n->site), v);
		hmap_put(&ct->bygid, g, v);
	}
	return decision_idx(v);
}
