/* SPDX-License-Identifier: MIT */
/* profile-load.c - build a profile from a capture: read the threads' trees and
 * resolve every node's function address through its process's symbols. */
#include "profile.h"

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

/* Resolve the nodes of one tree to function indices in p.  Identical
 * addresses are common (one function, many call paths), so remember the
 * last few lookups. */
static int resolve_tree(struct profile *p, const struct proc_syms *ps,
			const struct cygprof_node *nodes, size_t n, uint32_t *idx)
{
	enum { CACHE = 256 };
	uint64_t caddr[CACHE];
	uint32_t cidx[CACHE];
	char buf[32];
	size_t i;

	memset(caddr, 0, sizeof(caddr));
	idx[0] = 0;
	for (i = 1; i < n; i++) {
		uint64_t fn = nodes[i].fn;
		size_t slot = (size_t)((fn >> 4) * 0x9e3779b97f4a7c15ull >> 56) % CACHE;
		const struct cygprof_symbol *s = NULL;
		const char *name;
		long f;

		if (fn && caddr[slot] == fn) {
			idx[i] = cidx[slot];
			continue;
		}
		if (ps && ps->n)
			s = cygprof_symbols_lookup(ps->syms, ps->n, fn);
		if (s && s->name && s->name[0]) {
			name = s->name;
		} else {
			snprintf(buf, sizeof(buf), "0x%" PRIx64, fn);
			name = buf;
		}
		f = profile_intern(p, name);
		if (f < 0)
			return (int)f;
		idx[i] = (uint32_t)f;
		caddr[slot] = fn;
		cidx[slot] = (uint32_t)f;
	}
	return 0;
}

int profile_load(struct cygprof_capture *cap, const uint32_t *sel, size_t nsel,
		 struct profile **out)
{
	struct cygprof_thread *threads = NULL;
	struct cygprof_proc *procs = NULL;
	struct proc_syms *ps = NULL;
	struct profile *p;
	size_t nthreads = 0, nprocs = 0, k, count;
	int err;

	*out = NULL;
	p = profile_new();
	if (!p)
		return -ENOMEM;
	err = cygprof_capture_get_threads(cap, &threads, &nthreads);
	if (err)
		goto fail;
	err = cygprof_capture_get_procs(cap, &procs, &nprocs);
	if (err)
		goto fail;
	ps = calloc(nprocs ? nprocs : 1, sizeof(*ps));
	if (!ps) {
		err = -ENOMEM;
		goto fail;
	}

	count = sel ? nsel : nthreads;
	for (k = 0; k < count; k++) {
		struct cygprof_node *nodes = NULL;
		struct profile_thread_info info;
		const struct cygprof_thread *th = NULL;
		const struct proc_syms *syms = NULL;
		uint32_t ti = sel ? sel[k] : (uint32_t)k;
		uint32_t *idx;
		size_t n = 0, j;

		for (j = 0; j < nthreads; j++)
			if (threads[j].idx == ti)
				th = &threads[j];
		if (!th) {
			err = CYGPROF_E_NOTFOUND;
			goto fail;
		}
		memset(&info, 0, sizeof(info));
		info.idx = th->idx;
		info.tid = th->tid;
		info.flags = th->flags;
		memcpy(info.name, th->name, sizeof(info.name));
		info.name[sizeof(info.name) - 1] = 0;
		if (th->proc_idx < nprocs) {
			struct proc_syms *q = &ps[th->proc_idx];

			info.pid = procs[th->proc_idx].pid;
			if (!q->loaded) {
				err = cygprof_capture_get_symbols(cap, th->proc_idx, &q->syms,
								  &q->n);
				if (err == CYGPROF_E_NOTFOUND) {
					q->syms = NULL;
					q->n = 0;
				} else if (err) {
					goto fail;
				}
				q->loaded = 1;
			}
			syms = q;
		}

		err = cygprof_capture_get_tree(cap, ti, &nodes, &n);
		if (err == CYGPROF_E_NOTFOUND) {
			nodes = NULL;
			n = 0;
		} else if (err) {
			goto fail;
		}
		idx = calloc(n ? n : 1, sizeof(*idx));
		if (!idx) {
			free(nodes);
			err = -ENOMEM;
			goto fail;
		}
		err = resolve_tree(p, syms, nodes, n, idx);
		if (!err) {
			err = profile_add_tree_idx(p, &info, nodes, idx, n);
			if (err == -EINVAL)
				err = CYGPROF_E_CORRUPT;
		}
		free(idx);
		free(nodes);
		if (err)
			goto fail;
	}
	err = 0;
	*out = p;
	p = NULL;
fail:
	if (ps)
		for (k = 0; k < nprocs; k++)
			if (ps[k].syms)
				cygprof_symbols_free(ps[k].syms, ps[k].n);
	free(ps);
	if (procs)
		cygprof_procs_free(procs, nprocs);
	free(threads);
	profile_free(p);
	return err;
}
