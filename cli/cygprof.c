/* SPDX-License-Identifier: MIT */
/* cygprof.c - the cygprof command: option-less dispatch to subcommands. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"

struct cygprof_cmd {
	const char *name;
	cli_cmd_fn fn;
	const char *summary;
};

static const struct cygprof_cmd cmds[] = {
	{"record", cmd_record, "run a program and record its exact profile into a capture"},
	{"report", cmd_report, "flat profile and call graph (gprof style), or JSON"},
	{"replay", cmd_replay, "the recorded timeline as an indented call trace"},
	{"info", cmd_info, "what a capture holds: command, processes, threads, sizes"},
	{"memory", cmd_memory, "the heap: allocations, peak, leaks, temporaries (record --memory)"},
	{"gprof", cmd_gprof, "GNU gprof output: gmon.out files for gprof, or its text layout"},
	{"annotate", cmd_annotate, "source lines with their calls, time, allocations and samples"},
	{"counters", cmd_counters, "counters over time: memory, CPU time, memdump reports"},
	{"import-perf", cmd_import_perf, "add the samples of a perf run made alongside (perf script)"},
	{"samples", cmd_samples, "perf samples one by one; --rr: the rr commands to reach each"},
	{"diff", cmd_diff, "compare two captures: calls and times per function and call path"},
	{"export", cmd_export, "the capture for Perfetto, flame graphs, KCachegrind, pprof, gprof"},
	{"top", cmd_top, "run a program and show its hottest functions as it runs"},
	{"receive", cmd_receive, "wait for one record --send and write the capture it streams"},
	{"html", cmd_html, "one self-contained HTML report: flame graphs, tables, plots"},
};

static void usage(FILE *f)
{
	size_t i;
	fprintf(f, "usage: cygprof <command> [options] [args]\n"
		   "       cygprof record [-o FILE] [options] [--] PROG [ARGS...]\n\n"
		   "Exact call counts and times for programs built with -finstrument-functions.\n\n"
		   "commands:\n");
	for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		fprintf(f, "  %-11s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\n'cygprof help <command>' or 'cygprof <command> --help' describes a command;\n"
		   "see also cygprof(1).\n");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "help") && argc > 2) {
		/* git's habit: 'cygprof help CMD' is 'cygprof CMD --help' */
		for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
			if (!strcmp(argv[2], cmds[i].name)) {
				char *hargv[] = { argv[2], "--help", NULL };
				return cmds[i].fn(2, hargv);
			}
		fprintf(stderr, "cygprof: help: unknown command '%s' (see 'cygprof --help')\n",
			argv[2]);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("cygprof %s\n", CYGPROF_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (!strcmp(argv[1], cmds[i].name)) {
			cli_check_env();
			return cmds[i].fn(argc - 1, argv + 1);
		}
	fprintf(stderr, "cygprof: unknown command '%s' (see 'cygprof --help')\n", argv[1]);
	return 2;
}
