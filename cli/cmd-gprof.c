/* SPDX-License-Identifier: MIT */
/* cmd-gprof.c - cygprof gprof: GNU gmon.out files for `gprof PROG gmon.out`
 * (histogram of perf samples, or of exact self times without), or the exact
 * profile printed in gprof's own text layout. */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "debuginfo.h"
#include "gmon-export.h"
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
		CLI_DEBUG_HELP
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
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->di = cli_debuginfo_new();
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hbf", lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
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
		case CLI_O_DEBUG_DIR:
		case CLI_O_SYMFS:
			cli_debug_option(o->di, "gprof", c, optarg);
			break;
		default:
			cli_bad_option("gprof", c, argv);
		}
	}
	o->file = cli_capture_arg("gprof", argc, argv);
	cli_debuginfo_env(o->di);
}

void cli_write_gmon(struct view *view, const char *file, const char *out, int force)
{
	struct gmon_image *v = NULL;
	size_t n = 0, k = 0, i;
	int err;

	cli_check(gmon_collect(view, &v, &n), file);
	/* only executables with something recorded get a file */
	for (i = 0; i < n; i++) {
		if (v[i].nfns || v[i].narcs || v[i].npcs) {
			struct gmon_image t = v[k];

			v[k++] = v[i];
			v[i] = t;
		} else {
			cli_warn("no function of %s recorded (%zu process%s): no file written",
				 v[i].exe, v[i].nprocs, v[i].nprocs == 1 ? "" : "es");
		}
	}
	if (!k)
		cli_die(1, "%s: no function of any executable recorded", file);
	/* every target is checked before any file is written */
	for (i = 0; i < k; i++) {
		char *name = NULL;

		if (gmon_file_name(out, v, i, &name))
			cli_die(1, "out of memory");
		cli_output_check("gprof", name, OUT_GMON, force, NULL);
		free(name);
	}
	for (i = 0; i < k; i++) {
		struct cli_output w;
		struct gmon_hist h;
		char *name = NULL;
		FILE *f;

		err = gmon_file_name(out, v, i, &name);
		if (!err)
			err = gmon_image_hist(&v[i], &h);
		cli_check(err, name ? name : out);
		f = cli_output_open(&w, "gprof", name, OUT_GMON, force);
		err = gmon_write_file(f, &h, v[i].arcs, v[i].narcs);
		gmon_hist_free(&h);
		if (err) {
			cli_output_abort(&w);
			cli_die(1, "gprof: %s: %s", name, cygprof_strerror(err));
		}
		cli_output_commit(&w);
		printf("cygprof: wrote %s for %s (%zu process%s", name, v[i].exe, v[i].nprocs,
		       v[i].nprocs == 1 ? "" : "es");
		if (v[i].sampled)
			printf("; histogram of %" PRIu64 " sample%s at %" PRIu32 " Hz", v[i].samples,
			       v[i].samples == 1 ? "" : "s", v[i].sample_rate);
		printf(")\n");
		free(name);
	}
	gmon_images_free(v, n);
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
	if (o.gmon_out)
		cli_write_gmon(v, o.file, o.gmon_out, o.force);
	else
		print_text(v, o.file, o.brief);
	cli_finish(v);
	debuginfo_free(o.di);
	return 0;
}
