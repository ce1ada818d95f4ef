/* SPDX-License-Identifier: MIT */
/* test-top.c - cygprof top's engine (top/): two known snapshots made into
 * rows per thread and merged, their last interval, the orders, the thread
 * blocks, the heap stacks that read the same, the keys and the plain view. */
#define _GNU_SOURCE
#include "check.h"
#include "top.h"

#include <stdlib.h>
#include <string.h>

#define MS 1000000ULL

static const struct collector_thread threads[] = {
	{100, 100, "main", 0},
	{100, 101, "worker", 0},
};

/* The first snapshot, at 1 s: f is at two addresses of thread 100 (the
 * same name: one row); three stacks, two of which read the same. */
static const struct collector_fn fns1[] = {
	{"f", 100, 10, 100 * MS, 300 * MS},
	{"g", 100, 5, 200 * MS, 200 * MS},
	{"f", 101, 4, 50 * MS, 50 * MS},
	{"f", 100, 1, 10 * MS, 10 * MS},
};
static const char *const leaker[] = {"leaker", "main"}, *const other[] = {"a", "main"};
static const struct collector_stack stacks1[] = {
	{3, 100, 1, 2, 150, leaker, 2},
	{5, 60, 2, 3, 70, other, 2},
	{7, 50, 1, 1, 50, leaker, 2},
};

/* The second, at 3 s: g did nothing since, h is new. */
static const struct collector_fn fns2[] = {
	{"f", 100, 20, 400 * MS, 900 * MS},
	{"g", 100, 5, 200 * MS, 200 * MS},
	{"f", 101, 10, 350 * MS, 350 * MS},
	{"h", 101, 1, 7 * MS, 7 * MS},
};

static struct collector_snapshot snapshot(int second, struct collector_heap *h)
{
	struct collector_snapshot s = {
		.pid = 100,
		.elapsed_ns = second ? 3000 * MS : 1000 * MS,
		.threads = 2,
		.thread = threads,
		.fns = second ? fns2 : fns1,
		.nfns = 4,
		.heap = h,
	};
	*h = (struct collector_heap){.allocations = second ? 25 : 10, .live_bytes = 210,
				     .live_blocks = 4, .peak_bytes = 300,
				     .stacks = stacks1, .nstacks = 3};
	return s;
}

static struct top_view view(void)
{
	return (struct top_view){.sort = {TOP_SELF, TOP_CALLS}, .nsort = 2, .interval = 1,
				 .prog = "prog"};
}

static const struct top_row *row(const struct top_snap *s, int merged, size_t i)
{
	return merged ? &s->merged[i] : &s->per[i];
}

#define CHECK_ROW(r, nm, tid_, c, s_, t_, ic, is, it)                                            \
	do {                                                                                       \
		CHECK_EQ_STR((r)->name, nm);                                                       \
		CHECK_EQ_U64((r)->tid, tid_);                                                      \
		CHECK_EQ_U64((r)->calls, c);                                                       \
		CHECK_EQ_U64((r)->self_ns, (s_) * MS);                                             \
		CHECK_EQ_U64((r)->total_ns, (t_) * MS);                                            \
		CHECK_EQ_U64((r)->icalls, ic);                                                     \
		CHECK_EQ_U64((r)->iself_ns, (is) * MS);                                            \
		CHECK_EQ_U64((r)->itotal_ns, (it) * MS);                                           \
	} while (0)

/* Two snapshots built one after the other, as top does. */
static void build(struct top_view *v, struct top_snap *cur)
{
	struct collector_heap h;
	struct collector_snapshot s = snapshot(0, &h);
	struct top_snap n;

	CHECK_EQ_INT(top_snap_build(NULL, &s, v, cur), 0);
	s = snapshot(1, &h);
	CHECK_EQ_INT(top_snap_build(cur, &s, v, &n), 0);
	top_snap_free(cur);
	*cur = n;
}

static void test_first(void)
{
	struct top_view v = view();
	struct collector_heap h;
	struct collector_snapshot s = snapshot(0, &h);
	struct top_snap n;

	CHECK_EQ_INT(top_snap_build(NULL, &s, &v, &n), 0);
	/* the same (name, thread) is one row; the first interval is all of it */
	CHECK_EQ_U64(n.nper, 3);
	CHECK_ROW(row(&n, 0, 0), "g", 100, 5, 200, 200, 5, 200, 200);
	CHECK_ROW(row(&n, 0, 1), "f", 100, 11, 110, 310, 11, 110, 310);
	CHECK_ROW(row(&n, 0, 2), "f", 101, 4, 50, 50, 4, 50, 50);
	CHECK_EQ_U64(n.nmerged, 2);
	CHECK_ROW(row(&n, 1, 0), "g", 0, 5, 200, 200, 5, 200, 200);
	CHECK_ROW(row(&n, 1, 1), "f", 0, 15, 160, 360, 15, 160, 360);
	CHECK_EQ_U64(n.interval_ns, 1000 * MS);
	CHECK_EQ_U64(n.calls, 20);
	CHECK_EQ_U64(n.iallocations, 10);
	/* stacks 3 and 7 read the same: one, under the lower id */
	CHECK_EQ_U64(n.nhs, 2);
	CHECK_EQ_U64(n.hs[0].id, 3);
	CHECK_EQ_U64(n.hs[0].live_bytes, 150);
	CHECK_EQ_U64(n.hs[0].live_blocks, 2);
	CHECK_EQ_U64(n.hs[0].allocations, 3);
	CHECK_EQ_U64(n.hs[0].bytes, 200);
	CHECK_EQ_U64(n.hs[0].nframes, 2);
	CHECK_EQ_STR(n.hs[0].frames[0], "leaker");
	CHECK_EQ_U64(n.hs[1].id, 5);
	CHECK_EQ_U64(n.hs[1].live_bytes, 60);
	CHECK_EQ_STR(n.thr[1].name, "worker");
	top_snap_free(&n);
}

static void test_interval(void)
{
	struct top_view v = view();
	struct top_snap n = {0};

	build(&v, &n);
	/* by the interval's self time, then calls */
	CHECK_EQ_U64(n.nper, 4);
	CHECK_ROW(row(&n, 0, 0), "f", 101, 10, 350, 350, 6, 300, 300);
	CHECK_ROW(row(&n, 0, 1), "f", 100, 20, 400, 900, 9, 290, 590);
	CHECK_ROW(row(&n, 0, 2), "h", 101, 1, 7, 7, 1, 7, 7);
	CHECK_ROW(row(&n, 0, 3), "g", 100, 5, 200, 200, 0, 0, 0);
	CHECK_EQ_U64(n.nmerged, 3);
	CHECK_ROW(row(&n, 1, 0), "f", 0, 30, 750, 1250, 15, 590, 890);
	CHECK_ROW(row(&n, 1, 1), "h", 0, 1, 7, 7, 1, 7, 7);
	CHECK_ROW(row(&n, 1, 2), "g", 0, 5, 200, 200, 0, 0, 0);
	CHECK_EQ_U64(n.interval_ns, 2000 * MS);
	CHECK_EQ_U64(n.calls, 36);
	CHECK_EQ_U64(n.icalls, 16);
	CHECK_EQ_U64(n.iallocations, 15);
	top_snap_free(&n);
}

static void test_orders(void)
{
	struct top_view v = view();
	struct top_snap n = {0};
	size_t order[2];

	build(&v, &n);
	/* the whole run by total time */
	v.interval = 0;
	v.sort[0] = TOP_TOTAL;
	v.nsort = 1;
	top_sort(&v, &n);
	CHECK_EQ_STR(n.merged[0].name, "f");
	CHECK_EQ_STR(n.merged[1].name, "g");
	CHECK_EQ_STR(n.merged[2].name, "h");
	CHECK_EQ_STR(n.per[0].name, "f");
	CHECK_EQ_U64(n.per[0].tid, 100);
	/* by name, then thread */
	v.sort[0] = TOP_NAME;
	top_sort(&v, &n);
	CHECK_EQ_U64(n.per[0].tid, 100);
	CHECK_EQ_U64(n.per[1].tid, 101);
	CHECK_EQ_STR(n.per[2].name, "g");
	/* thread blocks: by the sum of the first key (interval self: 290 and
	 * 307 ms), live threads first */
	v = view();
	v.threads = 1;
	top_thread_order(&v, &n, order);
	CHECK_EQ_U64(order[0], 1);
	CHECK_EQ_U64(order[1], 0);
	n.thr[1].ended = 1;
	top_thread_order(&v, &n, order);
	CHECK_EQ_U64(order[0], 0);
	CHECK_EQ_U64(order[1], 1);
	top_snap_free(&n);
}

static void test_keys(void)
{
	struct top_view v = view();

	CHECK_EQ_INT(top_key_press(&v, 's'), TOP_REDRAW);
	CHECK_EQ_INT(v.nsort, 2);
	CHECK_EQ_INT(v.sort[0], TOP_TOTAL);
	CHECK_EQ_INT(v.sort[1], TOP_CALLS);
	top_key_press(&v, 's');
	CHECK_EQ_INT(v.sort[0], TOP_CALLS);
	CHECK_EQ_INT(v.sort[1], TOP_SELF);
	top_key_press(&v, 's');
	CHECK_EQ_INT(v.nsort, 1);
	CHECK_EQ_INT(v.sort[0], TOP_NAME);
	top_key_press(&v, 's');
	CHECK_EQ_INT(v.sort[0], TOP_SELF);
	CHECK_EQ_INT(top_key_press(&v, 'd'), TOP_REDRAW);
	CHECK_EQ_INT(v.interval, 0);
	CHECK_EQ_INT(top_key_press(&v, 't'), TOP_REDRAW);
	CHECK_EQ_INT(v.threads, 1);
	CHECK_EQ_INT(top_key_press(&v, ' '), TOP_REDRAW);
	CHECK_EQ_INT(v.paused, 1);
	CHECK_EQ_INT(top_key_press(&v, 'q'), TOP_QUIT);
	CHECK_EQ_INT(top_key_press(&v, 3), TOP_QUIT);
	CHECK_EQ_INT(top_key_press(&v, 'x'), TOP_NONE);
	CHECK_EQ_INT(top_key_find("calls"), TOP_CALLS);
	CHECK_EQ_INT(top_key_find("bogus"), -1);
}

/* The plain table of the second snapshot, merged. */
static void test_render(void)
{
	static const char want[] =
		"cygprof top: 3.0 s  2 threads (2 running)  8 calls/s  prog\n"
		"event buffers: no thread is being traced yet\n"
		"heap: 210 B live in 4 blocks, peak 300 B, 8 allocations/s\n"
		"view: last interval, sorted by self,calls\n"
		"\n"
		"%self  last self ms  last calls     self ms        calls    total ms  function\n"
		" 98.8        590.000          15     750.000           30    1250.000  f\n"
		"  1.2          7.000           1       7.000            1       7.000  h\n"
		"  0.0          0.000           0     200.000            5     200.000  g\n"
		"\n"
		"  live bytes  blocks  allocations  stack (innermost first)\n"
		"         150       2            3  leaker < main\n"
		"          60       2            3  a < main\n";
	struct top_view v = view();
	struct top_snap n = {0};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	build(&v, &n);
	CHECK(f != NULL);
	if (!f)
		return;
	top_render(&v, &n, f, 0);
	fclose(f);
	CHECK_EQ_STR(buf, want);
	free(buf);
	top_snap_free(&n);
}

int main(void)
{
	RUN_TEST(test_first);
	RUN_TEST(test_interval);
	RUN_TEST(test_orders);
	RUN_TEST(test_keys);
	RUN_TEST(test_render);
	CHECK_DONE();
}
