/* SPDX-License-Identifier: MIT */
/* counters.h - the counters of a capture as series over time: what the
 * collector sampled (system and per-process memory, CPU time, the memdump
 * API's subsystems) and, when the capture has memory events, each process's
 * live heap (heap/live_bytes, heap/live_blocks) derived from them.
 *
 * The heap series are sampled at the times of the process's own counters
 * (else 200 points over the capture), each sample being the maximum within
 * the interval that ends at it, as `cygprof memory`'s heap over time: the
 * largest sample is the process's exact peak.  A sample at the process's
 * last memory event closes its interval when no tick comes after it; the
 * ticks up to the process's end follow with the heap as it was left.
 *
 * Error convention: 0 or a negative errno / CYGPROF_E_*; nothing here prints.
 */
#ifndef ANALYSIS_COUNTERS_H
#define ANALYSIS_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "cygprof/cygprof-capture.h"

struct view;

struct counter_series {
	const char *name;              /* "meminfo/MemFree", "heap/live_bytes", ... */
	uint32_t proc_idx;             /* CYGPROF_NONE: the system's */
	uint32_t pid;                  /* 0 for the system's */
	uint32_t unit;                 /* enum cygprof_counter_unit */
	const struct cygprof_sample *s; /* time order */
	size_t n;
	/* private: what a derived series owns */
	struct cygprof_sample *own;
	size_t cap;
};

struct counter_set {
	struct counter_series *v; /* the system's first, then by process, each in stored order */
	size_t n;
};

/** The counters of the view's capture (borrowed from the view: the set
 * must not outlive it), with the heap series when heap is set and the
 * capture has memory events.  Release with counters_release(). */
int counters_load(struct view *v, int heap, struct counter_set *out);
void counters_release(struct counter_set *cs);

/** A sample's value: every counter is a quantity that cannot be negative
 * (bytes, ns, a count), its 64 bits read as unsigned, so that a memdump
 * total of UINT64_MAX reads as such.  Every reader goes through here. */
static inline uint64_t counter_value(const struct cygprof_sample *s)
{
	return (uint64_t)s->value;
}

/** Unit names as the JSON contract has them: "bytes", "ns", "count". */
const char *counters_unit_name(uint32_t unit);

#endif
