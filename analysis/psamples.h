/* SPDX-License-Identifier: MIT */
/* psamples.h - perf samples and off-CPU intervals placed beside the exact
 * profile (record --sample, import-perf).
 *
 * A sample is charged to the innermost instrumented function of its stack
 * (a function of the profile, matched by name): the time the exact profile
 * counts as that function's self time includes what it spends in code that
 * is not instrumented (libc, other libraries), so its sampled time does
 * too.  When the innermost frame is not instrumented, the sample is also
 * counted for that function under its instrumented caller: the hottest
 * uninstrumented functions, and who called them.  An off-CPU interval is
 * charged the same way, by the stack where its thread left the CPU.
 *
 * cygprof's own runtime (the hooks, their slow paths, the malloc wrappers:
 * libcygprof-cyg.so and libcygprof-mem.so, or a frame named
 * __cyg_profile_func_*) is the profiler's cost, not the program's: a
 * sample or interval whose innermost frame is there is charged to no
 * function and counted as overhead, and runtime frames are left out of
 * every stack a reader shows (psamp_stack(), the one rule).
 *
 * Per call path: the instrumented frames of a stack, outermost first, are
 * followed down the thread's calling-context tree from its root; a stack
 * whose frames leave the tree (a chain cut short) is counted per function
 * only ("unplaced").
 *
 * Error convention: negative errno or CYGPROF_E_*; nothing prints.
 */
#ifndef ANALYSIS_PSAMPLES_H
#define ANALYSIS_PSAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "hmap.h"
#include "profile.h"

struct view;
struct view_frame;

/* What samples and off-CPU intervals say about one function or node. */
struct psamp_cost {
	uint64_t samples;   /* samples charged */
	uint64_t sample_ns; /* their weight: CPU time they stand for */
	uint64_t offcpu_ns; /* off-CPU time charged */
	uint64_t offcpu_n;  /* off-CPU intervals charged */
	/* psamp.fn only: samples whose stack holds the function anywhere
	 * (a recursive function once per sample), and their weight */
	uint64_t incl_samples, incl_ns;
};

/* An uninstrumented function that samples hit, under the instrumented
 * function that called it (PROFILE_NONE: no instrumented frame). */
struct psamp_leaf {
	const char *name;   /* borrowed from the view */
	const char *object; /* the object's path, NULL when unknown (borrowed) */
	uint32_t caller;    /* index into profile.fns, or PROFILE_NONE */
	int kernel;         /* the samples hit the kernel, called from name */
	struct psamp_cost cost;
};

/* An uninstrumented function under one call path of one thread. */
struct psamp_path_leaf {
	uint32_t thread; /* index into profile.threads */
	uint32_t node;   /* node of that thread's tree */
	uint32_t leaf;   /* index into psamp.leaf */
	struct psamp_cost cost;
};

struct psamp {
	struct psamp_cost *fn;   /* per profile function (p->nfns entries) */
	struct psamp_cost **node; /* per profile thread, per tree node (NULL when
				   * the thread has no tree) */
	size_t nthreads;
	struct psamp_leaf *leaf; /* sorted by sampled time, heaviest first */
	size_t nleaf;
	/* per call path: ordered by thread, node, then heaviest first */
	struct psamp_path_leaf *path_leaf;
	size_t npath_leaf;
	struct psamp_cost total;  /* everything selected */
	struct psamp_cost overhead; /* of total: in cygprof's runtime, charged to no function */
	uint64_t kernel_samples;  /* samples in the kernel */
	uint64_t uninstr_samples; /* samples whose innermost frame is not instrumented */
	uint64_t unplaced;        /* samples and intervals not placed on a call path */
	uint64_t imported;        /* samples from import-perf */
	/* private */
	size_t leaf_cap, path_leaf_cap;
	struct hindex pl_index; /* of path_leaf, by (thread, node, leaf) */
};

/** The samples and off-CPU intervals of the threads of p (the capture
 * threads p was loaded from; with all_threads also those of threads that
 * have no tree, such as the threads of a program without instrumentation),
 * charged to p's functions and to the nodes of p's threads.
 * @param[out] out owned: psamp_free(); NULL when the capture has no
 *                 samples and no intervals. */
int psamp_load(struct view *v, const struct profile *p, int all_threads, struct psamp **out);
void psamp_free(struct psamp *s);

/** Whether a frame is cygprof's runtime: its object is libcygprof-cyg.so or
 * libcygprof-mem.so (any directory), or its name is one of the hooks
 * (__cyg_profile_func_enter/exit, for a frame without an object).  A
 * view_skip_fn. */
int psamp_runtime_frame(const char *name, const char *object_path);

/** The frames of sample stack id as every reader shows them: view_stack()'s
 * (flags as there), with cygprof's runtime frames left out.
 * @param[out] overhead 1 when the innermost frame was the runtime's: the
 *                      sample is the profiler's cost, charged to no
 *                      function (the frames left are its callers).
 * @param[out] frames owned: free(). */
int psamp_stack(struct view *v, uint32_t id, unsigned flags, struct view_frame **frames,
		size_t *n, int *overhead);

#endif
