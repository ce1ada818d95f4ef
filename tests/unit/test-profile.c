/* SPDX-License-Identifier: MIT */
/* test-profile.c - analysis/profile.c on hand-built trees: self/total with
 * recursion, arcs, merging by name across threads; analysis/inclusive.c's
 * rule per call line. */
#include <errno.h>

#include "check.h"
#include "inclusive.h"
#include "profile.h"

#define N(par, c, t) {.parent = (par), .calls = (c), .total_ns = (t)}

static const struct profile_fn *fn(const struct profile *p, const char *name)
{
	long i = profile_find(p, name);

	CHECK(i >= 0);
	return i >= 0 ? &p->fns[i] : NULL;
}

static const struct profile_arc *arc(const struct profile *p, const char *a, const char *b)
{
	long i = profile_find(p, a), j = profile_find(p, b);
	const struct profile_arc *r = NULL;

	if (i >= 0 && j >= 0)
		r = profile_find_arc(p, (uint32_t)i, (uint32_t)j);
	CHECK(r != NULL);
	return r;
}

/* root -> main -> run_fib -> fib -> fib -> fib; main -> helper; fib -> helper */
static const struct cygprof_node t1[] = {
	{.parent = CYGPROF_NONE}, N(0, 1, 1000), N(1, 1, 900), N(2, 32, 800),
	N(3, 100, 600),          N(4, 50, 200), N(1, 10, 50),  N(4, 5, 20),
};
static const char *const t1_names[] = {
	NULL, "main", "run_fib", "fib", "fib", "fib", "helper", "helper",
};

/* second thread: root -> worker -> fib -> fib; worker -> helper */
static const struct cygprof_node t2[] = {
	{.parent = CYGPROF_NONE}, N(0, 1, 500), N(1, 2, 40), N(2, 1, 10), N(1, 3, 30),
};
static const char *const t2_names[] = {NULL, "worker", "fib", "fib", "helper"};

static void test_single_tree(void)
{
	struct profile *p = profile_new();
	const struct profile_fn *f;
	const struct profile_arc *a;
	const struct profile_tnode *nd;

	CHECK(p != NULL);
	CHECK_EQ_INT(profile_add_tree(p, NULL, t1, t1_names, 8), 0);
	CHECK_EQ_U64(p->nfns, 4);
	CHECK_EQ_U64(p->nthreads, 1);
	CHECK_EQ_U64(p->threads[0].total_ns, 1000);
	CHECK_EQ_U64(p->total_self_ns, 1000);

	f = fn(p, "main");
	CHECK_EQ_U64(f->calls, 1);
	CHECK_EQ_U64(f->root_calls, 1);
	CHECK_EQ_U64(f->self_ns, 50);
	CHECK_EQ_U64(f->total_ns, 1000);
	f = fn(p, "run_fib");
	CHECK_EQ_U64(f->self_ns, 100);
	CHECK_EQ_U64(f->total_ns, 900);
	CHECK_EQ_U64(f->root_calls, 0);
	f = fn(p, "fib");
	CHECK_EQ_U64(f->calls, 182);
	CHECK_EQ_U64(f->rec_calls, 150);
	CHECK_EQ_U64(f->self_ns, 780);
	CHECK_EQ_U64(f->total_ns, 800); /* recursion counted once */
	f = fn(p, "helper");
	CHECK_EQ_U64(f->calls, 15);
	CHECK_EQ_U64(f->self_ns, 70);
	CHECK_EQ_U64(f->total_ns, 70);

	CHECK_EQ_U64(p->narcs, 5);
	a = arc(p, "main", "run_fib");
	CHECK_EQ_U64(a->calls, 1);
	CHECK_EQ_U64(a->self_ns, 100);
	CHECK_EQ_U64(a->children_ns, 800);
	a = arc(p, "run_fib", "fib");
	CHECK_EQ_U64(a->calls, 32);
	CHECK_EQ_U64(a->total_ns, 800);
	CHECK_EQ_U64(a->self_ns, 780);
	CHECK_EQ_U64(a->children_ns, 20);
	a = arc(p, "fib", "fib");
	CHECK_EQ_U64(a->calls, 150);
	a = arc(p, "fib", "helper");
	CHECK_EQ_U64(a->calls, 5);
	CHECK_EQ_U64(a->self_ns, 20);
	CHECK_EQ_U64(a->children_ns, 0);
	a = arc(p, "main", "helper");
	CHECK_EQ_U64(a->calls, 10);
	CHECK_EQ_U64(a->self_ns, 50);

	/* the named tree */
	nd = p->threads[0].nodes;
	CHECK_EQ_U64(nd[0].fn, PROFILE_NONE);
	CHECK_EQ_U64(nd[0].first_child, 1);
	CHECK_EQ_U64(nd[1].first_child, 2);
	CHECK_EQ_U64(nd[2].next_sibling, 6);
	CHECK_EQ_U64(nd[6].next_sibling, PROFILE_NONE);
	CHECK_EQ_U64(nd[5].depth, 5);
	CHECK_EQ_U64(nd[4].self_ns, 380);
	CHECK_EQ_STR(p->fns[nd[4].fn].name, "fib");
	profile_free(p);
}

static void test_merge_threads(void)
{
	struct profile *p = profile_new();
	struct profile_thread_info i1 = {.idx = 0, .tid = 100, .pid = 100, .name = "main"};
	struct profile_thread_info i2 = {.idx = 1, .tid = 101, .pid = 100, .name = "worker"};
	const struct profile_fn *f;
	const struct profile_arc *a;

	CHECK_EQ_INT(profile_add_tree(p, &i1, t1, t1_names, 8), 0);
	CHECK_EQ_INT(profile_add_tree(p, &i2, t2, t2_names, 5), 0);
	CHECK_EQ_U64(p->nthreads, 2);
	CHECK_EQ_U64(p->nfns, 5);
	CHECK_EQ_U64(p->threads[1].info.tid, 101);
	CHECK_EQ_STR(p->threads[1].info.name, "worker");
	CHECK_EQ_U64(p->threads[1].total_ns, 500);
	CHECK_EQ_U64(p->total_self_ns, 1500);

	f = fn(p, "fib");
	CHECK_EQ_U64(f->calls, 185);
	CHECK_EQ_U64(f->rec_calls, 151);
	CHECK_EQ_U64(f->self_ns, 780 + 30 + 10);
	CHECK_EQ_U64(f->total_ns, 840);
	f = fn(p, "helper");
	CHECK_EQ_U64(f->calls, 18);
	CHECK_EQ_U64(f->self_ns, 100);
	CHECK_EQ_U64(f->total_ns, 100);
	f = fn(p, "worker");
	CHECK_EQ_U64(f->self_ns, 430);
	CHECK_EQ_U64(f->root_calls, 1);

	a = arc(p, "fib", "fib");
	CHECK_EQ_U64(a->calls, 151);
	a = arc(p, "worker", "fib");
	CHECK_EQ_U64(a->calls, 2);
	CHECK_EQ_U64(a->self_ns, 40);
	CHECK_EQ_U64(a->children_ns, 0);
	a = arc(p, "run_fib", "fib");
	CHECK_EQ_U64(a->self_ns, 780);
	CHECK_EQ_U64(p->narcs, 7);
	profile_free(p);
}

/* a -> b -> a -> b: totals count the outermost frame only */
static void test_mutual_recursion(void)
{
	static const struct cygprof_node t[] = {
		{.parent = CYGPROF_NONE}, N(0, 1, 100), N(1, 1, 80), N(2, 1, 50), N(3, 1, 20),
	};
	static const char *const names[] = {NULL, "a", "b", "a", "b"};
	struct profile *p = profile_new();
	const struct profile_arc *ar;

	CHECK_EQ_INT(profile_add_tree(p, NULL, t, names, 5), 0);
	CHECK_EQ_U64(fn(p, "a")->total_ns, 100);
	CHECK_EQ_U64(fn(p, "a")->self_ns, 50);
	CHECK_EQ_U64(fn(p, "a")->rec_calls, 0);
	CHECK_EQ_U64(fn(p, "b")->total_ns, 80);
	CHECK_EQ_U64(fn(p, "b")->self_ns, 50);
	ar = arc(p, "a", "b");
	CHECK_EQ_U64(ar->calls, 2);
	CHECK_EQ_U64(ar->total_ns, 80);
	CHECK_EQ_U64(ar->self_ns, 50);
	CHECK_EQ_U64(ar->children_ns, 30);
	ar = arc(p, "b", "a");
	CHECK_EQ_U64(ar->calls, 1);
	CHECK_EQ_U64(ar->total_ns, 0);
	profile_free(p);
}

/* children whose times exceed the parent's clamp self at 0 */
static void test_clamp_and_errors(void)
{
	static const struct cygprof_node t[] = {
		{.parent = CYGPROF_NONE}, N(0, 1, 10), N(1, 1, 8), N(1, 1, 7),
	};
	static const struct cygprof_node bad[] = {
		{.parent = CYGPROF_NONE}, N(2, 1, 10), N(1, 1, 8),
	};
	static const char *const names[] = {NULL, "p", "c", "d"};
	struct profile *p = profile_new();

	CHECK_EQ_INT(profile_add_tree(p, NULL, t, names, 4), 0);
	CHECK_EQ_U64(fn(p, "p")->self_ns, 0);
	CHECK_EQ_U64(fn(p, "p")->total_ns, 10);
	CHECK_EQ_INT(profile_add_tree(p, NULL, bad, names, 3), -EINVAL);
	CHECK_EQ_INT(profile_add_tree(p, NULL, NULL, NULL, 0), 0);
	CHECK_EQ_U64(p->nthreads, 2);
	CHECK_EQ_U64(p->threads[1].n, 0);
	CHECK_EQ_INT(profile_find(p, "nope"), -ENOENT);
	profile_free(p);
}

/* many distinct names exercise the hash tables' growth */
static void test_many_names(void)
{
	enum { M = 5000 };
	static struct cygprof_node t[M + 1];
	static char buf[M + 1][16];
	static const char *names[M + 1];
	struct profile *p = profile_new();
	int i;

	t[0].parent = CYGPROF_NONE;
	for (i = 1; i <= M; i++) {
		t[i].parent = (uint32_t)(i - 1);
		t[i].calls = 1;
		t[i].total_ns = (uint64_t)(M + 1 - i);
		snprintf(buf[i], sizeof(buf[i]), "f%d", i);
		names[i] = buf[i];
	}
	CHECK_EQ_INT(profile_add_tree(p, NULL, t, names, M + 1), 0);
	CHECK_EQ_U64(p->nfns, M);
	CHECK_EQ_U64(p->narcs, M - 1);
	CHECK_EQ_U64(fn(p, "f1")->total_ns, M);
	CHECK_EQ_U64(fn(p, "f4999")->self_ns, 1);
	CHECK_EQ_U64(arc(p, "f10", "f11")->total_ns, M - 10);
	CHECK_EQ_U64(p->threads[0].nodes[M].depth, M);
	profile_free(p);
}

/* Overhead compensation: calls * o_in and the calls below * o_full out of
 * each node's total, the root the sum of its children, clamped at 0. */
static void test_compensate(void)
{
	struct cygprof_node nodes[] = {
		{.parent = CYGPROF_NONE, .calls = 0, .total_ns = 1001},
		{.parent = 0, .calls = 1, .total_ns = 1000},  /* main */
		{.parent = 1, .calls = 10, .total_ns = 500},  /* a */
		{.parent = 2, .calls = 20, .total_ns = 100},  /* b */
		{.parent = 0, .calls = 5, .total_ns = 1},     /* c: less than its cost */
	};
	struct profile_overhead o = {.in_ns = 2, .full_ns = 5};
	double cut[5];
	uint64_t self[5], total, clamped = 99;

	CHECK_EQ_INT(profile_compensate(nodes, 5, &o, cut, &clamped), 0);
	CHECK_EQ_U64(clamped, 1); /* c */
	CHECK_EQ_U64(nodes[3].total_ns, 60);  /* 100 - 20*2 */
	CHECK_EQ_U64(nodes[2].total_ns, 380); /* 500 - 10*2 - 20*5 */
	CHECK_EQ_U64(nodes[1].total_ns, 848); /* 1000 - 2 - 30*5 */
	CHECK_EQ_U64(nodes[4].total_ns, 0);   /* 1 - 5*2, clamped */
	CHECK_EQ_U64(nodes[0].total_ns, 848);
	CHECK_EQ_U64(nodes[1].calls, 1);      /* counts unchanged */
	CHECK_EQ_U64((uint64_t)cut[1], 152);
	CHECK_EQ_U64((uint64_t)cut[2], 12);
	CHECK_EQ_U64((uint64_t)cut[3], 2);
	CHECK_EQ_INT(profile_self_times(nodes, 5, self, &total), 0);
	CHECK_EQ_U64(self[1], 468); /* 848 - 380 */
	CHECK_EQ_U64(self[2], 320); /* 380 - 60 */
	CHECK_EQ_U64(self[3], 60);
	CHECK_EQ_U64(total, 848);

	struct cygprof_node bad[] = {{.parent = CYGPROF_NONE}, {.parent = 1}};
	CHECK_EQ_INT(profile_compensate(bad, 2, &o, NULL, NULL), -EINVAL);
}

/* A calibration far above what short calls measure: no node ends below
 * its children, no self time below 0, and the nodes clamped are counted.
 * main -> a (10 calls) -> b (100 calls), main -> w (1 call of work). */
static void test_compensate_clamp(void)
{
	struct cygprof_node nodes[] = {
		{.parent = CYGPROF_NONE},
		{.parent = 0, .calls = 1, .total_ns = 5000}, /* main */
		{.parent = 1, .calls = 10, .total_ns = 900}, /* a */
		{.parent = 2, .calls = 100, .total_ns = 800}, /* b */
		{.parent = 1, .calls = 1, .total_ns = 4000}, /* w */
	};
	struct profile_overhead o = {.in_ns = 5, .full_ns = 10};
	uint64_t self[5], total, clamped = 0;
	double cut[5];

	CHECK_EQ_INT(profile_compensate(nodes, 5, &o, cut, &clamped), 0);
	CHECK_EQ_U64(nodes[3].total_ns, 300);  /* 800 - 100*5 */
	CHECK_EQ_U64(nodes[2].total_ns, 300);  /* 900 - 10*5 - 100*10 < 300: its child's */
	CHECK_EQ_U64(nodes[4].total_ns, 3995); /* 4000 - 5 */
	CHECK_EQ_U64(nodes[1].total_ns, 4295); /* 5000 - 5 - 111*10 = 3885 < 300 + 3995 */
	CHECK_EQ_U64(nodes[0].total_ns, 4295);
	CHECK_EQ_U64(clamped, 2);              /* a, main */
	CHECK_EQ_U64((uint64_t)cut[2], 60);    /* (900 - 300) / 10: what was taken out */
	CHECK_EQ_U64((uint64_t)cut[1], 705);   /* 5000 - 4295 */
	CHECK_EQ_U64((uint64_t)cut[3], 5);
	CHECK_EQ_INT(profile_self_times(nodes, 5, self, &total), 0);
	CHECK_EQ_U64(self[1], 0);
	CHECK_EQ_U64(self[2], 0);
	CHECK_EQ_U64(self[3], 300);
	CHECK_EQ_U64(total, 4295);

	/* absurd: 1 ms per call; everything is clamped, nothing negative */
	struct cygprof_node abs_[] = {
		{.parent = CYGPROF_NONE},
		{.parent = 0, .calls = 1, .total_ns = 5000},
		{.parent = 1, .calls = 10, .total_ns = 900},
		{.parent = 1, .calls = 1, .total_ns = 4000},
	};
	struct profile_overhead huge = {.in_ns = 1e6, .full_ns = 2e6};
	CHECK_EQ_INT(profile_compensate(abs_, 4, &huge, NULL, &clamped), 0);
	CHECK_EQ_U64(clamped, 3);
	for (int i = 0; i < 4; i++)
		CHECK_EQ_U64(abs_[i].total_ns, 0);

	/* a sane calibration clamps nothing */
	struct cygprof_node ok[] = {
		{.parent = CYGPROF_NONE},
		{.parent = 0, .calls = 1, .total_ns = 5000},
		{.parent = 1, .calls = 10, .total_ns = 900},
	};
	struct profile_overhead small = {.in_ns = 1, .full_ns = 2};
	CHECK_EQ_INT(profile_compensate(ok, 3, &small, NULL, &clamped), 0);
	CHECK_EQ_U64(clamped, 0);
	CHECK_EQ_U64(ok[1].total_ns, 4979); /* 5000 - 1 - 10*2 */
	CHECK_EQ_U64(ok[2].total_ns, 890);
}

/* inclusive.c: root -> a (line 10) -> b (line 20) -> a (line 10, twice:
 * two sites) -> a (line 30); root -> c (line 10).  Entries: the sites. */
static void test_inclusive_lines(void)
{
	static const struct cygprof_node t[] = {
		{.parent = CYGPROF_NONE}, N(0, 1, 1000), N(1, 2, 900), N(2, 3, 800),
		N(3, 4, 100),             N(0, 1, 50),
	};
	/* entries: node, key (line), as annotate makes them */
	static const uint32_t enode[] = {1, 2, 3, 3, 4, 5, 0};
	static const uint32_t ekey[] = {10, 20, 10, 10, 30, 10, INCL_NONE};
	uint8_t outer[7];
	uint32_t near[7], via[7], top[6];
	static const uint32_t fnkey[] = {0, 0, 1, 0, 0, 2}; /* a b a a c */
	uint64_t sum = 0;

	CHECK_EQ_INT(incl_nearest(t, 6, enode, ekey, 7, 40, near, via), 0);
	CHECK_EQ_U64(near[0], INCL_NONE);
	CHECK_EQ_U64(near[1], INCL_NONE);
	CHECK_EQ_U64(near[2], 1); /* line 10 again under a from line 10 */
	CHECK_EQ_U64(via[2], 2);  /* through b */
	CHECK_EQ_U64(near[3], 1);
	CHECK_EQ_U64(near[4], INCL_NONE);
	CHECK_EQ_U64(near[5], INCL_NONE); /* a sibling subtree: not inside */
	CHECK_EQ_U64(near[6], INCL_NONE);
	CHECK_EQ_INT(incl_outer(t, 6, enode, ekey, 7, 40, outer), 0);
	/* line 10's time: node 1 and node 5, once each: 1050, not 1850 */
	for (size_t i = 0; i < 7; i++)
		if (ekey[i] == 10 && outer[i])
			sum += t[enode[i]].total_ns;
	CHECK_EQ_U64(sum, 1050);
	CHECK_EQ_INT(outer[4], 1);
	/* per function: the outermost of each */
	CHECK_EQ_INT(incl_tops(t, 6, fnkey, 3, top), 0);
	CHECK_EQ_U64(top[1], 1);
	CHECK_EQ_U64(top[2], 2);
	CHECK_EQ_U64(top[3], 1);
	CHECK_EQ_U64(top[4], 1);
	CHECK_EQ_U64(top[5], 5);
	/* a node out of range, a parent after its child */
	{
		static const uint32_t bad[] = {9};
		static const struct cygprof_node loop[] = {{.parent = CYGPROF_NONE}, N(1, 1, 1)};

		CHECK_EQ_INT(incl_outer(t, 6, bad, ekey, 1, 40, outer), -EINVAL);
		CHECK_EQ_INT(incl_tops(loop, 2, fnkey, 3, top), -EINVAL);
	}
}

int main(void)
{
	RUN_TEST(test_single_tree);
	RUN_TEST(test_merge_threads);
	RUN_TEST(test_mutual_recursion);
	RUN_TEST(test_inclusive_lines);
	RUN_TEST(test_clamp_and_errors);
	RUN_TEST(test_many_names);
	RUN_TEST(test_compensate);
	RUN_TEST(test_compensate_clamp);
	CHECK_DONE();
}
