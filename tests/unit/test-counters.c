/* SPDX-License-Identifier: MIT */
/* test-counters.c - counter series from a view (analysis/counters.h) on a
 * synthetic capture: stored counters in the system-first order, and the
 * live heap of each process derived from its memory events, sampled at
 * its own counters' times as the maximum within each interval. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "counters.h"
#include "view.h"

static char dir[PATH_MAX];
static char path[PATH_MAX + 16];

#define A(t, a, sz) {.ts_ns = t, .addr = a, .size = sz, .stack = 1, .op = CYGPROF_MEM_ALLOC}
#define F(t, a) {.ts_ns = t, .addr = a, .op = CYGPROF_MEM_FREE, .fn = CYGPROF_FN_FREE}

static void write_capture(int with_memory)
{
	struct cygprof_capture *cap;
	struct cygprof_proc p[2] = {
		{.idx = 0, .pid = 100, .parent_idx = CYGPROF_NONE, .end_ns = 100,
		 .end_kind = CYGPROF_END_EXIT, .command = "prog", .exe = "/bin/prog"},
		{.idx = 1, .pid = 101, .ppid = 100, .parent_idx = 0, .end_ns = 60,
		 .end_kind = CYGPROF_END_EXIT, .command = "prog", .exe = "/bin/prog"},
	};
	struct cygprof_thread th[3] = {
		{.idx = 0, .proc_idx = 0, .tid = 100, .end_ns = 100, .name = "prog"},
		{.idx = 1, .proc_idx = 0, .tid = 102, .end_ns = 90, .name = "worker"},
		{.idx = 2, .proc_idx = 1, .tid = 101, .end_ns = 60, .name = "prog"},
	};
	/* defined in this order: process 0's first, then the system's, then
	 * process 1's: the view puts the system's first */
	struct cygprof_counter c[4] = {
		{.id = 0, .proc_idx = 0, .unit = CYGPROF_UNIT_BYTES, .name = "statm/resident"},
		{.id = 1, .proc_idx = CYGPROF_NONE, .unit = CYGPROF_UNIT_BYTES,
		 .name = "meminfo/MemFree"},
		{.id = 2, .proc_idx = 1, .unit = CYGPROF_UNIT_BYTES, .name = "statm/resident"},
		{.id = 3, .proc_idx = 0, .unit = CYGPROF_UNIT_BYTES, .name = "memdump/Cache"},
	};
	const struct cygprof_sample res0[] = {{20, 4096}, {40, 8192}, {60, 8192}, {80, 12288}};
	const struct cygprof_sample mf[] = {{10, 1000}, {50, 900}};
	const struct cygprof_sample res1[] = {{30, 4096}, {50, 4096}};
	const struct cygprof_sample md[] = {{20, 65536}, {80, 131072}};
	/* thread 0: +100 @5, +50 @25 (peak 150 inside (20,40]), -100 @30;
	 * thread 1: +30 @45, realloc in place 30->70 @70 (a free-less
	 * re-allocation of a live address), free @95 after the last tick */
	const struct cygprof_mem_event m0[] = {A(5, 0x10, 100), A(25, 0x20, 50), F(30, 0x10)};
	const struct cygprof_mem_event m1[] = {A(45, 0x30, 30), A(70, 0x30, 70), F(95, 0x30)};
	const struct cygprof_stack_node stash[] = {{.id = 1, .proc_idx = 0, .addr = 0x1000}};

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "mode", with_memory ? "profile+memory" : "profile"),
		     0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "duration_ns", "100"), 0);
	for (size_t i = 0; i < 2; i++)
		CHECK_EQ_INT(cygprof_capture_put_proc(cap, &p[i]), 0);
	for (size_t i = 0; i < 3; i++)
		CHECK_EQ_INT(cygprof_capture_put_thread(cap, &th[i]), 0);
	for (size_t i = 0; i < 4; i++)
		CHECK_EQ_INT(cygprof_capture_put_counter(cap, &c[i]), 0);
	CHECK_EQ_INT(cygprof_capture_append_samples(cap, 0, res0, 4), 0);
	CHECK_EQ_INT(cygprof_capture_append_samples(cap, 1, mf, 2), 0);
	CHECK_EQ_INT(cygprof_capture_append_samples(cap, 2, res1, 2), 0);
	CHECK_EQ_INT(cygprof_capture_append_samples(cap, 3, md, 2), 0);
	if (with_memory) {
		CHECK_EQ_INT(cygprof_capture_put_stacks(cap, stash, 1), 0);
		CHECK_EQ_INT(cygprof_capture_append_mem(cap, 0, m0, 3), 0);
		CHECK_EQ_INT(cygprof_capture_append_mem(cap, 1, m1, 3), 0);
	}
	CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
}

static void check_series(const struct counter_series *c, const char *name, uint32_t pid,
			 const struct cygprof_sample *want, size_t n)
{
	CHECK_EQ_STR(c->name, name);
	CHECK_EQ_U64(c->pid, pid);
	CHECK_EQ_U64(c->n, n);
	for (size_t i = 0; i < n && i < c->n; i++) {
		CHECK_EQ_U64(c->s[i].t_ns, want[i].t_ns);
		CHECK_EQ_INT(c->s[i].value, want[i].value);
	}
}

static void test_stored(void)
{
	struct counter_set cs;
	struct view *v;
	const struct cygprof_sample mf[] = {{10, 1000}, {50, 900}};
	const struct cygprof_sample res1[] = {{30, 4096}, {50, 4096}};

	write_capture(0);
	CHECK_EQ_INT(view_open(path, NULL, &v), 0);
	CHECK_EQ_INT(counters_load(v, 1, &cs), 0);
	/* no memory: no heap series */
	CHECK_EQ_U64(cs.n, 4);
	check_series(&cs.v[0], "meminfo/MemFree", 0, mf, 2);
	CHECK_EQ_U64(cs.v[0].proc_idx, CYGPROF_NONE);
	CHECK_EQ_STR(cs.v[1].name, "statm/resident");
	CHECK_EQ_STR(cs.v[2].name, "memdump/Cache");
	CHECK_EQ_U64(cs.v[2].pid, 100);
	check_series(&cs.v[3], "statm/resident", 101, res1, 2);
	CHECK_EQ_STR(counters_unit_name(cs.v[0].unit), "bytes");
	counters_release(&cs);
	view_close(v);
}

static void test_heap(void)
{
	struct counter_set cs;
	struct view *v;
	/* ticks of process 0: 20 40 60 80, then the last event at 95 (no tick
	 * after it) */
	const struct cygprof_sample bytes[] = {{20, 100}, {40, 150}, {60, 80}, {80, 120}, {95, 120}};
	const struct cygprof_sample blocks[] = {{20, 1}, {40, 2}, {60, 2}, {80, 2}, {95, 2}};

	write_capture(1);
	CHECK_EQ_INT(view_open(path, NULL, &v), 0);
	CHECK_EQ_INT(counters_load(v, 1, &cs), 0);
	/* process 1 has no memory events: no heap series for it */
	CHECK_EQ_U64(cs.n, 6);
	CHECK_EQ_STR(cs.v[0].name, "meminfo/MemFree");
	check_series(&cs.v[3], "heap/live_bytes", 100, bytes, 5);
	check_series(&cs.v[4], "heap/live_blocks", 100, blocks, 5);
	CHECK_EQ_U64(cs.v[3].unit, CYGPROF_UNIT_BYTES);
	CHECK_EQ_U64(cs.v[4].unit, CYGPROF_UNIT_COUNT);
	CHECK_EQ_STR(cs.v[5].name, "statm/resident");
	counters_release(&cs);
	/* without heap: the stored ones only */
	CHECK_EQ_INT(counters_load(v, 0, &cs), 0);
	CHECK_EQ_U64(cs.n, 4);
	counters_release(&cs);
	view_close(v);
}

int main(void)
{
	char tmpl[] = "/tmp/cygprof-test-counters.XXXXXX";

	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s", tmpl);
	snprintf(path, sizeof(path), "%s/c.cap", dir);
	RUN_TEST(test_stored);
	unlink(path);
	RUN_TEST(test_heap);
	unlink(path);
	rmdir(dir);
	CHECK_DONE();
}
