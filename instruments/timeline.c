/* SPDX-License-Identifier: MIT */
/* timeline.c - the timeline instrument: every enter and exit with its time. */
#include "instrument.h"

#include "collector.h"
#include "view.h"

static void record(struct collector_opts *o)
{
	o->timeline = 1;
}

static int present(struct view *v)
{
	return view_mode_has(v, "timeline");
}

const struct instrument instrument_timeline = {
	.name = "timeline",
	.summary = "every function entry and exit with its time",
	.alias = "--timeline",
	.views = "cygprof replay",
	.record = record,
	.present = present,
};
