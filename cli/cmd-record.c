/* SPDX-License-Identifier: MIT */
/* cmd-record.c - cygprof record: run a program under the runtime and write a capture. */
#include "config.h"

#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "format.h"
#include "instrument.h"
#include "collector.h"
#include "attach-elf.h"
#include "cyg-shm.h"
#include "net-proto.h"
#include "net.h"
#include "push.h"
#include "textesc.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof record [-o FILE] [options] [--] PROG [ARGS...]\n"
		"       cygprof record --send ADDR:PORT --token-file FILE [options] PROG [ARGS...]\n"
		"       cygprof record --attach PID [-o FILE | --send ADDR:PORT --token-file FILE]\n"
		"                      [--duration SEC] [options]\n"
		"       cygprof record --push URL [--push-interval SEC] [options] PROG [ARGS...]\n\n"
		"Run PROG (built with -finstrument-functions) and record exact call counts and\n"
		"times per function, call path and thread into a capture.  Exits with PROG's\n"
		"exit status, or 128+N when signal N killed it.\n\n"
		"options:\n"
		"  -o, --output FILE      capture file to write (default: cygprof.data); only\n"
		"                         an earlier capture there is replaced\n"
		"      --send ADDR:PORT   stream the capture to 'cygprof receive' listening\n"
		"                         there instead of writing a file (nothing is written\n"
		"                         here); connects before PROG starts (or attaches)\n"
		"      --token-file FILE  with --send: the token the receiver shares (a file\n"
		"                         only its owner may read, 16 to 4096 bytes)\n"
		"      --attach PID       profile the running process PID (built with\n"
		"                         -finstrument-functions) without restarting it: load\n"
		"                         the runtime into it, record until --duration or\n"
		"                         Ctrl-C (or its end), then detach; it runs on.  Calls,\n"
		"                         --timeline and --cpu-freq only; needs ptrace (see\n"
		"                         /proc/sys/kernel/yama/ptrace_scope)\n"
		"      --duration SEC     with --attach: detach after SEC (s when no unit is\n"
		"                         given; e.g. 500ms, 2s)\n"
		"      --push URL         also send the profile of every interval to the\n"
		"                         Pyroscope server at URL (POST URL/ingest, pprof;\n"
		"                         see cygprof push), from a thread of its own: the\n"
		"                         program never waits for it; an interval the server\n"
		"                         does not take after 3 tries is dropped and counted\n"
		"      --push-interval SEC\n"
		"                         with --push: the interval (default 10s; 1s to\n"
		"                         1 day, s when no unit is given)\n"
		"      --app NAME         with --push: the application name (default: PROG's)\n"
		"      --label KEY=VALUE  with --push: a label (repeatable; defaults:\n"
		"                         hostname, command, pid)\n"
		"      --push-token-file FILE\n"
		"                         with --push: send the token in FILE (only its owner\n"
		"                         may read it) as Authorization: Bearer\n"
		"      --push-tenant-file FILE\n"
		"                         with --push: send the tenant ID in FILE as\n"
		"                         X-Scope-OrgID (else $CYGPROF_PUSH_TENANT)\n"
		"      --push-basic-auth-file FILE\n"
		"                         with --push: HTTP basic auth with USER:PASSWORD of\n"
		"                         FILE, only its owner may read it (else\n"
		"                         $CYGPROF_PUSH_BASIC_AUTH)\n"
		"      --push-cacert FILE with --push: check an https server against the CA\n"
		"                         certificates of FILE (PEM) instead of the system's\n"
		"  -f, --force            also replace a regular file or symbolic link that is\n"
		"                         not a capture (never a directory, FIFO, device, or\n"
		"                         PROG itself)\n"
		"  -i, --instruments LIST what to record besides the calls, comma-separated:\n"
		"                         timeline, memory, counters, memdump, sampling (the\n"
		"                         options below of the same names do the same; see\n"
		"                         'cygprof info' for what a capture holds)\n"
		"      --timeline         also keep every enter/exit event with its time\n"
		"                         (for 'cygprof replay')\n"
		"      --ring-size BYTES  per-thread timeline ring, 128 to 1G and at most a\n"
		"                         quarter of --shm-size (default 4M; K/M/G suffixes)\n"
		"      --memory           also trace every malloc-family call and C++ new/delete\n"
		"                         with its call stack (see 'cygprof memory'); works on\n"
		"                         programs built without -finstrument-functions too\n"
		"      --counters[=INTERVAL]\n"
		"                         also sample memory counters every INTERVAL (1ms to\n"
		"                         1h, ms when no unit is given; default 10ms): the\n"
		"                         system's /proc/meminfo, each process's statm and\n"
		"                         CPU time\n"
		"      --memdump          let the program report byte totals through the\n"
		"                         memdump API (<cygprof/memdump.h>), sampled every\n"
		"                         counters INTERVAL\n"
		"      --sample[=HZ]      also sample where the program runs with perf, HZ\n"
		"                         times a second of CPU time (1 to 100000, default\n"
		"                         999), with user call chains, and record when each\n"
		"                         thread is off CPU; works on programs built without\n"
		"                         -finstrument-functions too.  Where perf is\n"
		"                         forbidden (perf_event_paranoid) or the event is\n"
		"                         missing: a warning, and no samples\n"
		"      --sample-event NAME\n"
		"                         what --sample counts: cpu-clock (default),\n"
		"                         task-clock, or cycles (needs a hardware PMU);\n"
		"                         implies --sample\n"
		"      --rr-ticks         each sample also records the thread's count of\n"
		"                         rr's tick counter (retired conditional branches),\n"
		"                         to find it again in an rr recording ('cygprof\n"
		"                         samples --rr'); implies --sample.  Needs a hardware\n"
		"                         PMU, Linux 6.12 and root or perf_event_paranoid<=1;\n"
		"                         where the counter is missing: a warning, and\n"
		"                         samples without ticks\n"
		"      --time=exact|sampled\n"
		"                         exact (default): time every call; sampled: count\n"
		"                         every call and call path exactly but read no clock\n"
		"                         (much faster; times come from samples, --sample)\n"
		"      --cpu-freq=HZ      CPU-time samples taken inside the program, HZ per\n"
		"                         second of each thread's CPU time (1 to 20000,\n"
		"                         default 1000; a timer's at most one per scheduler\n"
		"                         tick where perf is refused), charged to the exact\n"
		"                         call path; and each thread's context switches, so\n"
		"                         that time off the CPU (waiting for it, or blocked)\n"
		"                         is told apart from work.  0 turns both off\n"
		"      --no-cpu           the same as --cpu-freq=0\n"
		"      --drop             when a ring is full, drop events and count them\n"
		"                         instead of waiting for the collector (default: wait)\n"
		"  -F, --filter PATTERN   keep only functions matching PATTERN (glob) and the\n"
		"                         calls made inside them (repeatable; a function\n"
		"                         filter as uftrace's, not a frequency: see --sample);\n"
		"                         a pattern that matched no function is warned about\n"
		"  -N, --notrace PATTERN  hide functions matching PATTERN; their callees stay\n"
		"                         (repeatable)\n"
		"  -D, --depth N          keep call paths at most N calls deep (1 to 16777216)\n"
		"  -t, --time-filter DUR  timeline: drop calls shorter than DUR (e.g. 10us, 1ms;\n"
		"                         ns when no unit is given)\n"
		"      --debug-dir DIR    where separate debug files are (repeatable; also\n"
		"                         CYGPROF_DEBUG_DIRS): names of stripped objects\n"
		"      --shm-size BYTES   size of the shared mapping, 64M to 16G (default 16G,\n"
		"                         or an eighth of a finite ulimit -v; sparse: only\n"
		"                         what is used takes memory)\n"
		"      --max-depth N      record call paths up to N calls deep (default and\n"
		"                         most 16777216); deeper calls are counted, and every\n"
		"                         report says how many are not in the call tree\n"
		"  -q, --quiet            no summary line\n"
		"  -h, --help             this help\n");
}

/* Find the runtime next to this executable: installed
 * (BINDIR/../LIBDIR/cygprof) or in the build tree (cli/../cyg). */
char *cli_find_runtime(const char *name)
{
	static const char *rel[] = {
		"../" CYGPROF_RUNTIME_DIR_REL "/",
		"../cyg/",
		"../preload/",
		"../lib/cygprof/",
	};
	char exe[PATH_MAX], path[PATH_MAX * 2];
	char *env = cli_env_runtime(name); /* exits when it names no runtime */
	ssize_t n;
	size_t i;

	if (env)
		return env;
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	*strrchr(exe, '/') = 0;
	for (i = 0; i < sizeof rel / sizeof rel[0]; i++) {
		snprintf(path, sizeof path, "%s/%s%s", exe, rel[i], name);
		if (!access(path, R_OK))
			return realpath(path, NULL);
	}
	return NULL;
}

/* Like a shell: 127 when PROG is not found, 126 when it cannot be run.
 * *st: the program found (its stat, links followed). */
void cli_check_program(const char *prog, struct stat *st)
{
	if (strchr(prog, '/')) {
		if (stat(prog, st) < 0)
			cli_die(127, "%s: %s", prog, strerror(errno));
		if (S_ISDIR(st->st_mode))
			cli_die(126, "%s: Is a directory", prog);
		if (access(prog, X_OK) < 0)
			cli_die(126, "%s: %s", prog, strerror(errno));
		return;
	}
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t len = colon ? (size_t)(colon - path) : strlen(path);
		snprintf(buf, sizeof buf, "%.*s/%s", (int)len, len ? path : ".", prog);
		if (!stat(buf, st) && S_ISREG(st->st_mode) && !access(buf, X_OK))
			return;
		path += len + (colon ? 1 : 0);
	}
	cli_die(127, "%s: command not found", prog);
}

/* The record-time filters, as given, for the capture's "filters" key. */
static void add_filter(char *buf, size_t size, const char *opt, const char *arg)
{
	size_t l = strlen(buf);
	snprintf(buf + l, size - l, "%s%s %s", l ? " " : "", opt, arg);
}

/* A file system with no room left (a capture and its lock file need about
 * 64 KiB): say so before the program runs rather than fail on the way. */
#define MIN_FREE_BYTES (64u << 10)

static void check_space(const char *output)
{
	const char *slash = strrchr(output, '/');
	char dir[PATH_MAX];
	struct statvfs sv;
	uint64_t avail;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == output ? 1 : (int)(slash - output),
			 output);
	if (statvfs(dir, &sv))
		return; /* the capture's creation will say what is wrong */
	avail = (uint64_t)(geteuid() ? sv.f_bavail : sv.f_bfree) * sv.f_frsize;
	if (avail < MIN_FREE_BYTES || (sv.f_files && (geteuid() ? sv.f_favail : sv.f_ffree) < 3))
		cli_die(1, "record: %s: no space left on device", output);
}

/* The capture's write failed while the program ran (a full disk, an I/O
 * error): the program ran on, the capture keeps what was stored before.
 * One line: when, what the capture holds, how the program ended; exit 1. */
static void die_write_failed(const struct collector_opts *o, const struct collector_result *r,
			     pid_t attached)
{
	char text[128], kept[160], end[300];

	snprintf(text, sizeof text, "%s",
		 r->write_err == CYGPROF_E_FULL ? "no space left on device"
						: cygprof_strerror(r->write_err));
	if (text[0] >= 'A' && text[0] <= 'Z')
		text[0] = (char)(text[0] - 'A' + 'a');
	if (r->kept)
		snprintf(kept, sizeof kept, "the capture holds the calls up to %.3f s",
			 (double)r->kept_ns / 1e9);
	else
		snprintf(kept, sizeof kept, "the capture holds no calls");
	/* the timeline and memory events committed after that checkpoint */
	if (r->events_kept_ns)
		snprintf(kept + strlen(kept), sizeof kept - strlen(kept),
			 " and the events up to %.3f s", (double)r->events_kept_ns / 1e9);
	if (attached)
		snprintf(end, sizeof end, "process %d runs on", (int)attached);
	else if (WIFSIGNALED(r->status))
		snprintf(end, sizeof end, "%s ran on to its end, killed by signal %d", o->argv[0],
			 WTERMSIG(r->status));
	else
		snprintf(end, sizeof end, "%s ran on to its end, exit status %d", o->argv[0],
			 WEXITSTATUS(r->status));
	cli_die(1, "record: %s: %s at %.3f s; %s%s; %s", o->output, text,
		(double)r->write_err_ns / 1e9, kept,
		r->ended_stored ? "" : " (and is left unsealed)", end);
}

/* -i LIST: turn each named instrument on. */
static void add_instruments(struct collector_opts *o, char *list)
{
	char *save = NULL, *name;

	for (name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		const struct instrument *in = instrument_find(name);

		if (!in) {
			char known[256] = "";

			for (size_t i = 0; instruments[i]; i++)
				snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
					 i ? ", " : "", instruments[i]->name);
			cli_die(2, "record: unknown instrument '%s' (%s)", name, known);
		}
		in->record(o);
	}
}

/* record --push: one line when intervals were dropped (what was sent and
 * dropped is in the capture's meta too), then the thread's end. */
static void push_done(const struct collector_opts *o)
{
	struct pusher *p = o->interval_arg;
	uint64_t sent = 0, dropped = 0;

	if (!p)
		return;
	pusher_end(p, &sent, &dropped);
	if (dropped)
		cli_warn("warning: --push: %llu of %llu intervals dropped (not sent): %s",
			 (unsigned long long)dropped, (unsigned long long)(sent + dropped),
			 pusher_last_error(p)[0] ? pusher_last_error(p) : "queue full");
	pusher_free(p);
}

/* record --attach PID (docs/attach.md): the refusals, then the runtime
 * loaded into the process for the duration; the process runs on. */
static int send_connect(const char *to, const char *token_file, unsigned *zwlog);
static void warn_unmatched(const struct collector_opts *o, uint64_t calls);

static int record_attach(struct collector_opts *o, pid_t pid, uint64_t duration_ns, int have_prog,
			 int force, const char *token_file)
{
	struct attach_target *t = calloc(1, sizeof *t);
	struct collector_result r;
	char err[512], sz[32];
	int rc;

	if (have_prog)
		cli_die(2, "record: --attach PID takes no program");
	if (o->memory || o->counters_ns || o->memdump || o->sample_hz || o->sample_event ||
	    o->rr_ticks)
		cli_die(2, "record: --attach records calls (and --timeline) only: not with "
			"--memory, --counters, --memdump, --sample or --rr-ticks");
	if (o->timeline && o->time_sampled)
		cli_die(2, "record: a timeline needs times: --timeline cannot go with --time=sampled");
	if (!*o->output)
		cli_die(2, "record: --output needs a file name");
	if (!t)
		cli_die(1, "record: out of memory");
	if (attach_check(pid, t, err, sizeof err) < 0)
		cli_die(1, "record: %s", err);
	struct stat exe_st;
	char exe[64];
	snprintf(exe, sizeof exe, "/proc/%d/exe", (int)pid);
	if (stat(exe, &exe_st) < 0)
		cli_die(1, "record: attach: no process %d", (int)pid);
	if (!o->send_to) {
		cli_output_check("record", o->output, OUT_CAPTURE, force, &exe_st);
		cli_output_lock("record", o->output);
		check_space(o->output);
	}
	char *rt = cli_find_runtime("libcygprof-cyg.so");
	if (!rt)
		cli_die(1, "cannot find the runtime libcygprof-cyg.so next to this cygprof");
	o->runtime = rt;
	if (o->send_to) /* after the refusals: a refused attach connects to nobody */
		o->send_fd = send_connect(o->send_to, token_file, &o->send_zwlog);
	rc = collector_attach(o, t, duration_ns, &r, err, sizeof err);
	free(rt);
	free(t);
	push_done(o);
	if (rc) {
		if (!o->send_to && r.write_err)
			die_write_failed(o, &r, pid);
		if (!o->send_to && (rc == CYGPROF_E_FULL || rc == -ENOSPC))
			cli_die(1, "record: %s: no space left on device", o->output);
		cli_die(1, "%s%s", strncmp(err, "record: ", 8) ? "record: " : "", err);
	}
	if (!o->quiet) {
		char cpu[48] = "";
		fmt_bytes(sz, sizeof sz, r.capture_bytes, FMT_BYTES_KB10);
		if (o->cpu_hz)
			snprintf(cpu, sizeof cpu, "%llu CPU samples, ",
				 (unsigned long long)r.cpu_samples);
		fprintf(stderr, "cygprof: %s process %d: %u thread%s, %llu calls, %llu events, "
			"%s%llu lost, %s: %s%s\n",
			r.attach_ended ? "attached until the end of" : "detached from", (int)pid,
			r.threads, r.threads == 1 ? "" : "s", (unsigned long long)r.calls,
			(unsigned long long)r.events, cpu, (unsigned long long)r.lost, sz,
			o->send_to ? "sent to " : "", o->send_to ? o->send_to : o->output);
	}
	if (r.damaged[0])
		cli_warn("warning: %s: %s", o->send_to ? o->send_to : o->output, r.damaged);
	cli_compact_warn(o->output, r.compact_err);
	warn_unmatched(o, r.calls);
	return 0;
}

/* A -F or -N pattern that named no function the program called: one
 * line each, as a typo (or perf's -F for a frequency) leaves a capture
 * with nothing or everything in it and no other sign why. */
static void warn_unmatched(const struct collector_opts *o, uint64_t calls)
{
	size_t i;

	if (!calls)
		return; /* "no instrumented function was called" says it */
	for (i = 0; i < o->n_only; i++)
		if (!o->only_hit[i])
			cli_warn("warning: record: -F '%s' matched no function the program called",
				 text_esc(o->only[i]));
	for (i = 0; i < o->n_except; i++)
		if (!o->except_hit[i])
			cli_warn("warning: record: -N '%s' matched no function the program called",
				 text_esc(o->except[i]));
}

/* record --send: connect, agree on compression (*zwlog) and prove the
 * token before the program starts (docs/remote.md); any failure is one
 * line and exit 1, and nothing runs. */
static int send_connect(const char *to, const char *token_file, unsigned *zwlog)
{
	char err[512];
	uint8_t *tok;
	size_t ntok;
	int fd, rc;

	rc = net_token_load(token_file, &tok, &ntok, err, sizeof err);
	if (rc < 0)
		cli_die(2, "record: --token-file %s", err);
	fd = net_connect(to, err, sizeof err);
	if (fd < 0) {
		free(tok);
		cli_die(fd == -EINVAL ? 2 : 1, "record: %s", err);
	}
	rc = net_handshake_client(fd, tok, ntok, NETP_ZWLOG, zwlog, 30000, err, sizeof err);
	free(tok);
	if (rc < 0)
		cli_die(1, "record: --send %s: %s", to, err);
	return fd;
}

int cmd_record(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"force", no_argument, NULL, 'f'},
		{"instruments", required_argument, NULL, 'i'},
		{"timeline", no_argument, NULL, 'T'},
		{"ring-size", required_argument, NULL, 'R'},
		{"drop", no_argument, NULL, 'P'},
		{"time", required_argument, NULL, 'k'},
		{"memory", no_argument, NULL, 'M'},
		{"counters", optional_argument, NULL, 'C'},
		{"memdump", no_argument, NULL, 'Y'},
		{"sample", optional_argument, NULL, 'H'},
		{"sample-event", required_argument, NULL, 'E'},
		{"rr-ticks", no_argument, NULL, 'K'},
		{"cpu-freq", required_argument, NULL, 1006},
		{"no-cpu", no_argument, NULL, 1007},
		{"debug-dir", required_argument, NULL, 'G'},
		{"filter", required_argument, NULL, 'F'},
		{"notrace", required_argument, NULL, 'N'},
		{"depth", required_argument, NULL, 'D'},
		{"time-filter", required_argument, NULL, 't'},
		{"shm-size", required_argument, NULL, 'S'},
		{"max-depth", required_argument, NULL, 'X'},
		{"quiet", no_argument, NULL, 'q'},
		{"attach", required_argument, NULL, 'A'},
		{"send", required_argument, NULL, 'W'},
		{"token-file", required_argument, NULL, 'Z'},
		{"duration", required_argument, NULL, 'U'},
		{"push", required_argument, NULL, 1000},
		{"push-interval", required_argument, NULL, 1001},
		{"app", required_argument, NULL, 1002},
		{"label", required_argument, NULL, 1003},
		{"push-token-file", required_argument, NULL, 1004},
		{"push-tenant-file", required_argument, NULL, 1008},
		{"push-basic-auth-file", required_argument, NULL, 1009},
		{"push-cacert", required_argument, NULL, 1005},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct collector_opts o;
	struct collector_result r;
	char err[512], filters[1024] = "", sz[32];
	const char *only[argc], *except[argc], *dbgdirs[argc];
	unsigned char only_hit[argc], except_hit[argc];
	struct stat prog_st;
	int c, rc, force = 0, have_output = 0;
	const char *token_file = NULL;
	long attach_pid = 0;
	uint64_t duration_ns = 0;
	struct push_target pt = {.timeout_ms = 0};
	const char *push_labels[PUSH_MAX_LABELS], *push_token = NULL;
	const char *push_tenant = NULL, *push_basic = NULL;
	size_t npush_labels = 0;
	uint64_t push_ns = 0;
	struct pusher *pusher = NULL;

	memset(&o, 0, sizeof o);
	o.output = CYGPROF_DEFAULT_CAPTURE;
	o.cpu_hz = CYG_CPU_HZ_DEFAULT;
	o.only = only;
	o.except = except;
	memset(only_hit, 0, sizeof only_hit);
	memset(except_hit, 0, sizeof except_hit);
	o.only_hit = only_hit;
	o.except_hit = except_hit;
	o.debug_dirs = dbgdirs;
	opterr = 0; /* one error line: ours */
	/* '+': stop at the first non-option, which is PROG. */
	while ((c = getopt_long(argc, argv, "+:o:fi:F:N:D:t:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o.output = optarg;
			have_output = 1;
			break;
		case 'f':
			force = 1;
			break;
		case 'i':
			add_instruments(&o, optarg);
			break;
		case 'T':
			o.timeline = 1;
			break;
		case 'R':
			o.ring_bytes = cli_parse_size("record", "--ring-size", optarg,
						      CYG_RING_MIN_BYTES, CYG_RING_MAX_BYTES);
			break;
		case 'P':
			o.drop = 1;
			break;
		case 'k':
			if (!strcmp(optarg, "exact"))
				o.time_sampled = 0;
			else if (!strcmp(optarg, "sampled"))
				o.time_sampled = 1;
			else
				cli_die(2, "record: bad --time value '%s' (exact or sampled)", optarg);
			break;
		case 'M':
			o.memory = 1;
			break;
		case 'C':
			o.counters_ns = CYGPROF_COUNTERS_DEFAULT_NS;
			if (optarg) {
				o.counters_ns = cli_parse_duration("record", "--counters", optarg, "ms",
								   3600000000000ULL);
				if (o.counters_ns < 1000000)
					cli_die(2, "record: bad --counters value '%s' (an interval from "
						"1 ms to 1 h)", optarg);
			}
			break;
		case 'Y':
			o.memdump = 1;
			break;
		case 'H':
			o.sample_hz = optarg ? (uint32_t)cli_parse_uint("record", "--sample", optarg,
									1, 100000)
					     : 999;
			break;
		case 'E':
			if (strcmp(optarg, "cpu-clock") && strcmp(optarg, "task-clock") &&
			    strcmp(optarg, "cycles"))
				cli_die(2, "record: bad --sample-event '%s' (cpu-clock, task-clock or "
					"cycles)", optarg);
			o.sample_event = optarg;
			break;
		case 'K':
			o.rr_ticks = 1;
			break;
		case 'G':
			dbgdirs[o.n_debug_dirs++] = optarg;
			break;
		case 'F':
			if (*optarg && strspn(optarg, "0123456789") == strlen(optarg))
				cli_warn("warning: record: -F %s keeps only functions named '%s': -F is "
					 "a function filter (as uftrace's), not a frequency; sample rates "
					 "are --sample=HZ and --cpu-freq=HZ", optarg, optarg);
			only[o.n_only++] = optarg;
			add_filter(filters, sizeof filters, "-F", optarg);
			break;
		case 'N':
			except[o.n_except++] = optarg;
			add_filter(filters, sizeof filters, "-N", optarg);
			break;
		case 'D':
			o.max_depth = (uint32_t)cli_parse_uint("record", "--depth", optarg, 1, CYG_DEPTH_MAX);
			add_filter(filters, sizeof filters, "-D", optarg);
			break;
		case 't':
			o.min_ns = cli_parse_duration("record", "--time-filter", optarg, "ns",
						      1000000000ULL * 1000000000ULL);
			add_filter(filters, sizeof filters, "-t", optarg);
			break;
		case 'S':
			o.shm_bytes = cli_parse_size("record", "--shm-size", optarg, CYG_SHM_MIN_BYTES,
						     CYG_SHM_MAX_BYTES);
			break;
		case 'X':
			o.record_depth = (uint32_t)cli_parse_uint("record", "--max-depth", optarg, 1,
								  CYG_DEPTH_MAX);
			break;
		case 'q':
			o.quiet = 1;
			break;
		case 'W':
			o.send_to = optarg;
			break;
		case 'Z':
			token_file = optarg;
			break;
		case 'A':
			attach_pid = (long)cli_parse_uint("record", "--attach", optarg, 1, INT_MAX);
			break;
		case 'U':
			duration_ns = cli_parse_duration("record", "--duration", optarg, "s",
							 86400000000000ULL * 365);
			if (!duration_ns)
				cli_die(2, "record: bad --duration value '%s' (more than 0)", optarg);
			break;
		case 1000:
			push_url_check("record", "--push", optarg);
			pt.server = optarg;
			break;
		case 1001:
			push_ns = cli_parse_duration("record", "--push-interval", optarg, "s",
						     86400000000000ULL);
			if (push_ns < 1000000000ULL)
				cli_die(2, "record: bad --push-interval value '%s' (1s to 1 day: "
					"the API counts whole seconds)", optarg);
			break;
		case 1002:
			if (!*optarg)
				cli_die(2, "record: --app needs a name");
			pt.app = optarg;
			break;
		case 1003:
			if (npush_labels == PUSH_MAX_LABELS - 3)
				cli_die(2, "record: more than %d labels", PUSH_MAX_LABELS - 3);
			push_labels[npush_labels++] = optarg;
			break;
		case 1004:
			push_token = optarg;
			break;
		case 1008:
			push_tenant = optarg;
			break;
		case 1009:
			push_basic = optarg;
			break;
		case 1005:
			if (access(optarg, R_OK))
				cli_die(2, "record: --push-cacert %s: %s", optarg, strerror(errno));
			pt.cacert = optarg;
			break;
		case 1006:
			o.cpu_hz = (uint32_t)cli_parse_uint("record", "--cpu-freq", optarg, 0,
							    CYG_CPU_HZ_MAX);
			break;
		case 1007:
			o.cpu_hz = 0;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			cli_bad_option("record", c, argv);
		}
	}
	if (duration_ns && !attach_pid)
		cli_die(2, "record: --duration goes with --attach (a program started runs to its end)");
	if (o.send_to && have_output)
		cli_die(2, "record: --send writes no file: it cannot go with --output");
	if (o.send_to && !token_file)
		cli_die(2, "record: --send needs --token-file FILE");
	if (token_file && !o.send_to)
		cli_die(2, "record: --token-file goes with --send");
	if (!pt.server && (push_ns || pt.app || npush_labels || push_token || pt.cacert ||
			   push_tenant || push_basic))
		cli_die(2, "record: --push-interval, --app, --label, --push-token-file, "
			"--push-tenant-file, --push-basic-auth-file and --push-cacert go with "
			"--push URL");
	/* record --push (docs/fleet.md): labels hostname, command, pid (the
	 * program's, once started), then the given ones */
	char push_host[300], push_cmd[300], push_pid[32], exe_name[256];
	if (pt.server) {
		char host[256] = "unknown", target[PATH_MAX];
		const char *name = NULL;

		if (gethostname(host, sizeof host))
			snprintf(host, sizeof host, "unknown");
		host[sizeof host - 1] = 0;
		snprintf(push_host, sizeof push_host, "hostname=%s", host);
		push_label(&pt, "record", push_host);
		if (attach_pid) {
			char lnk[64];
			ssize_t n;

			snprintf(lnk, sizeof lnk, "/proc/%ld/exe", attach_pid);
			n = readlink(lnk, target, sizeof target - 1);
			target[n > 0 ? n : 0] = 0;
			name = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
			snprintf(push_pid, sizeof push_pid, "pid=%ld", attach_pid);
		} else if (optind < argc) {
			name = strrchr(argv[optind], '/') ? strrchr(argv[optind], '/') + 1
							    : argv[optind];
		}
		snprintf(exe_name, sizeof exe_name, "%.200s", name && *name ? name : "unknown");
		snprintf(push_cmd, sizeof push_cmd, "command=%s", exe_name);
		push_label(&pt, "record", push_cmd);
		if (attach_pid)
			push_label(&pt, "record", push_pid);
		for (size_t i = 0; i < npush_labels; i++)
			push_label(&pt, "record", push_labels[i]);
		if (!pt.app)
			pt.app = exe_name;
		push_credentials(&pt, "record", push_token, push_tenant, push_basic);
		o.interval_ns = push_ns ? push_ns : 10000000000ULL;
	}
	if (pt.server) {
		pusher = pusher_start(&pt);
		o.interval = pusher_interval;
		o.interval_end = pusher_end;
		o.interval_arg = pusher;
	}
	if (attach_pid) {
		o.filters = filters;
		return record_attach(&o, (pid_t)attach_pid, duration_ns, optind < argc, force,
				     token_file);
	}
	if (optind >= argc)
		cli_die(2, "record: no program given (usage: cygprof record [options] -- PROG [ARGS...])");
	if (!*o.output)
		cli_die(2, "record: --output needs a file name");
	if ((o.sample_event || o.rr_ticks) && !o.sample_hz)
		o.sample_hz = 999; /* --sample-event or --rr-ticks alone: --sample */
	if (o.timeline && o.time_sampled)
		cli_die(2, "record: a timeline needs times: --timeline cannot go with --time=sampled");
	if (o.ring_bytes >
	    (o.shm_bytes ? o.shm_bytes : CYG_SHM_DEFAULT_BYTES) / CYG_RING_SHM_SHARE)
		cli_die(2, "record: --ring-size is more than a quarter of --shm-size (%llu MiB)",
			(unsigned long long)(o.shm_bytes ? o.shm_bytes : CYG_SHM_DEFAULT_BYTES) >> 20);
	o.argv = argv + optind;
	o.filters = filters;
	cli_check_program(o.argv[0], &prog_st);
	if (!o.send_to) {
		cli_output_check("record", o.output, OUT_CAPTURE, force, &prog_st);
		cli_output_lock("record", o.output);
		check_space(o.output);
	}
	/* cygprof's credentials are not the program's (read above, or never) */
	unsetenv(PUSH_ENV_TENANT);
	unsetenv(PUSH_ENV_BASIC);
	const char *rtname = o.memory ? "libcygprof-mem.so" : "libcygprof-cyg.so";
	char *rt = cli_find_runtime(rtname);
	if (!rt)
		cli_die(1, "cannot find the runtime %s next to this cygprof", rtname);
	o.runtime = rt;
	if (o.send_to)
		o.send_fd = send_connect(o.send_to, token_file, &o.send_zwlog);

	rc = collector_record(&o, &r, err, sizeof err);
	free(rt);
	push_done(&o);
	push_credentials_free(&pt);
	if (o.send_to)
		close(o.send_fd);
	if (rc) {
		if (r.exec_errno)
			cli_die(r.exec_errno == ENOENT ? 127 : 126, "%s", err);
		if (!o.send_to && r.write_err)
			die_write_failed(&o, &r, 0);
		if (!o.send_to && (rc == CYGPROF_E_FULL || rc == -ENOSPC))
			cli_die(1, "record: %s: no space left on device", o.output);
		cli_die(1, "%s", err);
	}
	if (!o.quiet) {
		fmt_bytes(sz, sizeof sz, r.capture_bytes, FMT_BYTES_KB10);
		char cpu[48] = "";
		if (o.cpu_hz)
			snprintf(cpu, sizeof cpu, "%llu CPU samples, ",
				 (unsigned long long)r.cpu_samples);
		fprintf(stderr,
			"cygprof: %u process%s, %u thread%s, %llu calls, %llu events, "
			"%llu memory events, %s%llu lost, %s: %s%s\n",
			r.procs, r.procs == 1 ? "" : "es", r.threads, r.threads == 1 ? "" : "s",
			(unsigned long long)r.calls, (unsigned long long)r.events,
			(unsigned long long)r.mem_events, cpu,
			(unsigned long long)r.lost, sz, o.send_to ? "sent to " : "",
			o.send_to ? o.send_to : o.output);
	}
	/* calls count every entry, before the filters; a program traced for
	 * its allocations only (--memory) or sampled (--sample) needs no
	 * instrumentation */
	if (r.damaged[0])
		cli_warn("warning: %s: %s", o.send_to ? o.send_to : o.output, r.damaged);
	cli_compact_warn(o.output, r.compact_err);
	warn_unmatched(&o, r.calls);
	char shn[400];
	if (cli_sysheader_text(r.sysheader_calls, r.tree_calls, shn, sizeof shn))
		cli_warn("warning: %s", shn);
	if (!r.calls && !(o.memory && r.mem_events) && !r.samples)
		cli_warn("warning: no instrumented function was called: build %s with "
			 "-finstrument-functions%s", o.argv[0],
			 o.memory ? "" : " (or record --memory for its allocations only)");
	if (WIFSIGNALED(r.status))
		return 128 + WTERMSIG(r.status);
	return WEXITSTATUS(r.status);
}
