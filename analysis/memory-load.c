/* SPDX-License-Identifier: MIT */
/* memory-load.c - run the memory analysis over a view of a capture: one
 * cursor per thread merged by memory_run(), the stacks named through the
 * view. */
#include "hmap.h"
#include "memory.h"
#include "view.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The frames a filtered view keeps of a stack (innermost first, n of
 * them): -F cuts the callers above the outermost matching frame, -N takes
 * out matching frames, -D keeps the D outermost of what is left (the
 * allocation is charged to the deepest kept frame, as a call's time to its
 * deepest kept caller). */
static size_t filter_frames(const struct view_filter *f, struct view_frame *fr, size_t n)
{
	size_t k = n, m = 0;

	if (!f)
		return n;
	if (f->nfilter) {
		while (k > 0 && !view_name_matches(f->filter, f->nfilter, fr[k - 1].name))
			k--;
		if (!k)
			return 0;
	}
	for (size_t i = 0; i < k; i++)
		if (!f->nnotrace || !view_name_matches(f->notrace, f->nnotrace, fr[i].name))
			fr[m++] = fr[i];
	if (f->depth && m > f->depth) {
		memmove(fr, fr + (m - f->depth), f->depth * sizeof *fr);
		m = f->depth;
	}
	return m;
}

/* Every stack the events used, named frame by frame (innermost first). */
static int name_stacks(struct view *v, struct memory *m)
{
	const char **names = NULL, **objs = NULL;
	uint32_t *ids;
	size_t nids, i, j, cap = 0;
	int err;

	err = memory_used_stacks(m, &ids, &nids);
	if (err)
		return err;
	for (i = 0; i < nids && !err; i++) {
		struct view_frame *f;
		size_t n;

		err = view_stack(v, ids[i], 0, NULL, &f, &n);
		if (err)
			break;
		n = filter_frames(view_get_filter(v), f, n);
		if (n > cap) {
			const char **a = realloc(names, n * sizeof(*a));
			const char **b = a ? realloc(objs, n * sizeof(*b)) : NULL;

			if (a)
				names = a;
			if (!a || !b) {
				free(f);
				err = -ENOMEM;
				break;
			}
			objs = b;
			cap = n;
		}
		for (j = 0; j < n; j++) {
			names[j] = f[j].name;
			objs[j] = f[j].obj ? f[j].obj->path : NULL;
		}
		if (n)
			err = memory_set_frames(m, ids[i], names, objs, n);
		free(f);
	}
	free(names);
	free(objs);
	free(ids);
	return err;
}

/* With a filter (-F, --time-range): the allocations left out, and the
 * blocks they made, whose frees are left out too (shared by all threads: a
 * block may be freed by another thread; events come in time order). */
struct mem_filter {
	struct view *v;
	const struct view_filter *f;
	signed char *keep; /* per stack id: 0 not decided, 1 kept, -1 left out */
	size_t nstash;
	struct hmap set;   /* the addresses of the blocks left out */
	int err;
};

/* Whether an allocation with this stack passes -F. */
static int stack_kept(struct mem_filter *mf, uint32_t stack)
{
	struct view_frame *fr;
	size_t n, i;
	int keep = 0;

	if (!mf->f->nfilter)
		return 1;
	if (stack && stack <= mf->nstash && mf->keep[stack - 1])
		return mf->keep[stack - 1] > 0;
	if (!stack || view_stack(mf->v, stack, 0, NULL, &fr, &n))
		return 0;
	for (i = 0; i < n && !keep; i++)
		keep = view_name_matches(mf->f->filter, mf->f->nfilter, fr[i].name);
	free(fr);
	if (stack <= mf->nstash)
		mf->keep[stack - 1] = keep ? 1 : -1;
	return keep;
}

/* One thread's events, their addresses keyed by process image
 * (memory_addr_key()). */
struct source {
	struct cygprof_mem_cursor *cur;
	uint32_t proc_idx;
	const struct memory_opts *o;
	uint64_t *done, total;
	struct mem_filter *mf;
};

static int cursor_next(void *src, struct cygprof_mem_event *ev)
{
	struct source *s = src;
	struct mem_filter *mf = s->mf;
	int r;

	for (;;) {
		r = cygprof_mem_cursor_next(s->cur, ev);
		if (r == 1 && s->o->progress && !(++*s->done & 0xfffff))
			s->o->progress(*s->done, s->total, s->o->progress_arg);
		if (r == 1)
			ev->addr = memory_addr_key(ev->addr, s->proc_idx);
		if (r != 1 || !mf)
			return r;
		if (ev->op == CYGPROF_MEM_FREE) {
			if (ev->addr && hmap_del(&mf->set, ev->addr))
				continue; /* the block of an allocation left out */
			return r;
		}
		if ((!mf->f->has_range || (ev->ts_ns >= mf->f->t0 && ev->ts_ns < mf->f->t1)) &&
		    stack_kept(mf, ev->stack))
			return r;
		if (ev->addr && (mf->err = hmap_put(&mf->set, ev->addr, 1)))
			return mf->err;
	}
}

int memory_load(struct view *v, const struct memory_opts *o, struct memory **out)
{
	const struct cygprof_thread *threads;
	const struct cygprof_stack_node *stash;
	const struct cygprof_object *objs;
	struct source *cur = NULL;
	void **srcs = NULL;
	uint64_t done = 0, total = 0;
	struct memory_opts opts = *o;
	struct memory *m = NULL;
	struct mem_filter mf = {0}, *mfp = NULL;
	size_t nthreads = 0, nobjs, nstash, i;
	int err;

	*out = NULL;
	err = view_threads(v, &threads, &nthreads);
	if (!err)
		err = view_objects(v, &objs, &nobjs);
	if (!err)
		err = view_stash(v, &stash, &nstash);
	if (err)
		return err;
	if (!opts.duration_ns)
		opts.duration_ns = view_duration_ns(v);
	m = memory_new(&opts);
	cur = calloc(nthreads ? nthreads : 1, sizeof(*cur));
	srcs = calloc(nthreads ? nthreads : 1, sizeof(*srcs));
	if (!m || !cur || !srcs) {
		err = -ENOMEM;
		goto fail;
	}
	if (o->progress)
		view_mem_count(v, &total);
	mf.set.sparse = 1; /* each free of a left-out block deletes it */
	mf.f = view_get_filter(v);
	if (mf.f && (mf.f->nfilter || mf.f->has_range)) {
		mf.v = v;
		mf.nstash = nstash;
		mf.keep = calloc(nstash ? nstash : 1, 1);
		if (!mf.keep) {
			err = -ENOMEM;
			goto fail;
		}
		mfp = &mf;
	}
	/* thread indices are dense: source i is thread threads[i].idx == i */
	for (i = 0; i < nthreads; i++) {
		if (threads[i].idx != i) {
			err = CYGPROF_E_CORRUPT;
			goto fail;
		}
		err = view_mem_cursor(v, threads[i].idx, &cur[i].cur);
		if (err)
			goto fail;
		cur[i].proc_idx = threads[i].proc_idx;
		cur[i].o = o;
		cur[i].done = &done;
		cur[i].total = total;
		cur[i].mf = mfp;
		srcs[i] = &cur[i];
	}
	err = memory_run(m, nthreads, cursor_next, srcs);
	if (!err)
		err = memory_end(m);
	if (!err)
		err = name_stacks(v, m);
	if (!err)
		err = memory_functions(m);
	if (err)
		goto fail;
	*out = m;
	m = NULL;
fail:
	if (cur)
		for (i = 0; i < nthreads; i++)
			cygprof_mem_cursor_close(cur[i].cur);
	free(cur);
	free(srcs);
	free(mf.keep);
	hmap_release(&mf.set);
	memory_free(m);
	return err;
}
