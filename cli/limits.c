/* SPDX-License-Identifier: MIT */
/* limits.c - what a capture says it could not record (view_limits()), in
 * one place: every command that prints a profile warns about each limit
 * that was hit, with its count, on stderr (cli_open_view() does it), and
 * JSON outputs carry the same figures as a "limits" object. */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "view.h"
#include "textesc.h"

static void __attribute__((format(printf, 2, 3))) warn(const char *file, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cygprof: warning: %s: ", text_esc(file));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_limits_warn(const struct view_limits *l, const char *file)
{
	if (l->incomplete && l->ended)
		warn(file, "the recording ended early: %s: showing what it holds", l->ended);
	else if (l->incomplete && l->in_progress)
		fprintf(stderr, "cygprof: warning: %s: the recording is still in progress: showing "
			"its last checkpoint (%.3f s) and the events committed after it\n", text_esc(file),
			(double)l->checkpoint_ns / 1e9);
	else if (l->incomplete)
		fprintf(stderr, "cygprof: warning: %s: the recording was cut off before its end "
			"(its recorder was killed or lost): showing its last checkpoint (%.3f s) "
			"and the events committed after it\n", text_esc(file), (double)l->checkpoint_ns / 1e9);
	if (l->trimmed == 1)
		warn(file, "thread %" PRIu32 "'s record counts more events than its calls make: "
		     "its timeline is shown up to the last consistent point (%" PRIu64 " events)",
		     l->trimmed_idx, l->trimmed_events);
	else if (l->trimmed)
		warn(file, "%" PRIu32 " threads' records (thread %" PRIu32 " first) count more events "
		     "than their calls make: their timelines are shown up to the last consistent point",
		     l->trimmed, l->trimmed_idx);
	if (l->damaged)
		fprintf(stderr, "cygprof: warning: %s: the traced program wrote into cygprof's "
			"shared memory, and this was rejected: %s (the rest of the recording is "
			"kept)\n", text_esc(file), l->damaged);
	if (l->shm_full_set)
		warn(file, "the shared mapping filled up while recording (%" PRIu64 " allocations "
		     "refused): some threads or calls were not recorded (see 'cygprof record "
		     "--shm-size')", l->shm_full);
	if (l->overflow)
		warn(file, "%" PRIu64 " calls were deeper than the depth limit: counted in the "
		     "threads' calls, missing from the call trees and the figures made from them",
		     l->overflow);
	if (l->sig_lost)
		warn(file, "%" PRIu64 " calls or allocations made by signal handlers could not be "
		     "recorded: missing from the profile", l->sig_lost);
	if (l->mem_lost)
		warn(file, "%" PRIu64 " allocations or frees were not traced (made inside the "
		     "runtime): missing from the memory figures", l->mem_lost);
	if (l->lost)
		warn(file, "%" PRIu64 " timeline events were lost during recording (--drop, or the "
		     "collector was gone): the timeline has gaps; counts and times come from the "
		     "call trees and are complete", l->lost);
	if (l->unpaired)
		warn(file, "%" PRIu64 " function exits matched no recorded entry and were ignored "
		     "(unpaired)", l->unpaired);
}

void cli_limits_json(FILE *f, const struct view_limits *l)
{
	fprintf(f, "\"limits\": {\"complete\": %s, \"in_progress\": %s, \"lost\": %" PRIu64 ", \"overflow\": %" PRIu64
		", \"sig_lost\": %" PRIu64 ", \"mem_lost\": %" PRIu64 ", \"unpaired\": %" PRIu64
		", \"trimmed\": %" PRIu32 ", \"shm_full\": ",
		l->incomplete ? "false" : "true", l->in_progress ? "true" : "false", l->lost, l->overflow, l->sig_lost, l->mem_lost,
		l->unpaired, l->trimmed);
	if (l->shm_full_set)
		fprintf(f, "%" PRIu64, l->shm_full);
	else
		fputs("null", f);
	fputs(", \"damaged\": ", f);
	json_str_null(f, l->damaged);
	/* "ended": "REASON at T s" as {"reason": REASON, "at_s": T} */
	fputs(", \"ended\": ", f);
	if (l->ended) {
		const char *at = NULL, *p;
		char *end = NULL, *reason;
		double t = 0;

		for (p = strstr(l->ended, " at "); p; p = strstr(p + 1, " at "))
			at = p;
		if (at) {
			t = strtod(at + 4, &end);
			if (end == at + 4 || strcmp(end, " s"))
				at = NULL;
		}
		reason = strndup(l->ended, at ? (size_t)(at - l->ended) : strlen(l->ended));
		fputs("{\"reason\": ", f);
		json_str(f, reason ? reason : l->ended);
		if (at)
			fprintf(f, ", \"at_s\": %.3f}", t);
		else
			fputs(", \"at_s\": null}", f);
		free(reason);
	} else {
		fputs("null", f);
	}
	fputc('}', f);
}

void cli_json_limits(struct view *v)
{
	struct view_limits l;

	view_limits(v, &l);
	cli_limits_json(stdout, &l);
}
