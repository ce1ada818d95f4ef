/* SPDX-License-Identifier: MIT */
/* test-hmap.c - unit tests of common/hmap.h (the hash map and the index
 * table) and common/array.h (growing arrays). */
#include "array.h"
#include "check.h"
#include "hmap.h"

/* A key whose home slot in a table of size slots is home, the n-th such
 * key from start up. */
static uint64_t key_at(size_t size, size_t home, uint64_t *start)
{
	uint64_t k = *start;

	while (!k || (hash64(k) & (size - 1)) != home)
		k++;
	*start = k + 1;
	return k;
}

static void test_put_get(void)
{
	struct hmap m = {0};
	uint64_t v = 7;

	CHECK_EQ_INT(hmap_get(&m, 42, &v), 0);
	CHECK_EQ_U64(v, 7);
	CHECK_EQ_INT(hmap_del(&m, 42), 0);
	CHECK_EQ_INT(hmap_put(&m, 42, 1), 0);
	CHECK_EQ_INT(hmap_put(&m, 43, 2), 0);
	CHECK_EQ_INT(hmap_get(&m, 42, &v), 1);
	CHECK_EQ_U64(v, 1);
	CHECK_EQ_INT(hmap_put(&m, 42, 3), 0); /* replaced */
	CHECK_EQ_INT(hmap_get(&m, 42, &v), 1);
	CHECK_EQ_U64(v, 3);
	CHECK_EQ_U64(hmap_count(&m), 2);
	/* key 0 is a key like the others */
	CHECK_EQ_INT(hmap_get(&m, 0, &v), 0);
	CHECK_EQ_INT(hmap_put(&m, 0, 9), 0);
	CHECK_EQ_INT(hmap_get(&m, 0, &v), 1);
	CHECK_EQ_U64(v, 9);
	CHECK_EQ_U64(hmap_count(&m), 3);
	CHECK_EQ_INT(hmap_del(&m, 0), 1);
	CHECK_EQ_INT(hmap_get(&m, 0, &v), 0);
	CHECK_EQ_INT(hmap_del(&m, 0), 0);
	CHECK_EQ_U64(hmap_count(&m), 2);
	hmap_release(&m);
	CHECK_EQ_U64(hmap_count(&m), 0);
	CHECK_EQ_INT(hmap_get(&m, 42, &v), 0);
}

static void test_get_or_put(void)
{
	struct hmap m = {0};
	uint64_t v = 0, *r;
	int added;

	CHECK_EQ_INT(hmap_get_or_put(&m, 5, 100, &v), 1);
	CHECK_EQ_U64(v, 100);
	CHECK_EQ_INT(hmap_get_or_put(&m, 5, 200, &v), 0);
	CHECK_EQ_U64(v, 100);
	CHECK_EQ_INT(hmap_get_or_put(&m, 0, 300, &v), 1);
	CHECK_EQ_INT(hmap_get_or_put(&m, 0, 400, &v), 0);
	CHECK_EQ_U64(v, 300);
	r = hmap_ref(&m, 6, &added);
	CHECK(r && added && *r == 0);
	*r += 5;
	r = hmap_ref(&m, 6, &added);
	CHECK(r && !added && *r == 5);
	hmap_release(&m);
}

/* Many keys: the table grows and every key keeps its value. */
static void test_grow(void)
{
	struct hmap m = {0};
	uint64_t i, v;
	int bad = 0;

	for (i = 1; i <= 100000; i++)
		if (hmap_put(&m, i * 0x10000, i))
			bad++;
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_U64(hmap_count(&m), 100000);
	/* at most 3/4 full */
	CHECK(m.size * 3 >= 100000 * 4 && (m.size & (m.size - 1)) == 0);
	for (i = 1; i <= 100000; i++)
		if (!hmap_get(&m, i * 0x10000, &v) || v != i)
			bad++;
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(hmap_get(&m, 0x10001, &v), 0);
	hmap_release(&m);

	/* a sparse map stays at most half full, and stays sparse */
	m.sparse = 1;
	for (i = 1; i <= 1000; i++)
		if (hmap_put(&m, i, i))
			bad++;
	CHECK_EQ_INT(bad, 0);
	CHECK(m.size >= 2000);
	hmap_release(&m);
	CHECK_EQ_INT(m.sparse, 1);
	/* reserving: room for n keys at once, no doubling on the way */
	CHECK_EQ_INT(hmap_reserve(&m, 5000), 0);
	CHECK_EQ_U64(m.size, 16384);
	hmap_release(&m);
	m.sparse = 0;
	CHECK_EQ_INT(hmap_reserve(&m, 5000), 0);
	CHECK_EQ_U64(m.size, 8192);
	CHECK_EQ_INT(hmap_put(&m, 7, 8), 0);
	CHECK_EQ_INT(hmap_reserve(&m, 10), 0); /* never shrinks */
	CHECK(hmap_get(&m, 7, &v) && v == 8);
	CHECK_EQ_U64(m.size, 8192);
	hmap_release(&m);
}

/* Deletion moves the rest of a run back, across the end of the table too,
 * and leaves a key at its home slot where it is. */
static void test_delete_backward_shift(void)
{
	struct hmap m = {0};
	uint64_t s = 1, a, b, c, d, e, v;
	size_t size;

	CHECK_EQ_INT(hmap_put(&m, 1, 1), 0);
	size = m.size;
	CHECK_EQ_INT(hmap_del(&m, 1), 1);
	/* a, b, c are at home size - 1 and run over the end to slots 0 and
	 * 1; d is at home 1, so it sits in slot 2; e at home 2 behind it */
	a = key_at(size, size - 1, &s);
	b = key_at(size, size - 1, &s);
	c = key_at(size, size - 1, &s);
	s = 1;
	d = key_at(size, 1, &s);
	s = 1;
	e = key_at(size, 2, &s);
	CHECK_EQ_INT(hmap_put(&m, a, 10), 0);
	CHECK_EQ_INT(hmap_put(&m, b, 11), 0);
	CHECK_EQ_INT(hmap_put(&m, c, 12), 0);
	CHECK_EQ_INT(hmap_put(&m, d, 13), 0);
	CHECK_EQ_INT(hmap_put(&m, e, 14), 0);
	CHECK_EQ_U64(m.size, size);
	CHECK_EQ_U64(m.key[size - 1], a);
	CHECK_EQ_U64(m.key[0], b);
	CHECK_EQ_U64(m.key[1], c);
	CHECK_EQ_U64(m.key[2], d);
	CHECK_EQ_U64(m.key[3], e);
	/* removing a: b and c move back over the end, d to its home 1, e to
	 * its home 2 */
	CHECK_EQ_INT(hmap_del(&m, a), 1);
	CHECK_EQ_U64(m.key[size - 1], b);
	CHECK_EQ_U64(m.key[0], c);
	CHECK_EQ_U64(m.key[1], d);
	CHECK_EQ_U64(m.key[2], e);
	CHECK_EQ_U64(m.key[3], 0);
	CHECK_EQ_INT(hmap_get(&m, a, &v), 0);
	CHECK(hmap_get(&m, b, &v) && v == 11);
	CHECK(hmap_get(&m, c, &v) && v == 12);
	CHECK(hmap_get(&m, d, &v) && v == 13);
	CHECK(hmap_get(&m, e, &v) && v == 14);
	/* removing c (slot 0): d and e are at home, nothing moves */
	CHECK_EQ_INT(hmap_del(&m, c), 1);
	CHECK_EQ_U64(m.key[0], 0);
	CHECK_EQ_U64(m.key[1], d);
	CHECK_EQ_U64(m.key[2], e);
	CHECK_EQ_U64(hmap_count(&m), 3);
	hmap_release(&m);
}

/* Random puts and deletes against a plain array. */
static void test_delete_random(void)
{
	enum { N = 4096 };
	static uint64_t val[N]; /* 0: absent */
	struct hmap m = {0};
	uint64_t x = 88172645463325252ULL, v;
	int bad = 0, i;

	for (i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t k = x % N;
		if (x >> 62) {
			val[k] = x | 1;
			if (hmap_put(&m, k, val[k]))
				bad++;
		} else {
			if (hmap_del(&m, k) != (val[k] != 0))
				bad++;
			val[k] = 0;
		}
	}
	size_t n = 0;
	for (i = 0; i < N; i++) {
		int got = hmap_get(&m, (uint64_t)i, &v);
		n += val[i] != 0;
		if (got != (val[i] != 0) || (got && v != val[i]))
			bad++;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_U64(hmap_count(&m), n);
	hmap_release(&m);
}

/* ---- hindex: the caller's entries, keyed by string ------------------------- */

struct names {
	char **v;
	size_t n, cap;
	struct hindex ix;
};

static int name_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct names *t = ctx;

	return !strcmp(t->v[i], key);
}

static uint64_t name_hash(const void *ctx, uint32_t i)
{
	const struct names *t = ctx;

	return hash_str(t->v[i]);
}

static long intern(struct names *t, const char *s)
{
	long i = hindex_find(&t->ix, hash_str(s), name_eq, t, s);

	if (i >= 0)
		return i;
	if (ARRAY_GROW(t->v, t->cap, t->n + 1) || hindex_add(&t->ix, hash_str(s), name_hash, t))
		return -ENOMEM;
	t->v[t->n] = strdup(s);
	return (long)t->n++;
}

static void test_hindex(void)
{
	struct names t = {0};
	char buf[32];
	int bad = 0, i;

	CHECK_EQ_INT(hindex_find(&t.ix, hash_str("x"), name_eq, &t, "x"), -1);
	for (i = 0; i < 5000; i++) {
		snprintf(buf, sizeof buf, "fn%d", i);
		if (intern(&t, buf) != i)
			bad++;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_U64(t.ix.n, 5000);
	CHECK(t.ix.size >= 10000);
	for (i = 4999; i >= 0; i--) {
		snprintf(buf, sizeof buf, "fn%d", i);
		if (intern(&t, buf) != i ||
		    hindex_find(&t.ix, hash_str(buf), name_eq, &t, buf) != i)
			bad++;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_U64(t.n, 5000);
	CHECK_EQ_INT(hindex_find(&t.ix, hash_str("fn5000"), name_eq, &t, "fn5000"), -1);
	/* room reserved: no growth while adding up to it */
	CHECK_EQ_INT(hindex_reserve(&t.ix, 20000, name_hash, &t), 0);
	CHECK_EQ_U64(t.ix.size, 65536);
	CHECK_EQ_INT(intern(&t, "fn17"), 17);
	/* an empty string is a name like the others */
	CHECK_EQ_INT(intern(&t, ""), 5000);
	CHECK_EQ_INT(intern(&t, ""), 5000);
	for (size_t k = 0; k < t.n; k++)
		free(t.v[k]);
	free(t.v);
	hindex_release(&t.ix);
	CHECK_EQ_U64(t.ix.size, 0);
}

/* Entries keyed by two 32-bit fields: a trie of (parent, fn). */
struct tnode {
	uint64_t weight;
	uint32_t parent, fn;
};

static void test_pairs(void)
{
	struct tnode *v = NULL;
	struct hindex ix = {0};
	size_t n = 0, cap = 0;
	uint32_t p, f;
	int bad = 0;

#define TNODES HINDEX_PAIRS(v, struct tnode, parent, fn)
	for (p = 0; p < 300; p++)
		for (f = 0; f < 40; f++) {
			if (hindex_find_pair(&ix, TNODES, p, f) != -1)
				bad++;
			if (ARRAY_GROW(v, cap, n + 1) || hindex_add_pair(&ix, TNODES, p, f))
				bad++;
			v[n++] = (struct tnode){.weight = p * 1000 + f, .parent = p, .fn = f};
		}
	CHECK_EQ_INT(bad, 0);
	for (p = 0; p < 300; p++)
		for (f = 0; f < 40; f++) {
			long i = hindex_find_pair(&ix, TNODES, p, f);

			if (i < 0 || v[i].weight != p * 1000 + f)
				bad++;
		}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(hindex_find_pair(&ix, TNODES, 40, 300), -1);
	CHECK_EQ_INT(hindex_find_pair(&ix, TNODES, UINT32_MAX, 0), -1);
#undef TNODES
	free(v);
	hindex_release(&ix);
}

/* A walk gives every key once, key 0 too; take gives the value back. */
static void test_next_take(void)
{
	struct hmap m = {0};
	uint64_t k, v, sum = 0;
	size_t pos = 0, n = 0;

	for (k = 0; k < 100; k++)
		CHECK_EQ_INT(hmap_put(&m, k, k * 2), 0);
	while (hmap_next(&m, &pos, &k, &v)) {
		n++;
		sum += k;
		CHECK_EQ_U64(v, k * 2);
	}
	CHECK_EQ_U64(n, 100);
	CHECK_EQ_U64(sum, 4950);
	v = 0;
	CHECK_EQ_INT(hmap_take(&m, 42, &v), 1);
	CHECK_EQ_U64(v, 84);
	CHECK_EQ_INT(hmap_take(&m, 42, &v), 0);
	CHECK_EQ_INT(hmap_take(&m, 0, &v), 1);
	CHECK_EQ_U64(v, 0);
	CHECK_EQ_U64(hmap_count(&m), 98);
	hmap_release(&m);
	pos = 0;
	CHECK_EQ_INT(hmap_next(&m, &pos, &k, &v), 0);
}

/* The hashes spread keys that differ only in their high bits (one
 * process's addresses from another's) over the low bits. */
static void test_hashes(void)
{
	uint64_t seen = 0;

	for (uint64_t p = 0; p < 64; p++)
		seen |= 1ULL << (hash64(p << 48 | 0x7f0000001000ULL) & 63);
	CHECK(__builtin_popcountll(seen) > 32);
	/* functions 128 or 4096 bytes apart do not pile up in a few runs (a
	 * plain multiplication put them 7 probes from home) */
	for (uint64_t step = 0x80; step <= 0x1000; step *= 32) {
		struct hmap m = {0};
		size_t i, disp = 0;

		for (i = 0; i < 25; i++)
			CHECK_EQ_INT(hmap_put(&m, 0x55d0c0a01250ULL + step * i, i), 0);
		for (i = 0; i < m.size; i++)
			if (m.key[i])
				disp += (i - (hash64(m.key[i]) & (m.size - 1))) & (m.size - 1);
		CHECK(disp <= 25);
		hmap_release(&m);
	}
	CHECK(hash_str("a") != hash_str("b"));
	CHECK_EQ_U64(hash_str(""), 0xcbf29ce484222325ULL);
	CHECK(hash_pair(1, 2) != hash_pair(2, 1));
}

static void test_array_grow(void)
{
	int *v = NULL;
	size_t cap = 0, i;
	int bad = 0;

	CHECK_EQ_INT(ARRAY_GROW(v, cap, 1), 0);
	CHECK_EQ_U64(cap, 16);
	for (i = 0; i < 1000; i++) {
		if (ARRAY_GROW(v, cap, i + 1))
			bad++;
		v[i] = (int)i;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_U64(cap, 1024);
	for (i = 0; i < 1000; i++)
		bad += v[i] != (int)i;
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(ARRAY_GROW(v, cap, 10), 0); /* room already */
	CHECK_EQ_U64(cap, 1024);
	CHECK_EQ_INT(ARRAY_GROW(v, cap, 5000), 0); /* doubled until it fits */
	CHECK_EQ_U64(cap, 8192);
	CHECK_EQ_INT(ARRAY_GROW(v, cap, SIZE_MAX / 2), -ENOMEM);
	CHECK_EQ_U64(cap, 8192);
	CHECK_EQ_INT(v[999], 999);
	free(v);
}

int main(void)
{
	RUN_TEST(test_put_get);
	RUN_TEST(test_get_or_put);
	RUN_TEST(test_grow);
	RUN_TEST(test_delete_backward_shift);
	RUN_TEST(test_delete_random);
	RUN_TEST(test_hindex);
	RUN_TEST(test_pairs);
	RUN_TEST(test_next_take);
	RUN_TEST(test_hashes);
	RUN_TEST(test_array_grow);
	CHECK_DONE();
}
