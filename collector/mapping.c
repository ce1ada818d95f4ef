/* SPDX-License-Identifier: MIT */
/* mapping.c - what the runtime registered in the shared mapping, read as
 * untrusted input: the thread and process lists, maps snapshots, and the
 * ends of processes (kept in the collector's own table, never written into
 * the mapping), plus the account of what was rejected. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <stddef.h>

#include "collector-private.h"

void collector_damage_add(struct damage *to, const struct damage *d)
{
	to->events += d->events;
	to->rings += d->rings;
	to->threads += d->threads;
	to->procs += d->procs;
	to->nodes += d->nodes;
	to->frames += d->frames;
	to->sites += d->sites;
	to->texts += d->texts;
	to->counts += d->counts;
}

char *collector_damage_line(struct collector *c)
{
	struct damage d = c->dmg;
	size_t i;

	for (i = 0; i < c->nthreads; i++) {
		collector_damage_add(&d, &c->threads[i]->dmg);
		collector_damage_add(&d, &c->threads[i]->rdmg);
	}
	for (i = 0; i < c->nprocs; i++)
		collector_damage_add(&d, &c->procs[i]->dmg);
	const struct {
		uint64_t n;
		const char *one, *many;
	} parts[] = {
		{d.events, "event", "events"},
		{d.rings, "ring", "rings"},
		{d.threads, "thread record", "thread records"},
		{d.procs, "process record", "process records"},
		{d.nodes, "call-tree node", "call-tree nodes"},
		{d.frames, "open frame", "open frames"},
		{d.sites, "call-site entry", "call-site entries"},
		{d.texts, "text (maps, command line or name)", "texts (maps, command lines, names)"},
		{d.counts, "count", "counts"},
	};
	size_t n = sizeof parts / sizeof parts[0], used = 0, k = 0, len;
	char buf[512];
	/* what the runtime found written over in the program: writers it
	 * dropped (threads recorded no further), lists it cut short */
	uint64_t rt = RD(c->ctl->rt_dropped);
	if (rt > (uint64_t)(c->nthreads + c->nprocs) + 1024) {
		d.counts++; /* the count itself was written over */
		rt = 0;
	}

	for (i = 0; i < n; i++)
		used += parts[i].n != 0;
	if (!used && !rt)
		return NULL;
	len = (size_t)snprintf(buf, sizeof buf, "the program wrote into cygprof's shared memory: ");
	for (i = 0; i < n && len < sizeof buf; i++) {
		if (!parts[i].n)
			continue;
		k++;
		len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%llu %s",
					k == 1 ? "" : k == used ? " and " : ", ",
					(unsigned long long)parts[i].n,
					parts[i].n == 1 ? parts[i].one : parts[i].many);
	}
	if (used && len < sizeof buf)
		len += (size_t)snprintf(buf + len, sizeof buf - len, " rejected");
	if (rt && len < sizeof buf)
		snprintf(buf + len, sizeof buf - len, "%s%llu %s the runtime dropped", used ? "; " : "",
			 (unsigned long long)rt, rt == 1 ? "writer or list" : "writers or lists");
	return strdup(buf);
}

/* ---- processes ---------------------------------------------------------- */

/* A thread takes at least the first 16 KiB chunk of nodes (its root's),
 * a process at least its record and 64 KiB for its command line (but the
 * last ones before the mapping filled up): more records than fit are made
 * up. */
#define THREAD_MIN_BYTES CYG_CHUNK_MIN
#define PROC_MIN_BYTES CYG_CMD_MAX

/* Register the new record e (from calloc) found at shared offset off as the
 * last of the array *v of *n records, found again through at: 0, or -ENOMEM
 * with e freed and nothing registered. */
static int reg_push(void ***v, size_t *n, struct hmap *at, uint64_t off, void *e)
{
	void **nv = realloc(*v, (*n + 1) * sizeof *nv);

	if (nv)
		*v = nv;
	if (!nv || hmap_put(at, off, *n + 1)) {
		free(e);
		return -ENOMEM;
	}
	nv[(*n)++] = e;
	return 0;
}

static struct cproc *proc_add(struct collector *c, uint64_t off)
{
	struct cproc *cp;

	if (c->nprocs >= c->size / PROC_MIN_BYTES + 16) {
		c->dmg.procs++;
		hmap_put(&c->proc_at, off, 0);
		return NULL;
	}
	cp = calloc(1, sizeof *cp);
	if (!cp)
		return NULL;
	cp->off = off;
	cp->idx = (uint32_t)c->nprocs;
	cp->pid = RD(((struct cyg_proc *)C_AT(c, off))->pid);
	return reg_push((void ***)&c->procs, &c->nprocs, &c->proc_at, off, cp) ? NULL : cp;
}

/* One of the mapping's lists (newest first), as the walk needs it. */
struct list_walk {
	uint64_t head;        /* its head now */
	uint64_t *last_head;  /* its head at the last walk */
	size_t rec_size;      /* a record */
	size_t next_at;       /* offset of the record's next link */
	struct hmap *known;   /* records already added */
	uint64_t *damage;     /* where a broken link is counted */
	void (*add)(struct collector *c, uint64_t off);
};

/* Walk a list from its head: new records are added oldest first, so
 * capture indices follow registration.  Stops at the first record already
 * known unless full; bounded by the records seen in this walk (a cycle is
 * damage).  A broken link is counted once, by the full walk at the end. */
static void scan_list(struct collector *c, const struct list_walk *w, int full)
{
	uint64_t off, v, *fresh = NULL;
	struct hmap walked = {0};
	size_t nf = 0, capf = 0;

	if (!full && w->head == *w->last_head)
		return;
	*w->last_head = w->head;
	for (off = w->head; off;) {
		if (hmap_get(&walked, off, &v)) {
			*w->damage += full; /* a cycle */
			break;
		}
		if (!shm_ok(c, off, w->rec_size)) {
			*w->damage += full;
			break;
		}
		if (hmap_put(&walked, off, 1))
			break;
		if (hmap_get(w->known, off, &v)) {
			if (!full)
				break;
		} else {
			if (nf == capf) {
				size_t cap = capf ? capf * 2 : 16;
				uint64_t *nv = realloc(fresh, cap * sizeof *nv);
				if (!nv)
					break;
				fresh = nv;
				capf = cap;
			}
			fresh[nf++] = off;
		}
		off = RD(*(uint64_t *)C_AT(c, off + w->next_at));
	}
	while (nf)
		w->add(c, fresh[--nf]);
	free(fresh);
	hmap_release(&walked);
}

static void proc_added(struct collector *c, uint64_t off)
{
	proc_add(c, off);
}

static void scan_procs(struct collector *c, int full)
{
	const struct list_walk w = {
		ACQ(c->ctl->procs_off), &c->procs_head, sizeof(struct cyg_proc),
		offsetof(struct cyg_proc, next), &c->proc_at, &c->dmg.procs, proc_added,
	};
	scan_list(c, &w, full);
}

struct cproc *collector_proc(struct collector *c, uint64_t off)
{
	uint64_t v;

	if (!off)
		return NULL;
	if (hmap_get(&c->proc_at, off, &v))
		return v ? c->procs[v - 1] : NULL;
	if (!shm_ok(c, off, sizeof(struct cyg_proc)))
		return NULL;
	/* Not seen in the list yet: look there first, so the order of the
	 * capture's processes follows their registration. */
	scan_procs(c, 0);
	if (hmap_get(&c->proc_at, off, &v))
		return v ? c->procs[v - 1] : NULL;
	return proc_add(c, off);
}

void collector_proc_maps(struct collector *c, struct cproc *cp)
{
	struct cyg_proc *p = C_AT(c, cp->off);
	uint64_t len = ACQ(p->maps_len), off = RD(p->maps_off);
	struct procmaps maps;
	char *text;

	if (len == cp->maps_len && off == cp->maps_off)
		return;
	cp->maps_len = len;
	cp->maps_off = off;
	if (!len)
		return;
	if (len > COLLECTOR_MAPS_MAX || !shm_ok(c, off, len)) {
		c->dmg.texts++; /* the snapshot before it stays */
		return;
	}
	/* A copy: the program may change the text while it is parsed. */
	text = malloc(len);
	if (!text)
		return;
	memcpy(text, C_AT(c, off), len);
	if (!procmaps_parse(text, len, &maps)) {
		procmaps_release(&cp->maps);
		cp->maps = maps;
	}
	free(text);
}

/* ---- threads ------------------------------------------------------------ */

static struct cthread *thread_add(struct collector *c, uint64_t off)
{
	struct cyg_thread *t = C_AT(c, off);
	uint32_t root = RD(t->root);
	uint64_t ring = RD(t->ring_off), proc_off = RD(t->proc_off), now = collector_now(c);
	struct cthread *ct;

	if (!shm_ok(c, (uint64_t)root * CYG_NODE_SIZE, CYG_NODE_SLOT) ||
	    c->nthreads >= c->size / THREAD_MIN_BYTES) {
		c->dmg.threads++;
		hmap_put(&c->thread_at, off, 0);
		return NULL;
	}
	ct = calloc(1, sizeof *ct);
	if (!ct)
		return NULL;
	ct->off = off;
	ct->idx = (uint32_t)c->nthreads;
	ct->pid = RD(t->pid);
	ct->tid = RD(t->tid);
	ct->flags = RD(t->flags);
	ct->root = root;
	if (ring && !shm_ok(c, ring, c->ring_words * 8)) {
		c->dmg.rings++;
		ring = 0;
	}
	ct->ring_off = ring;
	ct->tail = ring ? RD(t->tail) : 0;
	ct->start_ts = clamp_ts(RD(t->start_ts), c->tsc0, now);
	ct->cur_ts = ct->start_ts;
	if (proc_off) {
		ct->proc = collector_proc(c, proc_off);
		if (!ct->proc)
			c->dmg.threads++; /* the link to its process */
	}
	for (size_t i = 0; i < 256; i++)
		ct->cache_gid[i] = UINT32_MAX;
	return reg_push((void ***)&c->threads, &c->nthreads, &c->thread_at, off, ct) ? NULL : ct;
}

static void thread_added(struct collector *c, uint64_t off)
{
	thread_add(c, off);
}

static void scan_threads(struct collector *c, int full)
{
	const struct list_walk w = {
		ACQ(c->ctl->threads_off), &c->threads_head, sizeof(struct cyg_thread),
		offsetof(struct cyg_thread, next), &c->thread_at, &c->dmg.threads, thread_added,
	};
	scan_list(c, &w, full);
}

void collector_scan(struct collector *c, int full)
{
	scan_procs(c, full);
	scan_threads(c, full);
}

/* ---- process ends ------------------------------------------------------- */

void collector_note_end(struct collector *c, pid_t pid, int status)
{
	uint64_t now = collector_now(c);
	size_t i;

	if (pid == c->main_pid) {
		c->main_status = status;
		c->main_reaped = 1;
	}
	collector_scan(c, 0);
	/* The newest image of that pid that did not exec another one. */
	for (i = c->nprocs; i-- > 0;) {
		struct cproc *cp = c->procs[i];
		if (cp->pid != (uint32_t)pid || cp->reaped)
			continue;
		if (RD(((struct cyg_proc *)C_AT(c, cp->off))->state) == CYG_P_EXEC)
			continue;
		cp->reaped = 1;
		cp->status = status;
		cp->reap_ts = now;
		break;
	}
}
