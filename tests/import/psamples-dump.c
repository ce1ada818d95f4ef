/* SPDX-License-Identifier: MIT */
/* psamples-dump.c - a capture's clock, processes, threads and perf samples
 * as one JSON object (tests of `cygprof import-perf` only).
 *
 * Usage: psamples-dump FILE               print the JSON
 *        psamples-dump FILE set KEY VALUE  set a meta key (through
 *                                          cygprof_capture_open_rw())
 * {"clock_start": "..."|null, "nstacks": N,
 *  "procs": [{"idx", "pid", "start_ns", "end_ns"}],
 *  "threads": [{"idx", "proc_idx", "tid", "start_ns", "end_ns"}],
 *  "psamples": [{"t_ns", "weight_ns", "thread_idx" (-1: none), "pid", "tid",
 *                "flags", "frames": [[kind, addr], ...] innermost first}],
 *  "offcpu": [{"start_ns", "end_ns", "thread_idx", "tid", "frames"}]} */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cygprof/cygprof-capture.h"

static void frames(const struct cygprof_stack_node *st, size_t nst, uint32_t id)
{
	int first = 1;

	printf("\"frames\": [");
	while (id && id <= nst) {
		printf("%s[%u, %" PRIu64 "]", first ? "" : ", ", st[id - 1].kind, st[id - 1].addr);
		first = 0;
		id = st[id - 1].parent;
	}
	printf("]}");
}

static int fail(const char *file, int err)
{
	fprintf(stderr, "psamples-dump: %s: %s\n", file, cygprof_strerror(err));
	return 1;
}

int main(int argc, char **argv)
{
	struct cygprof_capture *cap;
	struct cygprof_proc *procs;
	struct cygprof_thread *th;
	struct cygprof_psample *ps;
	struct cygprof_stack_node *st;
	struct cygprof_offcpu *oc;
	size_t np, nt, nps, nst, noc, i;
	char *v = NULL;
	int err;

	if (argc == 5 && !strcmp(argv[2], "set")) {
		err = cygprof_capture_open_rw(argv[1], &cap);
		if (err)
			return fail(argv[1], err);
		err = cygprof_capture_set_meta(cap, argv[3], argv[4]);
		if (err) {
			cygprof_capture_discard(cap);
			return fail(argv[1], err);
		}
		err = cygprof_capture_close(cap);
		return err ? fail(argv[1], err) : 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: psamples-dump FILE [set KEY VALUE]\n");
		return 2;
	}
	err = cygprof_capture_open(argv[1], &cap);
	if (!err)
		err = cygprof_capture_get_procs(cap, &procs, &np);
	if (!err)
		err = cygprof_capture_get_threads(cap, &th, &nt);
	if (!err)
		err = cygprof_capture_get_psamples(cap, &ps, &nps);
	if (!err)
		err = cygprof_capture_get_offcpu(cap, &oc, &noc);
	if (!err)
		err = cygprof_capture_get_stacks(cap, &st, &nst);
	if (err)
		return fail(argv[1], err);
	if (cygprof_capture_get_meta(cap, "clock_start", &v))
		printf("{\"clock_start\": null");
	else
		printf("{\"clock_start\": \"%s\"", v);
	free(v);
	printf(", \"nstacks\": %zu,\n \"procs\": [", nst);
	for (i = 0; i < np; i++)
		printf("%s{\"idx\": %u, \"pid\": %u, \"start_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64
		       "}",
		       i ? ", " : "", procs[i].idx, procs[i].pid, procs[i].start_ns, procs[i].end_ns);
	printf("],\n \"threads\": [");
	for (i = 0; i < nt; i++)
		printf("%s{\"idx\": %u, \"proc_idx\": %u, \"tid\": %u, \"start_ns\": %" PRIu64
		       ", \"end_ns\": %" PRIu64 "}",
		       i ? ", " : "", th[i].idx, th[i].proc_idx, th[i].tid, th[i].start_ns,
		       th[i].end_ns);
	printf("],\n \"psamples\": [");
	for (i = 0; i < nps; i++) {
		printf("%s\n  {\"t_ns\": %" PRIu64 ", \"weight_ns\": %" PRIu64
		       ", \"thread_idx\": %d, \"pid\": %u, \"tid\": %u, \"flags\": %u, ",
		       i ? "," : "", ps[i].t_ns, ps[i].weight_ns,
		       ps[i].thread_idx == CYGPROF_NONE ? -1 : (int)ps[i].thread_idx, ps[i].pid,
		       ps[i].tid, ps[i].flags);
		frames(st, nst, ps[i].stack);
	}
	printf("],\n \"offcpu\": [");
	for (i = 0; i < noc; i++) {
		printf("%s\n  {\"start_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64
		       ", \"thread_idx\": %d, \"tid\": %u, ",
		       i ? "," : "", oc[i].start_ns, oc[i].end_ns,
		       oc[i].thread_idx == CYGPROF_NONE ? -1 : (int)oc[i].thread_idx, oc[i].tid);
		frames(st, nst, oc[i].stack);
	}
	printf("]}\n");
	free(oc);
	cygprof_procs_free(procs, np);
	free(th);
	free(ps);
	free(st);
	cygprof_capture_close(cap);
	return 0;
}
