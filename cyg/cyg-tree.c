/* SPDX-License-Identifier: MIT */
/* cyg-tree.c - the calling-context tree of a writer: its nodes, the child
 * table that finds a node's child for a function, and the calls made from
 * other call sites than a node's first.
 *
 * Each writer owns its tree (nodes from chunks of its own, no lock); the
 * collector reads it while the program runs, so a node is published fully
 * built with a release store of its parent's first_child.  The child table
 * ((parent, fn) -> child, open addressing) and the index of call sites
 * are the writer's own, in the mapping; they double past half full and
 * the old ones are left there.  Runs inside the traced program, on the
 * hooks' cold paths.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "cyg-cold.h"

/* ---- nodes ------------------------------------------------------------- */

/* Allocate a tree node for thread t (no lock: the thread owns its chunk):
 * a slot of CYG_NODE_SLOT bytes, the node, its ext and histogram, zeroed. */
struct cyg_node *cyg__node_alloc(struct cyg_thread *t)
{
	if (UNLIKELY(t->chunk_next + CYG_NODE_SLOT > t->chunk_end)) {
		uint64_t size = t->chunk_size ? t->chunk_size * 2 : CYG_CHUNK_MIN;
		uint64_t off;
		if (size > CYG_CHUNK_MAX)
			size = CYG_CHUNK_MAX;
		off = cyg__area_alloc(size);
		if (!off)
			return NULL;
		t->chunk_size = size;
		t->chunk_next = off;
		t->chunk_end = off + size;
	}
	struct cyg_node *n = AT(t->chunk_next);
	t->chunk_next += CYG_NODE_SLOT;
	/* fresh from the mapping, unless a chunk was reused: its figures start
	 * at 0 either way (samples and off-CPU time are added, never set) */
	memset(CYG_NODE_EXT(n), 0, CYG_NODE_SLOT - CYG_NODE_SIZE); /* ext, histogram */
	return n;
}

/* ---- calls from other call sites --------------------------------------- */

static size_t site_slot(uint32_t node, uint64_t site, uint32_t mask)
{
	uint64_t h = (site ^ ((uint64_t)node << 29)) * 0x9E3779B97F4A7C15ULL;
	return (size_t)(h >> 40) & mask;
}

/* Index entry i; 0, or -1 when no slot is free: the index was written
 * over (it is never more than half full), and the entry stays out of it.
 * Every probe here ends after mask + 1 slots. */
static int sidx_put(uint32_t *ix, uint32_t mask, const struct cyg_site *v, uint32_t i)
{
	size_t j = site_slot(v[i].node, v[i].site, mask);
	for (uint64_t n = 0; ix[j]; n++, j = (j + 1) & mask)
		if (n > mask)
			return -1;
	ix[j] = i + 1;
	return 0;
}

static uint32_t other_site(struct cyg_thread *t, struct cyg_node *c, uint64_t site)
{
	uint32_t node = cyg_gid(c);
	struct cyg_site *v;
	uint32_t *ix;
	size_t j;

	if (!c->site) { /* a node copied at fork has none yet */
		c->site = site;
		return 0;
	}
	if (t->sites_off) {
		v = AT(t->sites_off);
		ix = AT(t->sidx_off);
		uint64_t n = 0;
		for (j = site_slot(node, site, t->sidx_mask); ix[j]; j = (j + 1) & t->sidx_mask) {
			/* an index entry is 1 + an entry made: another value, or
			 * an index with no free slot, was written over */
			if (ix[j] > t->sites_n || n++ > t->sidx_mask) {
				cyg__writer_bad(t, "call-site table");
				return 0;
			}
			struct cyg_site *s = &v[ix[j] - 1];
			if (s->node == node && s->site == site) {
				s->calls++;
				return ix[j];
			}
		}
	}
	/* A new (node, site): append it, growing the index past half full,
	 * and the entries with it (as many as the index has slots, at most
	 * CYG_SITES_MAX: reserving them all would take 32 MiB of the
	 * program's address space per thread).  The entries are copied, then
	 * published (release) before the count that names the new ones: the
	 * collector reads the count, then the offset. */
	int saved = errno;
	if (!t->sites_off || (t->sites_n + 1) * 2 > t->sidx_mask + 1) {
		uint32_t slots = t->sites_off ? (t->sidx_mask + 1) * 2 : 256;
		uint32_t cap = slots < CYG_SITES_MAX ? slots : CYG_SITES_MAX;
		uint64_t sites = t->sites_off, idx;
		if (!sites || cap > t->sidx_mask + 1) {
			sites = cyg__area_alloc((uint64_t)cap * sizeof(struct cyg_site));
			if (sites && t->sites_off)
				memcpy(AT(sites), AT(t->sites_off),
				       (uint64_t)t->sites_n * sizeof(struct cyg_site));
		}
		idx = cyg__area_alloc((uint64_t)slots * sizeof(uint32_t));
		if (!sites || !idx) {
			errno = saved;
			return 0; /* the mapping is full: counted at the node's first site */
		}
		__atomic_store_n(&t->sites_off, sites, __ATOMIC_RELEASE);
		v = AT(sites);
		ix = AT(idx);
		/* fresh from the mapping, where the program may have written */
		memset(ix, 0, (uint64_t)slots * sizeof(uint32_t));
		for (uint32_t i = 0; i < t->sites_n; i++)
			(void)sidx_put(ix, slots - 1, v, i);
		t->sidx_off = idx;
		t->sidx_mask = slots - 1;
	}
	errno = saved;
	if (t->sites_n >= CYG_SITES_MAX)
		return 0;
	v = AT(t->sites_off);
	uint32_t i = t->sites_n;
	v[i].node = node;
	v[i].site = site;
	v[i].calls = 1;
	v[i].ticks = 0;
	__atomic_store_n(&t->sites_n, i + 1, __ATOMIC_RELEASE);
	if (sidx_put(AT(t->sidx_off), t->sidx_mask, v, i)) {
		cyg__writer_bad(t, "call-site table");
		return 0;
	}
	return i + 1;
}

/* The entry of (c, site), remembered in c (site2, site2_ix) so that the
 * hooks count the next call from there themselves: a function that calls
 * another from two places (fib) then never comes here again. */
uint32_t cyg__other_site(struct cyg_thread *t, struct cyg_node *c, uint64_t site)
{
	uint32_t ix = other_site(t, c, site);

	if (ix) {
		c->site2 = site;
		c->site2_ix = ix;
	}
	return ix;
}

void cyg__enter_site(struct cyg_thread *t, struct cyg_node *c, uint64_t site, uint32_t d,
		     uint64_t now)
{
	struct cyg_frame *stk = cyg_tls.stk;

	if (UNLIKELY(!cyg__writer_ok(t)))
		return;

	stk[d].site = cyg__other_site(t, c, site);
	if (now) /* the callee's time starts after the lookup (cyg__enter_slow) */
		stk[d].ts = now = cyg_hook_now();
	t->depth = d;
	if (cyg_timeline)
		cyg_ring_put(t, CYG_EV_ENTER, stk[d].node, now);
	t->busy = 0;
}

void cyg__site_ticks(struct cyg_thread *t, const struct cyg_frame *f, uint64_t ticks)
{
	/* the frame's site is the mapping's: an entry made, or nothing */
	if (!t->sites_off || f->site > t->sites_n || f->site > cyg_sites_cap(t) ||
	    !cyg_span_ok(t->sites_off, (uint64_t)f->site * sizeof(struct cyg_site)))
		return;
	struct cyg_site *v = AT(t->sites_off);
	v[f->site - 1].ticks += ticks;
}

/* ---- the child table: (parent, fn) -> child, open addressing ------------ */

static size_t kid_slot(uint32_t parent, uint64_t fn, uint32_t mask)
{
	uint64_t h = (fn ^ ((uint64_t)parent << 32 | parent)) * 0x9E3779B97F4A7C15ULL;
	return (size_t)(h >> 40) & mask;
}

/* The probes of the table end after mask + 1 slots: it is never more
 * than half full unless the program wrote over it. */
struct cyg_node *cyg__kid_find(struct cyg_thread *t, uint32_t parent, uint64_t fn)
{
	if (!t->kids_off)
		return NULL;
	struct cyg_kid *k = AT(t->kids_off);
	size_t i = kid_slot(parent, fn, t->kids_mask);
	for (uint64_t n = 0; n <= t->kids_mask; n++, i = (i + 1) & t->kids_mask) {
		if (!k[i].child)
			return NULL;
		if (k[i].parent == parent && k[i].fn == fn) {
			struct cyg_node *c = CYG_NODE(cyg_base, k[i].child);
			return CYG_IN(c) ? c : NULL;
		}
	}
	return NULL;
}

static int kid_put(struct cyg_kid *k, uint32_t mask, uint32_t parent, uint64_t fn, uint32_t child)
{
	size_t i = kid_slot(parent, fn, mask);
	for (uint64_t n = 0; k[i].child; n++, i = (i + 1) & mask)
		if (n > mask)
			return -1;
	k[i].fn = fn;
	k[i].parent = parent;
	k[i].child = child;
	return 0;
}

/* Record a new child; the table doubles past half full (the old one is
 * left in the mapping).  Without room the sibling lists still work. */
static void kid_add(struct cyg_thread *t, uint32_t parent, uint64_t fn, uint32_t child)
{
	if (!t->kids_off || (t->kids_n + 1) * 2 > t->kids_mask + 1) {
		uint32_t slots = t->kids_off ? (t->kids_mask + 1) * 2 : 1024;
		uint64_t off = cyg__area_alloc((uint64_t)slots * sizeof(struct cyg_kid));
		if (!off) {
			t->kids_partial = 1;
			return;
		}
		struct cyg_kid *nk = AT(off);
		/* fresh from the mapping, where the program may have written */
		memset(nk, 0, (uint64_t)slots * sizeof(struct cyg_kid));
		if (t->kids_off) {
			struct cyg_kid *ok = AT(t->kids_off);
			for (uint32_t i = 0; i <= t->kids_mask; i++)
				if (ok[i].child)
					(void)kid_put(nk, slots - 1, ok[i].parent, ok[i].fn,
						      ok[i].child);
		}
		t->kids_off = off;
		t->kids_mask = slots - 1;
	}
	if (kid_put(AT(t->kids_off), t->kids_mask, parent, fn, child)) {
		t->kids_partial = 1; /* written over: the sibling lists still work */
		return;
	}
	t->kids_n++;
}

struct cyg_node *cyg__new_child(struct cyg_thread *t, struct cyg_node *p, uint64_t fn,
				uint64_t site)
{
	struct cyg_node *c = cyg__node_alloc(t);

	if (!c)
		return NULL;
	c->fn = fn;
	c->site = site;
	c->calls = 0;
	c->ticks = 0;
	c->parent = cyg_gid(p);
	c->first_child = 0;
	c->hint = CYG_GID_NULL;
	c->hint2 = CYG_GID_NULL;
	c->site2_ix = 0;
	c->site2 = 0;
	c->next_sibling = p->first_child;
	/* Publish fully built: the collector may follow the link any time. */
	__atomic_store_n(&p->first_child, cyg_gid(c), __ATOMIC_RELEASE);
	kid_add(t, cyg_gid(p), fn, cyg_gid(c));
	return c;
}

