/* SPDX-License-Identifier: MIT */
/* cli.h - helpers shared by the cygprof subcommands (the only layer that may exit). */
#ifndef CYGPROF_CLI_H
#define CYGPROF_CLI_H

#include <stdio.h>

#include "cygprof/cygprof-capture.h"

#define CYGPROF_DEFAULT_CAPTURE "cygprof.data"

/* Print "cygprof: <msg>" on stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "cygprof: <msg>" on stderr and exit(status). */
void cli_die(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* --format=text|json: 1 for json; any other value is a usage error (exit 2). */
int cli_format_json(const char *cmd, const char *arg);

/* The optional capture argument left after the options (NULL when none);
 * a second one is a usage error (exit 2). */
const char *cli_capture_arg(const char *cmd, int argc, char **argv);

/* On stderr, when the capture lost timeline events (--drop, or the
 * collector was gone): how many, and that the figures shown (from the call
 * trees or the memory events) do not depend on them. */
void cli_warn_lost(struct cygprof_capture *cap);

/* The one-line error of a getopt_long loop's ':' or '?' result (c), exit 2:
 * "CMD: option '--x' needs an argument" or "CMD: unknown option '--x'". */
void cli_bad_option(const char *cmd, int c, char **argv) __attribute__((noreturn));

/* Open a capture for reading, or die with a one-line error and exit 1.
 * Also installs a SIGSEGV/SIGBUS guard so that a capture damaged in a way
 * the checks did not catch ends in "capture is corrupt", never a crash. */
struct cygprof_capture *cli_open_capture(const char *path);

struct debuginfo;

/* The debug-file search of a command, warnings printed as
 * "cygprof: warning: ..."; dies when out of memory. */
struct debuginfo *cli_debuginfo_new(void);
/* Add a --debug-dir DIR; then, after the options, the CYGPROF_DEBUG_DIRS ones. */
void cli_debuginfo_add_dir(struct debuginfo *di, const char *dir);
void cli_debuginfo_env(struct debuginfo *di);

/* Print a subcommand's usage (its --help text) on f. */
typedef int (*cli_cmd_fn)(int argc, char **argv);

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_memory(int argc, char **argv);
int cmd_gprof(int argc, char **argv);
int cmd_annotate(int argc, char **argv);

#endif
