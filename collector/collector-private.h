/* SPDX-License-Identifier: MIT */
/* collector-private.h - the collector's internal state, shared by its files. */
#ifndef CYGPROF_COLLECTOR_PRIVATE_H
#define CYGPROF_COLLECTOR_PRIVATE_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "collector.h"
#include "cyg-shm.h"
#include "cygprof/cygprof-capture.h"
#include "debuginfo.h"
#include "symbols.h"

/* Open-addressing hash from a 64-bit key (never 0) to a 64-bit value. */
struct hmap {
	uint64_t *keys, *vals;
	size_t cap, n;
};
int hmap_put(struct hmap *m, uint64_t key, uint64_t val);
int hmap_get(const struct hmap *m, uint64_t key, uint64_t *val);
void hmap_release(struct hmap *m);

static inline uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t h = a * 0x9E3779B97F4A7C15ULL;
	h ^= b + 0x632BE59BD9B4E019ULL + (h << 6) + (h >> 2);
	h ^= c * 0xC2B2AE3D27D4EB4FULL + (h << 6) + (h >> 2);
	return h ? h : 1;
}

/* The tree the capture gets for one thread: the raw tree with the filters
 * applied.  Raw nodes (gids) map onto it as they are first seen. */
struct fnode {
	uint32_t parent;
	uint32_t depth;
	uint64_t fn, site, calls, ticks;
};

#define GID_DROP UINT32_MAX

struct cthread {
	struct cyg_thread *t;
	uint32_t idx;
	uint64_t cur_ts;     /* full time of the last event decoded */
	uint64_t last_head;  /* head seen at the previous drain */
	uint64_t idle_lb;    /* a drain saw the ring unchanged at this time: later
			      * events are not older than it */
	struct fnode *nodes;
	size_t n, cap;
	struct hmap bykey;   /* hash3(parent, fn, 0) -> index (collisions: probe the next key) */
	struct hmap bygid;   /* gid -> decision (see cthread_resolve) */
	uint32_t cache_gid[256], cache_idx[256]; /* direct-mapped front of bygid */
	struct cygprof_event *ev; /* pending timeline events */
	size_t nev, capev;
	struct pend { uint32_t node; uint32_t written; uint64_t ts; } *pend; /* time filter */
	size_t npend, cappend;
	struct cygprof_mem_event *mev; /* pending memory events */
	size_t nmev, capmev;
	struct hmap shadow_ids; /* hash3(gid, return addresses) -> stash id */
	struct { uint64_t ra; uint32_t gid, id; } sc[1024]; /* its front for one address */
	uint64_t mem_events; /* memory events stored */
	uint64_t events;     /* timeline events stored */
	uint64_t calls;      /* entries recorded (before filters), set at the end */
	int ring_done;
};

/* Symbols of one process image, for filters and the capture's tables. */
struct cproc {
	struct cyg_proc *p;
	uint32_t idx;
	struct cygprof_maps maps;
	uint64_t maps_len;
	uint64_t primed_len; /* maps_len when its objects were last opened */
	char *ns;            /* its mount namespace when not ours ("mnt:[N]") */
};

/* The stack stash: a trie of frames, outermost first, shared by all threads. */
struct stash {
	struct cygprof_stack_node *v; /* v[id - 1] */
	size_t n, cap, stored;        /* stored: how many went to the capture */
	struct hmap bykey;            /* hash3(parent, addr, proc | kind << 32) -> id */
	struct hmap unwound;          /* hash3(proc, stack hash, 0) -> id of its innermost frame */
};

struct collector {
	const struct cygprof_record_opts *o;
	struct stash stash;
	struct cygprof_capture *cap;
	char *base;
	struct cyg_ctl *ctl;
	uint64_t size;
	uint64_t tsc0, mono0;
	double ns_per_tick;
	uint64_t mult;        /* ns = ticks * mult >> 32 */
	struct cthread **threads;
	size_t nthreads;
	struct cproc *procs;
	size_t nprocs;
	struct elfcache { char *path; struct cygprof_elf *elf; int err; } *elfs;
	size_t nelfs;
	uint64_t end_ts;      /* when the last process was seen gone */
	int filtering;
	int final;            /* the program is gone: drain everything */
	int err;              /* first capture write error */
	struct debuginfo *dbg; /* separate debug files: names of stripped objects */
	int main_pid;         /* the program we started */
	int main_status;      /* its wait status */
};

/* The full timestamp of an event from its low 34 bits (see cyg-shm.h). */
static inline uint64_t restore_ts(struct cthread *ct, uint64_t low)
{
	const uint64_t half = 1ULL << 33, wrap = 1ULL << 34;
	uint64_t delta = (low - ct->cur_ts) & (wrap - 1);
	uint64_t full = ct->cur_ts + delta;

	if (delta >= half && ct->idle_lb <= ct->cur_ts + half)
		full = ct->cur_ts; /* a small step back: no time passed */
	else
		while (ct->idle_lb > full + half)
			full += wrap; /* after a long idle stretch */
	ct->cur_ts = full;
	return full;
}

static inline uint64_t ticks_to_ns(const struct collector *c, uint64_t ticks)
{
	return (uint64_t)(((unsigned __int128)ticks * c->mult + (1ULL << 31)) >> 32);
}

static inline uint64_t tick_ns(const struct collector *c, uint64_t ts)
{
	return ts <= c->tsc0 ? 0 : ticks_to_ns(c, ts - c->tsc0);
}

#define C_AT(c, off) ((void *)((c)->base + (off)))

uint32_t cthread_resolve(struct collector *c, struct cthread *ct, uint32_t gid);
struct cproc *collector_proc(struct collector *c, uint64_t proc_off);
const char *collector_fn_name(struct collector *c, struct cproc *cp, uint64_t addr, uint64_t *start,
			      uint64_t *size, struct cygprof_map **map, struct cygprof_elf **elf);
int collector_finish(struct collector *c);
/* Open the objects of processes seen since the last call while they live:
 * through /proc/PID/root for a process in another mount namespace (a
 * container), so their files are found, and before they can be deleted. */
void collector_prime_procs(struct collector *c);

/* memory.c: one EXT record at ring position pos (w its first word); returns
 * how many words it took in all. */
uint64_t collector_mem_record(struct collector *c, struct cthread *ct, const uint64_t *ring,
			      uint64_t mask, uint64_t pos, uint64_t w);
/* How many words the EXT record starting with w takes. */
static inline uint64_t collector_mem_len(uint64_t w)
{
	switch (cyg_x_sub(w)) {
	case CYG_X_ALLOC:
		return 4 + (cyg_x_mem_shadow(w) ? cyg_x_mem_get_nra(w) : 0);
	case CYG_X_FREE:
		return 2;
	case CYG_X_STACK:
		return (cyg_x_payload(w) & 0xffff) + 2;
	default:
		return 1;
	}
}

/* Write what the drain produced: new stash nodes, then the thread's events. */
void collector_mem_flush(struct collector *c, struct cthread *ct);
void collector_mem_release(struct collector *c);

#endif
