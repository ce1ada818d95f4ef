/* SPDX-License-Identifier: MIT */
/* rr-ticks-set.c - give a capture samples with known rr ticks (tests of
 * `cygprof samples --rr` on a machine without rr's counter).
 *
 * Usage: rr-ticks-set FILE N TICKS
 * Appends, after the capture's samples, copies of its first N samples that
 * have a stack, each 1 ns after the last, the k-th (0-based) with rr_ticks
 * TICKS + 1000 k; copy 1 gets tid pid + 1 (a thread other than the main
 * one).  Prints each new sample as "index pid tid ticks". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cygprof/cygprof-capture.h"

static int fail(const char *file, int err)
{
	fprintf(stderr, "rr-ticks-set: %s: %s\n", file, cygprof_strerror(err));
	return 1;
}

int main(int argc, char **argv)
{
	struct cygprof_capture *cap;
	struct cygprof_psample *ps, *add;
	size_t n, want, k = 0;
	uint64_t ticks;
	int err;

	if (argc != 4) {
		fprintf(stderr, "usage: rr-ticks-set FILE N TICKS\n");
		return 2;
	}
	want = strtoul(argv[2], NULL, 10);
	ticks = strtoull(argv[3], NULL, 10);
	err = cygprof_capture_open_rw(argv[1], &cap);
	if (err)
		return fail(argv[1], err);
	err = cygprof_capture_get_psamples(cap, &ps, &n);
	if (err || !n) {
		cygprof_capture_discard(cap);
		return err ? fail(argv[1], err) : 1;
	}
	add = calloc(want, sizeof *add);
	if (!add)
		return 1;
	for (size_t i = 0; i < n && k < want; i++) {
		if (!ps[i].stack)
			continue;
		add[k] = ps[i];
		add[k].t_ns = ps[n - 1].t_ns + 1 + k;
		add[k].rr_ticks = ticks + 1000 * k;
		if (k == 1) {
			add[k].tid = add[k].pid + 1;
			add[k].thread_idx = CYGPROF_NONE;
		}
		printf("%zu %u %u %" PRIu64 "\n", n + k, add[k].pid, add[k].tid, add[k].rr_ticks);
		k++;
	}
	err = cygprof_capture_begin(cap);
	if (!err)
		err = cygprof_capture_append_psamples(cap, add, k);
	if (!err)
		err = cygprof_capture_commit(cap);
	if (err) {
		cygprof_capture_discard(cap);
		return fail(argv[1], err);
	}
	err = cygprof_capture_close(cap);
	free(ps);
	free(add);
	return err ? fail(argv[1], err) : 0;
}
