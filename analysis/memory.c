/* SPDX-License-Identifier: MIT */
/* memory.c - heap analysis core: live blocks, per-stack and per-function
 * figures, peak, leaks, temporaries, heap over time, diff (pure, no capture
 * access; see memory.h for the definitions). */
#include "memory.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "hmap.h"

/* A live block, in m->blocks; m->live finds it by address. */
struct memory_block {
	uint64_t addr; /* 0: a free entry, whose stack is the next free one + 1 */
	uint64_t size;
	uint64_t ts_ns;
	uint32_t stack;
	uint32_t thread;
};

struct memory *memory_new(const struct memory_opts *o)
{
	struct memory *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	if (o)
		m->opts = *o;
	m->live.sparse = 1; /* every allocation is a miss, every free a deletion */
	m->t.peak_pos = MEMORY_NO_TIME;
	m->t.peak_ts_ns = MEMORY_NO_TIME;
	m->t.first_ts_ns = MEMORY_NO_TIME;
	if (m->opts.points) {
		uint64_t d = m->opts.duration_ns;
		size_t k;

		m->heap = calloc(m->opts.points, sizeof(*m->heap));
		if (!m->heap) {
			free(m);
			return NULL;
		}
		m->npoints = m->opts.points;
		for (k = 0; k < m->npoints; k++)
			m->heap[k].ts_ns = (uint64_t)((unsigned __int128)d * k / m->npoints);
	}
	return m;
}

void memory_free(struct memory *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->nstacks; i++)
		free(m->stacks[i].fns);
	for (i = 0; i < m->nfns; i++)
		free(m->fns[i].name);
	free(m->stacks);
	free(m->fns);
	hindex_release(&m->fn_index);
	free(m->heap);
	hmap_release(&m->live);
	free(m->blocks);
	free(m->last_alloc);
	free(m);
}

/* ---- live blocks: by address (common/hmap.h), in an array reusing the
 * entries of freed blocks ------------------------------------------------- */

/* The block of a new live address: an entry of blocks, reused or added;
 * NULL when out of memory. */
static struct memory_block *block_new(struct memory *m)
{
	struct memory_block *b;

	if (m->free_block) {
		b = &m->blocks[m->free_block - 1];
		m->free_block = b->stack;
		return b;
	}
	if (m->nblocks >= UINT32_MAX || ARRAY_GROW(m->blocks, m->blocks_cap, m->nblocks + 1))
		return NULL;
	return &m->blocks[m->nblocks++];
}

/* A block no longer live (its address already out of m->live). */
static void block_free(struct memory *m, struct memory_block *b)
{
	b->addr = 0;
	b->stack = m->free_block;
	m->free_block = (uint32_t)(b - m->blocks) + 1;
}

/* ---- stacks ---------------------------------------------------------------- */

static struct memory_stack *stack_get(struct memory *m, uint32_t id)
{
	struct memory_stack *s;

	if (id >= m->nstacks) {
		if (ARRAY_GROW(m->stacks, m->stacks_cap, (size_t)id + 1))
			return NULL;
		memset(&m->stacks[m->nstacks], 0, (id + 1 - m->nstacks) * sizeof(*s));
		m->nstacks = (size_t)id + 1;
	}
	s = &m->stacks[id];
	if (!s->used) {
		s->used = 1;
		s->id = id;
		s->pk_ver = m->pk_ver;
	}
	return s;
}

/* Before a stack's live figures change: when a peak was reached since the
 * stack last changed, its live figures are the ones at that peak. */
static void stack_touch(const struct memory *m, struct memory_stack *s)
{
	if (s->pk_ver != m->pk_ver) {
		s->peak_blocks = s->live_blocks;
		s->peak_bytes = s->live_bytes;
		s->pk_ver = m->pk_ver;
	}
}

/* ---- events ---------------------------------------------------------------- */

static void heap_advance(struct memory *m, uint64_t ts)
{
	uint64_t d = m->opts.duration_ns;
	size_t b;

	if (!m->npoints)
		return;
	if (!d || ts >= d)
		b = m->npoints - 1;
	else
		b = (size_t)((unsigned __int128)ts * m->npoints / d);
	while (m->heap_cur < b) {
		m->heap_cur++;
		m->heap[m->heap_cur].live_bytes = m->t.live_bytes;
	}
}

static void heap_note(struct memory *m)
{
	if (m->npoints && m->t.live_bytes > m->heap[m->heap_cur].live_bytes)
		m->heap[m->heap_cur].live_bytes = m->t.live_bytes;
}

static void diff_snapshot(struct memory *m)
{
	size_t i;

	m->diff_done = 1;
	if (!m->opts.diff)
		return;
	for (i = 0; i < m->nblocks; i++) {
		const struct memory_block *b = &m->blocks[i];

		if (!b->addr || b->ts_ns <= m->opts.diff_t1)
			continue;
		m->stacks[b->stack].diff_blocks++;
		m->stacks[b->stack].diff_bytes += b->size;
		m->t.diff_blocks++;
		m->t.diff_bytes += b->size;
	}
}

static int ensure_thread(struct memory *m, uint32_t thread)
{
	if (thread >= m->nthreads) {
		size_t n = (size_t)thread + 1;
		uint64_t *v = realloc(m->last_alloc, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		memset(v + m->nthreads, 0, (n - m->nthreads) * sizeof(*v));
		m->last_alloc = v;
		m->nthreads = n;
	}
	return 0;
}

static int do_alloc(struct memory *m, uint32_t thread, const struct cygprof_mem_event *ev,
		    uint64_t pos)
{
	struct memory_stack *s = stack_get(m, ev->stack);
	struct memory_block *b;
	int added;

	if (!s)
		return -ENOMEM;
	m->t.allocations++;
	m->t.allocated_bytes += ev->size;
	s->allocations++;
	s->bytes += ev->size;
	int64_t dbytes = (int64_t)ev->size, dblocks = 1;
	uint64_t *at = hmap_ref(&m->live, ev->addr, &added);

	if (!at)
		return -ENOMEM;
	if (!added) {
		b = &m->blocks[*at];
		struct memory_stack *os = &m->stacks[b->stack];

		dbytes -= (int64_t)b->size;
		dblocks = 0;
		m->t.untracked_reallocs++;
		stack_touch(m, os);
		os->live_blocks--;
		os->live_bytes -= b->size;
		m->t.live_blocks--;
		m->t.live_bytes -= b->size;
	} else {
		b = block_new(m);
		if (!b) {
			hmap_del(&m->live, ev->addr);
			return -ENOMEM;
		}
		*at = (uint64_t)(b - m->blocks);
		b->addr = ev->addr;
	}
	b->size = ev->size;
	b->ts_ns = ev->ts_ns;
	b->stack = ev->stack;
	b->thread = thread;
	stack_touch(m, s);
	s->live_blocks++;
	s->live_bytes += ev->size;
	m->t.live_blocks++;
	m->t.live_bytes += ev->size;
	if (m->t.live_bytes > m->t.peak_bytes) {
		m->t.peak_bytes = m->t.live_bytes;
		m->t.peak_blocks = m->t.live_blocks;
		m->t.peak_pos = pos;
		m->t.peak_ts_ns = ev->ts_ns;
		m->pk_ver++;
	}
	m->last_alloc[thread] = ev->addr;
	if (m->opts.heap_change)
		m->opts.heap_change(m->opts.heap_arg, thread, ev->ts_ns, dbytes, dblocks);
	return 0;
}

static void do_free(struct memory *m, uint32_t thread, const struct cygprof_mem_event *ev)
{
	uint64_t i;

	if (hmap_take(&m->live, ev->addr, &i)) {
		struct memory_block *b = &m->blocks[i];
		struct memory_stack *s = &m->stacks[b->stack];

		m->t.frees++;
		m->t.freed_bytes += b->size;
		s->frees++;
		s->freed_bytes += b->size;
		if (b->thread == thread && m->last_alloc[thread] == ev->addr) {
			m->t.temporary_allocations++;
			m->t.temporary_bytes += b->size;
			s->temporary++;
			s->temporary_bytes += b->size;
		}
		if (b->thread != thread) {
			m->t.cross_thread_frees++;
			s->cross_thread_frees++;
		}
		stack_touch(m, s);
		s->live_blocks--;
		s->live_bytes -= b->size;
		m->t.live_blocks--;
		m->t.live_bytes -= b->size;
		if (m->opts.heap_change)
			m->opts.heap_change(m->opts.heap_arg, thread, ev->ts_ns, -(int64_t)b->size, -1);
		block_free(m, b);
	} else {
		m->t.untracked_frees++;
	}
	m->last_alloc[thread] = 0;
}

int memory_event(struct memory *m, uint32_t thread, const struct cygprof_mem_event *ev)
{
	uint64_t pos = m->t.events;
	int err;

	if (m->ended)
		return -EINVAL;
	err = ensure_thread(m, thread);
	if (err)
		return err;
	m->t.events++;
	if (m->t.first_ts_ns == MEMORY_NO_TIME)
		m->t.first_ts_ns = ev->ts_ns;
	if (ev->ts_ns > m->t.last_ts_ns)
		m->t.last_ts_ns = ev->ts_ns;
	if (m->opts.diff && !m->diff_done && ev->ts_ns > m->opts.diff_t2)
		diff_snapshot(m);
	if (!ev->addr)
		return 0;
	heap_advance(m, ev->ts_ns);
	if (ev->op == CYGPROF_MEM_ALLOC) {
		err = do_alloc(m, thread, ev, pos);
		if (err)
			return err;
	} else if (ev->op == CYGPROF_MEM_FREE) {
		do_free(m, thread, ev);
	}
	heap_note(m);
	return 0;
}

int memory_end(struct memory *m)
{
	size_t i;

	if (m->ended)
		return 0;
	if (m->npoints)
		heap_advance(m, m->opts.duration_ns);
	if (!m->diff_done)
		diff_snapshot(m);
	for (i = 0; i < m->nstacks; i++) {
		struct memory_stack *s = &m->stacks[i];

		if (!s->used)
			continue;
		if (m->pk_ver)
			stack_touch(m, s);
		else
			s->peak_blocks = s->peak_bytes = 0;
		s->leaked_allocations = s->live_blocks;
		s->leaked_bytes = s->live_bytes;
	}
	m->t.leaked_allocations = m->t.live_blocks;
	m->t.leaked_bytes = m->t.live_bytes;
	m->ended = 1;
	return 0;
}

/* ---- the k-way merge ------------------------------------------------------- */

struct head {
	struct cygprof_mem_event ev;
	uint32_t thread;
};

/* a before b: time, then FREE before ALLOC, then thread index */
static int head_before(const struct head *a, const struct head *b)
{
	int ra = a->ev.op != CYGPROF_MEM_FREE, rb = b->ev.op != CYGPROF_MEM_FREE;

	if (a->ev.ts_ns != b->ev.ts_ns)
		return a->ev.ts_ns < b->ev.ts_ns;
	if (ra != rb)
		return ra < rb;
	return a->thread < b->thread;
}

static void sift_down(struct head *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, best = i;
		struct head t;

		if (l < n && head_before(&h[l], &h[best]))
			best = l;
		if (r < n && head_before(&h[r], &h[best]))
			best = r;
		if (best == i)
			return;
		t = h[i];
		h[i] = h[best];
		h[best] = t;
		i = best;
	}
}

int memory_run(struct memory *m, size_t nthreads, memory_next_fn next, void *const *srcs)
{
	struct head *h = malloc((nthreads ? nthreads : 1) * sizeof(*h));
	size_t n = 0, i;
	int err = 0, r;

	if (!h)
		return -ENOMEM;
	for (i = 0; i < nthreads; i++) {
		r = next(srcs[i], &h[n].ev);
		if (r < 0) {
			err = r;
			goto out;
		}
		if (r > 0)
			h[n++].thread = (uint32_t)i;
	}
	for (i = n / 2; i-- > 0;)
		sift_down(h, n, i);
	while (n) {
		err = memory_event(m, h[0].thread, &h[0].ev);
		if (err)
			goto out;
		r = next(srcs[h[0].thread], &h[0].ev);
		if (r < 0) {
			err = r;
			goto out;
		}
		if (r == 0)
			h[0] = h[--n];
		sift_down(h, n, 0);
	}
out:
	free(h);
	return err;
}

/* ---- functions ------------------------------------------------------------- */

#define FN_NAMES(m) ((struct name_array){(m)->fns, sizeof(*(m)->fns), offsetof(struct memory_fn, name)})

long memory_find_fn(const struct memory *m, const char *name)
{
	return name_index_find(&m->fn_index, FN_NAMES(m), name);
}

static long fn_intern(struct memory *m, const char *name)
{
	void *base = m->fns;
	long i = name_intern(&m->fn_index, &base, &m->nfns, &m->fns_cap, sizeof(*m->fns),
			     offsetof(struct memory_fn, name), name);

	m->fns = base;
	return i;
}

int memory_frame_skipped(const char *name, const char *obj)
{
	static const char *const alloc_fns[] = {
		"malloc",	"calloc",	  "realloc", "reallocarray", "free",
		"posix_memalign", "aligned_alloc", "memalign", "valloc",	"pvalloc",
	};
	size_t i;

	if (obj && strstr(obj, "libcygprof"))
		return 1;
	if (!name)
		return 0;
	for (i = 0; i < sizeof(alloc_fns) / sizeof(alloc_fns[0]); i++)
		if (!strcmp(name, alloc_fns[i]))
			return 1;
	return !strncmp(name, "operator new", 12) || !strncmp(name, "operator delete", 15);
}

int memory_set_frames(struct memory *m, uint32_t stack, const char *const *names,
		      const char *const *objs, size_t n)
{
	struct memory_stack *s;
	uint32_t *v;
	size_t i = 0, k;

	if (stack >= m->nstacks || !m->stacks[stack].used)
		return -ENOENT;
	while (i < n && memory_frame_skipped(names[i], objs ? objs[i] : NULL))
		i++;
	v = malloc((n - i ? n - i : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (k = 0; i < n; i++, k++) {
		long f = fn_intern(m, names[i] ? names[i] : "?");

		if (f < 0) {
			free(v);
			return (int)f;
		}
		v[k] = (uint32_t)f;
	}
	s = &m->stacks[stack];
	free(s->fns);
	s->fns = v;
	s->nframes = (uint32_t)k;
	return 0;
}

int memory_used_stacks(const struct memory *m, uint32_t **ids, size_t *n)
{
	size_t i, k = 0;
	uint32_t *v = malloc((m->nstacks ? m->nstacks : 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (i = 0; i < m->nstacks; i++)
		if (m->stacks[i].used)
			v[k++] = (uint32_t)i;
	*ids = v;
	*n = k;
	return 0;
}

int memory_functions(struct memory *m)
{
	uint64_t serial = 0;
	size_t i, k;

	for (i = 0; i < m->nstacks; i++) {
		struct memory_stack *s = &m->stacks[i];

		if (s->used && !s->nframes) {
			long f = fn_intern(m, "<unknown>");

			if (f < 0)
				return (int)f;
			free(s->fns);
			s->fns = malloc(sizeof(*s->fns));
			if (!s->fns)
				return -ENOMEM;
			s->fns[0] = (uint32_t)f;
			s->nframes = 1;
		}
	}
	for (i = 0; i < m->nfns; i++) {
		char *name = m->fns[i].name;

		memset(&m->fns[i], 0, sizeof(m->fns[i]));
		m->fns[i].name = name;
	}
	for (i = 0; i < m->nstacks; i++) {
		const struct memory_stack *s = &m->stacks[i];
		struct memory_fn *f;

		if (!s->used)
			continue;
		serial++;
		f = &m->fns[s->fns[0]];
		f->self_allocations += s->allocations;
		f->self_bytes += s->bytes;
		f->self_frees += s->frees;
		f->self_temporary += s->temporary;
		f->self_leaked_allocations += s->leaked_allocations;
		f->self_leaked_bytes += s->leaked_bytes;
		f->self_peak_bytes += s->peak_bytes;
		for (k = 0; k < s->nframes; k++) {
			f = &m->fns[s->fns[k]];
			if (f->mark == serial)
				continue;
			f->mark = serial;
			f->total_allocations += s->allocations;
			f->total_bytes += s->bytes;
			f->total_frees += s->frees;
			f->total_temporary += s->temporary;
			f->total_leaked_allocations += s->leaked_allocations;
			f->total_leaked_bytes += s->leaked_bytes;
			f->total_peak_bytes += s->peak_bytes;
		}
	}
	return 0;
}

/* ---- callers and callees ------------------------------------------------- */

static void rel_add(struct memory_rel *r, const struct memory_stack *s)
{
	r->stacks++;
	r->allocations += s->allocations;
	r->bytes += s->bytes;
	r->frees += s->frees;
	r->temporary += s->temporary;
	r->leaked_allocations += s->leaked_allocations;
	r->leaked_bytes += s->leaked_bytes;
}

static const struct memory *rel_m;

static int cmp_rel(const void *pa, const void *pb)
{
	const struct memory_rel *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	if (a->allocations != b->allocations)
		return a->allocations < b->allocations ? 1 : -1;
	return strcmp(rel_m->fns[a->fn].name, rel_m->fns[b->fn].name);
}

static size_t rel_compact(struct memory_rel *r, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (r[i].stacks)
			r[k++] = r[i];
	if (k)
		qsort(r, k, sizeof(*r), cmp_rel);
	return k;
}

int memory_related(const struct memory *m, const char *pattern, struct memory_rel **callers,
		   size_t *ncallers, struct memory_rel **callees, size_t *ncallees,
		   struct memory_rel *self)
{
	size_t nf = m->nfns ? m->nfns : 1, i, k;
	unsigned char *match = calloc(nf, 1);
	uint64_t *mk_in = calloc(nf, sizeof(uint64_t)), *mk_out = calloc(nf, sizeof(uint64_t));
	struct memory_rel *cr = calloc(nf, sizeof(*cr)), *ce = calloc(nf, sizeof(*ce));
	uint64_t serial = 0;
	int err = -ENOMEM;

	if (!match || !mk_in || !mk_out || !cr || !ce)
		goto out;
	if (self)
		memset(self, 0, sizeof(*self));
	if (self)
		self->fn = MEMORY_NONE;
	for (i = 0; i < m->nfns; i++) {
		cr[i].fn = ce[i].fn = (uint32_t)i;
		match[i] = !strcmp(m->fns[i].name, pattern) ||
			   !fnmatch(pattern, m->fns[i].name, 0);
		if (match[i] && self && self->fn == MEMORY_NONE)
			self->fn = (uint32_t)i;
	}
	for (i = 0; i < m->nstacks; i++) {
		const struct memory_stack *s = &m->stacks[i];
		int any = 0;

		if (!s->used || !s->fns)
			continue;
		serial++;
		for (k = 0; k < s->nframes; k++) {
			uint32_t f = s->fns[k];

			if (!match[f])
				continue;
			any = 1;
			if (k + 1 < s->nframes && !match[s->fns[k + 1]]) {
				uint32_t c = s->fns[k + 1];

				if (mk_out[c] != serial) {
					mk_out[c] = serial;
					rel_add(&cr[c], s);
				}
			}
			if (k > 0 && !match[s->fns[k - 1]]) {
				uint32_t c = s->fns[k - 1];

				if (mk_in[c] != serial) {
					mk_in[c] = serial;
					rel_add(&ce[c], s);
				}
			}
		}
		if (any && self)
			rel_add(self, s);
	}
	rel_m = m;
	*ncallers = rel_compact(cr, m->nfns);
	*ncallees = rel_compact(ce, m->nfns);
	*callers = cr;
	*callees = ce;
	cr = ce = NULL;
	err = 0;
out:
	free(match);
	free(mk_in);
	free(mk_out);
	free(cr);
	free(ce);
	return err;
}
