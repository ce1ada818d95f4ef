/* SPDX-License-Identifier: MIT */
/* capture-verify.c - the structural check of a capture's LMDB file, run by
 * cygprof_capture_open() before LMDB reads anything.
 *
 * LMDB trusts its pages: a damaged page number, node offset or size makes
 * it read outside its mapping.  This walks what a reader can reach, from the
 * meta page LMDB will pick down to every leaf of the main DB and of every
 * named DB, and checks each page header, node offset, key and data size,
 * key order and overflow run against the file, visiting no page twice.  It
 * then compares what it counted with each DB's record (depth, branch, leaf
 * and overflow pages, entries).  Overflow pages are not read beyond their
 * header: the values in them carry their own checksums (schema 2).
 *
 * The layout is LMDB's (liblmdb 0.9, data version 1) on a 64-bit host; see
 * docs/capture-format.md.  Page numbers and sizes are size_t there.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture-private.h"

/* page header */
#define PAGEHDRSZ 16u
#define PG_PGNO 0     /* size_t page number */
#define PG_FLAGS 10   /* uint16_t */
#define PG_LOWER 12   /* uint16_t */
#define PG_UPPER 14   /* uint16_t */
#define PG_PAGES 12   /* uint32_t: overflow run length */
#define P_BRANCH 0x01
#define P_LEAF 0x02
#define P_OVERFLOW 0x04
#define P_META 0x08

/* node */
#define NODESIZE 8u
#define F_BIGDATA 0x01
#define F_SUBDATA 0x02
#define F_DUPDATA 0x04

/* meta, after the page header */
#define MM_MAGIC 0
#define MM_VERSION 4
#define MM_DBS 24 /* two MDB_db: free, main */
#define MM_LAST_PG 120
#define MM_TXNID 128
#define MM_SIZE 136
#define MDB_MAGIC 0xBEEFC0DEu
#define MDB_DATA_VERSION 1

/* MDB_db */
#define DB_SIZE 48
#define MD_FLAGS 4
#define MD_DEPTH 6
#define MD_BRANCH 8
#define MD_LEAF 16
#define MD_OVERFLOW 24
#define MD_ENTRIES 32
#define MD_ROOT 40
#define P_INVALID UINT64_MAX

#define MAXKEY 511
#define MAXDEPTH 32

_Static_assert(sizeof(size_t) == 8, "the verifier reads the LMDB layout of 64-bit hosts");

struct walk {
	struct cygprof_capture *cap;
	const uint8_t *map;
	uint64_t size;
	unsigned int psize;
	uint64_t npages;  /* last_pg + 1 */
	uint8_t *seen;    /* one bit per page */
	const char *db;   /* name of the tree walked, for messages */
	/* counted in the tree walked */
	uint64_t branch, leaf, overflow, entries;
	uint32_t digest;  /* of the keys, in order */
	unsigned int depth;
	bool main;        /* walking the main DB */
	uint64_t *found;  /* entries of the named DBs, by DB_* */
	/* named DBs found in the main DB, walked after it */
	struct {
		char name[64];
		uint8_t rec[DB_SIZE];
	} sub[CAPTURE_MAXDBS];
	unsigned int nsub;
};

static uint16_t rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* fmt: a literal of this file with two %llu (a "%.0llu" prints nothing) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static int bad(struct walk *w, const char *fmt, unsigned long long pg, unsigned long long x)
{
	char msg[160];

	snprintf(msg, sizeof(msg), fmt, pg, x);
	return capture_damage(w->cap, "LMDB tree of DB '%s': %s", w->db, msg);
}
#pragma GCC diagnostic pop

static int mark(struct walk *w, uint64_t pg)
{
	if (pg < 2 || pg >= w->npages)
		return bad(w, "page %llu out of the file (%llu pages)", pg, w->npages);
	if (w->seen[pg >> 3] & (1u << (pg & 7)))
		return bad(w, "page %llu reached twice%.0llu", pg, 0);
	w->seen[pg >> 3] |= (uint8_t)(1u << (pg & 7));
	return 0;
}

/* memcmp order, shorter first on a common prefix: LMDB's default. */
static int keycmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	if (c)
		return c;
	return an < bn ? -1 : an > bn;
}

struct key {
	const uint8_t *p;
	size_t n;
	bool set;
};

static int leaf_node(struct walk *w, uint64_t pg, const uint8_t *node, unsigned int room)
{
	uint16_t flags = rd16(node + 4), ksize = rd16(node + 6);
	uint32_t dsize = rd16(node) | (uint32_t)rd16(node + 2) << 16;
	const uint8_t *opage;
	uint64_t opg, need, pages, i;
	size_t nl;
	int rc;

	if (w->main) {
		/* the main DB holds the records of the named DBs only */
		if (flags != F_SUBDATA || dsize != DB_SIZE || NODESIZE + ksize + DB_SIZE > room)
			return bad(w, "page %llu: node flags %llu", pg, flags);
		if (w->nsub == CAPTURE_MAXDBS)
			return bad(w, "page %llu: more than %llu named DBs", pg, CAPTURE_MAXDBS);
		nl = ksize < sizeof(w->sub[0].name) - 1 ? ksize : sizeof(w->sub[0].name) - 1;
		memcpy(w->sub[w->nsub].name, node + NODESIZE, nl);
		w->sub[w->nsub].name[nl] = 0;
		if (memchr(w->sub[w->nsub].name, 0, nl) || nl != ksize)
			return bad(w, "page %llu: DB name of %llu bytes", pg, ksize);
		memcpy(w->sub[w->nsub].rec, node + NODESIZE + ksize, DB_SIZE);
		w->nsub++;
		return 0;
	}
	if (flags & ~F_BIGDATA)
		return bad(w, "page %llu: node flags %llu", pg, flags);
	w->digest = capture_key_digest(w->digest, node + NODESIZE, ksize);
	if (!(flags & F_BIGDATA)) {
		if (NODESIZE + ksize + (uint64_t)dsize > room)
			return bad(w, "page %llu: value of %llu bytes past the page", pg, dsize);
		return 0;
	}
	/* a value in its own run of overflow pages */
	if (NODESIZE + ksize + 8u > room)
		return bad(w, "page %llu: node past the page%.0llu", pg, 0);
	opg = rd64(node + NODESIZE + ksize);
	if (opg < 2 || opg >= w->npages)
		return bad(w, "page %llu: overflow page %llu out of the file", pg, opg);
	opage = w->map + opg * w->psize;
	need = (PAGEHDRSZ - 1 + (uint64_t)dsize) / w->psize + 1;
	pages = rd32(opage + PG_PAGES);
	if (rd64(opage + PG_PGNO) != opg || rd16(opage + PG_FLAGS) != P_OVERFLOW)
		return bad(w, "overflow page %llu: header%.0llu", opg, 0);
	if (pages < need || pages > w->npages - opg)
		return bad(w, "overflow page %llu: run of %llu pages", opg, pages);
	for (i = 0; i < pages; i++) {
		rc = mark(w, opg + i);
		if (rc)
			return rc;
	}
	w->overflow += pages;
	return 0;
}

static int walk_page(struct walk *w, uint64_t pg, unsigned int level, struct key lo,
		     struct key hi)
{
	const uint8_t *page, *node, *key, *prev = NULL;
	unsigned int lower, upper, n, i, off, room;
	uint16_t flags, ksize;
	size_t prevn = 0;
	bool leaf;
	int rc;

	rc = mark(w, pg);
	if (rc)
		return rc;
	page = w->map + pg * w->psize;
	flags = rd16(page + PG_FLAGS);
	leaf = level + 1 == w->depth;
	if (rd64(page + PG_PGNO) != pg)
		return bad(w, "page %llu: header says page %llu", pg, rd64(page + PG_PGNO));
	if (flags != (leaf ? P_LEAF : P_BRANCH))
		return bad(w, "page %llu: flags 0x%llx", pg, flags);
	lower = rd16(page + PG_LOWER);
	upper = rd16(page + PG_UPPER);
	if (lower < PAGEHDRSZ + 2 || (lower & 1) || lower > upper || upper > w->psize)
		return bad(w, "page %llu: free space %llu", pg, (unsigned long long)lower << 16 | upper);
	n = (lower - PAGEHDRSZ) / 2;
	if (leaf)
		w->leaf++, w->entries += n;
	else
		w->branch++;
	for (i = 0; i < n; i++) {
		off = rd16(page + PAGEHDRSZ + 2 * i);
		if (off < upper || (off & 1) || off + NODESIZE > w->psize)
			return bad(w, "page %llu: node at %llu", pg, off);
		node = page + off;
		room = w->psize - off;
		ksize = rd16(node + 6);
		if (ksize > MAXKEY || NODESIZE + (unsigned int)ksize > room)
			return bad(w, "page %llu: key of %llu bytes", pg, ksize);
		key = node + NODESIZE;
		/* key order: the first key of a branch page is not used */
		if (leaf || i) {
			if (!ksize)
				return bad(w, "page %llu: empty key %llu", pg, i);
			if (prev && keycmp(prev, prevn, key, ksize) >= 0)
				return bad(w, "page %llu: key %llu out of order", pg, i);
			if (lo.set && keycmp(key, ksize, lo.p, lo.n) < 0)
				return bad(w, "page %llu: key %llu below its branch", pg, i);
			if (hi.set && keycmp(key, ksize, hi.p, hi.n) >= 0)
				return bad(w, "page %llu: key %llu above its branch", pg, i);
			prev = key;
			prevn = ksize;
		}
		if (leaf) {
			rc = leaf_node(w, pg, node, room);
			if (rc)
				return rc;
		}
	}
	if (leaf)
		return 0;
	/* children: keys in [key i, key i+1) */
	for (i = 0; i < n; i++) {
		struct key clo = lo, chi = hi;
		uint64_t child;

		node = page + rd16(page + PAGEHDRSZ + 2 * i);
		child = rd16(node) | (uint64_t)rd16(node + 2) << 16 | (uint64_t)rd16(node + 4) << 32;
		if (i) {
			clo = (struct key){ node + NODESIZE, rd16(node + 6), true };
		}
		if (i + 1 < n) {
			const uint8_t *next = page + rd16(page + PAGEHDRSZ + 2 * (i + 1));

			chi = (struct key){ next + NODESIZE, rd16(next + 6), true };
		}
		rc = walk_page(w, child, level + 1, clo, chi);
		if (rc)
			return rc;
	}
	return 0;
}

static int walk_tree(struct walk *w, const char *name, const uint8_t *rec, bool main)
{
	uint64_t root = rd64(rec + MD_ROOT);
	unsigned int depth = rd16(rec + MD_DEPTH);
	struct key none = { NULL, 0, false };
	int rc;

	w->db = name;
	w->main = main;
	w->branch = w->leaf = w->overflow = w->entries = 0;
	w->digest = 0;
	if (rd16(rec + MD_FLAGS))
		return bad(w, "flags 0x%llx%.0llu", rd16(rec + MD_FLAGS), 0);
	if (root == P_INVALID) {
		if (depth || rd64(rec + MD_ENTRIES) || rd64(rec + MD_LEAF) ||
		    rd64(rec + MD_BRANCH) || rd64(rec + MD_OVERFLOW))
			return bad(w, "empty tree with %llu entries, depth %llu",
				   rd64(rec + MD_ENTRIES), depth);
		return 0;
	}
	if (!depth || depth > MAXDEPTH)
		return bad(w, "depth %llu%.0llu", depth, 0);
	w->depth = depth;
	rc = walk_page(w, root, 0, none, none);
	if (rc)
		return rc;
	if (w->entries != rd64(rec + MD_ENTRIES))
		return bad(w, "%llu entries, %llu recorded", w->entries, rd64(rec + MD_ENTRIES));
	if (w->leaf != rd64(rec + MD_LEAF))
		return bad(w, "%llu leaf pages, %llu recorded", w->leaf, rd64(rec + MD_LEAF));
	if (w->branch != rd64(rec + MD_BRANCH))
		return bad(w, "%llu branch pages, %llu recorded", w->branch, rd64(rec + MD_BRANCH));
	if (w->overflow != rd64(rec + MD_OVERFLOW))
		return bad(w, "%llu overflow pages, %llu recorded", w->overflow,
			   rd64(rec + MD_OVERFLOW));
	return 0;
}

static int check_meta(struct cygprof_capture *cap, const uint8_t *page, unsigned int i)
{
	const uint8_t *m = page + PAGEHDRSZ;

	if (!(rd16(page + PG_FLAGS) & P_META) || rd32(m + MM_MAGIC) != MDB_MAGIC)
		return capture_damage(cap, "LMDB meta page %u: not a meta page", i);
	if (rd32(m + MM_VERSION) != MDB_DATA_VERSION)
		return capture_damage(cap, "LMDB meta page %u: version %u", i,
				      rd32(m + MM_VERSION));
	return 0;
}

int capture_verify(struct cygprof_capture *cap, int fd, uint64_t size, unsigned int *psizep,
		   uint64_t *txnid, uint64_t entries[DB_COUNT], uint32_t digests[DB_COUNT])
{
	struct walk *w;
	const uint8_t *m0, *m1, *m;
	unsigned int psize, i, j;
	uint64_t last;
	void *map;
	int rc;

	for (i = 0; i < DB_COUNT; i++) {
		entries[i] = UINT64_MAX;
		digests[i] = 0;
	}
	if (size > SIZE_MAX)
		return -EFBIG;
	map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return errno == ENOMEM ? CYGPROF_E_ADDRSPACE : -errno;
	w = calloc(1, sizeof(*w));
	if (!w) {
		munmap(map, (size_t)size);
		return -ENOMEM;
	}
	w->cap = cap;
	w->map = map;
	w->size = size;
	w->found = entries;
	w->db = "meta";
	/* the page size is the first meta's, and the second meta page starts
	 * there (precheck made sure both fit) */
	m0 = w->map;
	psize = rd32(m0 + PAGEHDRSZ + MM_DBS);
	m1 = w->map + psize;
	rc = check_meta(cap, m0, 0);
	if (!rc)
		rc = check_meta(cap, m1, 1);
	if (rc)
		goto out;
	if (rd32(m1 + PAGEHDRSZ + MM_DBS) != psize) {
		rc = capture_damage(cap, "LMDB meta pages disagree on the page size");
		goto out;
	}
	/* the one LMDB picks: the larger transaction id, the first on a tie */
	m = rd64(m0 + PAGEHDRSZ + MM_TXNID) < rd64(m1 + PAGEHDRSZ + MM_TXNID) ? m1 : m0;
	m += PAGEHDRSZ;
	last = rd64(m + MM_LAST_PG);
	if (last < 1 || last >= size / psize) {
		rc = capture_damage(cap, "LMDB meta page: last page %llu, the file has %llu",
				    (unsigned long long)last, (unsigned long long)(size / psize));
		goto out;
	}
	w->psize = psize;
	w->npages = last + 1;
	w->seen = calloc((size_t)(w->npages / 8 + 1), 1);
	if (!w->seen) {
		rc = -ENOMEM;
		goto out;
	}
	/* the free DB is never read by a reader: only its root is checked */
	if (rd64(m + MM_DBS + MD_ROOT) != P_INVALID && rd64(m + MM_DBS + MD_ROOT) > last) {
		rc = capture_damage(cap, "LMDB meta page: free DB root out of the file");
		goto out;
	}
	rc = walk_tree(w, "main", m + MM_DBS + DB_SIZE, true);
	for (i = 0; !rc && i < w->nsub; i++) {
		rc = walk_tree(w, w->sub[i].name, w->sub[i].rec, false);
		for (j = 0; !rc && j < DB_COUNT; j++)
			if (!strcmp(w->sub[i].name, capture_db_names[j])) {
				entries[j] = w->entries;
				digests[j] = w->digest;
			}
	}
	if (!rc) {
		*psizep = psize;
		*txnid = rd64(m + MM_TXNID);
	}
out:
	free(w->seen);
	free(w);
	munmap(map, (size_t)size);
	return rc;
}

int capture_meta_txnid(int fd, uint64_t *txnid)
{
	uint8_t m0[PAGEHDRSZ + MM_SIZE], m1[PAGEHDRSZ + MM_SIZE];
	uint32_t psize;
	ssize_t n;

	n = pread(fd, m0, sizeof m0, 0);
	if (n != (ssize_t)sizeof m0)
		return n < 0 ? -errno : CYGPROF_E_CORRUPT;
	psize = rd32(m0 + PAGEHDRSZ + MM_DBS);
	if (psize < 256 || psize > 65536 || (psize & (psize - 1)))
		return CYGPROF_E_CORRUPT;
	n = pread(fd, m1, sizeof m1, psize);
	if (n != (ssize_t)sizeof m1)
		return n < 0 ? -errno : CYGPROF_E_CORRUPT;
	if (!(rd16(m0 + PG_FLAGS) & P_META) || !(rd16(m1 + PG_FLAGS) & P_META))
		return CYGPROF_E_CORRUPT;
	*txnid = rd64(m0 + PAGEHDRSZ + MM_TXNID);
	if (rd64(m1 + PAGEHDRSZ + MM_TXNID) > *txnid)
		*txnid = rd64(m1 + PAGEHDRSZ + MM_TXNID);
	return 0;
}

int capture_meta_set_txnid(int fd, unsigned int psize, uint64_t txnid)
{
	uint8_t m[PAGEHDRSZ + MM_SIZE];
	ssize_t n;
	off_t at;

	if (txnid < 2)
		return -EINVAL;
	/* meta page 1: the one a compacting copy fills, with transaction 1 */
	n = pread(fd, m, sizeof m, psize);
	if (n != (ssize_t)sizeof m)
		return n < 0 ? -errno : CYGPROF_E_CORRUPT;
	if (!(rd16(m + PG_FLAGS) & P_META) || rd32(m + PAGEHDRSZ + MM_MAGIC) != MDB_MAGIC ||
	    rd64(m + PAGEHDRSZ + MM_TXNID) != 1)
		return CYGPROF_E_CORRUPT;
	/* LMDB writes transaction t's meta into page t & 1 and reads the
	 * larger id: the same meta with txnid goes into its own page (the
	 * other keeps what it held, an older id) */
	at = (off_t)(txnid & 1) * psize;
	memcpy(m + PAGEHDRSZ + MM_TXNID, &txnid, sizeof txnid);
	{
		uint64_t pgno = txnid & 1;

		memcpy(m + PG_PGNO, &pgno, sizeof pgno);
	}
	n = pwrite(fd, m, sizeof m, at);
	if (n != (ssize_t)sizeof m)
		return n < 0 ? -errno : -EIO;
	return 0;
}
