/* SPDX-License-Identifier: MIT */
/* snapshot.c - what the program did so far, for a caller watching it
 * (cygprof top): per thread, functions with their calls, self and total
 * times; the state of the rings; with --memory, the live heap and the
 * stacks that hold it.
 *
 * A live snapshot reads the raw trees from the shared mapping, with the
 * checks a checkpoint's fold makes on every link (a child names its parent
 * back, is younger than it, siblings are older than each other), and adds
 * the time of the frames still open up to now; it writes nothing and does
 * not wait for a checkpoint.  The final snapshot takes the trees the last
 * checkpoint folded for the capture, so it shows what the report of the
 * capture shows.  Either way a tree is folded in one pass over its nodes in
 * pre-order, with the functions on the current path counted, so a total
 * time counts only the outermost frame of a recursion. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector-private.h"

/* A node of one thread's tree, in pre-order (a node's subtree follows it). */
struct sn {
	uint32_t depth; /* the root 0, its children 1, ... */
	uint64_t fn, calls, ticks;
};

/* A live block of the heap (--memory). */
struct block {
	uint64_t addr, size;
	uint32_t stack;
	uint32_t next_free; /* 1 + index of the next free slot (0: none) */
};

struct stk {
	uint64_t live_bytes, live_blocks, allocations, bytes;
};

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
	struct sn *sn;    /* one thread's nodes, kept between snapshots */
	size_t sn_cap;
	/* the heap */
	struct collector_heap h;
	struct hmap at;   /* address -> 1 + block index; 0: not live */
	struct block *blocks;
	size_t nblocks, cap_blocks;
	uint32_t free_head;
	struct stk *stacks; /* by stash id */
	size_t cap_stacks;
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
	free(st->sn);
	hmap_release(&st->at);
	free(st->blocks);
	free(st->stacks);
	for (size_t i = 0; i < st->nmq; i++)
		free(st->mq[i].v);
	free(st->mq);
	free(st);
	c->snap = NULL;
}

static int sn_room(struct snapstate *st, size_t n)
{
	return ARRAY_GROW(st->sn, st->sn_cap, n + 1);
}

/* ---- one thread's tree, in pre-order ----------------------------------------- */

struct walk {
	uint32_t gid, depth;
};

/* The raw tree of ct from the mapping, with the time of its open frames up
 * to now (or to its end) added.  Returns the number of nodes, or 0.  A big
 * tree lets the rings be drained now and then (collector_yield()). */
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
	w[nw++] = (struct walk){ct->root, 0};
	while (nw) {
		struct walk x = w[--nw];
		const struct cyg_node *rn = shm_node(c, x.gid);
		uint64_t extra = 0;
		if (sn_room(st, n))
			break;
		if (open.n)
			hmap_get(&open, x.gid, &extra);
		st->sn[n++] = (struct sn){x.depth, x.depth ? RD(rn->fn) : 0, RD(rn->calls),
					  RD(rn->ticks) + extra};
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
			w[nw++] = (struct walk){g, x.depth + 1};
			prev = g;
			g = RD(cn->next_sibling);
		}
	}
	free(w);
	hmap_release(&open);
	return n;
}

/* The capture's tree of ct (as the last checkpoint folded it), in pre-order. */
static size_t capture_tree(struct collector *c, struct cthread *ct)
{
	struct snapstate *st = c->snap;
	size_t n = 0, nw = 0;

	if (!ct->n)
		return 0;
	uint32_t *first = malloc(ct->n * sizeof *first), *next = malloc(ct->n * sizeof *next);
	struct walk *w = malloc(ct->n * sizeof *w);
	if (!first || !next || !w || sn_room(st, ct->n))
		goto out;
	memset(first, 0xff, ct->n * sizeof *first);
	/* children in reverse: the walk's stack gives them back in order */
	for (size_t i = ct->n; i-- > 1;) {
		uint32_t p = ct->nodes[i].parent;
		if (p >= i)
			p = 0; /* hidden by a filter, or not a parent: under the root */
		next[i] = first[p];
		first[p] = (uint32_t)i;
	}
	w[nw++] = (struct walk){0, 0};
	while (nw && n < ct->n) {
		struct walk x = w[--nw];
		const struct fnode *f = &ct->nodes[x.gid];
		st->sn[n++] = (struct sn){x.depth, x.depth ? f->fn : 0, f->calls, f->ticks};
		/* push in reverse so that the first child comes first */
		size_t mark = nw;
		for (uint32_t k = first[x.gid]; k != UINT32_MAX && nw < ct->n; k = next[k])
			w[nw++] = (struct walk){k, x.depth + 1};
		for (size_t a = mark, b = nw; a + 1 < b; a++, b--) {
			struct walk tmp = w[a];
			w[a] = w[b - 1];
			w[b - 1] = tmp;
		}
	}
out:
	free(first);
	free(next);
	free(w);
	return n;
}

/* ---- folding by function ---------------------------------------------------- */

struct slot {
	uint64_t fn;
	int64_t self_ns;
	struct collector_fn f;
};

struct fold {
	struct slot *v;
	size_t n, cap;
};

static uint64_t fn_key(uint64_t fn)
{
	return fn ? fn : 1; /* the maps' keys are never 0 */
}

/* One thread's nodes (pre-order, st->sn[0] its root) merged by function into
 * F, one slot per function, in one pass: the path from the root is kept
 * (its slots, and per function how often it is on it). */
static int fold_thread(struct collector *c, struct cthread *ct, size_t n, struct fold *F)
{
	const struct sn *sn = c->snap->sn;
	struct hmap at = {0}, onpath = {0};
	size_t first = F->n, plen = 0;
	uint32_t *path = malloc((n + 1) * sizeof *path);
	int err = 0;

	if (!path)
		return -ENOMEM;
	for (size_t i = 1; i < n && !err; i++) {
		const struct sn *x = &sn[i];
		uint64_t k, cnt = 0;
		while (plen && plen >= x->depth) {
			uint64_t key = fn_key(F->v[path[--plen]].fn);
			if (hmap_get(&onpath, key, &cnt) && cnt)
				hmap_put(&onpath, key, cnt - 1);
		}
		if (!hmap_get(&at, fn_key(x->fn), &k)) {
			if (ARRAY_GROW(F->v, F->cap, F->n + 1)) {
				err = -ENOMEM;
				break;
			}
			k = F->n;
			memset(&F->v[k], 0, sizeof *F->v);
			F->v[k].fn = x->fn;
			F->v[k].f.tid = ct->tid;
			if (hmap_put(&at, fn_key(x->fn), k)) {
				err = -ENOMEM;
				break;
			}
			F->n++;
		}
		struct slot *s = &F->v[k];
		uint64_t ns = ticks_to_ns(c, x->ticks);
		s->f.calls += x->calls;
		s->self_ns += (int64_t)ns;
		cnt = 0;
		hmap_get(&onpath, fn_key(x->fn), &cnt);
		if (!cnt)
			s->f.total_ns += ns; /* the outermost frame of a recursion */
		if (plen)
			F->v[path[plen - 1]].self_ns -= (int64_t)ns;
		path[plen++] = (uint32_t)k;
		if (hmap_put(&onpath, fn_key(x->fn), cnt + 1))
			err = -ENOMEM;
	}
	free(path);
	hmap_release(&at);
	hmap_release(&onpath);
	/* names */
	if (ct->proc)
		collector_proc_maps(c, ct->proc);
	for (size_t i = first; i < F->n; i++) {
		const char *raw = NULL;
		char buf[32];
		if (ct->proc)
			raw = collector_fn_name(c, ct->proc, F->v[i].fn, NULL, NULL, NULL, NULL);
		if (!raw) {
			snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)F->v[i].fn);
			raw = buf;
		}
		F->v[i].f.name = sym_demangle(raw);
		F->v[i].f.self_ns = F->v[i].self_ns > 0 ? (uint64_t)F->v[i].self_ns : 0;
	}
	return err;
}

/* ---- the heap (--memory) ------------------------------------------------------ */

static struct stk *stack_stats(struct snapstate *st, uint32_t id)
{
	if (id >= st->cap_stacks) {
		size_t cap = st->cap_stacks ? st->cap_stacks : 1024;
		while (cap <= id)
			cap *= 2;
		struct stk *v = realloc(st->stacks, cap * sizeof *v);
		if (!v)
			return NULL;
		memset(v + st->cap_stacks, 0, (cap - st->cap_stacks) * sizeof *v);
		st->stacks = v;
		st->cap_stacks = cap;
	}
	return &st->stacks[id];
}

static void block_gone(struct snapstate *st, uint64_t i)
{
	struct block *b = &st->blocks[i];
	struct stk *s = b->stack < st->cap_stacks ? &st->stacks[b->stack] : NULL;

	st->h.live_bytes -= b->size;
	st->h.live_blocks--;
	if (s) {
		s->live_bytes -= b->size;
		s->live_blocks--;
	}
}

static void heap_event(struct snapstate *st, const struct cygprof_mem_event *e)
{
	uint64_t v = 0, b;
	int live;

	if (!e->addr)
		return;
	live = hmap_get(&st->at, e->addr, &v) && v;
	if (e->op != CYGPROF_MEM_ALLOC) {
		if (!live) {
			st->h.untracked_frees++;
			return;
		}
		b = v - 1;
		st->h.frees++;
		st->h.freed_bytes += st->blocks[b].size;
		block_gone(st, b);
		hmap_put(&st->at, e->addr, 0);
		st->blocks[b].next_free = st->free_head;
		st->free_head = (uint32_t)v;
		return;
	}
	struct stk *s = stack_stats(st, e->stack);
	st->h.allocations++;
	st->h.allocated_bytes += e->size;
	if (live) {
		b = v - 1; /* a realloc the runtime did not see: the block is replaced */
		block_gone(st, b);
	} else if (st->free_head) {
		b = st->free_head - 1;
		st->free_head = st->blocks[b].next_free;
	} else {
		if (st->nblocks == st->cap_blocks) {
			size_t cap = st->cap_blocks ? st->cap_blocks * 2 : 1024;
			struct block *nv = realloc(st->blocks, cap * sizeof *nv);
			if (!nv)
				return;
			st->blocks = nv;
			st->cap_blocks = cap;
		}
		b = st->nblocks++;
	}
	if (hmap_put(&st->at, e->addr, b + 1))
		return;
	st->blocks[b] = (struct block){e->addr, e->size, s ? e->stack : UINT32_MAX, 0};
	st->h.live_bytes += e->size;
	st->h.live_blocks++;
	if (st->h.live_bytes > st->h.peak_bytes)
		st->h.peak_bytes = st->h.live_bytes;
	if (s) {
		s->allocations++;
		s->bytes += e->size;
		s->live_bytes += e->size;
		s->live_blocks++;
	}
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
	q->n += ct->nmev;
}

/* a before b (the heads of queues qa, qb): time, then FREE before ALLOC,
 * then the thread's index, as `cygprof memory` merges them */
static int ev_before(const struct cygprof_mem_event *a, size_t qa, const struct cygprof_mem_event *b,
		     size_t qb)
{
	int ra = a->op != CYGPROF_MEM_FREE, rb = b->op != CYGPROF_MEM_FREE;

	if (a->ts_ns != b->ts_ns)
		return a->ts_ns < b->ts_ns;
	if (ra != rb)
		return ra < rb;
	return qa < qb;
}

/* A margin under the threads' lower bounds: an event stamped just before a
 * drain may be published just after it (the writer was preempted between
 * the two), and a new thread's first events come before the collector
 * finds the thread.  The live heap lags this much behind; without live
 * snapshots (--once) nobody sees it lag: a wider margin. */
#define HEAP_MERGE_MARGIN_NS 200000000ULL
#define HEAP_MERGE_MARGIN_ONCE_NS 2000000000ULL

/* Apply the events every thread is past (all of them at the end), merged
 * over the threads by time.  Until then a thread's events wait: an event
 * older than another thread's may still come. */
static void heap_apply(struct collector *c, int final)
{
	struct snapstate *st = c->snap;
	uint64_t upto = UINT64_MAX;

	if (!st || !st->nmq)
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
	for (;;) {
		size_t best = SIZE_MAX, next = SIZE_MAX;
		for (size_t i = 0; i < st->nmq; i++) {
			const struct mq *q = &st->mq[i];
			if (q->head == q->n || q->v[q->head].ts_ns > upto)
				continue;
			if (best == SIZE_MAX ||
			    ev_before(&q->v[q->head], i, &st->mq[best].v[st->mq[best].head], best)) {
				next = best;
				best = i;
			} else if (next == SIZE_MAX || ev_before(&q->v[q->head], i,
								  &st->mq[next].v[st->mq[next].head],
								  next)) {
				next = i;
			}
		}
		if (best == SIZE_MAX)
			break;
		/* this thread's events up to the next other thread's head */
		struct mq *q = &st->mq[best];
		const struct cygprof_mem_event *other =
			next == SIZE_MAX ? NULL : &st->mq[next].v[st->mq[next].head];
		do
			heap_event(st, &q->v[q->head++]);
		while (q->head < q->n && q->v[q->head].ts_ns <= upto &&
		       (!other || ev_before(&q->v[q->head], best, other, next)));
	}
}

static int frame_skipped(const char *name, const struct procmap *m)
{
	static const char *const alloc_fns[] = {
		"malloc",	  "calloc",	   "realloc",  "reallocarray", "free",
		"posix_memalign", "aligned_alloc", "memalign", "valloc",       "pvalloc",
	};

	if (m && m->path && strstr(m->path, "libcygprof"))
		return 1;
	if (!name)
		return 1;
	for (size_t i = 0; i < sizeof alloc_fns / sizeof alloc_fns[0]; i++)
		if (!strcmp(name, alloc_fns[i]))
			return 1;
	return !strncmp(name, "operator new", 12) || !strncmp(name, "operator delete", 15);
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

/* The named frames of stash id, innermost first; *n of them (owned). */
static char **stack_frames(struct collector *c, uint32_t id, size_t *n)
{
	char **v = calloc(STACK_FRAMES_MAX, sizeof *v);
	size_t k = 0, steps = 0;

	*n = 0;
	if (!v)
		return NULL;
	while (id && id <= c->stash.n && k < STACK_FRAMES_MAX && steps++ < CYG_DEPTH_MAX) {
		const struct cygprof_stack_node *nd = &c->stash.v[id - 1];
		struct cproc *cp = proc_of(c, nd->proc_idx);
		struct procmap *m = NULL;
		uint64_t a = nd->kind == CYGPROF_FRAME_RA && nd->addr ? nd->addr - 1 : nd->addr;
		const char *raw = NULL;
		if (cp) {
			collector_proc_maps(c, cp);
			raw = collector_fn_name(c, cp, a, NULL, NULL, &m, NULL);
		}
		char *name = raw ? sym_demangle(raw) : NULL;
		if (name && !frame_skipped(name, m) &&
		    !(k && !strcmp(v[k - 1], name) && nd->kind == CYGPROF_FRAME_FN))
			v[k++] = name;
		else
			free(name);
		if (nd->parent >= id)
			break; /* parents are older */
		id = nd->parent;
	}
	*n = k;
	return v;
}

static int by_live(const void *a, const void *b, void *arg)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct stk *stacks = arg, *sx = &stacks[x], *sy = &stacks[y];

	if (sx->live_bytes != sy->live_bytes)
		return sx->live_bytes < sy->live_bytes ? 1 : -1;
	return x < y ? -1 : x > y;
}

/* ---- the snapshot ------------------------------------------------------------- */

static void take(struct collector *c, int final)
{
	struct snapstate *st = state(c);
	struct fold F = {0};
	struct collector_thread *th;
	struct collector_fn *fns = NULL;
	struct collector_stack *stacks = NULL;
	uint32_t *ids = NULL;
	size_t nids = 0;
	char (*names)[16];
	uint64_t now = final ? c->end_ts : collector_now(c);

	if (!st)
		return;
	th = calloc(c->nthreads + 1, sizeof *th);
	names = calloc(c->nthreads + 1, sizeof *names);
	/* c->threads may grow during the pass, never shrink */
	if (!th || !names)
		goto out;
	/* the threads found so far (a drain from collector_yield() may find more) */
	size_t nth = c->nthreads;
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
		for (size_t j = 0; j < 15; j++) {
			char ch = RD(t->name[j]);
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
		if (n && fold_thread(c, ct, n, &F))
			break;
	}
	c->in_checkpoint = was;
	fns = calloc(F.n + 1, sizeof *fns);
	if (!fns)
		goto out;
	for (size_t i = 0; i < F.n; i++)
		fns[i] = F.v[i].f;
	s.fns = fns;
	s.nfns = F.n;

	if (c->o->memory)
		heap_apply(c, final);
	struct collector_heap heap = st->h;
	if (c->o->memory) {
		ids = malloc((st->cap_stacks + 1) * sizeof *ids);
		for (size_t i = 0; ids && i < st->cap_stacks; i++)
			if (st->stacks[i].live_blocks)
				ids[nids++] = (uint32_t)i;
		if (nids)
			qsort_r(ids, nids, sizeof *ids, by_live, st->stacks);
		if (c->o->snapshot_stacks && nids > c->o->snapshot_stacks)
			nids = c->o->snapshot_stacks;
		stacks = calloc(nids + 1, sizeof *stacks);
		if (!stacks)
			nids = 0;
		for (size_t i = 0; i < nids; i++) {
			const struct stk *k = &st->stacks[ids[i]];
			size_t nf;
			char **fr = stack_frames(c, ids[i], &nf);
			stacks[i] = (struct collector_stack){ids[i], k->live_bytes, k->live_blocks,
							     k->allocations, k->bytes,
							     (const char *const *)fr, fr ? nf : 0};
		}
		heap.stacks = stacks;
		heap.nstacks = nids;
		s.heap = &heap;
	}
	c->o->snapshot(c->o->snapshot_arg, &s);
out:
	for (size_t i = 0; stacks && i < nids; i++) {
		for (size_t j = 0; j < stacks[i].nframes; j++)
			free((char *)stacks[i].frames[j]);
		free((void *)stacks[i].frames);
	}
	free(stacks);
	free(ids);
	for (size_t i = 0; i < F.n; i++)
		free((char *)F.v[i].f.name);
	free(F.v);
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
