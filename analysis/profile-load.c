/* SPDX-License-Identifier: MIT */
/* profile-load.c - a profile from a view: each selected thread's named tree,
 * its functions merged by name. */
#include "profile.h"
#include "view.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The profile's function index of view function id (map: per view function,
 * index + 1, 0 when not interned yet). */
static long fn_index(struct profile *p, struct view *v, uint32_t **map, size_t *nmap, uint32_t id)
{
	long f;

	if (id >= *nmap) {
		size_t n = view_nfns(v);
		uint32_t *t = realloc(*map, n * sizeof(*t));

		if (!t)
			return -ENOMEM;
		memset(t + *nmap, 0, (n - *nmap) * sizeof(*t));
		*map = t;
		*nmap = n;
	}
	if ((*map)[id])
		return (long)(*map)[id] - 1;
	f = profile_intern(p, view_fn(v, id)->name);
	if (f >= 0)
		(*map)[id] = (uint32_t)f + 1;
	return f;
}

int profile_load(struct view *v, const uint32_t *sel, size_t nsel, struct profile **out)
{
	const struct cygprof_thread *threads;
	struct profile *p;
	uint32_t *map = NULL, *idx = NULL;
	size_t nthreads, nmap = 0, k, count, cap = 0;
	int err;

	*out = NULL;
	err = view_threads(v, &threads, &nthreads);
	if (err)
		return err;
	p = profile_new();
	if (!p)
		return -ENOMEM;
	count = sel ? nsel : nthreads;
	for (k = 0; k < count; k++) {
		uint32_t ti = sel ? sel[k] : threads[k].idx;
		const struct cygprof_thread *th = view_thread(v, ti);
		const struct view_tree *t;
		struct profile_thread_info info;
		size_t j;

		if (!th) {
			err = CYGPROF_E_NOTFOUND;
			goto fail;
		}
		err = view_tree(v, ti, &t);
		if (err)
			goto fail;
		memset(&info, 0, sizeof(info));
		info.idx = th->idx;
		info.tid = th->tid;
		info.pid = view_thread_pid(v, th);
		info.flags = th->flags;
		view_thread_name(th, info.name);
		if (t->n > cap) {
			uint32_t *nx = realloc(idx, t->n * sizeof(*nx));

			if (!nx) {
				err = -ENOMEM;
				goto fail;
			}
			idx = nx;
			cap = t->n;
		}
		for (j = 1; j < t->n; j++) {
			long f = fn_index(p, v, &map, &nmap, t->fn[j]);

			if (f < 0) {
				err = (int)f;
				goto fail;
			}
			idx[j] = (uint32_t)f;
		}
		if (t->n)
			idx[0] = 0;
		err = profile_add_tree_self(p, &info, t->nodes, idx, t->self_ns, t->n);
		if (err == -EINVAL)
			err = CYGPROF_E_CORRUPT;
		if (err)
			goto fail;
	}
	*out = p;
	p = NULL;
fail:
	free(map);
	free(idx);
	profile_free(p);
	return err;
}
