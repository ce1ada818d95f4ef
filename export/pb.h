/* SPDX-License-Identifier: MIT */
/* pb.h - a protobuf writer by hand (varints and length-delimited fields)
 * for the exports that write protobuf: pprof.c (profile.proto) and
 * perfetto.c (Perfetto's trace).  A struct pb is a growing buffer; the
 * first error (-ENOMEM) sticks and later writes do nothing. */
#ifndef EXPORT_PB_H
#define EXPORT_PB_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "array.h"

struct pb {
	uint8_t *b;
	size_t n, cap;
	int err;
};

static inline void pb_raw(struct pb *p, const void *d, size_t len)
{
	if (p->err)
		return;
	if (ARRAY_GROW(p->b, p->cap, p->n + len)) {
		p->err = -ENOMEM;
		return;
	}
	memcpy(p->b + p->n, d, len);
	p->n += len;
}

static inline void pb_varint(struct pb *p, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	do {
		b[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	pb_raw(p, b, n);
}

/* A varint field (left out when 0, the default). */
static inline void pb_uint(struct pb *p, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_varint(p, (uint64_t)field << 3);
	pb_varint(p, v);
}

/* A varint field written even when 0 (proto2 optional fields). */
static inline void pb_uint0(struct pb *p, unsigned field, uint64_t v)
{
	pb_varint(p, (uint64_t)field << 3);
	pb_varint(p, v);
}

static inline void pb_bytes(struct pb *p, unsigned field, const void *d, size_t len)
{
	pb_varint(p, (uint64_t)field << 3 | 2);
	pb_varint(p, len);
	pb_raw(p, d, len);
}

static inline void pb_str(struct pb *p, unsigned field, const char *s)
{
	pb_bytes(p, field, s, strlen(s));
}

/* A sub-message, then emptied for the next one. */
static inline void pb_msg(struct pb *p, unsigned field, struct pb *sub)
{
	if (sub->err)
		p->err = sub->err;
	pb_bytes(p, field, sub->b, sub->n);
	sub->n = 0;
}

#endif
