/* SPDX-License-Identifier: MIT */
/* cli.c - error helpers and the capture-opening guard shared by subcommands. */
#define _GNU_SOURCE /* vasprintf */
#include "config.h"

#include "cli.h"
#include "debuginfo.h"
#include "progress.h"
#include "instrument.h"
#include "view.h"
#include "cpu.h"
#include <inttypes.h>
#include "textesc.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A message on one line: the names in it (programs, arguments, paths) go
 * through text_esc(), as in every text output.  Out of memory, the
 * message as it is. */
__attribute__((format(printf, 1, 0))) static void message(const char *fmt, va_list ap)
{
	char *msg = NULL;

	cli_progress_clear_any();
	fputs("cygprof: ", stderr);
	if (vasprintf(&msg, fmt, ap) < 0) {
		fputs(fmt, stderr);
	} else {
		size_t n = text_esc_buf(NULL, 0, msg);
		char *e = malloc(n + 1);

		if (e)
			text_esc_buf(e, n + 1, msg);
		fputs(e ? e : msg, stderr);
		free(e);
		free(msg);
	}
	fputc('\n', stderr);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	message(fmt, ap);
	va_end(ap);
}

void cli_compact_warn(const char *path, int err)
{
	if (err)
		cli_warn("warning: %s: not compacted, kept whole with its free pages: %s", path,
			 cygprof_strerror(err));
}

void cli_die(int status, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	va_start(ap, fmt);
	message(fmt, ap);
	va_end(ap);
	exit(status);
}

void cli_bad_option(const char *cmd, int c, char **argv)
{
	if (c == ':')
		cli_die(2, "%s: option '%s' needs an argument (see 'cygprof %s --help')", cmd,
			argv[optind - 1], cmd);
	if (optopt)
		cli_die(2, "%s: unknown option '-%c' (see 'cygprof %s --help')", cmd, optopt, cmd);
	cli_die(2, "%s: unknown option '%s' (see 'cygprof %s --help')", cmd, argv[optind - 1], cmd);
}

int cli_format_json(const char *cmd, const char *arg)
{
	if (!strcmp(arg, "json"))
		return 1;
	if (strcmp(arg, "text"))
		cli_die(2, "%s: unknown format '%s' (text, json)", cmd, arg);
	return 0;
}

const char *cli_capture_arg(const char *cmd, int argc, char **argv)
{
	const char *file = CYGPROF_DEFAULT_CAPTURE;

	if (optind < argc)
		file = argv[optind++];
	if (optind < argc)
		cli_die(2, "%s: unexpected argument '%s' (see 'cygprof %s --help')", cmd,
			argv[optind], cmd);
	return file;
}

static const char *guard_path;

static void fault_guard(int sig)
{
	/* Only async-signal-safe calls here. */
	static const char a[] = "cygprof: ";
	static const char b[] = ": capture is corrupt (damaged data)\n";
	(void)sig;
	(void)!write(2, a, sizeof a - 1);
	if (guard_path)
		(void)!write(2, guard_path, strlen(guard_path));
	(void)!write(2, b, sizeof b - 1);
	_exit(1);
}

struct view *cli_open_view(const char *path, struct debuginfo *di)
{
	struct view_opts o = {.debuginfo = di, .raw_times = cli_raw_times, .times = cli_times};
	struct view_limits l;
	struct sigaction sa;
	struct view *v;
	int err;

	if (!path)
		path = CYGPROF_DEFAULT_CAPTURE;
	guard_path = path;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fault_guard;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	err = view_open(path, &o, &v);
	if (err)
		cli_die(1, "%s: %s", path, cygprof_strerror(err));
	view_limits(v, &l);
	cli_limits_warn(&l, path);
	return v;
}

void cli_need(struct view *v, const char *file, const char *name, const char *what)
{
	const struct instrument *in = instrument_find(name);

	if (!in || in->present(v))
		return;
	/* A capture cut off before it said what it records (a stream cut
	 * right after its handshake): nothing to show, and no error either. */
	struct view_limits l;
	view_limits(v, &l);
	if (l.incomplete && !view_meta_str(v, "mode"))
		return;
	cli_die(1, "%s has no %s (record with -i %s%s%s)", file, what, name, in->alias ? " or " : "",
		in->alias ? in->alias : "");
}

void cli_check(int err, const char *file)
{
	if (err)
		cli_die(1, "%s: %s", file, cygprof_strerror(err));
}

int cli_finish(struct view *v)
{
	int bad;

	cli_filter_warn(v);
	bad = fflush(stdout) || ferror(stdout);
	view_close(v);
	if (bad)
		cli_die(1, "write error on standard output");
	return 0;
}

/* The message names objects and debug files of the program: one line. */
static void debuginfo_warn(void *arg, const char *msg)
{
	fprintf(stderr, "cygprof: warning: %s\n", text_esc(msg));
}

struct debuginfo *cli_debuginfo_new(void)
{
	struct debuginfo *di = debuginfo_new();

	if (!di)
		cli_die(1, "out of memory");
	debuginfo_set_warn(di, debuginfo_warn, NULL);
	return di;
}

void cli_debuginfo_add_dir(struct debuginfo *di, const char *dir)
{
	int err = debuginfo_add_dir(di, dir);

	if (err == -EINVAL)
		cli_die(2, "empty --debug-dir");
	if (err)
		cli_die(1, "out of memory");
}

void cli_debuginfo_env(struct debuginfo *di)
{
	if (debuginfo_add_env(di))
		cli_die(1, "out of memory");
}

void cli_debug_option(struct debuginfo *di, const char *cmd, int c, const char *arg)
{
	struct stat st;
	int err;

	if (c == CLI_O_DEBUG_DIR) {
		cli_debuginfo_add_dir(di, arg);
		return;
	}
	if (!arg[0])
		cli_die(2, "%s: empty --symfs", cmd);
	if (stat(arg, &st))
		cli_die(2, "%s: --symfs %s: %s", cmd, arg, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		cli_die(2, "%s: --symfs %s: not a directory", cmd, arg);
	err = debuginfo_set_symfs(di, arg); /* the last one counts */
	if (err)
		cli_die(1, "out of memory");
}

/* A time off the CPU, for cli_times_note(). */
static void fmt_off(char *buf, size_t len, uint64_t ns)
{
	if (ns >= 1000000000)
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.1f us", (double)ns / 1e3);
}

const char *cli_sysheader_note(struct view *v, char *buf, size_t len)
{
	uint64_t sys, total;

	if (view_sysheader_calls(v, &sys, &total))
		return NULL;
	return cli_sysheader_text(sys, total, buf, len);
}

const char *cli_sysheader_text(uint64_t sys, uint64_t total, char *buf, size_t len)
{
	if (!total || sys * 2 <= total)
		return NULL;
	snprintf(buf, len, "%d%% of the calls are of functions defined in system headers "
		 "(%s, such as the STL's templates), where the hooks cost more than the "
		 "functions themselves: their times are not trustworthy; build with "
		 "-finstrument-functions-exclude-file-list=/usr/include",
		 (int)(sys * 100 / total), "/usr/include");
	return buf;
}

const char *cli_times_note(struct view *v, char *buf, size_t len)
{
	struct timemodel_stats st;
	size_t modelled = 0;
	char w[32], b[32];

	if (cpu_times_sampled(v) || (cli_times == VIEW_TIMES_SAMPLES && !cli_raw_times &&
				     cpu_period_ns(v))) {
		struct view_overhead o;

		view_overhead(v, &o);
		snprintf(buf, len, "CPU samples taken inside the program every %.3g ms of "
			 "its CPU time, on exact call paths%s (calls are exact)",
			 (double)cpu_period_ns(v) / 1e6,
			 o.floor_ns > 0 && cli_times != VIEW_TIMES_SAMPLES
				 ? ", with glibc's empty hooks' cost per call" : "");
		return buf;
	}
	if (view_time_sampled(v))
		return NULL;
	if (cli_raw_times) {
		snprintf(buf, len, "as the hooks measured them (--raw-times: with the "
			 "hooks' own cost and any wait for a CPU)");
		return buf;
	}
	cli_check(cpu_time_model(v, &st, &modelled), "capture");
	if (!modelled || cli_times == VIEW_TIMES_HOOKS) {
		snprintf(buf, len, "exact (instrumented%s)",
			 view_compensated(v) ? ", the hooks' cost taken out" : "");
		return buf;
	}
	fmt_off(w, sizeof w, st.wait_ns);
	fmt_off(b, sizeof b, st.blocked_ns);
	if (cli_times == VIEW_TIMES_WALL)
		snprintf(buf, len, "wall time per call path: the hooks' clock less %s and %s "
			 "waiting for a CPU, with %s blocked (sleep, I/O, locks) kept, checked "
			 "against CPU samples (%" PRIu64 " call path%s corrected)",
			 view_compensated(v) ? "their cost" : "nothing for their cost (no calibration)",
			 w, b, st.corrected, st.corrected == 1 ? "" : "s");
	else
		snprintf(buf, len, "CPU time per call path, which ranks: the hooks' clock less %s, "
			 "%s waiting for a CPU and %s blocked (sleep, I/O, locks: --times=wall "
			 "keeps it), checked against CPU samples (%" PRIu64 " call path%s corrected)",
			 view_compensated(v) ? "their cost" : "nothing for their cost (no calibration)",
			 w, b, st.corrected, st.corrected == 1 ? "" : "s");
	return buf;
}
