/* SPDX-License-Identifier: MIT */
/* memory-load.c - run the memory analysis over a capture: one cursor per
 * thread merged by memory_run(), stacks named through the stash and each
 * process's symbols, frames with source lines for printing. */
#include "memory.h"
#include "srcline.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct proc_syms {
	int loaded;
	struct cygprof_symbol *syms;
	size_t n;
};

struct memory_load {
	struct cygprof_capture *cap;
	struct memory *m;
	struct cygprof_stack_node *stash;
	size_t nstash;
	struct cygprof_object *objs;
	size_t nobjs;
	struct proc_syms *ps;
	size_t nprocs;
	struct srcline *sl;
};

/* A resolved frame: name (a symbol's, or NULL and the address in hex in
 * buf) and the object holding it. */
struct rframe {
	const char *name;
	const struct cygprof_object *obj;
	uint64_t addr; /* the address looked up (RA frames: addr - 1) */
	char buf[24];
};

static const struct proc_syms *proc_syms(struct memory_load *l, uint32_t proc)
{
	struct proc_syms *q;
	int err;

	if (proc >= l->nprocs)
		return NULL;
	q = &l->ps[proc];
	if (!q->loaded) {
		err = cygprof_capture_get_symbols(l->cap, proc, &q->syms, &q->n);
		if (err) {
			q->syms = NULL;
			q->n = 0;
		}
		q->loaded = 1;
	}
	return q;
}

static const struct cygprof_object *find_object(const struct memory_load *l, uint32_t proc,
						uint32_t idx, uint64_t addr)
{
	size_t i;

	if (idx != CYGPROF_NONE) {
		if (idx < l->nobjs && l->objs[idx].idx == idx)
			return &l->objs[idx];
		for (i = 0; i < l->nobjs; i++)
			if (l->objs[i].idx == idx)
				return &l->objs[i];
	}
	for (i = 0; i < l->nobjs; i++)
		if (l->objs[i].proc_idx == proc && l->objs[i].start <= addr && addr < l->objs[i].end)
			return &l->objs[i];
	return NULL;
}

static void resolve(struct memory_load *l, const struct cygprof_stack_node *nd, struct rframe *f)
{
	const struct proc_syms *q = proc_syms(l, nd->proc_idx);
	const struct cygprof_symbol *s = NULL;
	uint64_t a = nd->addr;

	if (nd->kind == CYGPROF_FRAME_RA && a)
		a--;
	f->addr = a;
	if (q && q->n)
		s = cygprof_symbols_lookup(q->syms, q->n, a);
	if (s && s->name && s->name[0]) {
		f->name = s->name;
	} else {
		snprintf(f->buf, sizeof(f->buf), "0x%" PRIx64, nd->addr);
		f->name = NULL;
	}
	f->obj = find_object(l, nd->proc_idx, s ? s->object_idx : CYGPROF_NONE, a);
}

/* The frames of a stack, innermost first (none for an unknown id). */
static const char *rname(const struct rframe *f)
{
	return f->name ? f->name : f->buf;
}

static int walk(struct memory_load *l, uint32_t stack, struct rframe **out, size_t *n)
{
	struct rframe *v = NULL;
	size_t k = 0, cap = 0;
	uint32_t id = stack;

	while (id && id <= l->nstash && k <= l->nstash) {
		const struct cygprof_stack_node *nd = &l->stash[id - 1];

		if (k == cap) {
			struct rframe *t;

			cap = cap ? cap * 2 : 32;
			t = realloc(v, cap * sizeof(*t));
			if (!t) {
				free(v);
				return -ENOMEM;
			}
			v = t;
		}
		resolve(l, nd, &v[k]);
		k++;
		id = nd->parent;
	}
	*out = v;
	*n = k;
	return 0;
}

static int name_stacks(struct memory_load *l)
{
	const char **names = NULL, **objs = NULL;
	uint32_t *ids;
	size_t nids, i, j, cap = 0;
	int err;

	err = memory_used_stacks(l->m, &ids, &nids);
	if (err)
		return err;
	for (i = 0; i < nids && !err; i++) {
		struct rframe *f;
		size_t n;

		err = walk(l, ids[i], &f, &n);
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
			names[j] = rname(&f[j]);
			objs[j] = f[j].obj ? f[j].obj->path : NULL;
		}
		if (n)
			err = memory_set_frames(l->m, ids[i], names, objs, n);
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

static uint64_t capture_duration(struct cygprof_capture *cap, const struct cygprof_thread *t,
				 size_t n)
{
	uint64_t d = 0;
	char *val = NULL;
	size_t i;

	if (!cygprof_capture_get_meta(cap, "duration_ns", &val)) {
		d = strtoull(val, NULL, 10);
		free(val);
	}
	for (i = 0; !d && i < n; i++)
		if (t[i].end_ns > d)
			d = t[i].end_ns;
	return d;
}

int memory_load(struct cygprof_capture *cap, const struct memory_opts *o,
		struct memory_load **out)
{
	struct cygprof_thread *threads = NULL;
	struct cygprof_proc *procs = NULL;
	struct source *cur = NULL;
	void **srcs = NULL;
	uint64_t done = 0, total = 0;
	struct memory_opts opts = *o;
	struct memory_load *l;
	size_t nthreads = 0, nprocs = 0, i;
	int err;

	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->cap = cap;
	err = cygprof_capture_get_threads(cap, &threads, &nthreads);
	if (err)
		goto fail;
	err = cygprof_capture_get_procs(cap, &procs, &nprocs);
	if (err)
		goto fail;
	l->nprocs = nprocs;
	l->ps = calloc(l->nprocs ? l->nprocs : 1, sizeof(*l->ps));
	if (!l->ps) {
		err = -ENOMEM;
		goto fail;
	}
	err = cygprof_capture_get_objects(cap, &l->objs, &l->nobjs);
	if (err == CYGPROF_E_NOTFOUND) {
		l->objs = NULL;
		l->nobjs = 0;
	} else if (err) {
		goto fail;
	}
	err = cygprof_capture_get_stacks(cap, &l->stash, &l->nstash);
	if (err == CYGPROF_E_NOTFOUND) {
		l->stash = NULL;
		l->nstash = 0;
	} else if (err) {
		goto fail;
	}
	for (i = 0; i < l->nstash; i++)
		if (l->stash[i].id != i + 1) {
			err = CYGPROF_E_CORRUPT;
			goto fail;
		}

	if (!opts.duration_ns)
		opts.duration_ns = capture_duration(cap, threads, nthreads);
	l->m = memory_new(&opts);
	cur = calloc(nthreads ? nthreads : 1, sizeof(*cur));
	srcs = calloc(nthreads ? nthreads : 1, sizeof(*srcs));
	if (!l->m || !cur || !srcs) {
		err = -ENOMEM;
		goto fail;
	}
	/* thread indices are dense: source i is thread threads[i].idx == i */
	for (i = 0; i < nthreads; i++) {
		if (threads[i].idx != i) {
			err = CYGPROF_E_CORRUPT;
			goto fail;
		}
		err = cygprof_mem_cursor_open(cap, threads[i].idx, &cur[i].cur);
		if (err)
			goto fail;
		cur[i].space = (uint64_t)(threads[i].proc_idx & 0xffff) << 48;
		cur[i].o = o;
		cur[i].done = &done;
		srcs[i] = &cur[i];
		uint64_t k = 0;
		if (o->progress && !cygprof_capture_mem_count(cap, threads[i].idx, &k))
			total += k;
	}
	for (i = 0; i < nthreads; i++)
		cur[i].total = total;
	err = memory_run(l->m, nthreads, cursor_next, srcs);
	if (!err)
		err = memory_end(l->m);
	if (!err)
		err = name_stacks(l);
	if (!err)
		err = memory_functions(l->m);
	if (err)
		goto fail;
	*out = l;
	l = NULL;
fail:
	if (cur)
		for (i = 0; i < nthreads; i++)
			cygprof_mem_cursor_close(cur[i].cur);
	free(cur);
	free(srcs);
	if (procs)
		cygprof_procs_free(procs, nprocs);
	free(threads);
	memory_load_free(l);
	return err;
}

struct memory *memory_load_result(struct memory_load *l)
{
	return l->m;
}

void memory_load_free(struct memory_load *l)
{
	size_t i;

	if (!l)
		return;
	if (l->ps)
		for (i = 0; i < l->nprocs; i++)
			if (l->ps[i].syms)
				cygprof_symbols_free(l->ps[i].syms, l->ps[i].n);
	free(l->ps);
	if (l->objs)
		cygprof_objects_free(l->objs, l->nobjs);
	free(l->stash);
	srcline_free(l->sl);
	memory_free(l->m);
	free(l);
}

int memory_load_frames(struct memory_load *l, uint32_t stack, int lines,
		       struct memory_frame **frames, size_t *n)
{
	struct memory_frame *v;
	struct rframe *f;
	size_t nf, i = 0, k;
	int err;

	*frames = NULL;
	*n = 0;
	err = walk(l, stack, &f, &nf);
	if (err)
		return err;
	while (i < nf && memory_frame_skipped(rname(&f[i]), f[i].obj ? f[i].obj->path : NULL))
		i++;
	v = calloc(nf - i ? 2 * (nf - i) : 1, sizeof(*v)); /* room for inlined callers */
	if (!v) {
		free(f);
		return -ENOMEM;
	}
	if (lines && !l->sl) {
		l->sl = srcline_new(l->m->opts.debuginfo);
		if (!l->sl) {
			free(f);
			free(v);
			return -ENOMEM;
		}
	}
	for (k = 0; i < nf; i++, k++) {
		const struct cygprof_object *o = f[i].obj;

		memset(&v[k], 0, sizeof(v[k]));
		v[k].addr = f[i].addr;
		if (f[i].name) {
			v[k].name = f[i].name;
		} else {
			memcpy(v[k].buf, f[i].buf, sizeof(v[k].buf));
			v[k].name = v[k].buf;
		}
		if (lines && o) {
			const char *inl;
			srcline_lookup(l->sl, o, f[i].addr, &v[k].file, &v[k].line);
			uint32_t cl;
			if (!srcline_inlined(l->sl, o, f[i].addr, &inl, &cl) && strcmp(inl, v[k].name)) {
				v[k].inlined_in = v[k].name;
				v[k].name = inl;
				/* the caller as a frame of its own, at the inlined call */
				if (!(i + 1 < nf && f[i + 1].name && !strcmp(f[i + 1].name, inl))) {
					k++;
					memset(&v[k], 0, sizeof(v[k]));
					v[k].addr = f[i].addr;
					v[k].name = v[k - 1].inlined_in;
					v[k].file = v[k - 1].file;
					v[k].line = cl;
				}
			}
		}
		/* The instrumentation also entered the inlined function: its
		 * frame from the call path says again what the line said. */
		if (k && v[k - 1].inlined_in && !strcmp(v[k - 1].name, v[k].name) && !v[k].inlined_in) {
			k--;
			continue;
		}
	}
	free(f);
	*frames = v;
	*n = k;
	return 0;
}
