/* SPDX-License-Identifier: MIT */
/* inclusive.h - inclusive times counted once: the rule behind every figure
 * that adds up the inclusive times of calls grouped by a key (a function,
 * the source line of a call site), so that a call inside another
 * call of the same key does not add its time twice (recursion).
 *
 * Pure (no capture needed): it works on a thread's tree as stored (nodes[0]
 * is the root, parents precede their children) and on "entries", each at
 * one node with one key:
 *   - per node, its function (profile.c: a function's total, its arcs;
 *     export/callgrind.c: the cost of a call arc, so that a callee's
 *     inclusive cost, the sum of the arcs into it, is its total);
 *   - per call site of a node, the source line of the site (annotate.c:
 *     a line's inclusive time).
 *
 * The rule: an entry's time counts in its key's figure only when no proper
 * ancestor of its node has an entry of the same key (incl_nearest() gives
 * that ancestor).  Its time then contains the time of every entry of the
 * key below it, so the figure is the time spent under the key's outermost
 * calls, never more than the thread's total.  When an ancestor has entries
 * of several keys (a function called from two lines, whose calls the tree
 * merges), a descendant on one of those keys is taken as inside it: the
 * figure is then at most the time of the key's calls, never above it.
 *
 * Error convention: negative errno; nothing here prints or exits. */
#ifndef ANALYSIS_INCLUSIVE_H
#define ANALYSIS_INCLUSIVE_H

#include <stddef.h>
#include <stdint.h>

#include "cygprof/cygprof-capture.h"

#define INCL_NONE UINT32_MAX

/** For every entry e (at node enode[e], key ekey[e] < nkeys or INCL_NONE for
 * none): near[e] = the nearest proper ancestor of its node with an entry of
 * the same key, INCL_NONE when there is none (always for a keyless entry
 * and an entry at the root); via[e] (may be NULL) = the child of near[e] on
 * the path down to e's node (the node itself when near[e] is its parent).
 * enode NULL: entry e is at node e (ne == n).
 * Returns 0, -EINVAL for a malformed tree (a parent not before its child) or
 * an entry's node out of range, -ENOMEM. */
int incl_nearest(const struct cygprof_node *nodes, size_t n, const uint32_t *enode,
		 const uint32_t *ekey, size_t ne, uint32_t nkeys, uint32_t *near, uint32_t *via);

/** Per node, the outermost ancestor-or-self of the same key (key[i] per
 * node; key[0] is ignored): top[i] == i when no ancestor has key[i]; a node
 * with key INCL_NONE is its own top. */
int incl_tops(const struct cygprof_node *nodes, size_t n, const uint32_t *key, uint32_t nkeys,
	      uint32_t *top);

/** Per entry, whether its time counts in its key's figure: outer[e] = 1
 * when no proper ancestor of its node has an entry of the same key (a
 * keyless entry counts: 1).  Arguments as incl_nearest(). */
int incl_outer(const struct cygprof_node *nodes, size_t n, const uint32_t *enode,
	       const uint32_t *ekey, size_t ne, uint32_t nkeys, uint8_t *outer);

#endif
