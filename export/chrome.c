/* SPDX-License-Identifier: MIT */
/* chrome.c - cygprof export --format=chrome (to be written). */
#include "export.h"

#include <errno.h>

#include "view.h"

static int write_chrome(struct view *v, const struct export_opts *o, FILE *f)
{
	(void)v;
	(void)o;
	(void)f;
	return -ENOSYS;
}

const struct exporter export_chrome = {
	.name = "chrome",
	.summary = "(not written yet)",
	.readers = "",
	.write = write_chrome,
};
