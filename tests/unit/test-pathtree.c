/* SPDX-License-Identifier: MIT */
/* test-pathtree.c - analysis/pathtree.c on hand-built profiles: two threads
 * merged by call path (numbering, depths, sums, the root's total), the
 * nodes of each tree, functions renumbered, paths added by hand and a
 * tree made in its final order. */
#include <errno.h>

#include "check.h"
#include "pathtree.h"
#include "profile.h"

#define N(par, c, t) {.parent = (par), .calls = (c), .total_ns = (t)}

/* root -> main -> a -> b; main -> b */
static const struct cygprof_node t1[] = {
	{.parent = CYGPROF_NONE}, N(0, 1, 100), N(1, 2, 60), N(2, 3, 20), N(1, 4, 10),
};
static const char *const t1_names[] = {NULL, "main", "a", "b", "b"};

/* root -> main -> a; root -> worker -> b */
static const struct cygprof_node t2[] = {
	{.parent = CYGPROF_NONE}, N(0, 1, 50), N(1, 5, 30), N(0, 1, 40), N(3, 6, 25),
};
static const char *const t2_names[] = {NULL, "main", "a", "worker", "b"};

static struct profile *two_threads(void)
{
	struct profile *p = profile_new();

	CHECK(p != NULL);
	CHECK_EQ_INT(profile_add_tree(p, NULL, t1, t1_names, 5), 0);
	CHECK_EQ_INT(profile_add_tree(p, NULL, t2, t2_names, 5), 0);
	return p;
}

/* The node of the path of names from the root, or -1. */
static long path(const struct pathtree *t, const struct profile *p, const char *const *names,
		 size_t n)
{
	uint32_t at = 0;
	size_t i, k;

	for (i = 0; i < n; i++) {
		long f = profile_find(p, names[i]);

		for (k = 1; k < t->len; k++)
			if (t->n[k].parent == at && (long)t->n[k].fn == f)
				break;
		if (k == t->len)
			return -1;
		at = (uint32_t)k;
	}
	return at;
}

static void test_merged(void)
{
	static const char *const main_a[] = {"main", "a"}, *const main_b[] = {"main", "b"},
				 *const main_a_b[] = {"main", "a", "b"},
				 *const worker_b[] = {"worker", "b"};
	struct profile *p = two_threads();
	struct pathtree t;
	long k;

	CHECK_EQ_INT(pathtree_build(&t, p), 0);
	/* root, main, main;a, main;a;b, main;b, worker, worker;b */
	CHECK_EQ_U64(t.len, 7);
	CHECK_EQ_U64(t.n[0].parent, PROFILE_NONE);
	CHECK_EQ_U64(t.n[0].fn, PROFILE_NONE);
	CHECK_EQ_U64(t.n[0].total_ns, 100 + 90);
	/* numbered in the order the threads meet them */
	CHECK_EQ_INT(path(&t, p, main_a, 1), 1);
	CHECK_EQ_INT(path(&t, p, main_a, 2), 2);
	CHECK_EQ_INT(path(&t, p, main_a_b, 3), 3);
	CHECK_EQ_INT(path(&t, p, main_b, 2), 4);
	CHECK_EQ_INT(path(&t, p, worker_b, 1), 5);
	CHECK_EQ_INT(path(&t, p, worker_b, 2), 6);
	/* sums over both threads */
	CHECK_EQ_U64(t.n[1].calls, 2);
	CHECK_EQ_U64(t.n[1].total_ns, 150);
	CHECK_EQ_U64(t.n[1].self_ns, (100 - 60 - 10) + (50 - 30));
	CHECK_EQ_U64(t.n[2].calls, 7);
	CHECK_EQ_U64(t.n[2].total_ns, 90);
	CHECK_EQ_U64(t.n[2].self_ns, 40 + 30);
	CHECK_EQ_U64(t.n[3].depth, 3);
	CHECK_EQ_U64(t.n[6].depth, 2);
	CHECK_EQ_U64(t.n[6].self_ns, 25);
	/* found again, not made twice */
	k = pathtree_child(&t, 1, t.n[2].fn);
	CHECK_EQ_INT(k, 2);
	CHECK_EQ_U64(t.len, 7);
	pathtree_release(&t);
	CHECK(t.n == NULL && t.len == 0);
	profile_free(p);
}

static void test_thread_nodes(void)
{
	struct profile *p = two_threads();
	/* the functions of this profile in reverse: another profile's numbering */
	uint32_t fnmap[4], at[5];
	struct pathtree t;
	size_t i;

	for (i = 0; i < p->nfns; i++)
		fnmap[i] = (uint32_t)(p->nfns - 1 - i);
	CHECK_EQ_INT(pathtree_init(&t), 0);
	CHECK_EQ_INT(pathtree_add_thread(&t, &p->threads[1], fnmap, at), 0);
	CHECK_EQ_U64(at[0], 0);
	CHECK_EQ_U64(at[1], 1);
	CHECK_EQ_U64(at[2], 2);
	CHECK_EQ_U64(at[3], 3);
	CHECK_EQ_U64(at[4], 4);
	CHECK_EQ_U64(t.n[1].fn, fnmap[profile_find(p, "main")]);
	CHECK_EQ_U64(t.n[4].fn, fnmap[profile_find(p, "b")]);
	CHECK_EQ_U64(t.n[4].parent, 3);
	/* the same thread again: the same nodes, the sums doubled */
	CHECK_EQ_INT(pathtree_add_thread(&t, &p->threads[1], fnmap, at), 0);
	CHECK_EQ_U64(t.len, 5);
	CHECK_EQ_U64(at[4], 4);
	CHECK_EQ_U64(t.n[4].calls, 12);
	CHECK_EQ_U64(t.n[0].total_ns, 180);
	pathtree_release(&t);
	profile_free(p);
}

static void test_push(void)
{
	struct pathtree t = {0};
	long a, b, c;

	a = pathtree_push(&t, PROFILE_NONE, PROFILE_NONE);
	b = pathtree_push(&t, 0, 7);
	c = pathtree_push(&t, (uint32_t)b, 7);
	CHECK_EQ_INT(a, 0);
	CHECK_EQ_INT(b, 1);
	CHECK_EQ_INT(c, 2);
	CHECK_EQ_U64(t.n[2].depth, 2);
	CHECK_EQ_U64(t.n[2].calls, 0);
	pathtree_release(&t);
}

int main(void)
{
	RUN_TEST(test_merged);
	RUN_TEST(test_thread_nodes);
	RUN_TEST(test_push);
	CHECK_DONE();
}
