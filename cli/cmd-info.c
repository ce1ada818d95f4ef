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
#include "report-util.h"

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
	{"mode", "mode"},           {"clock", "clock"},           {"filters", "filters"},
	{"drop_mode", "drop mode"}, {"hostname", "hostname"},     {"kernel", "kernel"},
	{"machine", "machine"},
};

static char *meta(struct cygprof_capture *cap, const char *key)
{
	char *v = NULL;

	if (cygprof_capture_get_meta(cap, key, &v))
		return NULL;
	return v;
}

static int capture_schema(struct cygprof_capture *cap)
{
	char *v = NULL;
	int n = CYGPROF_CAPTURE_SCHEMA;
	if (!cygprof_capture_get_meta(cap, "schema", &v)) {
		n = atoi(v);
		free(v);
	}
	return n;
}

static uint64_t mem_events(struct cygprof_capture *cap, const struct cygprof_thread *threads,
			   size_t n)
{
	uint64_t total = 0, k;
	size_t i;
	int err;

	for (i = 0; i < n; i++) {
		err = cygprof_capture_mem_count(cap, threads[i].idx, &k);
		if (err)
			cli_die(1, "%s", cygprof_strerror(err));
		total += k;
	}
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
static void print_limits(struct cygprof_capture *cap)
{
	struct cli_limits l;
	int any = 0;

	cli_limits_get(cap, &l);
	if (l.incomplete)
		limit_row(&any, "recording interrupted before its end");
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
	cli_limits_free(&l);
}

static void print_text(struct cygprof_capture *cap, const char *file,
		       const struct cygprof_proc *procs, size_t nprocs,
		       const struct cygprof_thread *threads, size_t nthreads)
{
	uint64_t calls = 0, events = 0, lost = 0, waits = 0, wait_ns = 0;
	char buf[64];
	size_t i;

	printf("# capture: %s\n", file);
	for (i = 0; i < sizeof(meta_rows) / sizeof(meta_rows[0]); i++) {
		char *v = meta(cap, meta_rows[i].key);
		const char *shown = v;

		if (!strcmp(meta_rows[i].key, "duration_ns") && v) {
			snprintf(buf, sizeof(buf), "%.9f s", strtod(v, NULL) / 1e9);
			shown = buf;
		}
		if (!shown)
			shown = !strcmp(meta_rows[i].key, "filters") ? "(none)" : "(unknown)";
		else if (!*shown && !strcmp(meta_rows[i].key, "filters"))
			shown = "(none)";
		printf("%-14s: %s\n", meta_rows[i].label, shown);
		free(v);
	}

	printf("\nprocesses (%zu):\n", nprocs);
	printf("  %7s %7s  %-10s  %s\n", "PID", "PPID", "END", "COMMAND");
	for (i = 0; i < nprocs; i++) {
		const struct cygprof_proc *p = &procs[i];

		printf("  %7u %7u  %-10s  %s\n", p->pid, p->ppid,
		       proc_end_str(p, buf, sizeof(buf)), p->command ? p->command : "");
	}

	printf("\nthreads (%zu):\n", nthreads);
	printf("  %7s %7s  %-16s %12s %12s %10s %8s %12s %9s %9s  %s\n", "TID", "PID", "NAME",
	       "CALLS", "EVENTS", "LOST", "WAITS", "WAIT TIME", "UNPAIRED", "UNWOUND", "FLAGS");
	for (i = 0; i < nthreads; i++) {
		const struct cygprof_thread *t = &threads[i];
		char name[17], fl[64];

		memcpy(name, t->name, sizeof(t->name));
		name[16] = 0;
		printf("  %7u %7u  %-16s %12" PRIu64 " %12" PRIu64 " %10" PRIu64 " %8" PRIu64
		       " %12s %9" PRIu64 " %9" PRIu64 "  %s\n",
		       t->tid, thread_pid(t, procs, nprocs), name, t->calls, t->events, t->lost,
		       t->waits, fmt_dur(buf, sizeof(buf), t->wait_ns), t->unpaired, t->unwound,
		       flag_words(t->flags, fl, sizeof(fl)));
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
	print_limits(cap);
	uint64_t mem = mem_events(cap, threads, nthreads);
	if (mem)
		printf("memory events : %" PRIu64 " (allocations and frees; see 'cygprof memory')\n",
		       mem);
	printf("capture size  : %" PRIu64 " bytes\n", cygprof_capture_file_size(cap));
	printf("schema version: %d\n", capture_schema(cap));
}

static void print_json(struct cygprof_capture *cap, const char *file,
		       const struct cygprof_proc *procs, size_t nprocs,
		       const struct cygprof_thread *threads, size_t nthreads)
{
	uint64_t calls = 0, events = 0;
	char buf[32];
	size_t i;

	printf("{\n  \"file\": ");
	json_str(stdout, file);
	printf(",\n  \"meta\": {");
	for (i = 0; i < sizeof(meta_rows) / sizeof(meta_rows[0]); i++) {
		char *v = meta(cap, meta_rows[i].key);

		printf("%s", i ? ", " : "");
		json_str(stdout, meta_rows[i].key);
		printf(": ");
		if (v)
			json_str(stdout, v);
		else
			printf("null");
		free(v);
	}
	printf("},\n  \"processes\": [");
	for (i = 0; i < nprocs; i++) {
		const struct cygprof_proc *p = &procs[i];

		printf("%s\n    {\"idx\": %u, \"pid\": %u, \"ppid\": %u, \"command\": ",
		       i ? "," : "", p->idx, p->pid, p->ppid);
		json_str(stdout, p->command);
		printf(", \"exe\": ");
		json_str(stdout, p->exe);
		printf(", \"end\": ");
		json_str(stdout, proc_end_str(p, buf, sizeof(buf)));
		printf(", \"start_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64 "}", p->start_ns,
		       p->end_ns);
	}
	printf("%s],\n  \"threads\": [", nprocs ? "\n  " : "");
	for (i = 0; i < nthreads; i++) {
		const struct cygprof_thread *t = &threads[i];
		char name[17];

		memcpy(name, t->name, sizeof(t->name));
		name[16] = 0;
		printf("%s\n    {\"idx\": %u, \"tid\": %u, \"pid\": %u, \"name\": ", i ? "," : "",
		       t->idx, t->tid, thread_pid(t, procs, nprocs));
		json_str(stdout, name);
		printf(", \"calls\": %" PRIu64 ", \"events\": %" PRIu64 ", \"lost\": %" PRIu64
		       ", \"waits\": %" PRIu64 ", \"wait_ns\": %" PRIu64 ", \"unpaired\": %" PRIu64
		       ", \"unwound\": %" PRIu64 ", \"overflow\": %" PRIu64 ", \"sig_lost\": %" PRIu64
		       ", \"mem_lost\": %" PRIu64 ", \"flags\": %u}",
		       t->calls, t->events, t->lost, t->waits, t->wait_ns, t->unpaired, t->unwound,
		       t->overflow, t->sig_lost, t->mem_lost, t->flags);
		calls += t->calls;
		events += t->events;
	}
	printf("%s],\n", nthreads ? "\n  " : "");
	printf("  \"calls\": %" PRIu64 ",\n  \"events\": %" PRIu64 ",\n  \"lost_events\": %" PRIu64
	       ",\n",
	       calls, events, threads_lost(threads, nthreads));
	printf("  \"memory_events\": %" PRIu64 ",\n  ", mem_events(cap, threads, nthreads));
	cli_json_limits(cap);
	printf(",\n");
	printf("  \"size\": %" PRIu64 ",\n  \"schema\": %d\n}\n", cygprof_capture_file_size(cap),
	       capture_schema(cap));
}

int cmd_info(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cygprof_thread *threads = NULL;
	struct cygprof_proc *procs = NULL;
	struct cygprof_capture *cap;
	size_t nthreads = 0, nprocs = 0;
	const char *file = CYGPROF_DEFAULT_CAPTURE;
	int c, json = 0, err;

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

	cap = cli_open_capture(file);
	err = cygprof_capture_get_threads(cap, &threads, &nthreads);
	if (!err)
		err = cygprof_capture_get_procs(cap, &procs, &nprocs);
	if (err)
		cli_die(1, "%s: %s", file, cygprof_strerror(err));
	if (json)
		print_json(cap, file, procs, nprocs, threads, nthreads);
	else
		print_text(cap, file, procs, nprocs, threads, nthreads);
	if (procs)
		cygprof_procs_free(procs, nprocs);
	free(threads);
	cygprof_capture_close(cap);
	if (fflush(stdout) || ferror(stdout))
		cli_die(1, "write error on standard output");
	return 0;
}
