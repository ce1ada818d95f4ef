/* SPDX-License-Identifier: MIT */
/* cmd-gprof.c - cygprof gprof: GNU gmon.out files for `gprof PROG gmon.out`
 * (histogram of perf samples, or of exact self times without: the gmon
 * format of export/, export/gmon.c), or the exact profile printed in
 * gprof's own text layout. */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "debuginfo.h"
#include "export.h"
#include "profile.h"
#include "report-print.h"

struct gprof_opts {
	const char *gmon_out;
	int brief, force;
	const char *file;
	struct debuginfo *di;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof gprof [--gmon-out FILE [-f]] [-b] [CAPTURE]\n"
		"\n"
		"GNU gprof output from a capture (CAPTURE defaults to " CYGPROF_DEFAULT_CAPTURE ").\n"
		"\n"
		"Without --gmon-out, print the exact flat profile and call graph in gprof's\n"
		"own text layout (for tools that parse gprof output, e.g. gprof2dot).\n"
		"With --gmon-out FILE, write gmon.out files for 'gprof PROG FILE': one per\n"
		"recorded executable, FILE for the first and FILE.PID for the others.  Only\n"
		"an earlier gmon.out file there is replaced (a symbolic link is never\n"
		"followed).  The time histogram holds the capture's perf samples (record\n"
		"--sample, import-perf) when it has any, else the exact self times.\n"
		"\n"
		"options:\n"
		"  --gmon-out FILE  write gmon.out file(s) instead of printing\n"
		"  -f, --force      also replace regular files and symbolic links that are not\n"
		"                   gmon.out files (never a directory, FIFO or device)\n"
		"  -b, --brief      no explanations after the tables (as gprof -b)\n"
		CLI_TIME_HELP CLI_DEBUG_HELP
		"  -h, --help       this help\n");
}

static void parse_opts(int argc, char **argv, struct gprof_opts *o)
{
	enum { O_GMON_OUT = 256 };
	static const struct option lopts[] = {
		{"gmon-out", required_argument, NULL, O_GMON_OUT},
		{"brief", no_argument, NULL, 'b'},
		{"force", no_argument, NULL, 'f'},
		CLI_DEBUG_OPTIONS,
		CLI_TIME_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_getopt g = {.cmd = "gprof", .usage = usage, .shortopts = ":hbf",
			       .longopts = lopts};
	int c;

	memset(o, 0, sizeof(*o));
	g.di = o->di = cli_debuginfo_new();
	while ((c = cli_next_option(&g, argc, argv)) != -1) {
		switch (c) {
		case 'b':
			o->brief = 1;
			break;
		case 'f':
			o->force = 1;
			break;
		case O_GMON_OUT:
			if (!optarg[0])
				cli_die(2, "gprof: --gmon-out needs a file name");
			o->gmon_out = optarg;
			break;
		}
	}
	o->file = cli_capture_arg("gprof", argc, argv);
	cli_debuginfo_env(o->di);
}

static void print_text(struct view *v, const char *file, int brief)
{
	struct print_opts po = {.style = STYLE_GPROF, .brief = brief, .sort = SORT_SELF};
	struct profile *p = NULL;

	cli_check(profile_load(v, NULL, 0, &p), file);
	print_flat(p, &po);
	print_graph(p, &po);
	profile_free(p);
}

int cmd_gprof(int argc, char **argv)
{
	struct gprof_opts o;
	struct view *v;

	parse_opts(argc, argv, &o);
	v = cli_open_view(o.file, o.di);
	if (o.gmon_out) {
		struct export_opts eo = {.file = o.file};

		cli_export(v, exporter_find("gmon"), &eo, o.gmon_out, o.force, "gprof");
	} else
		print_text(v, o.file, o.brief);
	cli_finish(v);
	debuginfo_free(o.di);
	return 0;
}
