/* SPDX-License-Identifier: MIT */
/* cygprof-annotate.c - the cygprof-annotate command: the same as
 * 'cygprof annotate' (cmd-annotate.c). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("cygprof-annotate %s\n", CYGPROF_VERSION);
		return 0;
	}
	cli_check_env();
	return cmd_annotate(argc, argv);
}
