/* SPDX-License-Identifier: MIT */
/* memory.h - heap analysis of a capture recorded with --memory: totals,
 * per-stack and per-function allocation figures, temporaries, leaks, the
 * peak, heap over time and the growth between two times.
 *
 * The core (memory.c) is pure: it is fed memory events in merged order
 * (memory_run() does the k-way merge over per-thread sources) and, once the
 * events are done, the function names of the stacks it saw.  It is
 * unit-testable without a capture.  memory-load.c feeds it from a view of a
 * capture (view.h: cursors, the stack stash, names); cygprof top --memory
 * (collector/snapshot.c) feeds it the events the collector drains, for the
 * live heap.
 *
 * Definitions (exact):
 *   merged order   all threads' events by ts_ns; at equal times FREE before
 *                  ALLOC, then the lower thread index first; a thread's own
 *                  events keep their order.  The position of an event is
 *                  its 0-based index in that order.
 *   ALLOC          allocations++, allocated_bytes += size; the block goes
 *                  live (an address already live counts an untracked
 *                  realloc and replaces the old block); a new maximum of
 *                  live bytes is the peak.  The thread's last allocation
 *                  becomes addr.
 *   FREE           of a live block: frees++, counted on the allocating
 *                  stack; temporary when the freeing thread allocated the
 *                  block and made no other allocation since (heaptrack);
 *                  cross-thread when another thread frees it.  Of an address
 *                  not live: untracked_frees++.  The thread's last
 *                  allocation is reset.
 *   leaks          blocks still live after the last event.
 *   peak stacks    per stack, the blocks live at the peak position.
 *   diff T1 T2     per stack, the blocks live after every event with
 *                  ts <= T2 that were allocated at ts > T1.
 *   Events with address 0 (free(NULL), a failed allocation) are ignored.
 *
 * Per function: self figures come from the stacks whose innermost frame
 * (after skipping allocator entry points) is the function; total figures
 * from the stacks that contain it, each stack counted once however often
 * the function recurses in it.
 *
 * Error convention: negative errno; nothing here prints or exits.
 */
#ifndef CYGPROF_MEMORY_H
#define CYGPROF_MEMORY_H

#include <stddef.h>
#include "hmap.h"
#include "names.h"
#include <stdint.h>

#include "cygprof/cygprof-capture.h"

#define MEMORY_NONE UINT32_MAX
#define MEMORY_NO_TIME UINT64_MAX

struct memory_opts {
	uint64_t duration_ns; /* heap over time spans [0, duration_ns] */
	uint32_t points;      /* heap points (0: none) */
	int diff;             /* compute the diff between diff_t1 and diff_t2 */
	uint64_t diff_t1, diff_t2;
	/* called now and then while memory_load() reads events (may be NULL) */
	void (*progress)(uint64_t done, uint64_t total, void *arg);
	void *progress_arg;
	/* called after every event that changed the live heap (may be NULL):
	 * the event's thread and time, and the change of live bytes and blocks */
	void (*heap_change)(void *arg, uint32_t thread, uint64_t ts_ns, int64_t bytes,
			    int64_t blocks);
	void *heap_arg;
};

struct memory_totals {
	uint64_t events; /* events seen (address 0 ones included) */
	uint64_t allocations, frees;
	uint64_t allocated_bytes, freed_bytes;
	uint64_t live_bytes, live_blocks; /* after the last event (= leaks) */
	uint64_t peak_bytes, peak_blocks;
	uint64_t peak_pos;   /* position of the peak event; MEMORY_NO_TIME when none */
	uint64_t peak_ts_ns;
	uint64_t leaked_allocations, leaked_bytes;
	uint64_t temporary_allocations, temporary_bytes;
	uint64_t cross_thread_frees;
	uint64_t untracked_frees;
	uint64_t untracked_reallocs;
	uint64_t diff_blocks, diff_bytes;
	uint64_t first_ts_ns, last_ts_ns;
};

/* Figures of one stack (stash id). */
struct memory_stack {
	uint32_t id;
	uint32_t nframes;
	uint32_t *fns; /* function indices, innermost first, allocator frames skipped */
	uint64_t allocations, bytes;
	uint64_t frees, freed_bytes;
	uint64_t temporary, temporary_bytes;
	uint64_t cross_thread_frees;
	uint64_t leaked_allocations, leaked_bytes;
	uint64_t peak_blocks, peak_bytes;
	uint64_t diff_blocks, diff_bytes;
	uint64_t live_blocks, live_bytes; /* live after the events fed so far */
	/* private */
	uint64_t pk_ver;
	int used;
};

struct memory_fn {
	char *name;
	uint64_t self_allocations, self_bytes, total_allocations, total_bytes;
	uint64_t self_frees, total_frees;
	uint64_t self_temporary, total_temporary;
	uint64_t self_leaked_allocations, self_leaked_bytes;
	uint64_t total_leaked_allocations, total_leaked_bytes;
	uint64_t self_peak_bytes, total_peak_bytes;
	/* private */
	uint64_t mark;
};

/* A caller or callee of a function (--function): the sum over the stacks
 * through that edge, each stack counted once. */
struct memory_rel {
	uint32_t fn; /* index into memory.fns */
	uint64_t stacks;
	uint64_t allocations, bytes, frees, temporary, leaked_allocations, leaked_bytes;
};

struct memory_point {
	uint64_t ts_ns;      /* start of the interval */
	uint64_t live_bytes; /* maximum within [ts_ns, next ts_ns) */
};

struct memory_block;

struct memory {
	struct memory_opts opts;
	struct memory_totals t;
	struct memory_stack *stacks; /* indexed by stash id; see used */
	size_t nstacks;              /* highest id + 1 */
	struct memory_fn *fns;
	size_t nfns;
	struct memory_point *heap;
	size_t npoints;
	/* private */
	size_t stacks_cap, fns_cap;
	struct hindex fn_index; /* by name (names.h) */
	struct hmap live;             /* address -> index in blocks */
	struct memory_block *blocks;  /* the live blocks, and free entries */
	size_t nblocks, blocks_cap;
	uint32_t free_block;          /* the first free entry + 1, 0: none */
	uint64_t *last_alloc; /* per thread */
	size_t nthreads;
	uint64_t pk_ver;
	size_t heap_cur; /* highest point touched so far */
	int heap_started, diff_done, ended;
};

struct memory *memory_new(const struct memory_opts *o);
void memory_free(struct memory *m);

/** The address of a heap event as the analysis keys it: each process image
 * has its own address space, so its index (capture proc_idx, CYGPROF_NONE
 * when unknown) goes into the top 16 bits (user addresses use 48); a block
 * freed in a fork child never pairs with the parent's copy (the child's free
 * of an inherited block is an untracked free).  0 stays 0. */
static inline uint64_t memory_addr_key(uint64_t addr, uint32_t proc_idx)
{
	return addr ? (addr & ((1ULL << 48) - 1)) | (uint64_t)(proc_idx & 0xffff) << 48 : 0;
}

/** Feed one event (in merged order) of thread thread.
 * Returns 0, -EINVAL after memory_end(), -ENOMEM. */
int memory_event(struct memory *m, uint32_t thread, const struct cygprof_mem_event *ev);

/* One thread's events in time order, for memory_run(): next() returns 1
 * with an event, 0 at the end, <0 on error. */
typedef int (*memory_next_fn)(void *src, struct cygprof_mem_event *ev);

/** Merge nthreads sources (source i is thread i) and feed every event.
 * Keeps one pending event per thread.  Stops at the first error. */
int memory_run(struct memory *m, size_t nthreads, memory_next_fn next, void *const *srcs);

/** After the last event: leaks, peak stacks, the heap points, the diff. */
int memory_end(struct memory *m);

/** Whether a frame is an allocator entry point (malloc and its family,
 * operator new and delete) or in cygprof's own library (object_path, may be
 * NULL): such frames are skipped at the innermost end of a stack, and only
 * there.  The one allocator-frame filter (cygprof memory, top's live heap).
 * A frame without a name (NULL) is not an allocator frame: it stays. */
int memory_frame_skipped(const char *name, const char *object_path);

/** Name a stack's frames: names[i] (object path objs[i], may be NULL or
 * objs NULL) innermost first.  Leading skipped frames are dropped; the
 * names are interned as functions.  Stacks left unnamed count as one
 * function "<unknown>".  Returns 0, -ENOENT for a stack never seen,
 * -ENOMEM. */
int memory_set_frames(struct memory *m, uint32_t stack, const char *const *names,
		      const char *const *objs, size_t n);

/** Ids of the stacks seen by the events (in ascending order).
 * @param[out] ids owned: free(). */
int memory_used_stacks(const struct memory *m, uint32_t **ids, size_t *n);

/** Sum the stacks into the per-function figures (after memory_set_frames()). */
int memory_functions(struct memory *m);

/** Index of the function called name, or -ENOENT. */
long memory_find_fn(const struct memory *m, const char *name);

/** Callers and callees of the functions matching pattern (an exact name or
 * an fnmatch(3) glob), taken as one group: for every stack with a matching
 * frame, the frame just outside each run of matching frames (caller) and
 * just inside it (callee).  Sorted by bytes, largest first.
 * @param[out] callers,callees owned: free().
 * @param[out] self the group's figures summed over its stacks (optional). */
int memory_related(const struct memory *m, const char *pattern, struct memory_rel **callers,
		   size_t *ncallers, struct memory_rel **callees, size_t *ncallees,
		   struct memory_rel *self);

/* ---- loading from a capture (memory-load.c) -------------------------------- */

struct view;

/** Run the analysis over a view of a capture: merge every thread's memory
 * events, name the stacks through the view (view_stack()), and sum the
 * functions.  o->duration_ns 0 takes the capture's duration.  The frames
 * of a stack for printing: view_stack(v, id, VIEW_LINES,
 * memory_frame_skipped, ...).
 * @param[out] out owned: memory_free(). */
int memory_load(struct view *v, const struct memory_opts *o, struct memory **out);

#endif
