/* SPDX-License-Identifier: MIT */
/* counters-dump.c - print the counters of a capture as JSON lines, for
 * tests/counters/counters.py (until 'cygprof counters' exists): first
 * {"duration_ns": N, "instruments": "..."}, then one line per counter
 * {"name", "pid" (null: the system's), "unit", "samples": [[t_ns, value], ...]}.
 * Exit 1 with a message when the capture cannot be read. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cygprof/cygprof-capture.h"

static const char *const units[] = { "bytes", "ns", "count" };

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

int main(int argc, char **argv)
{
	struct cygprof_capture *cap;
	struct cygprof_counter *cv;
	struct cygprof_proc *procs;
	struct cygprof_sample *s;
	size_t nc, np, ns, i, j;
	char *dur = NULL, *ins = NULL;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: counters-dump CAPTURE\n");
		return 2;
	}
	rc = cygprof_capture_open(argv[1], &cap);
	if (!rc)
		rc = cygprof_capture_get_procs(cap, &procs, &np);
	if (!rc)
		rc = cygprof_capture_get_counters(cap, &cv, &nc);
	if (rc) {
		fprintf(stderr, "counters-dump: %s: %s\n", argv[1], cygprof_strerror(rc));
		return 1;
	}
	cygprof_capture_get_meta(cap, "duration_ns", &dur);
	cygprof_capture_get_meta(cap, "instruments", &ins);
	printf("{\"duration_ns\": %s, \"instruments\": ", dur ? dur : "null");
	if (ins)
		json_str(ins);
	else
		printf("null");
	printf("}\n");
	free(dur);
	free(ins);
	for (i = 0; i < nc; i++) {
		rc = cygprof_capture_get_samples(cap, cv[i].id, &s, &ns);
		if (rc) {
			fprintf(stderr, "counters-dump: %s: %s\n", argv[1], cygprof_strerror(rc));
			return 1;
		}
		printf("{\"name\": ");
		json_str(cv[i].name);
		if (cv[i].proc_idx < np)
			printf(", \"pid\": %" PRIu32, procs[cv[i].proc_idx].pid);
		else
			printf(", \"pid\": null");
		printf(", \"unit\": \"%s\", \"samples\": [",
		       cv[i].unit < 3 ? units[cv[i].unit] : "?");
		for (j = 0; j < ns; j++)
			printf("%s[%" PRIu64 ", %" PRId64 "]", j ? ", " : "", s[j].t_ns, s[j].value);
		printf("]}\n");
		free(s);
	}
	cygprof_counters_free(cv, nc);
	cygprof_procs_free(procs, np);
	cygprof_capture_close(cap);
	return 0;
}
