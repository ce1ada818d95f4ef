/* SPDX-License-Identifier: MIT */
/* exporters.c - the table of formats (export.h). */
#include "export.h"

#include <stddef.h>
#include <string.h>

#include "view.h"

extern const struct exporter export_chrome, export_folded, export_callgrind, export_pprof,
	export_gmon, export_perfetto;

const struct exporter *const exporters[] = {
	&export_chrome,
	&export_folded,
	&export_callgrind,
	&export_pprof,
	&export_gmon,
	&export_perfetto,
	NULL,
};

const struct exporter *exporter_find(const char *name)
{
	for (size_t i = 0; exporters[i]; i++)
		if (!strcmp(exporters[i]->name, name))
			return exporters[i];
	return NULL;
}

void export_progress_start(struct export_progress *pg, const struct export_opts *o,
			   const char *unit, uint64_t total)
{
	pg->o = o;
	pg->unit = unit;
	pg->done = 0;
	pg->total = total;
	if (o->progress)
		o->progress(unit, 0, total, o->progress_arg);
}

void export_progress_to(struct export_progress *pg, uint64_t done)
{
	if (done > pg->done)
		pg->done = done;
	if (pg->o && pg->o->progress)
		pg->o->progress(pg->unit, pg->done, pg->total, pg->o->progress_arg);
}

void export_progress_add(struct export_progress *pg, uint64_t n)
{
	export_progress_to(pg, pg->done + n);
}

void export_progress_mem(uint64_t done, uint64_t total, void *arg)
{
	struct export_progress *pg = arg;

	pg->total = total;
	export_progress_to(pg, done);
}

/* The sum over the threads of the field of struct cygprof_thread at off. */
static uint64_t threads_sum(struct view *v, size_t off)
{
	const struct cygprof_thread *t;
	uint64_t n = 0, x;
	size_t nt, i;

	if (view_threads(v, &t, &nt))
		return 0;
	for (i = 0; i < nt; i++) {
		memcpy(&x, (const char *)&t[i] + off, sizeof x);
		n += x;
	}
	return n;
}

uint64_t export_timeline_events(struct view *v)
{
	return threads_sum(v, offsetof(struct cygprof_thread, events));
}

uint64_t export_tree_calls(struct view *v)
{
	return threads_sum(v, offsetof(struct cygprof_thread, calls));
}
