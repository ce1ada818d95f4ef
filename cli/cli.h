/* SPDX-License-Identifier: MIT */
/* cli.h - helpers shared by the cygprof subcommands (the only layer that may exit). */
#ifndef CYGPROF_CLI_H
#define CYGPROF_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "out-kind.h"
#include "view.h"

#include "cygprof/cygprof-capture.h"

#define CYGPROF_DEFAULT_CAPTURE "cygprof.data"

/* Print "cygprof: <msg>" on stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "cygprof: <msg>" on stderr and exit(status). */
void cli_die(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* The capture at path was written and sealed but could not be compacted
 * (cygprof_capture_compact()'s error err): one warning line; it is kept
 * whole, free pages included.  Nothing when err is 0. */
void cli_compact_warn(const char *path, int err);

/* --format=text|json: 1 for json; any other value is a usage error (exit 2). */
int cli_format_json(const char *cmd, const char *arg);

/* The optional capture argument left after the options (the default
 * capture when none); a second one is a usage error (exit 2). */
const char *cli_capture_arg(const char *cmd, int argc, char **argv);

/* ---- what a capture could not record (limits.c) ------------------------- */

struct view;
struct view_limits;

/* One "cygprof: warning: FILE: ..." line on stderr per limit hit (the
 * view's view_limits()), with its count.  cli_open_view() calls it:
 * commands need not. */
void cli_limits_warn(const struct view_limits *l, const char *file);
/* "limits": {"complete": true, "lost": N, "overflow": N, "sig_lost": N,
 * "mem_lost": N, "unpaired": N, "shm_full": N|null, "damaged": "..."|null}
 * (no separator before or after). */
void cli_limits_json(FILE *f, const struct view_limits *l);
/* The same for a view, on stdout. */
void cli_json_limits(struct view *v);

/* ---- the pager (pager.c) --------------------------------------------------- */

/* Set once the output goes through a pager (progress lines stay off). */
extern int cli_paged;
/* Whether the text output is coloured (--color=auto|always|never: auto on
 * a terminal, not with NO_COLOR or TERM=dumb). */
extern int cli_color;
/* --color's WHEN (NULL: auto) to 1 or 0, -1 for an unknown WHEN. */
int cli_color_decide(const char *when);
/* The escape that marks a share (0..1) of the run: bold red from 10%,
 * yellow from 1%, else none ("" without colour); cli_reset() ends it. */
const char *cli_hot(double share);
const char *cli_reset(void);
/* Standard output through CYGPROF_PAGER, PAGER or less when it is a
 * terminal (see pager.c); nothing otherwise. */
void cli_pager_start(void);

/* ---- processes and threads as JSON (json.c) -------------------------------- */

/* "processes": [...] and "threads": [...] of a view on stdout
 * (view_json_procs()/_threads() of analysis/view.h: no separator before or
 * after; with totals, each thread also gets its tree's total_ns); dies when
 * they cannot be read. */
void cli_json_procs(struct view *v, const char *file);
/* A meta value as typed JSON: a number for the counts and times
 * (duration_ns, tsc_hz, ...), an object {tick, mono_ns, real_ns} for
 * clock_start and clock_end, else a string; null when val is NULL. */
void cli_json_meta(FILE *f, const char *key, const char *val);
/* The capture's meta as one typed object (info's "meta", report's "meta"):
 * every key info shows, the optional ones only when present. */
void cli_json_meta_object(FILE *f, struct view *v);
/* The capture's calibration of the hooks (view_overhead()) as one JSON
 * object (info's "overhead", diff's sides' "calibration"), null when it
 * has none. */
void cli_json_overhead(FILE *f, const struct view_overhead *o);
/* "in ± s ns" (or "in ns" without a spread) of one figure. */
char *cli_overhead_fig(char *buf, size_t len, double ns, double spread);
/* Whether a meta key is shown only when the capture has it. */
int cli_meta_optional(const char *key);
void cli_json_threads(struct view *v, const char *file, int totals);

/* ---- numbers on the command line (options.c) ------------------------------ */
/* Each parses strictly (decimal digits: no sign, spaces, hex, nan or inf),
 * checks the range and otherwise dies with "CMD: bad OPT value 'S' (...)",
 * exit 2. */

/* An integer in [min, max]. */
/* 0 and *v when s is a decimal integer from min to max (no sign, space or
 * other base), else -1. */
int cli_scan_uint(const char *s, uint64_t min, uint64_t max, uint64_t *v);
uint64_t cli_parse_uint(const char *cmd, const char *opt, const char *s, uint64_t min,
			uint64_t max);
/* A byte size in [min, max]: an integer with an optional K, M or G suffix
 * (powers of 1024), optionally followed by B. */
uint64_t cli_parse_size(const char *cmd, const char *opt, const char *s, uint64_t min,
			uint64_t max);
/* A duration in ns, at most max_ns: a non-negative decimal number (a
 * fraction and an exponent are allowed) and a unit ns, us, ms or s; bare is
 * the unit of a number without one.  Rounded to the nearest ns. */
uint64_t cli_parse_duration(const char *cmd, const char *opt, const char *s, const char *bare,
			    uint64_t max_ns);
/* A real number in [min, max]. */
double cli_parse_real(const char *cmd, const char *opt, const char *s, double min, double max);

/* ---- exports (export-run.c) ------------------------------------------------ */

/* Write v in the format fmt (export/export.h) with the options o (its
 * callbacks set here: warnings and errors on stderr, notes on stdout):
 * to out (NULL: standard output, or the format's default_out for a
 * format of several files) made through cli_output_open(), named cmd in
 * messages.  Dies with one line on error (exit 1).  cygprof export and
 * cygprof gprof --gmon-out. */
struct exporter;
struct export_opts;
void cli_export(struct view *v, const struct exporter *fmt, struct export_opts *o,
		const char *out, int force, const char *cmd);

/* ---- output files (output.c) ---------------------------------------------- */
/* The kinds of output and the marks they start with: common/out-kind.h. */

/* 1 when path is a regular file holding a cygprof capture (even a damaged
 * one or one of a newer schema), 0 when it is something else, -errno.
 * Never follows a link, never blocks, never writes. */
int cli_probe_capture(const char *path);

/* What an output of kind may replace at path, looked at with lstat (no
 * link is followed): returns 0 when nothing is there, 1 when what is there
 * may be replaced: an earlier output of the same kind, or with force any
 * regular file or symbolic link (the link itself, never its target).
 * Anything else dies with one line naming path and what it is, exit 1:
 * a directory, FIFO, socket or device (even with force), a symbolic link
 * or a regular file of another kind (without force), and the file avoid
 * (same device and inode: the program being recorded; even with force). */
int cli_output_check(const char *cmd, const char *path, enum out_kind kind, int force,
		     const struct stat *avoid);

/* The one-line refusal of an output too big for what reads it (export's
 * chrome and perfetto viewers, html's browser), into buf: "CMD: FILE: WHAT
 * of about N GB (COUNT), past PAST: FIX, or give -f to write it anyway".
 * The caller frees what it holds and dies with it (exit 1).  Returns buf. */
const char *cli_size_refusal(char *buf, size_t len, const char *cmd, const char *file,
			     const char *what, uint64_t est_bytes, const char *count,
			     const char *past, const char *fix);

/* Every file a command writes goes through this: cli_output_open() checks
 * path (as above) and creates a new temporary file next to it (mkostemp:
 * O_CREAT|O_EXCL, O_CLOEXEC); write to the FILE it returns, then
 * cli_output_commit() flushes it to disk and renames it onto path (without
 * replacing anything that appeared meanwhile unless the rule allows it), or
 * cli_output_abort() removes it.  Errors die with one line, exit 1, and
 * leave neither the temporary file nor a partial path. */
struct cli_output {
	const char *cmd;
	char *path, *tmp;
	FILE *f;
	enum out_kind kind;
	int force, existed;
};

/* Refuse, in one line and exit 1, when another cygprof is writing a
 * capture at path (record, top -o, receive); otherwise hold path until
 * this process exits.  Takes no file: see cli/output.c. */
void cli_output_lock(const char *cmd, const char *path);
FILE *cli_output_open(struct cli_output *o, const char *cmd, const char *path,
		      enum out_kind kind, int force);
void cli_output_commit(struct cli_output *o);
void cli_output_abort(struct cli_output *o);

/* ---- the option loop (options.c) -------------------------------------------- */

/* What a command's options are, for cli_next_option(). */
struct option;
struct debuginfo;
struct cli_filter;
struct cli_getopt {
	const char *cmd;              /* in error lines */
	void (*usage)(FILE *f);       /* its --help text */
	const char *shortopts;        /* getopt's, starting with ':' */
	const struct option *longopts;
	struct debuginfo *di;         /* takes CLI_DEBUG_OPTIONS (NULL: the command's own) */
	struct cli_filter *filt;      /* takes CLI_FILTER_OPTIONS (NULL: the command's own) */
	int started;                  /* 0 before the first call */
};

/* The next option of argv for the command to handle (optarg set), -1
 * after the last (optind at the first argument), as getopt_long() but:
 * -h/--help prints the usage on stdout and exits 0; --debug-dir and
 * --symfs go to di, -F/-N/-D/--time-range to filt (cli_debug_option(),
 * cli_filter_option()) when set; a missing argument or an unknown option
 * dies with one line (cli_bad_option(), exit 2). */
int cli_next_option(struct cli_getopt *g, int argc, char **argv);

/* The one-line error of a getopt_long loop's ':' or '?' result (c), exit 2:
 * "CMD: option '--x' needs an argument" or "CMD: unknown option '--x'". */
void cli_bad_option(const char *cmd, int c, char **argv) __attribute__((noreturn));

struct debuginfo;

/* Open a view of a capture (path NULL: the default), or die with a
 * one-line error and exit 1.  Also installs a SIGSEGV/SIGBUS guard so that
 * a capture damaged in a way the checks did not catch ends in "capture is
 * corrupt", never a crash, and warns on stderr about every limit the
 * recording hit (cli_limits_warn()).  di: the debug-file search (borrowed;
 * NULL: the defaults).  Close it with view_close(). */
struct view *cli_open_view(const char *path, struct debuginfo *di);
/** One line saying where the times of v's trees come from (the time model,
 * --raw-times, CPU samples), in buf; NULL for a capture without times. */
const char *cli_times_note(struct view *v, char *buf, size_t len);
/** When most of the calls of v's trees are of functions defined in system
 * headers (view_sysheader_calls()): what to say about it, one sentence in
 * buf ("98% of the calls are ... =/usr/include"), else NULL (also when it
 * cannot be told). */
const char *cli_sysheader_note(struct view *v, char *buf, size_t len);
/** The same from the figures: sys of total calls in system headers. */
const char *cli_sysheader_text(uint64_t sys, uint64_t total, char *buf, size_t len);
/* Die with "FILE has no WHAT (record with -i NAME or --ALIAS)", exit 1,
 * when the capture lacks the data of instrument name (instrument.h). */
void cli_need(struct view *v, const char *file, const char *name, const char *what);
/* Die with "FILE: <error>" (exit 1) when err is not 0. */
void cli_check(int err, const char *file);
/* Check standard output, close the view and return 0, or die with "write
 * error on standard output". */
int cli_finish(struct view *v);

/* The debug-file search of a command, warnings printed as
 * "cygprof: warning: ..."; dies when out of memory. */
struct debuginfo *cli_debuginfo_new(void);
/* Add a --debug-dir DIR; then, after the options, the CYGPROF_DEBUG_DIRS ones. */
void cli_debuginfo_add_dir(struct debuginfo *di, const char *dir);
void cli_debuginfo_env(struct debuginfo *di);

/* --debug-dir DIR and --symfs DIR, for every command that names functions:
 * given to the view (cli_open_view()), the search names at report time
 * what the capture left as addresses and finds source lines.  Put
 * CLI_DEBUG_OPTIONS in the getopt_long table, CLI_DEBUG_HELP in the usage,
 * and pass both values of c to cli_debug_option(). */
enum { CLI_O_DEBUG_DIR = 0x4000, CLI_O_SYMFS };
#define CLI_DEBUG_OPTIONS                                              \
	{"debug-dir", required_argument, NULL, CLI_O_DEBUG_DIR},       \
	{                                                              \
		"symfs", required_argument, NULL, CLI_O_SYMFS          \
	}
#define CLI_DEBUG_HELP                                                                  \
	"  --debug-dir DIR        look for separate debug files in DIR/.build-id/ and\n"   \
	"                         DIR (repeatable; also CYGPROF_DEBUG_DIRS, colon-\n"      \
	"                         separated): they name functions the capture left as\n"  \
	"                         addresses (matched by build-id) and give source lines\n" \
	"  --symfs DIR            look for the recorded objects and their debug files\n"   \
	"                         under DIR first (a sysroot, as perf's --symfs)\n"
/* Handle CLI_O_DEBUG_DIR or CLI_O_SYMFS (c) with its argument; a bad one
 * dies with "CMD: ...", exit 2. */
void cli_debug_option(struct debuginfo *di, const char *cmd, int c, const char *arg);

/* --raw-times, for every command that prints the trees' times (report,
 * gprof, annotate, export, html, diff, top): the times as measured, without
 * the hooks' cost taken out (view_opts.raw_times, view_overhead()).  Put
 * CLI_TIME_OPTIONS in the getopt_long table and CLI_TIME_HELP in the
 * usage; cli_next_option() sets cli_raw_times (a command with its own loop
 * calls cli_time_option()), which cli_open_view() gives to the view. */
enum { CLI_O_RAW_TIMES = 0x4200, CLI_O_TIMES };
#define CLI_TIME_OPTIONS                                               \
	{"raw-times", no_argument, NULL, CLI_O_RAW_TIMES},             \
	{                                                              \
		"times", required_argument, NULL, CLI_O_TIMES          \
	}
#define CLI_TIME_HELP                                                                   \
	"  --times=WHICH          the times shown: model (default: CPU time: the\n"      \
	"                         hooks' clock less their cost, any wait for a CPU and\n" \
	"                         any time blocked, corrected by the CPU samples where\n" \
	"                         the two disagree beyond the samples' noise), wall\n"  \
	"                         (the same with the time blocked in sleep, I/O or\n"   \
	"                         locks kept), hooks (the clock less its cost only),\n" \
	"                         samples (the CPU samples alone, on exact call\n"      \
	"                         paths), raw (as measured: the same as --raw-times)\n" \
	"  --raw-times            times as measured: the hooks' own cost, which the\n"    \
	"                         runtime measures at start, not taken out\n"
extern int cli_raw_times;
/* --times: VIEW_TIMES_* (view_opts.times) */
extern int cli_times;
/* Handle CLI_O_RAW_TIMES or CLI_O_TIMES (its argument in optarg); a bad
 * one dies with "CMD: ...", exit 2. */
void cli_time_option(const char *cmd, int c);

/* Filters after the fact (-F/--filter, -N/--notrace, -D/--depth,
 * --time-range START,END), for every command that reads trees or the
 * timeline: the same rules as record's filters (view.h, view_set_filter()).
 * Put CLI_FILTER_OPTIONS in the getopt_long table (and "F:N:D:" in the
 * short options), CLI_FILTER_HELP in the usage, pass those values of c to
 * cli_filter_option(), and cli_filter_apply() the view before reading. */
enum { CLI_O_FILTER = 'F', CLI_O_NOTRACE = 'N', CLI_O_DEPTH = 'D', CLI_O_TIME_RANGE = 0x4100 };
#define CLI_FILTER_OPTIONS                                             \
	{"filter", required_argument, NULL, CLI_O_FILTER},             \
	{"notrace", required_argument, NULL, CLI_O_NOTRACE},           \
	{"depth", required_argument, NULL, CLI_O_DEPTH},               \
	{                                                              \
		"time-range", required_argument, NULL, CLI_O_TIME_RANGE \
	}
#define CLI_FILTER_HELP                                                                 \
	"  -F, --filter PATTERN   only what runs under functions matching the glob\n"      \
	"                         PATTERN, them included (repeatable; as record -F)\n"     \
	"  -N, --notrace PATTERN  leave out functions matching PATTERN; what they call\n" \
	"                         attaches to their caller (repeatable; as record -N)\n"  \
	"  -D, --depth N          call paths at most N deep (after -F: as record -D)\n"    \
	"  --time-range START,END only calls that start from START to END (times from\n"  \
	"                         the capture's start: 1.5s, 200ms; END may be empty);\n" \
	"                         needs a timeline (record --timeline)\n"
#define CLI_FILTER_MAX 64 /* patterns of each of -F and -N */
struct cli_filter {
	struct view_filter vf;
	const char *filter[CLI_FILTER_MAX], *notrace[CLI_FILTER_MAX];
	int any;
	int range_any; /* a time range needs no timeline (memory events) */
};
/* Handle one filter option (c, its argument); a bad one dies, exit 2. */
void cli_filter_option(struct cli_filter *f, const char *cmd, int c, const char *arg);
/* Give the filters to the view; a time range on a capture without a
 * timeline dies with one line, exit 1. */
void cli_filter_apply(struct cli_filter *f, struct view *v, const char *cmd, const char *file);
/* Warn, one line each, about the -F/-N patterns of the view given to
 * cli_filter_apply() that match no function of its capture; cli_finish()
 * calls it. */
void cli_filter_warn(struct view *v);

/* --no-progress of the commands that show their progress on a terminal
 * (export, replay, html: progress.h), for their usage. */
#define CLI_PROGRESS_HELP                                                               \
	"  --no-progress          no progress line on standard error (shown when it is a\n" \
	"                         terminal and the command runs past a second)\n"

/* Print a subcommand's usage (its --help text) on f. */
typedef int (*cli_cmd_fn)(int argc, char **argv);

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_memory(int argc, char **argv);
int cmd_gprof(int argc, char **argv);
int cmd_annotate(int argc, char **argv);
int cmd_counters(int argc, char **argv);
int cmd_import_perf(int argc, char **argv);
int cmd_samples(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_receive(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_html(int argc, char **argv);
int cmd_top(int argc, char **argv);

/* cmd-record.c, shared with top: the runtime next to this executable (owned,
 * NULL: not found); PROG as a shell finds it, or exit 127/126 like one. */
struct stat;
char *cli_find_runtime(const char *name);

/* env.c: every CYGPROF_* variable checked (cygprof(1), ENVIRONMENT): a
 * bad one exits 2 with one line naming it.  Call before anything else. */
void cli_check_env(void);
/* The runtime name ("libcygprof-cyg.so", "libcygprof-mem.so")
 * CYGPROF_RUNTIME gives, checked (owned); NULL when the variable is
 * unset; exits 2 when it names no such runtime. */
char *cli_env_runtime(const char *name);
void cli_check_program(const char *prog, struct stat *st);

#endif
