/* SPDX-License-Identifier: MIT */
/* pprof.c - cygprof export --format=pprof: the profile.proto that
 * `go tool pprof` and other pprof readers take, gzip'd.
 *
 * The protobuf is written by hand (varints and length-delimited fields,
 * field numbers of github.com/google/pprof proto/profile.proto) and
 * compressed with zlib's raw deflate behind a fixed gzip header
 * (OUT_MAGIC_PPROF: no time, the name "cygprof-profile.pb") so that a
 * later export may recognize and replace the file.
 *
 * Samples: every call path of the threads' trees, merged by function names,
 * is one Sample per thread that took it, labelled with the thread's name
 * ("thread") and id ("tid"), whose locations are the path innermost
 * first, with the values calls/count and time/nanoseconds (exact self time
 * of the path); with perf samples (record --sample) also samples/count and
 * cpu/nanoseconds on the paths they were placed on (a capture without
 * trees: the samples by their own stacks).  With --memory the
 * samples are the allocation stacks instead (record --memory), valued
 * alloc_objects/count and alloc_space/bytes, plus the leaked or peak
 * figures asked for.  One Function per function (merged by name), with
 * the file and line DWARF gives for its declaration; a sample's innermost
 * frame is at that line, each caller at the line of its call (when it is in
 * the caller's own file).  Mappings are the capture's objects. */
#include "export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "array.h"
#include "hmap.h"
#include "memory.h"
#include "pb.h"
#include "pathtree.h"
#include "profile.h"
#include "psamples.h"
#include "srcline.h"
#include "view.h"

/* ---- the string table ---------------------------------------------------- */

struct strtab {
	const char **s; /* borrowed, but for those in owned */
	size_t n, cap;
	struct hindex index; /* of s, by text */
	char **owned;   /* strings made here (build-ids in hex) */
	size_t nowned;
};

static int str_eq(const void *ctx, uint32_t i, const void *key)
{
	return !strcmp(((const struct strtab *)ctx)->s[i], key);
}

static uint64_t str_hash_at(const void *ctx, uint32_t i)
{
	return hash_str(((const struct strtab *)ctx)->s[i]);
}

/* The index of s in the table (added, borrowed); -1 when out of memory. */
static int64_t str_id(struct strtab *t, const char *s)
{
	uint64_t h = hash_str(s);
	long i = hindex_find(&t->index, h, str_eq, t, s);

	if (i >= 0)
		return i;
	if (ARRAY_GROW(t->s, t->cap, t->n + 1) ||
	    hindex_add(&t->index, h, str_hash_at, t))
		return -1;
	t->s[t->n] = s;
	return (int64_t)t->n++;
}

/* The id of a string that does not outlive the call: the table keeps a copy. */
static int64_t str_id_copy(struct strtab *t, const char *s)
{
	char *d = strdup(s), **o;
	int64_t id;

	if (!d)
		return -1;
	id = str_id(t, d);
	if (id < 0 || t->s[id] != d) {
		free(d);
		return id;
	}
	o = realloc(t->owned, (t->nowned + 1) * sizeof *o);
	if (!o) {
		t->s[id] = ""; /* never used: the output fails on the -1 below */
		free(d);
		return -1;
	}
	t->owned = o;
	t->owned[t->nowned++] = d;
	return id;
}

/* ---- call paths merged over the threads (analysis/pathtree.h) ----------- */

#define NVAL 4
#define PPROF_UNPLACED "[samples outside the call trees]"
/* samples in cygprof's runtime (psamples.h): charged to no function */
#define PPROF_OVERHEAD "[profiler overhead]"

/* What a path of the tree holds here (by its node). */
struct pp_path {
	uint32_t line;    /* the line of the call in the parent's function, 0 unknown */
	const char *file; /* and its file (borrowed from the view's srcline) */
	int64_t val[NVAL]; /* over every thread */
	int threaded;     /* its samples are those of struct pp_tv, one per thread */
};

/* A path's values in one thread (the trees' samples). */
struct pp_tv {
	uint32_t path, thread; /* thread: index into the profile's threads */
	int64_t val[NVAL];
};

/* A location: a function at a line. */
struct loc {
	uint32_t line, fn;
};

struct locs {
	struct loc *v;
	size_t n, cap;
	struct hindex index; /* of v, by (line, fn) */
};

/* The locations, keyed by (line, fn), for t->index. */
#define LOCS(t) HINDEX_PAIRS((t)->v, struct loc, line, fn)

/* The id (index + 1) of the location (line, fn), added; 0 when out of memory. */
static uint64_t loc_id(struct locs *t, uint32_t line, uint32_t fn)
{
	long i = hindex_find_pair(&t->index, LOCS(t), line, fn);

	if (i >= 0)
		return (uint64_t)i + 1;
	if (ARRAY_GROW(t->v, t->cap, t->n + 1) || hindex_add_pair(&t->index, LOCS(t), line, fn))
		return 0;
	t->v[t->n++] = (struct loc){.line = line, .fn = fn};
	return t->n;
}

/* ---- the export ------------------------------------------------------------- */

struct pp {
	struct view *v;
	const struct export_opts *o;
	struct profile *p;
	struct psamp *ps;
	struct memory *m;
	struct pathtree paths;
	struct pp_path *pv; /* per node of paths */
	size_t pv_cap;
	struct pp_tv *tv;   /* the trees' paths per thread */
	size_t ntv, captv;
	struct hindex tv_index; /* of tv, by (path, thread) */
	struct locs locs;
	struct strtab st;
	const char *vtype[NVAL], *vunit[NVAL];
	int nval, def;
};

/* The values of every node of the paths, the new ones zero; 0 or -ENOMEM. */
static int pp_grow(struct pp *c)
{
	size_t old = c->pv_cap;

	if (ARRAY_GROW(c->pv, c->pv_cap, c->paths.len))
		return -ENOMEM;
	if (c->pv_cap > old)
		memset(c->pv + old, 0, (c->pv_cap - old) * sizeof(*c->pv));
	return 0;
}

/* The node of the path parent -> fn, added; 0 when out of memory. */
static uint32_t path_get(struct pp *c, uint32_t parent, uint32_t fn)
{
	long k = pathtree_child(&c->paths, parent, fn);

	return k < 0 || pp_grow(c) ? 0 : (uint32_t)k;
}

#define TVS(c) HINDEX_PAIRS((c)->tv, struct pp_tv, path, thread)

/* The values of path in thread t, added zero; NULL when out of memory. */
static struct pp_tv *path_thread(struct pp *c, uint32_t path, uint32_t t)
{
	long i = hindex_find_pair(&c->tv_index, TVS(c), path, t);

	if (i >= 0)
		return &c->tv[i];
	if (ARRAY_GROW(c->tv, c->captv, c->ntv + 1) ||
	    hindex_add_pair(&c->tv_index, TVS(c), path, t))
		return NULL;
	c->tv[c->ntv] = (struct pp_tv){.path = path, .thread = t};
	c->pv[path].threaded = 1;
	return &c->tv[c->ntv++];
}

/* The perf samples the paths do not hold (outside every instrumented
 * function, or on stacks that leave the trees), as one sample of their own
 * so that the sums are the report's. */
static int pp_unplaced(struct pp *c)
{
	int64_t n = 0, ns = 0;
	uint32_t q;
	long f;

	if (c->ps->overhead.samples) {
		f = profile_intern(c->p, PPROF_OVERHEAD);
		if (f < 0 || !(q = path_get(c, 0, (uint32_t)f)))
			return -ENOMEM;
		c->pv[q].val[2] += (int64_t)c->ps->overhead.samples;
		c->pv[q].val[3] += (int64_t)c->ps->overhead.sample_ns;
	}
	for (size_t i = 1; i < c->paths.len; i++) {
		n += c->pv[i].val[2];
		ns += c->pv[i].val[3];
	}
	if ((uint64_t)n >= c->ps->total.samples && (uint64_t)ns >= c->ps->total.sample_ns)
		return 0;
	f = profile_intern(c->p, PPROF_UNPLACED);
	if (f < 0 || !(q = path_get(c, 0, (uint32_t)f)))
		return -ENOMEM;
	c->pv[q].val[2] += (int64_t)c->ps->total.samples - n;
	c->pv[q].val[3] += (int64_t)c->ps->total.sample_ns - ns;
	return 0;
}

/* The call paths of the trees: calls, self time, perf samples. */
static int pp_trees(struct pp *c)
{
	struct srcline *sl = view_srcline(c->v);

	for (size_t t = 0; t < c->p->nthreads; t++) {
		const struct profile_thread *th = &c->p->threads[t];
		const struct cygprof_thread *ct = view_thread(c->v, th->info.idx);
		uint32_t *at;

		if (!th->n)
			continue;
		at = calloc(th->n, sizeof *at);
		if (!at || pathtree_add_thread(&c->paths, th, NULL, at) || pp_grow(c)) {
			free(at);
			return -ENOMEM;
		}
		for (size_t i = 1; i < th->n; i++) {
			const struct profile_tnode *nd = &th->nodes[i];
			struct pp_path *q = &c->pv[at[i]];

			if (!q->line && nd->parent && nd->site && ct && sl) {
				const struct cygprof_object *o =
					view_object_at(c->v, ct->proc_idx, nd->site - 1);

				if (o && srcline_lookup(sl, o, nd->site - 1, &q->file, &q->line))
					q->file = NULL, q->line = 0;
			}
			int64_t v[NVAL] = {(int64_t)nd->calls, (int64_t)nd->self_ns, 0, 0};
			if (c->ps && t < c->ps->nthreads && c->ps->node[t]) {
				v[2] = (int64_t)c->ps->node[t][i].samples;
				v[3] = (int64_t)c->ps->node[t][i].sample_ns;
			}
			if (!v[0] && !v[1] && !v[2] && !v[3])
				continue;
			struct pp_tv *tv = path_thread(c, at[i], (uint32_t)t);
			if (!tv) {
				free(at);
				return -ENOMEM;
			}
			for (int k = 0; k < NVAL; k++) {
				q->val[k] += v[k];
				tv->val[k] += v[k];
			}
		}
		free(at);
	}
	return c->ps ? pp_unplaced(c) : 0;
}

/* The allocation stacks (--memory): objects, bytes, and leaked or peak bytes. */
static int pp_memory(struct pp *c)
{
	for (size_t s = 0; s < c->m->nstacks; s++) {
		const struct memory_stack *ms = &c->m->stacks[s];
		uint32_t par = 0;
		struct pp_path *q;

		if (!ms->used || !ms->nframes)
			continue;
		for (uint32_t k = ms->nframes; k-- > 0;) {
			long f = profile_intern(c->p, c->m->fns[ms->fns[k]].name);

			if (f < 0 || !(par = path_get(c, par, (uint32_t)f)))
				return -ENOMEM;
		}
		q = &c->pv[par];
		q->val[0] += (int64_t)ms->allocations;
		q->val[1] += (int64_t)ms->bytes;
		q->val[2] += (int64_t)(c->o->weight == EXPORT_W_PEAK ? ms->peak_bytes
								      : ms->leaked_bytes);
	}
	return 0;
}

/* A capture without call trees (a program recorded without
 * instrumentation, with record --sample): the perf samples by their own
 * stacks, valued samples/count and cpu/nanoseconds. */
static int pp_stacks(struct pp *c)
{
	const struct cygprof_psample *ps;
	const struct cygprof_stack_node *stash;
	uint32_t *path_of = NULL; /* per stack id: its path + 1, 0 not yet */
	size_t n, nstash;
	int err;

	if ((err = view_psamples(c->v, &ps, &n)) || (err = view_stash(c->v, &stash, &nstash)))
		return err;
	path_of = calloc(nstash + 1, sizeof *path_of);
	if (!path_of)
		return -ENOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		uint32_t id = ps[i].stack <= nstash ? ps[i].stack : 0, q = path_of[id];

		if (!q) {
			struct view_frame *fr = NULL;
			size_t nf = 0;
			long f;
			int overhead = 0;

			if (id)
				err = psamp_stack(c->v, id, 0, &fr, &nf, &overhead);
			if (overhead) /* the profiler's cost: charged to no function */
				nf = 0;
			for (size_t k = nf; k-- > 0 && !err;) {
				f = profile_intern(c->p, fr[k].name);
				if (f < 0 || !(q = path_get(c, q, (uint32_t)f)))
					err = -ENOMEM;
			}
			free(fr);
			if (!err && !q) {
				f = profile_intern(c->p, overhead ? PPROF_OVERHEAD : PPROF_UNPLACED);
				if (f < 0 || !(q = path_get(c, 0, (uint32_t)f)))
					err = -ENOMEM;
			}
			path_of[id] = q;
		}
		if (!err) {
			c->pv[q].val[0] += 1;
			c->pv[q].val[1] += (int64_t)ps[i].weight_ns;
		}
	}
	free(path_of);
	return err;
}

/* Where each function is: its object and declaration (first view function
 * of that name). */
struct pp_place {
	const struct cygprof_object *obj;
	const char *file;
	uint32_t line;
	int known;
};

/* The location id of path j's function: at its declaration for the
 * innermost frame (child 0), else at the line where it calls path child
 * when DWARF puts that line in the function's own file.  0: no memory. */
static uint64_t pp_loc(struct pp *c, const struct pp_place *pl, uint32_t j, uint32_t child)
{
	uint32_t fn = c->paths.n[j].fn, line = pl[fn].line;

	if (child) {
		const struct pp_path *ch = &c->pv[child];

		if (ch->line && ch->file && pl[fn].file && !strcmp(ch->file, pl[fn].file))
			line = ch->line;
	}
	return loc_id(&c->locs, line, fn);
}

static int pp_write_pb(struct pp *c, struct pb *out)
{
	struct pb sub = {0}, sub2 = {0};
	const struct cygprof_object *objs;
	struct pp_place *pl;
	struct srcline *sl = view_srcline(c->v);
	size_t nobj = 0, nv = view_nfns(c->v);
	size_t depth_cap = 64;
	uint64_t *stack;

	if (view_objects(c->v, &objs, &nobj))
		nobj = 0;
	pl = calloc(c->p->nfns + 1, sizeof *pl);
	stack = malloc(depth_cap * sizeof *stack);
	if (!pl || !stack) {
		free(pl);
		free(stack);
		return -ENOMEM;
	}
	str_id(&c->st, "");
	for (size_t id = 0; id < nv; id++) {
		const struct view_fn *vf = view_fn(c->v, (uint32_t)id);
		long k = vf ? profile_find(c->p, vf->name) : -1;

		if (k < 0 || pl[k].known)
			continue;
		pl[k].known = 1;
		pl[k].obj = vf->obj;
		if (vf->obj && sl &&
		    srcline_function(sl, vf->obj, vf->has_sym ? vf->start : vf->addr, &pl[k].file,
				     &pl[k].line))
			pl[k].file = NULL, pl[k].line = 0;
	}

	for (int i = 0; i < c->nval; i++) {
		pb_uint(&sub, 1, (uint64_t)str_id(&c->st, c->vtype[i]));
		pb_uint(&sub, 2, (uint64_t)str_id(&c->st, c->vunit[i]));
		pb_msg(out, 1, &sub);
	}
	/* the paths taken by no thread (the perf samples outside the trees,
	 * memory stacks, perf stacks), then each thread's */
	int64_t kthread = str_id(&c->st, "thread"), ktid = str_id(&c->st, "tid");
	for (size_t n = 1; n < c->paths.len + c->ntv; n++) {
		const struct pp_tv *tv = n < c->paths.len ? NULL : &c->tv[n - c->paths.len];
		size_t i = tv ? tv->path : n;
		const int64_t *val = tv ? tv->val : c->pv[i].val;
		size_t d = 0;
		uint32_t stack_child = 0;
		int any = 0;

		if (!tv && c->pv[i].threaded)
			continue;
		for (int k = 0; k < c->nval; k++)
			any |= val[k] != 0;
		if (!any)
			continue;
		for (uint32_t j = (uint32_t)i; j; j = c->paths.n[j].parent) {
			if (d == depth_cap) {
				uint64_t *t = realloc(stack, 2 * depth_cap * sizeof *t);

				if (!t) {
					out->err = -ENOMEM;
					break;
				}
				stack = t;
				depth_cap *= 2;
			}
			stack[d] = pp_loc(c, pl, j, stack_child);
			if (!stack[d++])
				out->err = -ENOMEM;
			stack_child = j;
		}
		for (size_t k = 0; k < d; k++)
			pb_varint(&sub2, stack[k]);
		pb_msg(&sub, 1, &sub2);
		for (int k = 0; k < c->nval; k++)
			pb_varint(&sub2, (uint64_t)val[k]);
		pb_msg(&sub, 2, &sub2);
		if (tv && tv->thread < c->p->nthreads) {
			const struct profile_thread *th = &c->p->threads[tv->thread];
			const struct cygprof_thread *ct = view_thread(c->v, th->info.idx);
			char name[16];
			int64_t sname = ct ? str_id_copy(&c->st, view_thread_name(ct, name)) : -1;

			if (sname >= 0 && kthread >= 0) {
				pb_uint(&sub2, 1, (uint64_t)kthread);
				pb_uint(&sub2, 2, (uint64_t)sname);
				pb_msg(&sub, 3, &sub2);
			}
			if (ct && ktid >= 0) {
				pb_uint(&sub2, 1, (uint64_t)ktid);
				pb_uint(&sub2, 3, ct->tid);
				pb_msg(&sub, 3, &sub2);
			}
			if (sname < 0 || kthread < 0 || ktid < 0)
				out->err = -ENOMEM;
		}
		pb_msg(out, 2, &sub);
	}
	for (size_t i = 0; i < nobj; i++) {
		pb_uint(&sub, 1, objs[i].idx + 1);
		pb_uint(&sub, 2, objs[i].start);
		pb_uint(&sub, 3, objs[i].end);
		pb_uint(&sub, 5, (uint64_t)str_id(&c->st, objs[i].path ? objs[i].path : ""));
		if (objs[i].build_id_len) {
			char hex[65];

			for (uint32_t b = 0; b < objs[i].build_id_len && b < 32; b++)
				snprintf(hex + 2 * b, 3, "%02x", objs[i].build_id[b]);
			pb_uint(&sub, 6, (uint64_t)str_id_copy(&c->st, hex));
		}
		pb_uint(&sub, 7, 1);
		pb_uint(&sub, 8, 1);
		pb_uint(&sub, 9, 1);
		pb_msg(out, 3, &sub);
	}
	for (size_t k = 0; k < c->locs.n; k++) {
		uint32_t f = c->locs.v[k].fn;

		pb_uint(&sub, 1, k + 1);
		if (pl[f].obj)
			pb_uint(&sub, 2, pl[f].obj->idx + 1);
		pb_uint(&sub2, 1, f + 1);
		pb_uint(&sub2, 2, c->locs.v[k].line);
		pb_msg(&sub, 4, &sub2);
		pb_msg(out, 4, &sub);
	}
	for (size_t f = 0; f < c->p->nfns; f++) {
		int64_t name = str_id(&c->st, c->p->fns[f].name);

		pb_uint(&sub, 1, f + 1);
		pb_uint(&sub, 2, (uint64_t)name);
		pb_uint(&sub, 3, (uint64_t)name);
		if (pl[f].file)
			pb_uint(&sub, 4, (uint64_t)str_id(&c->st, pl[f].file));
		pb_uint(&sub, 5, pl[f].line);
		pb_msg(out, 5, &sub);
	}
	/* every string is in the table now */
	for (int i = 0; i < c->nval; i++)
		str_id(&c->st, c->vtype[i]);
	{
		int64_t pt = str_id(&c->st, c->vtype[c->def]);
		int64_t pu = str_id(&c->st, c->vunit[c->def]);

		for (size_t i = 0; i < c->st.n; i++)
			pb_bytes(out, 6, c->st.s[i], strlen(c->st.s[i]));
		pb_uint(out, 10, view_duration_ns(c->v));
		pb_uint(&sub, 1, (uint64_t)pt);
		pb_uint(&sub, 2, (uint64_t)pu);
		pb_msg(out, 11, &sub);
		pb_uint(out, 12, 1);
		pb_uint(out, 14, (uint64_t)pt);
	}
	if (sub.err || sub2.err)
		out->err = -ENOMEM;
	free(sub.b);
	free(sub2.b);
	free(pl);
	free(stack);
	return out->err;
}

/* Write the protobuf gzip'd: the fixed header, raw deflate, crc32, size. */
static int pp_gzip(const struct pb *in, FILE *f)
{
	static const uint8_t hdr[] = OUT_MAGIC_PPROF;
	uint8_t buf[65536], tr[8];
	z_stream z;
	uLong crc = crc32(0L, Z_NULL, 0);
	int zr;

	memset(&z, 0, sizeof z);
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	fwrite(hdr, 1, sizeof hdr, f); /* with the name's terminating NUL */
	z.next_in = in->b;
	z.avail_in = (uInt)in->n;
	crc = crc32(crc, in->b, (uInt)in->n);
	do {
		z.next_out = buf;
		z.avail_out = sizeof buf;
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			deflateEnd(&z);
			return -EIO;
		}
		fwrite(buf, 1, sizeof buf - z.avail_out, f);
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	for (int i = 0; i < 4; i++) {
		tr[i] = (uint8_t)(crc >> (8 * i));
		tr[4 + i] = (uint8_t)((uint32_t)in->n >> (8 * i));
	}
	fwrite(tr, 1, sizeof tr, f);
	return 0;
}

static int write_pprof(struct view *v, const struct export_opts *o, FILE *f)
{
	struct pp c = {.v = v, .o = o};
	struct export_progress pg;
	struct pb out = {0};
	uint64_t nmem = 0;
	int memory = o->weight == EXPORT_W_ALLOCATED || o->weight == EXPORT_W_LEAKED ||
		     o->weight == EXPORT_W_PEAK;
	int err;

	if (memory && !view_mode_has(v, "memory"))
		return -ENODATA;
	/* what it reads: the memory events (memory_load()'s progress), or the
	 * trees' calls (at once: they are small) */
	if (memory)
		export_progress_start(&pg, o, "events", view_mem_count(v, &nmem) ? 0 : nmem);
	else
		export_progress_start(&pg, o, "calls", export_tree_calls(v));
	err = profile_load(v, NULL, 0, &c.p);
	if (!err)
		err = pathtree_init(&c.paths);
	if (err)
		goto out;
	if (memory) {
		struct memory_opts mo = {.progress = export_progress_mem, .progress_arg = &pg};

		err = memory_load(v, &mo, &c.m);
		if (err)
			goto out;
		c.vtype[0] = "alloc_objects", c.vunit[0] = "count";
		c.vtype[1] = "alloc_space", c.vunit[1] = "bytes";
		c.vtype[2] = o->weight == EXPORT_W_PEAK ? "peak_space" : "leaked_space";
		c.vunit[2] = "bytes";
		c.nval = 3;
		c.def = o->weight == EXPORT_W_ALLOCATED ? 1 : 2;
		err = pp_memory(&c);
	} else {
		const struct cygprof_psample *ps;
		size_t nps = 0;
		int trees = 0;

		export_progress_to(&pg, pg.total);
		for (size_t t = 0; t < c.p->nthreads; t++)
			trees |= c.p->threads[t].n > 1;
		if (!trees && view_psamples(v, &ps, &nps) == 0 && nps > 0) {
			c.vtype[0] = "samples", c.vunit[0] = "count";
			c.vtype[1] = "cpu", c.vunit[1] = "nanoseconds";
			c.nval = 2;
			err = pp_stacks(&c);
			goto write;
		}
		err = psamp_load(v, c.p, 1, &c.ps);
		if (err)
			goto out;
		c.vtype[0] = "calls", c.vunit[0] = "count";
		c.vtype[1] = "time", c.vunit[1] = "nanoseconds";
		c.nval = 2;
		if (c.ps) {
			c.vtype[2] = "samples", c.vunit[2] = "count";
			c.vtype[3] = "cpu", c.vunit[3] = "nanoseconds";
			c.nval = 4;
		}
		c.def = o->weight == EXPORT_W_CALLS ? 0 : 1;
		if (o->weight == EXPORT_W_SAMPLES) {
			if (!c.ps) {
				err = -ENODATA;
				goto out;
			}
			c.def = 2;
		}
		err = pp_trees(&c);
	}
write:
	if (!err)
		err = pp_write_pb(&c, &out);
	if (!err)
		err = pp_gzip(&out, f);
out:
	free(out.b);
	pathtree_release(&c.paths);
	free(c.pv);
	free(c.tv);
	hindex_release(&c.tv_index);
	free(c.locs.v);
	hindex_release(&c.locs.index);
	for (size_t i = 0; i < c.st.nowned; i++)
		free(c.st.owned[i]);
	free(c.st.owned);
	free(c.st.s);
	hindex_release(&c.st.index);
	if (c.ps)
		psamp_free(c.ps);
	if (c.m)
		memory_free(c.m);
	profile_free(c.p);
	return err;
}

const struct exporter export_pprof = {
	.name = "pprof",
	.summary = "go tool pprof's profile.proto: calls, exact time, samples, bytes",
	.readers = "go tool pprof, pprof, Speedscope, Grafana Pyroscope",
	.out_kind = OUT_PPROF,
	.default_out = NULL,
	.binary = 1,
	.write = write_pprof,
};

/* ---- in memory (cygprof push, record --push) ------------------------------ */

int export_pprof_bytes(struct view *v, const struct export_opts *o, uint8_t **out, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	int err;

	*out = NULL;
	*len = 0;
	if (!f)
		return -ENOMEM;
	err = write_pprof(v, o, f);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		free(buf);
		return err;
	}
	*out = (uint8_t *)buf;
	*len = n;
	return 0;
}

int export_pprof_paths(const struct pprof_paths *pp, uint8_t **out, size_t *len)
{
	struct pb pb = {0}, sub = {0}, sub2 = {0};
	uint64_t ns = 1 + pp->nnames; /* strings: "", the names, then the types */
	char *buf = NULL;
	size_t n = 0;
	FILE *f;
	int err;

	*out = NULL;
	*len = 0;
	for (int i = 0; i < pp->nval; i++) {
		pb_uint(&sub, 1, ns + 2 * (uint64_t)i);
		pb_uint(&sub, 2, ns + 2 * (uint64_t)i + 1);
		pb_msg(&pb, 1, &sub);
	}
	for (size_t i = 1; i < pp->npaths; i++) {
		int any = 0;

		for (int k = 0; k < pp->nval; k++)
			any |= pp->val[k][i] != 0;
		if (!any)
			continue;
		/* the path innermost first: one location per function */
		for (size_t j = i, d = 0; j && d <= pp->npaths; j = pp->parent[j], d++)
			pb_varint(&sub2, (uint64_t)pp->fn[j] + 1);
		pb_msg(&sub, 1, &sub2);
		for (int k = 0; k < pp->nval; k++)
			pb_varint(&sub2, (uint64_t)pp->val[k][i]);
		pb_msg(&sub, 2, &sub2);
		pb_msg(&pb, 2, &sub);
	}
	for (size_t f2 = 0; f2 < pp->nnames; f2++) {
		pb_uint(&sub, 1, f2 + 1);
		pb_uint(&sub2, 1, f2 + 1);
		pb_msg(&sub, 4, &sub2);
		pb_msg(&pb, 4, &sub);
		pb_uint(&sub, 1, f2 + 1);
		pb_uint(&sub, 2, f2 + 1);
		pb_uint(&sub, 3, f2 + 1);
		pb_msg(&pb, 5, &sub);
	}
	pb_bytes(&pb, 6, "", 0);
	for (size_t i = 0; i < pp->nnames; i++)
		pb_bytes(&pb, 6, pp->names[i], strlen(pp->names[i]));
	for (int i = 0; i < pp->nval; i++) {
		pb_bytes(&pb, 6, pp->vtype[i], strlen(pp->vtype[i]));
		pb_bytes(&pb, 6, pp->vunit[i], strlen(pp->vunit[i]));
	}
	pb_uint(&pb, 9, pp->time_ns);
	pb_uint(&pb, 10, pp->duration_ns);
	pb_uint(&sub, 1, ns + 2 * (uint64_t)pp->def);
	pb_uint(&sub, 2, ns + 2 * (uint64_t)pp->def + 1);
	pb_msg(&pb, 11, &sub);
	pb_uint(&pb, 12, 1);
	pb_uint(&pb, 14, ns + 2 * (uint64_t)pp->def);
	err = pb.err ? pb.err : sub.err ? sub.err : sub2.err;
	free(sub.b);
	free(sub2.b);
	if (!err && !(f = open_memstream(&buf, &n)))
		err = -ENOMEM;
	if (!err) {
		err = pp_gzip(&pb, f);
		if (fclose(f) && !err)
			err = -ENOMEM;
		if (err)
			free(buf);
	}
	free(pb.b);
	if (err)
		return err;
	*out = (uint8_t *)buf;
	*len = n;
	return 0;
}
