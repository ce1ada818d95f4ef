/* SPDX-License-Identifier: MIT */
/* view-private.h - the state of a view, shared by view.c (capture, tasks,
 * metadata, trees, events) and view-symbols.c (objects, symbols, functions,
 * stacks); nothing outside analysis/view*.c includes it. */
#ifndef ANALYSIS_VIEW_PRIVATE_H
#define ANALYSIS_VIEW_PRIVATE_H

#include "view.h"

#include "array.h"
#include "hmap.h"

/* A list fetched once: state 0 not yet read, 1 read (a failed read leaves 0
 * so that the next call reads again). */
struct view_meta_ent {
	struct view_meta_ent *next;
	char *key;
	char *value; /* NULL: absent */
};

struct view_proc_syms {
	int state; /* 0 not read, 1 read, < 0 the error reading them */
	struct cygprof_symbol *syms;
	size_t n;
};

struct view_tree_slot {
	struct view_tree t;
	int state; /* 0 not read, 1 read */
	struct cygprof_node *nodes;
	uint64_t *self_ns;
	uint32_t *fn;
	uint32_t *map; /* with a filter: stored node -> filtered node (VIEW_NONE) */
	double *cut;   /* compensated: per stored node, the ns taken out per call */
	/* the time model (timemodel.h), per stored node: its total after it
	 * over its total before it (0: none before), and its total after it
	 * per call; nscale of each (0: not modelled) */
	double *scale, *percall;
	size_t nscale;
	size_t ncut;
	size_t nmap;
	int sites_state;
	struct cygprof_callsite *sites;
	size_t nsites;
	int sampled;   /* view_set_times(): the sites' times follow the nodes' */
	uint32_t *own; /* with a filter: stored node -> the kept node its own
			* figures go to (its own, or its nearest kept ancestor) */
	/* latency.c: the thread's latency per node (owned), NULL not read */
	struct view_latency *lat;
	int cpu_state; /* 0 not read, 1 read */
	struct view_cpu cpu;
	uint64_t *cpu_arr; /* the four arrays of cpu, n each */
};

/* Functions live in blocks that never move: pointers handed out stay valid. */
#define VIEW_FN_BLOCK 1024

/* A name found in a debug file, by object and the function's file start. */
struct view_dbg_ent {
	uint32_t obj;
	uint64_t start;
	char *name; /* owned */
};

struct view {
	struct view_filter filter; /* view_set_filter() */
	int filtering;
	struct cygprof_capture *cap;
	int own_cap;
	struct view_opts opts;
	struct view_meta_ent *meta;
	int overhead_state; /* 0 not read, 1 read */
	struct view_overhead overhead;

	int procs_state, threads_state;
	struct cygprof_proc *procs;
	size_t nprocs;
	struct cygprof_thread *threads;
	size_t nthreads;

	int objs_state; /* 0 not read, 1 read, < 0 failed (not retried) */
	struct cygprof_object *objs;
	size_t nobjs;
	const struct cygprof_object *last_obj;
	struct view_proc_syms *syms; /* per process, nprocs of them */
	view_resolve_fn resolve;
	void *resolve_arg;
	struct view_dbg_ent *dbg; /* names from opts.debuginfo, kept */
	size_t ndbg, dbg_cap;
	struct hindex dbg_index;  /* of dbg, by (obj, start) */

	struct view_fn **fn_blocks;
	size_t nfns, fn_blocks_cap;
	struct hindex fn_index; /* function ids by (proc, addr) */
	struct hmap hex;        /* address -> its "0x..." name (owned char *) */

	int stash_state;
	struct cygprof_stack_node *stash;
	size_t nstash;

	struct view_tree_slot *trees; /* per thread, nthreads of them */

	int counters_state; /* 0 not read, 1 read */
	struct cygprof_counter *counters;
	size_t ncounters;
	struct view_samples { int state; struct cygprof_sample *s; size_t n; } *samples;
	int psamples_state, offcpu_state; /* 0 not read, 1 read */
	struct cygprof_psample *psamples;
	size_t npsamples;
	struct cygprof_offcpu *offcpu; /* the program's, then nwaits waits */
	size_t noffcpu, nwaits;
	struct srcline *sl;
};

/* The slot of a thread's tree (NULL: no such thread, or no memory). */
struct view_tree_slot *view_slot(struct view *v, uint32_t thread);
/* Free a view_latency of latency.c (view_close()). */
void view_latency_free(struct view_latency *l);
/* Read the processes (view.c) before using v->nprocs. */
int view_load_procs(struct view *v);
/* Release what view-symbols.c holds (view_close()). */
void view_symbols_release(struct view *v);

/* view-filter.c: the filtered tree of a thread (replacing nodes and fn,
 * which are freed; map: stored node -> kept node or VIEW_NONE, owned; own:
 * stored node -> its kept node or the nearest kept ancestor, owned), and
 * its timeline remapped through map. */
int view_filter_tree(struct view *v, uint32_t thread, struct cygprof_node **nodes,
		     uint32_t **fn, size_t *n, uint32_t **map, uint32_t **own);
/* --time-range's events: the window's, with an enter at its true time for
 * each call open at its start and an exit at its true time for each call
 * open at its end (see view-filter.c), node indices mapped by map. */
int view_range_events(struct view *v, uint32_t thread, const uint32_t *map, size_t nmap,
		      cygprof_event_fn fn, void *data);
int view_filter_events(struct view *v, uint32_t thread, const uint32_t *map, size_t nmap,
		       cygprof_event_fn fn, void *data);
/* The call sites of a filtered tree (s's, already read): remapped to its
 * kept nodes; with a time range, one per kept node, from its calls and time. */
int view_filter_sites(struct view *v, const struct view_tree_slot *s,
		      struct cygprof_callsite **sites, size_t *n);

#endif
