/* SPDX-License-Identifier: MIT */
/* pathtree.h - call paths merged into one tree: the threads' calling-context
 * trees of a profile laid over each other, a path being its parent path and
 * its function, so that the same call path of two threads (or two
 * processes, or two captures) is one node.
 *
 * Node 0 is the root (the empty path); a node's parent precedes it, and
 * nodes are numbered in the order their paths were first met (thread by
 * thread, each tree in its order).  Each node sums the calls, total and
 * self time of the tree nodes at its path; the root sums the threads'
 * totals.  The one merged tree of every reader: cygprof html's flame graph,
 * export --format=folded's stacks, export --format=pprof's samples (paths
 * of allocation and sample stacks too, through pathtree_child()) and
 * cygprof diff --paths (two captures' paths numbered together).
 *
 * Pure (no capture needed).  Error convention: 0 or -ENOMEM; nothing here
 * prints or exits. */
#ifndef CYGPROF_PATHTREE_H
#define CYGPROF_PATHTREE_H

#include <stddef.h>
#include <stdint.h>

#include "hmap.h"
#include "profile.h"

struct pathtree_node {
	uint32_t parent; /* PROFILE_NONE for the root */
	uint32_t fn;     /* the function (the caller's numbering: a profile's
			  * function index); PROFILE_NONE for the root */
	uint32_t depth;  /* 0 for the root */
	uint64_t calls, total_ns, self_ns;
};

struct pathtree {
	struct pathtree_node *n; /* n[0] is the root */
	size_t len, cap;
	struct hindex index;     /* of n, by (parent, fn) */
};

/** An empty tree: only the root.  0 or -ENOMEM. */
int pathtree_init(struct pathtree *t);
/** The path fn under parent (a node of t), made (with zero sums) when new.
 * Returns its node, or -ENOMEM. */
long pathtree_child(struct pathtree *t, uint32_t parent, uint32_t fn);
/** Lay one thread's tree over t: each of its nodes (parents first) becomes
 * the path of its function under its parent's path, and adds its calls,
 * total and self time there; the thread's total goes to the root.  fnmap
 * (NULL: none) renumbers the thread's functions (fnmap[fn] for fn); at
 * (NULL: not wanted) gets each tree node's path, at[0] = 0.  0 or -ENOMEM. */
int pathtree_add_thread(struct pathtree *t, const struct profile_thread *th,
			const uint32_t *fnmap, uint32_t *at);
/** The tree of every thread of p, from pathtree_init().  0 or -ENOMEM. */
int pathtree_build(struct pathtree *t, const struct profile *p);
/** Append a node that is never looked up (a tree made in its final order,
 * such as a copy with some paths cut): parent, fn and depth set, sums
 * zero.  Returns its node, or -ENOMEM. */
long pathtree_push(struct pathtree *t, uint32_t parent, uint32_t fn);
/** Free the nodes; t is zeroed. */
void pathtree_release(struct pathtree *t);

#endif
