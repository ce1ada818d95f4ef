/* SPDX-License-Identifier: MIT */
/* progress.h - the progress of a long read on a terminal, as git shows it
 * (cygprof export, replay, html): one line on standard error rewritten
 * with \r,
 *
 *   export: 41% (19.5 M of 47.5 M events), 3.2 s
 *
 * first shown once the command has run CLI_PROGRESS_DELAY_MS (1 s;
 * CYGPROF_PROGRESS_DELAY_MS overrides it), then at most ten times a
 * second, and ended by
 *
 *   export: 100% (47.5 M events), 7.4 s, done.
 *
 * and a newline.  Only when standard error is a terminal, not with
 * --no-progress, and not when the command's output goes to a terminal
 * too (the caller says so: cli_progress_init()'s on).  No timer or
 * thread: the readers' loops call cli_progress_set() (or the callbacks
 * below) as they go, as often as they like; it reads CLOCK_MONOTONIC and
 * prints only when a tenth of a second has passed. */
#ifndef CYGPROF_CLI_PROGRESS_H
#define CYGPROF_CLI_PROGRESS_H

#include <stdint.h>

#define CLI_PROGRESS_DELAY_MS 1000
#define CLI_PROGRESS_DELAY_MAX_MS 3600000 /* CYGPROF_PROGRESS_DELAY_MS at most */
#define CLI_PROGRESS_EVERY_MS 100

struct cli_progress {
	const char *label; /* "export": the start of the line (static) */
	const char *unit;  /* "events", "calls", "samples" (static) */
	uint64_t done, total;
	uint64_t start_ns, delay_ns, last_ns; /* CLOCK_MONOTONIC */
	int on;    /* standard error is a terminal and nothing said no */
	int shown; /* a line is on the terminal: end it with "done." */
};

/* Start the clock of p, a command's (label) progress in unit; on: the
 * command may show it (not --no-progress, its output not on a terminal);
 * it is shown only when standard error is a terminal as well. */
void cli_progress_init(struct cli_progress *p, const char *label, const char *unit, int on);
/* What was read so far of how much (total 0: unknown yet, nothing shown);
 * cheap enough to call per block of events.  unit NULL: unchanged. */
void cli_progress_set(struct cli_progress *p, const char *unit, uint64_t done, uint64_t total);
/* The same as a callback (arg: the struct cli_progress): the shape of
 * memory_opts.progress (analysis/memory.h), with p's unit. */
void cli_progress_fn(uint64_t done, uint64_t total, void *arg);
/* The shape of export_opts.progress (export/export.h). */
void cli_progress_unit_fn(const char *unit, uint64_t done, uint64_t total, void *arg);
/* Take the line off the terminal before another line is printed there
 * (a warning); the next cli_progress_set() draws it again. */
void cli_progress_clear(struct cli_progress *p);
/* The line of the progress being shown, if any, taken off the terminal:
 * cli_warn() and cli_die() call it before their line (the terminal is the
 * process's: at most one progress is on at a time). */
void cli_progress_clear_any(void);
/* The end: the "done." line when the command ran past the delay (whether
 * or not a line was shown yet), else nothing.  p is then off. */
void cli_progress_end(struct cli_progress *p);

#endif
