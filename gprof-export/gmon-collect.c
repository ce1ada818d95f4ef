/* SPDX-License-Identifier: MIT */
/* gmon-collect.c - group a capture's processes by executable and gather, in
 * file addresses, each executable's functions (exact self time), arcs (call
 * site -> callee, calls) and the instructions its perf samples hit. */
#include "array.h"
#include "gmon-export.h"
#include "view.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct image_acc {
	struct gmon_image img;
	size_t fns_cap, arcs_cap, pcs_cap;
	const struct cygprof_object *obj; /* exe object of the first process */
};

static int push_fn(struct image_acc *a, uint64_t addr, uint64_t end, uint64_t self_ns)
{
	if (ARRAY_GROW(a->img.fns, a->fns_cap, a->img.nfns + 1))
		return -ENOMEM;
	a->img.fns[a->img.nfns].addr = addr;
	a->img.fns[a->img.nfns].end = end;
	a->img.fns[a->img.nfns].self_ns = self_ns;
	a->img.nfns++;
	return 0;
}

static int push_arc(struct image_acc *a, uint64_t from, uint64_t self, uint64_t count)
{
	if (ARRAY_GROW(a->img.arcs, a->arcs_cap, a->img.narcs + 1))
		return -ENOMEM;
	a->img.arcs[a->img.narcs].from_pc = from;
	a->img.arcs[a->img.narcs].self_pc = self;
	a->img.arcs[a->img.narcs].count = count;
	a->img.narcs++;
	return 0;
}

static int push_pc(struct image_acc *a, uint64_t pc)
{
	if (ARRAY_GROW(a->img.pcs, a->pcs_cap, a->img.npcs + 1))
		return -ENOMEM;
	a->img.pcs[a->img.npcs].pc = pc;
	a->img.pcs[a->img.npcs].count = 1;
	a->img.npcs++;
	return 0;
}

static int cmp_pc(const void *pa, const void *pb)
{
	const struct gmon_pc *a = pa, *b = pb;

	return a->pc < b->pc ? -1 : a->pc > b->pc;
}

static int cmp_fn(const void *pa, const void *pb)
{
	const struct gmon_fn *a = pa, *b = pb;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int cmp_arc(const void *pa, const void *pb)
{
	const struct gmon_arc *a = pa, *b = pb;

	if (a->from_pc != b->from_pc)
		return a->from_pc < b->from_pc ? -1 : 1;
	return a->self_pc < b->self_pc ? -1 : a->self_pc > b->self_pc;
}

/* Sort and merge entries of the same address (pair). */
static void merge_image(struct gmon_image *m)
{
	size_t i, k;

	if (m->nfns)
		qsort(m->fns, m->nfns, sizeof(*m->fns), cmp_fn);
	for (i = 0, k = 0; i < m->nfns; i++) {
		if (k && m->fns[k - 1].addr == m->fns[i].addr) {
			m->fns[k - 1].self_ns += m->fns[i].self_ns;
			if (m->fns[i].end > m->fns[k - 1].end)
				m->fns[k - 1].end = m->fns[i].end;
		} else {
			m->fns[k++] = m->fns[i];
		}
	}
	m->nfns = k;
	m->self_ns = 0;
	for (i = 0; i < m->nfns; i++)
		m->self_ns += m->fns[i].self_ns;

	if (m->narcs)
		qsort(m->arcs, m->narcs, sizeof(*m->arcs), cmp_arc);
	for (i = 0, k = 0; i < m->narcs; i++) {
		if (k && m->arcs[k - 1].from_pc == m->arcs[i].from_pc &&
		    m->arcs[k - 1].self_pc == m->arcs[i].self_pc)
			m->arcs[k - 1].count += m->arcs[i].count;
		else
			m->arcs[k++] = m->arcs[i];
	}
	m->narcs = k;

	if (m->npcs)
		qsort(m->pcs, m->npcs, sizeof(*m->pcs), cmp_pc);
	for (i = 0, k = 0; i < m->npcs; i++) {
		if (k && m->pcs[k - 1].pc == m->pcs[i].pc)
			m->pcs[k - 1].count += m->pcs[i].count;
		else
			m->pcs[k++] = m->pcs[i];
	}
	m->npcs = k;
}

static int same_build_id(const struct cygprof_object *a, const struct cygprof_object *b)
{
	if (!a || !b)
		return a == b;
	return a->build_id_len == b->build_id_len &&
	       !memcmp(a->build_id, b->build_id, a->build_id_len);
}

static int in_obj(const struct cygprof_object *o, uint64_t addr)
{
	return addr >= o->start && addr < o->end;
}

/* One thread's tree and call sites into the image (runtime addresses of a
 * process whose executable is mapped as o). */
static int add_thread(struct view *v, struct image_acc *a, const struct cygprof_object *o,
		      uint32_t proc, uint32_t thread)
{
	const struct cygprof_callsite *sites;
	const struct cygprof_node *nodes;
	const struct view_tree *t;
	size_t n, nsites, i;
	int err;

	err = view_tree(v, thread, &t);
	if (err)
		return err;
	nodes = t->nodes;
	n = t->n;
	for (i = 1; i < n; i++) {
		const struct view_fn *f = view_fn(v, t->fn[i]);
		uint64_t fn = nodes[i].fn, end = fn;

		if (!in_obj(o, fn))
			continue;
		if (f->has_sym && f->start == fn && f->size)
			end = fn + f->size;
		err = push_fn(a, fn - o->bias, end - o->bias, t->self_ns[i]);
		if (err)
			return err;
	}
	if (!n)
		return 0;
	err = view_sites(v, thread, &sites, &nsites);
	for (i = 0; i < nsites && !err; i++) {
		const struct cygprof_callsite *cs = &sites[i];
		struct view_sym s;
		uint64_t callee, caller, from;

		if (cs->node == 0 || cs->node >= n || !cs->calls)
			continue;
		callee = nodes[cs->node].fn;
		if (nodes[cs->node].parent == 0 || !in_obj(o, callee))
			continue; /* spontaneous, or not in the executable */
		caller = nodes[nodes[cs->node].parent].fn;
		if (!in_obj(o, caller))
			continue;
		/* the byte before the return address is in the call
		 * instruction, always inside the caller (a call ending a
		 * function returns to the next one); without a usable site,
		 * the caller's entry */
		from = caller;
		if (cs->site > o->start && in_obj(o, cs->site - 1) &&
		    !view_symbol(v, proc, cs->site - 1, &s) && s.start == caller)
			from = cs->site - 1;
		err = push_arc(a, from - o->bias, callee - o->bias, cs->calls);
	}
	return err;
}

/* The rate of the samples: the one record asked for (meta "sample_hz"),
 * else 1e9 / the mean weight (ticks / rate is then their sampled time),
 * else GMON_DEFAULT_RATE. */
static uint32_t sample_rate(struct view *v, uint64_t weighted, uint64_t weight)
{
	const char *hz = view_meta_str(v, "sample_hz");
	unsigned long long r;
	char *end;

	if (hz && *hz >= '0' && *hz <= '9') {
		errno = 0;
		r = strtoull(hz, &end, 10);
		if (!errno && !*end && r >= 1 && r <= 1000000000u)
			return (uint32_t)r;
	}
	if (weight) {
		double d = 1e9 * (double)weighted / (double)weight + 0.5;

		return d < 1 ? 1 : d > 1e9 ? 1000000000u : (uint32_t)d;
	}
	return GMON_DEFAULT_RATE;
}

/* The perf samples: each one whose innermost frame is in the executable of
 * its process goes to that process's image, at its file address; the rate
 * is the capture's (every image gets it, samples or not). */
static int add_samples(struct view *v, struct image_acc *acc, size_t nacc,
		       const uint32_t *proc_img, size_t nprocs)
{
	const struct cygprof_stack_node *stash;
	const struct cygprof_psample *ps;
	size_t n, nstash, i;
	uint64_t weighted = 0, weight = 0;
	uint32_t rate;
	int err;

	err = view_psamples(v, &ps, &n);
	if (!err && n)
		err = view_stash(v, &stash, &nstash);
	if (err || !n)
		return err;
	for (i = 0; i < n; i++) {
		const struct cygprof_stack_node *nd;
		const struct cygprof_object *o;
		struct image_acc *a;
		uint64_t pc;

		if (ps[i].weight_ns) {
			weighted++;
			weight += ps[i].weight_ns;
		}
		if (!ps[i].stack || ps[i].stack > nstash)
			continue;
		nd = &stash[ps[i].stack - 1];
		if (nd->proc_idx >= nprocs || !(o = view_exe_object(v, nd->proc_idx)))
			continue;
		pc = nd->kind == CYGPROF_FRAME_RA && nd->addr ? nd->addr - 1 : nd->addr;
		if (!in_obj(o, pc))
			continue;
		a = &acc[proc_img[nd->proc_idx]];
		err = push_pc(a, pc - o->bias);
		if (err)
			return err;
		a->img.samples++;
		a->img.sampled_ns += ps[i].weight_ns;
	}
	rate = sample_rate(v, weighted, weight);
	for (i = 0; i < nacc; i++) {
		acc[i].img.sampled = 1;
		acc[i].img.sample_rate = rate;
	}
	return 0;
}

void gmon_images_free(struct gmon_image *v, size_t n)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < n; i++) {
		free(v[i].exe);
		free(v[i].fns);
		free(v[i].arcs);
		free(v[i].pcs);
	}
	free(v);
}

int gmon_collect(struct view *v, struct gmon_image **out, size_t *nout)
{
	const struct cygprof_thread *threads;
	const struct cygprof_proc *procs;
	const struct cygprof_object *objs;
	struct image_acc *acc = NULL;
	struct gmon_image *res = NULL;
	size_t nthreads = 0, nprocs = 0, nobjs = 0, nacc = 0, i, j;
	uint32_t *proc_img = NULL;
	int err;

	*out = NULL;
	*nout = 0;
	err = view_threads(v, &threads, &nthreads);
	if (!err)
		err = view_procs(v, &procs, &nprocs);
	if (!err)
		err = view_objects(v, &objs, &nobjs);
	if (err)
		goto out;
	acc = calloc(nprocs ? nprocs : 1, sizeof(*acc));
	proc_img = calloc(nprocs ? nprocs : 1, sizeof(*proc_img));
	if (!acc || !proc_img) {
		err = -ENOMEM;
		goto out;
	}

	/* group the process images: same executable path and build-id */
	for (i = 0; i < nprocs; i++) {
		const struct cygprof_proc *p = &procs[i];
		const struct cygprof_object *o = view_exe_object(v, p->idx);
		const char *exe = p->exe ? p->exe : "";

		for (j = 0; j < nacc; j++)
			if (!strcmp(acc[j].img.exe, exe) &&
			    (!o || !acc[j].obj || same_build_id(o, acc[j].obj)))
				break;
		if (j == nacc) {
			acc[j].img.exe = strdup(exe);
			if (!acc[j].img.exe) {
				err = -ENOMEM;
				goto out;
			}
			acc[j].img.first_pid = p->pid;
			acc[j].img.first_proc = p->idx;
			nacc++;
		}
		if (!acc[j].obj)
			acc[j].obj = o;
		acc[j].img.nprocs++;
		proc_img[i] = (uint32_t)j;
	}

	for (i = 0; i < nprocs; i++) {
		const struct cygprof_object *o = view_exe_object(v, procs[i].idx);

		if (!o)
			continue;
		for (j = 0; j < nthreads && !err; j++)
			if (threads[j].proc_idx == procs[i].idx)
				err = add_thread(v, &acc[proc_img[i]], o, procs[i].idx,
						 threads[j].idx);
		if (err)
			goto out;
	}
	err = add_samples(v, acc, nacc, proc_img, nprocs);
	if (err)
		goto out;

	res = calloc(nacc ? nacc : 1, sizeof(*res));
	if (!res) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nacc; i++) {
		merge_image(&acc[i].img);
		res[i] = acc[i].img;
		memset(&acc[i].img, 0, sizeof(acc[i].img));
	}
	*out = res;
	*nout = nacc;
	err = 0;
out:
	if (acc)
		for (i = 0; i < nacc; i++) {
			free(acc[i].img.exe);
			free(acc[i].img.fns);
			free(acc[i].img.arcs);
			free(acc[i].img.pcs);
		}
	free(acc);
	free(proc_img);
	return err;
}

int gmon_file_name(const char *path, const struct gmon_image *v, size_t k, char **out)
{
	size_t j, same = 0, len = strlen(path) + 48;

	*out = NULL;
	if (k == 0) {
		*out = strdup(path);
		return *out ? 0 : -ENOMEM;
	}
	for (j = 1; j < k; j++)
		if (v[j].first_pid == v[k].first_pid)
			same++;
	*out = malloc(len);
	if (!*out)
		return -ENOMEM;
	if (same)
		snprintf(*out, len, "%s.%" PRIu32 ".%zu", path, v[k].first_pid, same + 1);
	else
		snprintf(*out, len, "%s.%" PRIu32, path, v[k].first_pid);
	return 0;
}
