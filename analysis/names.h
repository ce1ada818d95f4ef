/* SPDX-License-Identifier: MIT */
/* names.h - the interning of names into an array of structs that each
 * hold a `char *name`, indexed by name (common/hmap.h's struct hindex):
 * the function tables of profile.c and memory.c, annotate.c's files and
 * their sampled functions. */
#ifndef CYGPROF_NAMES_H
#define CYGPROF_NAMES_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "hmap.h"

/* The array of entries: base, the size of one entry, the offset of its
 * `char *name` field. */
struct name_array {
	const void *base;
	size_t stride, off;
};

static inline const char *name_at(struct name_array a, size_t i)
{
	return *(char *const *)((const char *)a.base + i * a.stride + a.off);
}

static inline int name_eq(const void *ctx, uint32_t i, const void *key)
{
	return !strcmp(name_at(*(const struct name_array *)ctx, i), key);
}

static inline uint64_t name_hash_at(const void *ctx, uint32_t i)
{
	return hash_str(name_at(*(const struct name_array *)ctx, i));
}

/* The index of the entry named name, or -ENOENT. */
static inline long name_index_find(const struct hindex *ix, struct name_array a, const char *name)
{
	long i = hindex_find(ix, hash_str(name), name_eq, &a, name);

	return i < 0 ? -ENOENT : i;
}

/* The index of the entry named name in the growable array *base (*n
 * entries of stride bytes, room for *cap, a `char *name` at offset off),
 * appending a zeroed entry named with a copy of name when there is none.
 * Returns the index (>= 0) or -ENOMEM. */
static inline long name_intern(struct hindex *ix, void **base, size_t *n, size_t *cap,
			       size_t stride, size_t off, const char *name)
{
	struct name_array a = {*base, stride, off};
	uint64_t h = hash_str(name);
	long i = hindex_find(ix, h, name_eq, &a, name);
	char *copy, *e;
	int err;

	if (i >= 0)
		return i;
	if (*n == *cap && array_grow(base, cap, *n + 1, stride))
		return -ENOMEM;
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	a.base = *base;
	err = hindex_add(ix, h, name_hash_at, &a);
	if (err) {
		free(copy);
		return err;
	}
	e = (char *)*base + *n * stride;
	memset(e, 0, stride);
	memcpy(e + off, &copy, sizeof(copy));
	return (long)(*n)++;
}

#endif
