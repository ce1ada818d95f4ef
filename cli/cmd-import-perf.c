/* SPDX-License-Identifier: MIT */
/* cmd-import-perf.c - `cygprof import-perf`: add the samples of a separate
 * `perf record -k CLOCK_MONOTONIC -g` run, read from `perf script` on
 * standard input, to a capture of the same run.
 *
 * The whole input is parsed first (a bad line: one error naming it, exit 1,
 * nothing written); then the capture is reopened with
 * cygprof_capture_open_rw(), which writes a copy and renames it over the
 * capture at close, so that a failure never damages the capture.  The
 * steps are analysis/import-perf.h's; this file names their errors and
 * prints the summary. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "import-perf.h"
#include "view.h"

#define CMD "import-perf"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof import-perf [options] [FILE] < PERF-SCRIPT-OUTPUT\n"
		"\n"
		"Add to the capture FILE (default " CYGPROF_DEFAULT_CAPTURE ") the samples of a\n"
		"perf run made alongside its recording, read from the output of 'perf script'\n"
		"on standard input:\n"
		"\n"
		"  perf record -k CLOCK_MONOTONIC -g -o perf.data -- cygprof record -o FILE -- PROG\n"
		"  perf script -i perf.data | cygprof import-perf FILE\n"
		"\n"
		"Samples are placed on the capture's clock by its clock pairing and kept when\n"
		"they fall within the recording and belong to a recorded process; each is\n"
		"matched to the recorded thread by its thread id and time.  cpu-clock and\n"
		"task-clock samples weigh their period in ns; other events count samples.\n"
		"The capture is replaced only when everything was read and written.\n"
		"\n"
		"options:\n"
		"  -h, --help       this help\n");
}

/* ---- the command ------------------------------------------------------------ */

/* Die with what an error of the import means: in, the text (given while
 * reading and placing it), names the line of a bad one and its errors of
 * memory; anything else is the capture's, for file. */
static void check(int err, const char *file, const struct perf_script *in)
{
	if (!err)
		return;
	if (err == IMPORT_E_NO_CLOCK)
		cli_die(1, "%s: capture has no clock pairing; record it with this cygprof", file);
	if (err == IMPORT_E_IMPORTED)
		cli_die(1, "%s: already holds imported perf samples", file);
	if (in) {
		if (err == IMPORT_E_LINE)
			cli_die(1, "%s: standard input, line %zu: %s", CMD, in->err_line,
				in->err_what);
		if (err == IMPORT_E_NO_SAMPLES)
			cli_die(1, "%s: standard input holds no samples (the output of 'perf "
				"script'?)", CMD);
		if (err == -EIO)
			cli_die(1, "%s: error reading standard input", CMD);
		if (err == -ENOMEM)
			cli_die(1, "%s: out of memory", CMD);
		if (err == -EOVERFLOW)
			cli_die(1, "%s: too many stack nodes", CMD);
	}
	cli_check(err, file);
}

int cmd_import_perf(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_getopt g = {.cmd = CMD, .usage = usage, .shortopts = ":h", .longopts = lopts};
	struct import_target t;
	struct import_perf *imp;
	struct import_counts n;
	struct perf_script in;
	struct view *v;
	const char *file;
	int err;

	while (cli_next_option(&g, argc, argv) != -1)
		;
	file = cli_capture_arg(CMD, argc, argv);
	if (cli_probe_capture(file) != 1)
		cli_die(1, "%s: not a capture (or a symbolic link to one)", file);
	/* the view stays open until the end: the copy renamed over the file
	 * leaves it reading the old one */
	v = cli_open_view(file, NULL);
	check(import_target_load(v, &t), file, NULL);
	err = perf_script_read(stdin, &in);
	check(err, file, &in);
	check(import_perf_open(file, &imp), file, NULL);
	err = import_perf_place(imp, &t, &in, &n);
	if (err) {
		import_perf_discard(imp);
		check(err, file, &in);
	}
	check(import_perf_commit(imp), file, NULL);
	printf("%s: imported %zu of %zu samples (%zu stack nodes); skipped %zu outside the "
	       "recording's time, %zu of processes it did not record\n",
	       file, n.imported, n.samples, n.stack_nodes, n.outside, n.foreign);
	if (fflush(stdout) || ferror(stdout))
		cli_die(1, "write error on standard output");
	perf_script_free(&in);
	view_close(v);
	return 0;
}
