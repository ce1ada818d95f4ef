/* SPDX-License-Identifier: MIT */
/* limits-capture.c - write a synthetic capture that hit every limit a
 * recording can hit (for tests/safety/safety.py, test 'limits'):
 *
 *   thread 0, tid 100 "main":  calls 10, lost 7, unpaired 2, overflow 5
 *   thread 1, tid 101 "sig":   CYGPROF_THREAD_SIGNAL, sig_lost 3
 *   thread 2, tid 102 "cloned": CYGPROF_THREAD_CLONED, mem_lost 4
 *   meta: shm_full 9, damaged "...", no "complete" (interrupted)
 *
 * Usage: limits-capture FILE.  Prints the optional thread fields that the
 * capture library stored and read back ("stored: overflow sig_lost
 * mem_lost"), so that the test checks those only once the library keeps
 * them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cygprof/cygprof-capture.h"

#define DAMAGED "a ring head past the end of its ring (thread 3), ignored"

static void check(int err, const char *what)
{
	if (err) {
		fprintf(stderr, "limits-capture: %s: %s\n", what, cygprof_strerror(err));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct cygprof_proc p = {.idx = 0, .pid = 100, .ppid = 1, .parent_idx = CYGPROF_NONE,
				 .end_ns = 1000, .end_kind = CYGPROF_END_EXIT, .command = "prog",
				 .exe = "/nonexistent/prog"};
	struct cygprof_thread th[3] = {
		{.idx = 0, .tid = 100, .flags = CYGPROF_THREAD_ENDED, .end_ns = 1000, .calls = 10,
		 .lost = 7, .unpaired = 2, .overflow = 5, .name = "main"},
		{.idx = 1, .tid = 101, .flags = CYGPROF_THREAD_SIGNAL, .end_ns = 1000, .calls = 1,
		 .sig_lost = 3, .name = "sig"},
		{.idx = 2, .tid = 102, .flags = CYGPROF_THREAD_CLONED | CYGPROF_THREAD_ENDED,
		 .end_ns = 1000, .calls = 1, .mem_lost = 4, .name = "cloned"},
	};
	struct cygprof_object obj = {.idx = 0, .start = 0x1000, .end = 0x3000,
				     .path = "/nonexistent/prog"};
	struct cygprof_symbol syms[] = {
		{.object_idx = 0, .addr = 0x1000, .size = 0x100, .name = "main"},
		{.object_idx = 0, .addr = 0x1100, .size = 0x100, .name = "deep"},
		{.object_idx = 0, .addr = 0x1200, .size = 0x100, .name = "on_signal"},
		{.object_idx = 0, .addr = 0x1300, .size = 0x100, .name = "child"},
	};
	struct cygprof_node t0[] = {
		{.parent = CYGPROF_NONE},
		{.parent = 0, .fn = 0x1000, .site = 0x10, .calls = 1, .total_ns = 900},
		{.parent = 1, .fn = 0x1100, .site = 0x1010, .calls = 4, .total_ns = 400},
	};
	struct cygprof_node t1[] = {
		{.parent = CYGPROF_NONE},
		{.parent = 0, .fn = 0x1200, .site = 0x20, .calls = 1, .total_ns = 50},
	};
	struct cygprof_node t2[] = {
		{.parent = CYGPROF_NONE},
		{.parent = 0, .fn = 0x1300, .site = 0x30, .calls = 1, .total_ns = 60},
	};
	struct cygprof_thread *back = NULL;
	struct cygprof_capture *cap;
	size_t n = 0, i;

	if (argc != 2) {
		fprintf(stderr, "usage: limits-capture FILE\n");
		return 2;
	}
	check(cygprof_capture_create(argv[1], &cap), "create");
	check(cygprof_capture_begin(cap), "begin");
	check(cygprof_capture_set_meta(cap, "command", "prog"), "meta");
	check(cygprof_capture_set_meta(cap, "mode", "profile+timeline+memory"), "meta");
	check(cygprof_capture_set_meta(cap, "duration_ns", "1000"), "meta");
	check(cygprof_capture_set_meta(cap, "lost_events", "7"), "meta");
	check(cygprof_capture_set_meta(cap, "shm_full", "9"), "meta");
	check(cygprof_capture_set_meta(cap, "damaged", DAMAGED), "meta");
	check(cygprof_capture_put_proc(cap, &p), "proc");
	for (i = 0; i < 3; i++)
		check(cygprof_capture_put_thread(cap, &th[i]), "thread");
	check(cygprof_capture_put_tree(cap, 0, t0, 3), "tree");
	check(cygprof_capture_put_tree(cap, 1, t1, 2), "tree");
	check(cygprof_capture_put_tree(cap, 2, t2, 2), "tree");
	check(cygprof_capture_put_object(cap, &obj), "object");
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		check(cygprof_capture_put_symbol(cap, &syms[i]), "symbol");
	check(cygprof_capture_commit(cap), "commit");
	check(cygprof_capture_close(cap), "close");

	check(cygprof_capture_open(argv[1], &cap), "open");
	check(cygprof_capture_get_threads(cap, &back, &n), "threads");
	printf("stored:");
	if (n == 3 && back[0].overflow == 5)
		printf(" overflow");
	if (n == 3 && back[1].sig_lost == 3)
		printf(" sig_lost");
	if (n == 3 && back[2].mem_lost == 4)
		printf(" mem_lost");
	printf("\n");
	free(back);
	cygprof_capture_close(cap);
	return 0;
}
