/* SPDX-License-Identifier: MIT */
/* snapshot.c - what the program did so far, for a caller watching it
 * (cygprof top): per thread, functions with their calls, self and total
 * times; the state of the rings; with --memory, the live heap and the
 * stacks that hold it.
 *
 * The collector only gathers: the trees and the memory events go as they
 * are to the analysis every reader uses (analysis/profile.c: self times,
 * recursion, functions merged by name; analysis/memory.c: the heap, the
 * allocator-frame filter), and functions are named as the capture names
 * them (collector_fn_label(), symbols/fnname.h).
 *
 * A live snapshot reads the raw trees from the shared mapping, with the
 * checks a checkpoint's fold makes on every link (a child names its parent
 * back, is younger than it, siblings are older than each other), and adds
 * the time of the frames still open up to now; it writes nothing and does
 * not wait for a checkpoint.  The final snapshot takes the trees the last
 * checkpoint folded for the capture, so it shows what the report of the
 * capture shows. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector-private.h"
#include "memory.h"
#include "profile.h"

/* One thread's memory events waiting for the merge (in the thread's order). */
struct mq {
	struct cygprof_mem_event *v;
	size_t head, n, cap;
};

/* The first live snapshot comes this soon at the latest. */
#define SNAPSHOT_FIRST_NS 1000000000ULL

struct snapstate {
	uint64_t due_ns;  /* CLOCK_MONOTONIC time of the next live snapshot */
	int started;
	struct cygprof_node *nodes; /* one thread's tree, kept between snapshots */
	size_t nodes_cap;
	struct memory *heap; /* --memory: the live heap, fed the merged events */
	struct mq *mq;    /* by capture thread index: events not applied yet */
	size_t nmq;
};

static struct snapstate *state(struct collector *c)
{
	if (!c->snap)
		c->snap = calloc(1, sizeof *c->snap);
	return c->snap;
}

void collector_snapshot_release(struct collector *c)
{
	struct snapstate *st = c->snap;

	if (!st)
		return;
	free(st->nodes);
	memory_free(st->heap);
	for (size_t i = 0; i < st->nmq; i++)
		free(st->mq[i].v);
	free(st->mq);
	free(st);
	c->snap = NULL;
}

static int nodes_room(struct snapstate *st, size_t n)
{
	return ARRAY_GROW(st->nodes, st->nodes_cap, n + 1);
}

/* The name of the function at addr in process cp (NULL: unknown), as the
 * capture stores it.  Owned. */
static char *fn_label(struct collector *c, struct cproc *cp, uint64_t addr, struct procmap **mapp)
{
	struct procmap *m = NULL;
	const char *raw = cp ? collector_fn_name(c, cp, addr, NULL, NULL, &m, NULL) : NULL;

	if (mapp)
		*mapp = m;
	return collector_fn_label(c, cp, raw, m, addr);
}

/* ---- one thread's tree -------------------------------------------------------- */

struct walk {
	uint32_t gid, parent; /* parent: its index in st->nodes */
};

/* The raw tree of ct from the mapping into st->nodes (parents first), with
 * the time of its open frames up to now (or to its end) added.  Returns the
 * number of nodes, or 0.  A big tree lets the rings be drained now and then
 * (collector_yield()). */
static size_t raw_tree(struct collector *c, struct cthread *ct, uint64_t now)
{
	struct snapstate *st = c->snap;
	struct walk *w = NULL;
	struct hmap open = {0}; /* gid of an open frame -> the time it is open so far */
	size_t n = 0, nw = 0, capw = 256;

	if (!gid_ok(c, ct, ct->root))
		return 0;

	/* the open frames first: a thread's stack is short */
	struct cyg_thread *t = C_AT(c, ct->off);
	uint32_t state = ACQ(t->state);
	uint64_t end = now;
	if (state == CYG_T_ENDED || state == CYG_T_CUT)
		end = clamp_ts(RD(t->end_ts), ct->start_ts, now);
	else if (ct->proc && ct->proc->reaped)
		end = clamp_ts(ct->proc->reap_ts, ct->start_ts, now);
	uint32_t depth = RD(t->depth);
	uint64_t soff = ACQ(t->stack_off);
	uint32_t cap = RD(t->stack_cap);
	if (state != CYG_T_ENDED && depth && depth < cap && depth <= CYG_DEPTH_MAX &&
	    shm_ok(c, soff, (uint64_t)cap * sizeof(struct cyg_frame))) {
		const struct cyg_frame *stk = C_AT(c, soff);
		for (uint32_t d = 1; d <= depth; d++) {
			uint64_t ts = clamp_ts(RD(stk[d].ts), ct->start_ts, end), v = 0;
			uint32_t gid = RD(stk[d].node);
			if (!gid)
				continue;
			hmap_get(&open, gid, &v);
			hmap_put(&open, gid, v + (end - ts));
		}
	}

	w = malloc(capw * sizeof *w);
	if (!w) {
		hmap_release(&open);
		return 0;
	}
	w[nw++] = (struct walk){ct->root, CYGPROF_NONE};
	while (nw) {
		struct walk x = w[--nw];
		const struct cyg_node *rn = shm_node(c, x.gid);
		uint64_t extra = 0;
		uint32_t at = (uint32_t)n;
		if (nodes_room(st, n))
			break;
		if (open.n)
			hmap_get(&open, x.gid, &extra);
		st->nodes[n++] = (struct cygprof_node){
			.parent = x.parent,
			.fn = at ? RD(rn->fn) : 0,
			.calls = RD(rn->calls),
			.total_ns = ticks_to_ns(c, RD(rn->ticks) + extra),
		};
		if (!(n & 4095))
			collector_yield(c);
		uint32_t g = ACQ(rn->first_child), prev = UINT32_MAX;
		while (g) {
			if (g <= x.gid || g >= prev || !gid_ok(c, ct, g))
				break;
			const struct cyg_node *cn = shm_node(c, g);
			if (RD(cn->parent) != x.gid)
				break;
			if (nw == capw) {
				struct walk *nv = realloc(w, capw * 2 * sizeof *nv);
				if (!nv)
					break;
				w = nv;
				capw *= 2;
			}
			w[nw++] = (struct walk){g, at};
			prev = g;
			g = RD(cn->next_sibling);
		}
	}
	free(w);
	hmap_release(&open);
	return n;
}

/* The capture's tree of ct (as the last checkpoint folded it) into
 * st->nodes.  Returns the number of nodes, or 0. */
static size_t capture_tree(struct collector *c, struct cthread *ct)
{
	if (!ct->n || nodes_room(c->snap, ct->n))
		return 0;
	collector_tree_nodes(c, ct, c->snap->nodes);
	return ct->n;
}

/* One thread's tree (st->nodes, n of them) as analysis/profile.c folds it,
 * its functions named as the capture names them. */
static int thread_profile(struct collector *c, struct cthread *ct, size_t n, struct profile **out)
{
	const struct cygprof_node *nodes = c->snap->nodes;
	struct profile *p = profile_new();
	uint32_t *fnidx = calloc(n, sizeof *fnidx);
	struct hmap at = {0}; /* function address -> index in p */
	int err = p && fnidx ? 0 : -ENOMEM;

	if (ct->proc)
		collector_proc_maps(c, ct->proc);
	for (size_t i = 1; i < n && !err; i++) {
		uint64_t k;
		if (!hmap_get(&at, nodes[i].fn, &k)) {
			char *name = fn_label(c, ct->proc, nodes[i].fn, NULL);
			long f = name ? profile_intern(p, name) : -ENOMEM;
			free(name);
			if (f < 0 || hmap_put(&at, nodes[i].fn, (uint64_t)f)) {
				err = f < 0 ? (int)f : -ENOMEM;
				break;
			}
			k = (uint64_t)f;
		}
		fnidx[i] = (uint32_t)k;
	}
	/* the hooks' cost out, as the view takes it out of a capture's trees */
	struct collector_overhead co;
	if (!err && !c->o->raw_times && collector_overhead(c, &co)) {
		struct profile_overhead ov = {co.in_ns, co.in_ns + co.out_ns};
		err = profile_compensate(c->snap->nodes, n, &ov, NULL, NULL);
	}
	if (!err)
		err = profile_add_tree_idx(p, NULL, nodes, fnidx, n);
	free(fnidx);
	hmap_release(&at);
	if (err) {
		profile_free(p);
		p = NULL;
	}
	*out = p;
	return err;
}

/* ---- the heap (--memory) ------------------------------------------------------ */

static struct memory *heap(struct snapstate *st)
{
	if (!st->heap)
		st->heap = memory_new(NULL);
	return st->heap;
}

void collector_snapshot_mem(struct collector *c, const struct cthread *ct)
{
	struct snapstate *st;

	if (!c->o->snapshot || !c->o->memory || !ct->nmev || !(st = state(c)))
		return;
	if (ct->idx >= st->nmq) {
		size_t n = ct->idx + 64;
		struct mq *v = realloc(st->mq, n * sizeof *v);
		if (!v)
			return;
		memset(v + st->nmq, 0, (n - st->nmq) * sizeof *v);
		st->mq = v;
		st->nmq = n;
	}
	struct mq *q = &st->mq[ct->idx];
	if (q->head && q->head == q->n)
		q->head = q->n = 0;
	if (ARRAY_GROW(q->v, q->cap, q->n + ct->nmev))
		return;
	memcpy(q->v + q->n, ct->mev, ct->nmev * sizeof *ct->mev);
	for (size_t i = 0; i < ct->nmev; i++, q->n++)
		q->v[q->n].addr = memory_addr_key(q->v[q->n].addr,
						  ct->proc ? ct->proc->idx : CYGPROF_NONE);
}

/* A queue as a source of memory_run(): its events up to upto. */
struct qsrc {
	struct mq *q;
	uint64_t upto;
};

static int queue_next(void *src, struct cygprof_mem_event *ev)
{
	struct qsrc *s = src;
	struct mq *q = s->q;

	if (q->head == q->n || q->v[q->head].ts_ns > s->upto)
		return 0;
	*ev = q->v[q->head++];
	return 1;
}

/* A margin under the threads' lower bounds: an event stamped just before a
 * drain may be published just after it (the writer was preempted between
 * the two), and a new thread's first events come before the collector
 * finds the thread.  The live heap lags this much behind; without live
 * snapshots (--once) nobody sees it lag: a wider margin. */
#define HEAP_MERGE_MARGIN_NS 200000000ULL
#define HEAP_MERGE_MARGIN_ONCE_NS 2000000000ULL

/* Apply the events every thread is past (all of them at the end), merged
 * over the threads as `cygprof memory` merges them (memory_run()).  Until
 * then a thread's events wait: an event older than another thread's may
 * still come. */
static void heap_apply(struct collector *c, int final)
{
	struct snapstate *st = c->snap;
	uint64_t upto = UINT64_MAX;

	if (!st || !st->nmq || !heap(st))
		return;
	if (!final) {
		/* later events of a thread are not older than its lower bound */
		for (size_t i = 0; i < c->nthreads; i++) {
			const struct cthread *ct = c->threads[i];
			if (!ct->ring_off || ct->ring_done)
				continue;
			uint64_t lb = ct->cur_ts > ct->idle_lb ? ct->cur_ts : ct->idle_lb;
			uint64_t ns = tick_ns(c, lb);
			if (ct->last_mev_ns > ns)
				ns = ct->last_mev_ns;
			if (ns < upto)
				upto = ns;
		}
		if (upto == UINT64_MAX)
			upto = tick_ns(c, collector_now(c));
		uint64_t margin = c->o->snapshot_ns ? HEAP_MERGE_MARGIN_NS : HEAP_MERGE_MARGIN_ONCE_NS;
		upto = upto > margin ? upto - margin : 0;
	}
	struct qsrc *qs = calloc(st->nmq, sizeof *qs);
	void **srcs = calloc(st->nmq, sizeof *srcs);
	for (size_t i = 0; qs && srcs && i < st->nmq; i++) {
		qs[i] = (struct qsrc){&st->mq[i], upto};
		srcs[i] = &qs[i];
	}
	if (qs && srcs)
		memory_run(st->heap, st->nmq, queue_next, srcs);
	free(qs);
	free(srcs);
}

#define STACK_FRAMES_MAX 64

static struct cproc *proc_of(struct collector *c, uint32_t idx)
{
	if (idx < c->nprocs && c->procs[idx]->idx == idx)
		return c->procs[idx];
	for (size_t i = 0; i < c->nprocs; i++)
		if (c->procs[i]->idx == idx)
			return c->procs[i];
	return NULL;
}

/* The frames of stash id named (as the capture names them) and given to
 * the heap, which leaves out the allocator's frames at the innermost end
 * (memory_set_frames()); a function's frame right after a return address in
 * the same function is one frame.  Returns the names, innermost first, *n
 * of them (the array owned, the names the heap's); NULL when none. */
static const char **stack_frames(struct collector *c, struct memory *h, uint32_t stack, size_t *n)
{
	char *name[STACK_FRAMES_MAX];
	const char *obj[STACK_FRAMES_MAX], **v = NULL;
	size_t k = 0, steps = 0;
	uint32_t id = stack;

	*n = 0;
	while (id && id <= c->stash.n && k < STACK_FRAMES_MAX && steps++ < CYG_DEPTH_MAX) {
		const struct cygprof_stack_node *nd = &c->stash.v[id - 1];
		struct cproc *cp = proc_of(c, nd->proc_idx);
		struct procmap *m = NULL;
		uint64_t a = nd->kind == CYGPROF_FRAME_RA && nd->addr ? nd->addr - 1 : nd->addr;
		if (cp)
			collector_proc_maps(c, cp);
		char *s = fn_label(c, cp, a, &m);
		if (s && !(k && nd->kind == CYGPROF_FRAME_FN && !strcmp(name[k - 1], s))) {
			obj[k] = m ? m->path : NULL;
			name[k++] = s;
		} else {
			free(s);
		}
		if (nd->parent >= id)
			break; /* parents are older */
		id = nd->parent;
	}
	if (!memory_set_frames(h, stack, (const char *const *)name, obj, k)) {
		const struct memory_stack *ms = &h->stacks[stack];
		v = calloc(ms->nframes + 1, sizeof *v);
		for (size_t i = 0; v && i < ms->nframes; i++)
			v[i] = h->fns[ms->fns[i]].name;
		*n = v ? ms->nframes : 0;
	}
	for (size_t i = 0; i < k; i++)
		free(name[i]);
	return v;
}

static int by_live(const void *a, const void *b, void *arg)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct memory_stack *stacks = arg, *sx = &stacks[x], *sy = &stacks[y];

	if (sx->live_bytes != sy->live_bytes)
		return sx->live_bytes < sy->live_bytes ? 1 : -1;
	return x < y ? -1 : x > y;
}

/* The heap's figures, and its stacks with live blocks (most live bytes
 * first, at most o->snapshot_stacks) into *stacks (owned, the frames too). */
static void heap_figures(struct collector *c, struct memory *h, struct collector_heap *out,
			 struct collector_stack **stacks)
{
	uint32_t *ids = malloc((h->nstacks + 1) * sizeof *ids);
	size_t nids = 0;

	*out = (struct collector_heap){
		.allocations = h->t.allocations,
		.frees = h->t.frees,
		.allocated_bytes = h->t.allocated_bytes,
		.freed_bytes = h->t.freed_bytes,
		.live_bytes = h->t.live_bytes,
		.live_blocks = h->t.live_blocks,
		.peak_bytes = h->t.peak_bytes,
		.untracked_frees = h->t.untracked_frees,
	};
	for (size_t i = 0; ids && i < h->nstacks; i++)
		if (h->stacks[i].live_blocks)
			ids[nids++] = (uint32_t)i;
	if (nids)
		qsort_r(ids, nids, sizeof *ids, by_live, h->stacks);
	if (c->o->snapshot_stacks && nids > c->o->snapshot_stacks)
		nids = c->o->snapshot_stacks;
	*stacks = calloc(nids + 1, sizeof **stacks);
	for (size_t i = 0; *stacks && i < nids; i++) {
		const struct memory_stack *k = &h->stacks[ids[i]];
		size_t nf;
		const char **fr = stack_frames(c, h, ids[i], &nf);
		(*stacks)[i] = (struct collector_stack){ids[i], k->live_bytes, k->live_blocks,
							k->allocations, k->bytes, fr, nf};
		out->nstacks = i + 1;
	}
	out->stacks = *stacks;
	free(ids);
}

/* ---- the snapshot ------------------------------------------------------------- */

/* The functions of a thread's profile as snapshot rows into *fns (grown). */
static int add_rows(const struct profile *p, uint32_t tid, struct collector_fn **fns, size_t *n,
		    size_t *cap)
{
	if (ARRAY_GROW(*fns, *cap, *n + p->nfns + 1))
		return -ENOMEM;
	for (size_t i = 0; i < p->nfns; i++)
		(*fns)[(*n)++] = (struct collector_fn){p->fns[i].name, tid, p->fns[i].calls,
						       p->fns[i].self_ns, p->fns[i].total_ns};
	return 0;
}

static void take(struct collector *c, int final)
{
	struct snapstate *st = state(c);
	struct collector_thread *th;
	struct collector_fn *fns = NULL;
	struct collector_stack *stacks = NULL;
	struct collector_heap hf;
	struct profile **prof;
	size_t nfns = 0, capfns = 0;
	char (*names)[16];
	uint64_t now = final ? c->end_ts : collector_now(c);

	if (!st)
		return;
	/* the threads found so far (a drain from collector_yield() may find
	 * more: c->threads may grow during the pass, never shrink) */
	size_t nth = c->nthreads;
	th = calloc(nth + 1, sizeof *th);
	names = calloc(nth + 1, sizeof *names);
	prof = calloc(nth + 1, sizeof *prof); /* the names of the rows */
	if (!th || !names || !prof)
		goto out;
	struct collector_snapshot s = {
		.final = final,
		.pid = c->main_pid,
		.elapsed_ns = tick_ns(c, now),
		.threads = (uint32_t)nth,
		.thread = th,
	};
	/* a live snapshot is a long pass as a checkpoint is: the rings may be
	 * drained meanwhile */
	int was = c->in_checkpoint;
	c->in_checkpoint = !final;
	for (size_t i = 0; i < nth; i++) {
		struct cthread *ct = c->threads[i];
		struct cyg_thread *t = C_AT(c, ct->off);
		uint32_t state = ACQ(t->state);
		/* the name the last checkpoint read from /proc while the thread
		 * ran (it may have named itself since it registered), else its
		 * writer's */
		const char *from = state != CYG_T_ENDED && ct->comm[0] ? ct->comm : NULL;
		for (size_t j = 0; j < 15; j++) {
			char ch = from ? from[j] : RD(t->name[j]);
			if (!ch)
				break;
			names[i][j] = ch >= ' ' && ch < 127 ? ch : '?';
		}
		th[i] = (struct collector_thread){ct->pid, ct->tid, names[i],
						  state == CYG_T_ENDED || state == CYG_T_CUT};
		if (ct->ring_off && !ct->ring_done) {
			uint64_t head = ACQ(t->head);
			uint64_t pct = head >= ct->tail && c->ring_words
					       ? (head - ct->tail) * 100 / c->ring_words
					       : 0;
			s.rings++;
			if (pct > s.ring_fill_pct)
				s.ring_fill_pct = (uint32_t)(pct > 100 ? 100 : pct);
		}
		s.ring_lost += RD(t->lost);
		s.ring_waits += RD(t->waits);
		size_t n = final ? capture_tree(c, ct) : raw_tree(c, ct, now);
		if (n && (thread_profile(c, ct, n, &prof[i]) == -ENOMEM ||
			  add_rows(prof[i], ct->tid, &fns, &nfns, &capfns)))
			break;
	}
	c->in_checkpoint = was;
	s.fns = fns;
	s.nfns = nfns;

	if (c->o->memory) {
		heap_apply(c, final);
		if (heap(st)) {
			heap_figures(c, st->heap, &hf, &stacks);
			s.heap = &hf;
		}
	}
	c->o->snapshot(c->o->snapshot_arg, &s);
	for (size_t i = 0; s.heap && i < hf.nstacks; i++)
		free((void *)stacks[i].frames);
out:
	for (size_t i = 0; prof && i < nth; i++)
		profile_free(prof[i]);
	free(prof);
	free(stacks);
	free(fns);
	free(th);
	free(names);
}

void collector_snapshot(struct collector *c, int final)
{
	if (c->o->snapshot)
		take(c, final);
}

void collector_snapshot_turn(struct collector *c)
{
	struct snapstate *st;

	if (c->o->turn)
		c->o->turn(c->o->snapshot_arg, c->main_pid);
	if (c->o->snapshot && c->o->memory)
		heap_apply(c, 0); /* what waits stays small */
	if (!c->o->snapshot || !c->o->snapshot_ns || !(st = state(c)))
		return;
	uint64_t now = collector_mono_ns();
	if (!st->started) {
		/* the first one within a second, whatever the interval */
		st->started = 1;
		st->due_ns = now + (c->o->snapshot_ns < SNAPSHOT_FIRST_NS ? c->o->snapshot_ns
									 : SNAPSHOT_FIRST_NS);
		return;
	}
	if (now < st->due_ns)
		return;
	st->due_ns = now + c->o->snapshot_ns;
	take(c, 0);
}
