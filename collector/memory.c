/* SPDX-License-Identifier: MIT */
/* memory.c - the collector's side of malloc tracing: ring records into
 * capture events, and the stack stash their stacks refer to.
 *
 * A stack is a path in one trie shared by all threads of the recording,
 * from the outermost frame inwards.  Instrumented code names its call path
 * by a raw tree node (gid) plus the return address into the code that
 * called the allocator; code without instrumentation sends unwound return
 * addresses once per stack (a STACK record) and then only their hash. */
#define _GNU_SOURCE
#include <string.h>

#include "array.h"
#include "collector-private.h"

static uint32_t proc_idx_of(struct collector *c, const struct cthread *ct)
{
	(void)c;
	return ct->proc ? ct->proc->idx : 0;
}

/* out of line: shadow_stack_cached() calls it only when its cache misses */
static __attribute__((noinline)) uint32_t shadow_stack(struct collector *c, struct cthread *ct,
						       uint32_t gid, const uint64_t *ring,
						       uint64_t mask, uint64_t pos, unsigned nra);

static uint32_t stash_intern(struct collector *c, uint32_t parent, uint32_t proc, uint32_t kind,
			     uint64_t addr)
{
	return stack_stash_intern(&c->stash, &c->err, parent, proc, kind, addr);
}

#define PREFIX_BAD UINT64_MAX

struct mwalk {
	uint32_t gid;
	uint64_t fn, site;
};

/* The stash id of the frames of gid's callers, outermost first (0: none),
 * remembered per gid, so that each node of the mapping is read once however
 * deep the paths and however many allocations share them.  A caller's
 * frame is the call site of its callee's node (the node's first call site:
 * its line) when that site lies in the caller, else the caller's function.
 * UINT32_MAX when gid or its path to the root cannot be right. */
static uint32_t shadow_prefix(struct collector *c, struct cthread *ct, uint32_t gid)
{
	uint32_t g = gid, proc = proc_idx_of(c, ct), id = 0;
	uint64_t v, top_fn = 0;
	size_t n = 0;
	int bad = 0, at_root = 0;

	/* Up to a node whose prefix is known, or a child of the root; the
	 * nodes come from the program: each checked, parents strictly older
	 * (smaller gids) than their children, so the walk ends. */
	for (;;) {
		if (hmap_get(&ct->prefix_ids, g, &v)) {
			if (v == PREFIX_BAD)
				bad = 1;
			id = (uint32_t)v;
			top_fn = RD(shm_node(c, g)->fn);
			break;
		}
		if (!gid_ok(c, ct, g) || n > CYG_DEPTH_MAX) {
			bad = 1;
			break;
		}
		const struct cyg_node *nd = shm_node(c, g);
		uint32_t parent = RD(nd->parent);
		if (n * sizeof(struct mwalk) == c->mwalk_cap) {
			size_t cap = c->mwalk_cap ? c->mwalk_cap * 2 : 64 * sizeof(struct mwalk);
			void *nv = realloc(c->mwalk, cap);
			if (!nv)
				return UINT32_MAX;
			c->mwalk = nv;
			c->mwalk_cap = cap;
		}
		struct mwalk *w = c->mwalk;
		w[n].gid = g;
		w[n].fn = RD(nd->fn);
		w[n++].site = RD(nd->site);
		if (parent == ct->root) {
			at_root = 1;
			break;
		}
		if (parent >= g) {
			bad = 1;
			break;
		}
		g = parent;
	}
	struct mwalk *w = c->mwalk;
	if (bad) {
		while (n)
			hmap_put(&ct->prefix_ids, w[--n].gid, PREFIX_BAD);
		return UINT32_MAX;
	}
	struct cproc *cp = ct->proc;
	for (size_t j = n; j-- > 0;) {
		if (j == n - 1 && at_root) {
			id = 0;
		} else {
			uint64_t pfn = j == n - 1 ? top_fn : w[j + 1].fn, s0 = 0;
			if (w[j].site && collector_fn_name(c, cp, w[j].site - 1, &s0, NULL, NULL, NULL) &&
			    s0 == pfn)
				id = stash_intern(c, id, proc, CYGPROF_FRAME_RA, w[j].site);
			else
				id = stash_intern(c, id, proc, CYGPROF_FRAME_FN, pfn);
		}
		hmap_put(&ct->prefix_ids, w[j].gid, id);
	}
	return id;
}

/* The stack of an allocation in instrumented code: the functions of the
 * raw call path, then the return addresses (outermost first: library
 * frames between the instrumented code and the allocator, then the caller
 * of the allocator).  When the outermost return address lies in the
 * innermost function itself it replaces it (same function, exact line).
 * When it lies in a caller into which the innermost function was inlined
 * (Redis's zmalloc() inlines ztrymalloc_usable_internal(), which calls
 * malloc), it is kept: with source lines it names the inlined function
 * and its line; view_stack() without lines leaves it out. */
static uint32_t shadow_stack(struct collector *c, struct cthread *ct, uint32_t gid,
			     const uint64_t *ring, uint64_t mask, uint64_t pos, unsigned nra)
{
	uint64_t key = hash3(gid, nra, 0x5a5a), v, ras[64];
	uint32_t proc = proc_idx_of(c, ct), id = 0;

	/* the common case, one return address: a direct-mapped cache first */
	size_t slot = 0;
	if (!ct->sc && !(ct->sc = calloc(1024, sizeof *ct->sc)))
		return 0;
	if (nra == 1) {
		ras[0] = RD(ring[pos & mask]);
		slot = (size_t)((gid * 0x9E3779B1u) ^ (ras[0] >> 2)) & 1023;
		if (ct->sc[slot].gid == gid && ct->sc[slot].ra == ras[0] && ct->sc[slot].id)
			return ct->sc[slot].id;
	}
	for (unsigned i = 0; i < nra && i < 64; i++) {
		if (i || nra != 1)
			ras[i] = RD(ring[(pos + i) & mask]);
		key = hash3(key, ras[i], i);
	}
	if (hmap_get(&ct->shadow_ids, key, &v)) {
		if (nra == 1) {
			ct->sc[slot].gid = gid;
			ct->sc[slot].ra = ras[0];
			ct->sc[slot].id = (uint32_t)v;
		}
		return (uint32_t)v;
	}
	if (gid != ct->root) {
		/* the maps the runtime wrote, read now: the process may be
		 * gone (a short one is drained after its end), and the names
		 * below need them */
		collector_proc_maps(c, ct->proc);
		id = shadow_prefix(c, ct, gid);
		if (id == UINT32_MAX) {
			c->dmg.events++;
			return 0;
		}
		uint64_t fn0 = RD(shm_node(c, gid)->fn), start = 0;
		if (nra && !collector_fn_name(c, ct->proc, ras[nra - 1] - 1, &start, NULL, NULL, NULL))
			start = 0;
		if (!nra || start != fn0)
			id = stash_intern(c, id, proc, CYGPROF_FRAME_FN, fn0);
	}
	for (unsigned i = nra; i-- > 0;)
		id = stash_intern(c, id, proc, CYGPROF_FRAME_RA, ras[i]);
	hmap_put(&ct->shadow_ids, key, id);
	if (nra == 1) {
		ct->sc[slot].gid = gid;
		ct->sc[slot].ra = ras[0];
		ct->sc[slot].id = id;
	}
	return id;
}

/* shadow_stack()'s cache, inline: an allocation from the same function
 * and return address as one before (most of them) costs a few loads here,
 * not a call that saves and restores registers */
static inline uint32_t shadow_stack_cached(struct collector *c, struct cthread *ct,
					   uint32_t gid, const uint64_t *ring, uint64_t mask,
					   uint64_t pos, unsigned nra)
{
	if (nra == 1 && ct->sc) {
		uint64_t ra = RD(ring[pos & mask]);
		size_t slot = (size_t)((gid * 0x9E3779B1u) ^ (ra >> 2)) & 1023;

		if (ct->sc[slot].gid == gid && ct->sc[slot].ra == ra && ct->sc[slot].id)
			return ct->sc[slot].id;
	}
	return shadow_stack(c, ct, gid, ring, mask, pos, nra);
}

static inline __attribute__((always_inline)) void push_mev(struct collector *c,
							   struct cthread *ct, unsigned op,
							   unsigned fn, uint64_t addr,
							   uint64_t size, uint32_t stack)
{
	if (ct->nmev == ct->capmev) {
		size_t cap = ct->capmev ? ct->capmev * 2 : 4096;
		struct cygprof_mem_event *v = realloc(ct->mev, cap * sizeof *v);
		if (!v) {
			if (!c->err)
				c->err = -ENOMEM;
			return;
		}
		ct->mev = v;
		ct->capmev = cap;
	}
	struct cygprof_mem_event *e = &ct->mev[ct->nmev++];
	uint64_t ns = tick_ns(c, ct->cur_ts);
	if (ns < ct->last_mev_ns)
		ns = ct->last_mev_ns; /* times never go back, whatever the ring said */
	ct->last_mev_ns = ns;
	e->ts_ns = ns;
	e->addr = addr;
	e->size = size;
	e->stack = stack;
	e->op = (uint8_t)op;
	e->fn = (uint8_t)(fn < CYGPROF_FN_COUNT ? fn : CYGPROF_FN_MALLOC);
	e->flags = 0;
}

static inline __attribute__((always_inline)) uint64_t mem_record(struct collector *c,
								   struct cthread *ct,
								   const uint64_t *ring, uint64_t mask,
								   uint64_t pos, uint64_t w)
{
#define WORD(i) RD(ring[(pos + (i)) & mask])
	switch (cyg_x_sub(w)) {
	case CYG_X_ALLOC: {
		int shadow = cyg_x_mem_shadow(w);
		unsigned nra = cyg_x_mem_get_nra(w);
		uint32_t stack;
		restore_ts(ct, cyg_x_mem_delta(w));
		if (shadow) {
			stack = shadow_stack_cached(c, ct, (uint32_t)WORD(3), ring, mask, pos + 4,
						    nra);
		} else {
			uint64_t v = 0;
			hmap_get(&c->stash_unwound, hash3(proc_idx_of(c, ct), WORD(3), 0), &v);
			stack = (uint32_t)v;
		}
		push_mev(c, ct, CYGPROF_MEM_ALLOC, cyg_x_mem_fn(w), WORD(1), WORD(2), stack);
		return 4 + (shadow ? nra : 0);
	}
	case CYG_X_FREE:
		restore_ts(ct, cyg_x_mem_delta(w));
		push_mev(c, ct, CYGPROF_MEM_FREE, cyg_x_mem_fn(w), WORD(1), 0, 0);
		return 2;
	case CYG_X_STACK: {
		uint64_t n = cyg_x_payload(w) & 0xffff;
		uint32_t proc = proc_idx_of(c, ct), id = 0;
		uint64_t key = hash3(proc, WORD(1), 0), v;
		if (!hmap_get(&c->stash_unwound, key, &v)) {
			for (uint64_t i = n; i-- > 0;)
				id = stash_intern(c, id, proc, CYGPROF_FRAME_RA, WORD(2 + i));
			if (!n)
				id = stash_intern(c, 0, proc, CYGPROF_FRAME_RA, 0);
			hmap_put(&c->stash_unwound, key, id);
		}
		return n + 2;
	}
	case CYG_X_WAIT: {
		/* the thread waited for us: from then, that long; the events
		 * after it are after its end */
		restore_ts(ct, cyg_x_payload(w) & CYG_EV_DELTA_MAX);
		uint64_t len = WORD(1), t0 = ct->cur_ts;
		uint64_t now = collector_now(c);
		if (len > now - t0 || t0 > now) { /* cannot be: the ring's word */
			c->dmg.events++;
			return CYG_X_WAIT_WORDS;
		}
		ct->cur_ts = t0 + len;
		if (ARRAY_GROW(ct->xwait, ct->capxwait, ct->nxwait + 1))
			return CYG_X_WAIT_WORDS;
		ct->xwait[ct->nxwait++] = (struct cygprof_offcpu){
			tick_ns(c, t0), tick_ns(c, t0 + len), ct->idx, ct->tid, 0, CYGPROF_OFFCPU_WAIT};
		return CYG_X_WAIT_WORDS;
	}
	default:
		return 1;
	}
#undef WORD
}

uint64_t collector_mem_records(struct collector *c, struct cthread *ct, const uint64_t *ring,
			       uint64_t mask, uint64_t tail, uint64_t head)
{
	while (tail != head) {
		uint64_t w = RD(ring[tail & mask]), len;
		unsigned sub = cyg_x_sub(w);

		if (cyg_ev_kind(w) != CYG_EV_EXT || sub == CYG_X_SYNC || sub > CYG_X_WAIT)
			break;
		len = collector_mem_len(w);
		if (len > c->ring_words || len > head - tail)
			break;
		mem_record(c, ct, ring, mask, tail, w);
		tail += len;
	}
	return tail;
}

void collector_mem_flush(struct collector *c, struct cthread *ct)
{
	if (ct->nxwait) {
		collector_note_err(c, cygprof_capture_append_offcpu(c->cap, ct->xwait, ct->nxwait));
		ct->nxwait = 0;
	}
	collector_note_err(c, stack_stash_store(&c->stash, c->cap));
	collector_snapshot_mem(c, ct); /* cygprof top --memory: the live heap */
	if (ct->nmev) {
		/* read after the events were drained: a thread registered
		 * later has every event after them (cygprof_capture_mem_threads()) */
		cygprof_capture_mem_threads(c->cap, __atomic_load_n(&c->ctl->nthreads,
								    __ATOMIC_ACQUIRE));
		collector_note_err(c, cygprof_capture_append_mem(c->cap, ct->idx, ct->mev,
								 ct->nmev));
		ct->mem_events += ct->nmev;
		ct->nmev = 0;
	}
}

void collector_mem_release(struct collector *c)
{
	stack_stash_release(&c->stash);
	hmap_release(&c->stash_unwound);
}
