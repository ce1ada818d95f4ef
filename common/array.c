/* SPDX-License-Identifier: MIT */
/* array.c - growing an array by doubling (array.h). */
#include "array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int array_grow(void *vp, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 16;
	void *v, *t;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return -ENOMEM;
		c *= 2;
	}
	if (!elem || c > SIZE_MAX / elem)
		return -ENOMEM;
	/* *vp is the caller's T *: read and written as bytes, whatever T. */
	memcpy(&v, vp, sizeof(v));
	t = realloc(v, c * elem);
	if (!t)
		return -ENOMEM;
	memcpy(vp, &t, sizeof(t));
	*cap = c;
	return 0;
}
