/* SPDX-License-Identifier: MIT */
/* counters.c - the counters instrument: /proc/meminfo, each process's
 * /proc/PID/statm and CPU time, sampled by the collector over time. */
#include "instrument.h"

#include "collector.h"
#include "view.h"

static void record(struct collector_opts *o)
{
	if (!o->counters_ns)
		o->counters_ns = CYGPROF_COUNTERS_DEFAULT_NS;
}

/* A counter the collector sampled itself (not a memdump one). */
static int present(struct view *v)
{
	return instrument_has_counter(v, "memdump/", 0);
}

const struct instrument instrument_counters = {
	.name = "counters",
	.summary = "system and per-process memory and CPU time over time",
	.alias = "--counters",
	.views = "cygprof counters",
	.record = record,
	.present = present,
};
