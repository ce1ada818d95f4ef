/* SPDX-License-Identifier: MIT */
/* pprof.c - cygprof export --format=pprof (to be written). */
#include "export.h"

#include <errno.h>

#include "view.h"

static int write_pprof(struct view *v, const struct export_opts *o, FILE *f)
{
	(void)v;
	(void)o;
	(void)f;
	return -ENOSYS;
}

const struct exporter export_pprof = {
	.name = "pprof",
	.summary = "(not written yet)",
	.readers = "",
	.write = write_pprof,
};
