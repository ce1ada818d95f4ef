/* SPDX-License-Identifier: MIT */
/* snapshot.c - the per-thread trees folded so far, as functions with calls
 * and self times, for a caller watching the program (cygprof top). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector-private.h"

struct slot {
	uint64_t fn;
	struct collector_fn f;
};

/* One thread's nodes merged by function: v gets one slot per function. */
static int fold_thread(struct collector *c, struct cthread *ct, struct slot **v, size_t *n,
		       size_t *cap)
{
	struct hmap at = {0};
	size_t first = *n;
	int err = 0;

	for (size_t i = 1; i < ct->n && !err; i++) {
		const struct fnode *f = &ct->nodes[i];
		uint64_t self = f->ticks, k;
		if (!f->fn)
			continue;
		/* the time of the children: ticks of direct children are
		 * subtracted below, when they are met */
		if (!hmap_get(&at, f->fn, &k)) {
			if (*n == *cap) {
				size_t nc = *cap ? *cap * 2 : 256;
				struct slot *nv = realloc(*v, nc * sizeof *nv);
				if (!nv) {
					err = -1;
					break;
				}
				*v = nv;
				*cap = nc;
			}
			k = *n;
			memset(&(*v)[k], 0, sizeof **v);
			(*v)[k].fn = f->fn;
			(*v)[k].f.tid = ct->tid;
			if (hmap_put(&at, f->fn, k)) {
				err = -1;
				break;
			}
			(*n)++;
		}
		struct slot *s = &(*v)[k];
		s->f.calls += f->calls;
		s->f.self_ns += ticks_to_ns(c, self);
		/* total: only the outermost frame of a recursion counts */
		int outer = 1;
		for (uint32_t p = f->parent; p && p != GID_DROP && p < ct->n; p = ct->nodes[p].parent)
			if (ct->nodes[p].fn == f->fn) {
				outer = 0;
				break;
			}
		if (outer)
			s->f.total_ns += ticks_to_ns(c, f->ticks);
		if (f->parent && f->parent < ct->n) {
			uint64_t pk;
			if (hmap_get(&at, ct->nodes[f->parent].fn, &pk)) {
				uint64_t d = ticks_to_ns(c, f->ticks);
				struct slot *ps = &(*v)[pk];
				ps->f.self_ns = ps->f.self_ns > d ? ps->f.self_ns - d : 0;
			}
		}
	}
	/* names */
	for (size_t i = first; i < *n; i++) {
		const char *raw = NULL;
		char buf[32];
		if (ct->proc) {
			collector_proc_maps(c, ct->proc);
			raw = collector_fn_name(c, ct->proc, (*v)[i].fn, NULL, NULL, NULL, NULL);
		}
		if (!raw) {
			snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)(*v)[i].fn);
			raw = buf;
		}
		(*v)[i].f.name = sym_demangle(raw);
	}
	hmap_release(&at);
	return err;
}

void collector_snapshot(struct collector *c, int final)
{
	struct slot *v = NULL;
	struct collector_fn *fns;
	size_t n = 0, cap = 0;

	if (!c->o->snapshot)
		return;
	for (size_t i = 0; i < c->nthreads; i++)
		if (fold_thread(c, c->threads[i], &v, &n, &cap))
			break;
	fns = calloc(n + 1, sizeof *fns);
	if (fns) {
		for (size_t i = 0; i < n; i++)
			fns[i] = v[i].f;
		struct collector_snapshot s = {
			.final = final,
			.pid = c->main_pid,
			.elapsed_ns = tick_ns(c, c->end_ts),
			.threads = (uint32_t)c->nthreads,
			.fns = fns,
			.nfns = n,
		};
		c->o->snapshot(c->o->snapshot_arg, &s);
	}
	for (size_t i = 0; i < n; i++)
		free((char *)v[i].f.name);
	free(fns);
	free(v);
}
