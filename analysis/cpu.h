/* SPDX-License-Identifier: MIT */
/* cpu.h - the runtime's CPU samples and off-CPU time (record --cpu-freq,
 * view_cpu()) summed by the functions of a loaded profile: the one rule
 * every reader of them uses.
 *
 * A function's figures are the sums of its nodes' SELF figures over the
 * profile's threads: the samples taken while one of its call paths was
 * current (its own code, or code it called that is not instrumented),
 * those taken inside cygprof's hooks meanwhile (overhead), and the time off
 * the CPU of the intervals that began in it: waiting for a CPU (preempted,
 * still runnable) or blocked.  What was charged to a thread's root (code
 * outside every instrumented function: before main, in a thread's start)
 * belongs to no function and is summed apart.
 *
 * Error convention: negative errno or CYGPROF_E_*; nothing prints.
 */
#ifndef ANALYSIS_CPU_H
#define ANALYSIS_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "timemodel.h"

struct view;

struct cpu_cost {
	uint64_t samples;    /* CPU samples, outside the profiler */
	uint64_t overhead;   /* samples inside the profiler's hooks */
	uint64_t wait_ns;    /* off the CPU, runnable (preempted) */
	uint64_t blocked_ns; /* off the CPU, blocked */
};

struct cpu_sum {
	int present;           /* some thread of the profile has a record */
	struct cpu_cost *fn;   /* per function of the profile (profile.fns) */
	size_t nfns;
	struct cpu_cost root;  /* charged to the threads' roots (no function) */
	struct cpu_cost total; /* every node of every thread */
	uint64_t taken;        /* samples taken, with those that found no node */
	uint64_t unplaced;     /* of them, with no node */
	uint64_t period_ns;    /* the sampling period (the largest of the threads') */
	uint32_t methods;      /* 1 << CYGPROF_CPU_* of the threads sampled */
	int switches;          /* some thread's switches were tracked */
};

/** The figures of every thread of p (profile_load() of v: the same threads
 * and trees).  @param[out] out owned: cpu_sum_free(). */
int cpu_sum_load(struct view *v, const struct profile *p, struct cpu_sum **out);
void cpu_sum_free(struct cpu_sum *s);

/** The sampler a capture used, as its meta "cpu_sampler" says ("perf",
 * "timer", "perf+timer" or "off"; "off" for a capture before it). */
const char *cpu_sampler(struct view *v);
/** Its sampling period in ns (meta "cpu_period_ns"), 0 when not sampled. */
uint64_t cpu_period_ns(struct view *v);

/** The time model's figures (timemodel.h) summed over every thread of v
 * whose tree it was applied to (*modelled of them). */
int cpu_time_model(struct view *v, struct timemodel_stats *sum, size_t *modelled);
/** Whether a capture recorded with --time=sampled has its times from the
 * runtime's CPU samples (the sampler ran: cpu_period_ns() > 0). */
int cpu_times_sampled(struct view *v);

#endif
