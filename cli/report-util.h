/* SPDX-License-Identifier: MIT */
/* report-util.h - small formatting helpers shared by report, replay and info
 * (static inline so that each command only pays for what it uses). */
#ifndef CYGPROF_REPORT_UTIL_H
#define CYGPROF_REPORT_UTIL_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "cygprof/cygprof-capture.h"

/* "exit N", "signal N", "exec" or "unknown". */
static inline const char *proc_end_str(const struct cygprof_proc *p, char *buf, size_t len)
{
	switch (p->end_kind) {
	case CYGPROF_END_EXIT:
		snprintf(buf, len, "exit %d", (int)p->end_code);
		break;
	case CYGPROF_END_SIGNAL:
		snprintf(buf, len, "signal %d", (int)p->end_code);
		break;
	case CYGPROF_END_EXEC:
		snprintf(buf, len, "exec");
		break;
	default:
		snprintf(buf, len, "unknown");
		break;
	}
	return buf;
}

/* A JSON string literal (quotes included) of s (NULL prints ""): always
 * valid UTF-8 and valid JSON.  '"', '\\' and control characters (U+0000 to
 * U+001F, U+007F) are escaped; bytes that do not form valid UTF-8 (RFC
 * 3629: no overlong forms, no surrogates, nothing past U+10FFFF) are
 * replaced by U+FFFD, written "\ufffd": one for each maximal subpart of an
 * ill-formed sequence, as Python, browsers and ICU decode (json.c). */
void json_str(FILE *f, const char *s);

/* One value compared across two captures (diff, memory --diff):
 * `, "KEY": {"old": O, "new": N, "delta": D, "relative": R}`, R = delta / old
 * (diff_rel()) or null when old is 0 (json.c). */
void json_change(FILE *f, const char *key, uint64_t old, uint64_t new, int64_t delta);

/* uftrace-style duration: "  1.234 us", "  5.678 ms", "  1.000  s" (10 chars). */
static inline const char *fmt_dur(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000000ull)
		snprintf(buf, len, "%7.3f us", (double)ns / 1e3);
	else if (ns < 1000000000ull)
		snprintf(buf, len, "%7.3f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%7.3f  s", (double)ns / 1e9);
	return buf;
}

/* What the flags CYGPROF_THREAD_SIGNAL and CYGPROF_THREAD_CLONED say of a
 * thread, as a note after its name: "" for neither. */
static inline const char *thread_flags_note(uint32_t flags)
{
	switch (flags & (CYGPROF_THREAD_SIGNAL | CYGPROF_THREAD_CLONED)) {
	case CYGPROF_THREAD_SIGNAL:
		return " [signal handlers]";
	case CYGPROF_THREAD_CLONED:
		return " [raw clone]";
	case CYGPROF_THREAD_SIGNAL | CYGPROF_THREAD_CLONED:
		return " [raw clone, signal handlers]";
	}
	return "";
}

#endif
