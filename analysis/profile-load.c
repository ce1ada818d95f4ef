/* SPDX-License-Identifier: MIT */
/* profile-load.c - a profile from a view: each selected thread's named tree,
 * its functions merged by name, or by object and name
 * (PROFILE_KEY_OBJECT).
 *
 * A capture recorded with --time=sampled has exact calls and no clock; when
 * it has perf samples, the times every reader shows are the samples'
 * (sampled_times()): a node's self time is the weight of the samples placed
 * on it (psamples.h), its total the sum over its subtree, so the flat
 * profile, arcs, trees, exports, html and diff all take sampled times from
 * here.  With PROFILE_KEY_NAME the flat profile also counts the samples
 * whose chain left the call tree (psamp_fill_times()). */
#include "profile.h"
#include "psamples.h"
#include "view.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a load is making. */
struct loader {
	struct view *v;
	struct profile *p;
	enum profile_key key;
	uint32_t *map;         /* per view function: its profile index + 1, 0 not yet */
	size_t nmap;
	const char **objects;  /* PROFILE_KEY_OBJECT: per profile function */
	size_t nobjects;
};

static const char *base_name(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;

	return b ? b + 1 : path ? path : "?";
}

/* The profile function of view function vf keyed "OBJECT\x1fNAME" (see
 * profile.h), its object's base name kept in l->objects. */
static long intern_by_object(struct loader *l, const struct view_fn *vf)
{
	const struct cygprof_object *exe = view_exe_object(l->v, vf->proc);
	const char *oname = vf->obj ? base_name(vf->obj->path) : "?";
	const char *okey = vf->obj && vf->obj == exe ? "" : oname;
	size_t n = strlen(okey) + strlen(vf->name) + 2;
	char *key = malloc(n);
	long f;

	if (!key)
		return -ENOMEM;
	snprintf(key, n, "%s%c%s", okey, PROFILE_KEY_SEP, vf->name);
	f = profile_intern(l->p, key);
	free(key);
	if (f < 0)
		return f;
	if (l->nobjects < l->p->nfns) {
		const char **no = realloc(l->objects, l->p->nfns * sizeof(*no));

		if (!no)
			return -ENOMEM;
		l->objects = no;
		l->nobjects = l->p->nfns;
	}
	l->objects[f] = oname;
	return f;
}

/* The profile's function index of view function id. */
static long fn_index(struct loader *l, uint32_t id)
{
	const struct view_fn *vf;
	long f;

	if (id >= l->nmap) {
		size_t n = view_nfns(l->v);
		uint32_t *t = realloc(l->map, n * sizeof(*t));

		if (!t)
			return -ENOMEM;
		memset(t + l->nmap, 0, (n - l->nmap) * sizeof(*t));
		l->map = t;
		l->nmap = n;
	}
	if (l->map[id])
		return (long)l->map[id] - 1;
	if (!(vf = view_fn(l->v, id)))
		return CYGPROF_E_CORRUPT;
	f = l->key == PROFILE_KEY_OBJECT ? intern_by_object(l, vf) : profile_intern(l->p, vf->name);
	if (f >= 0)
		l->map[id] = (uint32_t)f + 1;
	return f;
}

/* Add capture thread ti's tree to l->p (idx: room for its nodes' indices). */
static int add_thread(struct loader *l, uint32_t ti, uint32_t **idx, size_t *cap)
{
	const struct cygprof_thread *th = view_thread(l->v, ti);
	const struct view_tree *t;
	struct profile_thread_info info;
	size_t j;
	int err;

	if (!th)
		return CYGPROF_E_NOTFOUND;
	if ((err = view_tree(l->v, ti, &t)))
		return err;
	memset(&info, 0, sizeof(info));
	info.idx = th->idx;
	info.tid = th->tid;
	info.pid = view_thread_pid(l->v, th);
	info.flags = th->flags;
	view_thread_name(th, info.name);
	if (t->n > *cap) {
		uint32_t *nx = realloc(*idx, t->n * sizeof(*nx));

		if (!nx)
			return -ENOMEM;
		*idx = nx;
		*cap = t->n;
	}
	for (j = 1; j < t->n; j++) {
		long f = fn_index(l, t->fn[j]);

		if (f < 0)
			return (int)f;
		(*idx)[j] = (uint32_t)f;
	}
	if (t->n)
		(*idx)[0] = 0;
	err = profile_add_tree_self(l->p, &info, t->nodes, *idx, t->self_ns, t->n);
	return err == -EINVAL ? CYGPROF_E_CORRUPT : err;
}

static int load_trees(struct view *v, const uint32_t *sel, size_t nsel, enum profile_key key,
		      struct profile **out, const char ***objects)
{
	const struct cygprof_thread *threads;
	struct loader l = {.v = v, .key = key};
	uint32_t *idx = NULL;
	size_t nthreads, k, count, cap = 0;
	int err;

	*out = NULL;
	if (objects)
		*objects = NULL;
	err = view_threads(v, &threads, &nthreads);
	if (err)
		return err;
	l.p = profile_new();
	if (!l.p)
		return -ENOMEM;
	count = sel ? nsel : nthreads;
	for (k = 0; k < count && !err; k++)
		err = add_thread(&l, sel ? sel[k] : threads[k].idx, &idx, &cap);
	free(l.map);
	free(idx);
	if (err) {
		free(l.objects);
		profile_free(l.p);
		return err;
	}
	*out = l.p;
	if (objects)
		*objects = l.objects;
	else
		free(l.objects);
	return 0;
}

/* Thread i of p rebuilt into q with the times of s (s's node costs are
 * for the same threads and nodes: both profiles come from the same trees). */
static int sampled_thread(struct view *v, struct profile *q, const struct profile *p, size_t i,
			  const struct psamp *s)
{
	const struct profile_thread *t = &p->threads[i];
	const struct psamp_cost *c = i < s->nthreads ? s->node[i] : NULL;
	struct cygprof_node *nodes = calloc(t->n ? t->n : 1, sizeof *nodes);
	uint32_t *fnidx = calloc(t->n ? t->n : 1, sizeof *fnidx);
	uint64_t *self = calloc(t->n ? t->n : 1, sizeof *self);
	size_t j;
	int err = -ENOMEM;

	if (!nodes || !fnidx || !self)
		goto out;
	for (j = 0; j < t->n; j++) {
		const struct profile_tnode *tn = &t->nodes[j];

		nodes[j].parent = j ? tn->parent : CYGPROF_NONE;
		nodes[j].site = tn->site;
		nodes[j].calls = tn->calls;
		self[j] = j && c ? c[j].sample_ns + c[j].offcpu_ns : 0;
		nodes[j].total_ns = self[j];
		fnidx[j] = j ? tn->fn : 0;
	}
	/* parents precede their children: sum each subtree bottom up */
	for (j = t->n; j-- > 1;) {
		if (nodes[j].parent >= j) {
			err = CYGPROF_E_CORRUPT;
			goto out;
		}
		nodes[nodes[j].parent].total_ns += nodes[j].total_ns;
	}
	err = profile_add_tree_self(q, &t->info, nodes, fnidx, self, t->n);
	if (!err && t->n) {
		/* the view's tree and sites too, for the readers of sites
		 * (annotate, callgrind): the same nodes in the same order */
		for (j = 0; j < t->n; j++)
			self[j] = nodes[j].total_ns;
		err = view_set_times(v, t->info.idx, self, t->n);
	}
out:
	free(nodes);
	free(fnidx);
	free(self);
	return err;
}

/* --time=sampled with samples: *p's times become the samples' (see the
 * head of this file).  Samples are placed by name, on the same trees
 * loaded by name when *p is keyed otherwise. */
static int sampled_times(struct view *v, const uint32_t *sel, size_t nsel, enum profile_key key,
			 struct profile **p)
{
	struct profile *np = *p, *q = NULL;
	struct psamp *s = NULL;
	size_t i;
	int err;

	if (!view_time_sampled(v))
		return 0;
	/* the runtime's own CPU samples gave the trees their times already
	 * (view_tree(), timemodel.h): exact paths, no chain to follow */
	for (i = 0; i < (*p)->nthreads; i++) {
		const struct view_tree *t;

		if (!view_tree(v, (*p)->threads[i].info.idx, &t) && t->modelled)
			return 0;
	}
	if (key != PROFILE_KEY_NAME && (err = load_trees(v, sel, nsel, PROFILE_KEY_NAME, &np, NULL)))
		return err;
	err = psamp_load(v, np, sel == NULL, &s);
	if (err || !s || !s->total.samples)
		goto out;
	err = -ENOMEM;
	if (!(q = profile_new()))
		goto out;
	/* the same functions at the same indices (names are unique keys) */
	for (i = 0; i < (*p)->nfns; i++)
		if (profile_intern(q, (*p)->fns[i].name) != (long)i)
			goto out;
	err = 0;
	for (i = 0; i < (*p)->nthreads && !err; i++)
		err = sampled_thread(v, q, *p, i, s);
	if (err)
		goto out;
	profile_free(*p);
	*p = q;
	q = NULL;
out:
	profile_free(q);
	psamp_free(s);
	if (np != *p && key != PROFILE_KEY_NAME)
		profile_free(np);
	return err == -EINVAL ? CYGPROF_E_CORRUPT : err;
}

int profile_load_keyed(struct view *v, const uint32_t *sel, size_t nsel, enum profile_key key,
		       struct profile **out, const char ***objects)
{
	int err = load_trees(v, sel, nsel, key, out, objects);

	if (!err && (err = sampled_times(v, sel, nsel, key, out))) {
		profile_free(*out);
		*out = NULL;
		if (objects) {
			free(*objects);
			*objects = NULL;
		}
	}
	return err;
}

int profile_view_times(struct view *v)
{
	struct profile *p = NULL;
	int err = view_time_sampled(v) ? profile_load(v, NULL, 0, &p) : 0;

	profile_free(p);
	return err;
}

int profile_load(struct view *v, const uint32_t *sel, size_t nsel, struct profile **out)
{
	return profile_load_keyed(v, sel, nsel, PROFILE_KEY_NAME, out, NULL);
}

const char *profile_key_name(const char *key)
{
	const char *sep = strchr(key, PROFILE_KEY_SEP);

	return sep ? sep + 1 : key;
}
