/* SPDX-License-Identifier: MIT */
/* capture-private.h - internals shared by the capture library sources.
 *
 * Byte order helpers, a growable encode buffer, a bounds-checked decoder,
 * the capture handle and the few functions the sources share.  The on-disk
 * layout is described in docs/capture-format.md.
 */
#ifndef CYGPROF_CAPTURE_PRIVATE_H
#define CYGPROF_CAPTURE_PRIVATE_H

#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cygprof/cygprof-capture.h"

enum {
	DB_META,
	DB_PROCS,
	DB_THREADS,
	DB_TREES,
	DB_TIMELINE,
	DB_OBJECTS,
	DB_SYMBOLS,
	DB_MEM,    /* added later in schema 1: optional in a capture */
	DB_STACKS, /* likewise */
	DB_SITES,  /* likewise */
	DB_COUNTERS, /* added in schema 3: a schema 1 or 2 capture lacks it */
	DB_SAMPLES,  /* likewise */
	DB_PSAMPLES, /* added in schema 4: a schema 1 to 3 capture lacks it */
	DB_OFFCPU,   /* likewise */
	DB_CPU,      /* added in schema 6: a schema 1 to 5 capture lacks it */
	DB_LATENCY,  /* added in schema 8: a schema 1 to 7 capture lacks it */
	DB_COUNT
};

/* The public numbers of the DBs (enum cygprof_db) are these. */
#define CAPTURE_DB_SAME(x) ((int)DB_##x == (int)CYGPROF_DB_##x)
_Static_assert(CAPTURE_DB_SAME(META) && CAPTURE_DB_SAME(PROCS) && CAPTURE_DB_SAME(THREADS) &&
		       CAPTURE_DB_SAME(TREES) && CAPTURE_DB_SAME(TIMELINE) &&
		       CAPTURE_DB_SAME(OBJECTS) && CAPTURE_DB_SAME(SYMBOLS) && CAPTURE_DB_SAME(MEM) &&
		       CAPTURE_DB_SAME(STACKS) && CAPTURE_DB_SAME(SITES) &&
		       CAPTURE_DB_SAME(COUNTERS) && CAPTURE_DB_SAME(SAMPLES) &&
		       CAPTURE_DB_SAME(PSAMPLES) && CAPTURE_DB_SAME(OFFCPU) && CAPTURE_DB_SAME(CPU) &&
		       CAPTURE_DB_SAME(LATENCY) && (int)DB_COUNT == (int)CYGPROF_DB_LATENCY + 1,
	       "enum cygprof_db numbers the DBs as capture_db_names[]");

/* The first DB a capture may lack (written before those DBs existed). */
#define DB_FIRST_OPTIONAL DB_MEM
/* The first DB a schema 2 capture lacks (added with schema 3). */
#define DB_FIRST_OPTIONAL_V2 DB_COUNTERS
/* The first DB a schema 3 capture lacks (added with schema 4). */
#define DB_FIRST_OPTIONAL_V3 DB_PSAMPLES
/* The first DB a schema 5 capture lacks (added with schema 6). */
#define DB_FIRST_OPTIONAL_V5 DB_CPU
/* The first DB a schema 7 capture lacks (added with schema 8). */
#define DB_FIRST_OPTIONAL_V7 DB_LATENCY

/* Whether a capture of schema s lacks DB i (written before it existed). */
static inline bool capture_db_optional(unsigned int i, unsigned int s)
{
	return (i >= DB_FIRST_OPTIONAL && s == 1) || (i >= DB_FIRST_OPTIONAL_V2 && s <= 2) ||
	       (i >= DB_FIRST_OPTIONAL_V3 && s <= 3) || (i >= DB_FIRST_OPTIONAL_V5 && s <= 5) ||
	       (i >= DB_FIRST_OPTIONAL_V7 && s <= 7);
}

extern const char *const capture_db_names[DB_COUNT];

/* Streams of per-thread event blocks, each with its own pending blocks. */
enum { STREAM_TIMELINE, STREAM_MEM, STREAM_SAMPLES, STREAM_PSAMPLES, STREAM_OFFCPU,
       STREAM_COUNT };
/* The one stream id of the psamples and offcpu DBs (their keys' first half). */
#define CAPTURE_ONE_STREAM 0

#define CAPTURE_MAGIC "cygprof-capture"
#define CAPTURE_MAXDBS 16
/* Longest key: LMDB's (mdb_env_get_maxkeysize() of the default build), also
 * what a stream capture allows. */
#define CAPTURE_MAXKEY 511

/* Fixed parts of the value encodings (bytes); the one-value records are laid
 * out by the tables of capture-record.c. */
#define CAPTURE_TREE_HDR 8
#define CAPTURE_NODE_SIZE 40 /* a row of layout_node */
#define CAPTURE_SITE_SIZE 32 /* a row of layout_site */
#define CAPTURE_BLOCK_HDR 12
/* Schema 2 block header: count, first_ts, raw (decompressed) length; the
 * zstd frame follows. */
#define CAPTURE_ZBLOCK_HDR 16
/* Schema 2: raw event bytes per block (the writer's limit) and what a reader
 * accepts (bounds the memory of a cursor and of a decompression). */
#define CAPTURE_RAW_MAX ((size_t)256 << 10)
#define CAPTURE_RAW_LIMIT ((size_t)1 << 20)
/* zstd level of event blocks: 3 is zstd's default */
#define CAPTURE_ZSTD_LEVEL 1
/* A packed value (schema 2 trees and sites) expands at most this much:
 * raw length <= compressed length * RATIO + SLACK (bounds what a reader
 * allocates for a value). */
#define CAPTURE_PACK_RATIO 1024
#define CAPTURE_PACK_SLACK ((size_t)1 << 20)
/* Trailing CRC32C of every schema 2 value. */
#define CAPTURE_CRC_SIZE 4
/* Largest encoding of one timeline event: varint(34 bits) + varint(64 bits). */
#define CAPTURE_EVENT_MAX 15
/* Schema 5 timeline blocks start with the calls open before their first
 * event: at most this many (the outermost), each at most 15 bytes. */
#define CAPTURE_STACK_MAX CYGPROF_OPEN_CALLS_MAX
#define CAPTURE_STACK_BYTES (20 + CAPTURE_STACK_MAX * 15)

/* Memory event header varint: op, fn, whether the address delta is stored
 * divided by 16, then the flags. */
#define MEM_HDR_OP 1u
#define MEM_HDR_FN_SHIFT 1
#define MEM_HDR_FN_MASK 0xfu
#define MEM_HDR_SCALED (1u << 5)
#define MEM_HDR_FLAGS_SHIFT 6
/* Largest encoding of one memory event: varint(22 bits) + varint(64 bits)
 * x 3 + varint(32 bits). */
#define CAPTURE_MEM_EVENT_MAX 39
/* Counter samples: varint(time delta) + varint(zigzag(value delta)). */
#define CAPTURE_SAMPLE_MAX 20
#define CAPTURE_SAMPLE_MIN 2
/* perf samples: varint(zigzag(time delta)), varint(weight), varint(rr_ticks
 * + 1, 0 for none), varint(thread_idx + 1, 0 for none), then varints pid,
 * tid, stack, flags. */
#define CAPTURE_PSAMPLE_MAX 55
#define CAPTURE_PSAMPLE_MIN 8
/* off-CPU intervals: varint(zigzag(start delta)), varint(end - start),
 * varint(thread_idx + 1), then varints tid, stack, flags. */
#define CAPTURE_OFFCPU_MAX 40
#define CAPTURE_OFFCPU_MIN 6
/* Longest counter name a writer stores and a reader accepts (bytes). */
#define CAPTURE_COUNTER_NAME_MAX 1024
/* Smallest: a FREE with one-byte header, time delta and address delta. */
#define CAPTURE_MEM_EVENT_MIN 3

/* Schema 5 memory blocks (docs/capture-format.md, "mem"): the events of a
 * block column by column.  The decompressed bytes are varint(flags)
 * (MEM5_BLOCK_*), the byte length of each stream as a varint (one a
 * column, two for a column of MEM5_SPLIT_COLS with SPLIT, three for HDR
 * with PACK), then the streams in this order. */
enum {
	MEM5_COL_HDR,  /* per event: op | fn << 1 | form << 5 | flags << 7 */
	MEM5_COL_DT,   /* per run of events at one time: the time minus the run before's */
	MEM5_COL_RUN,  /* per run: its number of events, at least 1 */
	MEM5_COL_ADDR, /* per alloc, and per free of an address form: zigzag(address delta) */
	MEM5_COL_REF,  /* per free of form REF: how many (live) allocs of the block back, from 1 */
	MEM5_COL_AREF, /* per alloc of form REF: how many frees back, << 1 (| 1: among all) */
	MEM5_COL_PAIR, /* per alloc: 0 a new (size, stack), else its index in the table + 1 */
	MEM5_COL_NEW,  /* per new pair: its size */
	MEM5_COL_SREF, /* per new pair: index of its stack in the block's stacks, or their number */
	MEM5_COL_SNEW, /* per new pair whose stack is new to the block: the stack id */
	MEM5_COL_COUNT
};
#define MEM5_BLOCK_NS 1u      /* block flags: times in ns (else in units of 10^E us) */
#define MEM5_BLOCK_UNIT_SHIFT 1 /* block flags: E, bits 1-2 (0 with NS) */
#define MEM5_BLOCK_UNIT_MASK 3u
#define MEM5_BLOCK_SPLIT 8u   /* block flags: the columns of MEM5_SPLIT_COLS in two streams */
#define MEM5_BLOCK_CLAIM 16u  /* block flags: allocs count the unclaimed frees of their class */
#define MEM5_BLOCK_LIVE 32u   /* block flags: frees count the live allocs of the block */
#define MEM5_BLOCK_PACK 64u   /* block flags: HDR as a palette, 2 bits an event, escapes */
#define MEM5_BLOCK_FLAGS 127u /* every flag a reader knows */
#define MEM5_PAL_MAX 3        /* headers in a packed HDR's palette */
/* With MEM5_BLOCK_CLAIM: the farthest unclaimed free of its class an alloc
 * refers to (further back: among all frees) */
#define MEM5_CLAIM_MAX 64
/* The columns that a block with MEM5_BLOCK_SPLIT stores as two streams:
 * LEN, one byte per value (its bit length k, 0 for 0), then MANT, the k - 1
 * bits of each value below its highest one, packed (zstd's Huffman codes
 * the lengths, the bits below are about as random as they come). */
#define MEM5_SPLIT_COLS                                                                   \
	(1u << MEM5_COL_ADDR | 1u << MEM5_COL_REF | 1u << MEM5_COL_AREF | 1u << MEM5_COL_PAIR | \
	 1u << MEM5_COL_SREF)
/* Streams of a block with MEM5_BLOCK_SPLIT and MEM5_BLOCK_PACK (the
 * lengths it lists): HDR in three (PAL, PACK, ESC). */
#define MEM5_STREAMS (MEM5_COL_COUNT + 5 + 2)
/* The writer's time units of a memory block: ns (several threads), else
 * the finest of 10, 100 and 1000 us in which the block's runs of one time
 * hold MEM5_RUN_EVENTS events on average, else 10 us. */
#define MEM5_UNITS 4
#define MEM5_RUN_EVENTS 256
#define MEM5_FORM_SHIFT 5
#define MEM5_FORM_ADDR 0u     /* the address delta as it is */
#define MEM5_FORM_ADDR16 1u   /* the address delta divided by 16 */
#define MEM5_FORM_REF 2u      /* the address of an earlier free (alloc) of the block */
#define MEM5_FLAGS_SHIFT 7
/* Smallest event: a free by reference, one byte of header and one of
 * reference (the runs of times are shared); with MEM5_BLOCK_SPLIT and
 * MEM5_BLOCK_PACK, the reference's bit length and 2 bits of header. */
#define CAPTURE_MEM5_EVENT_MIN 1
/* Largest raw length of a schema 5 memory block the writer makes (what a
 * reader accepts: a block's tables restart, so larger is smaller) */
#define CAPTURE_MEM5_RAW_MAX CAPTURE_RAW_LIMIT
/* zstd level of schema 5 memory blocks (bench/memstream.py measures it) */
#define CAPTURE_MEM5_ZSTD_LEVEL 5
/* Writer: the recent allocations and frees it finds again by address,
 * direct-mapped (a miss costs bytes, never exactness). */
#define MEM5_CACHE 16384
/* Size classes of the frees an alloc refers to (capture_mem5_bin()): 0 to
 * 191 by size, MEM5_BIN_NONE for a free whose size the block does not say */
#define MEM5_BINS 193
#define MEM5_BIN_NONE 192

static inline unsigned int capture_mem5_bin(uint64_t size)
{
	return size <= 2024 ? (unsigned int)(size + 23) >> 4
			    : 128u + (unsigned int)(63 - __builtin_clzll(size));
}
/* The allocations of a memory block still live (MEM5_BLOCK_LIVE), by
 * ord (1-based): a Fenwick tree of counts over live[1..cap]. */
struct mem5_live {
	uint32_t *t;
	uint8_t *live;
	uint32_t cap, n; /* n: live ones */
};

static inline void mem5_live_add(struct mem5_live *f, uint32_t i, int d)
{
	f->live[i] = d > 0;
	f->n += (uint32_t)d;
	for (; i <= f->cap; i += i & (0u - i))
		f->t[i] += (uint32_t)d;
}

/* Live allocations of ord 1..i. */
static inline uint32_t mem5_live_prefix(const struct mem5_live *f, uint32_t i)
{
	uint32_t s = 0;

	for (; i; i -= i & (0u - i))
		s += f->t[i];
	return s;
}

/* The ord of the k-th live allocation (1-based, k <= f->n). */
static inline uint32_t mem5_live_find(const struct mem5_live *f, uint32_t k)
{
	uint32_t i = 0, step = 1;

	while (step <= f->cap / 2)
		step <<= 1;
	for (; step; step >>= 1)
		if (i + step <= f->cap && f->t[i + step] < k) {
			i += step;
			k -= f->t[i];
		}
	return i + 1;
}

/* Room for ord i (false when out of memory); the tree is built again. */
static inline bool mem5_live_room(struct mem5_live *f, uint32_t i)
{
	uint32_t c = f->cap ? f->cap : 2048, j, p;
	uint32_t *t;
	uint8_t *l;

	if (i <= f->cap)
		return true;
	while (c < i)
		c *= 2;
	t = realloc(f->t, ((size_t)c + 1) * sizeof(*t));
	if (!t)
		return false;
	f->t = t;
	l = realloc(f->live, (size_t)c + 1);
	if (!l)
		return false;
	f->live = l;
	memset(l + f->cap + 1, 0, c - f->cap);
	for (j = 1; j <= c; j++)
		t[j] = l[j];
	for (j = 1; j <= c; j++) {
		p = j + (j & (0u - j));
		if (p <= c)
			t[p] += t[j];
	}
	f->cap = c;
	return true;
}

static inline void mem5_live_reset(struct mem5_live *f)
{
	if (f->cap) {
		memset(f->t, 0, ((size_t)f->cap + 1) * sizeof(*f->t));
		memset(f->live, 0, (size_t)f->cap + 1);
	}
	f->n = 0;
}

/* The time unit in ns of a memory block's flags E (times not in ns). */
static inline uint64_t capture_mem5_unit_ns(unsigned int e)
{
	static const uint64_t unit[] = { 1000, 10000, 100000, 1000000 };

	return unit[e & MEM5_BLOCK_UNIT_MASK];
}
/* Schema 6 stacks: the stash's nodes in blocks of at most this many
 * (docs/capture-format.md, "stacks"), each value LE32 first id, LE32
 * count, then packed (LE32 raw length, zstd frame or the raw bytes) the
 * varint lengths of its streams PARENT, PROC, KIND, ADDR and the streams. */
#define CAPTURE_STACK_BLOCK_NODES 16384
#define CAPTURE_STACK_BLOCK_HDR 8
enum { STK_PARENT, STK_PROC, STK_KIND, STK_ADDR, STK_STREAMS };
/* zstd level of stacks blocks (written again at each commit that adds
 * nodes to the open block) */
#define CAPTURE_STACKS_ZSTD_LEVEL 3
/* The first schema whose stacks are stored in blocks. */
#define CAPTURE_STACK_BLOCKS_SCHEMA 6
/* The first schema whose trees and sites may be column-coded: a packed
 * value LE32 raw length, CAPTURE_COLS_MAGIC, then a zstd frame of the
 * columns (capture_cols_encode()). */
#define CAPTURE_COLS_SCHEMA 7
#define CAPTURE_COLS_MAGIC "cols"
#define CAPTURE_COLS_PLAIN 0 /* a column of varints */
#define CAPTURE_COLS_DELTA 1 /* zigzag varints of the difference from the row before */
/* Rows longer than this are not column-coded (and refused so coded). */
#define CAPTURE_COLS_ROW_MAX 4096
/* zstd level of column-coded values (a tree is written at each checkpoint) */
#define CAPTURE_COLS_ZSTD_LEVEL 3

/* A reader refuses larger schema 1 event blocks (the writer stored at most
 * 65520 bytes): this bounds the memory of a cursor. */
#define CAPTURE_BLOCK_LIMIT ((size_t)1 << 20)

/* Environment variable overriding the initial map size of a writer (bytes);
 * used by the tests to exercise map growth. */
#define CAPTURE_MAPSIZE_ENV "CYGPROF_CAPTURE_MAPSIZE"

/* ---- byte order ---------------------------------------------------------- */

static inline void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* Unsigned LEB128.  p must have room for 10 bytes. */
/* Room for need elements of elem bytes in *vp of *cap (doubling, 16 at
 * first): 0, or -ENOMEM with both unchanged.  The library links nothing
 * of common/ (array.h's copy). */
static inline int capture_grow(void *vp, size_t *cap, size_t need, size_t elem)
{
	void **p = vp, *q;
	size_t n = *cap ? *cap : 16;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	if (n > SIZE_MAX / elem || !(q = realloc(*p, n * elem)))
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static inline size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Decode one varint from p[*off..len).  Returns false when truncated or
 * longer than 64 bits. */
static inline bool get_varint(const uint8_t *p, size_t len, size_t *off, uint64_t *out)
{
	size_t i = *off;
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		if (i >= len || shift > 63)
			return false;
		b = p[i++];
		if (shift == 63 && (b & 0x7e))
			return false;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*off = i;
	*out = v;
	return true;
}

/* ZigZag: a two's complement 64-bit value (as uint64_t) to an unsigned one
 * that is small when the signed value is near 0, and back. */
static inline uint64_t zigzag(uint64_t v)
{
	return v << 1 ^ (0 - (v >> 63));
}

static inline uint64_t unzigzag(uint64_t v)
{
	return v >> 1 ^ (0 - (v & 1));
}

/* ---- encode buffer ------------------------------------------------------- */

struct cbuf {
	uint8_t *p;
	size_t len;
	size_t cap;
	bool oom;
};

/* Make room for n more bytes; returns NULL (and sets oom) on failure. */
uint8_t *cbuf_grow(struct cbuf *b, size_t n);

/* The rows of a tree or sites value (LE32 count, LE32 row size in 4-byte
 * words, the rows) column by column into *out; false when raw is not such
 * rows (or out ran out of memory: out->oom). */
bool capture_cols_encode(const uint8_t *raw, size_t n, struct cbuf *out);
/* The n bytes of rows coded as the cn bytes at c, into raw: 0, or
 * CYGPROF_E_CORRUPT when c does not decode to exactly n bytes of rows. */
int capture_cols_decode(const uint8_t *c, size_t cn, uint8_t *raw, size_t n);

static inline void cbuf_le32(struct cbuf *b, uint32_t v)
{
	uint8_t *p = cbuf_grow(b, 4);

	if (p)
		put_le32(p, v);
}

static inline void cbuf_le64(struct cbuf *b, uint64_t v)
{
	uint8_t *p = cbuf_grow(b, 8);

	if (p)
		put_le64(p, v);
}

static inline void cbuf_bytes(struct cbuf *b, const void *src, size_t n)
{
	uint8_t *p = cbuf_grow(b, n);

	if (p && n)
		memcpy(p, src, n);
}

/* A string: LE32 byte length, then the bytes (no NUL).  NULL is "". */
void cbuf_str(struct cbuf *b, const char *s);

/* ---- decoder ------------------------------------------------------------- */

struct crd {
	const uint8_t *p;
	size_t len;
	size_t off;
	bool bad; /* ran past the end, or a length field was out of range */
	bool oom;
};

static inline void crd_init(struct crd *r, const MDB_val *v)
{
	r->p = v->mv_data;
	r->len = v->mv_size;
	r->off = 0;
	r->bad = false;
	r->oom = false;
}

static inline const uint8_t *crd_take(struct crd *r, size_t n)
{
	const uint8_t *p;

	if (r->bad || n > r->len - r->off) {
		r->bad = true;
		return NULL;
	}
	p = r->p + r->off;
	r->off += n;
	return p;
}

static inline uint32_t crd_le32(struct crd *r)
{
	const uint8_t *p = crd_take(r, 4);

	return p ? get_le32(p) : 0;
}

static inline uint64_t crd_le64(struct crd *r)
{
	const uint8_t *p = crd_take(r, 8);

	return p ? get_le64(p) : 0;
}

/* A length-prefixed string as a malloc'd NUL-terminated copy (NULL on error). */
char *crd_str(struct crd *r);

/* CYGPROF_E_CORRUPT, -ENOMEM or 0 for a decoder's state. */
int crd_status(const struct crd *r);

/* ---- record layouts (capture-record.c) ----------------------------------- */

/* A field of a record that is one LMDB value: where it is in the public
 * struct and how it is stored. */
enum field_kind {
	F_KEY32,    /* uint32_t, in the key, big-endian */
	F_KEY64,    /* uint64_t, in the key, big-endian */
	F_U32,      /* uint32_t (or int32_t), LE32 */
	F_U64,      /* uint64_t, LE64 */
	F_STR,      /* char *: LE32 length, the bytes (NULL is "") */
	F_NAME,     /* char[size], NUL-padded; the reader NUL-terminates it */
	F_BYTES,    /* uint8_t[size]: as many bytes as the F_U32 before it says, then 0 */
	F_OPTIONAL, /* the fields after it were appended later: all there, or none */
};

struct field {
	uint8_t kind;
	uint16_t off;
	uint16_t size;
};

struct record_layout {
	const struct field *f;
	size_t n;
};

extern const struct record_layout layout_proc, layout_thread, layout_object, layout_symbol,
	layout_stack, layout_counter, layout_node, layout_site, layout_cpu, layout_cpu_node,
	layout_latency, layout_lat_row;

/* The key of record rec into key (room for 12 bytes; returns its length) and
 * its value into b (emptied first; b->oom on failure). */
size_t record_encode(const struct record_layout *l, const void *rec, uint8_t *key,
		     struct cbuf *b);
/* Key k and value v into rec (zeroed by the caller; strings malloc'd, freed
 * by the caller whatever the result): 0, CYGPROF_E_CORRUPT or -ENOMEM. */
int record_decode(const struct record_layout *l, const MDB_val *k, const MDB_val *v, void *rec);
/* The bytes of a row of l (F_U32 and F_U64 fields only). */
size_t record_row_size(const struct record_layout *l);
/* The value of an array: LE32 n, LE32 row size, the n rows (stride bytes
 * apart in rows) into b (emptied first; b->oom on failure). */
void record_encode_rows(const struct record_layout *l, const void *rows, size_t n,
			size_t stride, struct cbuf *b);
/* The row at p (at least record_row_size() bytes) into rec. */
void record_decode_row(const struct record_layout *l, const uint8_t *p, void *rec);
/* A record with rows of varints (cpu): its key into key (returns its
 * length) and into b the value LE32 header length, the header (l's value
 * fields), LE32 n, LE32 fields per row, then the n rows (stride bytes
 * apart), each field of rl a varint. */
size_t record_encode_varrows(const struct record_layout *l, const void *rec, uint8_t *key,
			     const struct record_layout *rl, const void *rows, size_t n,
			     size_t stride, struct cbuf *b);
/* Such a value into rec (zeroed by the caller) and *rows (malloc'd, elsize
 * bytes each, zeroed; NULL when n is 0): a header longer than l's fields or
 * rows of more fields than rl's (written later) are read as far as known.
 * 0, CYGPROF_E_CORRUPT or -ENOMEM (nothing allocated on error). */
int record_decode_varrows(const struct record_layout *l, const MDB_val *k, const MDB_val *v,
			  void *rec, const struct record_layout *rl, void **rows, size_t *n,
			  size_t elsize);

/* ---- the handle ---------------------------------------------------------- */

struct wlog_ent {
	unsigned int db;
	size_t klen;
	size_t vlen;
	size_t off;
};

/* The puts of the open write transaction, kept to replay them after growing
 * the map on MDB_MAP_FULL (LMDB aborts the transaction on that error). */
struct wlog {
	struct wlog_ent *ent;
	size_t n, cap;
	uint8_t *data;
	size_t len, dcap;
};

/* The in-memory event block of one thread and stream (timeline or memory),
 * or of one counter (samples). */
struct pending {
	unsigned int db;  /* DB_TIMELINE, DB_MEM, DB_SAMPLES, DB_PSAMPLES or DB_OFFCPU */
	uint32_t thread;  /* thread index (samples: counter id; psamples, offcpu:
			   * CAPTURE_ONE_STREAM) */
	uint8_t *buf;     /* CAPTURE_BLOCK_HDR bytes of header, then the events */
	size_t len;       /* bytes used, header included */
	size_t cap;
	uint32_t seq;     /* key sequence number of this block */
	uint32_t count;   /* events in the block */
	uint64_t first_ts;
	uint64_t last_ts; /* of the last event appended to the thread */
	uint64_t last_addr; /* memory: address of the previous event in the block;
			     * samples: value of the previous sample in the block */
	bool any;         /* last_ts is valid */
	bool dirty;       /* holds events not yet written to LMDB */
	/* timeline: the calls open after the last event appended, outermost
	 * first (each block starts with them: schema 5) */
	struct wframe { uint32_t node; uint64_t enter; } *stk;
	size_t depth, cstk;
	struct mem5_enc *m5; /* DB_MEM: the open block's columns (buf unused) */
	bool quick;       /* DB_MEM: written last at a commit, at zstd level 1: to be
			   * written again at its level when it closes or at the end */
	bool ns;          /* DB_MEM: its times were last written in ns */
};

/* A free of a schema 5 memory block, by ord: with MEM5_BLOCK_CLAIM, the
 * unclaimed frees of each size class are linked (prev, next: ords, 0
 * none), for the writer and the reader alike. */
struct mem5_free { uint32_t prev, next; uint16_t bin; uint8_t claimed; };

/* The writer's encoder of schema 5 memory blocks (capture-memenc.c): the
 * columns of the open block of one thread. */
struct mem5_enc;
struct mem5_enc *mem5_enc_new(void);
void mem5_enc_free(struct mem5_enc *m);
/* The events ev[0 .. n) at the end of the open block, in time order, as
 * long as its columns stay below CAPTURE_MEM5_RAW_MAX with reserve bytes
 * more: how many were added (the block is full before the next one; at
 * least one when the block is empty, unless out of memory: then *err is
 * -ENOMEM and the block cannot be written). */
size_t mem5_enc_append(struct mem5_enc *m, const struct cygprof_mem_event *ev, size_t n,
		       size_t reserve, int *err);
/* The bytes of the block's columns (both time encodings counted), with
 * room for its header: what mem5_enc_append() compares. */
size_t mem5_enc_len(const struct mem5_enc *m);
/* The open block (count events from time first) put together into b
 * (emptied first): times in ns when ns, else in the unit chosen; its
 * stored first time into *first_ts.  0 or -ENOMEM. */
int mem5_enc_block(struct mem5_enc *m, struct cbuf *b, uint32_t count, uint64_t first,
		   bool ns, uint64_t *first_ts);
/* The block written last is closed: the next one starts afresh, no time
 * of it before the last one written. */
void mem5_enc_next_block(struct mem5_enc *m);

/* put_value: the blocks put of one stream (db, thread or counter id). */
struct vstream {
	uint32_t db, id;
	uint32_t seq;       /* of the last block put */
	uint64_t before_ts; /* last time of the block before it (0: none) */
	uint64_t last_ts;   /* last time of the block seq */
};

struct cygprof_capture {
	MDB_env *env;
	char *path;    /* the capture's name */
	bool rdonly;
	unsigned int schema; /* of the capture: 1 or 2 */
	bool crc;      /* values carry a CRC32C (schema 2) */
	uint64_t file_size; /* reader: at open */
	uint64_t nstacks_stored; /* reader: entries of the stacks DB */
	bool sealed;   /* reader: closed by its writer, counts checked */
	bool program_damaged; /* reader: meta "damaged": the traced program wrote
			       * into the collector's mapping */
	bool in_progress; /* reader: a writer held the file at open: this is a
			   * snapshot of its last commit (capture_live_snapshot) */
	char detail[200]; /* the first damage found, "" when none */
	/* reader: threads whose record counts more events than its calls make
	 * (cygprof_capture_get_threads()): their cursors give only the first
	 * limit events */
	struct ev_trust { uint32_t thread; uint64_t limit; } *trust;
	size_t ntrust;
	void *zd;      /* ZSTD_DCtx, made on first use */
	MDB_dbi dbi[DB_COUNT];
	bool missing[DB_COUNT]; /* an optional DB the capture does not have */
	unsigned int psize;
	size_t maxkey;

	/* writer only */
	char *tmp_path; /* the new file, until it is renamed onto path */
	int lock_fd;    /* + 1: the file, write-locked (F_OFD_SETLK) while this
			 * writer lives, so that readers know it is still being
			 * written (0: none) */
	bool published; /* renamed onto path */
	bool complete;  /* "complete" was set: the final commit seals counts */
	bool addrspace_limited; /* RLIMIT_AS is finite */
	size_t addrspace;       /* that limit */
	void *zc;       /* ZSTD_CCtx */
	void *zc_mem;   /* another for the memory blocks' level: one context
			 * switched between an open block's quick writes and
			 * the full ones made its tables again (page faults,
			 * memsets) at every switch */
	struct cbuf zbuf; /* a compressed block */
	struct cbuf cols; /* a tree or sites value column-coded (then its frame) */
	MDB_txn *txn; /* open write transaction */
	bool batch;   /* between begin and commit */
	size_t mapsize;
	size_t block_max; /* largest timeline value */
	struct wlog log;
	struct cbuf scratch;
	struct cbuf mraw; /* a schema 5 memory block's columns, put together */
	uint32_t mem_threads; /* threads that appended memory events */
	uint32_t mem_may;     /* threads that may have some (cygprof_capture_mem_threads());
			       * with more than one of either, memory times are
			       * stored in ns */
	struct pending **pend[STREAM_COUNT]; /* by thread index */
	size_t npend[STREAM_COUNT];
	struct pending **dirty; /* pending blocks holding unwritten events */
	size_t ndirty, cdirty;
	uint32_t nstacks; /* stack stash nodes stored (ids 1..nstacks) */
	/* schema 6: the open block of stack nodes, its streams; written at
	 * commit (and before any event block) when it has new nodes */
	struct cbuf stk_col[STK_STREAMS];
	uint32_t stk_seq, stk_first, stk_count; /* its key, first id, nodes */
	uint64_t stk_addr; /* the address of its last node */
	bool stk_dirty;
	/* put_value: the stacks block put last (vstk_seq UINT32_MAX: none) */
	uint32_t vstk_seq, vstk_first, vstk_count;
	uint32_t ncounters; /* counters defined (ids 0..ncounters-1) */
	bool reopened;  /* cygprof_capture_open_rw(): streams continue the file's */
	uint32_t next_seq[STREAM_COUNT]; /* reopened: the first block of the
					  * psamples and offcpu streams */
	/* put_value: where each stream of event blocks is, sorted by (db, id):
	 * as many as streams were put (ids come from the values) */
	struct vstream *vstreams;
	size_t nvstreams, cvstreams;
	/* a stream capture (cygprof_capture_create_stream()): no env, every
	 * put goes to stream->put */
	const struct cygprof_capture_stream *stream;
	void *stream_arg;
	/* The first failed write, sticky: a stream call's error, or an LMDB
	 * write that lost what its transaction held (a full disk, an I/O
	 * error).  Every later write call returns it at once, so the file
	 * keeps exactly what was committed before. */
	int stream_err;
	bool reserved;  /* create(): reserve_fd is an unnamed file holding
			 * CAPTURE_RESERVE bytes of the file system, given back
			 * to write "ended" after a failed write */
	int reserve_fd;
	bool ended;     /* cygprof_capture_end_failed() wrote "ended" and sealed */
	bool finished;  /* capture_writer_finish() ran (cygprof_capture_seal()):
			 * close only publishes and frees */
	int finish_rc;  /* what it returned */
	unsigned commits_untrimmed; /* commits since map_trim() dropped the map's pages */
	bool compacted; /* cygprof_capture_compact() replaced the file: env writes the old one */
	bool finishing; /* capture_writer_finish(): the open blocks are written last */
};

/* A new file next to path: ".NAME.PID-START.XXXXXX" (capture-temp.c),
 * created exclusively (O_EXCL: never an existing file, never through a
 * symlink), mode 0666 less the umask; *tmp its name (malloc'd), *fdp its
 * descriptor.  The temporary files of NAME whose writers are gone are
 * removed first. */
int capture_make_temp(const char *path, char **tmp, int *fdp);
/* "PID-START" of this process (its pid, its start time in clock ticks
 * after boot) into buf; returns its length. */
int capture_temp_tag(char *buf, size_t n);
/* Remove the temporary files of path (".NAME.PID-START.XXXXXX" in its
 * directory) whose writer is gone: no such process, a zombie, or another
 * process with that pid; a file write-locked by a writer is kept. */
void capture_temp_clean(const char *path);
/* CYGPROF_FSYNC set, and not to 0 (cygprof takes 0 or 1: cli/env.c). */
bool capture_fsync_asked(void);

/* The open file description fd write-locks its whole file while a writer
 * lives; readers test it (capture_writer_holds) and read a live capture
 * from a snapshot (capture_live_snapshot).  The lock goes with its holder,
 * however it ends. */
int capture_writer_lock(int fd);
/* 1 when another open file description holds a write lock on fd's file. */
int capture_writer_holds(int fd);
/* A private copy (a memfd) of the live capture fd that holds one whole
 * commit: copied until the writer committed nothing meanwhile.  *out is
 * the new descriptor. */
int capture_live_snapshot(struct cygprof_capture *cap, int fd, int *out);
/* The transaction id of the newer of fd's two LMDB meta pages. */
int capture_meta_txnid(int fd, uint64_t *txnid);
/* In the file fd written by LMDB's compacting copy (pages of psize
 * bytes, its meta page 1 of transaction 1, meta page 0 empty): the meta
 * page of transaction txnid (at least 2) instead, as the capture copied had
 * it, so that its seal ("txn") holds. */
int capture_meta_set_txnid(int fd, unsigned int psize, uint64_t txnid);

/* The room cygprof_capture_create() holds next to the capture for the last
 * transaction after a failed write (the meta key "ended" and the seal touch
 * a few pages of the meta, main and free DBs). */
#define CAPTURE_RESERVE ((off_t)64 << 10)

/* Map an LMDB or errno code to the library's convention. */
int capture_err(int rc);

/* CRC32C of n bytes, continuing from crc (0 to start). */
uint32_t capture_crc32c_update(uint32_t crc, const void *data, size_t n);
/* The checksum of a schema 2 value: CRC32C over the DB's name, LE32 key
 * length, the key and the value bytes before the checksum. */
uint32_t capture_value_crc(unsigned int db, const void *key, size_t klen, const void *val,
			   size_t vlen);

/* Record damage: sets cap->detail (first damage only) and the thread's last
 * detail, returns CYGPROF_E_CORRUPT. */
int capture_damage(struct cygprof_capture *cap, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The thread's last detail, cleared at the start of each public reader
 * call; "" when none. */
void capture_detail_clear(void);
const char *capture_detail_last(void);
/* Describe the record (db, key) for a damage message. */
void capture_describe(unsigned int db, const void *key, size_t klen, char *buf, size_t n);
/* The same for a record of cap (NULL: as capture_describe()): a stacks key
 * of schema 6 is a block's. */
void capture_describe_in(const struct cygprof_capture *cap, unsigned int db, const void *key,
			 size_t klen, char *buf, size_t n);

/* A schema 6 stacks value (checksum stripped) of block seq decoded: its
 * nodes appended to (*v)[*n ...] (grown, *cap elements), *first and
 * *count from its header; want_first, when not 0, the first id it must
 * have.  0, CYGPROF_E_CORRUPT (with a detail) or -ENOMEM. */
int capture_stack_block(struct cygprof_capture *cap, uint32_t seq, MDB_val v, uint32_t want_first,
			struct cygprof_stack_node **nodes, size_t *n, size_t *ncap, uint32_t *first,
			uint32_t *count);

/* Check and strip the checksum of a value read from db (schema 2); schema 1
 * values pass through.  CYGPROF_E_CORRUPT (with a detail) on a mismatch. */
int capture_value(struct cygprof_capture *cap, unsigned int db, const MDB_val *k, MDB_val *v);

/* Walk the LMDB file structure (meta pages, every B-tree, overflow runs)
 * of the file at fd (size bytes); 0 or CYGPROF_E_CORRUPT with a detail.
 * On success *txnid is the committed transaction id LMDB will read, and
 * entries[] the entry count of each named DB found (by DB_*; UINT64_MAX
 * for a DB the file lacks). */
int capture_verify(struct cygprof_capture *cap, int fd, uint64_t size, unsigned int *psize,
		   uint64_t *txnid, uint64_t entries[DB_COUNT], uint32_t digests[DB_COUNT]);

/* The digest of a DB's keys, in key order: CRC32C over LE32 length and
 * bytes of each key; the seal stores it so that a changed key is found at
 * open without reading the values. */
uint32_t capture_key_digest(uint32_t d, const void *key, size_t klen);

/* Create and open cap->env on file (MDB_NOSUBDIR | MDB_NOLOCK added). */
int capture_env_open(struct cygprof_capture *cap, const char *file, unsigned int flags,
		     size_t mapsize);

/* A transaction to read from: the open write transaction of a writer, or a
 * new read-only one.  Release it with capture_rend(). */
int capture_rbegin(struct cygprof_capture *cap, MDB_txn **txn);
void capture_rend(struct cygprof_capture *cap, MDB_txn *txn);

/* Release everything held by cap (aborts an open transaction). */
void capture_free(struct cygprof_capture *cap);

/* Writer: write the pending blocks, commit, sync.  Called by close. */
int capture_writer_finish(struct cygprof_capture *cap);

/* Writer: make the pending block of a thread in a stream (STREAM_*)
 * visible to readers. */
int capture_flush_thread(struct cygprof_capture *cap, unsigned int stream, uint32_t thread_idx);

/* Writer: make the open block of stack nodes (schema 6) visible to
 * readers. */
int capture_flush_stacks(struct cygprof_capture *cap);

/* Writer: call a stream capture's callback fn (NULL: nothing to do); its
 * error becomes the capture's sticky error.  The sticky error when there
 * is one. */
int capture_stream_call(struct cygprof_capture *cap, int (*fn)(void *arg));

/* What capture_check_value() read in a value, for the writer's sequence
 * checks (cygprof_capture_put_value()). */
struct value_facts {
	uint64_t first_ts, last_ts; /* an event block: its first and last time */
	uint64_t max_stack;         /* a memory block: the largest stack id */
	uint32_t stk_first, stk_count; /* a schema 6 stacks block: its first id, nodes */
};

/* Decode the value v of key k of db (without its checksum) as a reader
 * does: 0, CYGPROF_E_CORRUPT (the thread's detail says what), -ENOMEM. */
int capture_check_value(struct cygprof_capture *cap, unsigned int db, const MDB_val *k,
			const MDB_val *v, struct value_facts *f);

#endif
