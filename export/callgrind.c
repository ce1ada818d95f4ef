/* SPDX-License-Identifier: MIT */
/* callgrind.c - cygprof export --format=callgrind: the profile in the
 * callgrind format KCachegrind and callgrind_annotate read.
 *
 * One event, "ns": exact time in nanoseconds.  Functions are merged by name
 * (profile_load()).  Each function's self time is one cost line at the line
 * where DWARF says it is declared; each arc caller -> callee is written in
 * the caller's block as "calls=N <callee's line>" and the inclusive time of
 * those calls at the line of the call site (one call line per site line).
 * The inclusive time of an arc follows profile.h: self-recursive calls carry
 * their count only, and a callee's subtree under another of its own calls is
 * not counted twice.  Where there is no DWARF the file is "???" and the
 * lines are 0.  Names (ob, fl, fn) are written compressed: "(id) name" the
 * first time, "(id)" after. */
#include "export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "hmap.h"
#include "inclusive.h"
#include "profile.h"
#include "srcline.h"
#include "view.h"

/* Where a merged function is: the first of its view functions met. */
struct cg_fn {
	int known;
	const char *file; /* borrowed (srcline or view); NULL: unknown */
	const char *obj;  /* the object's path, NULL when unknown */
	uint32_t line;
	uint32_t file_id, obj_id;
};

/* The calls of one arc from one line of the caller. */
struct cg_call {
	uint32_t caller, callee, line;
	uint64_t calls, ns;
};

struct cg {
	struct view *v;
	struct profile *p;
	struct cg_fn *fns;
	uint32_t *vmap; /* view fn id -> profile fn index + 1 (0: not yet) */
	size_t nvmap;
	struct cg_call *calls;
	size_t ncalls, calls_cap;
	struct hindex call_index; /* of calls, by (caller, callee, line) */
	const char **files, **objs; /* by id - 1 */
	size_t nfiles, nobjs;
};

static uint32_t cg_pfn(struct cg *c, uint32_t vid)
{
	const struct view_fn *vf;
	long k;

	if (vid < c->nvmap && c->vmap[vid])
		return c->vmap[vid] - 1;
	vf = view_fn(c->v, vid);
	k = vf ? profile_find(c->p, vf->name) : -ENOENT;
	if (k < 0)
		return PROFILE_NONE;
	if (vid < c->nvmap)
		c->vmap[vid] = (uint32_t)k + 1;
	return (uint32_t)k;
}

/* The id of name in a table of names (1-based), adding it. */
static int cg_id(const char ***tab, size_t *n, const char *name, uint32_t *id)
{
	const char **t;

	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*tab)[i], name)) {
			*id = (uint32_t)i + 1;
			return 0;
		}
	t = realloc(*tab, (*n + 1) * sizeof *t);
	if (!t)
		return -ENOMEM;
	t[*n] = name;
	*tab = t;
	*id = (uint32_t)++*n;
	return 0;
}

static int cg_place(struct cg *c, uint32_t pf, const struct view_fn *vf)
{
	struct cg_fn *f = &c->fns[pf];
	struct srcline *sl = view_srcline(c->v);
	int err;

	if (f->known)
		return 0;
	f->known = 1;
	if (vf->obj && sl)
		if (srcline_function(sl, vf->obj, vf->has_sym ? vf->start : vf->addr, &f->file,
				     &f->line))
			f->file = NULL, f->line = 0;
	f->obj = vf->obj ? vf->obj->path : NULL;
	err = cg_id(&c->files, &c->nfiles, f->file ? f->file : "???", &f->file_id);
	if (!err)
		err = cg_id(&c->objs, &c->nobjs, f->obj ? f->obj : "???", &f->obj_id);
	return err;
}

static uint64_t cg_hash(uint32_t caller, uint32_t callee, uint32_t line)
{
	return hash_pair((uint64_t)caller << 32 | callee, line);
}

static int cg_call_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct cg_call *a = &((const struct cg *)ctx)->calls[i], *k = key;

	return a->caller == k->caller && a->callee == k->callee && a->line == k->line;
}

static uint64_t cg_call_hash_at(const void *ctx, uint32_t i)
{
	const struct cg_call *a = &((const struct cg *)ctx)->calls[i];

	return cg_hash(a->caller, a->callee, a->line);
}

static int cg_add_call(struct cg *c, uint32_t caller, uint32_t callee, uint32_t line,
		       uint64_t calls, uint64_t ns)
{
	struct cg_call k = {caller, callee, line, calls, ns};
	uint64_t h = cg_hash(caller, callee, line);
	long i = hindex_find(&c->call_index, h, cg_call_eq, c, &k);

	if (i >= 0) {
		c->calls[i].calls += calls;
		c->calls[i].ns += ns;
		return 0;
	}
	if (ARRAY_GROW(c->calls, c->calls_cap, c->ncalls + 1) ||
	    hindex_add(&c->call_index, h, cg_call_hash_at, c))
		return -ENOMEM;
	c->calls[c->ncalls++] = k;
	return 0;
}

/* For every node of the tree, whether an ancestor is of its own (merged)
 * function: inclusive.h's rule on the profile's functions.
 * @param[out] top owned: free(); top[i] != i for such a node. */
static int cg_tops(struct cg *c, const struct view_tree *t, uint32_t **top)
{
	uint32_t *key = malloc(t->n * sizeof(*key));
	int err = -ENOMEM;

	*top = malloc(t->n * sizeof(**top));
	if (key && *top) {
		for (size_t i = 0; i < t->n; i++)
			key[i] = i && t->fn[i] != VIEW_NONE ? cg_pfn(c, t->fn[i]) : INCL_NONE;
		err = incl_tops(t->nodes, t->n, key, (uint32_t)c->p->nfns, *top);
	}
	free(key);
	if (err) {
		free(*top);
		*top = NULL;
	}
	return err;
}

/* The functions' places and the calls of one thread, by call site. */
static int cg_thread(struct cg *c, uint32_t thread, uint32_t proc)
{
	const struct view_tree *t;
	const struct cygprof_callsite *s;
	struct srcline *sl = view_srcline(c->v);
	uint32_t *top = NULL;
	size_t ns;
	int err;

	err = view_tree(c->v, thread, &t);
	if (err || t->n == 0)
		return err;
	for (size_t i = 1; i < t->n; i++) {
		uint32_t pf = t->fn[i] == VIEW_NONE ? PROFILE_NONE : cg_pfn(c, t->fn[i]);

		if (pf != PROFILE_NONE && (err = cg_place(c, pf, view_fn(c->v, t->fn[i]))))
			return err;
	}
	err = view_sites(c->v, thread, &s, &ns);
	if (!err)
		err = cg_tops(c, t, &top);
	if (err)
		return err;
	for (size_t k = 0; k < ns; k++) {
		uint32_t i = s[k].node, par, caller, callee, line = 0;
		const struct cygprof_object *o;
		const char *file;
		uint64_t cost;

		if (i == 0 || i >= t->n || t->fn[i] == VIEW_NONE)
			continue;
		par = t->nodes[i].parent;
		if (par == 0 || par >= t->n || t->fn[par] == VIEW_NONE)
			continue; /* called from the root: no caller */
		caller = cg_pfn(c, t->fn[par]);
		callee = cg_pfn(c, t->fn[i]);
		if (caller == PROFILE_NONE || callee == PROFILE_NONE)
			continue;
		o = s[k].site ? view_object_at(c->v, proc, s[k].site - 1) : NULL;
		if (o && sl && srcline_lookup(sl, o, s[k].site - 1, &file, &line))
			line = 0;
		if (!line)
			line = c->fns[caller].line;
		cost = caller == callee || top[i] != i ? 0 : s[k].total_ns;
		if ((err = cg_add_call(c, caller, callee, line, s[k].calls, cost)))
			break;
	}
	free(top);
	return err;
}

static int cmp_call(const void *a, const void *b)
{
	const struct cg_call *x = a, *y = b;

	if (x->caller != y->caller)
		return x->caller < y->caller ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->callee < y->callee ? -1 : x->callee > y->callee;
}

/* "key=(id) name" the first time, "key=(id)" after. */
static void cg_name(FILE *f, const char *key, uint32_t id, const char *name, uint8_t *done)
{
	if (done[id]) {
		fprintf(f, "%s=(%" PRIu32 ")\n", key, id);
	} else {
		fprintf(f, "%s=(%" PRIu32 ") %s\n", key, id, name);
		done[id] = 1;
	}
}

static void cg_write(struct cg *c, FILE *f)
{
	uint8_t *fdone = calloc(c->nfiles + 1, 1), *odone = calloc(c->nobjs + 1, 1);
	uint8_t *ndone = calloc(c->p->nfns + 1, 1);
	const char *cmd = view_meta_str(c->v, "command");
	const struct cygprof_proc *procs;
	size_t np, k = 0;

	fputs(OUT_MAGIC_CALLGRIND "version: 1\ncreator: cygprof\n", f);
	if (view_procs(c->v, &procs, &np) == 0 && np > 0)
		fprintf(f, "pid: %" PRIu32 "\n", procs[0].pid);
	if (cmd) { /* one line: a newline in an argument becomes a space */
		fputs("cmd: ", f);
		for (; *cmd; cmd++)
			fputc(*cmd == '\n' || *cmd == '\r' ? ' ' : *cmd, f);
		fputc('\n', f);
	}
	/* record --time=sampled: the times are the samples' (profile_load()) */
	fprintf(f, "positions: line\nevent: ns : Time (ns, %s)\nevents: ns\n",
		view_time_sampled(c->v) ? "sampled" : "exact");
	fprintf(f, "summary: %" PRIu64 "\n", c->p->total_self_ns);
	if (!fdone || !odone || !ndone)
		goto out;
	qsort(c->calls, c->ncalls, sizeof *c->calls, cmp_call);
	for (uint32_t i = 0; i < c->p->nfns; i++) {
		const struct cg_fn *fn = &c->fns[i];

		if (!fn->known)
			continue;
		fputc('\n', f);
		cg_name(f, "ob", fn->obj_id, c->objs[fn->obj_id - 1], odone);
		cg_name(f, "fl", fn->file_id, c->files[fn->file_id - 1], fdone);
		cg_name(f, "fn", i + 1, c->p->fns[i].name, ndone);
		fprintf(f, "%" PRIu32 " %" PRIu64 "\n", fn->line, c->p->fns[i].self_ns);
		for (; k < c->ncalls && c->calls[k].caller == i; k++) {
			const struct cg_call *a = &c->calls[k];
			const struct cg_fn *cf = &c->fns[a->callee];

			if (cf->obj_id != fn->obj_id)
				cg_name(f, "cob", cf->obj_id, c->objs[cf->obj_id - 1], odone);
			if (cf->file_id != fn->file_id)
				cg_name(f, "cfl", cf->file_id, c->files[cf->file_id - 1], fdone);
			cg_name(f, "cfn", a->callee + 1, c->p->fns[a->callee].name, ndone);
			fprintf(f, "calls=%" PRIu64 " %" PRIu32 "\n", a->calls, cf->line);
			fprintf(f, "%" PRIu32 " %" PRIu64 "\n", a->line, a->ns);
		}
		/* calls of a caller without a place (none expected) are dropped */
		while (k < c->ncalls && c->calls[k].caller <= i)
			k++;
	}
	fprintf(f, "\ntotals: %" PRIu64 "\n", c->p->total_self_ns);
out:
	free(fdone);
	free(odone);
	free(ndone);
}

static int write_callgrind(struct view *v, const struct export_opts *o, FILE *f)
{
	const struct cygprof_thread *th;
	struct cg c = {.v = v};
	struct export_progress pg;
	size_t nth;
	int err;

	/* the trees' calls, a thread's at a time */
	export_progress_start(&pg, o, "calls", export_tree_calls(v));
	err = profile_load(v, NULL, 0, &c.p);
	if (err)
		return err;
	err = view_threads(v, &th, &nth);
	if (err)
		goto out;
	err = -ENOMEM;
	c.fns = calloc(c.p->nfns + 1, sizeof *c.fns);
	c.nvmap = view_nfns(v);
	c.vmap = calloc(c.nvmap + 1, sizeof *c.vmap);
	if (!c.fns || !c.vmap)
		goto out;
	err = 0;
	for (size_t i = 0; i < nth && !err; i++) {
		err = cg_thread(&c, th[i].idx, th[i].proc_idx);
		export_progress_add(&pg, th[i].calls);
	}
	if (!err)
		cg_write(&c, f);
out:
	free(c.fns);
	free(c.vmap);
	free(c.calls);
	hindex_release(&c.call_index);
	free(c.files);
	free(c.objs);
	profile_free(c.p);
	return err;
}

const struct exporter export_callgrind = {
	.name = "callgrind",
	.summary = "call graph with exact times for KCachegrind, callgrind_annotate",
	.readers = "KCachegrind, QCachegrind, callgrind_annotate",
	.out_kind = OUT_CALLGRIND,
	.default_out = NULL,
	.write = write_callgrind,
};
