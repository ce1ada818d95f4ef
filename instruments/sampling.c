/* SPDX-License-Identifier: MIT */
/* sampling.c - the sampling instrument: perf samples of where the program
 * runs, with user call chains, and when each thread is off CPU (collector
 * sampling.c), on the capture's clock. */
#include "instrument.h"

#include "collector.h"
#include "view.h"

static void record(struct collector_opts *o)
{
	if (!o->sample_hz)
		o->sample_hz = 999;
}

/* Samples or off-CPU intervals, recorded or imported (import-perf). */
static int present(struct view *v)
{
	const struct cygprof_psample *s;
	const struct cygprof_offcpu *o;
	size_t ns = 0, no = 0;

	view_psamples(v, &s, &ns);
	view_offcpu(v, &o, &no);
	return ns || no;
}

const struct instrument instrument_sampling = {
	.name = "sampling",
	.summary = "perf samples with call chains, and off-CPU time",
	.alias = "--sample",
	.views = "cygprof report, cygprof samples, cygprof-annotate, cygprof gprof",
	.record = record,
	.present = present,
};
