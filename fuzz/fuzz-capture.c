/* SPDX-License-Identifier: MIT */
/* fuzz-capture.c - libFuzzer harness for the capture reader.
 *
 * Each input is written to a memfd and opened through /proc/self/fd/N with
 * cygprof_capture_open(); everything the reader API offers is then read:
 * meta keys, processes, threads, trees, call sites, objects, symbols,
 * every timeline event, every memory event through cursors, memory counts
 * and the stack stash.  Built with -Dfuzz=true (clang): see fuzz/README.md.
 *
 * Linked with replay-main.c instead it is a plain program that runs the
 * same function over files and directories given on the command line (the seed
 * corpus as a unit test in every build).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cygprof/cygprof-capture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const meta_keys[] = {
	"magic", "schema", "crc32c", "txn", "counts", "command", "mode", "start_time",
	"duration_ns", "clock", "lost_events", "complete", "shm_full", "damaged", "x",
};

static int count_events(const struct cygprof_event *ev, size_t n, void *data)
{
	uint64_t *sum = data;
	size_t i;

	for (i = 0; i < n; i++)
		*sum += ev[i].ts_ns ^ ev[i].node ^ ev[i].kind;
	return 0;
}

static int stop_early(const struct cygprof_event *ev, size_t n, void *data)
{
	return 7;
}


/* The timeline by time: a seek into the middle, the open calls of the block
 * found, and the exits of those still open at its end. */
static uint64_t walk_by_time(struct cygprof_capture *cap, uint32_t t)
{
	struct cygprof_event_cursor *cur;
	const struct cygprof_open_call *oc;
	const struct cygprof_event *ev;
	uint64_t sum = 0, x;
	size_t n, noc;
	uint32_t depth;

	if (cygprof_event_cursor_open(cap, t, &cur))
		return 0;
	for (int round = 0; round < 2; round++) {
		if (cygprof_event_cursor_seek(cur, round ? UINT64_MAX : 1000000) ||
		    cygprof_event_cursor_next(cur, &ev, &n) || !n)
			break;
		if (cygprof_event_cursor_open_calls(cur, &oc, &noc, &depth))
			break;
		for (size_t i = 0; i < noc && i < 64; i++) {
			sum += oc[i].node;
			if (!cygprof_event_cursor_exit(cur, (uint32_t)i, oc[i].enter_ns, &x))
				sum += x;
		}
	}
	cygprof_event_cursor_close(cur);
	return sum;
}

static void read_all(struct cygprof_capture *cap)
{
	struct cygprof_proc *procs = NULL;
	struct cygprof_thread *threads = NULL;
	struct cygprof_object *objs = NULL;
	struct cygprof_symbol *syms = NULL;
	struct cygprof_stack_node *stacks = NULL;
	struct cygprof_node *nodes = NULL;
	struct cygprof_callsite *sites = NULL;
	struct cygprof_mem_cursor *cur;
	struct cygprof_mem_event mev;
	size_t np = 0, nt = 0, no = 0, ns = 0, nst = 0, nn = 0, nsi = 0, i, j;
	uint64_t sum = 0, count;
	char *v;
	int rc;

	for (i = 0; i < sizeof(meta_keys) / sizeof(meta_keys[0]); i++) {
		if (!cygprof_capture_get_meta(cap, meta_keys[i], &v))
			free(v);
	}
	(void)cygprof_capture_file_size(cap);
	(void)cygprof_capture_damage(cap);
	if (!cygprof_capture_get_procs(cap, &procs, &np)) {
		for (i = 0; i < np; i++) {
			if (!cygprof_capture_get_symbols(cap, procs[i].idx, &syms, &ns)) {
				for (j = 0; j < ns; j++)
					(void)cygprof_symbols_lookup(syms, ns, syms[j].addr + 1);
				cygprof_symbols_free(syms, ns);
			}
		}
		cygprof_procs_free(procs, np);
	}
	if (!cygprof_capture_get_objects(cap, &objs, &no))
		cygprof_objects_free(objs, no);
	if (!cygprof_capture_get_stacks(cap, &stacks, &nst))
		free(stacks);
	{
		/* every counter's samples, plus one past the last */
		struct cygprof_counter *cv;
		struct cygprof_sample *sm;
		size_t nc = 0, nsm, k;

		if (cygprof_capture_get_counters(cap, &cv, &nc))
			cv = NULL, nc = 0;
		for (k = 0; k <= nc; k++)
			if (!cygprof_capture_get_samples(cap, k < nc ? cv[k].id : (uint32_t)nc, &sm,
							 &nsm))
				free(sm);
		cygprof_counters_free(cv, nc);
	}
	{
		/* perf samples and off-CPU intervals (schema 4) */
		struct cygprof_psample *ps;
		struct cygprof_offcpu *oc;
		size_t nps, noc;

		if (!cygprof_capture_get_psamples(cap, &ps, &nps))
			free(ps);
		if (!cygprof_capture_get_offcpu(cap, &oc, &noc))
			free(oc);
	}
	if (cygprof_capture_get_threads(cap, &threads, &nt))
		return;
	/* every thread, plus one past the last */
	for (i = 0; i <= nt; i++) {
		uint32_t t = i < nt ? threads[i].idx : (uint32_t)nt;

		if (!cygprof_capture_get_tree(cap, t, &nodes, &nn))
			free(nodes);
		if (!cygprof_capture_get_sites(cap, t, &sites, &nsi))
			free(sites);
		{
			/* CPU samples and off-CPU time (schema 6) */
			struct cygprof_cpu cpu;
			struct cygprof_cpu_node *cn = NULL;
			size_t ncn = 0;
			if (!cygprof_capture_get_cpu(cap, t, &cpu, &cn, &ncn)) {
				for (size_t q = 0; q < ncn; q++)
					sum += cn[q].node + cn[q].samples;
				free(cn);
			} else if (cn || ncn) {
				abort(); /* nothing handed out on an error */
			}
		}
		(void)cygprof_capture_foreach_event(cap, t, count_events, &sum);
		(void)cygprof_capture_foreach_event(cap, t, stop_early, NULL);
		(void)cygprof_capture_mem_count(cap, t, &count);
		sum += walk_by_time(cap, t);
		if (!cygprof_mem_cursor_open(cap, t, &cur)) {
			while ((rc = cygprof_mem_cursor_next(cur, &mev)) == 1)
				sum += mev.addr ^ mev.size;
			/* an error is sticky */
			if (rc < 0 && cygprof_mem_cursor_next(cur, &mev) != rc)
				abort();
			cygprof_mem_cursor_close(cur);
		}
	}
	free(threads);
	(void)cygprof_strerror(CYGPROF_E_CORRUPT);
	if (sum == 42)
		fputc(0, stderr); /* keep the sum alive */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cygprof_capture *cap = NULL;
	char path[64];
	int fd, rc;

	fd = memfd_create("fuzz-capture", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rc = cygprof_capture_open(path, &cap);
	if (!rc) {
		read_all(cap);
		/* a reader refuses writes */
		if (cygprof_capture_set_meta(cap, "k", "v") != CYGPROF_E_RDONLY)
			abort();
		cygprof_capture_close(cap);
	} else if (cap) {
		abort(); /* a failed open returns no handle */
	}
	(void)cygprof_strerror(rc);
	(void)cygprof_capture_probe(path);
	close(fd);
	return 0;
}
