/* SPDX-License-Identifier: MIT */
/* test-view.c - the capture view on a synthetic capture written with the
 * writer API: processes and threads, metadata and limits, naming (stored
 * symbols, hex names, the fallback resolver), trees with self times, call
 * sites, stacks, events, and profiles built from the view. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cpu.h"
#include "profile.h"
#include "psamples.h"
#include "latency.h"
#include "view.h"

static char dir[PATH_MAX];
static char path[PATH_MAX + 16];

/* Two processes (a parent and its fork child, same executable at another
 * bias), three threads. */
static void write_capture(void)
{
	struct cygprof_capture *cap;
	struct cygprof_proc p[2] = {
		{.idx = 0, .pid = 100, .parent_idx = CYGPROF_NONE, .end_ns = 900,
		 .end_kind = CYGPROF_END_EXIT, .command = "prog", .exe = "/bin/prog"},
		{.idx = 1, .pid = 101, .ppid = 100, .parent_idx = 0, .end_ns = 800,
		 .end_kind = CYGPROF_END_EXIT, .end_code = 7, .command = "prog", .exe = "/bin/prog"},
	};
	struct cygprof_thread th[3] = {
		{.idx = 0, .proc_idx = 0, .tid = 100, .end_ns = 900, .name = "prog", .lost = 2,
		 .overflow = 3},
		{.idx = 1, .proc_idx = 0, .tid = 102, .end_ns = 700, .name = "worker", .unpaired = 1},
		{.idx = 2, .proc_idx = 1, .tid = 101, .end_ns = 800, .name = "prog",
		 .flags = CYGPROF_THREAD_FORKED},
	};
	struct cygprof_object objs[3] = {
		{.idx = 0, .proc_idx = 0, .start = 0x1000, .end = 0x2000, .bias = 0x1000,
		 .build_id_len = 2, .build_id = {0xab, 0xcd}, .path = "/bin/prog"},
		{.idx = 1, .proc_idx = 0, .start = 0x9000, .end = 0xa000, .bias = 0x9000,
		 .path = "/lib/libc.so.6"},
		{.idx = 2, .proc_idx = 1, .start = 0x5000, .end = 0x6000, .bias = 0x5000,
		 .build_id_len = 2, .build_id = {0xab, 0xcd}, .path = "/bin/prog"},
	};
	struct cygprof_symbol syms[] = {
		{.proc_idx = 0, .object_idx = 0, .addr = 0x1000, .size = 0x100, .name = "main"},
		{.proc_idx = 0, .object_idx = 0, .addr = 0x1100, .size = 0x100, .name = "a"},
		{.proc_idx = 0, .object_idx = 0, .addr = 0x1200, .size = 0x100, .name = "0x1200"},
		{.proc_idx = 0, .object_idx = 1, .addr = 0x9000, .size = 0x80, .name = "malloc"},
		{.proc_idx = 1, .object_idx = 2, .addr = 0x5000, .size = 0x100, .name = "main"},
		{.proc_idx = 1, .object_idx = 2, .addr = 0x5100, .size = 0x100, .name = "a"},
	};
	/* main -> a -> 0x1200 (stored unnamed), main -> 0x1800 (no symbol) */
	const struct cygprof_node t0[] = {
		{.parent = CYGPROF_NONE},
		{.parent = 0, .fn = 0x1000, .calls = 1, .total_ns = 100},
		{.parent = 1, .fn = 0x1100, .site = 0x1010, .calls = 3, .total_ns = 60},
		{.parent = 2, .fn = 0x1200, .site = 0x1120, .calls = 6, .total_ns = 70},
		{.parent = 1, .fn = 0x1800, .site = 0x1030, .calls = 2, .total_ns = 15},
	};
	const struct cygprof_node t1[] = {
		{.parent = CYGPROF_NONE},
		{.parent = 0, .fn = 0x1100, .calls = 4, .total_ns = 40},
	};
	const struct cygprof_node t2[] = {
		{.parent = CYGPROF_NONE},
		{.parent = 0, .fn = 0x5000, .calls = 1, .total_ns = 50},
		{.parent = 1, .fn = 0x5100, .site = 0x5010, .calls = 2, .total_ns = 20},
	};
	const struct cygprof_callsite s0[] = {
		{.node = 1, .calls = 1, .total_ns = 100},
		{.node = 2, .site = 0x1010, .calls = 2, .total_ns = 40},
		{.node = 2, .site = 0x1020, .calls = 1, .total_ns = 20},
	};
	const struct cygprof_event ev[] = {
		{.ts_ns = 10, .node = 1, .kind = CYGPROF_EV_ENTER},
		{.ts_ns = 20, .node = 2, .kind = CYGPROF_EV_ENTER},
		{.ts_ns = 30, .node = 2, .kind = CYGPROF_EV_EXIT},
		{.ts_ns = 40, .node = 1, .kind = CYGPROF_EV_EXIT},
	};
#define S(i, par, k, a) {.id = (i), .parent = (par), .kind = CYGPROF_FRAME_##k, .addr = (a)}
	const struct cygprof_stack_node stash[] = {
		S(1, 0, FN, 0x1000),  /* main */
		S(2, 1, RA, 0x1101),  /* a (0x1100 looked up) */
		S(3, 2, FN, 0x9000),  /* malloc: [malloc, a, main] */
		S(4, 1, RA, 0x1900),  /* no symbol: 0x1900 */
	};
	size_t i;

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "mode", "profile+timeline+memory"), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "command", "prog"), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "shm_full", "5"), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "damaged", "bad node 7"), 0);
	for (i = 0; i < 2; i++)
		CHECK_EQ_INT(cygprof_capture_put_proc(cap, &p[i]), 0);
	for (i = 0; i < 3; i++)
		CHECK_EQ_INT(cygprof_capture_put_thread(cap, &th[i]), 0);
	for (i = 0; i < 3; i++)
		CHECK_EQ_INT(cygprof_capture_put_object(cap, &objs[i]), 0);
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		CHECK_EQ_INT(cygprof_capture_put_symbol(cap, &syms[i]), 0);
	CHECK_EQ_INT(cygprof_capture_put_tree(cap, 0, t0, 5), 0);
	CHECK_EQ_INT(cygprof_capture_put_tree(cap, 1, t1, 2), 0);
	CHECK_EQ_INT(cygprof_capture_put_tree(cap, 2, t2, 3), 0);
	CHECK_EQ_INT(cygprof_capture_put_sites(cap, 0, s0, 3), 0);
	CHECK_EQ_INT(cygprof_capture_append_events(cap, 0, ev, 4), 0);
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, stash, 4), 0);
	CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
}

static struct view *open_view(void)
{
	struct view *v = NULL;

	CHECK_EQ_INT(view_open(path, NULL, &v), 0);
	return v;
}

static void test_tasks(void)
{
	const struct cygprof_thread *t;
	const struct cygprof_proc *p;
	struct view *v = open_view();
	size_t nt = 0, np = 0;
	char name[16];

	if (!v)
		return;
	CHECK_EQ_INT(view_threads(v, &t, &nt), 0);
	CHECK_EQ_INT(view_procs(v, &p, &np), 0);
	CHECK_EQ_U64(nt, 3);
	CHECK_EQ_U64(np, 2);
	CHECK(view_thread(v, 2) == &t[2]);
	CHECK(view_thread(v, 3) == NULL);
	CHECK(view_proc(v, 1) == &p[1]);
	CHECK_EQ_U64(view_thread_pid(v, &t[2]), 101);
	CHECK_EQ_STR(view_thread_name(&t[1], name), "worker");
	/* fetched once: the same arrays again */
	{
		const struct cygprof_thread *t2;
		size_t n2;

		CHECK_EQ_INT(view_threads(v, &t2, &n2), 0);
		CHECK(t2 == t);
	}
	view_close(v);
}

static void test_meta_limits(void)
{
	struct view *v = open_view();
	struct view_limits l;
	const char *s1 = NULL, *s2 = NULL;

	if (!v)
		return;
	CHECK_EQ_INT(view_meta(v, "command", &s1), 0);
	CHECK_EQ_INT(view_meta(v, "command", &s2), 0);
	CHECK(s1 && s1 == s2);
	CHECK_EQ_STR(s1, "prog");
	CHECK_EQ_INT(view_meta(v, "filters", &s1), CYGPROF_E_NOTFOUND);
	CHECK(s1 == NULL);
	CHECK(view_mode_has(v, "timeline"));
	CHECK(!view_mode_has(v, "samples"));
	CHECK_EQ_U64(view_duration_ns(v), 900); /* no duration_ns: the latest thread end */
	view_limits(v, &l);
	CHECK_EQ_U64(l.lost, 2);
	CHECK_EQ_U64(l.overflow, 3);
	CHECK_EQ_U64(l.unpaired, 1);
	CHECK_EQ_INT(l.shm_full_set, 1);
	CHECK_EQ_U64(l.shm_full, 5);
	CHECK_EQ_STR(l.damaged, "bad node 7");
	CHECK_EQ_INT(l.incomplete, 1);
	view_close(v);
}

static void test_naming(void)
{
	struct view *v = open_view();
	const struct view_fn *f;
	struct view_sym s;
	uint32_t a, b, c, d;

	if (!v)
		return;
	CHECK_EQ_INT(view_fn_at(v, 0, 0x1100, &a), 0);
	CHECK_EQ_INT(view_fn_at(v, 1, 0x5100, &b), 0);
	CHECK_EQ_INT(view_fn_at(v, 0, 0x1100, &c), 0);
	CHECK_EQ_INT(view_fn_at(v, 0, 0x1800, &d), 0);
	CHECK_EQ_INT(a, c);
	CHECK(a != b);
	f = view_fn(v, a);
	CHECK_EQ_STR(f->name, "a");
	CHECK_EQ_INT(f->has_sym, 1);
	CHECK_EQ_U64(f->start, 0x1100);
	CHECK_EQ_U64(f->size, 0x100);
	CHECK_EQ_STR(f->obj->path, "/bin/prog");
	CHECK_EQ_STR(view_fn(v, b)->name, "a");
	CHECK_EQ_U64(view_fn(v, b)->obj->idx, 2);
	f = view_fn(v, d);
	CHECK_EQ_STR(f->name, "0x1800"); /* no symbol covers it */
	CHECK_EQ_INT(f->has_sym, 0);
	CHECK(view_fn(v, (uint32_t)view_nfns(v)) == NULL);
	CHECK_EQ_INT(view_symbol(v, 0, 0x1180, &s), 0);
	CHECK_EQ_STR(s.name, "a");
	CHECK_EQ_INT(view_symbol(v, 0, 0x3000, &s), -ENOENT);
	CHECK(s.obj == NULL);
	CHECK_EQ_U64(view_exe_object(v, 1)->idx, 2);
	CHECK_EQ_U64(view_object_at(v, 0, 0x9010)->idx, 1);
	CHECK(view_object_at(v, 1, 0x9010) == NULL);
	CHECK(view_hex(v, 0x42) == view_hex(v, 0x42));
	view_close(v);
}

/* A resolver standing for report-time debug info: it names file address
 * 0x200 of the object with build-id ab cd. */
static int fake_resolve(void *arg, const struct cygprof_object *obj, uint64_t file_addr,
			struct view_sym *out)
{
	int *calls = arg;

	++*calls;
	if (obj->build_id_len != 2 || obj->build_id[0] != 0xab || file_addr < 0x200 ||
	    file_addr >= 0x280)
		return -ENOENT;
	out->name = "late_named";
	out->start = 0x200;
	out->size = 0x80;
	return 0;
}

static void test_resolver(void)
{
	struct view *v = open_view();
	const struct view_tree *t;
	struct view_sym s;
	int calls = 0;

	if (!v)
		return;
	view_set_resolver(v, fake_resolve, &calls);
	CHECK_EQ_INT(view_symbol(v, 0, 0x1210, &s), 0);
	CHECK_EQ_STR(s.name, "late_named");
	CHECK_EQ_U64(s.start, 0x1200); /* back to a runtime address */
	CHECK_EQ_INT(view_tree(v, 0, &t), 0);
	if (t && t->n == 5) {
		CHECK_EQ_STR(view_fn(v, t->fn[3])->name, "late_named");
		CHECK_EQ_STR(view_fn(v, t->fn[4])->name, "0x1800"); /* the resolver has none */
		CHECK_EQ_STR(view_fn(v, t->fn[2])->name, "a");     /* stored names win */
	}
	CHECK(calls >= 2);
	view_close(v);
}

static void test_trees(void)
{
	struct view *v = open_view();
	const struct cygprof_callsite *cs;
	const struct view_tree *t, *t2;
	size_t n;

	if (!v)
		return;
	CHECK_EQ_INT(view_tree(v, 0, &t), 0);
	CHECK_EQ_U64(t->n, 5);
	CHECK_EQ_U64(t->total_ns, 100);
	CHECK_EQ_U64(t->self_ns[1], 25); /* 100 - 60 - 15 */
	CHECK_EQ_U64(t->self_ns[2], 0);  /* 60 - 70, clamped */
	CHECK_EQ_U64(t->self_ns[3], 70);
	CHECK_EQ_U64(t->fn[0], VIEW_NONE);
	CHECK_EQ_STR(view_fn(v, t->fn[3])->name, "0x1200"); /* the stored placeholder */
	CHECK_EQ_INT(view_tree(v, 0, &t2), 0);
	CHECK(t2 == t);
	CHECK_EQ_INT(view_tree(v, 9, &t2), CYGPROF_E_NOTFOUND);
	CHECK_EQ_INT(view_sites(v, 0, &cs, &n), 0);
	CHECK_EQ_U64(n, 3);
	CHECK_EQ_INT(view_sites(v, 1, &cs, &n), 0);
	CHECK_EQ_U64(n, 0); /* none stored */
	view_close(v);
}

static void test_profiles(void)
{
	struct view *v = open_view();
	struct profile *all = NULL, *one = NULL;
	uint32_t sel = 2;
	long a;

	if (!v)
		return;
	CHECK_EQ_INT(profile_load(v, NULL, 0, &all), 0);
	CHECK_EQ_INT(profile_load(v, &sel, 1, &one), 0);
	if (all && one) {
		a = profile_find(all, "a");
		CHECK(a >= 0);
		if (a >= 0)
			CHECK_EQ_U64(all->fns[a].calls, 3 + 4 + 2); /* merged by name */
		CHECK_EQ_U64(all->nthreads, 3);
		CHECK_EQ_U64(one->nthreads, 1);
		CHECK_EQ_U64(one->threads[0].info.pid, 101);
		CHECK_EQ_U64(one->threads[0].total_ns, 50);
		a = profile_find(one, "main");
		CHECK(a >= 0);
		if (a >= 0)
			CHECK_EQ_U64(one->fns[a].self_ns, 30);
		CHECK_EQ_INT(profile_find(one, "0x1800"), -ENOENT);
	}
	profile_free(all);
	profile_free(one);
	view_close(v);
}

static int skip_malloc(const char *name, const char *obj)
{
	(void)obj;
	return !strcmp(name, "malloc");
}

static void test_stacks_events(void)
{
	struct view *v = open_view();
	struct cygprof_event *ev;
	struct view_frame *f;
	size_t n;

	if (!v)
		return;
	CHECK_EQ_INT(view_stack(v, 3, 0, NULL, &f, &n), 0);
	CHECK_EQ_U64(n, 3);
	if (n == 3) {
		CHECK_EQ_STR(f[0].name, "malloc");
		CHECK_EQ_STR(f[1].name, "a");
		CHECK_EQ_U64(f[1].raw, 0x1101);
		CHECK_EQ_U64(f[1].addr, 0x1100);
		CHECK_EQ_STR(f[2].name, "main");
		CHECK_EQ_STR(f[0].obj->path, "/lib/libc.so.6");
	}
	free(f);
	CHECK_EQ_INT(view_stack(v, 3, VIEW_LINES, skip_malloc, &f, &n), 0);
	CHECK_EQ_U64(n, 2);
	if (n == 2) {
		CHECK_EQ_STR(f[0].name, "a");
		CHECK(f[0].file == NULL); /* the object does not exist */
	}
	free(f);
	CHECK_EQ_INT(view_stack(v, 4, 0, NULL, &f, &n), 0);
	CHECK_EQ_U64(n, 2);
	if (n == 2)
		CHECK_EQ_STR(f[0].name, "0x1900"); /* the stored address, not 0x18ff */
	free(f);
	CHECK_EQ_INT(view_stack(v, 99, 0, NULL, &f, &n), 0);
	CHECK_EQ_U64(n, 0);
	free(f);
	CHECK_EQ_INT(view_events_read(v, 0, &ev, &n), 0);
	CHECK_EQ_U64(n, 4);
	if (n == 4)
		CHECK_EQ_U64(ev[3].ts_ns, 40);
	free(ev);
	CHECK_EQ_INT(view_events_read(v, 1, &ev, &n), 0);
	CHECK_EQ_U64(n, 0);
	free(ev);
	view_close(v);
}

/* psamples.c's rule for cygprof's own runtime: its two libraries in any
 * directory (and any soname version), or a hook by name without an object;
 * nothing else, not a program function that starts alike. */
static void test_runtime_frames(void)
{
	CHECK(psamp_runtime_frame("enter_clock", "/usr/lib/x86_64-linux-gnu/libcygprof-cyg.so.1"));
	CHECK(psamp_runtime_frame("cyg__enter_slow", "build/cyg/libcygprof-cyg.so"));
	CHECK(psamp_runtime_frame("malloc", "/opt/x/libcygprof-mem.so"));
	CHECK(psamp_runtime_frame("__cyg_profile_func_enter", NULL));
	CHECK(psamp_runtime_frame("__cyg_profile_func_exit", "/bin/prog"));
	CHECK(psamp_runtime_frame(NULL, "libcygprof-cyg.so"));
	CHECK(!psamp_runtime_frame("main", "/bin/prog"));
	CHECK(!psamp_runtime_frame("malloc", "/usr/lib/x86_64-linux-gnu/libc.so.6"));
	CHECK(!psamp_runtime_frame("cyg_helper", "/bin/prog"));
	CHECK(!psamp_runtime_frame("spin", "/tmp/libcygprof-capture.so"));
	CHECK(!psamp_runtime_frame("x", "/srv/libcygprof-cyg/prog"));
	CHECK(!psamp_runtime_frame(NULL, NULL));
}

/* CPU samples and off-CPU time (view_cpu(), cpu_sum_load()) on a capture
 * of its own: root -> main -> a -> c, main -> b -> c; thread 1 has no
 * record.  Unfiltered every node keeps its own; -N a -N b gives a's and
 * b's figures to main and merges the two c into one under main; -F b
 * keeps main -> b -> c only in scope: the rest goes to the root. */
static void test_cpu(void)
{
	char p2[PATH_MAX + 16];
	struct cygprof_capture *cap;
	struct cygprof_proc pr = {.idx = 0, .pid = 10, .parent_idx = CYGPROF_NONE, .end_ns = 900,
				  .end_kind = CYGPROF_END_EXIT, .command = "p", .exe = "/bin/p"};
	struct cygprof_thread th[2] = {{.idx = 0, .proc_idx = 0, .tid = 10, .end_ns = 900},
				       {.idx = 1, .proc_idx = 0, .tid = 11, .end_ns = 900}};
	struct cygprof_symbol syms[] = {
		{.proc_idx = 0, .object_idx = CYGPROF_NONE, .addr = 0x100, .size = 16, .name = "main"},
		{.proc_idx = 0, .object_idx = CYGPROF_NONE, .addr = 0x200, .size = 16, .name = "a"},
		{.proc_idx = 0, .object_idx = CYGPROF_NONE, .addr = 0x300, .size = 16, .name = "b"},
		{.proc_idx = 0, .object_idx = CYGPROF_NONE, .addr = 0x400, .size = 16, .name = "c"},
	};
	const struct cygprof_node t[] = {
		{.parent = CYGPROF_NONE},
		{.parent = 0, .fn = 0x100, .calls = 1, .total_ns = 1000},
		{.parent = 1, .fn = 0x200, .calls = 1, .total_ns = 400},
		{.parent = 2, .fn = 0x400, .calls = 1, .total_ns = 100},
		{.parent = 1, .fn = 0x300, .calls = 1, .total_ns = 400},
		{.parent = 4, .fn = 0x400, .calls = 1, .total_ns = 100},
	};
	struct cygprof_cpu c = {.thread_idx = 0, .method = CYGPROF_CPU_PERF,
				.flags = CYGPROF_CPU_SWITCHES, .period_ns = 1000, .samples = 62,
				.overhead = 7};
	const struct cygprof_cpu_node rows[] = {
		{.node = 0, .samples = 1},
		{.node = 1, .samples = 10, .overhead = 1, .wait_ns = 5},
		{.node = 2, .samples = 20, .overhead = 2, .blocked_ns = 300},
		{.node = 3, .samples = 3, .overhead = 1},
		{.node = 4, .samples = 4, .overhead = 2, .wait_ns = 7},
		{.node = 5, .samples = 5, .overhead = 1, .blocked_ns = 11},
		{.node = 9, .samples = 1000}, /* past the tree: dropped */
	};
	const struct view_cpu *vc;
	struct view *v;
	size_t i;

	snprintf(p2, sizeof(p2), "%s/cpu.cap", dir);
	CHECK_EQ_INT(cygprof_capture_create(p2, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "cpu_sampler", "perf"), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "cpu_period_ns", "1000"), 0);
	CHECK_EQ_INT(cygprof_capture_put_proc(cap, &pr), 0);
	for (i = 0; i < 2; i++)
		CHECK_EQ_INT(cygprof_capture_put_thread(cap, &th[i]), 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ_INT(cygprof_capture_put_symbol(cap, &syms[i]), 0);
	CHECK_EQ_INT(cygprof_capture_put_tree(cap, 0, t, 6), 0);
	CHECK_EQ_INT(cygprof_capture_put_tree(cap, 1, t, 2), 0);
	CHECK_EQ_INT(cygprof_capture_put_cpu(cap, &c, rows, 7), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	/* unfiltered: each node its own */
	CHECK_EQ_INT(view_open(p2, NULL, &v), 0);
	if (!v)
		return;
	CHECK_EQ_STR(cpu_sampler(v), "perf");
	CHECK_EQ_U64(cpu_period_ns(v), 1000);
	CHECK_EQ_INT(view_cpu(v, 0, &vc), 0);
	CHECK(vc && vc->present);
	if (vc && vc->present) {
		CHECK_EQ_U64(vc->n, 6);
		CHECK_EQ_U64(vc->period_ns, 1000);
		CHECK_EQ_U64(vc->thread.samples, 62);
		CHECK_EQ_U64(vc->dropped, 1);
		for (i = 0; i + 1 < sizeof(rows) / sizeof(rows[0]); i++) {
			CHECK_EQ_U64(vc->samples[rows[i].node], rows[i].samples);
			CHECK_EQ_U64(vc->overhead[rows[i].node], rows[i].overhead);
			CHECK_EQ_U64(vc->wait_ns[rows[i].node], rows[i].wait_ns);
			CHECK_EQ_U64(vc->blocked_ns[rows[i].node], rows[i].blocked_ns);
		}
	}
	CHECK_EQ_INT(view_cpu(v, 1, &vc), 0);
	CHECK(vc && !vc->present && vc->n == 0);
	/* by function: c's two nodes add up; the root's sample is no function's */
	struct profile *pf;
	struct cpu_sum *cs;
	CHECK_EQ_INT(profile_load(v, NULL, 0, &pf), 0);
	if (pf) {
		CHECK_EQ_INT(cpu_sum_load(v, pf, &cs), 0);
		if (cs) {
			long f = profile_find(pf, "c");
			CHECK(f >= 0);
			if (f >= 0) {
				CHECK_EQ_U64(cs->fn[f].samples, 8);
				CHECK_EQ_U64(cs->fn[f].overhead, 2);
				CHECK_EQ_U64(cs->fn[f].blocked_ns, 11);
			}
			CHECK_EQ_U64(cs->root.samples, 1);
			CHECK_EQ_U64(cs->total.samples, 43);
			CHECK_EQ_U64(cs->taken, 62);
			CHECK_EQ_U64(cs->methods, 1u << CYGPROF_CPU_PERF);
			CHECK_EQ_INT(cs->switches, 1);
			cpu_sum_free(cs);
		}
		profile_free(pf);
	}
	view_close(v);

	/* -N a -N b: their figures to main, the two c merged under main */
	const char *const notrace[] = {"a", "b"};
	struct view_filter fl = {.notrace = notrace, .nnotrace = 2};
	const struct view_tree *tr;
	CHECK_EQ_INT(view_open(p2, NULL, &v), 0);
	if (!v)
		return;
	CHECK_EQ_INT(view_set_filter(v, &fl), 0);
	CHECK_EQ_INT(view_tree(v, 0, &tr), 0);
	CHECK_EQ_INT(view_cpu(v, 0, &vc), 0);
	CHECK(tr && vc && vc->present && tr->n == 3 && vc->n == 3);
	if (tr && vc && vc->n == 3 && tr->n == 3) {
		CHECK_EQ_U64(vc->samples[0], 1);
		CHECK_EQ_U64(vc->samples[1], 10 + 20 + 4);
		CHECK_EQ_U64(vc->overhead[1], 1 + 2 + 2);
		CHECK_EQ_U64(vc->wait_ns[1], 5 + 7);
		CHECK_EQ_U64(vc->blocked_ns[1], 300);
		CHECK_EQ_U64(tr->nodes[2].parent, 1);
		CHECK_EQ_U64(vc->samples[2], 3 + 5);
		CHECK_EQ_U64(vc->blocked_ns[2], 11);
	}
	view_close(v);

	/* -F b: main -> b -> c kept; main's, a's and the first c's own go to
	 * the root, the nearest kept ancestor */
	const char *const only[] = {"b"};
	struct view_filter fo = {.filter = only, .nfilter = 1};
	CHECK_EQ_INT(view_open(p2, NULL, &v), 0);
	if (!v)
		return;
	CHECK_EQ_INT(view_set_filter(v, &fo), 0);
	CHECK_EQ_INT(view_cpu(v, 0, &vc), 0);
	CHECK(vc && vc->present && vc->n == 3);
	if (vc && vc->n == 3) {
		CHECK_EQ_U64(vc->samples[0], 1 + 10 + 20 + 3);
		CHECK_EQ_U64(vc->samples[1], 4);
		CHECK_EQ_U64(vc->samples[2], 5);
	}
	view_close(v);
	unlink(p2);
}

/* ---- the calibration and what compensation makes of it ----------------- */

static char cpath[PATH_MAX + 16];

/* One thread, main -> a (10 calls) -> b (100 calls), main -> w, and a
 * stored calibration: o_in 5 ns, o_out 5 ns (o_full 10), spreads 0.5 and
 * 0.25, or one of 1 ms per call (absurd). */
static void write_calibrated(const char *file, int absurd)
{
	struct cygprof_capture *cap;
	struct cygprof_proc p = {.idx = 0, .pid = 200, .parent_idx = CYGPROF_NONE, .end_ns = 9000,
				 .end_kind = CYGPROF_END_EXIT, .command = "cal", .exe = "/bin/cal"};
	struct cygprof_thread th = {.idx = 0, .proc_idx = 0, .tid = 200, .end_ns = 9000,
				    .name = "cal"};
	const struct cygprof_node t[] = {
		{.parent = CYGPROF_NONE},
		{.parent = 0, .fn = 0x1000, .calls = 1, .total_ns = 5000},
		{.parent = 1, .fn = 0x1100, .site = 0x1010, .calls = 10, .total_ns = 900},
		{.parent = 2, .fn = 0x1200, .site = 0x1110, .calls = 100, .total_ns = 800},
		{.parent = 1, .fn = 0x1300, .site = 0x1020, .calls = 1, .total_ns = 4000},
	};
	const char *meta[][2] = {
		{"overhead_in_ns", absurd ? "1000000.000" : "5.000"},
		{"overhead_out_ns", absurd ? "0.000" : "5.000"},
		{"overhead_in_spread_ns", "0.500"},
		{"overhead_out_spread_ns", "0.250"},
		{"overhead_calls", "2000"},
		{"overhead_rounds", "11"},
		{"overhead_rounds_kept", "10"},
		{"overhead_tries", "2"},
		{"overhead_mode", "timeline"},
		{"overhead_ring_bytes", "4194304"},
		{"overhead_images", "3"},
		{"overhead_in_range_ns", "4.500..6.250"},
		{"overhead_out_range_ns", "5.000..5.125"},
	};

	CHECK_EQ_INT(cygprof_capture_create(file, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
	for (size_t i = 0; i < sizeof meta / sizeof meta[0]; i++)
		CHECK_EQ_INT(cygprof_capture_set_meta(cap, meta[i][0], meta[i][1]), 0);
	CHECK_EQ_INT(cygprof_capture_put_proc(cap, &p), 0);
	CHECK_EQ_INT(cygprof_capture_put_thread(cap, &th), 0);
	CHECK_EQ_INT(cygprof_capture_put_tree(cap, 0, t, 5), 0);
	CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
}

/* Every node at least its children's sum; self times from it. */
static void check_no_node_below(const struct view_tree *t)
{
	uint64_t kids[16] = {0};

	CHECK(t->n <= 16);
	for (size_t i = 1; i < t->n && i < 16; i++)
		kids[t->nodes[i].parent] += t->nodes[i].total_ns;
	for (size_t i = 0; i < t->n && i < 16; i++) {
		CHECK(t->nodes[i].total_ns >= kids[i]);
		CHECK_EQ_U64(t->self_ns[i], t->nodes[i].total_ns - kids[i]);
	}
}

static void test_calibration(void)
{
	struct view *v = NULL;
	struct view_overhead o;
	const struct view_tree *t;
	uint64_t clamped;

	write_calibrated(cpath, 0);
	CHECK_EQ_INT(view_open(cpath, NULL, &v), 0);
	if (!v)
		return;
	view_overhead(v, &o);
	CHECK_EQ_INT(o.present, 1);
	CHECK(o.in_ns == 5 && o.out_ns == 5);
	CHECK(o.in_spread_ns == 0.5 && o.out_spread_ns == 0.25);
	CHECK_EQ_U64(o.calls, 2000);
	CHECK_EQ_U64(o.rounds, 11);
	CHECK_EQ_U64(o.kept, 10);
	CHECK_EQ_U64(o.tries, 2);
	CHECK_EQ_STR(o.mode, "timeline");
	CHECK_EQ_U64(o.ring_bytes, 4194304);
	CHECK_EQ_U64(o.images, 3);
	CHECK(o.in_min == 4.5 && o.in_max == 6.25 && o.out_min == 5 && o.out_max == 5.125);
	CHECK_EQ_INT(view_tree(v, 0, &t), 0);
	if (t) {
		/* b 800 - 100*5 = 300; a 900 - 50 - 1000 < 300: clamped at b's;
		 * w 4000 - 5; main 5000 - 5 - 1110 = 3885 < 300 + 3995: clamped */
		CHECK_EQ_U64(t->nodes[3].total_ns, 300);
		CHECK_EQ_U64(t->nodes[2].total_ns, 300);
		CHECK_EQ_U64(t->nodes[4].total_ns, 3995);
		CHECK_EQ_U64(t->nodes[1].total_ns, 4295);
		CHECK_EQ_U64(t->clamped, 2);
		check_no_node_below(t);
	}
	CHECK_EQ_INT(view_compensation_clamped(v, &clamped), 0);
	CHECK_EQ_U64(clamped, 2);
	view_close(v);

	/* --raw-times: as stored, nothing clamped */
	struct view_opts ro = {.raw_times = 1};
	CHECK_EQ_INT(view_open(cpath, &ro, &v), 0);
	if (!v)
		return;
	CHECK_EQ_INT(view_tree(v, 0, &t), 0);
	if (t) {
		CHECK_EQ_U64(t->nodes[1].total_ns, 5000);
		CHECK_EQ_U64(t->clamped, 0);
	}
	CHECK_EQ_INT(view_compensation_clamped(v, &clamped), 0);
	CHECK_EQ_U64(clamped, 0);
	view_close(v);

	/* absurd: every node clamped, none below its children, none negative */
	write_calibrated(cpath, 1);
	CHECK_EQ_INT(view_open(cpath, NULL, &v), 0);
	if (!v)
		return;
	CHECK_EQ_INT(view_tree(v, 0, &t), 0);
	if (t) {
		CHECK_EQ_U64(t->clamped, 4);
		check_no_node_below(t);
	}
	view_close(v);
	unlink(cpath);
}

/* Two calibrations differ when their figures are further apart than
 * their spreads together. */
static void test_calibrations_differ(void)
{
	struct view_overhead a = {.present = 1, .in_ns = 11, .out_ns = 9.8, .in_spread_ns = 0.4,
				  .out_spread_ns = 0.3};
	struct view_overhead b = a;
	double d;

	CHECK_EQ_INT(view_overhead_differ(&a, &b, &d), 0);
	CHECK(d == 0);
	b.in_ns = 11.7; /* 0.7 < 0.8; full 21.5 vs 20.8: 0.7 < 1.4 */
	CHECK_EQ_INT(view_overhead_differ(&a, &b, &d), 0);
	b.in_ns = 16.3; /* the lua run: 5.3 > 0.8 */
	b.out_ns = 20.8 - 16.3 + 4.5;
	CHECK_EQ_INT(view_overhead_differ(&a, &b, &d), 1);
	CHECK(d > 5.29 && d < 5.31); /* |16.3 - 11|; full 25.3 vs 20.8: 4.5 */
	/* one wide spread covers it */
	b.in_spread_ns = 9;
	CHECK_EQ_INT(view_overhead_differ(&a, &b, &d), 0);
	/* spreads not said: 5% of each figure */
	a.in_spread_ns = a.out_spread_ns = -1;
	b = a;
	b.in_ns = 11.5; /* 0.5 < 0.55 + 0.575; full 21.3 vs 20.8: 0.5 < 2.105 */
	CHECK_EQ_INT(view_overhead_differ(&a, &b, &d), 0);
	b.in_ns = 12.5;
	CHECK_EQ_INT(view_overhead_differ(&a, &b, &d), 1);
}

/* Distributions of call durations (analysis/latency.c): the quantiles of
 * segments read as calls spread evenly over each, points (no width) as
 * steps, a mixture of two nodes, clipped to the exact bounds. */
static void test_latency_quantiles(void)
{
	struct lat_seg a[] = { { 1000, 2000, 900 }, { 100000, 110000, 100 } };
	struct lat_seg b[] = { { 500, 500, 10 } };
	struct lat_dist d = { .count = 1000, .min = 1000, .max = 110000, .sum = 0,
			      .seg = a, .nseg = 2, .cap = 2 };
	struct lat_dist p = { .count = 10, .min = 500, .max = 500, .seg = b, .nseg = 1,
			      .cap = 1 }, m = {0};
	struct lat_stats st;

	/* 900 calls over [1000, 2000): the median is 500/900 of the way */
	CHECK(fabs(lat_quantile(&d, 0.5) - (1000 + 1000 * 500.0 / 900)) < 1e-6);
	CHECK(fabs(lat_quantile(&d, 0.9) - 2000) < 1e-6);
	/* rank 990: 90 of the 100 calls over [100000, 110000) */
	CHECK(fabs(lat_quantile(&d, 0.99) - 109000) < 1e-6);
	CHECK(fabs(lat_quantile(&d, 1.0) - 110000) < 1e-6);
	CHECK(fabs(lat_quantile(&d, 0) - 1000) < 1e-6);
	CHECK(fabs(lat_quantile(&p, 0.5) - 500) < 1e-6);
	/* the mixture: 10 calls of 500 ns first */
	CHECK_EQ_INT(lat_dist_merge(&m, &d), 0);
	CHECK_EQ_INT(lat_dist_merge(&m, &p), 0);
	CHECK_EQ_U64(m.count, 1010);
	CHECK(m.min == 500 && m.max == 110000);
	lat_stats(&m, &st);
	CHECK(fabs(st.p50 - (1000 + 1000 * 495.0 / 900)) < 1e-6);
	CHECK(st.min <= st.p50 && st.p50 <= st.p90 && st.p90 <= st.p99 && st.p99 <= st.p999 &&
	      st.p999 <= st.max);
	lat_dist_release(&m);
	CHECK_EQ_U64(m.count, 0);
	struct lat_dist e = {0};
	CHECK(lat_quantile(&e, 0.5) == 0);
}

int main(void)
{
	char tmpl[] = "/tmp/cygprof-test-view.XXXXXX";

	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s", tmpl);
	snprintf(path, sizeof(path), "%s/view.cap", dir);
	write_capture();
	RUN_TEST(test_tasks);
	RUN_TEST(test_meta_limits);
	RUN_TEST(test_naming);
	RUN_TEST(test_resolver);
	RUN_TEST(test_trees);
	RUN_TEST(test_profiles);
	RUN_TEST(test_stacks_events);
	RUN_TEST(test_runtime_frames);
	RUN_TEST(test_cpu);
	RUN_TEST(test_latency_quantiles);
	snprintf(cpath, sizeof(cpath), "%s/calib.cap", dir);
	RUN_TEST(test_calibration);
	RUN_TEST(test_calibrations_differ);
	unlink(path);
	rmdir(dir);
	CHECK_DONE();
}
