/* SPDX-License-Identifier: MIT */
/* memdump.c - the memdump instrument: the byte totals and deltas a program
 * reports through <cygprof/memdump.h>, sampled by the collector. */
#include "instrument.h"

#include <string.h>

#include "collector.h"
#include "view.h"

static void record(struct collector_opts *o)
{
	o->memdump = 1;
}

/* Recorded with it (meta "instruments"), or a memdump counter. */
static int present(struct view *v)
{
	const char *rec = view_meta_str(v, "instruments");

	return (rec && strstr(rec, "memdump")) || instrument_has_counter(v, "memdump/", 1);
}

const struct instrument instrument_memdump = {
	.name = "memdump",
	.summary = "byte totals and deltas the program reports (<cygprof/memdump.h>)",
	.alias = "--memdump",
	.views = "cygprof counters (memdump/*)",
	.record = record,
	.present = present,
};
