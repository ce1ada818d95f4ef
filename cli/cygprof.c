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
	int paged; /* text for a reader: through the pager on a terminal */
};

static const struct cygprof_cmd cmds[] = {
	{"record", cmd_record, "run a program and record its exact profile into a capture", 0},
	{"report", cmd_report, "flat profile and call graph (gprof style), or JSON", 1},
	{"replay", cmd_replay, "the recorded timeline as an indented call trace", 1},
	{"info", cmd_info, "what a capture holds: command, processes, threads, sizes", 1},
	{"memory", cmd_memory, "the heap: allocations, peak, leaks, temporaries (record --memory)", 1},
	{"gprof", cmd_gprof, "GNU gprof output: gmon.out files for gprof, or its text layout", 1},
	{"annotate", cmd_annotate, "source lines with their calls, time, allocations and samples", 1},
	{"counters", cmd_counters, "counters over time: memory, CPU time, memdump reports", 1},
	{"import-perf", cmd_import_perf, "add the samples of a perf run made alongside (perf script)", 0},
	{"samples", cmd_samples, "perf samples one by one; --rr: the rr commands to reach each", 1},
	{"diff", cmd_diff, "compare two captures: calls and times per function and call path", 1},
	{"export", cmd_export, "the capture for Perfetto, flame graphs, KCachegrind, pprof, gprof", 0},
	{"top", cmd_top, "run a program and show its hottest functions as it runs", 0},
	{"receive", cmd_receive, "wait for one record --send and write the capture it streams", 0},
	{"push", cmd_push, "send a capture's profile to a Pyroscope server (pprof over HTTP)", 0},
	{"html", cmd_html, "one self-contained HTML report: flame graphs, tables, plots", 0},
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
	fprintf(f, "\nOn a terminal, report, replay, info, memory, gprof, annotate, counters,\n"
		   "samples and diff page their output (CYGPROF_PAGER, PAGER or less -FRX);\n"
		   "'cygprof --no-pager <command>' does not.  On a terminal, shares of the\n"
		   "time are coloured (--color=auto|always|never; NO_COLOR).\n"
		   "\n'cygprof help <command>' or 'cygprof <command> --help' describes a command;\n"
		   "see also cygprof(1).\n");
}

/* -h/--help among the options: the help is not paged (git pages it as
 * man; ours is a screen). */
static int wants_help(int argc, char **argv)
{
	for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return 1;
	return 0;
}

/* --no-pager and --color[=WHEN] before the command (git's place) or among
 * its options (up to a "--"): taken out of argv.  Returns whether
 * --no-pager was there; *color the last WHEN ("auto" for a bare --color),
 * NULL without one. */
static int take_terminal_options(int *argc, char **argv, const char **color)
{
	int found = 0, j = 1;

	*color = NULL;
	for (int i = 1; i < *argc; i++) {
		if (!strcmp(argv[i], "--")) {
			while (i < *argc)
				argv[j++] = argv[i++];
			break;
		}
		if (!strcmp(argv[i], "--no-pager")) {
			found = 1;
			continue;
		}
		if (!strcmp(argv[i], "--color") || !strncmp(argv[i], "--color=", 8)) {
			*color = argv[i][7] ? argv[i] + 8 : "auto";
			continue;
		}
		argv[j++] = argv[i];
	}
	argv[j] = NULL;
	*argc = j;
	return found;
}

/* The edit distance (insertions, deletions, substitutions and swaps of
 * neighbours) between a and b, capped at 9: enough to rank near misses. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t d[32][32];

	if (la > 30 || lb > 30)
		return 9;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++)
		for (j = 1; j <= lb; j++) {
			size_t c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < c)
				c = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < c)
				c = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < c)
				c = d[i - 2][j - 2] + 1;
			d[i][j] = c;
		}
	return d[la][lb] < 9 ? d[la][lb] : 9;
}

/* "unknown command", with the nearest command names when a typo is likely
 * (at most 2 edits, and one per 3 letters at most: "foo" is no typo of
 * "top"): git's "did you mean". */
static int unknown_command(const char *what, const char *name)
{
	size_t i, best = 3, n = 0;
	const char *near[sizeof cmds / sizeof cmds[0]];

	for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		size_t d = edit_distance(name, cmds[i].name);
		if (d * 3 > strlen(name) || d > best)
			continue;
		if (d < best)
			n = 0;
		best = d;
		near[n++] = cmds[i].name;
	}
	if (!n || best > 2) {
		fprintf(stderr, "cygprof: %sunknown command '%s' (see 'cygprof --help')\n", what,
			name);
		return 2;
	}
	fprintf(stderr, "cygprof: %sunknown command '%s': did you mean ", what, name);
	for (i = 0; i < n; i++)
		fprintf(stderr, "%s%s", i ? (i + 1 == n ? " or " : ", ") : "", near[i]);
	fprintf(stderr, "?\n");
	return 2;
}

int main(int argc, char **argv)
{
	size_t i;
	const char *color;
	int no_pager = take_terminal_options(&argc, argv, &color);

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
		return unknown_command("help: ", argv[2]);
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
			/* decided on the terminal, before a pager takes stdout */
			cli_color = cli_color_decide(color);
			if (cli_color < 0) {
				fprintf(stderr, "cygprof: --color=%s: not auto, always or never\n",
					color);
				return 2;
			}
			if (cmds[i].paged && !no_pager && !wants_help(argc, argv))
				cli_pager_start();
			return cmds[i].fn(argc - 1, argv + 1);
		}
	return unknown_command("", argv[1]);
}
