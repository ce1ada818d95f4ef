/* SPDX-License-Identifier: MIT */
/* profile.h - exact flat profile, call-graph arcs and named calling-context
 * trees built from cygprof's per-thread call trees.
 *
 * The core (profile.c) is pure: it works on in-memory node arrays whose
 * functions are already resolved to names, so it is unit-testable without a
 * capture.  profile-load.c feeds it from a view of a capture (view.h: trees
 * named and self times computed there); cygprof top's snapshots
 * (collector/snapshot.c) feed it the collector's trees as they are, so a
 * live view and a report of the capture follow the same rules.
 *
 * Definitions (all times in ns, exact):
 *   total_ns(node)  = the time measured, compensated for the hooks' own cost
 *                     when the capture has its calibration (see
 *                     profile_compensate()), unless the reader asked for raw
 *                     times
 *   self(node)      = total_ns(node) - sum of total_ns(children), clamped at 0
 *   fn.self_ns      = sum of self over the function's nodes
 *   fn.total_ns     = sum of total_ns over the function's nodes that have no
 *                     ancestor of the same function (recursion counted once)
 *   fn.calls        = sum of calls over the function's nodes
 *   fn.rec_calls    = calls whose caller is the function itself
 *   fn.root_calls   = calls from a thread's root (<spontaneous> in gprof terms)
 *   arc(P -> C)     = calls of C's nodes whose parent is a node of P (P != root);
 *                     time: total_ns of those nodes without a C ancestor,
 *                     split into the callee's self time inside those subtrees
 *                     (self_ns) and the rest (children_ns).  Self-recursive
 *                     arcs (P == C) carry calls only.
 *
 * Error convention: negative errno; nothing here prints or exits.
 */
#ifndef CYGPROF_PROFILE_H
#define CYGPROF_PROFILE_H

#include <stddef.h>
#include "names.h"
#include <stdint.h>

#include "cygprof/cygprof-capture.h"

#define PROFILE_NONE UINT32_MAX

struct profile_fn {
	char *name;
	uint64_t calls;      /* all entries, recursive ones included */
	uint64_t rec_calls;  /* entries from the function itself */
	uint64_t root_calls; /* entries from a thread root (no caller) */
	uint64_t self_ns;
	uint64_t total_ns;
};

struct profile_arc {
	uint32_t caller; /* index into profile.fns */
	uint32_t callee;
	uint64_t calls;
	uint64_t total_ns;    /* time of the callee's subtrees under caller */
	uint64_t self_ns;     /* callee's self time in those subtrees */
	uint64_t children_ns; /* total_ns - self_ns */
};

/* One node of a thread's calling-context tree, resolved to a function. */
struct profile_tnode {
	uint32_t parent;      /* PROFILE_NONE for the root (index 0) */
	uint32_t fn;          /* index into profile.fns; PROFILE_NONE for the root */
	uint32_t first_child; /* PROFILE_NONE when none; children in array order
			       * (profile_sort_children() ranks them) */
	uint32_t next_sibling;
	uint32_t depth;       /* 0 for the root */
	uint64_t site;
	uint64_t calls;
	uint64_t total_ns;
	uint64_t self_ns;
};

/* What identifies a thread in reports (all optional, copied as is). */
struct profile_thread_info {
	uint32_t idx; /* capture thread index */
	uint32_t tid;
	uint32_t pid;
	uint32_t flags; /* CYGPROF_THREAD_* */
	char name[16];
};

struct profile_thread {
	struct profile_thread_info info;
	struct profile_tnode *nodes;
	size_t n;
	uint64_t total_ns; /* sum of the root children's total_ns */
};

struct profile {
	struct profile_fn *fns;
	size_t nfns;
	struct profile_arc *arcs;
	size_t narcs;
	struct profile_thread *threads;
	size_t nthreads;
	uint64_t total_self_ns; /* sum of all functions' self time */
	/* private */
	size_t fns_cap, arcs_cap, threads_cap;
	struct hindex fn_index; /* by name (names.h) */
	struct hindex arc_index; /* of arcs, by (caller, callee) */
};

struct profile *profile_new(void);
void profile_free(struct profile *p);

/* The order of a tree's children (profile_sort_children()). */
enum profile_order { PROFILE_BY_TOTAL, PROFILE_BY_SELF, PROFILE_BY_CALLS, PROFILE_BY_NAME };
/** Relink the children of every node of every thread's tree: the largest
 * total (self, calls) first, or by name A..Z; ties keep the array order.
 * 0 or -ENOMEM. */
int profile_sort_children(struct profile *p, enum profile_order key);

/** Index of the function called name, creating it (zeroed) when absent.
 * Returns the index (>= 0) or -ENOMEM. */
long profile_intern(struct profile *p, const char *name);
/** Index of the function called name, or -ENOENT. */
long profile_find(const struct profile *p, const char *name);
/** The arc caller -> callee (fn indices), or NULL. */
const struct profile_arc *profile_find_arc(const struct profile *p, uint32_t caller,
					   uint32_t callee);

/** Add one thread's calling-context tree.
 * @param nodes  as stored in a capture: nodes[0] is the root, parents
 *               precede their children.  n == 0 adds an empty thread.
 * @param fnidx  for every node, its function's index (from profile_intern());
 *               fnidx[0] is ignored.
 * Returns 0, -EINVAL for a malformed tree (bad parent index), -ENOMEM. */
int profile_add_tree_idx(struct profile *p, const struct profile_thread_info *info,
			 const struct cygprof_node *nodes, const uint32_t *fnidx, size_t n);

/** The same with the nodes' self times given (self[i] for nodes[i], as
 * profile_self_times() computes them); self NULL computes them. */
int profile_add_tree_self(struct profile *p, const struct profile_thread_info *info,
			  const struct cygprof_node *nodes, const uint32_t *fnidx,
			  const uint64_t *self, size_t n);

/** Same with names: names[i] is the function name of nodes[i] (names[0] is
 * ignored and may be NULL). */
int profile_add_tree(struct profile *p, const struct profile_thread_info *info,
		     const struct cygprof_node *nodes, const char *const *names, size_t n);

/** The self time of every node of a tree as stored (nodes[0] is the root,
 * parents precede their children): its total_ns minus the sum of its
 * children's total_ns, clamped at 0.  The one place of this rule.
 * @param[out] self n values.
 * @param[out] total the sum of the root's children's total_ns (may be NULL).
 * Returns 0, or -EINVAL for a bad parent index. */
int profile_self_times(const struct cygprof_node *nodes, size_t n, uint64_t *self,
		       uint64_t *total);

/* The hooks' cost per enter/exit pair, measured in the traced process at
 * attach (cyg/cyg-calib.c): in_ns falls inside the callee's interval
 * (between its enter's and its exit's clock reads), full_ns is the whole
 * pair as its callers see it (in_ns + the part before the enter's read and
 * after the exit's). */
struct profile_overhead {
	double in_ns;
	double full_ns;
};

/** Overhead compensation, the one place of this rule: for every node N
 * but the root, in place,
 *   total_ns(N) = max(kids(N), total_ns(N) - calls(N) * in_ns
 *                              - descendant_calls(N) * full_ns)
 * (rounded to the nearest ns), where descendant_calls(N) is the sum of the
 * calls of every node below N and kids(N) the sum of N's children's
 * compensated total_ns (0 for a leaf); the root's total_ns becomes the sum
 * of its children's.  So compensation never makes a node's inclusive time
 * less than its children's, nor its self time (profile_self_times())
 * negative: where the hooks' cost would exceed the time measured there
 * (a calibration too high for that code, or calls too short to tell from
 * the hooks), the node is clamped at kids(N) and counted.  The measured
 * times are the data, the calibration a prior taken out of them as far as
 * they allow; a reader with better evidence of a call path's time (CPU
 * samples) can take its place per node.
 * @param[out] cut when not NULL, n values: for each node the time taken
 *             out per call (after clamping; 0 for the root and for a node
 *             without calls), for the call sites of the node.
 * @param[out] clamped when not NULL, the number of nodes clamped.
 * Returns 0, -EINVAL for a bad parent index, -ENOMEM. */
int profile_compensate(struct cygprof_node *nodes, size_t n, const struct profile_overhead *o,
		       double *cut, uint64_t *clamped);

/* ---- loading from a capture (profile-load.c) ------------------------------ */

struct view;

/** The profile of the given capture threads (by thread index; all threads
 * when idx is NULL), from the view's named trees: functions are named by
 * the view (addresses without a symbol become "0x..."). */
int profile_load(struct view *v, const uint32_t *idx, size_t nidx, struct profile **out);
/** Give the view's trees and call sites the times every reader shows,
 * for a reader that reads the view's sites rather than a profile
 * (annotate): with record --time=sampled --sample the samples' times (as
 * profile_load() makes them); otherwise nothing changes. */
int profile_view_times(struct view *v);

/* What the functions of a loaded profile are merged by. */
enum profile_key {
	PROFILE_KEY_NAME,   /* their names (profile_load()) */
	PROFILE_KEY_OBJECT, /* "OBJECT\x1fNAME": OBJECT the base name of the
			     * function's object, empty for its process's
			     * executable, "?" when no object holds it; so the
			     * functions of two builds of a program match by
			     * name and library (cygprof diff) */
};
#define PROFILE_KEY_SEP '\x1f'

/** profile_load() with the functions merged by key.  objects (may be NULL)
 * gets, with PROFILE_KEY_OBJECT, per function of the profile the base name
 * of its object (the executable's own name too; of the last view function
 * merged into it; borrowed from the view); NULL when there is none.
 * @param[out] objects owned: free(). */
int profile_load_keyed(struct view *v, const uint32_t *idx, size_t nidx, enum profile_key key,
		       struct profile **out, const char ***objects);

/** The name part of a function's key: NAME of "OBJECT\x1fNAME", else key. */
const char *profile_key_name(const char *key);

#endif
