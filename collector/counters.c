/* SPDX-License-Identifier: MIT */
/* counters.c - counters over time (record --counters, --memdump): the
 * system's /proc/meminfo, each recorded process's /proc/PID/statm and CPU
 * time while it lives, and the memdump API's tables in the mapping.
 *
 * Sampled by the collector in its poll loop, so the cost is the collector's,
 * not the program's.  A counter is defined in the capture when it is first
 * sampled; the samples go to the capture library, which buffers them per
 * counter and writes them at the collector's next commit (every
 * POLL_COMMIT_NS, and at each checkpoint and the end).  The /proc files are
 * kept open and read with pread(); work per tick is bounded by the number of
 * processes.  The memdump tables are written by the program: read like the
 * rest of the mapping (RD/ACQ once, bounds-checked). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector-private.h"
#include "cyg-name.h"

/* The /proc/meminfo fields sampled ("meminfo/<Field>", kB -> bytes). */
static const char *const meminfo_fields[] = {
	"MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "SwapTotal", "SwapFree", "Dirty",
};
#define NMEMINFO (sizeof(meminfo_fields) / sizeof(*meminfo_fields))

/* /proc/PID/statm fields in order ("statm/<field>", pages -> bytes), then
 * "stat/cpu_time" (utime + stime, ticks -> ns). */
static const char *const statm_fields[] = { "size", "resident", "shared", "text", "lib", "data" };
#define NSTATM 6         /* fields of statm read (lib, always 0, is not stored) */
#define STATM_LIB 4
#define NPROC_COUNTERS 6 /* size, resident, shared, text, data, cpu_time */

#define NO_ID UINT32_MAX

enum { CP_NEW, CP_LIVE, CP_DONE };

struct cnt_proc {
	int state;                   /* CP_* */
	int fd_statm, fd_stat;
	uint32_t id[NPROC_COUNTERS]; /* counter ids, NO_ID before the first sample */
	/* memdump */
	uint64_t md_off;             /* the table read (0: none yet) */
	uint32_t md_id[CYG_MEMDUMP_SLOTS]; /* counter of each slot, NO_ID: none yet */
	uint64_t md_seq[CYG_MEMDUMP_SLOTS];
	uint8_t md_bad[CYG_MEMDUMP_SLOTS]; /* its name was rejected */
};

struct counters {
	uint64_t interval;    /* ns between ticks */
	uint64_t next;        /* time of the next tick (collector_mono_ns) */
	int sample;           /* --counters: /proc */
	int memdump;          /* --memdump: the tables */
	int meminfo_fd;
	uint32_t meminfo_id[NMEMINFO];
	int meminfo_defined;
	struct cnt_proc *p;   /* by process index */
	size_t np;
	uint32_t next_id;
	uint64_t page, hz;
	char buf[8192];
};

static void note_err(struct collector *c, int err)
{
	collector_note_err(c, err);
}

/* Now on the clock of every other event: ns from the capture start. */
static uint64_t now_ns(struct collector *c)
{
	return tick_ns(c, collector_now(c));
}

static uint32_t define(struct collector *c, uint32_t proc_idx, uint32_t unit, const char *name)
{
	struct counters *k = c->counters;
	struct cygprof_counter d = { .id = k->next_id, .proc_idx = proc_idx, .unit = unit,
				     .name = (char *)name };
	int err = cygprof_capture_put_counter(c->cap, &d);

	if (err) {
		note_err(c, err);
		return NO_ID;
	}
	return k->next_id++;
}

static void sample(struct collector *c, uint32_t id, uint64_t t, int64_t v)
{
	struct cygprof_sample s = { .t_ns = t, .value = v };

	if (id != NO_ID)
		note_err(c, cygprof_capture_append_samples(c->cap, id, &s, 1));
}

/* The whole of a small /proc file into k->buf (NUL-terminated); its length,
 * or -1. */
static ssize_t read_proc(struct counters *k, int fd)
{
	ssize_t n = pread(fd, k->buf, sizeof(k->buf) - 1, 0);

	if (n < 0)
		return -1;
	k->buf[n] = 0;
	return n;
}

static void sample_meminfo(struct collector *c, uint64_t t)
{
	struct counters *k = c->counters;
	uint64_t val[NMEMINFO];
	int found[NMEMINFO] = { 0 };
	char *line, *save = NULL;
	size_t i;

	if (k->meminfo_fd < 0 || read_proc(k, k->meminfo_fd) <= 0)
		return;
	for (line = strtok_r(k->buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':'), *end;

		if (!colon)
			continue;
		for (i = 0; i < NMEMINFO; i++) {
			if ((size_t)(colon - line) != strlen(meminfo_fields[i]) ||
			    strncmp(line, meminfo_fields[i], (size_t)(colon - line)))
				continue;
			val[i] = strtoull(colon + 1, &end, 10);
			found[i] = end != colon + 1;
			if (found[i] && strstr(end, "kB"))
				val[i] *= 1024;
			break;
		}
	}
	if (!k->meminfo_defined) {
		char name[64];

		k->meminfo_defined = 1;
		for (i = 0; i < NMEMINFO; i++) {
			k->meminfo_id[i] = NO_ID;
			if (!found[i])
				continue;
			snprintf(name, sizeof name, "meminfo/%s", meminfo_fields[i]);
			k->meminfo_id[i] = define(c, CYGPROF_NONE, CYGPROF_UNIT_BYTES, name);
		}
	}
	for (i = 0; i < NMEMINFO; i++)
		if (found[i])
			sample(c, k->meminfo_id[i], t, (int64_t)val[i]);
}

static void proc_stop(struct cnt_proc *p)
{
	if (p->fd_statm >= 0)
		close(p->fd_statm);
	if (p->fd_stat >= 0)
		close(p->fd_stat);
	p->fd_statm = p->fd_stat = -1;
	p->state = CP_DONE;
}

/* One sample of a process's statm and CPU time; stops sampling it when it
 * has ended (its image: exit, exec), is a zombie or cannot be read. */
static void sample_proc(struct collector *c, struct cproc *cp, struct cnt_proc *p, uint64_t t)
{
	struct counters *k = c->counters;
	struct cyg_proc *rp = C_AT(c, cp->off);
	uint64_t statm[NSTATM], utime = 0, stime = 0;
	char path[64], *s, *end;
	size_t i;

	if (p->state == CP_DONE)
		return;
	if (cp->reaped || RD(rp->state) != CYG_P_RUNNING || !cp->pid) {
		proc_stop(p);
		return;
	}
	if (p->state == CP_NEW) {
		snprintf(path, sizeof path, "/proc/%u/statm", cp->pid);
		p->fd_statm = open(path, O_RDONLY | O_CLOEXEC);
		snprintf(path, sizeof path, "/proc/%u/stat", cp->pid);
		p->fd_stat = open(path, O_RDONLY | O_CLOEXEC);
		p->state = CP_LIVE;
		if (p->fd_statm < 0 || p->fd_stat < 0) {
			proc_stop(p);
			return;
		}
	}
	/* stat: "pid (comm) S ppid ... utime stime ...": the fields after the
	 * last ')' (comm may hold anything) */
	if (read_proc(k, p->fd_stat) <= 0 || !(s = strrchr(k->buf, ')'))) {
		proc_stop(p);
		return;
	}
	s++;
	while (*s == ' ')
		s++;
	if (*s == 'Z' || *s == 'X' || !*s) {
		proc_stop(p);
		return;
	}
	for (i = 0; i < 13 && s; i++) {
		if (i == 11)
			utime = strtoull(s, NULL, 10);
		else if (i == 12)
			stime = strtoull(s, NULL, 10);
		s = strchr(s, ' ');
		if (s)
			s++;
	}
	if (i < 13) {
		proc_stop(p);
		return;
	}
	if (read_proc(k, p->fd_statm) <= 0) {
		proc_stop(p);
		return;
	}
	s = k->buf;
	for (i = 0; i < NSTATM; i++) {
		statm[i] = strtoull(s, &end, 10);
		if (end == s) {
			proc_stop(p);
			return;
		}
		s = end;
	}
	if (!statm[0]) {
		/* exiting: its memory is gone before it turns zombie */
		proc_stop(p);
		return;
	}
	if (p->id[0] == NO_ID) {
		char name[32];
		size_t j = 0;

		for (i = 0; i < NSTATM; i++) {
			if (i == STATM_LIB)
				continue;
			snprintf(name, sizeof name, "statm/%s", statm_fields[i]);
			p->id[j++] = define(c, cp->idx, CYGPROF_UNIT_BYTES, name);
		}
		p->id[j] = define(c, cp->idx, CYGPROF_UNIT_NS, "stat/cpu_time");
	}
	for (i = 0; i < NSTATM; i++)
		if (i != STATM_LIB)
			sample(c, p->id[i < STATM_LIB ? i : i - 1], t, (int64_t)(statm[i] * k->page));
	sample(c, p->id[NPROC_COUNTERS - 1], t,
	       (int64_t)((utime + stime) * (1000000000ULL / k->hz)));
}

/* The memdump table of a process: a sample of each ready slot whose seq
 * changed since the last look. */
static void read_memdump(struct collector *c, struct cproc *cp, struct cnt_proc *p, uint64_t t)
{
	struct cyg_proc *rp = C_AT(c, cp->off);
	struct cyg_memdump *md;
	uint64_t off = ACQ(rp->memdump_off);
	uint32_t nslots, i;

	if (!off)
		return;
	if (!shm_ok(c, off, sizeof(struct cyg_memdump))) {
		if (off != p->md_off)
			c->dmg.texts++;
		p->md_off = off;
		return;
	}
	if (p->md_off && off != p->md_off) {
		/* moved: a table is never freed, so this is damage; start over */
		c->dmg.texts++;
		memset(p->md_seq, 0, sizeof p->md_seq);
	}
	p->md_off = off;
	md = C_AT(c, off);
	nslots = RD(md->nslots);
	if (nslots > CYG_MEMDUMP_SLOTS)
		nslots = CYG_MEMDUMP_SLOTS;
	for (i = 0; i < nslots; i++) {
		struct cyg_memdump_slot *sl = &md->slot[i];
		uint64_t seq;
		int64_t v;

		if (p->md_bad[i] || ACQ(sl->state) != 2)
			continue;
		seq = ACQ(sl->seq);
		if (seq == p->md_seq[i])
			continue;
		v = (int64_t)RD(sl->value);
		if (p->md_id[i] == NO_ID) {
			/* the name once, from a copy (the program may change
			 * it meanwhile), by the library's rule: anything else
			 * did not come through the API */
			char name[CYG_MEMDUMP_NAME], full[CYG_MEMDUMP_NAME + 16];

			memcpy(name, sl->name, sizeof name);
			if (!cyg_name_ok(name, sizeof name)) {
				p->md_bad[i] = 1;
				c->dmg.texts++;
				continue;
			}
			snprintf(full, sizeof full, "memdump/%s", name);
			p->md_id[i] = define(c, cp->idx, CYGPROF_UNIT_BYTES, full);
			if (p->md_id[i] == NO_ID)
				continue;
		}
		p->md_seq[i] = seq;
		sample(c, p->md_id[i], t, v);
	}
}

/* Make room for the processes found since the last tick. */
static int grow_procs(struct counters *k, size_t n)
{
	struct cnt_proc *v;
	size_t i, j;

	if (n <= k->np)
		return 0;
	v = realloc(k->p, n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = k->np; i < n; i++) {
		memset(&v[i], 0, sizeof v[i]);
		v[i].fd_statm = v[i].fd_stat = -1;
		for (j = 0; j < NPROC_COUNTERS; j++)
			v[i].id[j] = NO_ID;
		for (j = 0; j < CYG_MEMDUMP_SLOTS; j++)
			v[i].md_id[j] = NO_ID;
	}
	k->p = v;
	k->np = n;
	return 0;
}

static void tick(struct collector *c, int final)
{
	struct counters *k = c->counters;
	uint64_t t = now_ns(c);
	size_t i;

	if (grow_procs(k, c->nprocs)) {
		note_err(c, -ENOMEM);
		return;
	}
	if (k->sample && !final)
		sample_meminfo(c, t);
	for (i = 0; i < c->nprocs; i++) {
		struct cproc *cp = c->procs[i];

		if (cp->idx >= k->np)
			continue;
		if (k->sample && !final)
			sample_proc(c, cp, &k->p[cp->idx], t);
		if (k->memdump)
			read_memdump(c, cp, &k->p[cp->idx], t);
	}
}

int collector_counters_init(struct collector *c)
{
	const struct collector_opts *o = c->o;
	struct counters *k;
	long v;

	if (!o->counters_ns && !o->memdump)
		return 0;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->sample = o->counters_ns != 0;
	k->memdump = o->memdump;
	k->interval = o->counters_ns ? o->counters_ns : CYGPROF_COUNTERS_DEFAULT_NS;
	k->meminfo_fd = k->sample ? open("/proc/meminfo", O_RDONLY | O_CLOEXEC) : -1;
	v = sysconf(_SC_PAGESIZE);
	k->page = v > 0 ? (uint64_t)v : 4096;
	v = sysconf(_SC_CLK_TCK);
	k->hz = v > 0 && v <= 1000000000L ? (uint64_t)v : 100;
	c->counters = k;
	return 0;
}

uint64_t collector_counters_tick(struct collector *c)
{
	struct counters *k = c->counters;
	uint64_t now;

	if (!k)
		return UINT64_MAX;
	now = collector_mono_ns();
	if (now >= k->next) {
		tick(c, 0);
		now = collector_mono_ns();
		/* the next tick one interval after this one, never in a burst
		 * after a long stall */
		k->next = k->next + k->interval > now ? k->next + k->interval : now + k->interval;
	}
	return k->next - now;
}

void collector_counters_final(struct collector *c)
{
	if (c->counters)
		tick(c, 1);
}

void collector_counters_release(struct collector *c)
{
	struct counters *k = c->counters;
	size_t i;

	if (!k)
		return;
	for (i = 0; i < k->np; i++)
		if (k->p[i].state == CP_LIVE)
			proc_stop(&k->p[i]);
	if (k->meminfo_fd >= 0)
		close(k->meminfo_fd);
	free(k->p);
	free(k);
	c->counters = NULL;
}
