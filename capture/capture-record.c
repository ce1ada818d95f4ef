/* SPDX-License-Identifier: MIT */
/* capture-record.c - the one layout of each record that is one LMDB value
 * (procs, threads, objects, symbols, stacks, counters), and of each row of
 * the arrays of trees and sites: a table of its key and value fields, read
 * by the writer (record_encode, record_encode_rows) and by the reader
 * (record_decode, record_decode_row), so that the two cannot disagree on a
 * byte.
 *
 * Keys are big-endian (LMDB orders them bytewise); values are the fields in
 * table order, little-endian, strings as LE32 length and bytes.  Bytes after
 * the last field are ignored (versioning rules); fields after F_OPTIONAL are
 * read only when all of them are there (they were appended later). */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "capture-private.h"

#define FLD(kind, type, member) { kind, offsetof(type, member), sizeof(((type *)0)->member) }
#define OPTIONAL { F_OPTIONAL, 0, 0 }
#define LAYOUT(name, ...)                                                   \
	static const struct field name##_fields[] = { __VA_ARGS__ };        \
	const struct record_layout name = { name##_fields,                  \
					    sizeof(name##_fields) / sizeof(struct field) }

#define P struct cygprof_proc
LAYOUT(layout_proc, FLD(F_KEY32, P, idx), FLD(F_U32, P, pid), FLD(F_U32, P, ppid),
       FLD(F_U32, P, parent_idx), FLD(F_U64, P, start_ns), FLD(F_U64, P, end_ns),
       FLD(F_U32, P, end_kind), FLD(F_U32, P, end_code), FLD(F_STR, P, command),
       FLD(F_STR, P, exe));
#undef P

#define T struct cygprof_thread
LAYOUT(layout_thread, FLD(F_KEY32, T, idx), FLD(F_U32, T, proc_idx), FLD(F_U32, T, tid),
       FLD(F_U32, T, flags), FLD(F_U64, T, start_ns), FLD(F_U64, T, end_ns),
       FLD(F_U64, T, calls), FLD(F_U64, T, events), FLD(F_U64, T, lost), FLD(F_U64, T, waits),
       FLD(F_U64, T, wait_ns), FLD(F_U64, T, unpaired), FLD(F_U64, T, unwound),
       FLD(F_NAME, T, name), OPTIONAL, FLD(F_U64, T, overflow), FLD(F_U64, T, sig_lost),
       FLD(F_U64, T, mem_lost));
#undef T

#define O struct cygprof_object
LAYOUT(layout_object, FLD(F_KEY32, O, idx), FLD(F_U32, O, proc_idx), FLD(F_U64, O, start),
       FLD(F_U64, O, end), FLD(F_U64, O, bias), FLD(F_U32, O, build_id_len),
       FLD(F_BYTES, O, build_id), FLD(F_STR, O, path));
#undef O

#define S struct cygprof_symbol
LAYOUT(layout_symbol, FLD(F_KEY32, S, proc_idx), FLD(F_KEY64, S, addr),
       FLD(F_U32, S, object_idx), FLD(F_U64, S, size), FLD(F_STR, S, name));
#undef S

#define N struct cygprof_stack_node
LAYOUT(layout_stack, FLD(F_KEY32, N, id), FLD(F_U32, N, parent), FLD(F_U32, N, proc_idx),
       FLD(F_U32, N, kind), FLD(F_U64, N, addr));
#undef N

#define C struct cygprof_counter
LAYOUT(layout_counter, FLD(F_KEY32, C, id), FLD(F_U32, C, proc_idx), FLD(F_U32, C, unit),
       FLD(F_U32, C, flags), FLD(F_STR, C, name));
#undef C

#define V struct cygprof_cpu
LAYOUT(layout_cpu, FLD(F_KEY32, V, thread_idx), FLD(F_U32, V, method), FLD(F_U32, V, flags),
       FLD(F_U64, V, period_ns), FLD(F_U64, V, cpu_ns), FLD(F_U64, V, samples),
       FLD(F_U64, V, overhead), FLD(F_U64, V, unplaced), FLD(F_U64, V, wait_ns),
       FLD(F_U64, V, blocked_ns), FLD(F_U64, V, unplaced_ns), FLD(F_U64, V, switches),
       FLD(F_U64, V, switches_lost));
#undef V

/* Rows of a cpu record (varints). */
#define R struct cygprof_cpu_node
LAYOUT(layout_cpu_node, FLD(F_U32, R, node), FLD(F_U64, R, samples), FLD(F_U64, R, overhead),
       FLD(F_U64, R, wait_ns), FLD(F_U64, R, blocked_ns));
#undef R

#define V struct cygprof_latency
LAYOUT(layout_latency, FLD(F_KEY32, V, thread_idx), FLD(F_U32, V, sub), FLD(F_U64, V, unit_ns));
#undef V

/* Rows of a latency record (varints). */
#define R struct cygprof_lat_row
LAYOUT(layout_lat_row, FLD(F_U32, R, node), FLD(F_U32, R, kind), FLD(F_U64, R, lo_ns),
       FLD(F_U64, R, hi_ns), FLD(F_U64, R, count));
#undef R

/* Rows of the arrays of trees and sites (after LE32 count, LE32 row size). */
#define R struct cygprof_node
LAYOUT(layout_node, FLD(F_U32, R, parent), FLD(F_U32, R, flags), FLD(F_U64, R, fn),
       FLD(F_U64, R, site), FLD(F_U64, R, calls), FLD(F_U64, R, total_ns));
#undef R

#define R struct cygprof_callsite
LAYOUT(layout_site, FLD(F_U32, R, node), FLD(F_U32, R, flags), FLD(F_U64, R, site),
       FLD(F_U64, R, calls), FLD(F_U64, R, total_ns));
#undef R

static uint32_t rec_u32(const void *rec, const struct field *f)
{
	uint32_t v;

	memcpy(&v, (const char *)rec + f->off, sizeof(v));
	return v;
}

static uint64_t rec_u64(const void *rec, const struct field *f)
{
	uint64_t v;

	memcpy(&v, (const char *)rec + f->off, sizeof(v));
	return v;
}

size_t record_encode(const struct record_layout *l, const void *rec, uint8_t *key,
		     struct cbuf *b)
{
	const struct field *f;
	const char *at;
	size_t klen = 0, i, n = 0;
	uint8_t *p;

	b->len = 0;
	for (i = 0; i < l->n; i++) {
		f = &l->f[i];
		at = (const char *)rec + f->off;
		switch (f->kind) {
		case F_KEY32:
			put_be32(key + klen, rec_u32(rec, f));
			klen += 4;
			break;
		case F_KEY64:
			put_be64(key + klen, rec_u64(rec, f));
			klen += 8;
			break;
		case F_U32:
			cbuf_le32(b, rec_u32(rec, f));
			break;
		case F_U64:
			cbuf_le64(b, rec_u64(rec, f));
			break;
		case F_STR:
			cbuf_str(b, *(char *const *)(const void *)at);
			break;
		case F_NAME:
		case F_BYTES:
			/* the meaningful bytes (a string's, or as many as the
			 * length field before says), then zeros */
			n = f->kind == F_NAME ? strnlen(at, f->size - 1u)
					      : rec_u32(rec, &l->f[i - 1]);
			p = cbuf_grow(b, f->size);
			if (p) {
				memset(p, 0, f->size);
				memcpy(p, at, n < f->size ? n : f->size);
			}
			break;
		}
	}
	return klen;
}

int record_decode(const struct record_layout *l, const MDB_val *k, const MDB_val *v, void *rec)
{
	const uint8_t *key = k->mv_data, *p;
	const struct field *f;
	size_t klen = 0, i, j, rest;
	struct crd r;
	uint32_t v32;
	uint64_t v64;
	char *s, *at;

	for (i = 0; i < l->n; i++)
		klen += l->f[i].kind == F_KEY32 ? 4 : l->f[i].kind == F_KEY64 ? 8 : 0;
	if (k->mv_size != klen)
		return CYGPROF_E_CORRUPT;
	crd_init(&r, v);
	for (i = 0; i < l->n; i++) {
		f = &l->f[i];
		at = (char *)rec + f->off;

		switch (f->kind) {
		case F_KEY32:
			v32 = get_be32(key);
			memcpy(at, &v32, sizeof(v32));
			key += 4;
			break;
		case F_KEY64:
			v64 = get_be64(key);
			memcpy(at, &v64, sizeof(v64));
			key += 8;
			break;
		case F_U32:
			v32 = crd_le32(&r);
			memcpy(at, &v32, sizeof(v32));
			break;
		case F_U64:
			v64 = crd_le64(&r);
			memcpy(at, &v64, sizeof(v64));
			break;
		case F_STR:
			s = crd_str(&r);
			memcpy(at, &s, sizeof(s));
			break;
		case F_NAME:
		case F_BYTES:
			p = crd_take(&r, f->size);
			if (p)
				memcpy(at, p, f->size);
			if (p && f->kind == F_NAME)
				at[f->size - 1] = 0;
			break;
		case F_OPTIONAL:
			/* all of the fields after it, or none (left 0) */
			for (j = i + 1, rest = 0; j < l->n; j++)
				rest += l->f[j].kind == F_STR ? 4 : l->f[j].size;
			if (r.bad || r.oom || r.len - r.off < rest)
				return crd_status(&r);
			break;
		}
	}
	return crd_status(&r);
}

size_t record_row_size(const struct record_layout *l)
{
	size_t i, n = 0;

	for (i = 0; i < l->n; i++)
		n += l->f[i].size;
	return n;
}

void record_encode_rows(const struct record_layout *l, const void *rows, size_t n,
			size_t stride, struct cbuf *b)
{
	size_t row = record_row_size(l), i, j;
	const char *rec = rows;
	uint8_t *p;

	b->len = 0;
	cbuf_le32(b, (uint32_t)n);
	cbuf_le32(b, (uint32_t)row);
	p = cbuf_grow(b, n * row);
	for (i = 0; p && i < n; i++, rec += stride) {
		for (j = 0; j < l->n; j++) {
			if (l->f[j].kind == F_U32) {
				put_le32(p, rec_u32(rec, &l->f[j]));
				p += 4;
			} else {
				put_le64(p, rec_u64(rec, &l->f[j]));
				p += 8;
			}
		}
	}
}

void record_decode_row(const struct record_layout *l, const uint8_t *p, void *rec)
{
	uint32_t v32;
	uint64_t v64;
	size_t j;

	for (j = 0; j < l->n; j++) {
		char *at = (char *)rec + l->f[j].off;

		if (l->f[j].kind == F_U32) {
			v32 = get_le32(p);
			memcpy(at, &v32, sizeof(v32));
			p += 4;
		} else {
			v64 = get_le64(p);
			memcpy(at, &v64, sizeof(v64));
			p += 8;
		}
	}
}

/* ---- records with rows of varints (cpu) ------------------------------------ */

size_t record_encode_varrows(const struct record_layout *l, const void *rec, uint8_t *key,
			     const struct record_layout *rl, const void *rows, size_t n,
			     size_t stride, struct cbuf *b)
{
	size_t klen = record_encode(l, rec, key, b), hlen = b->len, i, j;
	const char *row = rows;
	uint8_t *p;

	/* the header's length in front of it */
	if (!cbuf_grow(b, 4))
		return klen;
	memmove(b->p + 4, b->p, hlen);
	put_le32(b->p, (uint32_t)hlen);
	cbuf_le32(b, (uint32_t)n);
	cbuf_le32(b, (uint32_t)rl->n);
	for (i = 0; i < n; i++, row += stride) {
		p = cbuf_grow(b, rl->n * 10);
		if (!p)
			return klen;
		b->len -= rl->n * 10;
		for (j = 0; j < rl->n; j++)
			b->len += put_varint(b->p + b->len, rl->f[j].kind == F_U32
								    ? rec_u32(row, &rl->f[j])
								    : rec_u64(row, &rl->f[j]));
	}
	return klen;
}

int record_decode_varrows(const struct record_layout *l, const MDB_val *k, const MDB_val *v,
			  void *rec, const struct record_layout *rl, void **rows, size_t *n,
			  size_t elsize)
{
	const uint8_t *p = v->mv_data;
	size_t len = v->mv_size, hlen, off, i, j, nf;
	uint64_t x;
	char *out;
	int rc;

	*rows = NULL;
	*n = 0;
	if (len < 4 || (hlen = get_le32(p)) > len - 4 || len - 4 - hlen < 8)
		return CYGPROF_E_CORRUPT;
	MDB_val h = { .mv_size = hlen, .mv_data = (void *)(p + 4) };
	rc = record_decode(l, k, &h, rec);
	if (rc)
		return rc;
	off = 4 + hlen;
	size_t count = get_le32(p + off);
	nf = get_le32(p + off + 4);
	off += 8;
	/* a row is at least one byte a field */
	if (!nf || nf > 64 || count > (len - off) / nf)
		return CYGPROF_E_CORRUPT;
	if (!count)
		return 0;
	out = calloc(count, elsize);
	if (!out)
		return -ENOMEM;
	for (i = 0; i < count; i++) {
		char *r = out + i * elsize;
		for (j = 0; j < nf; j++) {
			if (!get_varint(p, len, &off, &x))
				goto bad;
			if (j >= rl->n)
				continue; /* a field written later */
			if (rl->f[j].kind == F_U32) {
				uint32_t x32 = (uint32_t)x;
				if (x > UINT32_MAX)
					goto bad;
				memcpy(r + rl->f[j].off, &x32, sizeof(x32));
			} else {
				memcpy(r + rl->f[j].off, &x, sizeof(x));
			}
		}
	}
	*rows = out;
	*n = count;
	return 0;
bad:
	free(out);
	return CYGPROF_E_CORRUPT;
}
