/* SPDX-License-Identifier: MIT */
/* calls.c - the calls instrument: exact counts and times per call path,
 * recorded always (the hooks of -finstrument-functions). */
#include "instrument.h"

#include "collector.h"
#include "view.h"

static void record(struct collector_opts *o)
{
	(void)o; /* always on */
}

/* A thread with a call tree. */
static int present(struct view *v)
{
	const struct cygprof_thread *t;
	const struct view_tree *tree;
	size_t n;

	if (view_threads(v, &t, &n))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!view_tree(v, t[i].idx, &tree) && tree->n > 1)
			return 1;
	return 0;
}

const struct instrument instrument_calls = {
	.name = "calls",
	.summary = "exact calls and times per function and call path (always on)",
	.alias = NULL,
	.views = "cygprof report, gprof, annotate",
	.record = record,
	.present = present,
};
