/* SPDX-License-Identifier: MIT */
/* json.c - the processes and threads JSON of report and info on standard
 * output (analysis/view-json.c writes it), dying when the capture cannot
 * be read.  JSON strings, numbers and changes are common/json.h's. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#include "cli.h"
#include "view.h"

void cli_json_procs(struct view *v, const char *file)
{
	cli_check(view_json_procs(v, stdout), file);
}

void cli_json_threads(struct view *v, const char *file, int totals)
{
	cli_check(view_json_threads(v, stdout, totals), file);
}

/* A decimal number of at most 19 digits (no sign, no leading zero but 0). */
static int decimal(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n && n <= 19 && !s[n] && (n == 1 || s[0] != '0');
}

void cli_json_meta(FILE *f, const char *key, const char *val)
{
	static const char *const numeric[] = {
		"duration_ns", "cpu_ns", "tsc_hz", "sample_hz", "sample_lost", "attach_pid",
		"attach_start", "attach_end", "push_sent", "push_dropped",
	};
	unsigned long long t, m, r;
	int end = 0;

	if (!val) {
		fputs("null", f);
		return;
	}
	for (size_t i = 0; i < sizeof numeric / sizeof numeric[0]; i++)
		if (!strcmp(key, numeric[i]) && decimal(val)) {
			fputs(val, f);
			return;
		}
	if ((!strcmp(key, "clock_start") || !strcmp(key, "clock_end")) &&
	    sscanf(val, "tick=%llu mono_ns=%llu real_ns=%llu%n", &t, &m, &r, &end) == 3 &&
	    !val[end]) {
		fprintf(f, "{\"tick\": %llu, \"mono_ns\": %llu, \"real_ns\": %llu}", t, m, r);
		return;
	}
	json_str(f, val);
}

/* The keys of a capture's meta, in the order info and report print them;
 * the last ones only when the capture has them. */
static const char *const meta_keys[] = {
	"command", "start_time", "duration_ns", "cpu_ns", "mode", "clock", "filters",
	"drop_mode", "hostname", "kernel", "machine", "tsc_hz", "clock_start", "clock_end",
	"time", "sample_event", "sample_hz", "sample_lost", "remote_error", "ended",
	"attach_pid", "attach_start", "attach_end", "attach_exited", "push_sent", "push_dropped",
};

int cli_meta_optional(const char *key)
{
	return !strcmp(key, "time") || !strncmp(key, "sample_", 7) || !strcmp(key, "remote_error") ||
	       !strcmp(key, "ended") || !strcmp(key, "cpu_ns") || !strncmp(key, "attach_", 7) ||
	       !strncmp(key, "push_", 5);
}

void cli_json_meta_object(FILE *f, struct view *v)
{
	const char *sep = "";

	fputc('{', f);
	for (size_t i = 0; i < sizeof meta_keys / sizeof meta_keys[0]; i++) {
		const char *val = view_meta_str(v, meta_keys[i]);

		if (!val && cli_meta_optional(meta_keys[i]))
			continue;
		fputs(sep, f);
		json_str(f, meta_keys[i]);
		fputs(": ", f);
		cli_json_meta(f, meta_keys[i], val);
		sep = ", ";
	}
	fputc('}', f);
}

void cli_json_overhead(FILE *f, const struct view_overhead *o)
{
	if (!o->present) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"in_ns\": %.3f, \"out_ns\": %.3f, \"full_ns\": %.3f, \"floor_ns\": %.3f, ",
		o->in_ns, o->out_ns, o->in_ns + o->out_ns, o->floor_ns);
	if (o->in_spread_ns >= 0)
		fprintf(f, "\"in_spread_ns\": %.3f, \"out_spread_ns\": %.3f, ", o->in_spread_ns,
			o->out_spread_ns);
	else
		fputs("\"in_spread_ns\": null, \"out_spread_ns\": null, ", f);
	fprintf(f, "\"calls\": %u, \"rounds\": %u, \"rounds_kept\": ", o->calls, o->rounds);
	if (o->kept)
		fprintf(f, "%u, \"tries\": %u, ", o->kept, o->tries);
	else
		fputs("null, \"tries\": null, ", f);
	fputs("\"mode\": ", f);
	json_str_null(f, o->mode[0] ? o->mode : NULL);
	fprintf(f, ", \"ring_bytes\": %" PRIu64 ", \"images\": ", o->ring_bytes);
	if (o->images)
		fprintf(f, "%u, \"in_range_ns\": [%.3f, %.3f], \"out_range_ns\": [%.3f, %.3f]}", o->images,
			o->in_min, o->in_max, o->out_min, o->out_max);
	else
		fputs("null, \"in_range_ns\": null, \"out_range_ns\": null}", f);
}

char *cli_overhead_fig(char *buf, size_t len, double ns, double spread)
{
	if (spread >= 0)
		snprintf(buf, len, "%.1f ± %.1f ns", ns, spread);
	else
		snprintf(buf, len, "%.1f ns", ns);
	return buf;
}
