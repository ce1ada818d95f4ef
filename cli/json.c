/* SPDX-License-Identifier: MIT */
/* json.c - JSON string literals that are valid UTF-8 whatever the bytes
 * (names, paths and command lines come from the traced program and the file
 * system, where any byte but NUL is allowed), and the one JSON writer of a
 * capture's processes and threads. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "cli.h"
#include "report-util.h"
#include "diff.h"
#include "view.h"

/* The UTF-8 sequence at s (RFC 3629, table 3-7 of the Unicode standard):
 * its length with *valid = 1, or with *valid = 0 the length of the longest
 * start of a sequence there (at least 1 byte), which is then replaced by
 * one U+FFFD ("maximal subparts", as Python, browsers and ICU do). */
static size_t utf8_len(const unsigned char *s, int *valid)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	*valid = 0;
	if (c < 0x80) {
		*valid = 1;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 1; /* a continuation byte, 0xc0/0xc1 (overlong) or past U+10FFFF */
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* past U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 1;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return i; /* also stops at the terminating NUL */
	*valid = 1;
	return n;
}

void json_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (s && *s) {
		unsigned char c = *s;
		size_t n;
		int valid;

		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc(c, f);
			s++;
			continue;
		}
		if (c < 0x20 || c == 0x7f) {
			switch (c) {
			case '\n': fputs("\\n", f); break;
			case '\t': fputs("\\t", f); break;
			case '\r': fputs("\\r", f); break;
			case '\b': fputs("\\b", f); break;
			case '\f': fputs("\\f", f); break;
			default: fprintf(f, "\\u%04x", c); break;
			}
			s++;
			continue;
		}
		n = utf8_len(s, &valid);
		if (valid)
			fwrite(s, 1, n, f);
		else
			fputs("\\ufffd", f);
		s += n;
	}
	fputc('"', f);
}

void cli_json_procs(struct view *v, const char *file)
{
	const struct cygprof_proc *procs;
	size_t n, i;
	char eb[32];

	cli_check(view_procs(v, &procs, &n), file);
	printf("\"processes\": [");
	for (i = 0; i < n; i++) {
		const struct cygprof_proc *p = &procs[i];

		printf("%s\n    {\"idx\": %u, \"pid\": %u, \"ppid\": %u, \"command\": ", i ? "," : "",
		       p->idx, p->pid, p->ppid);
		json_str(stdout, p->command);
		printf(", \"exe\": ");
		json_str(stdout, p->exe);
		printf(", \"end\": ");
		json_str(stdout, proc_end_str(p, eb, sizeof(eb)));
		printf(", \"start_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64 "}", p->start_ns,
		       p->end_ns);
	}
	printf("%s]", n ? "\n  " : "");
}

void cli_json_threads(struct view *v, const char *file, int totals)
{
	const struct cygprof_thread *threads;
	const struct view_tree *tree;
	size_t n, i;
	char name[16];

	cli_check(view_threads(v, &threads, &n), file);
	printf("\"threads\": [");
	for (i = 0; i < n; i++) {
		const struct cygprof_thread *t = &threads[i];

		printf("%s\n    {\"idx\": %u, \"tid\": %u, \"pid\": %u, \"name\": ", i ? "," : "",
		       t->idx, t->tid, view_thread_pid(v, t));
		json_str(stdout, view_thread_name(t, name));
		printf(", \"flags\": %u, \"calls\": %" PRIu64 ", \"events\": %" PRIu64
		       ", \"lost\": %" PRIu64 ", \"waits\": %" PRIu64 ", \"wait_ns\": %" PRIu64
		       ", \"unpaired\": %" PRIu64 ", \"unwound\": %" PRIu64 ", \"overflow\": %" PRIu64
		       ", \"sig_lost\": %" PRIu64 ", \"mem_lost\": %" PRIu64,
		       t->flags, t->calls, t->events, t->lost, t->waits, t->wait_ns, t->unpaired,
		       t->unwound, t->overflow, t->sig_lost, t->mem_lost);
		if (totals) {
			cli_check(view_tree(v, t->idx, &tree), file);
			printf(", \"total_ns\": %" PRIu64, tree->total_ns);
		}
		printf("}");
	}
	printf("%s]", n ? "\n  " : "");
}

void json_change(FILE *f, const char *key, uint64_t old, uint64_t new, int64_t delta)
{
	double rel = diff_rel(old, new);

	fprintf(f, ", \"%s\": {\"old\": %" PRIu64 ", \"new\": %" PRIu64 ", \"delta\": %" PRId64
		", \"relative\": ", key, old, new, delta);
	if (isnan(rel))
		fputs("null}", f);
	else
		fprintf(f, "%.6g}", rel);
}
