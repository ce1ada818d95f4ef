/* SPDX-License-Identifier: MIT */
/* view-symbols.c - the naming side of a view: objects, each process's
 * stored symbols (read once), the fallback resolver for the names the
 * capture left as placeholders (recognised by symbols/fnname.h), function
 * ids, hex names, the stack stash and its frames with source lines. */
#include "view-private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "debuginfo.h"
#include "fnname.h"
#include "srcline.h"

void view_symbols_release(struct view *v)
{
	uint64_t key, val;
	size_t i;

	if (v->syms)
		for (i = 0; i < v->nprocs; i++)
			if (v->syms[i].syms)
				cygprof_symbols_free(v->syms[i].syms, v->syms[i].n);
	free(v->syms);
	if (v->objs)
		cygprof_objects_free(v->objs, v->nobjs);
	for (i = 0; i < v->nfns; i += VIEW_FN_BLOCK)
		free(v->fn_blocks[i / VIEW_FN_BLOCK]);
	free(v->fn_blocks);
	hindex_release(&v->fn_index);
	for (size_t pos = 0; hmap_next(&v->hex, &pos, &key, &val);)
		free((char *)(uintptr_t)val);
	hmap_release(&v->hex);
	for (i = 0; i < v->ndbg; i++)
		free(v->dbg[i].name);
	free(v->dbg);
	hindex_release(&v->dbg_index);
	free(v->stash);
}

void view_set_resolver(struct view *v, view_resolve_fn fn, void *arg)
{
	v->resolve = fn;
	v->resolve_arg = arg;
}

/* ---- objects ------------------------------------------------------------------ */

static int load_objects(struct view *v)
{
	int err;

	if (v->objs_state)
		return v->objs_state < 0 ? v->objs_state : 0;
	err = cygprof_capture_get_objects(v->cap, &v->objs, &v->nobjs);
	if (err == CYGPROF_E_NOTFOUND)
		err = 0;
	if (err) {
		v->objs = NULL;
		v->nobjs = 0;
		v->objs_state = err;
		return err;
	}
	v->objs_state = 1;
	return 0;
}

int view_objects(struct view *v, const struct cygprof_object **objs, size_t *n)
{
	int err = load_objects(v);

	*objs = v->objs;
	*n = v->nobjs;
	return err;
}

const struct cygprof_object *view_object(struct view *v, uint32_t idx)
{
	size_t i;

	if (idx == CYGPROF_NONE || load_objects(v))
		return NULL;
	if (idx < v->nobjs && v->objs[idx].idx == idx)
		return &v->objs[idx];
	for (i = 0; i < v->nobjs; i++)
		if (v->objs[i].idx == idx)
			return &v->objs[i];
	return NULL;
}

const struct cygprof_object *view_object_at(struct view *v, uint32_t proc, uint64_t addr)
{
	const struct cygprof_object *o = v->last_obj;
	size_t i;

	if (o && o->proc_idx == proc && o->start <= addr && addr < o->end)
		return o;
	if (load_objects(v))
		return NULL;
	for (i = 0; i < v->nobjs; i++) {
		o = &v->objs[i];
		if (o->proc_idx == proc && o->start <= addr && addr < o->end) {
			v->last_obj = o;
			return o;
		}
	}
	return NULL;
}

const struct cygprof_object *view_exe_object(struct view *v, uint32_t proc)
{
	const struct cygprof_proc *p = view_proc(v, proc);
	size_t i;

	if (!p || !p->exe || load_objects(v))
		return NULL;
	for (i = 0; i < v->nobjs; i++)
		if (v->objs[i].proc_idx == proc && v->objs[i].path && !strcmp(v->objs[i].path, p->exe))
			return &v->objs[i];
	return NULL;
}

/* ---- symbols ------------------------------------------------------------------ */

static int load_syms(struct view *v, uint32_t proc, struct view_proc_syms **out)
{
	struct view_proc_syms *q;
	int err;

	*out = NULL;
	err = view_load_procs(v);
	if (err)
		return err;
	if (proc >= v->nprocs)
		return 0;
	if (!v->syms) {
		v->syms = calloc(v->nprocs, sizeof(*v->syms));
		if (!v->syms)
			return -ENOMEM;
	}
	q = &v->syms[proc];
	if (!q->state) {
		err = cygprof_capture_get_symbols(v->cap, proc, &q->syms, &q->n);
		if (err == CYGPROF_E_NOTFOUND)
			err = 0;
		if (err) {
			q->syms = NULL;
			q->n = 0;
		}
		q->state = err ? err : 1;
	}
	if (q->state < 0)
		return q->state;
	*out = q;
	return 0;
}

/* A debug-file name by object and start (dbg_index). */
struct dbg_key {
	uint32_t obj;
	uint64_t start;
};

static int dbg_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct view_dbg_ent *e = &((const struct view *)ctx)->dbg[i];
	const struct dbg_key *k = key;

	return e->obj == k->obj && e->start == k->start;
}

static uint64_t dbg_hash_at(const void *ctx, uint32_t i)
{
	const struct view_dbg_ent *e = &((const struct view *)ctx)->dbg[i];

	return hash_addr(e->obj, e->start);
}

/* Keep name (owned) as the name of obj's function at file address start:
 * the kept copy is returned, name freed when one was kept already; NULL
 * when out of memory. */
static const char *dbg_keep(struct view *v, uint32_t obj, uint64_t start, char *name)
{
	struct dbg_key k = {obj, start};
	uint64_t h = hash_addr(obj, start);
	long i = hindex_find(&v->dbg_index, h, dbg_eq, v, &k);

	if (i >= 0) {
		free(name);
		return v->dbg[i].name;
	}
	if (ARRAY_GROW(v->dbg, v->dbg_cap, v->ndbg + 1) ||
	    hindex_add(&v->dbg_index, h, dbg_hash_at, v)) {
		free(name);
		return NULL;
	}
	v->dbg[v->ndbg].obj = obj;
	v->dbg[v->ndbg].start = start;
	v->dbg[v->ndbg++].name = name;
	return name;
}

/* The resolver of a view with a debug-file search (opts.debuginfo): the
 * symbol table of the object as found now (under --symfs, by build-id) or
 * of its separate debug file (--debug-dir, the build-id directories,
 * .gnu_debuglink, debuginfod), matched by the recorded build-id. */
static int debug_resolve(struct view *v, const struct cygprof_object *obj, uint64_t file_addr,
			 struct view_sym *out)
{
	uint64_t start = 0, size = 0;
	char *name = NULL;
	int err;

	err = sym_name_from_debug(v->opts.debuginfo, obj->path, obj->build_id,
				  obj->build_id_len, 0, file_addr, &name, &start, &size);
	if (err)
		return err;
	out->name = dbg_keep(v, obj->idx, start, name);
	if (!out->name)
		return -ENOMEM;
	out->start = start;
	out->size = size;
	return 0;
}

int view_symbol(struct view *v, uint32_t proc, uint64_t addr, struct view_sym *out)
{
	const struct cygprof_symbol *s = NULL;
	struct view_proc_syms *q;
	struct view_sym r;
	int err;

	memset(out, 0, sizeof(*out));
	err = load_syms(v, proc, &q);
	if (!err && q && q->n)
		s = cygprof_symbols_lookup(q->syms, q->n, addr);
	out->obj = view_object(v, s ? s->object_idx : CYGPROF_NONE);
	if (!out->obj)
		out->obj = view_object_at(v, proc, addr);
	if (err)
		return err;
	/* The one place where names the capture lacks come from elsewhere
	 * (report-time debug info, matched by build-id). */
	if ((v->resolve || v->opts.debuginfo) && out->obj && (!s || sym_fn_unnamed(s->name, out->obj->path))) {
		uint64_t fa = addr - out->obj->bias;

		memset(&r, 0, sizeof(r));
		err = v->resolve ? v->resolve(v->resolve_arg, out->obj, fa, &r)
				 : debug_resolve(v, out->obj, fa, &r);
		if (err == -ENOMEM)
			return err;
		if (!err && r.name) {
			out->name = r.name;
			out->start = r.start + out->obj->bias;
			out->size = r.size;
			return 0;
		}
	}
	if (!s)
		return -ENOENT;
	out->name = s->name ? s->name : "";
	out->start = s->addr;
	out->size = s->size;
	return 0;
}

/* ---- hex names ------------------------------------------------------------------ */

const char *view_hex(struct view *v, uint64_t addr)
{
	char *s;
	uint64_t val;

	if (hmap_get(&v->hex, addr, &val))
		return (const char *)(uintptr_t)val;
	s = sym_fn_name(NULL, NULL, 0, 0, addr); /* "0x...", as the collector spells it */
	if (!s || hmap_put(&v->hex, addr, (uintptr_t)s)) {
		free(s);
		return NULL;
	}
	return s;
}

/* ---- functions ------------------------------------------------------------------ */

static const uint64_t *sort_calls;

static int by_calls_desc(const void *a, const void *b)
{
	uint64_t x = sort_calls[*(const uint32_t *)a], y = sort_calls[*(const uint32_t *)b];

	return x < y ? 1 : x > y ? -1 : 0;
}

int view_sysheader_calls(struct view *v, uint64_t *sys, uint64_t *total)
{
	const struct cygprof_thread *th;
	const struct view_tree *tr;
	struct srcline *sl;
	uint64_t *calls = NULL;
	uint32_t *ids = NULL;
	size_t nt, i, k, n;
	int err;

	*sys = *total = 0;
	if ((err = view_threads(v, &th, &nt)))
		return err;
	/* every tree read first: that names every function (ids) */
	for (i = 0; i < nt; i++)
		if ((err = view_tree(v, th[i].idx, &tr)))
			return err;
	n = view_nfns(v);
	if (!n)
		return 0;
	calls = calloc(n, sizeof *calls);
	ids = malloc(n * sizeof *ids);
	if (!calls || !ids) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nt; i++) {
		if ((err = view_tree(v, th[i].idx, &tr)))
			goto out;
		for (k = 1; k < tr->n; k++)
			if (tr->fn[k] < n) {
				calls[tr->fn[k]] += tr->nodes[k].calls;
				*total += tr->nodes[k].calls;
			}
	}
	for (i = 0; i < n; i++)
		ids[i] = (uint32_t)i;
	sort_calls = calls;
	qsort(ids, n, sizeof *ids, by_calls_desc);
	sl = view_srcline(v);
	uint64_t other = 0;
	for (i = 0; sl && i < n && i < VIEW_SYSHDR_MAX_FNS && calls[ids[i]]; i++) {
		const struct view_fn *f = view_fn(v, ids[i]);
		const char *file;
		uint32_t line;

		/* no longer most whatever the rest are: the DWARF of the
		 * rest is not read */
		if (other * 2 >= *total)
			break;
		/* the line of its entry address (the line table: a DIE
		 * walk per function, srcline_function(), costs 3x a report
		 * on a C++ program whose units are the STL's headers) */
		if (f && f->obj &&
		    !srcline_lookup(sl, f->obj, f->has_sym ? f->start : f->addr, &file, &line) &&
		    !strncmp(file, VIEW_SYSTEM_HEADERS, strlen(VIEW_SYSTEM_HEADERS)))
			*sys += calls[ids[i]];
		else
			other += calls[ids[i]];
	}
	err = 0;
out:
	free(calls);
	free(ids);
	return err;
}

const struct view_fn *view_fn(struct view *v, uint32_t id)
{
	if (id >= v->nfns)
		return NULL;
	return &v->fn_blocks[id / VIEW_FN_BLOCK][id % VIEW_FN_BLOCK];
}

size_t view_nfns(const struct view *v)
{
	return v->nfns;
}

/* A function by process and address (fn_index). */
struct fn_key {
	uint32_t proc;
	uint64_t addr;
};

/* Function i (< nfns). */
static inline const struct view_fn *fn_at(const struct view *v, uint32_t i)
{
	return &v->fn_blocks[i / VIEW_FN_BLOCK][i % VIEW_FN_BLOCK];
}

static uint64_t fn_hash(uint32_t proc, uint64_t addr)
{
	return hash_addr(proc, addr);
}

static int fn_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct view_fn *f = fn_at(ctx, i);
	const struct fn_key *k = key;

	return f->addr == k->addr && f->proc == k->proc;
}

static uint64_t fn_hash_at(const void *ctx, uint32_t i)
{
	const struct view_fn *f = fn_at(ctx, i);

	return fn_hash(f->proc, f->addr);
}

int view_fn_at(struct view *v, uint32_t proc, uint64_t addr, uint32_t *id)
{
	struct fn_key k = {proc, addr};
	uint64_t h = fn_hash(proc, addr);
	long i = hindex_find(&v->fn_index, h, fn_eq, v, &k);
	struct view_sym s;
	struct view_fn *f;
	int err;

	if (i >= 0) {
		*id = (uint32_t)i;
		return 0;
	}
	/* room to index it first: nothing to undo once its block is made */
	if ((err = hindex_reserve(&v->fn_index, v->nfns + 1, fn_hash_at, v)))
		return err;
	if (v->nfns >= UINT32_MAX - 1)
		return -ENOMEM;
	err = view_symbol(v, proc, addr, &s);
	if (err && err != -ENOENT)
		return err;
	if (v->nfns % VIEW_FN_BLOCK == 0) {
		size_t b = v->nfns / VIEW_FN_BLOCK;

		if (ARRAY_GROW(v->fn_blocks, v->fn_blocks_cap, b + 1))
			return -ENOMEM;
		v->fn_blocks[b] = malloc(VIEW_FN_BLOCK * sizeof(struct view_fn));
		if (!v->fn_blocks[b])
			return -ENOMEM;
	}
	f = &v->fn_blocks[v->nfns / VIEW_FN_BLOCK][v->nfns % VIEW_FN_BLOCK];
	memset(f, 0, sizeof(*f));
	f->proc = proc;
	f->addr = addr;
	f->obj = s.obj;
	f->has_sym = !err;
	f->start = s.start;
	f->size = s.size;
	f->name = !err && s.name[0] ? s.name : view_hex(v, addr);
	if (!f->name)
		return -ENOMEM;
	hindex_add(&v->fn_index, h, fn_hash_at, v); /* reserved */
	*id = (uint32_t)v->nfns++;
	return 0;
}

/* ---- stacks ---------------------------------------------------------------------- */

int view_stash(struct view *v, const struct cygprof_stack_node **s, size_t *n)
{
	size_t i;
	int err;

	*s = NULL;
	*n = 0;
	if (!v->stash_state) {
		err = cygprof_capture_get_stacks(v->cap, &v->stash, &v->nstash);
		if (err == CYGPROF_E_NOTFOUND)
			err = 0;
		for (i = 0; !err && i < v->nstash; i++)
			if (v->stash[i].id != i + 1)
				err = CYGPROF_E_CORRUPT;
		if (err) {
			free(v->stash);
			v->stash = NULL;
			v->nstash = 0;
			return err;
		}
		v->stash_state = 1;
	}
	*s = v->stash;
	*n = v->nstash;
	return 0;
}

/* One frame named: the symbol's name, else the stored address in hex.
 * Symbols that cannot be read leave the frame unnamed. */
static int name_frame(struct view *v, const struct cygprof_stack_node *nd, struct view_frame *f)
{
	struct view_sym s;

	memset(f, 0, sizeof(*f));
	f->raw = nd->addr;
	f->addr = nd->kind == CYGPROF_FRAME_RA && nd->addr ? nd->addr - 1 : nd->addr;
	f->proc = nd->proc_idx;
	f->kind = nd->kind;
	if (!view_symbol(v, nd->proc_idx, f->addr, &s) && s.name[0])
		f->name = s.name;
	else
		f->name = view_hex(v, nd->addr);
	f->obj = s.obj;
	return f->name ? 0 : -ENOMEM;
}

/* With source lines: f[i] (of nf) becomes one frame at v[k], or two when it
 * is in inlined code (the inlined function, then its caller at the inlined
 * call).  Returns the frames written. */
static size_t frame_lines(struct srcline *sl, const struct view_frame *f, size_t i, size_t nf,
			  struct view_frame *out)
{
	const struct cygprof_object *o = f[i].obj;
	const char *inl;
	uint32_t cl;

	out[0] = f[i];
	if (!o)
		return 1;
	srcline_lookup(sl, o, f[i].addr, &out[0].file, &out[0].line);
	if (srcline_inlined(sl, o, f[i].addr, &inl, &cl) || !strcmp(inl, out[0].name))
		return 1;
	out[0].inlined_in = out[0].name;
	out[0].name = inl;
	/* the caller as a frame of its own, at the inlined call, unless the
	 * next frame is that caller already */
	if (i + 1 < nf && !strcmp(f[i + 1].name, inl))
		return 1;
	out[1] = f[i];
	out[1].name = out[0].inlined_in;
	out[1].file = out[0].file;
	out[1].line = cl;
	return 2;
}

/* Whether f[0], the return address of the allocator's call (or a sample's
 * address) in instrumented code, lies in a caller into which the innermost
 * instrumented functions were inlined: they follow it as function frames
 * (FN, from the call path), then that caller.  Redis's zmalloc() inlines
 * ztrymalloc_usable_internal(), which calls malloc: [zmalloc (RA),
 * ztrymalloc_usable_internal, zmalloc, ...].  With source lines the
 * address names the inlined function at its line (frame_lines()); without,
 * it would name the caller again below them, as if it recursed, and take
 * the self figures: it is left out. */
static int ra_in_inlined_caller(const struct view_frame *f, size_t nf)
{
	if (nf < 3 || f[0].kind != CYGPROF_FRAME_RA || f[1].kind != CYGPROF_FRAME_FN)
		return 0;
	for (size_t j = 1; j < nf && j <= 16; j++) {
		if (f[j].proc == f[0].proc && !strcmp(f[j].name, f[0].name))
			return j >= 2;
		if (f[j].kind != CYGPROF_FRAME_FN)
			return 0;
	}
	return 0;
}

int view_stack(struct view *v, uint32_t id, unsigned flags, view_skip_fn skip,
	       struct view_frame **frames, size_t *n)
{
	const struct cygprof_stack_node *stash;
	struct view_frame *f = NULL, *out;
	struct srcline *sl = NULL;
	size_t nstash, nf = 0, cap = 0, i = 0, k = 0;
	int err;

	*frames = NULL;
	*n = 0;
	err = view_stash(v, &stash, &nstash);
	if (err)
		return err;
	while (id && id <= nstash && nf <= nstash) {
		if (ARRAY_GROW(f, cap, nf + 1)) {
			free(f);
			return -ENOMEM;
		}
		err = name_frame(v, &stash[id - 1], &f[nf++]);
		if (err) {
			free(f);
			return err;
		}
		id = stash[id - 1].parent;
	}
	if (!(flags & VIEW_LINES) && ra_in_inlined_caller(f, nf))
		i = 1;
	while (skip && i < nf && skip(f[i].name, f[i].obj ? f[i].obj->path : NULL))
		i++;
	if (!(flags & VIEW_LINES)) {
		if (i && nf > i)
			memmove(f, f + i, (nf - i) * sizeof(*f));
		*frames = f;
		*n = nf - i;
		return 0;
	}
	sl = view_srcline(v);
	out = calloc(nf - i ? 2 * (nf - i) : 1, sizeof(*out)); /* room for inlined callers */
	if (!sl || !out) {
		free(f);
		free(out);
		return -ENOMEM;
	}
	for (; i < nf; i++) {
		k += frame_lines(sl, f, i, nf, &out[k]);
		/* The instrumentation also entered the inlined function: its
		 * frame from the call path says again what the line said. */
		if (k >= 2 && out[k - 2].inlined_in && !out[k - 1].inlined_in &&
		    !strcmp(out[k - 2].name, out[k - 1].name))
			k--;
	}
	free(f);
	*frames = out;
	*n = k;
	return 0;
}
