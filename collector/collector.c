/* SPDX-License-Identifier: MIT */
/* collector.c - the process that starts the program: shared mapping, spawn,
 * drain loop, and the mapping of raw call-tree nodes onto the capture's
 * (filtered) trees. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "collector-private.h"

extern char **environ;

/* ---- hash map ---------------------------------------------------------- */

static int hmap_grow(struct hmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64, i;
	uint64_t *k = calloc(cap, sizeof *k), *v = calloc(cap, sizeof *v);

	if (!k || !v) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = (m->keys[i] * 0x9E3779B97F4A7C15ULL) >> 7 & (cap - 1);
		while (k[j])
			j = (j + 1) & (cap - 1);
		k[j] = m->keys[i];
		v[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = k;
	m->vals = v;
	m->cap = cap;
	return 0;
}

int hmap_put(struct hmap *m, uint64_t key, uint64_t val)
{
	size_t j;

	if ((m->n + 1) * 4 >= m->cap * 3 && hmap_grow(m))
		return -ENOMEM;
	j = (key * 0x9E3779B97F4A7C15ULL) >> 7 & (m->cap - 1);
	while (m->keys[j] && m->keys[j] != key)
		j = (j + 1) & (m->cap - 1);
	if (!m->keys[j])
		m->n++;
	m->keys[j] = key;
	m->vals[j] = val;
	return 0;
}

int hmap_get(const struct hmap *m, uint64_t key, uint64_t *val)
{
	size_t j;

	if (!m->cap)
		return 0;
	j = (key * 0x9E3779B97F4A7C15ULL) >> 7 & (m->cap - 1);
	while (m->keys[j]) {
		if (m->keys[j] == key) {
			*val = m->vals[j];
			return 1;
		}
		j = (j + 1) & (m->cap - 1);
	}
	return 0;
}

void hmap_release(struct hmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}

/* ---- clocks ------------------------------------------------------------ */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int have_invariant_tsc(void)
{
#if defined(__x86_64__)
	char line[4096];
	int cst = 0, nst = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "flags", 5))
			continue;
		cst = strstr(line, " constant_tsc") != NULL;
		nst = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return cst && nst;
#else
	return 0;
#endif
}

static uint64_t now_ticks(const struct collector *c)
{
#if defined(__x86_64__) || defined(__i386__)
	if (c->flags & CYG_F_TSC)
		return __rdtsc();
#endif
	return mono_ns();
}

/* The capture's time origin, taken before the program starts. */
static void clock_origin(struct collector *c)
{
	c->mono0 = mono_ns();
	c->tsc0 = now_ticks(c);
}

/* Ticks to ns against CLOCK_MONOTONIC, from the origin to at least 10 ms
 * later (the program starts meanwhile; nothing is converted before). */
static void calibrate(struct collector *c)
{
	c->ns_per_tick = 1.0;
	if (!(c->flags & CYG_F_TSC))
		return;
	uint64_t left = c->mono0 + 10000000 - mono_ns();
	if ((int64_t)left > 0) {
		struct timespec ts = {0, (long)left};
		nanosleep(&ts, NULL);
	}
	uint64_t m1 = mono_ns(), t1 = now_ticks(c);
	c->ns_per_tick = (double)(m1 - c->mono0) / (double)(t1 - c->tsc0);
	c->ctl->tsc_per_sec = (uint64_t)(1e9 / c->ns_per_tick);
}

uint64_t collector_now(const struct collector *c)
{
	return now_ticks(c);
}

static void set_mult(struct collector *c)
{
	c->mult = (uint64_t)(c->ns_per_tick * 4294967296.0 + 0.5);
}

/* ---- names, for filters and symbols ------------------------------------- */

/* A stripped object: a separate debug file (by build-id, debuglink,
 * --debug-dir, debuginfod) names its static functions. */
static void adopt_debug(struct collector *c, struct cproc *cp, const char *file,
			struct sym_elf *e)
{
	if (e && !sym_elf_has_symtab(e) && c->dbg) {
		uint8_t bid[64];
		size_t blen = sym_elf_build_id(e, bid, sizeof bid);
		char *dfile = NULL;
		struct sym_elf *d = NULL;
		struct debuginfo *dbg = c->dbg, *own = NULL;
		if (blen > sizeof bid)
			blen = sizeof bid;
		if (cp && cp->ns && (own = debuginfo_new())) {
			/* a container's own debug directory first */
			char dir[64];
			snprintf(dir, sizeof dir, "/proc/%u/root/usr/lib/debug", cp->pid);
			debuginfo_add_dir(own, dir);
			for (size_t k = 0; k < c->o->n_debug_dirs; k++)
				debuginfo_add_dir(own, c->o->debug_dirs[k]);
			debuginfo_add_env(own);
			dbg = own;
		}
		if (!debuginfo_find(dbg, file, bid, blen, &dfile) && strcmp(dfile, file) &&
		    !sym_elf_open(dfile, &d) && sym_elf_has_symtab(d))
			sym_elf_adopt_symbols(e, d);
		sym_elf_close(d);
		debuginfo_free(own);
		free(dfile);
	}
}

/* The ELF object at path as process cp sees it (cached: opened once, its
 * symbols read into memory, so it serves after the process is gone).
 * live: the process runs; if its file is gone from path (deleted, or
 * replaced by something that is not a regular file), its mapping is opened
 * through /proc/PID/map_files (root only).  Failures while the process
 * lives are not cached: the end tries again. */
static struct sym_elf *elf_open(struct collector *c, struct cproc *cp,
				    const struct sym_map *m, int live, int *gone)
{
	char key[4096 + 64], file[4096 + 64];
	const char *path = m->path;
	size_t i;
	int err;

	snprintf(key, sizeof key, "%s%s%s", cp && cp->ns ? cp->ns : "", cp && cp->ns ? ":" : "",
		 path);
	struct elfcache *known = NULL;
	for (i = 0; i < c->nelfs; i++)
		if (!strcmp(c->elfs[i].path, key)) {
			known = &c->elfs[i];
			break;
		}
	/* A failure is tried again while the process lives (its mapping may
	 * still be opened); anything else is final. */
	if (known && (known->elf || !live)) {
		if (gone)
			*gone = m->deleted || known->err == -ENOENT || known->err == -ENOTSUP;
		return known->elf;
	}
	struct sym_elf *e = NULL;
	if (cp && cp->ns)
		snprintf(file, sizeof file, "/proc/%u/root%s", cp->pid, path);
	else
		snprintf(file, sizeof file, "%s", path);
	const char *opened = file;
	err = m->deleted ? -ENOENT : sym_elf_open(file, &e);
	if (err && cp && cp->ns && !live) {
		/* gone already: the path as we see it is the best guess */
		err = sym_elf_open(path, &e);
		opened = path;
	}
	if ((err == -ENOENT || err == -ENOTSUP) && live && cp) {
		/* The file was deleted or replaced while the process runs: its
		 * mapping still names the object (root may open it). */
		snprintf(file, sizeof file, "/proc/%u/map_files/%llx-%llx", cp->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		if (!sym_elf_open(file, &e)) {
			err = 0;
			opened = file;
		}
	}
	if (gone)
		*gone = m->deleted || err == -ENOENT || err == -ENOTSUP;
	if (err && live)
		return NULL;
	if (known) {
		known->elf = e;
		known->err = err;
		adopt_debug(c, cp, opened, e);
		return e;
	}
	struct elfcache *v = realloc(c->elfs, (c->nelfs + 1) * sizeof *v);
	if (!v) {
		sym_elf_close(e);
		return NULL;
	}
	c->elfs = v;
	v[c->nelfs].path = strdup(key);
	if (!v[c->nelfs].path) {
		sym_elf_close(e);
		return NULL;
	}
	v[c->nelfs].elf = e;
	v[c->nelfs].err = err;
	c->nelfs++;
	adopt_debug(c, cp, opened, e);
	return e;
}

struct sym_elf *collector_elf(struct collector *c, struct cproc *cp,
				  const struct sym_map *m, int *gone)
{
	return elf_open(c, cp, m, 0, gone);
}

static char *mnt_ns(pid_t pid)
{
	char link[64], buf[128];
	ssize_t n;

	snprintf(link, sizeof link, "/proc/%d/ns/mnt", (int)pid);
	n = readlink(link, buf, sizeof buf - 1);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return strdup(buf);
}

void collector_prime_procs(struct collector *c)
{
	size_t i;

	if (!c->own_ns)
		c->own_ns = mnt_ns(getpid());
	for (i = 0; i < c->nprocs; i++) {
		struct cproc *cp = c->procs[i];
		struct cyg_proc *p = C_AT(c, cp->off);
		if (cp->reaped || RD(p->state) != CYG_P_RUNNING)
			continue;
		collector_proc_maps(c, cp);
		if (cp->primed_len == cp->maps_len)
			continue;
		if (!cp->primed_len && cp->pid) {
			char *ns = mnt_ns((pid_t)cp->pid);
			if (ns && c->own_ns && strcmp(ns, c->own_ns))
				cp->ns = ns;
			else
				free(ns);
		}
		cp->primed_len = cp->maps_len;
		for (size_t k = 0; k < cp->maps.n; k++)
			if (cp->maps.v[k].exec)
				elf_open(c, cp, &cp->maps.v[k], 1, NULL);
		__atomic_store_n(&p->primed, 1, __ATOMIC_RELEASE);
	}
}

/* The raw (mangled) name of the function at runtime address addr. */
const char *collector_fn_name(struct collector *c, struct cproc *cp, uint64_t addr, uint64_t *start,
			      uint64_t *size, struct sym_map **mapp, struct sym_elf **elfp)
{
	size_t i;

	if (!cp)
		return NULL;
	for (i = 0; i < cp->maps.n; i++) {
		struct sym_map *m = &cp->maps.v[i];
		uint64_t bias, s, z;
		if (addr < m->start || addr >= m->end)
			continue;
		struct sym_elf *e = collector_elf(c, cp, m, NULL);
		if (mapp)
			*mapp = m;
		if (elfp)
			*elfp = e;
		if (!e || sym_elf_bias(e, m, &bias))
			return NULL;
		const char *name = sym_elf_lookup(e, addr - bias, &s, &z);
		if (name) {
			if (start)
				*start = s + bias;
			if (size)
				*size = z;
		}
		return name;
	}
	return NULL;
}

static int name_matches(const char **pats, size_t n, const char *raw)
{
	size_t i;
	char *dem;
	int hit = 0;

	if (!raw)
		return 0;
	dem = sym_demangle(raw);
	for (i = 0; i < n && !hit; i++) {
		if (!fnmatch(pats[i], raw, 0))
			hit = 1;
		else if (dem) {
			/* match "ns::f" against "ns::f(int)" too */
			char *paren = strchr(dem, '(');
			if (!fnmatch(pats[i], dem, 0))
				hit = 1;
			else if (paren) {
				*paren = 0;
				hit = !fnmatch(pats[i], dem, 0);
				*paren = '(';
			}
		}
	}
	free(dem);
	return hit;
}

/* ---- raw nodes onto the capture's tree --------------------------------- */

static uint32_t fnode_intern(struct cthread *ct, uint32_t parent, uint64_t fn, uint64_t site)
{
	uint64_t key = hash3(parent, fn, 0), v;

	/* Linear probing on the key space: keys are hashes; verify and step. */
	for (;;) {
		if (!hmap_get(&ct->bykey, key, &v))
			break;
		struct fnode *f = &ct->nodes[v];
		if (f->parent == parent && f->fn == fn)
			return (uint32_t)v;
		key = key * 31 + 7;
		if (!key)
			key = 1;
	}
	if (ct->n == ct->cap) {
		size_t cap = ct->cap ? ct->cap * 2 : 256;
		struct fnode *nv = realloc(ct->nodes, cap * sizeof *nv);
		if (!nv)
			return GID_DROP;
		ct->nodes = nv;
		ct->cap = cap;
	}
	if (hmap_put(&ct->bykey, key, ct->n))
		return GID_DROP;
	struct fnode *f = &ct->nodes[ct->n];
	memset(f, 0, sizeof *f);
	f->parent = parent;
	f->fn = fn;
	f->site = site;
	f->depth = parent == GID_DROP ? 0 : ct->nodes[parent].depth + 1;
	return (uint32_t)ct->n++;
}

/* The value kept per gid: bits 0-31 the capture-tree index of the node if
 * kept, else of the kept ancestor its children attach to; KEPT_BIT;
 * SCOPE_BIT (inside a -F function); BAD_BIT (rejected: the node or its path
 * to the root cannot be right). */
uint64_t cthread_root(struct collector *c, struct cthread *ct)
{
	uint64_t v;

	(void)c;
	if (hmap_get(&ct->bygid, ct->root, &v))
		return v;
	v = fnode_intern(ct, GID_DROP, 0, 0) | KEPT_BIT;
	hmap_put(&ct->bygid, ct->root, v);
	return v;
}

/* Decide one raw node (function fn, call site site) whose parent is decided
 * (value pv). */
uint64_t cthread_decide(struct collector *c, struct cthread *ct, uint64_t fn, uint64_t site,
			uint64_t pv)
{
	uint32_t attach = (uint32_t)pv;
	int in_scope = !!(pv & SCOPE_BIT), keep = 1;

	if (pv & BAD_BIT)
		return BAD_BIT;
	if (c->filtering) {
		const char *raw = NULL;
		if (c->o->n_only || c->o->n_except) {
			if (ct->proc)
				collector_proc_maps(c, ct->proc);
			raw = collector_fn_name(c, ct->proc, fn, NULL, NULL, NULL, NULL);
		}
		if (c->o->n_only && !in_scope && name_matches(c->o->only, c->o->n_only, raw))
			in_scope = 1;
		if (c->o->n_only && !in_scope)
			keep = 0;
		if (keep && c->o->n_except && name_matches(c->o->except, c->o->n_except, raw))
			keep = 0;
		if (keep && c->o->max_depth && ct->nodes[attach].depth + 1 > c->o->max_depth)
			keep = 0;
	}
	if (keep) {
		uint32_t idx = fnode_intern(ct, attach, fn, site);
		if (idx != GID_DROP)
			return idx | KEPT_BIT | (in_scope ? SCOPE_BIT : 0);
	}
	return attach | (in_scope ? SCOPE_BIT : 0);
}

/* Walk up from gid to a node already decided (or the root), then decide
 * down.  Parents are in the mapping before any child is published, and a
 * parent's gid is smaller than its child's: the walk ends, within
 * CYG_DEPTH_MAX steps or it is rejected.  Iterative (paths can be 2^24
 * deep). */
uint32_t cthread_resolve(struct collector *c, struct cthread *ct, uint32_t gid)
{
	size_t depth = 0;
	uint64_t v;
	uint32_t g = gid;
	int bad = 0;

	if (hmap_get(&ct->bygid, gid, &v))
		return decision_idx(v);
	for (;;) {
		if (hmap_get(&ct->bygid, g, &v))
			break;
		if (g == ct->root) {
			v = cthread_root(c, ct);
			break;
		}
		if (!gid_ok(c, ct, g) || depth > CYG_DEPTH_MAX) {
			bad = 1;
			break;
		}
		if (depth == c->walk_cap) {
			size_t cap = c->walk_cap ? c->walk_cap * 2 : 1024;
			uint32_t *nv = realloc(c->walk, cap * sizeof *nv);
			if (!nv)
				return GID_DROP;
			c->walk = nv;
			c->walk_cap = cap;
		}
		c->walk[depth++] = g;
		uint32_t parent = RD(shm_node(c, g)->parent);
		if (parent >= g) {
			bad = 1;
			break;
		}
		g = parent;
	}
	if (bad || (v & BAD_BIT)) {
		/* Remembered, so the same gids are rejected at once next time. */
		while (depth)
			hmap_put(&ct->bygid, c->walk[--depth], BAD_BIT);
		hmap_put(&ct->bygid, gid, BAD_BIT);
		return GID_BAD;
	}
	while (depth) {
		g = c->walk[--depth];
		struct cyg_node *n = shm_node(c, g);
		v = cthread_decide(c, ct, RD(n->fn), RD(n->site), v);
		hmap_put(&ct->bygid, g, v);
	}
	return decision_idx(v);
}

/* ---- draining the rings ------------------------------------------------ */

static int push_ev(struct cthread *ct, uint64_t ts_ns, uint32_t node, uint32_t kind)
{
	if (ct->nev == ct->capev) {
		size_t cap = ct->capev ? ct->capev * 2 : 4096;
		struct cygprof_event *v = realloc(ct->ev, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		ct->ev = v;
		ct->capev = cap;
	}
	/* Times never go back in the capture, whatever the ring said. */
	if (ts_ns < ct->last_ev_ns)
		ts_ns = ct->last_ev_ns;
	ct->last_ev_ns = ts_ns;
	ct->ev[ct->nev].ts_ns = ts_ns;
	ct->ev[ct->nev].node = node;
	ct->ev[ct->nev].kind = kind;
	ct->nev++;
	return 0;
}

/* One decoded event, after the node filters: apply the time filter (a call
 * shorter than min_ns is kept only if something inside it was kept). */
static void take_event(struct collector *c, struct cthread *ct, uint64_t ts, uint32_t node,
		       unsigned kind)
{
	uint64_t ns = tick_ns(c, ts);
	size_t i;

	if (!c->o->min_ns) {
		push_ev(ct, ns, node, kind);
		return;
	}
	if (kind == CYG_EV_ENTER) {
		if (ct->npend == ct->cappend) {
			size_t cap = ct->cappend ? ct->cappend * 2 : 64;
			struct pend *v = realloc(ct->pend, cap * sizeof *v);
			if (!v)
				return;
			ct->pend = v;
			ct->cappend = cap;
		}
		ct->pend[ct->npend].node = node;
		ct->pend[ct->npend].written = 0;
		ct->pend[ct->npend].ts = ns;
		ct->npend++;
		return;
	}
	if (!ct->npend) { /* an exit of a frame opened before (fork child) */
		push_ev(ct, ns, node, kind);
		return;
	}
	struct pend *top = &ct->pend[--ct->npend];
	if (!top->written && ns - top->ts < c->o->min_ns)
		return;
	for (i = 0; i <= ct->npend; i++) {
		if (!ct->pend[i].written) {
			push_ev(ct, ct->pend[i].ts, ct->pend[i].node, CYG_EV_ENTER);
			ct->pend[i].written = 1;
		}
	}
	push_ev(ct, ns, node, kind);
}

/* Drain one thread's ring; returns the number of words taken.  head comes
 * from the program: more unread words than the ring holds, or a head behind
 * our tail, is damage, and the ring is given up. */
static uint64_t drain_thread(struct collector *c, struct cthread *ct)
{
	struct cyg_thread *t = C_AT(c, ct->off);
	uint64_t off = ct->ring_off, head, tail = ct->tail, mask = c->ring_words - 1;

	if (!off || ct->ring_done)
		return 0;
	uint32_t state = ACQ(t->state);
	const uint64_t *ring = C_AT(c, off);
	uint64_t drain_ts = collector_now(c);
	head = ACQ(t->head);
	if (head - tail > c->ring_words) {
		c->dmg.rings++;
		ct->ring_done = 1;
		return 0;
	}
	if (RD(t->ring_off) != off) {
		/* its ring moved: nothing the runtime does (we keep ours) */
		c->dmg.rings++;
		ct->ring_done = 1;
		return 0;
	}
	/* Leave the cache line the thread is still filling alone (reading it
	 * would take the line from under the writer), unless the thread has
	 * stopped writing or this is the last drain. */
	int cut = 0;
	if (head != ct->last_head && !c->final && state == CYG_T_ACTIVE &&
	    (head & ~7ULL) > tail) {
		ct->last_head = head;
		cut = (head & 7) != 0;
		head &= ~7ULL;
	} else {
		ct->last_head = head;
	}
	uint64_t taken = head - tail;
	if (ct->last_head == tail) /* nothing new: whatever comes next is later */
		ct->idle_lb = drain_ts > ct->cur_ts ? drain_ts : ct->cur_ts;
	for (; tail != head; tail++) {
		uint64_t w = RD(ring[tail & mask]);
		unsigned kind = cyg_ev_kind(w);
		if (kind == CYG_EV_EXT) {
			if (cyg_x_sub(w) == CYG_X_SYNC) {
				uint64_t ts = cyg_ev_sync_ts(w);
				if (ts >= ct->cur_ts && ts <= drain_ts)
					ct->cur_ts = ts;
				else
					c->dmg.events++;
				continue;
			}
			/* a record of several words: only once all of it is here */
			uint64_t len = collector_mem_len(w);
			if (len > c->ring_words || cyg_x_sub(w) > CYG_X_STACK) {
				c->dmg.events++;
				continue;
			}
			if (len > head - tail) {
				if (cut)
					break; /* the rest is past the line left alone */
				/* A record is published whole: this one cannot be. */
				c->dmg.events++;
				continue;
			}
			collector_mem_record(c, ct, ring, mask, tail, w);
			tail += len - 1;
			continue;
		}
		restore_ts(ct, cyg_ev_delta(w));
		uint32_t gid = cyg_ev_gid(w), idx;
		if (ct->cache_gid[gid & 255] == gid) {
			idx = ct->cache_idx[gid & 255];
		} else {
			idx = cthread_resolve(c, ct, gid);
			ct->cache_gid[gid & 255] = gid;
			ct->cache_idx[gid & 255] = idx;
		}
		if (idx == GID_BAD)
			c->dmg.events++;
		else if (idx != GID_DROP)
			take_event(c, ct, ct->cur_ts, idx, kind);
	}
	ct->tail = tail;
	__atomic_store_n(&t->tail, tail, __ATOMIC_RELEASE);
	collector_mem_flush(c, ct);
	if (ct->nev) {
		int err = cygprof_capture_append_events(c->cap, ct->idx, ct->ev, ct->nev);
		if (err && !c->err)
			c->err = err;
		ct->events += ct->nev;
		ct->nev = 0;
	}
	if (state == CYG_T_ENDED && tail == ACQ(t->head) && tail == ct->last_head) {
		/* Drained after the thread ended: its ring goes back to the
		 * pool, without the program's lock (see cyg-shm.h). */
		uint64_t ph = c->pool_head, pt = ACQ(c->ctl->pool_tail);
		ct->ring_done = 1;
		if (pt <= ph && ph - pt < CYG_RING_POOL) {
			c->ctl->ring_pool[ph % CYG_RING_POOL] = off;
			c->pool_head = ph + 1;
			__atomic_store_n(&c->ctl->pool_head, ph + 1, __ATOMIC_RELEASE);
		}
	}
	return taken;
}

/* Drain every ring; returns the largest number of words one ring had. */
static uint64_t drain_all(struct collector *c)
{
	uint64_t most = 0;
	size_t i;

	c->last_drain = mono_ns();
	collector_scan(c, c->final);
	for (i = 0; i < c->nthreads; i++) {
		uint64_t n = drain_thread(c, c->threads[i]);
		if (n > most)
			most = n;
	}
	return most;
}

void collector_yield(struct collector *c)
{
	if (!c->in_checkpoint || c->final || mono_ns() - c->last_drain < 2000000)
		return;
	c->in_checkpoint = 0; /* not again from inside the drain */
	drain_all(c);
	c->in_checkpoint = 1;
}

/* ---- spawning ---------------------------------------------------------- */

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

static char *preload_value(const char *runtime)
{
	const char *old = getenv("LD_PRELOAD");
	size_t n = strlen(runtime) + (old ? strlen(old) : 0) + 2;
	char *v = malloc(n);

	if (v)
		snprintf(v, n, "%s%s%s", runtime, old && *old ? ":" : "", old && *old ? old : "");
	return v;
}

/* The open file descriptors, sorted. */
static int list_fds(int **out, size_t *n)
{
	DIR *d = opendir("/proc/self/fd");
	int *v = NULL;
	size_t k = 0, cap = 0;

	*out = NULL;
	*n = 0;
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] < '0' || e->d_name[0] > '9')
				continue;
			int fd = atoi(e->d_name);
			if (fd == dirfd(d))
				continue;
			if (k == cap) {
				cap = cap ? cap * 2 : 64;
				int *nv = realloc(v, cap * sizeof *nv);
				if (!nv) {
					free(v);
					closedir(d);
					return -ENOMEM;
				}
				v = nv;
			}
			v[k++] = fd;
		}
		closedir(d);
	} else {
		/* no /proc: ask every descriptor up to the limit */
		long max = sysconf(_SC_OPEN_MAX);
		if (max < 0 || max > 65536)
			max = 65536;
		for (int fd = 0; fd < max; fd++) {
			if (fcntl(fd, F_GETFD) < 0)
				continue;
			if (k == cap) {
				cap = cap ? cap * 2 : 64;
				int *nv = realloc(v, cap * sizeof *nv);
				if (!nv) {
					free(v);
					return -ENOMEM;
				}
				v = nv;
			}
			v[k++] = fd;
		}
	}
	*out = v;
	*n = k;
	return 0;
}

static int fd_in(const int *v, size_t n, int fd)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == fd)
			return 1;
	return 0;
}

/* Nothing the collector opened itself (the capture, its lock file, what a
 * library opened) reaches the program: only the descriptors the caller of
 * cygprof left open, and the memfd. */
static void cloexec_own_fds(const int *caller, size_t ncaller, int memfd)
{
	int *now;
	size_t n, i;

	if (!caller || list_fds(&now, &n))
		return; /* what the caller gave is unknown: leave everything */
	for (i = 0; i < n; i++) {
		int fd = now[i], fl;
		if (fd <= 2 || fd == memfd || fd_in(caller, ncaller, fd))
			continue;
		fl = fcntl(fd, F_GETFD);
		if (fl >= 0 && !(fl & FD_CLOEXEC))
			fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
	}
	free(now);
}

static pid_t spawn(struct collector *c, int memfd, const int *caller, size_t ncaller,
		   int *exec_errno)
{
	int pfd[2];
	char fdbuf[16];
	char *pre = preload_value(c->o->runtime);
	pid_t pid;
	int e = 0;

	if (!pre || pipe2(pfd, O_CLOEXEC) < 0) {
		free(pre);
		return -1;
	}
	cloexec_own_fds(caller, ncaller, memfd);
	snprintf(fdbuf, sizeof fdbuf, "%d", memfd);
	fflush(NULL);
	/* SIGINT/SIGTERM stay blocked until child_pid is known, so none that
	 * arrives meanwhile is lost: it is forwarded once unblocked. */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		setenv("LD_PRELOAD", pre, 1);
		setenv(CYG_SHM_FD_ENV, fdbuf, 1);
		execvp(c->o->argv[0], c->o->argv);
		e = errno;
		(void)!write(pfd[1], &e, sizeof e);
		_exit(127);
	}
	free(pre);
	close(pfd[1]);
	if (pid > 0)
		child_pid = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		close(pfd[0]);
		return -1;
	}
	ssize_t r;
	do
		r = read(pfd[0], &e, sizeof e);
	while (r < 0 && errno == EINTR);
	if (r == (ssize_t)sizeof e)
		*exec_errno = e;
	close(pfd[0]);
	return pid;
}

/* ---- the whole recording ----------------------------------------------- */

static int disk_full(const char *path)
{
	char dir[4096];
	struct statvfs sv;
	char *slash;

	snprintf(dir, sizeof dir, "%s", path);
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = 0;
	else
		snprintf(dir, sizeof dir, ".");
	return statvfs(dir, &sv) == 0 && sv.f_bavail < 16;
}

#define SHM_FLOOR (16ULL << 20)

/* The finite address-space limit (RLIMIT_AS) in bytes, or 0. */
static uint64_t as_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_AS, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	return (uint64_t)rl.rlim_cur;
}

/* The size of the shared mapping: --shm-size, else 16 GiB (sparse: only
 * what is used takes memory), but under a finite address-space limit
 * (ulimit -v, inherited by the program) an eighth of it, so that the
 * program keeps the rest for its own threads and heap. */
static int shm_size(const struct cygprof_record_opts *o, uint64_t *size, char *err, size_t errlen)
{
	uint64_t lim = as_limit(), s;

	if (o->shm_bytes) {
		*size = o->shm_bytes;
		return 0;
	}
	*size = CYG_SHM_DEFAULT_SIZE;
	if (!lim)
		return 0;
	s = lim / 8 & ~((1ULL << 20) - 1);
	if (s < SHM_FLOOR) {
		snprintf(err, errlen,
			 "the address-space limit (ulimit -v) of %llu MB is too small for cygprof's "
			 "shared memory: raise it to at least %llu MB, or set --shm-size",
			 (unsigned long long)(lim >> 20), (unsigned long long)(SHM_FLOOR * 8 >> 20));
		return -ENOMEM;
	}
	if (s < *size)
		*size = s;
	return 0;
}

static int setup_mapping(struct collector *c, uint64_t size, int *memfd)
{
	const struct cygprof_record_opts *o = c->o;
	uint32_t flags = (o->timeline ? CYG_F_TIMELINE : 0) | (o->drop ? CYG_F_DROP : 0) |
			 (o->memory ? CYG_F_MEMORY : 0) | (have_invariant_tsc() ? CYG_F_TSC : 0);
	int err;

	c->size = size;
	err = cyg_shm_create(c->size, flags, o->ring_bytes ? o->ring_bytes : (4ULL << 20),
			     o->record_depth,
			     memfd, &c->ctl);
	if (err)
		return err;
	c->base = (char *)c->ctl;
	/* Read before the program exists: from here on, only our copies. */
	c->ring_words = c->ctl->ring_words;
	c->flags = c->ctl->flags;
	return 0;
}

static void free_collector(struct collector *c)
{
	size_t i;

	for (i = 0; i < c->nthreads; i++) {
		struct cthread *ct = c->threads[i];
		hmap_release(&ct->bykey);
		hmap_release(&ct->bygid);
		free(ct->nodes);
		free(ct->ev);
		free(ct->pend);
		free(ct->mev);
		free(ct->sc);
		hmap_release(&ct->shadow_ids);
		hmap_release(&ct->prefix_ids);
		free(ct);
	}
	free(c->threads);
	hmap_release(&c->thread_at);
	for (i = 0; i < c->nprocs; i++) {
		struct cproc *cp = c->procs[i];
		sym_maps_release(&cp->maps);
		free(cp->ns);
		hmap_release(&cp->seen);
		free(cp->retry);
		free(cp->objidx);
		free(cp);
	}
	free(c->procs);
	hmap_release(&c->proc_at);
	for (i = 0; i < c->nelfs; i++) {
		sym_elf_close(c->elfs[i].elf);
		free(c->elfs[i].path);
	}
	free(c->elfs);
	for (i = 0; i < c->nobjs; i++)
		free(c->objs[i].path);
	free(c->objs);
	free(c->walk);
	free(c->mwalk);
	for (i = 0; i < 3; i++)
		free(c->scratch[i]);
	free(c->own_ns);
	collector_mem_release(c);
	debuginfo_free(c->dbg);
	if (c->base && c->base != MAP_FAILED)
		munmap(c->base, c->size);
}

/* How often the profile is stored while the program runs (ms; 0: only at
 * the end).  CYGPROF_CHECKPOINT_MS, default 1000. */
static uint64_t checkpoint_interval_ns(void)
{
	const char *s = getenv("CYGPROF_CHECKPOINT_MS");
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return 1000000000ULL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > 86400000ULL)
		return 1000000000ULL;
	return v * 1000000ULL;
}

int cygprof_record(const struct cygprof_record_opts *o, struct cygprof_record_result *res,
		   char *err, size_t errlen)
{
	struct collector c;
	struct sigaction sa, old_int, old_term;
	int memfd = -1, rc, status = 0, exec_errno = 0, *caller_fds = NULL;
	size_t ncaller = 0;
	pid_t pid;
	uint64_t last_commit, last_ckpt, gap, interval = checkpoint_interval_ns(), size;

	memset(&c, 0, sizeof c);
	memset(res, 0, sizeof *res);
	c.o = o;
	/* What the caller left open: the program inherits exactly that. */
	list_fds(&caller_fds, &ncaller);
	rc = shm_size(o, &size, err, errlen);
	if (rc) {
		free(caller_fds);
		return rc;
	}
	c.dbg = debuginfo_new();
	for (size_t i = 0; c.dbg && i < o->n_debug_dirs; i++)
		debuginfo_add_dir(c.dbg, o->debug_dirs[i]);
	if (c.dbg)
		debuginfo_add_env(c.dbg);
	c.filtering = o->n_only || o->n_except || o->max_depth;

	rc = cygprof_capture_create(o->output, &c.cap);
	if (rc) {
		snprintf(err, errlen, "cannot create capture '%s': %s", o->output,
			 cygprof_strerror(rc));
		debuginfo_free(c.dbg);
		free(caller_fds);
		return rc;
	}
	rc = setup_mapping(&c, size, &memfd);
	if (rc) {
		uint64_t lim = as_limit();
		if (lim)
			snprintf(err, errlen,
				 "cannot set up %llu MB of shared memory within the address-space "
				 "limit (ulimit -v) of %llu MB: %s (raise the limit or lower "
				 "--shm-size)",
				 (unsigned long long)(size >> 20), (unsigned long long)(lim >> 20),
				 strerror(-rc));
		else
			snprintf(err, errlen, "cannot set up shared memory: %s", strerror(-rc));
		goto fail;
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = forward_signal;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);

	clock_origin(&c);
	pid = spawn(&c, memfd, caller_fds, ncaller, &exec_errno);
	if (pid < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot start '%s': %s", o->argv[0], strerror(errno));
		goto fail;
	}
	child_pid = pid;
	c.main_pid = pid;
	close(memfd);
	memfd = -1;
	/* Calibrate while the program starts; nothing is converted before. */
	calibrate(&c);
	set_mult(&c);
	if (exec_errno) {
		waitpid(pid, &status, 0);
		res->exec_errno = exec_errno;
		snprintf(err, errlen, "cannot run '%s': %s", o->argv[0], strerror(exec_errno));
		rc = -exec_errno;
		goto fail;
	}
	/* the program runs: from now on the capture is visible at its name
	 * (a collector killed later leaves what it committed there); a
	 * failure shows again at close, which publishes too */
	(void)cygprof_capture_publish(c.cap);

	cygprof_capture_begin(c.cap);
	last_commit = last_ckpt = mono_ns();
	gap = interval;
	for (;;) {
		pid_t r;
		int st;
		int any = 0;

		int werr;
		while ((r = waitpid(-1, &st, WNOHANG)) > 0) {
			if (!WIFEXITED(st) && !WIFSIGNALED(st))
				continue;
			collector_note_end(&c, r, st);
			if (r == pid)
				status = st;
			any = 1;
		}
		werr = errno;
		__atomic_store_n(&c.ctl->heartbeat, ++c.heartbeat, __ATOMIC_RELAXED);
		uint64_t most = drain_all(&c);
		collector_prime_procs(&c);
		if (r < 0 && werr == ECHILD)
			break;
		uint64_t now = mono_ns();
		if (interval && now - last_ckpt >= gap) {
			uint64_t cpu0 = cpu_ns();
			/* The profile so far, so that a killed collector leaves a
			 * usable capture; at most a tenth of the collector's CPU
			 * time goes there. */
			c.in_checkpoint = 1;
			int e = collector_checkpoint(&c, 0);
			c.in_checkpoint = 0;
			if (!e)
				e = cygprof_capture_commit(c.cap);
			else
				cygprof_capture_commit(c.cap);
			if (e && !c.err)
				c.err = e;
			cygprof_capture_begin(c.cap);
			last_ckpt = last_commit = mono_ns();
			c.ckpt_ns = cpu_ns() - cpu0;
			gap = c.ckpt_ns * 10 > interval ? c.ckpt_ns * 10 : interval;
		} else if (now - last_commit > 200000000ULL) {
			int e = cygprof_capture_commit(c.cap);
			if (e && !c.err)
				c.err = e; /* a write that failed is lost: say so at the end */
			cygprof_capture_begin(c.cap);
			last_commit = mono_ns();
		}
		/* Poll: at once while rings fill fast, briefly while events
		 * trickle in, rarely when there is only the end to wait for. */
		if (!any && most < c.ring_words / 8) {
			int rings = o->timeline || o->memory;
			struct timespec ts = {0, !rings ? 10000000 : most ? 200000 : 1000000};
			nanosleep(&ts, NULL);
		} else if (!any) {
			/* rings fill fast: come back soon, but not at once, so the
			 * writers are not disturbed for every few events */
			struct timespec ts = {0, 50000};
			nanosleep(&ts, NULL);
		}
	}
	child_pid = 0;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	c.end_ts = now_ticks(&c);
	c.final = 1;
	drain_all(&c);
	c.main_status = status;

	rc = collector_checkpoint(&c, 1);
	{
		int e = cygprof_capture_commit(c.cap);
		if (!rc)
			rc = e;
	}
	if (!rc && c.err)
		rc = c.err;
	res->status = status;
	res->procs = (uint32_t)c.nprocs;
	res->threads = (uint32_t)c.nthreads;
	for (size_t i = 0; i < c.nthreads; i++) {
		struct cthread *ct = c.threads[i];
		res->events += ct->events;
		res->lost += ct->lost;
		res->waits += ct->waits;
		res->calls += ct->calls;
		res->mem_events += ct->mem_events;
	}
	{
		char *line = collector_damage_line(&c);
		if (line)
			snprintf(res->damaged, sizeof res->damaged, "%s", line);
		free(line);
	}
	{
		int e = cygprof_capture_close(c.cap);
		c.cap = NULL;
		if (!rc)
			rc = e;
	}
	if (rc && rc != CYGPROF_E_FULL && disk_full(o->output))
		rc = CYGPROF_E_FULL; /* LMDB may report a failed write as EIO */
	if (rc)
		snprintf(err, errlen, "writing capture '%s': %s", o->output, cygprof_strerror(rc));
	else {
		struct stat stt;
		if (!stat(o->output, &stt))
			res->capture_bytes = (uint64_t)stt.st_size;
	}
	free_collector(&c);
	free(caller_fds);
	return rc;
fail:
	if (memfd >= 0)
		close(memfd);
	/* removes the new file; what was at the output's name stays */
	cygprof_capture_discard(c.cap);
	free_collector(&c);
	free(caller_fds);
	return rc ? rc : -EIO;
}
