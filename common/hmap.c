/* SPDX-License-Identifier: MIT */
/* hmap.c - the out-of-line parts of the hash tables of hmap.h: growing,
 * deletion by backward shift, release. */
#include "hmap.h"

#include <stdlib.h>
#include <string.h>

/* The first size of a table: small enough for the many small ones (a
 * table per thread, per command), large enough to skip the first
 * doublings. */
#define HMAP_FIRST 64

/* Rehash m into a table of size slots (a power of two, room for all). */
static int hmap_resize(struct hmap *m, size_t size)
{
	size_t mask = size - 1, i, j;
	uint64_t *k, *v;

	if (size > SIZE_MAX / sizeof(*k))
		return -ENOMEM;
	k = calloc(size, sizeof(*k));
	v = malloc(size * sizeof(*v)); /* read only where a key is */
	if (!k || !v) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < m->size; i++) {
		if (!m->key[i])
			continue;
		for (j = (size_t)hash64(m->key[i]) & mask; k[j]; j = (j + 1) & mask)
			;
		k[j] = m->key[i];
		v[j] = m->val[i];
	}
	free(m->key);
	free(m->val);
	m->key = k;
	m->val = v;
	m->size = size;
	return 0;
}

int hmap_take(struct hmap *m, uint64_t key, uint64_t *val)
{
	size_t mask, i, j, k;

	if (!key) {
		if (!m->has0)
			return 0;
		*val = m->val0;
		m->has0 = 0;
		m->val0 = 0;
		return 1;
	}
	if (!m->size)
		return 0;
	mask = m->size - 1;
	i = hmap_pos_(m, key);
	if (!m->key[i])
		return 0;
	*val = m->val[i];
	/* Move each later key of the run into the hole unless its home slot
	 * k lies cyclically in (i, j]: then a lookup from k reaches j without
	 * passing the hole. */
	for (j = i;;) {
		j = (j + 1) & mask;
		if (!m->key[j])
			break;
		k = (size_t)hash64(m->key[j]) & mask;
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		m->key[i] = m->key[j];
		m->val[i] = m->val[j];
		i = j;
	}
	m->key[i] = 0;
	m->n--;
	return 1;
}

int hmap_grow(struct hmap *m)
{
	return hmap_resize(m, m->size ? m->size * 2 : HMAP_FIRST);
}

int hmap_reserve(struct hmap *m, size_t n)
{
	struct hmap t = {.size = m->size ? m->size : HMAP_FIRST, .sparse = m->sparse};

	if (n > SIZE_MAX / 4)
		return -ENOMEM;
	while (hmap_full_(&t, n))
		t.size *= 2;
	return t.size == m->size ? 0 : hmap_resize(m, t.size);
}

void hmap_release(struct hmap *m)
{
	int sparse = m->sparse;

	free(m->key);
	free(m->val);
	memset(m, 0, sizeof(*m));
	m->sparse = sparse;
}

/* Rehash entries 0 .. n - 1 into a table of size slots: the entries in
 * the order they are in the caller's array, read once each, in order. */
static int hindex_resize(struct hindex *ix, size_t size, hindex_hash_fn hash_at, const void *ctx)
{
	size_t mask = size - 1, i, j;
	uint32_t *t;

	if (size > SIZE_MAX / sizeof(*t) || !(t = calloc(size, sizeof(*t))))
		return -ENOMEM;
	for (i = 0; i < ix->n; i++) {
		for (j = (size_t)hash_at(ctx, (uint32_t)i) & mask; t[j]; j = (j + 1) & mask)
			;
		t[j] = (uint32_t)i + 1;
	}
	free(ix->slot);
	ix->slot = t;
	ix->size = size;
	return 0;
}

int hindex_grow(struct hindex *ix, hindex_hash_fn hash_at, const void *ctx)
{
	return hindex_resize(ix, ix->size ? ix->size * 2 : HMAP_FIRST, hash_at, ctx);
}

int hindex_reserve(struct hindex *ix, size_t n, hindex_hash_fn hash_at, const void *ctx)
{
	size_t size = ix->size ? ix->size : HMAP_FIRST;

	if (n > SIZE_MAX / 4)
		return -ENOMEM;
	while (n * 2 > size)
		size *= 2;
	return size == ix->size ? 0 : hindex_resize(ix, size, hash_at, ctx);
}

void hindex_release(struct hindex *ix)
{
	free(ix->slot);
	memset(ix, 0, sizeof(*ix));
}
