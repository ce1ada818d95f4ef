/* SPDX-License-Identifier: MIT */
/* cmd-info.c - cygprof info: what a capture holds (command, mode, processes,
 * threads and their counters, sizes). */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cpu.h"
#include "instrument.h"
#include "format.h"
#include "textesc.h"
#include "json.h"
#include "view.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: cygprof info [options] [FILE]\n"
		   "\n"
		   "Describe a capture (FILE defaults to " CYGPROF_DEFAULT_CAPTURE "): the recorded\n"
		   "command, start time, duration, mode, clock, filters, processes, threads with\n"
		   "their counters, lost events and the capture's size.\n"
		   "\n"
		   "options:\n"
		   "  --format FMT   text (default) or json\n"
		   "  -h, --help     this help\n");
}

static const struct {
	const char *key, *label;
} meta_rows[] = {
	{"command", "command"},     {"start_time", "start time"}, {"duration_ns", "duration"},
	{"cpu_ns", "CPU time"},     /* the program's processes' user + system time */
	{"mode", "mode"},           {"clock", "clock"},           {"filters", "filters"},
	{"drop_mode", "drop mode"}, {"hostname", "hostname"},     {"kernel", "kernel"},
	{"machine", "machine"},     {"tsc_hz", "tsc frequency"},
	{"clock_start", "clock at start"}, {"clock_end", "clock at end"},
	/* shown only when recorded */
	{"time", "times"},          {"sample_event", "sample event"},
	{"sample_hz", "sample rate"}, {"sample_lost", "samples lost"},
	{"remote_error", "remote error"}, /* cygprof receive: why the stream ended early */
	{"ended", "ended"},         /* a write of the capture failed: why and when */
	/* record --attach: the process, CLOCK_MONOTONIC ns of the hooks'
	 * patching and restoring, whether it ended while attached */
	{"attach_pid", "attached to"}, {"attach_start", "attach start"},
	{"attach_end", "attach end"}, {"attach_exited", "process ended"},
	/* record --push: intervals sent to the server, and given up */
	{"push_sent", "pushes sent"}, {"push_dropped", "pushes dropped"},
};

static int capture_schema(struct view *v)
{
	const char *s = view_meta_str(v, "schema");

	return s ? atoi(s) : CYGPROF_CAPTURE_SCHEMA;
}

static uint64_t mem_events(struct view *v)
{
	uint64_t total;
	int err = view_mem_count(v, &total);

	if (err)
		cli_die(1, "%s", cygprof_strerror(err));
	return total;
}

/* The thread's flags as words: "ended,forked", "-" for none. */
static const char *flag_words(uint32_t flags, char *buf, size_t len)
{
	static const struct {
		uint32_t bit;
		const char *word;
	} words[] = {
		{CYGPROF_THREAD_ENDED, "ended"},   {CYGPROF_THREAD_CUT, "cut"},
		{CYGPROF_THREAD_FORKED, "forked"}, {CYGPROF_THREAD_SIGNAL, "signal"},
		{CYGPROF_THREAD_CLONED, "clone"},
	};
	size_t i, n = 0;

	buf[0] = 0;
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (flags & words[i].bit)
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", n ? "," : "",
					      words[i].word);
	return n ? buf : "-";
}

/* One line of the "limits" rows: the label on the first. */
static void __attribute__((format(printf, 2, 3))) limit_row(int *any, const char *fmt, ...)
{
	va_list ap;

	printf("%s", (*any)++ ? "                " : "limits        : ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* The limits the recording hit, one line each (also warned on stderr). */
static void print_limits(struct view *v)
{
	struct view_limits l;
	int any = 0;

	view_limits(v, &l);
	if (l.incomplete && l.ended)
		limit_row(&any, "recording ended early: %s", l.ended);
	else if (l.incomplete)
		limit_row(&any, "%s: its last checkpoint at %.3f s, and the events after it",
			  l.in_progress ? "recording still in progress" : "recording cut off",
			  (double)l.checkpoint_ns / 1e9);
	if (l.damaged)
		limit_row(&any, "damaged shared memory rejected: %s", l.damaged);
	if (l.shm_full_set)
		limit_row(&any, "shared mapping full: %" PRIu64 " allocations refused",
			  l.shm_full);
	if (l.overflow)
		limit_row(&any, "%" PRIu64 " calls past the depth limit (not in the trees)",
			  l.overflow);
	if (l.sig_lost)
		limit_row(&any, "%" PRIu64 " calls or allocations of signal handlers not recorded",
			  l.sig_lost);
	if (l.mem_lost)
		limit_row(&any, "%" PRIu64 " allocations or frees not traced", l.mem_lost);
	if (l.lost)
		limit_row(&any, "%" PRIu64 " timeline events lost", l.lost);
	if (l.unpaired)
		limit_row(&any, "%" PRIu64 " unpaired exits ignored", l.unpaired);
	if (!any)
		printf("limits        : none hit\n");
}

/* The instruments whose data the capture holds, and where they are shown. */
static void print_instruments(struct view *v)
{
	size_t i, n = 0;

	for (i = 0; instruments[i]; i++)
		n += instruments[i]->present(v) != 0;
	printf("\ninstruments (%zu):\n", n);
	for (i = 0; instruments[i]; i++)
		if (instruments[i]->present(v))
			printf("  %-9s %-66s %s\n", instruments[i]->name, instruments[i]->summary,
			       instruments[i]->views);
}

/* The hooks' cost the runtime measured, which the readers take out of the
 * times (view_overhead()): o_in and o_out with their spreads, the hooks
 * measured, the rounds kept, and the other process images' range. */
static void print_overhead(struct view *v)
{
	struct view_overhead o;
	char a[48], b[48], ring[48] = "";

	view_overhead(v, &o);
	if (!o.present) {
		printf("%-14s: not measured (times are not compensated)\n", "hook overhead");
		return;
	}
	printf("%-14s: o_in %s in the callee, o_out %s in its caller per call",
	       "hook overhead", cli_overhead_fig(a, sizeof a, o.in_ns, o.in_spread_ns),
	       cli_overhead_fig(b, sizeof b, o.out_ns, o.out_spread_ns));
	if (o.ring_bytes)
		snprintf(ring, sizeof ring, " writing a %s ring",
			 fmt_bytes(b, sizeof b, o.ring_bytes, FMT_BYTES_IEC));
	if (o.kept)
		printf(" (%s hooks%s; %u of %u rounds of %u calls kept, %u %s)", o.mode[0] ? o.mode : "the",
		       ring, o.kept, o.rounds, o.calls, o.tries, o.tries == 1 ? "try" : "tries");
	else
		printf(" (median of %u rounds of %u calls)", o.rounds, o.calls);
	printf("; readers take it out of the times\n");
	if (o.floor_ns > 0)
		printf("%-14s: %.1f ns per call (glibc's empty hooks, what the program runs without a "
		       "profiler): readers add it back\n", "floor hooks", o.floor_ns);
	if (o.images > 1)
		printf("%-14s  %u process images calibrated: o_in %.1f..%.1f ns, o_out %.1f..%.1f ns "
		       "(the first one's is used)\n",
		       "", o.images, o.in_min, o.in_max, o.out_min, o.out_max);
}

static const char *method_name(uint32_t m)
{
	return m == CYGPROF_CPU_PERF ? "perf" : m == CYGPROF_CPU_TIMER ? "timer" : "off";
}

/* The runtime's CPU samples and off-CPU time (record --cpu-freq): how it
 * sampled, then per thread what it took and placed. */
static void print_cpu(struct view *v, const char *file, const struct cygprof_thread *threads,
		      size_t nthreads)
{
	const char *u = view_meta_str(v, "cpu_unattributed");
	uint64_t period = cpu_period_ns(v);
	const char *sw = view_meta_str(v, "cpu_switches");
	const char *eff = view_meta_str(v, "cpu_effective_period_ns");
	char buf[64], w[32], b[32], ct[32];
	int any = 0;

	if (!strcmp(cpu_sampler(v), "off") && !(sw && !strcmp(sw, "1"))) {
		printf("%-14s: off\n", "CPU samples");
		return;
	}
	if (period)
		printf("%-14s: %s, every %s of a thread's CPU time (%.0f Hz)", "CPU samples",
		       cpu_sampler(v), fmt_dur(buf, sizeof buf, period) + strspn(buf, " "),
		       1e9 / (double)period);
	else
		printf("%-14s: off", "CPU samples");
	if (eff)
		printf(", one every %s in effect",
		       fmt_dur(buf, sizeof buf, strtoull(eff, NULL, 10)) + strspn(buf, " "));
	if (u)
		printf(", %s with no thread to charge", u);
	printf("\n%-14s: %s\n", "off-CPU time",
	       sw && !strcmp(sw, "1") ? "from each thread's context switches (waiting for a CPU, "
					"or blocked)"
				      : "not tracked");
	for (size_t i = 0; i < nthreads; i++) {
		const struct view_cpu *c;
		char name[16];

		cli_check(view_cpu(v, threads[i].idx, &c), file);
		if (!c->present)
			continue;
		if (!any++)
			printf("\nCPU samples and off-CPU time:\n  %7s  %-16s %-6s %9s %9s %9s %12s "
			       "%12s %12s %9s %6s\n",
			       "TID", "NAME", "METHOD", "SAMPLES", "OVERHEAD", "UNPLACED", "CPU TIME",
			       "WAITING", "BLOCKED", "SWITCHES", "LOST");
		printf("  %7u  %-16s %-6s %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %12s %12s %12s %9" PRIu64
		       " %6" PRIu64 "\n",
		       threads[i].tid, text_esc(view_thread_name(&threads[i], name)),
		       method_name(c->thread.method), c->thread.samples, c->thread.overhead,
		       c->thread.unplaced,
		       c->thread.cpu_ns ? fmt_dur(ct, sizeof ct, c->thread.cpu_ns) : "-",
		       fmt_dur(w, sizeof w, c->thread.wait_ns), fmt_dur(b, sizeof b, c->thread.blocked_ns),
		       c->thread.switches, c->thread.switches_lost);
	}
}

static void print_text(struct view *v, const char *file, const struct cygprof_proc *procs,
		       size_t nprocs, const struct cygprof_thread *threads, size_t nthreads)
{
	uint64_t calls = 0, events = 0, lost = 0, waits = 0, wait_ns = 0, mem;
	char buf[64];
	size_t i;

	printf("# capture: %s\n", text_esc(file));
	for (i = 0; i < sizeof(meta_rows) / sizeof(meta_rows[0]); i++) {
		const char *shown = view_meta_str(v, meta_rows[i].key);

		if ((!strcmp(meta_rows[i].key, "duration_ns") || !strcmp(meta_rows[i].key, "cpu_ns")) &&
		    shown) {
			snprintf(buf, sizeof(buf), "%.9f s", strtod(shown, NULL) / 1e9);
			shown = buf;
		}
		if (!strcmp(meta_rows[i].key, "tsc_hz") && shown) {
			snprintf(buf, sizeof(buf), "%.40s Hz", shown);
			shown = buf;
		}
		if (!shown && cli_meta_optional(meta_rows[i].key))
			continue;
		if (!strcmp(meta_rows[i].key, "sample_hz") && shown) {
			snprintf(buf, sizeof(buf), "%.40s Hz", shown);
			shown = buf;
		}
		if (!shown && !strcmp(meta_rows[i].key, "tsc_hz") &&
		    (!view_meta_str(v, "clock") || strcmp(view_meta_str(v, "clock"), "tsc")))
			continue; /* the monotonic clock has no tsc */
		if (!shown)
			shown = !strcmp(meta_rows[i].key, "filters") ? "(none)" : "(unknown)";
		else if (!*shown && !strcmp(meta_rows[i].key, "filters"))
			shown = "(none)";
		printf("%-14s: %s\n", meta_rows[i].label, text_esc(shown));
	}
	print_overhead(v);
	print_cpu(v, file, threads, nthreads);

	print_instruments(v);
	printf("\nprocesses (%zu):\n", nprocs);
	printf("  %7s %7s  %-10s  %s\n", "PID", "PPID", "END", "COMMAND");
	for (i = 0; i < nprocs; i++) {
		const struct cygprof_proc *p = &procs[i];

		printf("  %7u %7u  %-10s  %s\n", p->pid, p->ppid,
		       view_proc_end(p, buf, sizeof(buf)), text_esc(p->command));
	}

	printf("\nthreads (%zu):\n", nthreads);
	printf("  %7s %7s  %-16s %12s %12s %10s %8s %12s %9s %9s  %s\n", "TID", "PID", "NAME",
	       "CALLS", "EVENTS", "LOST", "WAITS", "WAIT TIME", "UNPAIRED", "UNWOUND", "FLAGS");
	for (i = 0; i < nthreads; i++) {
		const struct cygprof_thread *t = &threads[i];
		char name[16], fl[64];

		printf("  %7u %7u  %-16s %12" PRIu64 " %12" PRIu64 " %10" PRIu64 " %8" PRIu64
		       " %12s %9" PRIu64 " %9" PRIu64 "  %s\n",
		       t->tid, view_thread_pid(v, t), text_esc(view_thread_name(t, name)), t->calls,
		       t->events,
		       t->lost, t->waits, fmt_dur(buf, sizeof(buf), t->wait_ns), t->unpaired,
		       t->unwound, flag_words(t->flags, fl, sizeof(fl)));
		calls += t->calls;
		events += t->events;
		lost += t->lost;
		waits += t->waits;
		wait_ns += t->wait_ns;
	}

	fmt_dur(buf, sizeof(buf), wait_ns);
	printf("\ntotals: %" PRIu64 " calls, %" PRIu64 " events, %" PRIu64 " lost events, %" PRIu64
	       " waits (%s)\n",
	       calls, events, lost, waits, buf + strspn(buf, " "));
	print_limits(v);
	mem = mem_events(v);
	if (mem)
		printf("memory events : %" PRIu64 " (allocations and frees; see 'cygprof memory')\n",
		       mem);
	printf("capture size  : %" PRIu64 " bytes\n", view_file_size(v));
	printf("schema version: %d\n", capture_schema(v));
}

static void print_cpu_json(struct view *v, const char *file, const struct cygprof_thread *threads,
			   size_t nthreads)
{
	const char *u = view_meta_str(v, "cpu_unattributed");
	const char *sw = view_meta_str(v, "cpu_switches");
	const char *eff = view_meta_str(v, "cpu_effective_period_ns");
	uint64_t samples = 0;
	size_t k = 0;

	printf("{\"sampler\": \"%s\", \"period_ns\": %" PRIu64 ", \"effective_period_ns\": %" PRIu64
	       ", \"switches\": %s, \"unattributed\": %" PRIu64 ", \"threads\": [",
	       cpu_sampler(v), cpu_period_ns(v), (uint64_t)(eff ? strtoull(eff, NULL, 10) : 0),
	       sw && !strcmp(sw, "1") ? "true" : "false", (uint64_t)(u ? strtoull(u, NULL, 10) : 0));
	for (size_t i = 0; i < nthreads; i++) {
		const struct view_cpu *c;

		cli_check(view_cpu(v, threads[i].idx, &c), file);
		if (!c->present)
			continue;
		samples += c->thread.samples;
		printf("%s\n    {\"tid\": %u, \"method\": \"%s\", \"samples\": %" PRIu64
		       ", \"overhead_samples\": %" PRIu64 ", \"unplaced_samples\": %" PRIu64
		       ", \"cpu_ns\": %" PRIu64 ", \"wait_ns\": %" PRIu64 ", \"blocked_ns\": %" PRIu64
		       ", \"unplaced_ns\": %" PRIu64 ", \"switches\": %" PRIu64
		       ", \"switches_lost\": %" PRIu64 "}",
		       k++ ? "," : "", threads[i].tid, method_name(c->thread.method),
		       c->thread.samples, c->thread.overhead, c->thread.unplaced, c->thread.cpu_ns,
		       c->thread.wait_ns, c->thread.blocked_ns, c->thread.unplaced_ns,
		       c->thread.switches, c->thread.switches_lost);
	}
	printf("%s], \"samples\": %" PRIu64 "}", k ? "\n  " : "", samples);
}

static void print_json(struct view *v, const char *file, const struct cygprof_thread *threads,
		       size_t nthreads)
{
	uint64_t calls = 0, events = 0, lost = 0;
	size_t i, k;

	printf("{\n  \"file\": ");
	json_str(stdout, file);
	printf(",\n  \"meta\": ");
	cli_json_meta_object(stdout, v);
	struct view_overhead o;
	view_overhead(v, &o);
	printf(",\n  \"overhead\": ");
	cli_json_overhead(stdout, &o);
	printf(",\n  \"cpu\": ");
	print_cpu_json(v, file, threads, nthreads);
	printf(",\n  \"instruments\": [");
	for (i = 0, k = 0; instruments[i]; i++)
		if (instruments[i]->present(v))
			printf("%s\"%s\"", k++ ? ", " : "", instruments[i]->name);
	printf("],\n  ");
	cli_json_procs(v, file);
	printf(",\n  ");
	cli_json_threads(v, file, 0);
	for (i = 0; i < nthreads; i++) {
		calls += threads[i].calls;
		events += threads[i].events;
		lost += threads[i].lost;
	}
	printf(",\n  \"calls\": %" PRIu64 ",\n  \"events\": %" PRIu64
	       ",\n  \"lost_events\": %" PRIu64 ",\n",
	       calls, events, lost);
	printf("  \"memory_events\": %" PRIu64 ",\n  ", mem_events(v));
	cli_json_limits(v);
	printf(",\n");
	printf("  \"size\": %" PRIu64 ",\n  \"schema\": %d\n}\n",
	       view_file_size(v), capture_schema(v));
}

int cmd_info(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const struct cygprof_thread *threads;
	const struct cygprof_proc *procs;
	struct view *v;
	size_t nthreads, nprocs;
	const char *file;
	int c, json = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'f':
			json = cli_format_json("info", optarg);
			break;
		default:
			cli_bad_option("info", c, argv);
		}
	}
	file = cli_capture_arg("info", argc, argv);

	v = cli_open_view(file, NULL);
	cli_check(view_threads(v, &threads, &nthreads), file);
	cli_check(view_procs(v, &procs, &nprocs), file);
	if (json)
		print_json(v, file, threads, nthreads);
	else
		print_text(v, file, procs, nprocs, threads, nthreads);
	return cli_finish(v);
}
