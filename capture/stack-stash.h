/* SPDX-License-Identifier: MIT */
/* stack-stash.h - a stack stash being written: the trie of frames that a
 * capture's "stacks" database holds (docs/capture-format.md), outermost
 * frame at the root, each node numbered by its id, a child after its
 * parent.  Everything that writes stacks into a capture builds it here:
 * the collector (collector/memory.c for allocations, collector/sampling.c
 * for perf samples, one stash they share) and import-perf
 * (analysis/import-perf.c), whose nodes continue the ids of the capture's
 * stash.
 *
 * Not part of libcygprof-capture's API: a static library beside it, on its
 * public types (struct cygprof_stack_node) and common/'s index table.
 * Error convention: negative errno; nothing here prints or exits. */
#ifndef CYGPROF_STACK_STASH_H
#define CYGPROF_STACK_STASH_H

#include <stddef.h>
#include <stdint.h>

#include "hmap.h"

#include "cygprof/cygprof-capture.h"

struct stack_stash {
	struct cygprof_stack_node *v; /* v[i].id == base + i + 1 */
	size_t n, cap;
	size_t stored; /* the nodes stack_stash_store() has written */
	uint32_t base; /* the ids before v[0]'s */
	struct hindex index; /* of v, by (parent, proc_idx, kind, addr) */
};

/** An empty stash whose nodes get the ids after base: 0 for a new capture
 * (a stash all zeros is that one), a capture's number of nodes to continue
 * its stash. */
void stack_stash_init(struct stack_stash *s, uint32_t base);
/** Free the nodes; the stash is empty again, with the same base. */
void stack_stash_release(struct stack_stash *s);

/** The id of the node (parent, proc, kind, addr): parent 0 for the
 * outermost frame, kind a CYGPROF_FRAME_*.  Made when new.  On failure
 * (-ENOMEM, or -EOVERFLOW past the last 32-bit id) it returns parent and
 * sets *err unless *err is already set, so that a caller may go on and
 * check once. */
uint32_t stack_stash_intern(struct stack_stash *s, int *err, uint32_t parent, uint32_t proc,
			    uint32_t kind, uint64_t addr);

/** The id of a call chain of process proc given innermost first: the
 * innermost frame is the instruction (CYGPROF_FRAME_IP), the others return
 * addresses; 0 for n == 0.  Errors as stack_stash_intern(). */
uint32_t stack_stash_chain(struct stack_stash *s, int *err, uint32_t proc, const uint64_t *f,
			   size_t n);

/** The node of id, or NULL when it is not one of the stash's. */
const struct cygprof_stack_node *stack_stash_get(const struct stack_stash *s, uint32_t id);

/** Put the nodes made since the last call into cap
 * (cygprof_capture_put_stacks(), inside the caller's transaction); they
 * count as stored even when that fails.  0 or its error. */
int stack_stash_store(struct stack_stash *s, struct cygprof_capture *cap);

#endif
