/* SPDX-License-Identifier: MIT */
/* capture-memenc.c - the writer's encoder of schema 5 memory blocks
 * (docs/capture-format.md, "mem"; the reader's decoder is in
 * capture-reader.c).
 *
 * The events of a thread's open block are kept as they come in the very
 * streams the block stores: HDR as varints (with the count of each
 * one-byte header, which picks the palette of a packed HDR), the split
 * columns as their LEN bytes and MANT bits, NEW and SNEW as varints, and
 * the runs of times in each unit (the unit is chosen when the block is
 * written, which the writer does at every commit while the block is open).
 * Writing a block is then putting the streams together (and packing HDR),
 * not decoding and encoding them again.
 *
 * Everything an event costs is here, on the collector's drain path: a free
 * finds its allocation's rank among the block's live ones in a bitset
 * (popcounts over the last words, a Fenwick tree of word counts for the
 * older ones), times are divided by constants, buffers grow only when
 * full, and the block's length is recomputed only when it may be near its
 * limit.  The bytes are those the encoder before wrote (an earlier one
 * re-encoded each block at every write: 130-150 ns an event against 17-27
 * for the schema 4 encoder; bench/bench.py's memloop section).
 */
#include "capture-private.h"

/* A stream of bits, packed from the lowest bit of each byte up. */
struct bitw {
	struct cbuf b;
	uint64_t acc;    /* the bits not in b yet, from bit 0 */
	unsigned int nb; /* how many: below 8 between calls */
};

/* The allocations of the block still live (MEM5_BLOCK_LIVE), by ord
 * (1-based): one bit each, in words of 64, and a Fenwick tree of the
 * counts of words 0 .. nt - 1, which lags the last word by MEM5_TAIL words
 * at most.  A free of a recent allocation (most of them) counts the bits
 * after it in a few words; one of an older allocation asks the tree.
 * Allocations are added at the end (ord increasing). */
#define MEM5_TAIL 4
struct wlive {
	uint64_t *w;  /* bit o & 63 of word o >> 6: ord o is live */
	uint32_t *t;  /* t[1 .. cap]: the tree over words */
	uint32_t cap; /* words of w and nodes of t */
	uint32_t nt;  /* the words the tree counts */
	uint32_t last; /* the word of the last ord added */
	uint32_t top;  /* that ord */
	uint32_t n;   /* live ones */
};

/* Bits set in x (the compiler's builtin is a call without -mpopcnt). */
static inline uint32_t popc(uint64_t x)
{
	x -= x >> 1 & 0x5555555555555555ull;
	x = (x & 0x3333333333333333ull) + (x >> 2 & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (uint32_t)(x * 0x0101010101010101ull >> 56);
}

static void wlive_tree_add(struct wlive *l, uint32_t word, int d)
{
	uint32_t j;

	for (j = word + 1; j <= l->cap; j += j & (0u - j))
		l->t[j] += (uint32_t)d;
}

/* Live ones in words 0 .. word - 1 (word <= nt). */
static uint32_t wlive_tree_prefix(const struct wlive *l, uint32_t word)
{
	uint32_t s = 0, j;

	for (j = word; j; j -= j & (0u - j))
		s += l->t[j];
	return s;
}

/* Room for ord o (false when out of memory; the tree is built again). */
static bool wlive_room(struct wlive *l, uint32_t o)
{
	uint32_t word = o >> 6, c = l->cap ? l->cap : 64, j, p;
	uint64_t *w;
	uint32_t *t;

	if (word < l->cap)
		return true;
	while (c <= word)
		c *= 2;
	w = realloc(l->w, (size_t)c * sizeof(*w));
	if (!w)
		return false;
	l->w = w;
	memset(w + l->cap, 0, (size_t)(c - l->cap) * sizeof(*w));
	t = realloc(l->t, ((size_t)c + 1) * sizeof(*t));
	if (!t)
		return false;
	l->t = t;
	l->cap = c;
	for (j = 1; j <= c; j++)
		t[j] = j <= l->nt ? popc(w[j - 1]) : 0;
	for (j = 1; j <= c; j++) {
		p = j + (j & (0u - j));
		if (p <= c)
			t[p] += t[j];
	}
	return true;
}

/* Ord o (after every ord added before, room made) is live. */
static void wlive_add(struct wlive *l, uint32_t o)
{
	l->w[o >> 6] |= 1ull << (o & 63);
	l->n++;
	l->last = o >> 6;
	l->top = o;
	while (l->nt + MEM5_TAIL < l->last) {
		wlive_tree_add(l, l->nt, (int)popc(l->w[l->nt]));
		l->nt++;
	}
}

static bool wlive_is(const struct wlive *l, uint32_t o)
{
	return (o >> 6) < l->cap && (l->w[o >> 6] >> (o & 63) & 1);
}

static void wlive_del(struct wlive *l, uint32_t o)
{
	l->w[o >> 6] &= ~(1ull << (o & 63));
	l->n--;
	if ((o >> 6) < l->nt)
		wlive_tree_add(l, o >> 6, -1);
}

/* The live ones of ords o and after. */
static uint32_t wlive_rank(const struct wlive *l, uint32_t o)
{
	uint32_t word = o >> 6, s, i;

	if (o == l->top) /* the last one (a free of what was just allocated) */
		return 1;
	if (word == l->last) /* the most recent ones */
		return popc(l->w[word] >> (o & 63));
	if (l->last - word <= MEM5_TAIL) {
		s = popc(l->w[word] >> (o & 63));
		for (i = word + 1; i <= l->last; i++)
			s += popc(l->w[i]);
		return s;
	}
	/* word < nt: the words before it are in the tree */
	s = wlive_tree_prefix(l, word) +
	    popc(l->w[word] & ((1ull << (o & 63)) - 1));
	return l->n - s;
}

static void wlive_reset(struct wlive *l)
{
	if (l->cap) {
		memset(l->w, 0, ((size_t)l->last + 1) * sizeof(*l->w));
		memset(l->t, 0, ((size_t)l->cap + 1) * sizeof(*l->t));
	}
	l->n = l->nt = l->last = l->top = 0;
}

/* The columns of the open schema 5 memory block of one thread. */
struct mem5_enc {
	/* HDR, NEW and SNEW: varints; a split column (MEM5_SPLIT_COLS): its
	 * LEN stream, a byte a value, and its MANT stream in mant[] */
	struct cbuf col[MEM5_COL_COUNT];
	struct bitw mant[MEM5_COL_COUNT];
	/* (a column's values are not counted apart: HDR has nev, a split
	 * column a LEN byte each) */
	uint32_t hcnt[128];            /* HDR: the events of each one-byte header */
	/* DT and RUN in each unit u: 0 ns, else 10^u us (E = u); which one is
	 * stored is decided when the block is written */
	struct cbuf tdt[MEM5_UNITS], trun[MEM5_UNITS];
	uint64_t run_t[MEM5_UNITS], base_t[MEM5_UNITS]; /* the open run's time, the run's before */
	uint32_t run_at[MEM5_UNITS]; /* the open run's first event (its events: nev - run_at) */
	uint32_t nrun[MEM5_UNITS];   /* runs closed */
	uint64_t next_t;   /* the first time (ns) not in the open 10 us run: before it,
			    * no run of the coarse units closes */
	uint32_t nev;      /* events in the block */
	uint64_t last_dec; /* the last time of the block as last written (ns) */
	uint64_t floor_ts; /* that of the block before: no time of this one is earlier */
	uint64_t prev_addr;
	uint32_t nallocs, nfrees, npairs;
	uint32_t until_check; /* events that fit before mem5_len() is asked again */
	/* the allocations and frees last seen at each slot (by a hash of the
	 * address): ord 1-based, valid only when gen is the block's (so that
	 * a new block starts with none without clearing 720 KB: that evicted
	 * the collector's caches at every block) */
	struct { uint64_t addr, size; uint32_t ord, gen; } alloc[MEM5_CACHE];
	struct { uint64_t addr; uint32_t ord, gen; } freed[MEM5_CACHE]; /* of the
		* frees: ord among all */
	uint32_t gen; /* the open block's, from 1 */
	/* the block's (size, stack) table: open addressing, mask + 1 slots */
	struct mem5_pair_slot { uint64_t size; uint32_t stack, idx; } *pair; /* idx + 1, 0 empty */
	uint32_t pair_mask;
	struct mem5_pair_slot pcache[64]; /* the pairs found last, by stack id: idx + 1 */
	struct mem5_pair_slot *stk; /* the block's stacks, likewise (size 0) */
	uint32_t stk_mask, nstks;
	/* the block's frees by ord (1-based): the unclaimed ones of each class
	 * linked from the class's last (ftail), 0 none */
	struct mem5_free *fl;
	uint32_t fl_cap;
	uint32_t ftail[MEM5_BINS];
	struct wlive lv;
	struct cbuf hs[3]; /* writing: HDR's PAL, PACK and ESC streams */
	bool oom;          /* a column could not grow: the block cannot be written */
};

/* The most one event adds to mem5_len(): HDR 4 (23 bits) and a quarter
 * byte packed, an address 1 + 8, PAIR 1 + 4, NEW 10, SREF 1 + 4, SNEW 5,
 * DT and RUN 20 in each of the 4 units: 119, rounded up. */
#define MEM5_EVENT_LEN 160

/* ---- buffers ------------------------------------------------------------- */

/* Room for n more bytes at the end of b (len unchanged); NULL when out of
 * memory. */
static inline uint8_t *room(struct cbuf *b, size_t n)
{
	if (__builtin_expect(b->cap - b->len >= n, 1))
		return b->p + b->len;
	if (!cbuf_grow(b, n))
		return NULL;
	b->len -= n;
	return b->p + b->len;
}

static inline void put_var(struct cbuf *b, uint64_t v)
{
	uint8_t *p = room(b, 10);

	if (!p)
		return;
	if (v < 0x80) { /* most of them */
		*p = (uint8_t)v;
		b->len++;
		return;
	}
	b->len += put_varint(p, v);
}

/* The same without a look at b's room: the events' columns, whose room
 * mem5_enc_append() made for the events it adds before the next look. */
static inline void uput_var(struct cbuf *b, uint64_t v)
{
	uint8_t *p = b->p + b->len;

	if (v < 0x80) {
		*p = (uint8_t)v;
		b->len++;
		return;
	}
	b->len += put_varint(p, v);
}

/* rev8[x]: the 8 bits of x in the reverse order. */
static const uint8_t rev8[256] = {
#define R2(n) n, n + 2 * 64, n + 1 * 64, n + 3 * 64
#define R4(n) R2(n), R2(n + 2 * 16), R2(n + 1 * 16), R2(n + 3 * 16)
#define R6(n) R4(n), R4(n + 2 * 4), R4(n + 1 * 4), R4(n + 3 * 4)
	R6(0), R6(2), R6(1), R6(3)
#undef R6
#undef R4
#undef R2
};

static inline uint64_t rev64(uint64_t x)
{
	x = (x >> 1 & 0x5555555555555555ull) | (x & 0x5555555555555555ull) << 1;
	x = (x >> 2 & 0x3333333333333333ull) | (x & 0x3333333333333333ull) << 2;
	x = (x >> 4 & 0x0f0f0f0f0f0f0f0full) | (x & 0x0f0f0f0f0f0f0f0full) << 4;
	return __builtin_bswap64(x);
}

/* The m (at most 56) low bits of r, bit 0 first, after those put before
 * (room made for 8 bytes more). */
static inline void bits_put(struct bitw *w, uint64_t r, unsigned int m)
{
	w->acc |= r << w->nb;
	w->nb += m;
	if (w->nb < 8)
		return;
	put_le64(w->b.p + w->b.len, w->acc);
	w->b.len += w->nb >> 3;
	w->acc >>= w->nb & ~7u;
	w->nb &= 7;
}

/* The value v at the end of column c. */
static inline void col_put(struct mem5_enc *m, unsigned int c, uint64_t v)
{
	uput_var(&m->col[c], v);
}

/* The value v at the end of split column c: its bit length k in LEN, its
 * k - 1 bits below the highest in MANT, highest first. */
/* The mantissa of v (k significant bits, k >= 2: the top one implied),
 * reversed, into column c's bit stream. */
static inline __attribute__((always_inline)) void mant_put(struct mem5_enc *m, unsigned int c,
							   uint64_t v, unsigned int k)
{
	uint64_t r;

	if (k < 2)
		return;
	if (k <= 9) { /* bit i: v's bit k - 2 - i */
		bits_put(&m->mant[c], (uint64_t)(rev8[v & 0xff] >> (9 - k)), k - 1);
		return;
	}
	r = rev64(v) >> (65 - k);
	if (k - 1 > 56) {
		bits_put(&m->mant[c], r & 0xffffffffu, 32);
		bits_put(&m->mant[c], r >> 32, k - 1 - 32);
	} else {
		bits_put(&m->mant[c], r, k - 1);
	}
}

static inline __attribute__((always_inline)) void split_put(struct mem5_enc *m, unsigned int c,
							    uint64_t v)
{
	unsigned int k = v ? 64 - (unsigned int)__builtin_clzll(v) : 0;

	m->col[c].p[m->col[c].len++] = (uint8_t)k;
	mant_put(m, c, v, k);
}

/* What nearly every event changes, in locals while mem5_enc_append() runs
 * (mem5_hot_load(), mem5_hot_store()): the columns' bytes are stores
 * through uint8_t pointers, which may alias anything, so that kept in *m
 * every field an event uses was read again after each byte it put. */
struct mem5_hot {
	uint8_t *hdr;  /* where HDR's next byte goes */
	uint8_t *len[MEM5_COL_COUNT]; /* a split column's next LEN byte (REF, AREF,
				       * ADDR and PAIR) */
	uint8_t *dt0, *run0; /* DT's and RUN's next bytes in ns */
	uint64_t prev_addr, run_t0, base_t0, next_t;
	uint32_t nev, run_at0, nrun0, until_check;
};

#define MEM5_HOT_COLS                                                                              \
	(1u << MEM5_COL_REF | 1u << MEM5_COL_AREF | 1u << MEM5_COL_ADDR | 1u << MEM5_COL_PAIR)

static inline __attribute__((always_inline)) void hot_var(uint8_t **pp, uint64_t v)
{
	if (v < 0x80) {
		*(*pp)++ = (uint8_t)v;
		return;
	}
	*pp += put_varint(*pp, v);
}

/* split_put() into one of MEM5_HOT_COLS. */
static inline __attribute__((always_inline)) void hot_split(struct mem5_enc *m,
							    struct mem5_hot *h, unsigned int c,
							    uint64_t v)
{
	unsigned int k = v ? 64 - (unsigned int)__builtin_clzll(v) : 0;

	*h->len[c]++ = (uint8_t)k;
	mant_put(m, c, v, k);
}

/* Room in every column of the events for n events more: the most an event
 * puts into each (see MEM5_EVENT_LEN).  False when out of memory. */
static bool mem5_reserve(struct mem5_enc *m, size_t n)
{
	struct cbuf *b;
	size_t need;
	unsigned int c;

	for (c = 0; c < MEM5_COL_COUNT + 2 * MEM5_UNITS + MEM5_COL_COUNT; c++) {
		if (c < MEM5_COL_COUNT) {
			if (c == MEM5_COL_DT || c == MEM5_COL_RUN)
				continue;
			b = &m->col[c];
			need = MEM5_SPLIT_COLS >> c & 1 ? n : 10 * n;
		} else if (c < MEM5_COL_COUNT + 2 * MEM5_UNITS) {
			unsigned int u = (c - MEM5_COL_COUNT) / 2;

			b = (c - MEM5_COL_COUNT) & 1 ? &m->trun[u] : &m->tdt[u];
			need = 10 * n;
		} else {
			unsigned int k = c - MEM5_COL_COUNT - 2 * MEM5_UNITS;

			if (!(MEM5_SPLIT_COLS >> k & 1))
				continue;
			b = &m->mant[k].b;
			need = 8 * n + 8;
		}
		if (b->cap - b->len < need && (!cbuf_grow(b, need) || (b->len -= need, false)))
			return false;
	}
	return true;
}

static inline size_t bits_len(const struct bitw *w)
{
	return w->b.len + (w->nb ? 1 : 0);
}

/* ---- the block ----------------------------------------------------------- */

/* A hash of (a, b): its low bits index MEM5_CACHE or a table. */
static inline uint32_t mem5_hash(uint64_t a, uint64_t b)
{
	uint64_t h = (a ^ b * 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;

	return (uint32_t)(h >> 32);
}

/* Event nev of the block is at time t (ns), not before the one before:
 * the run of each unit that it does not extend is closed into the unit's
 * columns.  The coarse units' runs change only when the 10 us one does. */
static inline __attribute__((always_inline)) void mem5_time(struct mem5_enc *m,
							    struct mem5_hot *h, uint64_t t)
{
	static const uint64_t unit[MEM5_UNITS] = { 1, 10000, 100000, 1000000 };
	uint64_t tu;
	unsigned int u;

	if (!h->nev) {
		/* the block's first run: delta 0 */
		h->base_t0 = h->run_t0 = t;
		h->run_at0 = 0;
		for (u = 1; u < MEM5_UNITS; u++) {
			m->base_t[u] = m->run_t[u] = t / unit[u];
			m->run_at[u] = 0;
		}
		h->next_t = (t / unit[1] + 1) * unit[1];
		return;
	}
	if (t != h->run_t0) {
		hot_var(&h->dt0, h->run_t0 - h->base_t0);
		hot_var(&h->run0, h->nev - h->run_at0);
		h->nrun0++;
		h->base_t0 = h->run_t0;
		h->run_t0 = t;
		h->run_at0 = h->nev;
	}
	if (__builtin_expect(t < h->next_t, 1))
		return;
	for (u = 1; u < MEM5_UNITS; u++) {
		tu = t / unit[u];
		if (tu == m->run_t[u])
			break; /* and so are the coarser ones */
		uput_var(&m->tdt[u], m->run_t[u] - m->base_t[u]);
		uput_var(&m->trun[u], h->nev - m->run_at[u]);
		m->nrun[u]++;
		m->base_t[u] = m->run_t[u];
		m->run_t[u] = tu;
		m->run_at[u] = h->nev;
	}
	h->next_t = (t / unit[1] + 1) * unit[1];
}

static inline void mem5_hot_load(const struct mem5_enc *m, struct mem5_hot *h)
{
	unsigned int c;

	h->hdr = m->col[MEM5_COL_HDR].p + m->col[MEM5_COL_HDR].len;
	for (c = 0; c < MEM5_COL_COUNT; c++)
		if (MEM5_HOT_COLS >> c & 1)
			h->len[c] = m->col[c].p + m->col[c].len;
	h->dt0 = m->tdt[0].p + m->tdt[0].len;
	h->run0 = m->trun[0].p + m->trun[0].len;
	h->prev_addr = m->prev_addr;
	h->run_t0 = m->run_t[0];
	h->base_t0 = m->base_t[0];
	h->next_t = m->next_t;
	h->nev = m->nev;
	h->run_at0 = m->run_at[0];
	h->nrun0 = m->nrun[0];
	h->until_check = m->until_check;
}

static inline void mem5_hot_store(struct mem5_enc *m, const struct mem5_hot *h)
{
	unsigned int c;

	m->col[MEM5_COL_HDR].len = (size_t)(h->hdr - m->col[MEM5_COL_HDR].p);
	for (c = 0; c < MEM5_COL_COUNT; c++)
		if (MEM5_HOT_COLS >> c & 1)
			m->col[c].len = (size_t)(h->len[c] - m->col[c].p);
	m->tdt[0].len = (size_t)(h->dt0 - m->tdt[0].p);
	m->trun[0].len = (size_t)(h->run0 - m->trun[0].p);
	m->prev_addr = h->prev_addr;
	m->run_t[0] = h->run_t0;
	m->base_t[0] = h->base_t0;
	m->next_t = h->next_t;
	m->nev = h->nev;
	m->run_at[0] = h->run_at0;
	m->nrun[0] = h->nrun0;
	m->until_check = h->until_check;
}

static void mem5_enc_reset(struct mem5_enc *m)
{
	unsigned int c;

	for (c = 0; c < MEM5_COL_COUNT; c++) {
		m->col[c].len = 0;
		m->mant[c].b.len = 0;
		m->mant[c].acc = 0;
		m->mant[c].nb = 0;
	}
	memset(m->hcnt, 0, sizeof(m->hcnt));
	for (c = 0; c < MEM5_UNITS; c++) {
		m->tdt[c].len = m->trun[c].len = 0;
		m->run_at[c] = m->nrun[c] = 0;
	}
	m->nev = 0;
	m->prev_addr = 0;
	m->nallocs = m->nfrees = m->npairs = 0;
	m->until_check = 0;
	if (++m->gen == 0) { /* after 4 G blocks: clear them once */
		memset(m->alloc, 0, sizeof(m->alloc));
		memset(m->freed, 0, sizeof(m->freed));
		m->gen = 1;
	}
	memset(m->ftail, 0, sizeof(m->ftail));
	wlive_reset(&m->lv);
	if (m->pair)
		memset(m->pair, 0, ((size_t)m->pair_mask + 1) * sizeof(*m->pair));
	memset(m->pcache, 0, sizeof(m->pcache));
	if (m->stk)
		memset(m->stk, 0, ((size_t)m->stk_mask + 1) * sizeof(*m->stk));
	m->nstks = 0;
}

struct mem5_enc *mem5_enc_new(void)
{
	struct mem5_enc *m = calloc(1, sizeof(struct mem5_enc));

	if (m)
		m->gen = 1;
	return m;
}

void mem5_enc_free(struct mem5_enc *m)
{
	unsigned int c;

	if (!m)
		return;
	for (c = 0; c < MEM5_COL_COUNT; c++) {
		free(m->col[c].p);
		free(m->mant[c].b.p);
	}
	for (c = 0; c < MEM5_UNITS; c++) {
		free(m->tdt[c].p);
		free(m->trun[c].p);
	}
	for (c = 0; c < 3; c++)
		free(m->hs[c].p);
	free(m->pair);
	free(m->stk);
	free(m->fl);
	free(m->lv.w);
	free(m->lv.t);
	free(m);
}

/* The slot of (size, stack) in a table of n entries (*tab, *mask + 1
 * slots): its own, or the empty one where it goes; NULL when the table
 * cannot grow. */
static struct mem5_pair_slot *mem5_slot(struct mem5_pair_slot **tab, uint32_t *mask, uint32_t n,
					uint64_t size, uint32_t stack)
{
	struct mem5_pair_slot *t, *o, *p = *tab;
	size_t ns, i, j;

	if (__builtin_expect(!p || n >= (*mask + 1) / 2, 0)) {
		ns = p ? ((size_t)*mask + 1) * 2 : 1024;
		t = calloc(ns, sizeof(*t));
		if (!t)
			return NULL;
		for (i = 0; p && i <= *mask; i++) {
			o = &p[i];
			if (!o->idx)
				continue;
			for (j = mem5_hash(o->size, o->stack) & (ns - 1); t[j].idx;
			     j = (j + 1) & (ns - 1))
				;
			t[j] = *o;
		}
		free(p);
		*tab = p = t;
		*mask = (uint32_t)(ns - 1);
	}
	for (i = mem5_hash(size, stack) & *mask; p[i].idx; i = (i + 1) & *mask)
		if (p[i].size == size && p[i].stack == stack)
			break;
	return &p[i];
}

size_t mem5_enc_len(const struct mem5_enc *m)
{
	size_t n = 16 + 10 * MEM5_STREAMS + 40, c;

	/* a split column: a byte a value and the MANT bits */
	for (c = 0; c < MEM5_COL_COUNT; c++)
		n += MEM5_SPLIT_COLS >> c & 1 ? m->col[c].len + bits_len(&m->mant[c]) : m->col[c].len;
	n += m->nev / 4 + 1 + 32; /* HDR packed: 2 bits more at most, a palette */
	for (c = 0; c < MEM5_UNITS; c++)
		n += m->tdt[c].len + m->trun[c].len;
	return n;
}

/* Free ord (1-based) of the block, of class bin, at the end of its
 * class's unclaimed frees. */
static void mem5_free_add(struct mem5_enc *m, unsigned int bin)
{
	struct mem5_free *f;
	uint32_t o = m->nfrees, c;

	if (__builtin_expect(o >= m->fl_cap, 0)) {
		c = m->fl_cap ? m->fl_cap * 2 : 4096;
		f = realloc(m->fl, ((size_t)c + 1) * sizeof(*f));
		if (!f) {
			m->oom = true; /* the block cannot be written */
			return;
		}
		m->fl = f;
		m->fl_cap = c;
	}
	f = &m->fl[o];
	f->bin = (uint16_t)bin;
	f->claimed = 0;
	f->next = 0;
	f->prev = m->ftail[bin];
	if (f->prev)
		m->fl[f->prev].next = o;
	m->ftail[bin] = o;
}

/* The AREF value of an alloc of class bin at the address of free o: its
 * rank among the unclaimed frees of bin when near enough (even), else
 * among all the block's frees (odd). */
static uint64_t mem5_claim_rank(const struct mem5_enc *m, uint32_t o, unsigned int bin)
{
	uint32_t i = m->ftail[bin], k;

	if (i == o) /* the last free of its class (what allocators hand out) */
		return 2;
	if (o <= m->fl_cap && !m->fl[o].claimed && m->fl[o].bin == bin)
		for (k = 1; i && k <= MEM5_CLAIM_MAX; k++, i = m->fl[i].prev)
			if (i == o)
				return (uint64_t)k << 1;
	return (uint64_t)(m->nfrees - o + 1) << 1 | 1;
}

/* Free o is claimed by an alloc: off its class's unclaimed list. */
static void mem5_claim(struct mem5_enc *m, uint32_t o)
{
	struct mem5_free *f;

	if (o > m->fl_cap || m->fl[o].claimed)
		return;
	f = &m->fl[o];
	f->claimed = 1;
	if (f->next)
		m->fl[f->next].prev = f->prev;
	else
		m->ftail[f->bin] = f->prev;
	if (f->prev)
		m->fl[f->prev].next = f->next;
}

/* The same for free o, the last unclaimed one of its class bin. */
static inline void mem5_claim_last(struct mem5_enc *m, uint32_t o, unsigned int bin)
{
	uint32_t p = m->fl[o].prev;

	m->fl[o].claimed = 1;
	m->ftail[bin] = p;
	if (p)
		m->fl[p].next = 0;
}

/* The bytes of a varint of bit length k (0 to 64). */
static const uint8_t varint_bytes[65] = {
	1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3,
	4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7,
	7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 10,
};

static inline unsigned int varint_len(uint64_t v)
{
	return varint_bytes[v ? 64 - __builtin_clzll(v) : 0];
}

static inline __attribute__((always_inline)) void mem5_event(struct mem5_enc *m,
							    struct mem5_hot *hot,
							    const struct cygprof_mem_event *e)
{
	uint64_t d = e->addr - hot->prev_addr, hdr, form = MEM5_FORM_ADDR, ref = 0, t = e->ts_ns;

	struct mem5_pair_slot *ps, *pc;
	unsigned int bin;
	uint32_t h, o;

	mem5_time(m, hot, t);
	hot->nev++;
	if (!(d & 15)) {
		form = MEM5_FORM_ADDR16;
		d = d >> 4 | (0 - (d >> 63)) << 60; /* arithmetic shift, exact */
	}
	d = zigzag(d);
	/* a free refers to the allocation of its address, an allocation to
	 * the free of its address (allocators hand out what was just freed,
	 * of its size class: counted among the frees of its class when the
	 * block says the free's size) */
	h = mem5_hash(e->addr, 0) & (MEM5_CACHE - 1);
	o = m->alloc[h].gen == m->gen ? m->alloc[h].ord : 0;
	if (e->op == CYGPROF_MEM_FREE && o && m->alloc[h].addr == e->addr && wlive_is(&m->lv, o)) {
		/* its rank among the block's allocations still live, from the last */
		ref = wlive_rank(&m->lv, o);
	} else if (e->op == CYGPROF_MEM_ALLOC && m->freed[h].gen == m->gen && m->freed[h].ord &&
		   m->freed[h].addr == e->addr) {
		bin = capture_mem5_bin(e->size);
		ref = mem5_claim_rank(m, m->freed[h].ord, bin);
	}
	if (ref && (ref < 0x80 || varint_len(ref) <= varint_len(d))) {
		form = MEM5_FORM_REF;
		if (e->op != CYGPROF_MEM_ALLOC)
			wlive_del(&m->lv, o);
		else if (ref == 2) /* the last of its class's list: off its end */
			mem5_claim_last(m, m->freed[h].ord, bin);
		else
			mem5_claim(m, m->freed[h].ord);
	}
	hdr = (uint64_t)e->flags << MEM5_FLAGS_SHIFT | form << MEM5_FORM_SHIFT |
	      (uint64_t)e->fn << MEM_HDR_FN_SHIFT | e->op;
	hot_var(&hot->hdr, hdr);
	if (hdr < 128)
		m->hcnt[hdr]++;
	if (form == MEM5_FORM_REF)
		if (e->op == CYGPROF_MEM_FREE)
			hot_split(m, hot, MEM5_COL_REF, ref);
		else
			hot_split(m, hot, MEM5_COL_AREF, ref);
	else
		hot_split(m, hot, MEM5_COL_ADDR, d);
	hot->prev_addr = e->addr;
	if (e->op != CYGPROF_MEM_ALLOC) {
		bin = form == MEM5_FORM_REF ? capture_mem5_bin(m->alloc[h].size) : MEM5_BIN_NONE;
		m->nfrees++;
		m->freed[h].addr = e->addr;
		m->freed[h].ord = m->nfrees;
		m->freed[h].gen = m->gen;
		mem5_free_add(m, bin);
		return;
	}
	pc = &m->pcache[e->stack & 63];
	if (pc->idx && pc->stack == e->stack && pc->size == e->size) {
		hot_split(m, hot, MEM5_COL_PAIR, pc->idx);
		goto alloc_done;
	}
	ps = mem5_slot(&m->pair, &m->pair_mask, m->npairs, e->size, e->stack);
	if (ps && ps->idx) {
		hot_split(m, hot, MEM5_COL_PAIR, ps->idx);
		*pc = *ps;
	} else {
		/* new (or not kept when out of memory: the table may repeat it),
		 * its stack by its index among the block's */
		hot_split(m, hot, MEM5_COL_PAIR, 0);
		col_put(m, MEM5_COL_NEW, e->size);
		if (ps) {
			ps->size = e->size;
			ps->stack = e->stack;
			ps->idx = m->npairs + 1;
		}
		m->npairs++;
		ps = mem5_slot(&m->stk, &m->stk_mask, m->nstks, 0, e->stack);
		if (ps && ps->idx) {
			split_put(m, MEM5_COL_SREF, ps->idx - 1);
		} else {
			split_put(m, MEM5_COL_SREF, m->nstks);
			col_put(m, MEM5_COL_SNEW, e->stack);
			if (ps) {
				ps->stack = e->stack;
				ps->idx = m->nstks + 1;
			}
			m->nstks++;
		}
	}
alloc_done:
	m->nallocs++;
	if (wlive_room(&m->lv, m->nallocs))
		wlive_add(&m->lv, m->nallocs);
	else
		m->oom = true; /* the block cannot be written */
	m->alloc[h].addr = e->addr;
	m->alloc[h].size = e->size;
	m->alloc[h].ord = m->nallocs;
	m->alloc[h].gen = m->gen;
}

size_t mem5_enc_append(struct mem5_enc *m, const struct cygprof_mem_event *ev, size_t n,
		       size_t reserve, int *err)
{
	struct mem5_hot h;
	size_t i, len, more;

	mem5_hot_load(m, &h);
	for (i = 0; i < n; i++) {
		if (!h.until_check) {
			mem5_hot_store(m, &h);
			len = mem5_enc_len(m);
			if (len + reserve > CAPTURE_MEM5_RAW_MAX && m->nev)
				return i;
			/* the events that surely fit after this one before the
			 * next look, and room for them all (the columns may
			 * move) */
			more = len + reserve < CAPTURE_MEM5_RAW_MAX
				       ? (CAPTURE_MEM5_RAW_MAX - reserve - len) / MEM5_EVENT_LEN
				       : 0;
			if (m->oom || !mem5_reserve(m, more + 1)) {
				m->oom = true;
				*err = -ENOMEM;
				return i;
			}
			mem5_hot_load(m, &h);
			h.until_check = (uint32_t)more;
		} else {
			h.until_check--;
		}
		mem5_event(m, &h, &ev[i]);
	}
	mem5_hot_store(m, &h);
	return i;
}

/* HDR's varints (n bytes at p, nval of them) as the streams of a packed
 * HDR: hs[0] PAL (varint(count), the headers), hs[1] PACK (2 bits an event
 * from the lowest: its index in PAL, else 3 and its header in ESC), hs[2]
 * ESC; true when they are worth storing. */
static bool mem5_pack_hdr(struct mem5_enc *m, const uint8_t *p, size_t n, uint32_t nval)
{
	struct cbuf *hs = m->hs;
	uint32_t cnt[128], cnt_esc = 0, i, j, best;
	uint8_t slot_of[128], *o, acc;
	unsigned int npal = 0, slot, k;
	uint64_t v, pal[MEM5_PAL_MAX];
	size_t off = 0;

	for (i = 0; i < 3; i++) {
		hs[i].len = 0;
		hs[i].oom = false;
	}
	memcpy(cnt, m->hcnt, sizeof(cnt));
	/* the most frequent headers (the lowest of equal counts) */
	for (j = 0; j < MEM5_PAL_MAX; j++) {
		for (i = best = 0; i < 128; i++)
			if (cnt[i] > cnt[best])
				best = i;
		if (!cnt[best])
			break;
		pal[npal++] = best;
		cnt[best] = 0;
	}
	/* a palette packed nearly every event, or it is not worth it (a
	 * varied HDR compresses better as it is: zstd finds its repeats) */
	for (j = 0, i = 0; j < npal; j++)
		i += m->hcnt[pal[j]];
	if (nval - i > nval / 32)
		return false;
	put_var(&hs[0], npal);
	for (j = 0; j < npal; j++)
		put_var(&hs[0], pal[j]);
	memset(slot_of, 3, sizeof(slot_of));
	for (j = 0; j < npal; j++)
		slot_of[pal[j]] = (uint8_t)j;
	o = room(&hs[1], nval / 4 + 1);
	if (!o)
		return false;
	for (k = 0, acc = 0; off < n;) {
		if (p[off] < 0x80) {
			v = p[off++];
			slot = slot_of[v];
		} else {
			if (!get_varint(p, n, &off, &v))
				break;
			slot = 3;
		}
		if (slot == 3) {
			put_var(&hs[2], v);
			cnt_esc++;
		}
		acc |= (uint8_t)(slot << (2 * k));
		if (++k == 4) {
			*o++ = acc;
			acc = 0;
			k = 0;
		}
	}
	if (k)
		*o++ = acc;
	hs[1].len = (size_t)(o - hs[1].p);
	return cnt_esc <= nval / 32 && !hs[0].oom && !hs[2].oom;
}

int mem5_enc_block(struct mem5_enc *m, struct cbuf *b, uint32_t count, uint64_t first,
		   bool ns, uint64_t *first_ts)
{
	struct cbuf *dt, *run;
	unsigned int u = 0, c;
	uint8_t tail[2][10], last;
	size_t tn[2];
	uint64_t unit = 1;
	bool pack, oom = m->oom;

	/* the unit: ns, else the finest whose runs are long enough */
	if (!ns) {
		for (u = 1; u < MEM5_UNITS; u++)
			if (count / MEM5_RUN_EVENTS >= (uint64_t)m->nrun[u] + 1)
				break;
		/* and whose first time is not before the last of the block
		 * before (10 us is not: that one was in 10 us or coarser) */
		for (u = u == MEM5_UNITS ? 1 : u; u > 1; u--)
			if (first / capture_mem5_unit_ns(u) * capture_mem5_unit_ns(u) >= m->floor_ts)
				break;
		unit = capture_mem5_unit_ns(u);
	}
	dt = &m->tdt[u];
	run = &m->trun[u];

	/* the open run, which later events of the block may still extend */
	tn[0] = put_varint(tail[0], m->run_t[u] - m->base_t[u]);
	tn[1] = put_varint(tail[1], m->nev - m->run_at[u]);
	b->len = 0;
	pack = mem5_pack_hdr(m, m->col[MEM5_COL_HDR].p, m->col[MEM5_COL_HDR].len,
			     m->nev);
	put_var(b, (ns ? MEM5_BLOCK_NS : (uint64_t)u << MEM5_BLOCK_UNIT_SHIFT) | MEM5_BLOCK_SPLIT |
			   MEM5_BLOCK_CLAIM | MEM5_BLOCK_LIVE | (pack ? MEM5_BLOCK_PACK : 0));
	for (c = 0; c < MEM5_COL_COUNT; c++) {
		if (c == MEM5_COL_HDR && pack) {
			put_var(b, m->hs[0].len);
			put_var(b, m->hs[1].len);
			put_var(b, m->hs[2].len);
		} else if (MEM5_SPLIT_COLS >> c & 1) {
			put_var(b, m->col[c].len);
			put_var(b, bits_len(&m->mant[c]));
		} else {
			put_var(b, c == MEM5_COL_DT    ? dt->len + tn[0]
				   : c == MEM5_COL_RUN ? run->len + tn[1]
						       : m->col[c].len);
		}
	}
	for (c = 0; c < MEM5_COL_COUNT; c++) {
		if (c == MEM5_COL_HDR && pack) {
			cbuf_bytes(b, m->hs[0].p, m->hs[0].len);
			cbuf_bytes(b, m->hs[1].p, m->hs[1].len);
			cbuf_bytes(b, m->hs[2].p, m->hs[2].len);
		} else if (c == MEM5_COL_DT) {
			cbuf_bytes(b, dt->p, dt->len);
			cbuf_bytes(b, tail[0], tn[0]);
		} else if (c == MEM5_COL_RUN) {
			cbuf_bytes(b, run->p, run->len);
			cbuf_bytes(b, tail[1], tn[1]);
		} else if (MEM5_SPLIT_COLS >> c & 1) {
			cbuf_bytes(b, m->col[c].p, m->col[c].len);
			cbuf_bytes(b, m->mant[c].b.p, m->mant[c].b.len);
			if (m->mant[c].nb) {
				last = (uint8_t)m->mant[c].acc;
				cbuf_bytes(b, &last, 1);
			}
		} else {
			cbuf_bytes(b, m->col[c].p, m->col[c].len);
		}
	}
	for (c = 0; c < MEM5_COL_COUNT; c++)
		if (m->col[c].oom || m->mant[c].b.oom)
			oom = true;
	for (c = 0; c < MEM5_UNITS; c++)
		if (m->tdt[c].oom || m->trun[c].oom)
			oom = true;
	if (oom || b->oom || m->hs[1].oom) {
		b->oom = false;
		return -ENOMEM;
	}
	*first_ts = first / unit * unit;
	m->last_dec = m->run_t[u] * unit;
	return 0;
}

void mem5_enc_next_block(struct mem5_enc *m)
{
	m->floor_ts = m->last_dec;
	mem5_enc_reset(m);
}
