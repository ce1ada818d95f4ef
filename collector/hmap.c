/* SPDX-License-Identifier: MIT */
/* hmap.c - the collector's open-addressing hash map from a 64-bit key (never
 * 0) to a 64-bit value (struct hmap in collector-private.h). */
#include <errno.h>
#include <string.h>

#include "collector-private.h"

static int hmap_grow(struct hmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64, i;
	uint64_t *k = calloc(cap, sizeof *k), *v = calloc(cap, sizeof *v);

	if (!k || !v) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = (m->keys[i] * 0x9E3779B97F4A7C15ULL) >> 7 & (cap - 1);
		while (k[j])
			j = (j + 1) & (cap - 1);
		k[j] = m->keys[i];
		v[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = k;
	m->vals = v;
	m->cap = cap;
	return 0;
}

int hmap_put(struct hmap *m, uint64_t key, uint64_t val)
{
	size_t j;

	if ((m->n + 1) * 4 >= m->cap * 3 && hmap_grow(m))
		return -ENOMEM;
	j = (key * 0x9E3779B97F4A7C15ULL) >> 7 & (m->cap - 1);
	while (m->keys[j] && m->keys[j] != key)
		j = (j + 1) & (m->cap - 1);
	if (!m->keys[j])
		m->n++;
	m->keys[j] = key;
	m->vals[j] = val;
	return 0;
}

int hmap_get(const struct hmap *m, uint64_t key, uint64_t *val)
{
	size_t j;

	if (!m->cap)
		return 0;
	j = (key * 0x9E3779B97F4A7C15ULL) >> 7 & (m->cap - 1);
	while (m->keys[j]) {
		if (m->keys[j] == key) {
			*val = m->vals[j];
			return 1;
		}
		j = (j + 1) & (m->cap - 1);
	}
	return 0;
}

void hmap_release(struct hmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}
