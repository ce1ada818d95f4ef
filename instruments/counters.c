/* SPDX-License-Identifier: MIT */
/* counters.c - the counters instrument: /proc/meminfo, each process's
 * /proc/PID/statm and CPU time, sampled by the collector over time. */
#include "instrument.h"

#include <string.h>

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
	const struct cygprof_counter *c;
	size_t n;

	if (view_counters(v, &c, &n))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(c[i].name, "memdump/", 8))
			return 1;
	return 0;
}

const struct instrument instrument_counters = {
	.name = "counters",
	.summary = "system and per-process memory and CPU time over time",
	.alias = "--counters",
	.views = "cygprof counters",
	.record = record,
	.present = present,
};
