/* SPDX-License-Identifier: MIT */
/* test-timemodel.c - analysis/timemodel.c on a hand-built tree: waiting for
 * a CPU taken out, blocked time out by default and kept on request, the samples taking over beyond twice
 * their standard deviation and not within it, no blending without switch
 * tracking, --time=sampled's samples alone, and glibc's empty hooks added
 * back per call, scaled by the hooks' cost in place. */
#include <string.h>

#include "check.h"
#include "timemodel.h"

#define MS 1000000ull
#define N(par, c, t) {.parent = (par), .calls = (c), .total_ns = (t)}

/* root -> main (1 call, 10 ms) -> work (10 calls, 6 ms), nap (1 call, 3 ms) */
static void tree(struct cygprof_node *t)
{
	const struct cygprof_node v[] = {
		{.parent = CYGPROF_NONE}, N(0, 1, 10 * MS), N(1, 10, 6 * MS), N(1, 1, 3 * MS),
	};
	memcpy(t, v, sizeof v);
}

#define ROW(n, s, o, w, b) {.node = (n), .samples = (s), .overhead = (o), .wait_ns = (w), .blocked_ns = (b)}

/* no sampler: work's 2 ms of waiting for a CPU are not its time */
static void test_waiting(void)
{
	struct cygprof_node t[4];
	struct timemodel_stats st;

	const struct cygprof_cpu_node r[] = {ROW(2, 0, 0, 2 * MS, 0)};
	tree(t);
	CHECK_EQ_INT(timemodel_apply(t, 4, r, 1, 0, TIMEMODEL_SWITCHES | TIMEMODEL_KEEP_BLOCKED, 0, 0, &st), 0);
	CHECK_EQ_U64(t[2].total_ns, 4 * MS);
	CHECK_EQ_U64(t[3].total_ns, 3 * MS);
	CHECK_EQ_U64(t[1].total_ns, 8 * MS);
	CHECK_EQ_U64(t[0].total_ns, 8 * MS);
	CHECK_EQ_U64(st.wait_ns, 2 * MS);
}

/* 1 ms samples: work's 6 ms and 6 samples agree; nap blocked 3 ms
 * (no sample sees it: kept); main's 1 ms of its own and 1 sample */
static void test_blocked(void)
{
	struct cygprof_node t[4];
	struct timemodel_stats st;

	const struct cygprof_cpu_node r[] = {ROW(1, 1, 0, 0, 0), ROW(2, 6, 0, 0, 0),
					     ROW(3, 0, 0, 0, 3 * MS)};
	tree(t);
	CHECK_EQ_INT(timemodel_apply(t, 4, r, 3, MS, TIMEMODEL_SWITCHES | TIMEMODEL_KEEP_BLOCKED, 0, 0, &st), 0);
	CHECK_EQ_U64(t[2].total_ns, 6 * MS);
	CHECK_EQ_U64(t[3].total_ns, 3 * MS);
	CHECK_EQ_U64(t[1].total_ns, 10 * MS);
	CHECK_EQ_U64(st.corrected, 0);
}

/* the default: nap's 3 ms blocked are not CPU time (kept with --times=wall,
 * as above); they are counted */
static void test_blocked_out(void)
{
	struct cygprof_node t[4];
	struct timemodel_stats st;

	const struct cygprof_cpu_node r[] = {ROW(1, 1, 0, 0, 0), ROW(2, 6, 0, 0, 0),
					     ROW(3, 0, 0, 0, 3 * MS)};
	tree(t);
	CHECK_EQ_INT(timemodel_apply(t, 4, r, 3, MS, TIMEMODEL_SWITCHES, 0, 0, &st), 0);
	CHECK_EQ_U64(t[2].total_ns, 6 * MS);
	CHECK_EQ_U64(t[3].total_ns, 0);
	CHECK_EQ_U64(t[1].total_ns, 7 * MS);
	CHECK_EQ_U64(t[0].total_ns, 7 * MS);
	CHECK_EQ_U64(st.blocked_ns, 3 * MS);
	CHECK_EQ_U64(st.corrected, 0);
}

/* nap's 3 ms not blocked, not waiting, and no sample: the hooks' figure
 * is off by 3 ms against a deviation of 1 ms: 3 - 3 * 9 / (9 + 4) */
static void test_beyond_noise(void)
{
	struct cygprof_node t[4];
	struct timemodel_stats st;

	const struct cygprof_cpu_node r[] = {ROW(2, 6, 0, 0, 0)};
	tree(t);
	CHECK_EQ_INT(timemodel_apply(t, 4, r, 1, MS, TIMEMODEL_SWITCHES | TIMEMODEL_KEEP_BLOCKED, 0, 0, &st), 0);
	CHECK_EQ_U64(t[3].total_ns, 923077);
	CHECK_EQ_U64(st.corrected, 1); /* nap (main: 1 ms, within the noise) */
	/* the same without switch tracking: blocked cannot be told from a
	 * bias, the hooks' figures stay */
	tree(t);
	CHECK_EQ_INT(timemodel_apply(t, 4, r, 1, MS, TIMEMODEL_KEEP_BLOCKED, 0, 0, &st), 0);
	CHECK_EQ_U64(t[3].total_ns, 3 * MS);
	CHECK_EQ_U64(t[1].total_ns, 10 * MS);
}

/* work's hooks say 6 ms, its 2 samples 2 ms: within 2 sigma
 * (sqrt(3) ms each): 6 - 4 * 16 / (16 + 12) */
static void test_within_noise(void)
{
	struct cygprof_node t[4];
	struct timemodel_stats st;

	const struct cygprof_cpu_node r[] = {ROW(1, 1, 0, 0, 0), ROW(2, 2, 0, 0, 0),
					     ROW(3, 0, 0, 0, 3 * MS)};
	tree(t);
	CHECK_EQ_INT(timemodel_apply(t, 4, r, 3, MS, TIMEMODEL_SWITCHES | TIMEMODEL_KEEP_BLOCKED, 0, 0, &st), 0);
	CHECK_EQ_U64(t[2].total_ns, 3714286);
}

/* --time=sampled: the samples alone, and 2 ns of empty hooks a call */
static void test_sampled(void)
{
	struct cygprof_node t[4];
	struct timemodel_stats st;

	const struct cygprof_cpu_node r[] = {ROW(2, 5, 0, 0, 0)};
	tree(t);
	CHECK_EQ_INT(timemodel_apply(t, 4, r, 1, MS, TIMEMODEL_SAMPLED | TIMEMODEL_KEEP_BLOCKED, 2.0, 0, &st), 0);
	CHECK_EQ_U64(t[2].total_ns, 5 * MS + 20);
	CHECK_EQ_U64(t[3].total_ns, 2);
	CHECK_EQ_U64(t[1].total_ns, 5 * MS + 20 + 2 + 2);
}

/* the hooks cost 40 samples of 1 ms in place over 12 calls against a
 * calibrated 1 ms a call: 3.33x, so 3 ns of empty hooks count 10 ns */
static void test_floor_ratio(void)
{
	struct cygprof_node t[4];
	struct timemodel_stats st;

	const struct cygprof_cpu_node r[] = {ROW(1, 1, 10, 0, 0), ROW(2, 6, 30, 0, 0),
					     ROW(3, 0, 0, 0, 3 * MS)};
	tree(t);
	CHECK_EQ_INT(timemodel_apply(t, 4, r, 3, MS, TIMEMODEL_SWITCHES | TIMEMODEL_KEEP_BLOCKED, 3.0, 1e6, &st), 0);
	CHECK_EQ_U64(t[2].total_ns, 6 * MS + 100);
	CHECK(st.ratio > 3.33 && st.ratio < 3.34);
	/* fewer than 30 such samples: not known, not scaled */
	const struct cygprof_cpu_node r2[] = {ROW(2, 6, 29, 0, 0)};
	tree(t);
	CHECK_EQ_INT(timemodel_apply(t, 4, r2, 1, MS, TIMEMODEL_SWITCHES | TIMEMODEL_KEEP_BLOCKED, 3.0, 1e6, &st), 0);
	CHECK_EQ_U64(t[2].total_ns, 6 * MS + 30);
}

/* a malformed tree */
static void test_malformed(void)
{
	struct cygprof_node t[4];
	struct timemodel_stats st;
	tree(t);
	t[2].parent = 3;
	CHECK_EQ_INT(timemodel_apply(t, 4, NULL, 0, 0, TIMEMODEL_KEEP_BLOCKED, 0, 0, &st), -22);
}

int main(void)
{
	RUN_TEST(test_waiting);
	RUN_TEST(test_blocked);
	RUN_TEST(test_blocked_out);
	RUN_TEST(test_beyond_noise);
	RUN_TEST(test_within_noise);
	RUN_TEST(test_sampled);
	RUN_TEST(test_floor_ratio);
	RUN_TEST(test_malformed);
	CHECK_DONE();
}
