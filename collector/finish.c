/* SPDX-License-Identifier: MIT */
/* finish.c - storing the profile into the capture: about once a second
 * while the program runs (a checkpoint), and the same way at the end.  Each
 * time it folds every thread's raw tree into its capture tree, adds the
 * time of the frames still open (in the collector's copy: nothing is
 * written into the mapping), and stores trees, sites, threads, processes,
 * the objects and symbols not stored yet, and the metadata ("complete"
 * only at the end). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "collector-private.h"

/* When process cp ended, or the end of the recording so far. */
static uint64_t proc_end_ts(struct collector *c, struct cproc *cp)
{
	if (!cp)
		return c->end_ts;
	struct cyg_proc *p = C_AT(c, cp->off);
	uint64_t start = clamp_ts(RD(p->start_ts), c->tsc0, c->end_ts), end = RD(p->end_ts);

	if (cp->reaped) {
		uint64_t reap = clamp_ts(cp->reap_ts, start, c->end_ts);
		/* exited by itself: the runtime stamped its last moment */
		return WIFEXITED(cp->status) && end ? clamp_ts(end, start, reap) : reap;
	}
	return end ? clamp_ts(end, start, c->end_ts) : c->end_ts;
}

/* The program's data is still moving under us: what looks wrong may be a
 * write in progress, not damage. */
static int thread_live(struct collector *c, struct cthread *ct, uint32_t state)
{
	return !c->final && state != CYG_T_ENDED && state != CYG_T_CUT &&
	       !(ct->proc && ct->proc->reaped);
}

/* A buffer of the collector kept from one checkpoint to the next: big
 * trees would otherwise cost fresh pages (page faults) every time. */
static void *scratch(struct collector *c, int which, size_t bytes)
{
	if (bytes > c->scratch_cap[which]) {
		size_t cap = c->scratch_cap[which] ? c->scratch_cap[which] : 4096;
		while (cap < bytes)
			cap *= 2;
		void *p = realloc(c->scratch[which], cap);
		if (!p)
			return NULL;
		c->scratch[which] = p;
		c->scratch_cap[which] = cap;
	}
	return c->scratch[which];
}

struct dfs {
	uint32_t gid;
	uint64_t v;
};

/* What a thread could have done between start and end (ticks): no more
 * calls than a few per nanosecond, no node longer than the thread lived,
 * no more CPU samples than its life has periods (twice, and a thousand:
 * the timer's ticks are not exact), no more time off the CPU than its life.
 * Anything beyond cannot be true: the program wrote it. */
struct bounds {
	uint64_t calls, ticks, samples, ns;
};

static struct bounds thread_bounds(struct collector *c, uint64_t start, uint64_t end)
{
	uint64_t ticks = end - start, ns = ticks_to_ns(c, ticks);
	struct bounds b = {ns * 4 + 1000000, ticks + ticks / 8 + 1000000,
			   (c->cpu_period_ns ? ns / c->cpu_period_ns * 2 : 0) + 1000,
			   ns + ns / 8 + 1000000};
	return b;
}

static uint64_t bounded(uint64_t v, uint64_t max, struct damage *dmg)
{
	if (v <= max)
		return v;
	dmg->counts++;
	return 0;
}

/* The total of a raw node's u32 sample counters (samples s, overhead o
 * read now) from their deltas since the last fold: they may wrap. */
static void ext_totals(struct cthread *ct, uint32_t gid, uint32_t s, uint32_t o,
		       const struct bounds *b, struct damage *dmg, uint64_t *ts, uint64_t *to)
{
	uint64_t at = 0;
	struct extacc *e;

	*ts = *to = 0;
	if (!hmap_get(&ct->ext_at, gid, &at)) {
		if (!s && !o)
			return;
		if (ARRAY_GROW(ct->ext, ct->capext, ct->next + 1) ||
		    hmap_put(&ct->ext_at, gid, ct->next + 1))
			return;
		at = ++ct->next;
		ct->ext[at - 1] = (struct extacc){0};
	}
	e = &ct->ext[at - 1];
	uint32_t ds = s - e->last_s, dO = o - e->last_o;
	e->last_s = s;
	e->last_o = o;
	e->s += bounded(ds, b->samples, dmg);
	e->o += bounded(dO, b->samples, dmg);
	*ts = e->s;
	*to = e->o;
}


/* Walk the raw tree from the root and add every node into the capture
 * tree.  Links come from the program: a child must name its parent back
 * and be younger (a greater gid) than it, siblings older than each other,
 * so every node is visited at most once and every list ends. */
static int fold_tree(struct collector *c, struct cthread *ct, const struct bounds *b,
		     struct damage *dmg, uint64_t *raw_calls)
{
	struct dfs *st = NULL;
	size_t n = 0, cap = 0, i, visited = 0;
	int err = 0;

	*raw_calls = 0;
	collector_lat_reset(ct);
	for (i = 0; i < ct->n; i++) {
		ct->nodes[i].calls = 0;
		ct->nodes[i].ticks = 0;
		ct->nodes[i].samples = ct->nodes[i].ovh = 0;
		ct->nodes[i].wait_ns = ct->nodes[i].blocked_ns = 0;
	}
	uint64_t rv = cthread_root(c, ct);
	cap = c->scratch_cap[2] / sizeof *st;
	st = scratch(c, 2, (cap > 64 ? cap : 64) * sizeof *st);
	if (!st)
		return -ENOMEM;
	cap = c->scratch_cap[2] / sizeof *st;
	st[n++] = (struct dfs){ct->root, rv};
	while (n) {
		if (!(++visited & 4095))
			collector_yield(c);
		struct dfs x = st[--n];
		struct cyg_node *rn = shm_node(c, x.gid);
		uint64_t calls = bounded(RD(rn->calls), b->calls, dmg);
		uint64_t ticks = bounded(RD(rn->ticks), b->ticks, dmg);
		uint32_t idx = decision_idx(x.v), g = ACQ(rn->first_child), prev = UINT32_MAX;

		*raw_calls += calls;
		if (idx < GID_BAD) {
			ct->nodes[idx].calls += calls;
			ct->nodes[idx].ticks += ticks;
			if (calls && !c->o->time_sampled)
				collector_lat_node(ct, idx, x.gid);
		}
		/* SELF figures: a node left out gives its own to the kept
		 * ancestor its children attach to (the low half of its value) */
		uint32_t own = (x.v & BAD_BIT) ? GID_BAD : (uint32_t)x.v;
		if (own < ct->n && (c->flags & (CYG_F_CPUSAMPLE | CYG_F_SWITCHES))) {
			const struct cyg_node_ext *e = CYG_NODE_EXT(rn);
			uint64_t s, o;
			ext_totals(ct, x.gid, RD(e->samples), RD(e->ovh), b, dmg, &s, &o);
			ct->nodes[own].samples += s;
			ct->nodes[own].ovh += o;
			ct->nodes[own].wait_ns += bounded(RD(e->wait_ns), b->ns, dmg);
			ct->nodes[own].blocked_ns += bounded(RD(e->blocked_ns), b->ns, dmg);
		}
		while (g) {
			if (g <= x.gid || g >= prev || !gid_ok(c, ct, g)) {
				dmg->nodes++;
				break;
			}
			struct cyg_node *cn = shm_node(c, g);
			if (RD(cn->parent) != x.gid) {
				dmg->nodes++;
				break;
			}
			uint64_t v;
			if (!hmap_get(&ct->bygid, g, &v)) {
				v = cthread_decide(c, ct, RD(cn->fn), RD(cn->site), x.v);
				hmap_put(&ct->bygid, g, v);
			}
			if (v & BAD_BIT) {
				dmg->nodes++;
			} else {
				if (n == cap) {
					struct dfs *nv = scratch(c, 2, cap * 2 * sizeof *nv);
					if (!nv) {
						err = -ENOMEM;
						goto out;
					}
					st = nv;
					cap = c->scratch_cap[2] / sizeof *st;
				}
				st[n++] = (struct dfs){g, v};
			}
			prev = g;
			g = RD(cn->next_sibling);
		}
	}
out:
	return err;
}

/* The frames of a thread that has not ended (killed, crashed, exec'd,
 * still running at a checkpoint, or when its process exited): their time
 * up to end goes to their nodes and call sites, in the collector's copy. */
static void close_open_frames(struct collector *c, struct cthread *ct, uint64_t end,
			      uint64_t *site_extra, uint32_t nsites, struct damage *dmg,
			      uint64_t *closed)
{
	struct cyg_thread *t = C_AT(c, ct->off);
	/* depth before the stack: a thread that went deeper than its old
	 * stack had published its new one before */
	uint32_t depth = RD(t->depth);
	uint64_t soff = ACQ(t->stack_off);
	uint32_t cap = RD(t->stack_cap), d;

	*closed = 0;
	if (!depth)
		return;
	if (depth >= cap || depth > CYG_DEPTH_MAX ||
	    !shm_ok(c, soff, (uint64_t)cap * sizeof(struct cyg_frame))) {
		dmg->frames++;
		return;
	}
	const struct cyg_frame *stk = C_AT(c, soff);
	for (d = 1; d <= depth; d++) {
		uint64_t ts = clamp_ts(RD(stk[d].ts), ct->start_ts, end);
		uint32_t node = RD(stk[d].node), site = RD(stk[d].site);
		uint32_t idx = cthread_resolve(c, ct, node);
		if (idx == GID_BAD) {
			dmg->frames++;
			continue;
		}
		if (idx != GID_DROP) {
			ct->nodes[idx].ticks += end - ts;
			collector_lat_open(ct, idx, end - ts);
		}
		if (site && site <= nsites)
			site_extra[site - 1] += end - ts;
		(*closed)++;
	}
}

void collector_tree_nodes(const struct collector *c, const struct cthread *ct,
			  struct cygprof_node *v)
{
	memset(v, 0, ct->n * sizeof *v);
	for (size_t i = 0; i < ct->n; i++) {
		v[i].parent = ct->nodes[i].parent == GID_DROP ? CYGPROF_NONE : ct->nodes[i].parent;
		v[i].fn = ct->nodes[i].fn;
		v[i].site = ct->nodes[i].site;
		v[i].calls = ct->nodes[i].calls;
		v[i].total_ns = ticks_to_ns(c, ct->nodes[i].ticks);
	}
}

static int put_tree(struct collector *c, struct cthread *ct)
{
	struct cygprof_node *v = scratch(c, 0, (ct->n + 1) * sizeof *v);

	if (!v)
		return -ENOMEM;
	collector_tree_nodes(c, ct, v);
	return cygprof_capture_put_tree(c->cap, ct->idx, v, ct->n);
}

/* Calls per call site: the thread's entries for sites other than a node's
 * first, and the rest at the first site.  v[k - 1] is node k's first site;
 * only the other sites need a lookup. */
static int put_sites(struct collector *c, struct cthread *ct, const struct cyg_site *raw,
		     uint32_t nraw, const uint64_t *extra, struct damage *dmg)
{
	struct cygprof_callsite *v;
	struct hmap at = {0};
	size_t n = 0, k;
	uint32_t i;
	int err;

	v = scratch(c, 1, (ct->n + nraw + 1) * sizeof *v);
	if (!v)
		return -ENOMEM;
	memset(v, 0, (ct->n + nraw) * sizeof *v);
	/* the first site of every node, with all its calls for now */
	for (k = 1; k < ct->n; k++) {
		v[n].node = (uint32_t)k;
		v[n].site = ct->nodes[k].site;
		v[n].calls = ct->nodes[k].calls;
		v[n].total_ns = ticks_to_ns(c, ct->nodes[k].ticks);
		n++;
	}
	/* the other sites move their share away from it */
	for (i = 0; i < nraw; i++) {
		uint32_t node = RD(raw[i].node);
		uint64_t site = RD(raw[i].site), rcalls = RD(raw[i].calls), pos;
		uint32_t idx = cthread_resolve(c, ct, node);
		uint64_t ns = ticks_to_ns(c, RD(raw[i].ticks) + extra[i]);
		if (idx == GID_BAD) {
			dmg->sites++;
			continue;
		}
		if (idx == GID_DROP || !idx || idx >= ct->n)
			continue;
		struct cygprof_callsite *first = &v[idx - 1];
		uint64_t calls = rcalls < first->calls ? rcalls : first->calls;
		if (ns > first->total_ns)
			ns = first->total_ns;
		if (site == first->site)
			continue;
		first->calls -= calls;
		first->total_ns -= ns;
		uint64_t key = hash3(idx, site, 0x5173);
		if (hmap_get(&at, key, &pos)) {
			v[pos - 1].calls += calls;
			v[pos - 1].total_ns += ns;
			continue;
		}
		v[n].node = idx;
		v[n].site = site;
		v[n].calls = calls;
		v[n].total_ns = ns;
		hmap_put(&at, key, n + 1);
		n++;
	}
	/* drop first sites left with nothing (all calls came from elsewhere) */
	size_t out = 0;
	for (k = 0; k < n; k++)
		if (v[k].calls || v[k].total_ns)
			v[out++] = v[k];
	err = cygprof_capture_put_sites(c->cap, ct->idx, v, out);
	hmap_release(&at);
	return err;
}

/* The runtime's CPU samples and off-CPU time of a thread: its totals
 * (bounded like its other counters) and every node of its capture tree
 * with a figure, as the last fold made them. */
static int put_cpu(struct collector *c, struct cthread *ct, const struct cyg_thread *t,
		   const struct bounds *b, struct damage *dmg)
{
	struct cygprof_cpu r;
	struct cygprof_cpu_node *v = scratch(c, 0, (ct->n + 1) * sizeof *v);
	uint32_t m = RD(t->smp_method);
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	memset(&r, 0, sizeof r);
	r.thread_idx = ct->idx;
	r.method = m == CYG_SMP_PERF ? CYGPROF_CPU_PERF : m == CYG_SMP_TIMER ? CYGPROF_CPU_TIMER
									 : CYGPROF_CPU_OFF;
	if (m > CYG_SMP_TIMER)
		dmg->counts++;
	r.flags = RD(t->sw_on) ? CYGPROF_CPU_SWITCHES : 0;
	r.period_ns = r.method ? c->cpu_period_ns : 0; /* ours, not the mapping's */
	r.cpu_ns = bounded(RD(t->cpu_ns), b->ns, dmg);
	r.samples = bounded(RD(t->smp_samples), b->samples, dmg);
	uint64_t ovh = bounded(RD(t->smp_ovh), b->samples, dmg);
	uint64_t none = bounded(RD(t->smp_nonode), b->samples, dmg);
	r.overhead = ovh < r.samples ? ovh : r.samples;
	r.unplaced = none < r.samples - r.overhead ? none : r.samples - r.overhead;
	r.wait_ns = bounded(RD(t->sw_wait_ns), b->ns, dmg);
	r.blocked_ns = bounded(RD(t->sw_blocked_ns), b->ns, dmg);
	r.unplaced_ns = bounded(RD(t->sw_unplaced_ns), b->ns, dmg);
	r.switches = bounded(RD(t->sw_records), b->calls, dmg);
	r.switches_lost = bounded(RD(t->sw_lost), b->calls, dmg);
	for (size_t i = 0; i < ct->n; i++) {
		const struct fnode *f = &ct->nodes[i];
		if (!f->samples && !f->ovh && !f->wait_ns && !f->blocked_ns)
			continue;
		v[k] = (struct cygprof_cpu_node){(uint32_t)i, 0, f->samples, f->ovh, f->wait_ns,
						 f->blocked_ns};
		k++;
	}
	ct->cpu_samples = r.samples;
	ct->cpu_method = r.method;
	ct->cpu_switches = !!r.flags;
	ct->cpu_ns = r.samples ? r.cpu_ns : 0;
	return cygprof_capture_put_cpu(c->cap, &r, v, k);
}

/* The name the kernel has for a running thread now: it may have named
 * itself (pthread_setname_np, PR_SET_NAME) since its writer registered.
 * Read here, in the collector, so that the hooks make no system call. */
static void read_comm(struct cthread *ct)
{
	char path[64], buf[17];

	snprintf(path, sizeof path, "/proc/%u/task/%u/comm", ct->pid, ct->tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return; /* ended meanwhile: its writer's end has the name */
	ssize_t r = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (r <= 0)
		return;
	while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == 0))
		r--;
	if (!r || r >= (ssize_t)sizeof ct->comm)
		return;
	memcpy(ct->comm, buf, (size_t)r);
	ct->comm[r] = 0;
}

/* The last call the writer's exit hook closed and has not counted in its
 * histogram yet (cyg_thread.lat_gid): a writer that has not ended counts
 * it at its next exit, so its histograms read now lack it. */
static void pending_latency(struct collector *c, struct cthread *ct, const struct cyg_thread *t,
			    const struct bounds *b, struct damage *dmg)
{
	uint32_t g = RD(t->lat_gid);
	uint64_t dt = RD(t->lat_dt);

	if (!g)
		return;
	uint32_t idx = cthread_resolve(c, ct, g);
	if (idx == GID_BAD || dt > b->ticks) {
		dmg->counts++;
		return;
	}
	if (idx != GID_DROP)
		collector_lat_open(ct, idx, dt);
}

/* One thread: fold, close, store. */
static int store_thread(struct collector *c, struct cthread *ct, uint64_t *lost)
{
	struct cyg_thread *t = C_AT(c, ct->off);
	uint32_t state = ACQ(t->state);
	uint64_t end, raw_calls = 0, closed = 0, *extra = NULL;
	struct damage dmg;
	int err = 0, live = thread_live(c, ct, state);
	/* The events drained before the fold reads the calls: each was
	 * counted in its node before it was published, so the record never
	 * says more events than its calls make.  Those drained during the
	 * checkpoint (collector_yield()) are in the capture as the events
	 * after it. */
	uint64_t events = ct->events;

	memset(&dmg, 0, sizeof dmg);
	/* A checkpoint takes a while: a thread may have started and ended
	 * after its time (c->end_ts) was taken, and is bounded by now. */
	if (state == CYG_T_ENDED || state == CYG_T_CUT)
		end = clamp_ts(RD(t->end_ts), ct->start_ts,
			       c->final ? c->end_ts : collector_now(c));
	else
		end = proc_end_ts(c, ct->proc);
	if (end < ct->start_ts)
		end = ct->start_ts;
	struct bounds b = thread_bounds(c, ct->start_ts, end);

	if (!ct->stored_ended) {
		/* call sites: the runtime appends, then publishes the count */
		uint32_t nraw = ACQ(t->sites_n);
		uint64_t soff = RD(t->sites_off);
		const struct cyg_site *raw = NULL;
		if (soff && nraw) {
			if (nraw <= CYG_SITES_MAX &&
			    shm_ok(c, soff, (uint64_t)nraw * sizeof(struct cyg_site)))
				raw = C_AT(c, soff);
			else
				dmg.sites++;
		}
		if (!raw)
			nraw = 0;
		extra = calloc(nraw + 1, sizeof *extra);
		if (!extra)
			return -ENOMEM;
		err = fold_tree(c, ct, &b, &dmg, &raw_calls);
		if (!err && state != CYG_T_ENDED)
			close_open_frames(c, ct, end, extra, nraw, &dmg, &closed);
		if (!err && state != CYG_T_ENDED && !c->o->time_sampled)
			pending_latency(c, ct, t, &b, &dmg);
		if (c->o->time_sampled) {
			/* --time=sampled: the hooks kept no time (a runtime
			 * that does not know CYG_F_NOCLOCK did: not ours to keep) */
			for (size_t i = 0; i < ct->n; i++)
				ct->nodes[i].ticks = 0;
			memset(extra, 0, (nraw + 1) * sizeof *extra);
		}
		/* The root's time: what its children took. */
		if (ct->n) {
			ct->nodes[0].ticks = 0;
			for (size_t i = 1; i < ct->n; i++)
				if (ct->nodes[i].parent == 0)
					ct->nodes[0].ticks += ct->nodes[i].ticks;
		}
		collector_yield(c);
		if (!err)
			err = put_tree(c, ct);
		collector_yield(c);
		if (!err)
			err = put_sites(c, ct, raw, nraw, extra, &dmg);
		if (!err && (c->flags & (CYG_F_CPUSAMPLE | CYG_F_SWITCHES)))
			err = put_cpu(c, ct, t, &b, &dmg);
		if (!err && !c->o->time_sampled)
			err = collector_put_latency(c, ct, b.ticks, &dmg.counts);
		free(extra);
		ct->calls = raw_calls + bounded(RD(t->overflow), b.calls, &dmg);
		ct->unwound_extra = closed;
		/* Only what cannot be a write in progress counts as damage. */
		if (!live)
			ct->dmg = dmg;
		if (state == CYG_T_ENDED && !live)
			ct->stored_ended = 1;
	}

	struct cygprof_thread th;
	memset(&th, 0, sizeof th);
	th.idx = ct->idx;
	th.proc_idx = ct->proc ? ct->proc->idx : CYGPROF_NONE;
	th.tid = ct->tid;
	th.flags = (state == CYG_T_ENDED ? CYGPROF_THREAD_ENDED : CYGPROF_THREAD_CUT) |
		   (ct->flags & CYG_TF_FORKED ? CYGPROF_THREAD_FORKED : 0) |
		   (ct->flags & CYG_TF_SIGNAL ? CYGPROF_THREAD_SIGNAL : 0) |
		   (ct->flags & CYG_TF_CLONED ? CYGPROF_THREAD_CLONED : 0);
	th.start_ns = tick_ns(c, ct->start_ts);
	th.end_ns = tick_ns(c, end);
	th.calls = ct->calls;
	th.events = ct->stored_ended ? ct->events : events;
	/* Counters the program could have written anything into. */
	struct damage cnt;
	memset(&cnt, 0, sizeof cnt);
	th.lost = bounded(RD(t->lost), b.calls * 2, &cnt);
	th.waits = bounded(RD(t->waits), b.calls * 2, &cnt);
	th.wait_ns = ticks_to_ns(c, bounded(RD(t->wait_ticks), b.ticks, &cnt));
	th.unpaired = bounded(RD(t->unpaired), b.calls, &cnt);
	th.unwound = bounded(RD(t->unwound), b.calls, &cnt) + ct->unwound_extra;
	th.overflow = bounded(RD(t->overflow), b.calls, &cnt);
	th.sig_lost = bounded(RD(t->sig_lost), b.calls, &cnt);
	th.mem_lost = bounded(RD(t->mem_nested), b.calls, &cnt);

	/* Its name: the one its writer read at its end; while it runs (or
	 * when its process ended it), the kernel's at the last look; else
	 * the one it registered with. */
	if (state != CYG_T_ENDED && ct->proc && !ct->proc->reaped)
		read_comm(ct);
	memcpy(th.name, t->name, sizeof th.name);
	if (!memchr(th.name, 0, sizeof th.name))
		cnt.texts++;
	th.name[sizeof th.name - 1] = 0;
	if (state != CYG_T_ENDED && ct->comm[0])
		memcpy(th.name, ct->comm, sizeof th.name);
	if (!live)
		ct->rdmg = cnt;
	*lost += th.lost;
	ct->lost = th.lost;
	ct->waits = th.waits;
	if (!err)
		err = cygprof_capture_put_thread(c->cap, &th);
	if (!err)
		ct->stored = 1;
	return err;
}

static char *join_cmdline(const char *buf, uint64_t len)
{
	char *s = malloc(len + 1);
	uint64_t i;

	if (!s)
		return NULL;
	for (i = 0; i < len; i++)
		s[i] = buf[i] ? buf[i] : ' ';
	while (len && s[len - 1] == ' ')
		len--;
	s[len] = 0;
	return s;
}

static char *join_argv(char *const *argv)
{
	size_t n = 1, i;
	char *s;

	for (i = 0; argv[i]; i++)
		n += strlen(argv[i]) + 1;
	s = malloc(n);
	if (!s)
		return NULL;
	s[0] = 0;
	for (i = 0; argv[i]; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

static int store_proc(struct collector *c, struct cproc *cpr)
{
	struct cyg_proc *p = C_AT(c, cpr->off);
	struct cygprof_proc cp;
	struct damage dmg;
	char exe[sizeof p->exe];
	uint64_t v;
	int err;

	memset(&dmg, 0, sizeof dmg);
	memset(&cp, 0, sizeof cp);
	cp.idx = cpr->idx;
	cp.pid = cpr->pid;
	cp.ppid = RD(p->ppid);
	uint64_t parent = RD(p->parent_off);
	cp.parent_idx = CYGPROF_NONE;
	if (parent && hmap_get(&c->proc_at, parent, &v) && v && v - 1 != cpr->idx)
		cp.parent_idx = (uint32_t)(v - 1);
	else if (parent)
		dmg.procs++;
	uint64_t start = clamp_ts(RD(p->start_ts), c->tsc0, c->end_ts);
	cp.start_ns = tick_ns(c, start);
	cp.end_ns = tick_ns(c, proc_end_ts(c, cpr));
	uint32_t state = RD(p->state), exit_called = RD(p->exit_called);
	int32_t code = (int32_t)RD(p->code);
	if (cpr->reaped && state != CYG_P_EXEC) {
		/* our own table first: what we reaped is certain */
		if (WIFEXITED(cpr->status)) {
			cp.end_kind = CYGPROF_END_EXIT;
			cp.end_code = WEXITSTATUS(cpr->status);
		} else {
			cp.end_kind = CYGPROF_END_SIGNAL;
			cp.end_code = WTERMSIG(cpr->status);
		}
	} else {
		switch (state) {
		case CYG_P_EXIT:
		case CYG_P_SIGNAL:
		case CYG_P_EXEC:
			cp.end_kind = state == CYG_P_EXIT     ? CYGPROF_END_EXIT
				      : state == CYG_P_SIGNAL ? CYGPROF_END_SIGNAL
							      : CYGPROF_END_EXEC;
			cp.end_code = code;
			break;
		default:
			cp.end_kind = exit_called ? CYGPROF_END_EXIT : CYGPROF_END_UNKNOWN;
			cp.end_code = exit_called ? code : 0;
		}
	}
	uint64_t coff = RD(p->cmd_off), clen = RD(p->cmd_len);
	if (coff && clen && (clen > COLLECTOR_CMD_MAX || !shm_ok(c, coff, clen))) {
		dmg.texts++;
		coff = 0;
	}
	if (coff && clen) {
		char *copy = malloc(clen);
		if (copy) {
			memcpy(copy, C_AT(c, coff), clen);
			cp.command = join_cmdline(copy, clen);
			free(copy);
		}
	} else {
		cp.command = strdup("");
	}
	memcpy(exe, p->exe, sizeof exe);
	if (!memchr(exe, 0, sizeof exe))
		dmg.texts++;
	exe[sizeof exe - 1] = 0;
	cp.exe = exe;
	if (c->final || cpr->reaped)
		cpr->dmg = dmg;
	if (!cp.command)
		return -ENOMEM;
	err = cygprof_capture_put_proc(c->cap, &cp);
	free(cp.command);
	if (!err)
		cpr->stored = 1;
	return err;
}

/* ---- objects and symbols -------------------------------------------------- */

/* The capture's objects of process cp, stored again when its maps changed
 * (their indices stay the same). */
static int put_objects(struct collector *c, struct cproc *cp)
{
	size_t i, k;
	int err = 0;

	if (cp->objidx && cp->objs_len == cp->maps_len && cp->objs_off == cp->maps_off)
		return 0;
	free(cp->objidx);
	cp->objidx = malloc((cp->maps.n + 1) * sizeof *cp->objidx);
	if (!cp->objidx)
		return -ENOMEM;
	cp->objs_len = cp->maps_len;
	cp->objs_off = cp->maps_off;
	for (i = 0; i < cp->maps.n; i++) {
		struct procmap *m = &cp->maps.v[i];
		cp->objidx[i] = CYGPROF_NONE;
		for (k = 0; k < i; k++)
			if (!strcmp(cp->maps.v[k].path, m->path)) {
				cp->objidx[i] = cp->objidx[k];
				break;
			}
		if (cp->objidx[i] != CYGPROF_NONE || !m->exec)
			continue;
		struct cygprof_object o;
		memset(&o, 0, sizeof o);
		o.idx = CYGPROF_NONE;
		for (k = 0; k < c->nobjs; k++)
			if (c->objs[k].proc == cp->idx && !strcmp(c->objs[k].path, m->path)) {
				o.idx = c->objs[k].idx;
				break;
			}
		if (o.idx == CYGPROF_NONE) {
			struct cobj *nv = realloc(c->objs, (c->nobjs + 1) * sizeof *nv);
			if (!nv)
				return -ENOMEM;
			c->objs = nv;
			nv[c->nobjs].proc = cp->idx;
			nv[c->nobjs].idx = (uint32_t)c->nobjs;
			nv[c->nobjs].path = strdup(m->path);
			if (!nv[c->nobjs].path)
				return -ENOMEM;
			o.idx = (uint32_t)c->nobjs++;
		}
		o.proc_idx = cp->idx;
		o.start = UINT64_MAX;
		for (k = 0; k < cp->maps.n; k++) {
			if (strcmp(cp->maps.v[k].path, m->path))
				continue;
			if (cp->maps.v[k].start < o.start)
				o.start = cp->maps.v[k].start;
			if (cp->maps.v[k].end > o.end)
				o.end = cp->maps.v[k].end;
		}
		o.path = m->path;
		uint64_t bias = 0;
		struct sym_elf *e = collector_elf(c, cp, m, NULL);
		if (e) {
			sym_elf_bias(e, m, &bias);
			o.build_id_len = (uint32_t)sym_elf_build_id(e, o.build_id, sizeof o.build_id);
			if (o.build_id_len > sizeof o.build_id)
				o.build_id_len = sizeof o.build_id;
		}
		o.bias = bias;
		err = cygprof_capture_put_object(c->cap, &o);
		if (err)
			return err;
		cp->objidx[i] = o.idx;
		for (k = i + 1; k < cp->maps.n; k++)
			if (!strcmp(cp->maps.v[k].path, m->path))
				cp->objidx[k] = o.idx;
	}
	return 0;
}

static int put_sym(struct collector *c, struct cproc *cp, struct procmap *m, uint64_t addr,
		   uint64_t size, char *name)
{
	struct cygprof_symbol s;
	int err;

	if (!name)
		return -ENOMEM;
	s.proc_idx = cp->idx;
	s.object_idx = CYGPROF_NONE;
	if (m && cp->objidx && (size_t)(m - cp->maps.v) < cp->maps.n)
		s.object_idx = cp->objidx[m - cp->maps.v];
	s.addr = addr;
	s.size = size;
	s.name = name;
	err = cygprof_capture_put_symbol(c->cap, &s);
	free(name);
	return err;
}

/* Store the symbol covering addr once; without one, a placeholder name when
 * must_name (a function or a stack frame), named again at later checkpoints
 * (a library loaded meanwhile), nothing for a call site. */
static int put_symbol(struct collector *c, struct cproc *cp, uint64_t addr, int must_name)
{
	uint64_t start = 0, size = 0, seen;
	struct procmap *m = NULL;

	if (!addr || hmap_get(&cp->seen, addr, &seen))
		return 0;
	const char *raw = collector_fn_name(c, cp, addr, &start, &size, &m, NULL);
	if (!raw) {
		hmap_put(&cp->seen, addr, must_name ? 2 : 1);
		if (!must_name)
			return 0;
		if (cp->nretry == cp->capretry) {
			size_t cap = cp->capretry ? cp->capretry * 2 : 16;
			uint64_t *nv = realloc(cp->retry, cap * sizeof *nv);
			if (nv) {
				cp->retry = nv;
				cp->capretry = cap;
			}
		}
		if (cp->nretry < cp->capretry)
			cp->retry[cp->nretry++] = addr;
		/* named after its object and the offset in it */
		return put_sym(c, cp, m, addr, 1, collector_fn_label(c, cp, NULL, m, addr));
	}
	hmap_put(&cp->seen, addr, 1);
	if (start != addr && hmap_get(&cp->seen, start, &seen) && seen == 1)
		return 0;
	hmap_put(&cp->seen, start, 1);
	return put_sym(c, cp, m, start, size, collector_fn_label(c, cp, raw, m, start));
}

/* Placeholders that a symbol names now: stored again under the same
 * address (and under the symbol's start). */
static int retry_symbols(struct collector *c, struct cproc *cp)
{
	size_t i, out = 0;
	int err = 0;

	for (i = 0; i < cp->nretry; i++) {
		uint64_t addr = cp->retry[i], start = 0, size = 0, seen;
		struct procmap *m = NULL;
		const char *raw = err ? NULL : collector_fn_name(c, cp, addr, &start, &size, &m, NULL);
		if (!raw) {
			cp->retry[out++] = addr;
			continue;
		}
		hmap_put(&cp->seen, addr, 1);
		err = put_sym(c, cp, m, addr, start + size > addr ? start + size - addr : 0,
			      collector_fn_label(c, cp, raw, m, addr));
		if (!err && start != addr && !(hmap_get(&cp->seen, start, &seen) && seen == 1)) {
			hmap_put(&cp->seen, start, 1);
			err = put_sym(c, cp, m, start, size, collector_fn_label(c, cp, raw, m, start));
		}
	}
	cp->nretry = out;
	return err;
}

/* Objects, and the symbols of the addresses used since the last time:
 * new tree nodes (functions and call sites) and new memory stack frames. */
static int put_symbols(struct collector *c)
{
	size_t i, k;
	int err = 0;

	for (i = 0; i < c->nprocs && !err; i++) {
		struct cproc *cp = c->procs[i];
		uint64_t len = cp->objs_len, off = cp->objs_off;
		collector_proc_maps(c, cp);
		int changed = !cp->objidx || len != cp->maps_len || off != cp->maps_off;
		err = put_objects(c, cp);
		if (!err && cp->nretry && (changed || c->final))
			err = retry_symbols(c, cp);
	}
	for (i = 0; i < c->nthreads && !err; i++) {
		struct cthread *ct = c->threads[i];
		if (!ct->proc)
			continue;
		for (k = ct->sym_next ? ct->sym_next : 1; k < ct->n && !err; k++) {
			err = put_symbol(c, ct->proc, ct->nodes[k].fn, 1);
			if (!err)
				err = put_symbol(c, ct->proc, ct->nodes[k].site, 0);
		}
		if (!err)
			ct->sym_next = ct->n;
		collector_yield(c);
	}
	/* The frames of memory stacks: functions, and return addresses (the
	 * call is the byte before). */
	for (k = c->stash_sym_next; k < c->stash.n && !err; k++) {
		const struct cygprof_stack_node *nd = &c->stash.v[k];
		if (nd->proc_idx >= c->nprocs || !nd->addr)
			continue;
		err = put_symbol(c, c->procs[nd->proc_idx],
				 nd->kind == CYGPROF_FRAME_RA ? nd->addr - 1 : nd->addr, 1);
	}
	if (!err)
		c->stash_sym_next = c->stash.n;
	return err;
}

static int put_meta_u64(struct collector *c, const char *key, uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
	return cygprof_capture_set_meta(c->cap, key, buf);
}

/* glibc's empty hooks: what a program built with -finstrument-functions
 * runs when no profiler is there (this process is not instrumented). */
extern void __cyg_profile_func_enter(void *fn, void *site);
extern void __cyg_profile_func_exit(void *fn, void *site);

/* The cost of one call of glibc's empty hooks (enter and exit, each an
 * indirect call as through the PLT), in ns: the least of 5 rounds of 20,000
 * pairs (about 0.5 ms in all, at the end of every recording).  The floor
 * that time of a program's own includes per call (timemodel.h adds it back
 * where the hooks' cost was taken out). */
static double floor_hook_ns(void)
{
	void (*volatile enter)(void *, void *) = __cyg_profile_func_enter;
	void (*volatile leave)(void *, void *) = __cyg_profile_func_exit;
	double best = -1;

	for (int r = 0; r < 5; r++) {
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int i = 0; i < 20000; i++) {
			enter((void *)floor_hook_ns, (void *)&best);
			leave((void *)floor_hook_ns, (void *)&best);
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) /
			    20000;
		if (best < 0 || ns < best)
			best = ns;
	}
	return best;
}

/* The calibration of the hooks (collector_overhead()) as the meta keys
 * overhead_* (docs/capture-format.md). */
static int put_overhead(struct collector *c, const struct collector_overhead *ov)
{
	const struct {
		const char *key;
		double v;
	} ns[] = {
		{"overhead_in_ns", ov->in_ns},
		{"overhead_out_ns", ov->out_ns},
		{"overhead_in_spread_ns", ov->in_sd_ns},
		{"overhead_out_spread_ns", ov->out_sd_ns},
	};
	char buf[96];
	int err = 0;

	for (size_t i = 0; !err && i < sizeof ns / sizeof ns[0]; i++) {
		snprintf(buf, sizeof buf, "%.3f", ns[i].v);
		err = cygprof_capture_set_meta(c->cap, ns[i].key, buf);
	}
	if (!err)
		err = put_meta_u64(c, "overhead_calls", ov->calls);
	if (!err)
		err = put_meta_u64(c, "overhead_rounds", ov->rounds);
	if (!err)
		err = put_meta_u64(c, "overhead_rounds_kept", ov->kept);
	if (!err)
		err = put_meta_u64(c, "overhead_tries", ov->tries);
	if (!err) {
		const char *m = (ov->mode & CYG_CALIB_TIMELINE)
					? ((ov->mode & CYG_CALIB_MEMORY) ? "timeline+memory" : "timeline")
					: ((ov->mode & CYG_CALIB_MEMORY) ? "memory" : "plain");
		err = cygprof_capture_set_meta(c->cap, "overhead_mode", m);
	}
	if (!err && (ov->mode & CYG_CALIB_TIMELINE))
		err = put_meta_u64(c, "overhead_ring_bytes", ov->ring_bytes);
	if (!err)
		err = put_meta_u64(c, "overhead_images", ov->images);
	/* the other images' figures, when there are others */
	if (!err && ov->images > 1) {
		snprintf(buf, sizeof buf, "%.3f..%.3f", ov->in_min, ov->in_max);
		err = cygprof_capture_set_meta(c->cap, "overhead_in_range_ns", buf);
		snprintf(buf, sizeof buf, "%.3f..%.3f", ov->out_min, ov->out_max);
		if (!err)
			err = cygprof_capture_set_meta(c->cap, "overhead_out_range_ns", buf);
	}
	return err;
}

static int put_clock_pair(struct collector *c, const char *key, const struct clock_pair *p)
{
	char buf[96];

	snprintf(buf, sizeof buf, "tick=%llu mono_ns=%llu real_ns=%llu",
		 (unsigned long long)p->tick, (unsigned long long)p->mono_ns,
		 (unsigned long long)p->real_ns);
	return cygprof_capture_set_meta(c->cap, key, buf);
}

/* What the recording is, known before it starts: the command, the mode and
 * the instruments.  Also stored as soon as the capture exists, so that a
 * capture cut off at any moment (a full disk, a killed collector) still
 * says it. */
int collector_put_meta_static(struct collector *c)
{
	const struct collector_opts *o = c->o;
	char buf[256];
	char *cmd = join_argv(o->argv);
	int err;

	if (!cmd)
		return -ENOMEM;
	err = cygprof_capture_set_meta(c->cap, "command", cmd);
	free(cmd);
	if (err)
		return err;
	snprintf(buf, sizeof buf, "profile%s%s", o->timeline ? "+timeline" : "",
		 o->memory ? "+memory" : "");
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "mode", buf);
	/* what was recorded: the given list, else from the options */
	if (o->instruments)
		snprintf(buf, sizeof buf, "%s", o->instruments);
	else
		snprintf(buf, sizeof buf, "calls%s%s%s%s%s", o->timeline ? ",timeline" : "",
			 o->memory ? ",memory" : "", o->counters_ns ? ",counters" : "",
			 o->memdump ? ",memdump" : "", c->sampling ? ",sampling" : "");
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "instruments", buf);
	return err;
}

/* What the runtime's CPU samples and switch tracking did, over the threads
 * (meta cpu_*): the method ("perf", "timer", both, or "off"), the period,
 * whether switches were tracked, the samples, those of threads with no
 * writer, and the period the samples really came at where the threads'
 * CPU time is known. */
static int put_cpu_meta(struct collector *c)
{
	uint64_t samples = 0, known_ns = 0, known_samples = 0, unattrib = 0;
	int perf = 0, timer = 0, sw = 0, err;

	if (!(c->flags & (CYG_F_CPUSAMPLE | CYG_F_SWITCHES)))
		return cygprof_capture_set_meta(c->cap, "cpu_sampler", "off");
	for (size_t i = 0; i < c->nthreads; i++) {
		const struct cthread *ct = c->threads[i];
		perf |= ct->cpu_method == CYGPROF_CPU_PERF;
		timer |= ct->cpu_method == CYGPROF_CPU_TIMER;
		sw |= ct->cpu_switches;
		samples += ct->cpu_samples;
		if (ct->cpu_ns && ct->cpu_samples) {
			known_ns += ct->cpu_ns;
			known_samples += ct->cpu_samples;
		}
	}
	for (size_t i = 0; i < c->nprocs; i++) {
		const struct cyg_proc *p = C_AT(c, c->procs[i]->off);
		uint64_t u = RD(p->smp_unattrib);
		/* no more than the run has periods, per process */
		if (c->cpu_period_ns && u <= tick_ns(c, c->end_ts) / c->cpu_period_ns * 2 + 1000)
			unattrib += u;
	}
	err = cygprof_capture_set_meta(c->cap, "cpu_sampler",
				       perf && timer ? "perf+timer" : perf ? "perf"
								 : timer ? "timer" : "off");
	if (!err && (c->flags & CYG_F_CPUSAMPLE))
		err = put_meta_u64(c, "cpu_period_ns", c->cpu_period_ns);
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "cpu_switches", sw ? "1" : "0");
	if (!err)
		err = put_meta_u64(c, "cpu_samples", samples);
	if (!err && unattrib)
		err = put_meta_u64(c, "cpu_unattributed", unattrib);
	if (!err && known_samples)
		err = put_meta_u64(c, "cpu_effective_period_ns", known_ns / known_samples);
	return err;
}

static int put_meta(struct collector *c, uint64_t lost)
{
	const struct collector_opts *o = c->o;
	struct utsname u;
	char buf[256];
	time_t now = time(NULL) - (time_t)(tick_ns(c, c->end_ts) / 1000000000ULL);
	struct tm tm;
	int err;

	err = collector_put_meta_static(c);
	gmtime_r(&now, &tm);
	strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "start_time", buf);
	if (!err)
		err = put_meta_u64(c, "duration_ns", tick_ns(c, c->end_ts));
	if (!err && c->cpu_ns)
		err = put_meta_u64(c, "cpu_ns", c->cpu_ns);
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "time", o->time_sampled ? "sampled" : "exact");
	if (!err && c->sampling)
		err = collector_sampling_meta(c);
	if (!err)
		err = put_cpu_meta(c);
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "clock",
					       (c->flags & CYG_F_TSC) ? "tsc" : "monotonic");
	/* the pairing of the tick with CLOCK_MONOTONIC (perf's -k) and
	 * CLOCK_REALTIME, at the origin and now, so any event of the capture
	 * can be placed on either clock */
	collector_clock_pair(c, &c->clk_end);
	if (!err)
		err = put_clock_pair(c, "clock_start", &c->clk_start);
	if (!err)
		err = put_clock_pair(c, "clock_end", &c->clk_end);
	if (!err && (c->flags & CYG_F_TSC) && c->clk_end.mono_ns > c->clk_start.mono_ns)
		err = put_meta_u64(c, "tsc_hz",
				   (uint64_t)((double)(c->clk_end.tick - c->clk_start.tick) * 1e9 /
					      (double)(c->clk_end.mono_ns - c->clk_start.mono_ns) + 0.5));
	/* the hooks' own cost, which the readers take out of the times */
	struct collector_overhead ov;
	if (!err && collector_overhead(c, &ov))
		err = put_overhead(c, &ov);
	/* what the program runs without a profiler, calibrated or not */
	if (!err) {
		snprintf(buf, sizeof buf, "%.3f", floor_hook_ns());
		err = cygprof_capture_set_meta(c->cap, "overhead_floor_ns", buf);
	}
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "filters", o->filters ? o->filters : "");
	if (!err)
		err = put_meta_u64(c, "lost_events", lost);
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "drop_mode", o->drop ? "drop" : "block");
	if (!err && gethostname(buf, sizeof buf) == 0) {
		buf[sizeof buf - 1] = 0;
		err = cygprof_capture_set_meta(c->cap, "hostname", buf);
	}
	if (!err && uname(&u) == 0) {
		err = cygprof_capture_set_meta(c->cap, "kernel", u.release);
		if (!err)
			err = cygprof_capture_set_meta(c->cap, "machine", u.machine);
	}
	uint64_t oom = RD(c->ctl->oom);
	if (!err && oom)
		err = put_meta_u64(c, "shm_full", oom);
	char *damaged = collector_damage_line(c);
	if (!err && damaged)
		err = cygprof_capture_set_meta(c->cap, "damaged", damaged);
	free(damaged);
	/* "complete" is not here: collector_finish_run() writes it with the
	 * seal, in the capture's last transaction */
	return err;
}

/* The program never loaded the runtime (not dynamically linked, or it
 * cleared LD_PRELOAD): it still gets its process record. */
static int put_main_fallback(struct collector *c)
{
	struct cygprof_proc cp;
	size_t i;
	int err;

	for (i = 0; i < c->nprocs; i++)
		if (c->procs[i]->pid == (uint32_t)c->main_pid)
			return 0;
	memset(&cp, 0, sizeof cp);
	cp.idx = (uint32_t)c->nprocs;
	cp.pid = (uint32_t)c->main_pid;
	cp.ppid = (uint32_t)getpid();
	cp.parent_idx = CYGPROF_NONE;
	cp.end_ns = tick_ns(c, c->end_ts);
	if (WIFEXITED(c->main_status)) {
		cp.end_kind = CYGPROF_END_EXIT;
		cp.end_code = WEXITSTATUS(c->main_status);
	} else if (WIFSIGNALED(c->main_status)) {
		cp.end_kind = CYGPROF_END_SIGNAL;
		cp.end_code = WTERMSIG(c->main_status);
	}
	cp.command = join_argv(c->o->argv);
	cp.exe = (char *)c->o->argv[0];
	err = cp.command ? cygprof_capture_put_proc(c->cap, &cp) : -ENOMEM;
	free(cp.command);
	return err;
}

int collector_put_start_meta(struct collector *c)
{
	/* duration 0: no checkpoint yet (a capture cut off before the first
	 * one shows its last checkpoint at 0, before any call, which is true;
	 * the time of this commit would claim the calls made meanwhile) */
	c->end_ts = c->tsc0;
	return put_meta(c, 0);
}

int collector_store_new_threads(struct collector *c)
{
	uint64_t lost = 0;
	size_t i;
	int err = 0, any = 0;

	for (i = 0; i < c->nthreads && !any; i++)
		any = !c->threads[i]->stored;
	for (i = 0; i < c->nprocs && !any; i++)
		any = !c->procs[i]->stored;
	if (!any)
		return 0;
	/* their times are bounded by now, not by the last checkpoint's */
	c->end_ts = collector_now(c);
	for (i = 0; i < c->nthreads && !err; i++)
		if (!c->threads[i]->stored)
			err = store_thread(c, c->threads[i], &lost);
	for (i = 0; i < c->nprocs && !err; i++)
		if (!c->procs[i]->stored)
			err = store_proc(c, c->procs[i]);
	if (!err)
		err = put_symbols(c);
	return err;
}

int collector_checkpoint(struct collector *c, int final)
{
	uint64_t lost = 0;
	size_t i;
	int err = 0;

	if (!final) {
		c->end_ts = collector_now(c);
		/* The threads registered up to the stamp: a thread that made
		 * calls before it is in the checkpoint (the last drain's scan
		 * may be a while ago on a busy machine). */
		collector_scan(c, 0);
	}
	/* Threads first: folding them may find processes. */
	for (i = 0; i < c->nthreads && !err; i++) {
		err = store_thread(c, c->threads[i], &lost);
		collector_yield(c);
	}
	for (i = 0; i < c->nprocs && !err; i++)
		err = store_proc(c, c->procs[i]);
	if (!err && final && c->main_pid > 0)
		err = put_main_fallback(c);
	if (!err)
		err = put_symbols(c);
	if (!err)
		err = put_meta(c, lost);
	return err;
}
