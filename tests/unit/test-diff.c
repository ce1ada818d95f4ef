/* SPDX-License-Identifier: MIT */
/* test-diff.c - analysis/diff.c: matching two sides by key, deltas, added
 * and removed entries, merging duplicates and the orders. */
#include <errno.h>
#include <math.h>

#include "check.h"
#include "diff.h"

#define E(k, n, o, a, b, c) {.key = (k), .name = (n), .object = (o), .v = {(a), (b), (c)}}

static const struct diff_row *find(const struct diff_row *r, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp((r[i].new ? r[i].new : r[i].old)->key, key))
			return &r[i];
	CHECK(0 && "row not found");
	return NULL;
}

static void test_match(void)
{
	struct diff_entry old[] = {
		E("prog\x1f" "work", "work", "prog", 1000, 500, 900),
		E("prog\x1f" "main", "main", "prog", 1, 100, 1000),
		E("prog\x1f" "gone", "gone", "prog", 3, 30, 30),
		E("libx.so\x1f" "work", "work", "libx.so", 7, 7, 7),
	};
	struct diff_entry new[] = {
		E("prog\x1f" "main", "main", "prog", 1, 100, 1000),
		E("prog\x1f" "work", "work", "prog", 2000, 1000, 1900),
		E("prog\x1f" "fresh", "fresh", "prog", 5, 50, 50),
		E("libx.so\x1f" "work", "work", "libx.so", 7, 8, 8),
	};
	struct diff_row *r;
	const struct diff_row *x;
	size_t n;

	CHECK_EQ_INT(diff_match(old, 4, new, 4, 3, &r, &n), 0);
	CHECK_EQ_U64(n, 5);
	x = find(r, n, "prog\x1f" "work");
	if (x) {
		CHECK_EQ_INT(x->status, DIFF_CHANGED);
		CHECK_EQ_U64(x->ov[0], 1000);
		CHECK_EQ_U64(x->nv[0], 2000);
		CHECK_EQ_INT(x->delta[0], 1000);
		CHECK_EQ_INT(x->delta[1], 500);
		CHECK_EQ_INT(x->delta[2], 1000);
	}
	x = find(r, n, "prog\x1f" "main");
	if (x) {
		CHECK_EQ_INT(x->status, DIFF_SAME);
		CHECK_EQ_INT(x->delta[0], 0);
	}
	x = find(r, n, "prog\x1f" "gone");
	if (x) {
		CHECK_EQ_INT(x->status, DIFF_REMOVED);
		CHECK(x->new == NULL);
		CHECK_EQ_INT(x->delta[0], -3);
		CHECK_EQ_U64(x->nv[1], 0);
	}
	x = find(r, n, "prog\x1f" "fresh");
	if (x) {
		CHECK_EQ_INT(x->status, DIFF_ADDED);
		CHECK(x->old == NULL);
		CHECK_EQ_INT(x->delta[1], 50);
	}
	/* same name, other object: its own row */
	x = find(r, n, "libx.so\x1f" "work");
	if (x) {
		CHECK_EQ_INT(x->status, DIFF_CHANGED);
		CHECK_EQ_INT(x->delta[0], 0);
		CHECK_EQ_INT(x->delta[1], 1);
		CHECK_EQ_STR(diff_row_object(x), "libx.so");
	}

	/* by calls: work (+1000), gone (-3), then the zero-change ones by name */
	diff_sort(r, n, 0);
	CHECK_EQ_STR(diff_row_name(&r[0]), "work");
	CHECK_EQ_STR(diff_row_object(&r[0]), "prog");
	CHECK_EQ_STR(diff_row_name(&r[1]), "fresh");
	CHECK_EQ_STR(diff_row_name(&r[2]), "gone");
	CHECK_EQ_STR(diff_row_name(&r[3]), "main");
	CHECK_EQ_STR(diff_row_name(&r[4]), "work");
	CHECK_EQ_STR(diff_row_object(&r[4]), "libx.so");
	/* by self time: work +500, fresh +50, gone -30, libx work +1, main 0 */
	diff_sort(r, n, 1);
	CHECK_EQ_STR(diff_row_name(&r[0]), "work");
	CHECK_EQ_STR(diff_row_name(&r[1]), "fresh");
	CHECK_EQ_STR(diff_row_name(&r[2]), "gone");
	CHECK_EQ_STR(diff_row_object(&r[3]), "libx.so");
	CHECK_EQ_STR(diff_row_name(&r[4]), "main");
	diff_sort(r, n, DIFF_BY_NAME);
	CHECK_EQ_STR(diff_row_name(&r[0]), "fresh");
	CHECK_EQ_STR(diff_row_name(&r[1]), "gone");
	CHECK_EQ_STR(diff_row_name(&r[2]), "main");
	CHECK_EQ_STR(diff_row_object(&r[3]), "libx.so"); /* "libx.so" < "prog" */
	CHECK_EQ_STR(diff_row_object(&r[4]), "prog");
	free(r);
}

static void test_merge(void)
{
	struct diff_entry e[] = {
		E("b", "b", NULL, 1, 2, 3),
		E("a", "a", NULL, 10, 0, 0),
		E("b", "b", NULL, 4, 5, 6),
		E("a", "a", NULL, UINT64_MAX, 1, 0),
	};
	size_t n = 4;

	diff_merge(e, &n, 3);
	CHECK_EQ_U64(n, 2);
	CHECK_EQ_STR(e[0].key, "a");
	CHECK_EQ_U64(e[0].v[0], UINT64_MAX); /* saturated */
	CHECK_EQ_U64(e[0].v[1], 1);
	CHECK_EQ_STR(e[1].key, "b");
	CHECK_EQ_U64(e[1].v[0], 5);
	CHECK_EQ_U64(e[1].v[1], 7);
	CHECK_EQ_U64(e[1].v[2], 9);
	n = 0;
	diff_merge(e, &n, 3);
	CHECK_EQ_U64(n, 0);
}

static void test_empty_and_rel(void)
{
	struct diff_entry one[] = {E("x", "x", NULL, 2, 0, 0)};
	struct diff_row *r;
	size_t n;

	CHECK_EQ_INT(diff_match(NULL, 0, NULL, 0, 3, &r, &n), 0);
	CHECK_EQ_U64(n, 0);
	free(r);
	CHECK_EQ_INT(diff_match(one, 1, NULL, 0, 3, &r, &n), 0);
	CHECK_EQ_U64(n, 1);
	CHECK_EQ_INT(r[0].status, DIFF_REMOVED);
	free(r);
	CHECK_EQ_INT(diff_match(one, 1, one, 1, DIFF_MAX_VALUES + 1, &r, &n), -EINVAL);
	CHECK(diff_rel(1000, 2000) == 1.0);
	CHECK(diff_rel(200, 100) == -0.5);
	CHECK(isnan(diff_rel(0, 5)));
	CHECK_EQ_STR(diff_status_str(DIFF_ADDED), "added");
	CHECK_EQ_STR(diff_status_str(DIFF_REMOVED), "removed");
}

static void test_saturated_delta(void)
{
	struct diff_entry o[] = {E("x", "x", NULL, UINT64_MAX, 0, 0)};
	struct diff_entry n0[] = {E("x", "x", NULL, 0, UINT64_MAX, 0)};
	struct diff_row *r;
	size_t n;

	CHECK_EQ_INT(diff_match(o, 1, n0, 1, 2, &r, &n), 0);
	CHECK_EQ_INT(r[0].delta[0], INT64_MIN);
	CHECK_EQ_INT(r[0].delta[1], INT64_MAX);
	free(r);
}

int main(void)
{
	RUN_TEST(test_match);
	RUN_TEST(test_merge);
	RUN_TEST(test_empty_and_rel);
	RUN_TEST(test_saturated_delta);
	CHECK_DONE();
}
