/* SPDX-License-Identifier: MIT */
/* top.h - the engine of `cygprof top`: the collector's snapshots made into
 * the rows top shows (rows.c), the view's layout and its keys (view.c),
 * and the terminal it takes over (term.c, term.h).
 *
 * rows.c is pure (unit-tested without a program, tests/unit/test-top.c):
 * a snapshot (collector.h, struct collector_snapshot) becomes one row per
 * (function name, thread) and one per function name merged over the
 * threads, each with its figures over the last interval (against the
 * previous snapshot) and in total; heap stacks that read the same are one.
 * The figures themselves (self and total time, calls, the heap) are the
 * collector's, computed by analysis/ as for every reader.
 *
 * Error convention: negative errno; nothing here exits. */
#ifndef CYGPROF_TOP_H
#define CYGPROF_TOP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "collector.h"

/* One function, of one thread (tid) or merged over the threads (tid 0). */
struct top_row {
	char *name;
	uint32_t tid;
	uint64_t calls, self_ns, total_ns;
	uint64_t icalls, iself_ns, itotal_ns; /* in the last interval */
};

struct top_thread {
	uint32_t pid, tid;
	char name[16];
	int ended;
};

/* A heap stack with live blocks (stacks with the same frames merged: the
 * lowest id). */
struct top_stack {
	uint32_t id;
	uint64_t live_bytes, live_blocks, allocations, bytes;
	char **frames;
	size_t nframes;
};

/* One snapshot as top keeps it. */
struct top_snap {
	struct top_row *merged, *per; /* per: one row per (thread, function) */
	size_t nmerged, nper;
	struct top_thread *thr;
	size_t nthr;
	uint64_t elapsed_ns, interval_ns;
	uint64_t calls, icalls;
	uint32_t rings, ring_fill_pct;
	uint64_t ring_lost, ring_waits;
	int has_heap;
	struct collector_heap heap; /* stacks: NULL; see hs */
	uint64_t iallocations;
	struct top_stack *hs;       /* most live bytes first */
	size_t nhs;
	int final;
};

enum top_key { TOP_SELF, TOP_TOTAL, TOP_CALLS, TOP_NAME, TOP_NKEYS };
#define TOP_SORT_MAX 4
extern const char *const top_key_names[TOP_NKEYS];

/* How the rows are shown, and what the header says. */
struct top_view {
	enum top_key sort[TOP_SORT_MAX];
	size_t nsort;
	int interval; /* sort and share by the last interval (else the whole run) */
	int threads;  /* one block per thread */
	size_t limit; /* functions per block and heap stacks (0: all) */
	int paused, help;
	int screen;   /* the full-screen view: the key line, a line budget */
	const char *prog;
	const char *output_of; /* where PROG's output goes (screen) */
	int attach_pid;        /* --attach: the process watched */
};

/* ---- rows.c ------------------------------------------------------------------ */

/** The snapshot s as top keeps it into out: rows per (function, thread) and
 * merged by function, their last interval against prev (NULL or the
 * previous snapshot; its rows are put back in key order), the heap stacks
 * that read the same merged; the rows in v's order.
 * Returns 0 or -ENOMEM (out then empty). */
int top_snap_build(struct top_snap *prev, const struct collector_snapshot *s,
		   const struct top_view *v, struct top_snap *out);
void top_snap_free(struct top_snap *s);

/** Sort s's rows in v's order: v's keys on the interval's or the run's
 * figures (numbers largest first), then name and thread. */
void top_sort(const struct top_view *v, struct top_snap *s);

/** The order of the thread blocks (v->threads): by the sum of the first
 * sort key's figure over their functions (by name: by tid), live threads
 * first.  order: s->nthr entries (at least 1; order[0] = 0 for the merged
 * view). */
void top_thread_order(const struct top_view *v, const struct top_snap *s, size_t *order);

/** The index of key name, or -1. */
int top_key_find(const char *name);

/** v per second over ns (0 when ns is 0). */
double top_per_s(uint64_t v, uint64_t ns);

/* ---- view.c ------------------------------------------------------------------ */

/** The lines of the view of s: a header, the functions (merged or per
 * thread), the heap.  max_lines: the screen's height, 0 for no limit (the
 * plain table). */
void top_render(const struct top_view *v, const struct top_snap *s, FILE *f, unsigned max_lines);

enum top_action { TOP_NONE, TOP_REDRAW, TOP_QUIT };

/** A key typed on the view: q (Q, ^C) quit, p (P, space) pause, s the next
 * sort key, t per thread or merged, d interval or total, h (?) help. */
enum top_action top_key_press(struct top_view *v, int ch);

#endif
