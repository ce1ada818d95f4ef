/* SPDX-License-Identifier: MIT */
/* hmap.h - the one hash table of cygprof: open addressing, linear probing,
 * power-of-two sizes, no tombstones.  Two forms:
 *
 *   struct hmap    a 64-bit key (any value, 0 too) -> a 64-bit value, with
 *                  deletion by backward shift (hmap_del()).  Keys and
 *                  values are two arrays: a probe reads keys only, so the
 *                  misses of interning (the collector's maps of millions
 *                  of nodes) touch half the memory.
 *   struct hindex  an index over an array the caller appends to, whose
 *                  entries hold their keys (names, call paths, triples): a
 *                  slot holds an entry's index + 1, 0 is empty (4 bytes a
 *                  slot, where a big trie would take 16).  The caller gives
 *                  the hash of a key and the test of an entry against it;
 *                  hindex_find() is inlined into the caller with both, so
 *                  the test costs no call.  It rehashes its entries, in
 *                  order, through the caller's hash of an entry.  Entries
 *                  keyed by two 32-bit fields (a parent and a function, a
 *                  caller and a callee) need no callbacks of their own:
 *                  HINDEX_PAIRS(), hindex_find_pair(), hindex_add_pair().
 *
 * With linear probing a miss reads about (1 + 1/(1 - load)^2) / 2 slots,
 * 2.5 at 1/2 full but 8.5 at 3/4.  An index (4-byte slots) doubles past
 * half full.  A map doubles past 3/4 full (16 bytes a slot: the
 * collector keeps maps of millions of nodes), or past half full when
 * marked sparse, for a map that mostly misses and deletes (the live
 * blocks of the memory analysis: every allocation is a new address).
 *
 * And the hashes they are keyed with: hash64() of an integer, hash_pair()
 * of two, hash_pair32() of two 32-bit ones, hash_addr() of an address and
 * a small id, hash_str() of a string.
 *
 * The lookups are static inline (the read side runs them per tree node,
 * over millions).  Nothing here prints or exits: what allocates returns 0
 * (or 1) or -ENOMEM and leaves the table as it was when it fails.  A table
 * starts zeroed ({0}) and is emptied with its _release(); it is not
 * thread-safe. */
#ifndef CYGPROF_HMAP_H
#define CYGPROF_HMAP_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

/* ---- hashes ------------------------------------------------------------- */

/* A 64-bit integer mixed so that every bit of it moves the low bits that
 * pick a slot: the high half folded down, one multiplication by 2^64 /
 * the golden ratio, its high bits folded down again.  Functions 16, 128
 * or 4096 bytes apart, addresses with a process in their top bits and
 * (parent, fn) pairs packed into one word all spread evenly (measured: 1
 * to 2.3 slots a lookup at 3/4 full; a plain multiplication left
 * functions 128 bytes apart 7 slots from home), with one multiplication
 * where MurmurHash3's finaliser takes two: the read side hashes per tree
 * node. */
static inline uint64_t hash64(uint64_t x)
{
	x ^= x >> 32;
	x *= 0x9e3779b97f4a7c15ULL;
	return x ^ x >> 29;
}

/* Two 64-bit integers (a key wider than one word). */
static inline uint64_t hash_pair(uint64_t a, uint64_t b)
{
	return hash64(hash64(a) ^ b);
}

/* An address and a small id (a process, an object) in one word, hashed
 * once: the id rotated into the top bits, where no user address has any
 * (hash64() brings them down to the slot's bits). */
static inline uint64_t hash_addr(uint32_t id, uint64_t addr)
{
	return hash64(addr ^ ((uint64_t)id << 48 | (uint64_t)id >> 16));
}

/* A NUL-terminated string (FNV-1a). */
static inline uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* ---- 64-bit key -> 64-bit value ------------------------------------------- */

struct hmap {
	uint64_t *key; /* 0: an empty slot (key 0 itself is kept apart, in has0/val0) */
	uint64_t *val; /* the value of the key in the same slot */
	size_t size;   /* slots, a power of two; 0 before the first put */
	size_t n;    /* keys in the slots (key 0 not counted) */
	int has0;    /* key 0 is present, with value val0 */
	int sparse;  /* set by the user (kept by hmap_release()): double past
		      * half full, not 3/4 */
	uint64_t val0;
};

/* Whether m must double before holding n keys in its slots. */
static inline int hmap_full_(const struct hmap *m, size_t n)
{
	return m->sparse ? n * 2 > m->size : n * 4 > m->size * 3;
}

/* Double the table (or make the first one); 0 or -ENOMEM (hmap.c). */
int hmap_grow(struct hmap *m);

/* Make room for n keys in all at once (when their number is known: no
 * doubling on the way); 0 or -ENOMEM (hmap.c). */
int hmap_reserve(struct hmap *m, size_t n);

/* Where key is in the slots, or the empty slot where it would go
 * (m->size > 0, key != 0). */
static inline size_t hmap_pos_(const struct hmap *m, uint64_t key)
{
	size_t mask = m->size - 1, j = (size_t)hash64(key) & mask;

	while (m->key[j] && m->key[j] != key)
		j = (j + 1) & mask;
	return j;
}

/* 1 and *val when key is present, else 0 (*val untouched). */
static inline int hmap_get(const struct hmap *m, uint64_t key, uint64_t *val)
{
	size_t j;

	if (!key) {
		if (m->has0)
			*val = m->val0;
		return m->has0;
	}
	if (!m->size)
		return 0;
	j = hmap_pos_(m, key);
	if (!m->key[j])
		return 0;
	*val = m->val[j];
	return 1;
}

/* The value of key, for reading and writing: added with the value 0 (and
 * *added = 1) when absent.  The pointer is valid until the next addition.
 * NULL when out of memory (nothing added). */
static inline uint64_t *hmap_ref(struct hmap *m, uint64_t key, int *added)
{
	size_t j;

	*added = 0;
	if (!key) {
		if (!m->has0) {
			m->has0 = 1;
			m->val0 = 0;
			*added = 1;
		}
		return &m->val0;
	}
	if (m->size) {
		j = hmap_pos_(m, key);
		if (m->key[j])
			return &m->val[j];
	}
	if (hmap_full_(m, m->n + 1) && hmap_grow(m))
		return NULL;
	j = hmap_pos_(m, key);
	m->key[j] = key;
	m->val[j] = 0;
	m->n++;
	*added = 1;
	return &m->val[j];
}

/* The value of key when present: returns 0 with *out that value.  Else
 * adds key with val: returns 1 with *out = val, or -ENOMEM (nothing
 * added).  The interning step of a table whose values index the caller's
 * array: one probe whether the key is new or not. */
static inline int hmap_get_or_put(struct hmap *m, uint64_t key, uint64_t val, uint64_t *out)
{
	int added;
	uint64_t *v = hmap_ref(m, key, &added);

	if (!v)
		return -ENOMEM;
	if (added)
		*v = val;
	*out = *v;
	return added;
}

/* Set key's value (added or replaced); 0 or -ENOMEM (nothing changed). */
static inline int hmap_put(struct hmap *m, uint64_t key, uint64_t val)
{
	int added;
	uint64_t *v = hmap_ref(m, key, &added);

	if (!v)
		return -ENOMEM;
	*v = val;
	return 0;
}

/* Remove key: 1 with *val its value when it was present, 0 when not.  The
 * keys after it in its run move back to where a lookup finds them
 * (backward shift), so deletion leaves no tombstone and lookups stay as
 * short as without it. */
int hmap_take(struct hmap *m, uint64_t key, uint64_t *val);

/* hmap_take() without the value. */
static inline int hmap_del(struct hmap *m, uint64_t key)
{
	uint64_t val;

	return hmap_take(m, key, &val);
}

/* How many keys the map holds. */
static inline size_t hmap_count(const struct hmap *m)
{
	return m->n + (m->has0 != 0);
}

/* Walk the map: with *pos 0 at first, each call gives one key and its
 * value and returns 1, then 0 when all were given (key 0 first, then in
 * no useful order).  The map must not change during the walk. */
static inline int hmap_next(const struct hmap *m, size_t *pos, uint64_t *key, uint64_t *val)
{
	if (!*pos) {
		*pos = 1;
		if (m->has0) {
			*key = 0;
			*val = m->val0;
			return 1;
		}
	}
	for (; *pos <= m->size; (*pos)++) {
		if (m->key[*pos - 1]) {
			*key = m->key[*pos - 1];
			*val = m->val[*pos - 1];
			(*pos)++;
			return 1;
		}
	}
	return 0;
}

/* Free the slots; the map is empty (and reusable) again. */
void hmap_release(struct hmap *m);

/* ---- an index over the caller's entries ------------------------------------ */

/* The index of an array the caller appends to: its entries 0 .. n - 1 are
 * indexed, each added as it is appended. */
struct hindex {
	uint32_t *slot; /* entry index + 1; 0: empty */
	size_t size;    /* a power of two; 0 before the first add */
	size_t n;       /* entries indexed: the next one is entry n */
};

/* Whether the caller's entry i equals key (the caller's own key type). */
typedef int (*hindex_eq_fn)(const void *ctx, uint32_t i, const void *key);
/* The hash of the caller's entry i, as it was given to hindex_add(). */
typedef uint64_t (*hindex_hash_fn)(const void *ctx, uint32_t i);

/* Double the table (or make the first one), rehashing entries 0 .. n - 1
 * in order with hash_at; 0 or -ENOMEM (hmap.c). */
int hindex_grow(struct hindex *ix, hindex_hash_fn hash_at, const void *ctx);

/* Make room for n entries in all, so that adding up to that many cannot
 * fail; 0 or -ENOMEM (hmap.c). */
int hindex_reserve(struct hindex *ix, size_t n, hindex_hash_fn hash_at, const void *ctx);

/* The index of the entry equal to key (eq) under hash, or -1.  Inlined
 * with the caller's eq, a constant function: the compiler inlines it too. */
static inline __attribute__((always_inline)) long
hindex_find(const struct hindex *ix, uint64_t hash, hindex_eq_fn eq, const void *ctx,
	    const void *key)
{
	size_t mask, j;

	if (!ix->size)
		return -1;
	mask = ix->size - 1;
	for (j = (size_t)hash & mask; ix->slot[j]; j = (j + 1) & mask)
		if (eq(ctx, ix->slot[j] - 1, key))
			return (long)ix->slot[j] - 1;
	return -1;
}

/* Index the caller's entry number ix->n under hash (look its key up
 * first: it must be new), growing the table past half full; hash_at must
 * give the same hash for each entry.  0 or -ENOMEM (not indexed: do not
 * count the entry as appended). */
static inline int hindex_add(struct hindex *ix, uint64_t hash, hindex_hash_fn hash_at,
			     const void *ctx)
{
	size_t mask, j;

	if (ix->n >= UINT32_MAX - 1 ||
	    ((ix->n + 1) * 2 > ix->size && hindex_grow(ix, hash_at, ctx)))
		return -ENOMEM;
	mask = ix->size - 1;
	for (j = (size_t)hash & mask; ix->slot[j]; j = (j + 1) & mask)
		;
	ix->slot[j] = (uint32_t)++ix->n;
	return 0;
}

/* Free the slots; the index is empty (and reusable) again. */
void hindex_release(struct hindex *ix);

/* ---- entries keyed by two 32-bit fields ------------------------------------ */

/* Where the key of the caller's entries is: two uint32_t fields, at
 * offsets a and b of entries stride bytes apart from base (a call path's
 * parent and function, an arc's caller and callee).  HINDEX_PAIRS() makes
 * one; the lookups are inlined with its constant offsets. */
struct hindex_pairs {
	const void *base;
	size_t stride, a, b;
};

#define HINDEX_PAIRS(v, type, fa, fb) \
	((struct hindex_pairs){(v), sizeof(type), offsetof(type, fa), offsetof(type, fb)})

static inline uint32_t hindex_pair_field_(const struct hindex_pairs *e, uint32_t i, size_t off)
{
	return *(const uint32_t *)((const char *)e->base + i * e->stride + off);
}

static inline uint64_t hash_pair32(uint32_t x, uint32_t y)
{
	return hash64((uint64_t)x << 32 | y);
}

static inline int hindex_pair_eq_(const void *ctx, uint32_t i, const void *key)
{
	const struct hindex_pairs *e = ctx;
	const uint32_t *k = key;

	return hindex_pair_field_(e, i, e->a) == k[0] && hindex_pair_field_(e, i, e->b) == k[1];
}

static inline uint64_t hindex_pair_hash_at_(const void *ctx, uint32_t i)
{
	const struct hindex_pairs *e = ctx;

	return hash_pair32(hindex_pair_field_(e, i, e->a), hindex_pair_field_(e, i, e->b));
}

/* The index of the entry keyed (x, y), or -1. */
static inline long hindex_find_pair(const struct hindex *ix, struct hindex_pairs e, uint32_t x,
				    uint32_t y)
{
	const uint32_t k[2] = {x, y};

	return hindex_find(ix, hash_pair32(x, y), hindex_pair_eq_, &e, k);
}

/* hindex_add() of the entry keyed (x, y), number ix->n, for a key that
 * hindex_find_pair() did not find. */
static inline int hindex_add_pair(struct hindex *ix, struct hindex_pairs e, uint32_t x, uint32_t y)
{
	return hindex_add(ix, hash_pair32(x, y), hindex_pair_hash_at_, &e);
}

#endif
