/* SPDX-License-Identifier: MIT */
/* json.c - the processes and threads JSON of report and info on standard
 * output (analysis/view-json.c writes it), dying when the capture cannot
 * be read.  JSON strings, numbers and changes are common/json.h's. */
#include "config.h"

#include <stdio.h>

#include "cli.h"
#include "view.h"

void cli_json_procs(struct view *v, const char *file)
{
	cli_check(view_json_procs(v, stdout), file);
}

void cli_json_threads(struct view *v, const char *file, int totals)
{
	cli_check(view_json_threads(v, stdout, totals), file);
}
