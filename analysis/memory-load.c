/* SPDX-License-Identifier: MIT */
/* memory-load.c - run the memory analysis over a view of a capture: one
 * cursor per thread merged by memory_run(), the stacks named through the
 * view. */
#include "memory.h"
#include "view.h"

#include <errno.h>
#include <stdlib.h>

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

/* One thread's events.  Each process image has its own address space: the
 * image index goes into the address's top 16 bits (user addresses use 48),
 * so a block freed in a fork child never pairs with the parent's copy (the
 * child's free of an inherited block is an untracked free). */
struct source {
	struct cygprof_mem_cursor *cur;
	uint64_t space;
	const struct memory_opts *o;
	uint64_t *done, total;
};

static int cursor_next(void *src, struct cygprof_mem_event *ev)
{
	struct source *s = src;
	int r = cygprof_mem_cursor_next(s->cur, ev);

	if (r == 1 && s->o->progress && !(++*s->done & 0xfffff))
		s->o->progress(*s->done, s->total, s->o->progress_arg);
	if (r == 1 && ev->addr)
		ev->addr = (ev->addr & ((1ULL << 48) - 1)) | s->space;
	return r;
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
	/* thread indices are dense: source i is thread threads[i].idx == i */
	for (i = 0; i < nthreads; i++) {
		if (threads[i].idx != i) {
			err = CYGPROF_E_CORRUPT;
			goto fail;
		}
		err = view_mem_cursor(v, threads[i].idx, &cur[i].cur);
		if (err)
			goto fail;
		cur[i].space = (uint64_t)(threads[i].proc_idx & 0xffff) << 48;
		cur[i].o = o;
		cur[i].done = &done;
		cur[i].total = total;
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
	memory_free(m);
	return err;
}
