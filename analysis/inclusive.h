/* SPDX-License-Identifier: MIT */
/* inclusive.h - inclusive times counted once: the rule behind every figure
 * that adds up the inclusive times of calls grouped by a key (a function,
 * a source line of call sites, a caller), so that a call inside another
 * call of the same key does not add its time twice (recursion).
 *
 * Pure (no capture needed): it works on a thread's tree as stored (nodes[0]
 * is the root, parents precede their children) and on "entries", each at
 * one node with one key:
 *   - per node, its function (profile.c: a function's total, its arcs);
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
 * incl_arc_ns() gives what the callgrind format needs, where a reader adds
 * up a function's inclusive cost as its self cost plus the costs of its
 * calls: per node, its time outside further calls of its caller's function.
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

/** Per node i (key[i] its function, key[0] ignored): out[i] = the time of
 * its subtree outside the calls of its parent's function made below it,
 * i.e. total_ns(i) minus the total_ns of the outermost nodes of the
 * parent's key in i's subtree (0 when i is of its parent's key, a
 * recursive call; its total_ns when its parent is the root or has no
 * key).  Over the calls a function F makes (the children of F's nodes),
 * these add up to F's outermost calls' time minus all of F's self time:
 * F's self plus its calls' out is F's inclusive time, recursion counted
 * once.  out[0] = 0. */
int incl_arc_ns(const struct cygprof_node *nodes, size_t n, const uint32_t *key, uint32_t nkeys,
		uint64_t *out);

#endif
