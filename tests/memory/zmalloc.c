/* SPDX-License-Identifier: MIT */
/*
 * zmalloc.c - allocations shaped like Redis's zmalloc.c (MALLOC=libc):
 * zmalloc() and zmalloc_usable() call the static inline
 * ztrymalloc_usable_internal(), which calls malloc and adds the block's
 * usable size to used_memory.  Every function is instrumented; at -O2 the
 * inline one is inlined into both callers (and still entered, as
 * -finstrument-functions does), so malloc's return address lies in
 * zmalloc or zmalloc_usable while the shadow stack's innermost frame is
 * ztrymalloc_usable_internal (tests/memory, memory-zmalloc-*).
 *
 * main: createObject() 10 times (zmalloc(100) each), createString() 5
 * times (zmalloc_usable(200) each), then frees all 15 blocks.  Exact:
 *   allocation stacks (folded, bytes):
 *     main;createObject;zmalloc;ztrymalloc_usable_internal        1000
 *     main;createString;zmalloc_usable;ztrymalloc_usable_internal 1000
 *   self (frees counted where their blocks were allocated):
 *         ztrymalloc_usable_internal 15 allocations, 2000 bytes, 15 frees;
 *         zmalloc, zmalloc_usable, createObject, createString, main nothing
 *   total (allocations/bytes/frees): zmalloc 10/1000/10, zmalloc_usable
 *          5/1000/5, createObject 10/1000/10, createString 5/1000/5,
 *          main 15/2000/15
 * No stdio: nothing else allocates.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

/* zmalloc.h's */
void *zmalloc(size_t size);
void *zmalloc_usable(size_t size, size_t *usable);

static size_t used_memory;

static inline void *ztrymalloc_usable_internal(size_t size, size_t *usable)
{
	if (size >= SIZE_MAX / 2)
		return NULL;
	void *ptr = malloc(size);
	if (!ptr)
		return NULL;
	size = malloc_usable_size(ptr);
	__atomic_add_fetch(&used_memory, size, __ATOMIC_RELAXED);
	if (usable)
		*usable = size;
	return ptr;
}

void *zmalloc(size_t size)
{
	void *ptr = ztrymalloc_usable_internal(size, NULL);

	if (!ptr)
		abort();
	return ptr;
}

void *zmalloc_usable(size_t size, size_t *usable)
{
	void *ptr = ztrymalloc_usable_internal(size, usable);

	if (!ptr)
		abort();
	return ptr;
}

COUNTED static void *createObject(void)
{
	return zmalloc(100);
}

COUNTED static void *createString(void)
{
	size_t usable;

	return zmalloc_usable(200, &usable);
}

int main(void)
{
	void *keep[15];
	int i;

	for (i = 0; i < 10; i++)
		keep[i] = createObject();
	for (i = 10; i < 15; i++)
		keep[i] = createString();
	for (i = 0; i < 15; i++)
		free(keep[i]);
	return used_memory < 2000; /* usable sizes: at least what was asked */
}
