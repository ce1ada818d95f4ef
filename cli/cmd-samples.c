/* SPDX-License-Identifier: MIT */
/* cmd-samples.c - `cygprof samples`: a capture's perf samples one by one
 * (record --sample, import-perf), and with --rr the rr commands that reach
 * each one in an rr recording of the same run (record --rr-ticks). */
#include "config.h"

#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "debuginfo.h"
#include "json.h"
#include "psamples.h"
#include "view.h"
#include "textesc.h"

#define CMD "samples"
#define NO_TICKS UINT64_MAX

struct samples_opts {
	int json, rr;
	int has_tid, has_pid;
	uint32_t tid, pid;
	const char *function;
	uint64_t t0, t1; /* ns from the capture start, inclusive */
	uint64_t limit;  /* 0: all */
	unsigned depth;  /* frames shown in the text */
	const char *file;
	struct debuginfo *di;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof samples [options] [FILE]\n"
		"\n"
		"The perf samples of a capture (FILE defaults to " CYGPROF_DEFAULT_CAPTURE "),\n"
		"recorded with 'record --sample' or added by 'import-perf', one a line in\n"
		"time order: index, time from the capture start, process, thread, the CPU\n"
		"time it stands for, flags (k: in the kernel, i: imported, o: profiler\n"
		"overhead, in cygprof's runtime, whose frames are left out) and the innermost\n"
		"frames of its call chain.\n"
		"\n"
		"options:\n"
		"  --rr                   for each sample, its rr tick count (record\n"
		"                         --rr-ticks) and the rr commands that reach it in an\n"
		"                         rr recording of the same run and open a debugger\n"
		"                         there\n"
		"  --tid TID              only the samples of thread TID\n"
		"  --pid PID              only the samples of process PID\n"
		"  --function PATTERN     only samples with a frame whose function matches\n"
		"                         PATTERN (a glob)\n"
		"  --time-range START,END only samples from START to END (durations from the\n"
		"                         capture start, s when no unit is given; either may\n"
		"                         be empty)\n"
		"  --limit N              at most N samples (the first ones chosen)\n"
		"  --depth N              frames shown per sample in the text (default 4)\n"
		"  --format FMT           text (default) or json (every frame)\n" CLI_DEBUG_HELP
		"  -h, --help             this help\n");
}

static void parse_range(struct samples_opts *o, const char *arg)
{
	const char *comma = strchr(arg, ',');
	char start[64];
	size_t n;

	if (!comma || (size_t)(comma - arg) >= sizeof start)
		cli_die(2, CMD ": bad --time-range value '%s' (START,END)", arg);
	n = (size_t)(comma - arg);
	memcpy(start, arg, n);
	start[n] = 0;
	o->t0 = n ? cli_parse_duration(CMD, "--time-range", start, "s", UINT64_MAX / 2) : 0;
	o->t1 = comma[1] ? cli_parse_duration(CMD, "--time-range", comma + 1, "s", UINT64_MAX / 2)
			 : UINT64_MAX;
	if (o->t1 < o->t0)
		cli_die(2, CMD ": bad --time-range value '%s' (END before START)", arg);
}

static void parse_opts(int argc, char **argv, struct samples_opts *o)
{
	enum { O_RR = 256, O_TID, O_PID, O_FUNCTION, O_RANGE, O_LIMIT, O_DEPTH, O_FORMAT };
	static const struct option lopts[] = {
		{"rr", no_argument, NULL, O_RR},
		{"tid", required_argument, NULL, O_TID},
		{"pid", required_argument, NULL, O_PID},
		{"function", required_argument, NULL, O_FUNCTION},
		{"time-range", required_argument, NULL, O_RANGE},
		{"limit", required_argument, NULL, O_LIMIT},
		{"depth", required_argument, NULL, O_DEPTH},
		{"format", required_argument, NULL, O_FORMAT},
		{"help", no_argument, NULL, 'h'},
		CLI_DEBUG_OPTIONS,
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof *o);
	o->t1 = UINT64_MAX;
	o->depth = 4;
	o->di = cli_debuginfo_new();
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case O_RR:
			o->rr = 1;
			break;
		case O_TID:
			o->has_tid = 1;
			o->tid = (uint32_t)cli_parse_uint(CMD, "--tid", optarg, 1, UINT32_MAX);
			break;
		case O_PID:
			o->has_pid = 1;
			o->pid = (uint32_t)cli_parse_uint(CMD, "--pid", optarg, 1, UINT32_MAX);
			break;
		case O_FUNCTION:
			if (!*optarg)
				cli_die(2, CMD ": --function needs a pattern");
			o->function = optarg;
			break;
		case O_RANGE:
			parse_range(o, optarg);
			break;
		case O_LIMIT:
			o->limit = cli_parse_uint(CMD, "--limit", optarg, 1, UINT64_MAX);
			break;
		case O_DEPTH:
			o->depth = (unsigned)cli_parse_uint(CMD, "--depth", optarg, 1, 1000);
			break;
		case O_FORMAT:
			o->json = cli_format_json(CMD, optarg);
			break;
		case CLI_O_DEBUG_DIR:
		case CLI_O_SYMFS:
			cli_debug_option(o->di, CMD, c, optarg);
			break;
		default:
			cli_bad_option(CMD, c, argv);
		}
	}
	cli_debuginfo_env(o->di);
	o->file = cli_capture_arg(CMD, argc, argv);
}

/* ---- one sample ----------------------------------------------------------------- */

struct shown {
	const struct cygprof_psample *s;
	size_t index;
	struct view_frame *f;
	size_t nf;
	char thread[16];
	int overhead;   /* in cygprof's runtime (psamp_stack()): f are its callers */
	int execd;      /* its process exec'd (rr replay -p), else only forked (-f) */
};

/* --tid, --pid and --time-range, from the sample alone. */
static int chosen_by_sample(const struct samples_opts *o, const struct cygprof_psample *s)
{
	if (o->has_tid && s->tid != o->tid)
		return 0;
	if (o->has_pid && s->pid != o->pid)
		return 0;
	return s->t_ns >= o->t0 && s->t_ns <= o->t1;
}

/* --function: a frame matches. */
static int chosen_by_frames(const struct samples_opts *o, const struct shown *x)
{
	if (!o->function)
		return 1;
	for (size_t i = 0; i < x->nf; i++)
		if (x->f[i].name && !fnmatch(o->function, x->f[i].name, 0))
			return 1;
	return 0;
}

static const char *flags_str(uint32_t fl, int overhead, char buf[5])
{
	char *p = buf;

	if (fl & CYGPROF_SAMPLE_KERNEL)
		*p++ = 'k';
	if (fl & CYGPROF_SAMPLE_IMPORTED)
		*p++ = 'i';
	if (overhead)
		*p++ = 'o';
	if (p == buf)
		*p++ = '-';
	*p = 0;
	return buf;
}

static void print_frames(const struct shown *x, unsigned depth)
{
	size_t n = x->nf < depth ? x->nf : depth;

	if (x->overhead)
		fputs(x->nf ? "[profiler overhead] <- " : "[profiler overhead]", stdout);
	else if (!x->nf) {
		fputs("(no stack)", stdout);
		return;
	}
	for (size_t i = 0; i < n; i++)
		printf("%s%s", i ? " <- " : "", text_esc(x->f[i].name));
	if (x->nf > n)
		fputs(" <- ...", stdout);
}

/* The innermost frame named by a symbol (not "0x..." or "object+0x..."),
 * or NULL. */
static const char *named_frame(const struct shown *x)
{
	for (size_t i = 0; i < x->nf; i++)
		if (x->f[i].name && strncmp(x->f[i].name, "0x", 2) && !strstr(x->f[i].name, "+0x"))
			return x->f[i].name;
	return NULL;
}

/* What reaches the sample in `rr replay`: a debugger in its process, in its
 * thread, then seek-ticks (rr's ticks count per thread, from its clone or
 * its process's last exec).  lines[] get the commands, one each. */
static size_t rr_commands(const struct shown *x, char lines[5][160])
{
	const struct cygprof_psample *s = x->s;
	const char *fn = named_frame(x);
	size_t n = 0;

	/* -p: a debugger once the process has exec'd (the program cygprof
	 * started, or a child that exec'd); -f: once it has been forked */
	snprintf(lines[n++], 160, "rr replay %s %u", x->execd ? "-p" : "-f", s->pid);
	if (s->tid != s->pid) {
		/* seek-ticks counts in the thread the replay is stopped in */
		/* gdb takes a C++ name with its arguments in quotes */
		if (fn)
			snprintf(lines[n++], 160, strpbrk(fn, " (<:") ? "(rr) break '%.140s'"
								  : "(rr) break %.140s",
				 fn);
		snprintf(lines[n++], 160, "(rr) continue    # until it stops in Thread %u.%u",
			 s->pid, s->tid);
	}
	snprintf(lines[n++], 160, "(rr) seek-ticks %" PRIu64, s->rr_ticks);
	return n;
}

static void json_sample(const struct shown *x, int rr, int first)
{
	const struct cygprof_psample *s = x->s;

	printf("%s\n  {\"index\": %zu, \"t_ns\": %" PRIu64 ", \"pid\": %u, \"tid\": %u, "
	       "\"thread\": ",
	       first ? "" : ",", x->index, s->t_ns, s->pid, s->tid);
	json_str(stdout, x->thread);
	printf(", \"weight_ns\": %" PRIu64 ", \"flags\": %u, \"overhead\": %s, \"rr_ticks\": ",
	       s->weight_ns, s->flags, x->overhead ? "true" : "false");
	if (s->rr_ticks == NO_TICKS)
		fputs("null", stdout);
	else
		printf("%" PRIu64, s->rr_ticks);
	fputs(", \"frames\": [", stdout);
	for (size_t i = 0; i < x->nf; i++) {
		printf("%s{\"name\": ", i ? ", " : "");
		json_str(stdout, x->f[i].name);
		printf(", \"addr\": %" PRIu64 "}", x->f[i].raw);
	}
	putchar(']');
	if (rr && s->rr_ticks != NO_TICKS) {
		char lines[5][160];
		size_t n = rr_commands(x, lines);
		fputs(", \"rr\": [", stdout);
		for (size_t i = 0; i < n; i++) {
			if (i)
				fputs(", ", stdout);
			json_str(stdout, lines[i]);
		}
		putchar(']');
	}
	putchar('}');
}

static void text_sample(const struct samples_opts *o, const struct shown *x)
{
	const struct cygprof_psample *s = x->s;
	char fl[5];

	if (o->rr) {
		char lines[5][160];
		size_t n;

		printf("#%zu  %.6f s  pid %u  tid %u (%s)  rr ticks %" PRIu64 "\n    ", x->index,
		       s->t_ns / 1e9, s->pid, s->tid, text_esc(x->thread), s->rr_ticks);
		print_frames(x, o->depth);
		putchar('\n');
		n = rr_commands(x, lines);
		for (size_t i = 0; i < n; i++)
			printf("    %s\n", text_esc(lines[i]));
		return;
	}
	printf("%7zu %11.6f %7u %7u  %-15s %9.3f  %-5s  ", x->index, s->t_ns / 1e9, s->pid, s->tid,
	       text_esc(x->thread), s->weight_ns / 1e6, flags_str(s->flags, x->overhead, fl));
	print_frames(x, o->depth);
	putchar('\n');
}

/* Why samples carry no ticks: the capture's meta "rr_ticks" (record
 * --rr-ticks) says, else it was not asked for. */
static void no_ticks_line(struct view *v, const char *file, size_t without, size_t chosen)
{
	const char *m = view_meta_str(v, "rr_ticks");
	char why[512];

	if (m && !strncmp(m, "missing: ", 9))
		snprintf(why, sizeof why, "recorded where rr's counter is missing: %s", m + 9);
	else if (m)
		snprintf(why, sizeof why, "recorded with --rr-ticks, but no tick was read for them "
					  "(imported, or a CPU where the counter did not open)");
	else
		snprintf(why, sizeof why, "recorded without 'record --rr-ticks'");
	if (without == chosen)
		printf("%s: no rr ticks in this capture: %s\n", file, why);
	else
		printf("%s: %zu of the %zu samples chosen have no rr ticks: %s\n", file, without,
		       chosen, why);
}

/* A thread the capture does not know (a program not instrumented): its
 * process's program name for its main thread, else "?". */
static void proc_name(const struct cygprof_proc *p, size_t np, const struct cygprof_psample *s,
		      char buf[16])
{
	snprintf(buf, 16, "?");
	if (s->tid != s->pid)
		return;
	for (size_t i = 0; i < np; i++) {
		const char *e = p[i].exe;
		if (p[i].pid != s->pid || !e || !*e)
			continue;
		e = strrchr(e, '/') ? strrchr(e, '/') + 1 : e;
		snprintf(buf, 16, "%s", e);
		return;
	}
}

/* Whether the process image the sample ran in came from an exec: the
 * first (cygprof exec'd it), one after an earlier image of its pid, or a
 * child running another program than its parent's. */
static int execd(const struct cygprof_proc *p, size_t np, const struct cygprof_psample *s)
{
	const struct cygprof_proc *img = NULL;

	/* the last image of its pid started by then, else its first */
	for (size_t i = 0; i < np; i++) {
		if (p[i].pid != s->pid)
			continue;
		if (!img || (p[i].start_ns <= s->t_ns ? p[i].start_ns >= img->start_ns ||
							    img->start_ns > s->t_ns
						       : img->start_ns > s->t_ns &&
							     p[i].start_ns < img->start_ns))
			img = &p[i];
	}
	if (!img)
		return 0;
	for (size_t i = 0; i < np; i++)
		if (&p[i] != img && p[i].pid == s->pid && p[i].end_kind == CYGPROF_END_EXEC &&
		    p[i].start_ns <= img->start_ns)
			return 1;
	if (img->parent_idx == CYGPROF_NONE)
		return 1;
	for (size_t i = 0; i < np; i++)
		if (p[i].idx == img->parent_idx)
			return p[i].pid == img->pid ||
			       (p[i].exe && img->exe && strcmp(p[i].exe, img->exe));
	return 0;
}

int cmd_samples(int argc, char **argv)
{
	struct samples_opts o;
	const struct cygprof_psample *ps;
	const struct cygprof_proc *procs;
	struct view *v;
	size_t n, np, chosen = 0, without = 0;
	const char *m;

	parse_opts(argc, argv, &o);
	v = cli_open_view(o.file, o.di);
	cli_check(view_psamples(v, &ps, &n), o.file);
	cli_check(view_procs(v, &procs, &np), o.file);
	/* a capture without the data asked for: exit 1, as memory, replay and
	 * counters do */
	if (!n)
		cli_die(1, "%s has no perf samples (record with --sample, or import-perf)", o.file);
	if (o.json)
		printf("{\"file\": ");
	if (o.json) {
		json_str(stdout, o.file);
		printf(", \"samples\": [");
	} else if (!o.rr) {
		printf("  INDEX     TIME(s)     PID     TID  THREAD          WEIGHT(ms)  FLAGS  "
		       "FRAMES (innermost first)\n");
	}
	for (size_t i = 0; i < n && (!o.limit || chosen < o.limit); i++) {
		struct shown x;
		const struct cygprof_thread *t;

		memset(&x, 0, sizeof x);
		x.s = &ps[i];
		x.index = i;
		if (!chosen_by_sample(&o, x.s))
			continue;
		if (x.s->stack)
			cli_check(psamp_stack(v, x.s->stack, 0, &x.f, &x.nf, &x.overhead), o.file);
		if (!chosen_by_frames(&o, &x)) {
			free(x.f);
			continue;
		}
		x.execd = execd(procs, np, x.s);
		t = x.s->thread_idx == CYGPROF_NONE ? NULL : view_thread(v, x.s->thread_idx);
		if (t)
			view_thread_name(t, x.thread);
		else
			proc_name(procs, np, x.s, x.thread);
		if (o.json)
			json_sample(&x, o.rr, !chosen);
		else if (!o.rr || x.s->rr_ticks != NO_TICKS)
			text_sample(&o, &x);
		if (x.s->rr_ticks == NO_TICKS)
			without++;
		chosen++;
		free(x.f);
	}
	if (o.json) {
		printf("%s], \"chosen\": %zu, \"rr_ticks\": ", chosen ? "\n" : "", chosen);
		m = view_meta_str(v, "rr_ticks");
		json_str_null(stdout, m);
		printf("}\n");
	} else if (o.rr && without) {
		no_ticks_line(v, o.file, without, chosen);
	} else if (o.rr && chosen && (m = view_meta_str(v, "rr_ticks")) && strstr(m, " lost")) {
		printf("%s: rr ticks %s\n", o.file, m);
	} else if (!chosen) {
		printf("%s: no samples chosen\n", o.file);
	}
	cli_finish(v);
	debuginfo_free(o.di);
	return 0;
}
