/* SPDX-License-Identifier: MIT */
/* memory.c - the memory instrument: every malloc-family call and C++
 * new/delete with its call stack (libcygprof-mem.so). */
#include "instrument.h"

#include "collector.h"
#include "view.h"

static void record(struct collector_opts *o)
{
	o->memory = 1;
}

static int present(struct view *v)
{
	return view_mode_has(v, "memory");
}

const struct instrument instrument_memory = {
	.name = "memory",
	.summary = "every allocation and free with its call stack",
	.alias = "--memory",
	.views = "cygprof memory, annotate, counters (heap/*)",
	.record = record,
	.present = present,
};
