/* SPDX-License-Identifier: MIT */
/* annotate.c - per source line figures: call sites, function entries,
 * allocations and perf samples mapped to file:line through srcline.c. */
#include "annotate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "hmap.h"
#include "inclusive.h"
#include "memory.h"
#include "names.h"
#include "profile.h"
#include "psamples.h"
#include "srcline.h"
#include "view.h"

#define NO_FILE UINT32_MAX

/* A file being filled: figures indexed by line number. */
struct wfile {
	char *path;
	struct annotate_line *by_line;
	size_t nlines; /* highest line + 1 */
	struct annotate_fn *fns; /* functions the samples hit here */
	size_t nfns, fns_cap;
	struct hindex fn_index; /* of fns, by name (names.h) */
};

/* (object, address) -> (file, line), for sites, functions and stacks. */
struct loc_ent {
	uint64_t addr;
	uint32_t obj;  /* object index + 1 */
	uint32_t kind; /* 0 line of an address, 1 function definition */
	uint32_t file; /* NO_FILE when unknown */
	uint32_t line;
};

/* A function being filled (annotate_func), interned by "file:line:name". */
struct wfunc {
	char *key;
	char *name;
	uint32_t file, first, last;
	uint64_t calls, self_ns;
};

struct state {
	struct view *v;
	struct srcline *sl;
	const struct cygprof_object *objs; /* the view's, for keys */
	struct wfile *files;
	size_t nfiles, files_cap;
	struct hindex file_index; /* of files, by path (names.h) */
	const char *last_name; /* the last srcline name seen and its file */
	uint32_t last_file;
	struct loc_ent *loc;
	size_t nloc, loc_cap;
	struct hindex loc_index; /* of loc, by (obj, kind, addr) */
	struct wfunc *funcs;
	size_t nfuncs, funcs_cap;
	struct hindex func_index; /* of funcs, by key (names.h) */
	struct hmap fn_funcs; /* view function id -> funcs index + 1 (0: none) */
	struct hmap line_keys; /* file << 32 | line -> a dense key (inclusive.h) */
	uint32_t nline_keys;
	struct annotate *a;
};

static long file_index(struct state *s, const char *name)
{
	void *base = s->files;
	long i;

	if (name == s->last_name)
		return s->last_file;
	i = name_intern(&s->file_index, &base, &s->nfiles, &s->files_cap, sizeof(*s->files),
			offsetof(struct wfile, path), name);
	s->files = base;
	if (i < 0)
		return i;
	s->last_name = name;
	s->last_file = (uint32_t)i;
	return i;
}

static uint64_t loc_hash(uint32_t obj, uint32_t kind, uint64_t addr)
{
	return hash_addr(obj << 1 | kind, addr);
}

/* What locate() looks a location up by. */
struct loc_key {
	uint64_t addr;
	uint32_t obj, kind;
};

static int loc_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct loc_ent *e = &((const struct state *)ctx)->loc[i];
	const struct loc_key *k = key;

	return e->obj == k->obj && e->kind == k->kind && e->addr == k->addr;
}

static uint64_t loc_hash_at(const void *ctx, uint32_t i)
{
	const struct loc_ent *e = &((const struct state *)ctx)->loc[i];

	return loc_hash(e->obj, e->kind, e->addr);
}

/* The file and line of addr in object o: kind 0 the line of the address,
 * 1 the definition of the function entered there.  *file is NO_FILE when
 * unknown. */
static int locate(struct state *s, const struct cygprof_object *o, uint64_t addr, uint32_t kind,
		  uint32_t *file, uint32_t *line)
{
	struct loc_key k;
	struct loc_ent *e;
	const char *name;
	uint64_t h;
	long i, f;
	int err;

	*file = NO_FILE;
	*line = 0;
	if (!o)
		return 0;
	k.addr = addr;
	k.obj = (uint32_t)(o - s->objs) + 1;
	k.kind = kind;
	h = loc_hash(k.obj, kind, addr);
	i = hindex_find(&s->loc_index, h, loc_eq, s, &k);
	if (i >= 0) {
		*file = s->loc[i].file;
		*line = s->loc[i].line;
		return 0;
	}
	if (ARRAY_GROW(s->loc, s->loc_cap, s->nloc + 1) ||
	    hindex_add(&s->loc_index, h, loc_hash_at, s))
		return -ENOMEM;
	e = &s->loc[s->nloc++];
	*e = (struct loc_ent){.addr = addr, .obj = k.obj, .kind = kind, .file = NO_FILE};
	err = kind ? srcline_function(s->sl, o, addr, &name, line)
		   : srcline_lookup(s->sl, o, addr, &name, line);
	if (err == -ENOMEM)
		return err;
	if (err)
		return 0;
	f = file_index(s, name);
	if (f < 0)
		return (int)f;
	e->file = *file = (uint32_t)f;
	e->line = *line;
	return 0;
}

static struct annotate_line *line_of(struct state *s, uint32_t file, uint32_t line)
{
	struct wfile *w = &s->files[file];

	if (line >= w->nlines) {
		size_t n = line + 64;
		struct annotate_line *t = realloc(w->by_line, n * sizeof(*t));

		if (!t)
			return NULL;
		memset(t + w->nlines, 0, (n - w->nlines) * sizeof(*t));
		w->by_line = t;
		w->nlines = n;
	}
	return &w->by_line[line];
}

/* The function of view function id, entered at addr and defined at
 * file:line: its record, made on first sight with its source range. */
static int func_of(struct state *s, uint32_t id, uint64_t addr, uint32_t file, uint32_t line,
		   struct wfunc **out)
{
	const struct view_fn *vf = view_fn(s->v, id);
	const char *path = NULL;
	uint32_t first = 0, last = 0;
	uint64_t *slot, i;
	void *base;
	char *key;
	size_t len;
	long k;
	int added = 0, err;

	*out = NULL;
	if (!vf)
		return 0;
	slot = hmap_ref(&s->fn_funcs, id, &added);
	if (!slot)
		return -ENOMEM;
	if (!added) {
		if (*slot)
			*out = &s->funcs[*slot - 1];
		return 0;
	}
	*slot = 0;
	if (vf->obj) {
		err = srcline_function_lines(s->sl, vf->obj, addr, &path, &first, &last);
		if (err == -ENOMEM)
			return err;
		/* the range counts only in the file the definition is in */
		if (err || strcmp(path, s->files[file].path) || first != line)
			first = last = line;
	} else {
		first = last = line;
	}
	len = strlen(vf->name) + 32;
	key = malloc(len);
	if (!key)
		return -ENOMEM;
	snprintf(key, len, "%u:%u:%s", file, line, vf->name);
	base = s->funcs;
	k = name_intern(&s->func_index, &base, &s->nfuncs, &s->funcs_cap, sizeof(*s->funcs),
			offsetof(struct wfunc, key), key);
	s->funcs = base;
	free(key);
	if (k < 0)
		return (int)k;
	i = (uint64_t)k;
	if (!s->funcs[i].name) {
		s->funcs[i].name = strdup(vf->name);
		if (!s->funcs[i].name)
			return -ENOMEM;
		s->funcs[i].file = file;
		s->funcs[i].first = first;
		s->funcs[i].last = last;
	}
	/* the hmap may have grown (hmap_ref's pointer is stale): put again */
	if (hmap_put(&s->fn_funcs, id, i + 1))
		return -ENOMEM;
	*out = &s->funcs[i];
	return 0;
}

static int add_thread(struct state *s, const struct cygprof_thread *th)
{
	const struct cygprof_callsite *sites;
	const struct view_tree *t;
	struct annotate_line *l;
	uint32_t *enode = NULL, *ekey = NULL;
	uint64_t *eloc = NULL, k;
	uint8_t *outer = NULL;
	size_t ns, i;
	uint32_t file, line;
	int err;

	err = view_tree(s->v, th->idx, &t);
	if (err)
		return err;
	if (!t->n)
		return 0;
	err = view_sites(s->v, th->idx, &sites, &ns);
	if (err)
		return err;
	s->a->total_ns += t->total_ns;
	for (i = 1; i < t->n; i++) {
		const struct cygprof_node *nd = &t->nodes[i];

		s->a->total_calls += nd->calls;
		s->a->total_self_ns += t->self_ns[i];
		if (!nd->calls || !nd->fn)
			continue;
		struct wfunc *wf;

		err = locate(s, view_fn(s->v, t->fn[i])->obj, nd->fn, 1, &file, &line);
		if (err)
			return err;
		if (file == NO_FILE)
			continue;
		l = line_of(s, file, line);
		if (!l)
			return -ENOMEM;
		l->entries += nd->calls;
		l->self_ns += t->self_ns[i];
		err = func_of(s, t->fn[i], nd->fn, file, line, &wf);
		if (err)
			return err;
		if (wf) {
			wf->calls += nd->calls;
			wf->self_ns += t->self_ns[i];
		}
	}
	if (!ns)
		return 0;
	enode = malloc(ns * sizeof(*enode));
	ekey = malloc(ns * sizeof(*ekey));
	eloc = malloc(ns * sizeof(*eloc));
	outer = malloc(ns);
	if (!enode || !ekey || !eloc || !outer) {
		err = -ENOMEM;
		goto out;
	}
	/* each site's line, as a dense key */
	for (i = 0; i < ns; i++) {
		const struct cygprof_callsite *c = &sites[i];

		enode[i] = c->node < t->n ? c->node : 0;
		ekey[i] = INCL_NONE;
		if (!c->calls)
			continue;
		file = NO_FILE;
		if (c->site) {
			err = locate(s, view_object_at(s->v, th->proc_idx, c->site - 1), c->site - 1,
				     0, &file, &line);
			if (err)
				goto out;
		}
		if (file == NO_FILE) {
			s->a->unresolved_calls += c->calls;
			continue;
		}
		eloc[i] = (uint64_t)file << 32 | line;
		err = hmap_get_or_put(&s->line_keys, eloc[i], s->nline_keys, &k);
		if (err < 0)
			goto out;
		s->nline_keys += (uint32_t)err;
		ekey[i] = (uint32_t)k;
	}
	/* a call from a line inside another call from the same line adds no time */
	err = incl_outer(t->nodes, t->n, enode, ekey, ns, s->nline_keys, outer);
	for (i = 0; !err && i < ns; i++) {
		const struct cygprof_callsite *c = &sites[i];

		if (ekey[i] == INCL_NONE)
			continue;
		l = line_of(s, (uint32_t)(eloc[i] >> 32), (uint32_t)eloc[i]);
		if (!l) {
			err = -ENOMEM;
			break;
		}
		l->calls += c->calls;
		if (outer[i])
			l->total_ns += c->total_ns;
	}
out:
	free(enode);
	free(ekey);
	free(eloc);
	free(outer);
	return err;
}

/* ---- memory ---------------------------------------------------------------- */

struct stack_loc {
	uint32_t file; /* NO_FILE: unknown */
	uint32_t line;
	int done;
};

/* The line of an allocation's stack: its innermost frame past the
 * allocator's own (a function frame: the function's definition). */
static int stack_line(struct state *s, struct stack_loc *locs, uint32_t id,
		      struct stack_loc **out)
{
	struct stack_loc *sl = &locs[id - 1];
	struct view_frame *f;
	size_t n;
	int err;

	*out = sl;
	if (sl->done)
		return 0;
	sl->done = 1;
	sl->file = NO_FILE;
	err = view_stack(s->v, id, 0, memory_frame_skipped, &f, &n);
	if (err)
		return err;
	if (n)
		err = locate(s, view_object_at(s->v, f[0].proc, f[0].addr), f[0].addr,
			     f[0].kind == CYGPROF_FRAME_FN, &sl->file, &sl->line);
	free(f);
	return err;
}

static int add_memory(struct state *s, const struct cygprof_thread *th, size_t nth)
{
	const struct cygprof_stack_node *stash;
	struct stack_loc *locs;
	size_t i, nstash;
	int err;

	err = view_stash(s->v, &stash, &nstash);
	if (err)
		return err;
	locs = calloc(nstash ? nstash : 1, sizeof(*locs));
	if (!locs)
		return -ENOMEM;
	for (i = 0; i < nth && !err; i++) {
		struct cygprof_mem_cursor *cur;
		struct cygprof_mem_event ev;
		int r;

		err = view_mem_cursor(s->v, th[i].idx, &cur);
		if (err)
			break;
		while ((r = cygprof_mem_cursor_next(cur, &ev)) == 1) {
			struct stack_loc *sl = NULL;
			struct annotate_line *l;

			if (ev.op != CYGPROF_MEM_ALLOC || !ev.addr)
				continue;
			s->a->total_allocations++;
			s->a->total_alloc_bytes += ev.size;
			if (ev.stack && ev.stack <= nstash) {
				err = stack_line(s, locs, ev.stack, &sl);
				if (err)
					break;
			}
			if (!sl || sl->file == NO_FILE) {
				s->a->unresolved_allocations++;
				continue;
			}
			l = line_of(s, sl->file, sl->line);
			if (!l) {
				err = -ENOMEM;
				break;
			}
			l->allocations++;
			l->alloc_bytes += ev.size;
		}
		if (r < 0 && !err)
			err = r;
		cygprof_mem_cursor_close(cur);
	}
	free(locs);
	return err;
}

/* ---- perf samples -------------------------------------------------------------- */

/* A sample by its innermost frame (the stash node of its stack). */
struct leaf {
	uint64_t addr;
	uint32_t proc, kind;
	uint32_t stack;
	uint64_t weight;
};

static int cmp_leaf(const void *pa, const void *pb)
{
	const struct leaf *a = pa, *b = pb;

	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int add_fn(struct wfile *w, const char *name, uint64_t n, uint64_t ns)
{
	void *base = w->fns;
	long i = name_intern(&w->fn_index, &base, &w->nfns, &w->fns_cap, sizeof(*w->fns),
			     offsetof(struct annotate_fn, name), name);

	w->fns = base;
	if (i < 0)
		return (int)i;
	w->fns[i].samples += n;
	w->fns[i].sampled_ns += ns;
	return 0;
}

/* n samples of weight ns whose innermost frame is l: on the file:line of
 * that frame as view_stack() resolves it with lines (the inlined
 * function's line in inlined code). */
static int add_leaf(struct state *s, const struct leaf *l, uint64_t n, uint64_t ns)
{
	struct annotate_line *al;
	struct view_frame *f;
	size_t nf;
	long file;
	int err;

	int overhead;

	err = psamp_stack(s->v, l->stack, VIEW_LINES, &f, &nf, &overhead);
	if (err)
		return err;
	if (overhead) {
		s->a->overhead_samples += n;
		s->a->overhead_sampled_ns += ns;
		free(f);
		return 0;
	}
	if (!nf || !f[0].file || !f[0].line) {
		s->a->unresolved_samples += n;
		s->a->unresolved_sampled_ns += ns;
		free(f);
		return 0;
	}
	file = file_index(s, f[0].file);
	err = file < 0 ? (int)file : 0;
	if (!err) {
		al = line_of(s, (uint32_t)file, f[0].line);
		if (!al) {
			err = -ENOMEM;
		} else {
			al->samples += n;
			al->sampled_ns += ns;
			err = add_fn(&s->files[file], f[0].name, n, ns);
		}
	}
	free(f);
	return err;
}

static int add_samples(struct state *s)
{
	const struct cygprof_stack_node *stash;
	const struct cygprof_psample *ps;
	struct leaf *leaves;
	size_t n, nstash, nl = 0, i, j;
	int err;

	err = view_psamples(s->v, &ps, &n);
	if (!err && n)
		err = view_stash(s->v, &stash, &nstash);
	if (err || !n)
		return err;
	s->a->sampled = 1;
	leaves = malloc(n * sizeof(*leaves));
	if (!leaves)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct cygprof_stack_node *nd;

		s->a->total_samples++;
		s->a->total_sampled_ns += ps[i].weight_ns;
		if (!ps[i].stack || ps[i].stack > nstash) {
			s->a->unresolved_samples++;
			s->a->unresolved_sampled_ns += ps[i].weight_ns;
			continue;
		}
		nd = &stash[ps[i].stack - 1];
		leaves[nl].addr = nd->addr;
		leaves[nl].proc = nd->proc_idx;
		leaves[nl].kind = nd->kind;
		leaves[nl].stack = ps[i].stack;
		leaves[nl].weight = ps[i].weight_ns;
		nl++;
	}
	if (nl)
		qsort(leaves, nl, sizeof(*leaves), cmp_leaf);
	/* one stack resolved per innermost frame */
	for (i = 0; i < nl && !err; i = j) {
		uint64_t ns = 0;

		for (j = i; j < nl && !cmp_leaf(&leaves[i], &leaves[j]); j++)
			ns += leaves[j].weight;
		err = add_leaf(s, &leaves[i], j - i, ns);
	}
	free(leaves);
	return err;
}

/* ---- result ------------------------------------------------------------------ */

static int cmp_afn(const void *pa, const void *pb)
{
	const struct annotate_fn *a = pa, *b = pb;

	if (a->samples != b->samples)
		return a->samples > b->samples ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int cmp_file(const void *a, const void *b)
{
	return strcmp(((const struct annotate_file *)a)->path,
		      ((const struct annotate_file *)b)->path);
}

static int cmp_func(const void *pa, const void *pb)
{
	const struct annotate_func *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);

	if (!c)
		c = strcmp(a->path, b->path);
	return c ? c : (a->first > b->first) - (a->first < b->first);
}

static int finish(struct state *s)
{
	struct annotate *a = s->a;
	const char **kept; /* per file being filled, its path when kept */
	size_t i, j;
	int err = -ENOMEM;

	a->files = calloc(s->nfiles ? s->nfiles : 1, sizeof(*a->files));
	kept = calloc(s->nfiles ? s->nfiles : 1, sizeof(*kept));
	if (!a->files || !kept)
		goto out;
	for (i = 0; i < s->nfiles; i++) {
		struct wfile *w = &s->files[i];
		struct annotate_file *f = &a->files[a->nfiles];
		size_t n = 0;

		for (j = 0; j < w->nlines; j++) {
			const struct annotate_line *l = &w->by_line[j];

			if (l->calls || l->entries || l->total_ns || l->allocations || l->samples ||
			    l->self_ns)
				n++;
		}
		if (!n)
			continue;
		f->lines = malloc(n * sizeof(*f->lines));
		if (!f->lines)
			goto out;
		for (j = 0; j < w->nlines; j++) {
			struct annotate_line *l = &w->by_line[j];

			if (!(l->calls || l->entries || l->total_ns || l->allocations || l->samples ||
			      l->self_ns))
				continue;
			l->line = (uint32_t)j;
			f->lines[f->nlines++] = *l;
			f->calls += l->calls;
			f->entries += l->entries;
			f->allocations += l->allocations;
			f->alloc_bytes += l->alloc_bytes;
			f->samples += l->samples;
			f->sampled_ns += l->sampled_ns;
			f->self_ns += l->self_ns;
			if (l->total_ns > f->max_ns)
				f->max_ns = l->total_ns;
		}
		f->path = w->path;
		w->path = NULL;
		kept[i] = f->path;
		f->fns = w->fns;
		f->nfns = w->nfns;
		w->fns = NULL;
		w->nfns = 0;
		if (f->nfns)
			qsort(f->fns, f->nfns, sizeof(*f->fns), cmp_afn);
		a->nfiles++;
	}
	if (a->nfiles)
		qsort(a->files, a->nfiles, sizeof(*a->files), cmp_file);
	a->funcs = calloc(s->nfuncs ? s->nfuncs : 1, sizeof(*a->funcs));
	if (!a->funcs)
		goto out;
	for (i = 0; i < s->nfuncs; i++) {
		struct wfunc *w = &s->funcs[i];
		struct annotate_func *f = &a->funcs[a->nfuncs];

		if (!w->name || w->file >= s->nfiles || !kept[w->file])
			continue; /* its file had no figure: not kept */
		f->name = w->name;
		w->name = NULL;
		f->path = kept[w->file];
		f->first = w->first;
		f->last = w->last;
		f->calls = w->calls;
		f->self_ns = w->self_ns;
		a->nfuncs++;
	}
	if (a->nfuncs)
		qsort(a->funcs, a->nfuncs, sizeof(*a->funcs), cmp_func);
	err = 0;
out:
	free(kept);
	return err;
}

static void free_fns(struct annotate_fn *fns, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(fns[i].name);
	free(fns);
}

void annotate_free(struct annotate *a)
{
	size_t i;

	if (!a)
		return;
	for (i = 0; i < a->nfiles; i++) {
		free(a->files[i].path);
		free(a->files[i].lines);
		free_fns(a->files[i].fns, a->files[i].nfns);
	}
	free(a->files);
	for (i = 0; i < a->nfuncs; i++)
		free(a->funcs[i].name);
	free(a->funcs);
	free(a);
}

int annotate_load(struct view *v, struct annotate **out)
{
	const struct cygprof_thread *th;
	struct state s;
	size_t nth = 0, nobjs, i;
	int err;

	*out = NULL;
	memset(&s, 0, sizeof(s));
	s.v = v;
	s.a = calloc(1, sizeof(*s.a));
	s.sl = view_srcline(v);
	if (!s.a || !s.sl) {
		err = -ENOMEM;
		goto out;
	}
	err = view_objects(v, &s.objs, &nobjs);
	if (!err)
		err = view_threads(v, &th, &nth);
	if (err)
		goto out;
	if ((err = profile_view_times(v))) /* the sites' times, sampled or not */
		goto out;
	for (i = 0; i < nth && !err; i++)
		err = add_thread(&s, &th[i]);
	if (err)
		goto out;
	if (view_mode_has(v, "memory")) {
		s.a->memory = 1;
		err = add_memory(&s, th, nth);
		if (err)
			goto out;
	}
	err = add_samples(&s);
	if (!err)
		err = finish(&s);
out:
	for (i = 0; i < s.nfiles; i++) {
		free(s.files[i].path);
		free(s.files[i].by_line);
		free_fns(s.files[i].fns, s.files[i].nfns);
		hindex_release(&s.files[i].fn_index);
	}
	free(s.files);
	hindex_release(&s.file_index);
	for (i = 0; i < s.nfuncs; i++) {
		free(s.funcs[i].key);
		free(s.funcs[i].name);
	}
	free(s.funcs);
	hindex_release(&s.func_index);
	hmap_release(&s.fn_funcs);
	free(s.loc);
	hindex_release(&s.loc_index);
	hmap_release(&s.line_keys);
	if (err) {
		annotate_free(s.a);
		return err;
	}
	*out = s.a;
	return 0;
}
