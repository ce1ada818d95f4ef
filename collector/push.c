/* SPDX-License-Identifier: MIT */
/* push.c - the profile of each interval for record --push: after every
 * checkpoint, the capture trees the checkpoint folded (calls and times per
 * node, the open frames' time up to the checkpoint included) are laid over
 * each other by function names into one tree of call paths, compensated
 * for the hooks' cost as every reader does (profile_compensate()), and the
 * difference with the sums of the checkpoint that ended the last interval
 * goes to the caller's interval() hook.  Calls only grow, so the calls of the intervals add up
 * exactly to the final checkpoint's, which is the capture's profile.
 *
 * The collector only computes and hands over: the caller (cli/push.c)
 * encodes and sends in a thread of its own.  Functions are named as the
 * capture names them (collector_fn_label()), once per address. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector-private.h"
#include "pathtree.h"
#include "profile.h"

struct pushstate {
	struct profile *names;  /* function names, interned */
	struct hmap fn_at;      /* (process, address) -> name index + 1 */
	struct pathtree paths;  /* by name index */
	int64_t *prev_calls, *prev_self, *cur_calls, *cur_self, *d_calls, *d_self;
	size_t cap;             /* of each of the six */
	const char **namev;     /* names->fns[i].name, for the hook */
	size_t namev_cap;
	uint64_t seq, from_ns;
};

void collector_push_release(struct collector *c)
{
	struct pushstate *ps = c->push;

	if (!ps)
		return;
	profile_free(ps->names);
	hmap_release(&ps->fn_at);
	pathtree_release(&ps->paths);
	free(ps->prev_calls);
	free(ps->prev_self);
	free(ps->cur_calls);
	free(ps->cur_self);
	free(ps->d_calls);
	free(ps->d_self);
	free(ps->namev);
	free(ps);
	c->push = NULL;
}

static int64_t **arrays(struct pushstate *ps, int which)
{
	int64_t **a[6] = {&ps->prev_calls, &ps->prev_self, &ps->cur_calls,
			  &ps->cur_self,   &ps->d_calls,   &ps->d_self};
	return a[which];
}

/* Room for n paths in the six arrays, the new ones zero. */
static int room(struct pushstate *ps, size_t n)
{
	size_t cap = ps->cap ? ps->cap : 256;

	if (n <= ps->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	for (int k = 0; k < 6; k++) {
		int64_t **a = arrays(ps, k), *v = realloc(*a, cap * sizeof *v);

		if (!v)
			return -ENOMEM;
		memset(v + ps->cap, 0, (cap - ps->cap) * sizeof *v);
		*a = v;
	}
	ps->cap = cap;
	return 0;
}

/* The name index of the function at addr in process cp, interned once. */
static long name_of(struct collector *c, struct pushstate *ps, struct cproc *cp, uint64_t addr)
{
	uint64_t key = (addr & 0xffffffffffffULL) | (uint64_t)((cp ? cp->idx + 1 : 0) & 0xffff) << 48;
	uint64_t v;
	struct procmap *m = NULL;

	if (hmap_get(&ps->fn_at, key, &v))
		return (long)v - 1;
	const char *raw = cp ? collector_fn_name(c, cp, addr, NULL, NULL, &m, NULL) : NULL;
	char *label = collector_fn_label(c, cp, raw, m, addr);
	long f = label ? profile_intern(ps->names, label) : -ENOMEM;

	free(label);
	/* a placeholder (no symbol yet) is named again next time */
	if (f >= 0 && raw && hmap_put(&ps->fn_at, key, (uint64_t)f + 1))
		return -ENOMEM;
	return f;
}

/* One thread's capture tree added to the current sums. */
static int add_thread(struct collector *c, struct pushstate *ps, struct cthread *ct,
		      const struct profile_overhead *ov)
{
	struct cygprof_node *nodes = malloc(ct->n * sizeof *nodes);
	uint64_t *self = malloc(ct->n * sizeof *self);
	uint32_t *at = malloc(ct->n * sizeof *at);
	int err = nodes && self && at ? 0 : -ENOMEM;

	if (!err) {
		collector_tree_nodes(c, ct, nodes);
		if (ct->proc)
			collector_proc_maps(c, ct->proc);
		if (ov)
			err = profile_compensate(nodes, ct->n, ov, NULL, NULL);
		if (!err)
			err = profile_self_times(nodes, ct->n, self, NULL);
	}
	if (!err)
		at[0] = 0;
	for (size_t i = 1; i < ct->n && !err; i++) {
		uint32_t p = nodes[i].parent;
		long f, q;

		if (p >= i) { /* cannot be: parents come first */
			at[i] = 0;
			continue;
		}
		f = name_of(c, ps, ct->proc, nodes[i].fn);
		q = f < 0 ? f : pathtree_child(&ps->paths, at[p], (uint32_t)f);
		if (q < 0 || room(ps, ps->paths.len)) {
			err = -ENOMEM;
			break;
		}
		at[i] = (uint32_t)q;
		ps->cur_calls[q] += (int64_t)nodes[i].calls;
		ps->cur_self[q] += (int64_t)self[i];
	}
	free(nodes);
	free(self);
	free(at);
	return err;
}

/* Nothing is swapped or advanced before the hook is called: an interval
 * that fails (-ENOMEM) is part of the next one. */
int collector_push_interval(struct collector *c, int final)
{
	const struct collector_opts *o = c->o;
	struct pushstate *ps = c->push;
	struct profile_overhead ov, *ovp = NULL;
	int err = 0;

	if (!o->interval)
		return 0;
	if (!ps) {
		ps = c->push = calloc(1, sizeof *ps);
		if (!ps || !(ps->names = profile_new()) || pathtree_init(&ps->paths) ||
		    room(ps, 1)) {
			collector_push_release(c);
			return -ENOMEM;
		}
		ps->from_ns = c->clk_start.real_ns;
	}
	struct collector_overhead co;
	if (!o->raw_times && collector_overhead(c, &co)) {
		ov = (struct profile_overhead){co.in_ns, co.in_ns + co.out_ns};
		ovp = &ov;
	}
	/* An interval is pushed at the first checkpoint that ends it (within
	 * a tenth of a checkpoint's interval: two checkpoints are at least
	 * that interval apart, poll.c): checkpoints may come more often
	 * (about every second), the one at the start at once.  The sums are
	 * made afresh each time: skipping one loses nothing. */
	if (!final && c->clk_start.real_ns + tick_ns(c, c->end_ts) + c->ckpt_interval_ns / 10 <
			      ps->from_ns + o->interval_ns)
		return 0;
	memset(ps->cur_calls, 0, ps->cap * sizeof *ps->cur_calls);
	memset(ps->cur_self, 0, ps->cap * sizeof *ps->cur_self);
	for (size_t i = 0; i < c->nthreads && !err; i++)
		if (c->threads[i]->n > 1)
			err = add_thread(c, ps, c->threads[i], ovp);
	if (err)
		return err;
	if (ARRAY_GROW(ps->namev, ps->namev_cap, ps->names->nfns + 1))
		return -ENOMEM;
	for (size_t i = 0; i < ps->names->nfns; i++)
		ps->namev[i] = ps->names->fns[i].name;

	uint64_t total = 0;
	uint32_t *pv = malloc((ps->paths.len + 1) * 2 * sizeof *pv);
	if (!pv)
		return -ENOMEM;
	for (size_t i = 0; i < ps->paths.len; i++) {
		int64_t dc = ps->cur_calls[i] - ps->prev_calls[i];
		int64_t ds = ps->cur_self[i] - ps->prev_self[i];

		ps->d_calls[i] = dc;
		ps->d_self[i] = ds > 0 ? ds : 0;
		total += dc > 0 ? (uint64_t)dc : 0;
		pv[i] = i ? ps->paths.n[i].parent : 0;
		pv[ps->paths.len + i] = i ? ps->paths.n[i].fn : 0;
	}
	uint64_t until = c->clk_start.real_ns + tick_ns(c, c->end_ts);
	if (until < ps->from_ns)
		until = ps->from_ns;
	struct collector_interval iv = {
		.final = final,
		.seq = ps->seq++,
		.from_ns = ps->from_ns,
		.until_ns = until,
		.npaths = ps->paths.len,
		.parent = pv,
		.fn = pv + ps->paths.len,
		.names = ps->namev,
		.nnames = ps->names->nfns,
		.calls = ps->d_calls,
		.self_ns = ps->d_self,
		.calls_total = total,
		.pid = c->main_pid,
	};
	o->interval(o->interval_arg, &iv);
	free(pv);
	ps->from_ns = until;
	/* the current sums are the previous ones of the next interval */
	int64_t *t = ps->prev_calls;
	ps->prev_calls = ps->cur_calls;
	ps->cur_calls = t;
	t = ps->prev_self;
	ps->prev_self = ps->cur_self;
	ps->cur_self = t;
	return 0;
}

int collector_push_meta(struct collector *c)
{
	uint64_t sent = 0, dropped = 0;
	char buf[32];
	int err;

	if (!c->o->interval || !c->o->interval_end)
		return 0;
	c->o->interval_end(c->o->interval_arg, &sent, &dropped);
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)sent);
	err = cygprof_capture_set_meta(c->cap, "push_sent", buf);
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)dropped);
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "push_dropped", buf);
	return err;
}
