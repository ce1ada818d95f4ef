/* SPDX-License-Identifier: MIT */
/* cmd-export.c - cygprof export: a capture in the formats other tools read
 * (export/export.h: one file per format, written by cli_export()). */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "debuginfo.h"
#include "export.h"
#include "progress.h"
#include "view.h"

#define CMD "export"

struct export_cli {
	const struct exporter *fmt;
	const char *out;
	int force, no_progress;
	struct export_opts o;
	struct debuginfo *di;
	struct cli_filter filt;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof export --format FMT [-o FILE] [options] [CAPTURE]\n"
		"\n"
		"Write a capture (CAPTURE defaults to " CYGPROF_DEFAULT_CAPTURE ") in a format other\n"
		"tools read, to FILE or standard output.  Only an earlier output of the same\n"
		"format is replaced (never a symbolic link's target); -f replaces any regular\n"
		"file.\n"
		"\n"
		"formats:\n");
	for (size_t i = 0; exporters[i]; i++)
		fprintf(f, "  %-10s %s\n", exporters[i]->name, exporters[i]->summary);
	fprintf(f,
		"\n"
		"options:\n"
		"  --format FMT           the format (required)\n"
		"  -o, --output FILE      write FILE instead of standard output (- is\n"
		"                         standard output)\n"
		"  -f, --force            also replace a regular file or symbolic link that is\n"
		"                         not an earlier output of FMT; chrome, perfetto: write\n"
		"                         a trace past what its viewers open (~500 MB of JSON\n"
		"                         for chrome://tracing, ~2 GB for Perfetto's UI)\n"
		"  --weight KEY           folded, pprof: what stacks weigh: self (exact self\n"
		"                         time, the default), calls, samples (perf samples)\n"
		"  --memory KEY           folded, pprof: weigh allocation stacks instead:\n"
		"                         allocated, leaked or peak bytes (record --memory)\n"
		"  --allocations          chrome: each allocation and free as an instant event\n"
		CLI_PROGRESS_HELP CLI_FILTER_HELP CLI_TIME_HELP CLI_DEBUG_HELP
		"  -h, --help             this help\n");
}

static enum export_weight parse_weight(const char *opt, const char *s, int memory)
{
	static const struct {
		const char *name;
		enum export_weight w;
		int memory;
	} keys[] = {
		{"self", EXPORT_W_SELF, 0},          {"calls", EXPORT_W_CALLS, 0},
		{"samples", EXPORT_W_SAMPLES, 0},    {"allocated", EXPORT_W_ALLOCATED, 1},
		{"leaked", EXPORT_W_LEAKED, 1},      {"peak", EXPORT_W_PEAK, 1},
	};

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (keys[i].memory == memory && !strcmp(keys[i].name, s))
			return keys[i].w;
	cli_die(2, "%s: unknown %s key '%s' (%s)", CMD, opt, s,
		memory ? "allocated, leaked, peak" : "self, calls, samples");
}

static void parse_opts(int argc, char **argv, struct export_cli *e)
{
	enum { O_FORMAT = 256, O_WEIGHT, O_MEMORY, O_ALLOCATIONS, O_NO_PROGRESS };
	static const struct option lopts[] = {
		{"format", required_argument, NULL, O_FORMAT},
		{"output", required_argument, NULL, 'o'},
		{"force", no_argument, NULL, 'f'},
		{"weight", required_argument, NULL, O_WEIGHT},
		{"memory", required_argument, NULL, O_MEMORY},
		{"allocations", no_argument, NULL, O_ALLOCATIONS},
		{"no-progress", no_argument, NULL, O_NO_PROGRESS},
		CLI_DEBUG_OPTIONS,
		CLI_TIME_OPTIONS,
		CLI_FILTER_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_getopt g = {.cmd = CMD, .usage = usage, .shortopts = ":ho:fF:N:D:",
			       .longopts = lopts};
	const char *format = NULL;
	int c;

	memset(e, 0, sizeof *e);
	g.di = e->di = cli_debuginfo_new();
	g.filt = &e->filt;
	while ((c = cli_next_option(&g, argc, argv)) != -1) {
		switch (c) {
		case O_FORMAT:
			format = optarg;
			break;
		case 'o':
			if (!*optarg)
				cli_die(2, "%s: --output needs a file name", CMD);
			e->out = optarg;
			break;
		case 'f':
			e->force = 1;
			break;
		case O_WEIGHT:
			e->o.weight = parse_weight("--weight", optarg, 0);
			break;
		case O_MEMORY:
			e->o.weight = parse_weight("--memory", optarg, 1);
			break;
		case O_ALLOCATIONS:
			e->o.allocations = 1;
			break;
		case O_NO_PROGRESS:
			e->no_progress = 1;
			break;
		}
	}
	if (!format)
		cli_die(2, "%s: no format given (--format chrome, folded, callgrind, pprof, gmon or perfetto)",
			CMD);
	if (!(e->fmt = exporter_find(format)))
		cli_die(2, "%s: unknown format '%s' (chrome, folded, callgrind, pprof, gmon, perfetto)", CMD,
			format);
	/* "-" is standard output, as elsewhere: never a file named "-" */
	if (e->out && !strcmp(e->out, "-")) {
		if (e->fmt->write_files)
			cli_die(2, "%s: --format=%s writes files (one per process): -o - cannot "
				"be standard output", CMD, e->fmt->name);
		e->out = NULL;
	}
	e->o.file = cli_capture_arg(CMD, argc, argv);
	cli_debuginfo_env(e->di);
}

/* What a viewer opens: chrome://tracing about 500 MB of JSON, Perfetto's
 * UI about 2 GB of trace.  Bytes per timeline event as the exporters write
 * them (bench/RESULTS.md: chrome 47.3, perfetto 12.0), a little over. */
#define VIEWER_CHROME_MAX ((uint64_t)500 << 20)
#define VIEWER_PERFETTO_MAX ((uint64_t)2 << 30)

/* The timeline events an export under -F, -N or -D keeps: per thread, its
 * stored events in the ratio of the calls its filtered tree keeps to the
 * calls it made (events are the calls' enters and exits).  UINT64_MAX when
 * a tree cannot be read: the export says what is wrong. */
static uint64_t filtered_events(struct view *v)
{
	const struct cygprof_thread *t;
	const struct view_tree *tr;
	uint64_t sum = 0;
	size_t nt, i, k;

	if (view_threads(v, &t, &nt))
		return UINT64_MAX;
	for (i = 0; i < nt; i++) {
		uint64_t kept = 0;

		if (!t[i].events || !t[i].calls)
			continue;
		if (view_tree(v, t[i].idx, &tr))
			return UINT64_MAX;
		for (k = 1; k < tr->n; k++)
			kept += tr->nodes[k].calls;
		if (kept >= t[i].calls)
			sum += t[i].events;
		else
			sum += (uint64_t)((double)t[i].events * (double)kept / (double)t[i].calls +
					  0.5);
	}
	return sum;
}

/* Refuse, in one line, a trace bigger than its viewer opens (estimated
 * from the timeline's events, the part -F, -N, -D and a --time-range
 * keep), unless -f. */
static void check_viewer_size(struct export_cli *e, struct view *v)
{
	const struct view_filter *f = &e->filt.vf;
	uint64_t events, max, est, dur;
	int chrome = !strcmp(e->fmt->name, "chrome");
	char why[512], what[64], count[32];
	double per;

	if (e->force || (!chrome && strcmp(e->fmt->name, "perfetto")))
		return;
	/* 0 when the threads cannot be read: the export says what is wrong */
	events = export_timeline_events(v);
	per = chrome ? 48.0 : 12.5;
	max = chrome ? VIEWER_CHROME_MAX : VIEWER_PERFETTO_MAX;
	est = (uint64_t)((double)events * per);
	dur = view_duration_ns(v);
	if (est > max && (f->nfilter || f->nnotrace || f->depth)) {
		/* what the filter keeps, read from the filtered trees (with a
		 * time range too: the trees keep the calls in it) */
		uint64_t kept = filtered_events(v);

		if (kept != UINT64_MAX) {
			events = kept;
			est = (uint64_t)((double)events * per);
		}
	} else if (f->has_range && dur && f->t1 > f->t0) {
		uint64_t t1 = f->t1 < dur ? f->t1 : dur, t0 = f->t0 < t1 ? f->t0 : t1;

		est = (uint64_t)((double)est * (double)(t1 - t0) / (double)dur);
	}
	if (est <= max)
		return;
	snprintf(what, sizeof what, "a %s trace", e->fmt->name);
	snprintf(count, sizeof count, "%" PRIu64 " events", events);
	cli_size_refusal(why, sizeof why, CMD, e->o.file, what, est, count,
			 chrome ? "the ~500 MB viewers open (chrome://tracing; Perfetto's UI ~2 GB)"
				: "the ~2 GB viewers open (Perfetto's UI)",
			 chrome ? "narrow it with --time-range or -F, or use --format=perfetto "
				  "(about 4x smaller)"
				: "narrow it with --time-range or -F");
	view_close(v);
	debuginfo_free(e->di);
	cli_die(1, "%s", why);
}

int cmd_export(int argc, char **argv)
{
	struct export_cli e;
	struct cli_progress pg;
	struct view *v;
	int to_stdout;

	parse_opts(argc, argv, &e);
	to_stdout = !e.out && !e.fmt->write_files;
	if (e.out)
		cli_output_check(CMD, e.out, e.fmt->out_kind, e.force, NULL);
	else if (to_stdout && e.fmt->binary && isatty(STDOUT_FILENO))
		cli_die(2, "%s: %s output is binary: give -o FILE or redirect standard output", CMD,
			e.fmt->name);
	/* not over the output itself when that goes to the terminal */
	cli_progress_init(&pg, CMD, "events",
			  !e.no_progress && !(to_stdout && isatty(STDOUT_FILENO)));
	e.o.progress = cli_progress_unit_fn;
	e.o.progress_arg = &pg;
	v = cli_open_view(e.o.file, e.di);
	cli_filter_apply(&e.filt, v, CMD, e.o.file);
	if (e.o.weight == EXPORT_W_ALLOCATED || e.o.weight == EXPORT_W_LEAKED ||
	    e.o.weight == EXPORT_W_PEAK)
		cli_need(v, e.o.file, "memory", "memory events");
	else if (e.o.weight == EXPORT_W_SAMPLES)
		cli_need(v, e.o.file, "sampling", "samples");
	e.o.file = e.o.file ? e.o.file : CYGPROF_DEFAULT_CAPTURE;
	check_viewer_size(&e, v);
	/* gmon's files are named in messages as gprof --gmon-out names them */
	cli_export(v, e.fmt, &e.o, e.out, e.force, e.fmt->write_files ? "gprof" : CMD);
	cli_progress_end(&pg);
	debuginfo_free(e.di);
	return cli_finish(v);
}
