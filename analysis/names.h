/* SPDX-License-Identifier: MIT */
/* names.h - an index from a name to the entry of an array of structs that
 * holds it (open addressing; slots hold index + 1, 0 is empty), and the
 * interning of names into such an array.  Used by the function tables of
 * profile.c and memory.c. */
#ifndef CYGPROF_NAMES_H
#define CYGPROF_NAMES_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct name_index {
	uint32_t *slots;
	size_t size; /* a power of two, 0 before the first insert */
};

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

static inline uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The index of the entry named name, or -ENOENT. */
static inline long name_index_find(const struct name_index *ix, struct name_array a,
				   const char *name)
{
	size_t j;

	if (!ix->size)
		return -ENOENT;
	for (j = name_hash(name) & (ix->size - 1); ix->slots[j]; j = (j + 1) & (ix->size - 1))
		if (!strcmp(name_at(a, ix->slots[j] - 1), name))
			return ix->slots[j] - 1;
	return -ENOENT;
}

/* Index entry i (its name already stored; n entries in all, i included),
 * doubling the table past half full.  Returns 0 or -ENOMEM. */
static inline int name_index_add(struct name_index *ix, struct name_array a, size_t n, uint32_t i)
{
	size_t j, k;

	if (n * 2 > ix->size) {
		size_t size = ix->size ? ix->size * 2 : 64;
		uint32_t *t = calloc(size, sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (k = 0; k < n; k++) {
			if (k == i)
				continue;
			for (j = name_hash(name_at(a, k)) & (size - 1); t[j]; j = (j + 1) & (size - 1))
				;
			t[j] = (uint32_t)k + 1;
		}
		free(ix->slots);
		ix->slots = t;
		ix->size = size;
	}
	for (j = name_hash(name_at(a, i)) & (ix->size - 1); ix->slots[j]; j = (j + 1) & (ix->size - 1))
		;
	ix->slots[j] = i + 1;
	return 0;
}

/* The index of the entry named name in the growable array *base (*n
 * entries of stride bytes, room for *cap, a `char *name` at offset off),
 * appending a zeroed entry named with a copy of name when there is none.
 * Returns the index (>= 0) or -ENOMEM. */
static inline long name_intern(struct name_index *ix, void **base, size_t *n, size_t *cap,
			       size_t stride, size_t off, const char *name)
{
	struct name_array a = {*base, stride, off};
	long i = name_index_find(ix, a, name);
	char *copy, *e;
	int err;

	if (i >= 0)
		return i;
	if (*n >= UINT32_MAX - 1)
		return -ENOMEM;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		void *t = realloc(*base, c * stride);

		if (!t)
			return -ENOMEM;
		*base = t;
		*cap = c;
	}
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	e = (char *)*base + *n * stride;
	memset(e, 0, stride);
	memcpy(e + off, &copy, sizeof(copy));
	i = (long)(*n)++;
	a.base = *base;
	err = name_index_add(ix, a, *n, (uint32_t)i);
	return err ? err : i;
}

static inline void name_index_release(struct name_index *ix)
{
	free(ix->slots);
	ix->slots = NULL;
	ix->size = 0;
}

#endif
