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

/* A JSON string literal (quotes included). */
static inline void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

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

/* Sum of the threads' lost timeline events. */
static inline uint64_t threads_lost(const struct cygprof_thread *t, size_t n)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		sum += t[i].lost;
	return sum;
}

/* pid of a thread's process (0 when unknown). */
static inline uint32_t thread_pid(const struct cygprof_thread *t, const struct cygprof_proc *procs,
				  size_t nprocs)
{
	return t->proc_idx < nprocs ? procs[t->proc_idx].pid : 0;
}

#endif
