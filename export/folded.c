/* SPDX-License-Identifier: MIT */
/* folded.c - cygprof export --format=folded (to be written). */
#include "export.h"

#include <errno.h>

#include "view.h"

static int write_folded(struct view *v, const struct export_opts *o, FILE *f)
{
	(void)v;
	(void)o;
	(void)f;
	return -ENOSYS;
}

const struct exporter export_folded = {
	.name = "folded",
	.summary = "(not written yet)",
	.readers = "",
	.write = write_folded,
};
