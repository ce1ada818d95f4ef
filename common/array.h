/* SPDX-License-Identifier: MIT */
/* array.h - growing an array by doubling: the one copy of "when it is full,
 * realloc it twice as large", for the arrays every module appends to.
 *
 *	struct fn *v = NULL;
 *	size_t n = 0, cap = 0;
 *	...
 *	if (ARRAY_GROW(v, cap, n + 1))
 *		return -ENOMEM;
 *	v[n++] = f;
 *
 * Nothing here prints or exits. */
#ifndef CYGPROF_ARRAY_H
#define CYGPROF_ARRAY_H

#include <stddef.h>

/* Make room for at least need elements of elem bytes in the array *vp (a
 * pointer to the caller's element pointer) of *cap elements: its capacity
 * doubles (16 at first) until need fits; the new elements are not
 * initialised.  0, or -ENOMEM with *vp and *cap unchanged. */
int array_grow(void *vp, size_t *cap, size_t need, size_t elem);

/* array_grow() of the array v (an lvalue pointer) with capacity cap (an
 * lvalue size_t), called only when need exceeds cap (so that a writer may
 * ask before every append; the arguments are evaluated more than once). */
#define ARRAY_GROW(v, cap, need) \
	((need) > (cap) ? array_grow(&(v), &(cap), (need), sizeof(*(v))) : 0)

#endif
