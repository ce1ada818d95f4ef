/* SPDX-License-Identifier: MIT */
/* callgrind.c - cygprof export --format=callgrind (to be written). */
#include "export.h"

#include <errno.h>

#include "view.h"

static int write_callgrind(struct view *v, const struct export_opts *o, FILE *f)
{
	(void)v;
	(void)o;
	(void)f;
	return -ENOSYS;
}

const struct exporter export_callgrind = {
	.name = "callgrind",
	.summary = "(not written yet)",
	.readers = "",
	.write = write_callgrind,
};
