/* SPDX-License-Identifier: MIT */
/* net-proto.c - encoding of capture-writer calls as frames and their replay
 * (docs/remote.md "Frames"). */
#include "net-proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define NETP_NOSTR UINT32_MAX /* a NULL string */

/* The bulk records (events, memory events, tree nodes) have no padding: on a
 * little-endian machine their memory is their wire form, copied whole (the
 * timeline streams tens of millions of events). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NETP_RAW(type, rec) (sizeof(type) == (rec))
#else
#define NETP_RAW(type, rec) 0
#endif

/* ---- encoder ------------------------------------------------------------ */

static int enc_reserve(struct netp_enc *e, size_t more)
{
	if (e->err)
		return e->err;
	if (e->len + more <= e->cap)
		return 0;
	size_t cap = e->cap ? e->cap : 4096;
	while (cap < e->len + more)
		cap *= 2;
	uint8_t *p = realloc(e->buf, cap);
	if (!p)
		return e->err = -ENOMEM;
	e->buf = p;
	e->cap = cap;
	return 0;
}

static void put_bytes(struct netp_enc *e, const void *p, size_t n)
{
	if (enc_reserve(e, n))
		return;
	memcpy(e->buf + e->len, p, n);
	e->len += n;
}

static inline void wr32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline void wr64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static void put_u8(struct netp_enc *e, uint8_t v) { put_bytes(e, &v, 1); }
static void put_u16(struct netp_enc *e, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
	put_bytes(e, b, 2);
}
static void put_u32(struct netp_enc *e, uint32_t v)
{
	uint8_t b[4];
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put_bytes(e, b, 4);
}
static void put_u64(struct netp_enc *e, uint64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put_bytes(e, b, 8);
}
static void put_str(struct netp_enc *e, const char *s)
{
	if (!s) {
		put_u32(e, NETP_NOSTR);
		return;
	}
	size_t n = strlen(s);
	if (n >= NETP_MAX_FRAME) {
		if (!e->err)
			e->err = -EINVAL;
		return;
	}
	put_u32(e, (uint32_t)n);
	put_bytes(e, s, n);
}

/* Start a frame: its header, with the length patched by frame_end(). */
static size_t frame_start(struct netp_enc *e, uint32_t type)
{
	size_t at = e->len;
	put_u32(e, 0);
	put_u16(e, (uint16_t)type);
	put_u16(e, 0);
	return at;
}

/* The buffer as one ZBATCH frame in zbuf: its size, or 0 when it is not
 * worth it (small, incompressible, too large, out of memory: sent as is). */
static size_t enc_zip(struct netp_enc *e)
{
	if (e->len < NETP_ZMIN || e->len > NETP_MAX_FRAME)
		return 0;
	size_t need = NETP_HDR + 4 + ZSTD_compressBound(e->len);
	if (need > e->zcap) {
		uint8_t *p = realloc(e->zbuf, need);
		if (!p)
			return 0;
		e->zbuf = p;
		e->zcap = need;
	}
	if (!e->zc && !(e->zc = ZSTD_createCCtx()))
		return 0;
	size_t z = ZSTD_compressCCtx(e->zc, e->zbuf + NETP_HDR + 4, e->zcap - NETP_HDR - 4,
				     e->buf, e->len, e->compress);
	if (ZSTD_isError(z) || z + 4 + NETP_HDR >= e->len || z + 4 > NETP_MAX_FRAME)
		return 0;
	uint32_t plen = (uint32_t)z + 4, raw = (uint32_t)e->len;
	for (int i = 0; i < 4; i++) {
		e->zbuf[i] = (uint8_t)(plen >> (8 * i));
		e->zbuf[NETP_HDR + i] = (uint8_t)(raw >> (8 * i));
	}
	e->zbuf[4] = (uint8_t)NETP_T_ZBATCH;
	e->zbuf[5] = (uint8_t)(NETP_T_ZBATCH >> 8);
	e->zbuf[6] = e->zbuf[7] = 0;
	return NETP_HDR + plen;
}

static int enc_flush(struct netp_enc *e)
{
	if (e->err || !e->flush || !e->len)
		return e->err;
	size_t zn = e->compress ? enc_zip(e) : 0;
	int r = zn ? e->flush(e->arg, e->zbuf, zn) : e->flush(e->arg, e->buf, e->len);
	if (r < 0)
		return e->err = r;
	e->sent += zn ? zn : e->len;
	e->raw += e->len;
	e->len = 0;
	return 0;
}

static int frame_end(struct netp_enc *e, size_t at, int flush)
{
	if (e->err)
		return e->err;
	size_t plen = e->len - at - NETP_HDR;
	if (plen > NETP_MAX_FRAME) {
		e->len = at;
		return e->err = -EINVAL;
	}
	for (int i = 0; i < 4; i++)
		e->buf[at + i] = (uint8_t)(plen >> (8 * i));
	if (flush || e->len >= NETP_FLUSH_AT)
		return enc_flush(e);
	return 0;
}

/* Records of rec bytes that fit one array frame (u32 id, u32 count). */
static size_t per_frame(const struct netp_enc *e, size_t rec)
{
	size_t max = e->max_frame && e->max_frame < NETP_MAX_FRAME ? e->max_frame : NETP_MAX_FRAME;
	return max >= 8 + rec ? (max - 8) / rec : 1;
}

static int ns_begin(void *s)
{
	struct netp_enc *e = s;
	return frame_end(e, frame_start(e, NETP_T_BEGIN), 0);
}

static int ns_commit(void *s)
{
	struct netp_enc *e = s;
	return frame_end(e, frame_start(e, NETP_T_COMMIT), 1);
}

static int ns_set_meta(void *s, const char *k, const char *v)
{
	struct netp_enc *e = s;
	size_t at = frame_start(e, NETP_T_META);
	put_str(e, k);
	put_str(e, v);
	return frame_end(e, at, 0);
}

static int ns_put_proc(void *s, const struct cygprof_proc *p)
{
	struct netp_enc *e = s;
	size_t at = frame_start(e, NETP_T_PROC);
	put_u32(e, p->idx);
	put_u32(e, p->pid);
	put_u32(e, p->ppid);
	put_u32(e, p->parent_idx);
	put_u64(e, p->start_ns);
	put_u64(e, p->end_ns);
	put_u32(e, p->end_kind);
	put_u32(e, (uint32_t)p->end_code);
	put_str(e, p->command);
	put_str(e, p->exe);
	return frame_end(e, at, 0);
}

static int ns_put_thread(void *s, const struct cygprof_thread *t)
{
	struct netp_enc *e = s;
	size_t at = frame_start(e, NETP_T_THREAD);
	put_u32(e, t->idx);
	put_u32(e, t->proc_idx);
	put_u32(e, t->tid);
	put_u32(e, t->flags);
	put_u64(e, t->start_ns);
	put_u64(e, t->end_ns);
	put_u64(e, t->calls);
	put_u64(e, t->events);
	put_u64(e, t->lost);
	put_u64(e, t->waits);
	put_u64(e, t->wait_ns);
	put_u64(e, t->unpaired);
	put_u64(e, t->unwound);
	put_bytes(e, t->name, sizeof t->name);
	put_u64(e, t->overflow);
	put_u64(e, t->sig_lost);
	put_u64(e, t->mem_lost);
	return frame_end(e, at, 0);
}

/* Array frames: u32 id (when the call has one), u32 count, the records;
 * flags e->part (NETP_F_MORE for a part of a split tree or sites frame). */
static size_t array_start(struct netp_enc *e, uint32_t type, int has_id, uint32_t id, size_t n)
{
	size_t at = frame_start(e, type);
	if (!e->err)
		e->buf[at + 6] = (uint8_t)e->part;
	if (has_id)
		put_u32(e, id);
	if (n > UINT32_MAX && !e->err)
		e->err = -EINVAL;
	put_u32(e, (uint32_t)n);
	return at;
}

static int tree_one(void *s, uint32_t t, const struct cygprof_node *v, size_t n)
{
	struct netp_enc *e = s;
	size_t at = array_start(e, NETP_T_TREE, 1, t, n);
	if (NETP_RAW(*v, 40) && n)
		put_bytes(e, v, n * sizeof *v);
	else
		for (size_t i = 0; i < n && !e->err; i++) {
			put_u32(e, v[i].parent);
			put_u32(e, v[i].flags);
			put_u64(e, v[i].fn);
			put_u64(e, v[i].site);
			put_u64(e, v[i].calls);
			put_u64(e, v[i].total_ns);
		}
	return frame_end(e, at, 0);
}

/* Past the frame size: parts flagged NETP_F_MORE but the last, which
 * the receiver joins (netp_join()) before the call. */
static int ns_put_tree(void *s, uint32_t t, const struct cygprof_node *v, size_t n)
{
	struct netp_enc *e = s;
	size_t k = per_frame(e, 40);
	int rc = 0;

	e->part = NETP_F_MORE;
	for (; n > k; v += k, n -= k)
		if ((rc = tree_one(s, t, v, k)) < 0)
			break;
	e->part = 0;
	return n > k ? rc : tree_one(s, t, v, n);
}

static int sites_one(void *s, uint32_t t, const struct cygprof_callsite *v, size_t n)
{
	struct netp_enc *e = s;
	size_t at = array_start(e, NETP_T_SITES, 1, t, n);
	for (size_t i = 0; i < n && !e->err; i++) {
		put_u32(e, v[i].node);
		put_u32(e, v[i].flags);
		put_u64(e, v[i].site);
		put_u64(e, v[i].calls);
		put_u64(e, v[i].total_ns);
	}
	return frame_end(e, at, 0);
}

/* Past the frame size: parts flagged NETP_F_MORE but the last, which
 * the receiver joins (netp_join()) before the call. */
static int ns_put_sites(void *s, uint32_t t, const struct cygprof_callsite *v, size_t n)
{
	struct netp_enc *e = s;
	size_t k = per_frame(e, 32);
	int rc = 0;

	e->part = NETP_F_MORE;
	for (; n > k; v += k, n -= k)
		if ((rc = sites_one(s, t, v, k)) < 0)
			break;
	e->part = 0;
	return n > k ? rc : sites_one(s, t, v, n);
}

static int events_one(void *s, uint32_t t, const struct cygprof_event *v, size_t n)
{
	struct netp_enc *e = s;
	size_t at = array_start(e, NETP_T_EVENTS, 1, t, n);
	/* each time as the step from the one before (the first: from 0),
	 * modulo 2^64: mostly small numbers, which zstd shrinks well */
	if (!enc_reserve(e, n * 16)) {
		uint8_t *p = e->buf + e->len;
		uint64_t prev = 0;
		for (size_t i = 0; i < n; i++, p += 16) {
			wr64(p, v[i].ts_ns - prev);
			wr32(p + 8, v[i].node);
			wr32(p + 12, v[i].kind);
			prev = v[i].ts_ns;
		}
		e->len += n * 16;
	}
	return frame_end(e, at, 0);
}

/* Past the frame size: several frames (an append is the same in parts). */
static int ns_append_events(void *s, uint32_t t, const struct cygprof_event *v, size_t n)
{
	struct netp_enc *e = s;
	size_t k = per_frame(e, 16);
	int rc;

	for (; n > k; v += k, n -= k)
		if ((rc = events_one(s, t, v, k)) < 0)
			return rc;
	return events_one(s, t, v, n);
}

static int ns_put_object(void *s, const struct cygprof_object *o)
{
	struct netp_enc *e = s;
	size_t at = frame_start(e, NETP_T_OBJECT);
	put_u32(e, o->idx);
	put_u32(e, o->proc_idx);
	put_u64(e, o->start);
	put_u64(e, o->end);
	put_u64(e, o->bias);
	put_u32(e, o->build_id_len);
	put_bytes(e, o->build_id, sizeof o->build_id);
	put_str(e, o->path);
	return frame_end(e, at, 0);
}

static int ns_put_symbol(void *s, const struct cygprof_symbol *sym)
{
	struct netp_enc *e = s;
	size_t at = frame_start(e, NETP_T_SYMBOL);
	put_u32(e, sym->proc_idx);
	put_u32(e, sym->object_idx);
	put_u64(e, sym->addr);
	put_u64(e, sym->size);
	put_str(e, sym->name);
	return frame_end(e, at, 0);
}

static int mem_one(void *s, uint32_t t, const struct cygprof_mem_event *v, size_t n)
{
	struct netp_enc *e = s;
	size_t at = array_start(e, NETP_T_MEM, 1, t, n);
	if (NETP_RAW(*v, 32) && n)
		put_bytes(e, v, n * sizeof *v);
	else
		for (size_t i = 0; i < n && !e->err; i++) {
			put_u64(e, v[i].ts_ns);
			put_u64(e, v[i].addr);
			put_u64(e, v[i].size);
			put_u32(e, v[i].stack);
			put_u8(e, v[i].op);
			put_u8(e, v[i].fn);
			put_u16(e, v[i].flags);
		}
	return frame_end(e, at, 0);
}

/* Past the frame size: several frames (an append is the same in parts). */
static int ns_append_mem(void *s, uint32_t t, const struct cygprof_mem_event *v, size_t n)
{
	struct netp_enc *e = s;
	size_t k = per_frame(e, 32);
	int rc;

	for (; n > k; v += k, n -= k)
		if ((rc = mem_one(s, t, v, k)) < 0)
			return rc;
	return mem_one(s, t, v, n);
}

static int stacks_one(void *s, const struct cygprof_stack_node *v, size_t n)
{
	struct netp_enc *e = s;
	size_t at = array_start(e, NETP_T_STACKS, 0, 0, n);
	for (size_t i = 0; i < n && !e->err; i++) {
		put_u32(e, v[i].id);
		put_u32(e, v[i].parent);
		put_u32(e, v[i].proc_idx);
		put_u32(e, v[i].kind);
		put_u64(e, v[i].addr);
	}
	return frame_end(e, at, 0);
}

/* Past the frame size: several frames (an append is the same in parts). */
static int ns_put_stacks(void *s, const struct cygprof_stack_node *v, size_t n)
{
	struct netp_enc *e = s;
	size_t k = per_frame(e, 24);
	int rc;

	for (; n > k; v += k, n -= k)
		if ((rc = stacks_one(s, v, k)) < 0)
			return rc;
	return stacks_one(s, v, n);
}

static int ns_put_counter(void *s, const struct cygprof_counter *c)
{
	struct netp_enc *e = s;
	size_t at = frame_start(e, NETP_T_COUNTER);
	put_u32(e, c->id);
	put_u32(e, c->proc_idx);
	put_u32(e, c->unit);
	put_u32(e, c->flags);
	put_str(e, c->name);
	return frame_end(e, at, 0);
}

static int samples_one(void *s, uint32_t id, const struct cygprof_sample *v, size_t n)
{
	struct netp_enc *e = s;
	size_t at = array_start(e, NETP_T_SAMPLES, 1, id, n);
	for (size_t i = 0; i < n && !e->err; i++) {
		put_u64(e, v[i].t_ns);
		put_u64(e, (uint64_t)v[i].value);
	}
	return frame_end(e, at, 0);
}

/* Past the frame size: several frames (an append is the same in parts). */
static int ns_append_samples(void *s, uint32_t id, const struct cygprof_sample *v, size_t n)
{
	struct netp_enc *e = s;
	size_t k = per_frame(e, 16);
	int rc;

	for (; n > k; v += k, n -= k)
		if ((rc = samples_one(s, id, v, k)) < 0)
			return rc;
	return samples_one(s, id, v, n);
}

static int psamples_one(void *s, const struct cygprof_psample *v, size_t n)
{
	struct netp_enc *e = s;
	size_t at = array_start(e, NETP_T_PSAMPLES, 0, 0, n);
	for (size_t i = 0; i < n && !e->err; i++) {
		put_u64(e, v[i].t_ns);
		put_u64(e, v[i].weight_ns);
		put_u64(e, v[i].rr_ticks);
		put_u32(e, v[i].thread_idx);
		put_u32(e, v[i].pid);
		put_u32(e, v[i].tid);
		put_u32(e, v[i].stack);
		put_u32(e, v[i].flags);
		put_u32(e, v[i].pad);
	}
	return frame_end(e, at, 0);
}

/* Past the frame size: several frames (an append is the same in parts). */
static int ns_append_psamples(void *s, const struct cygprof_psample *v, size_t n)
{
	struct netp_enc *e = s;
	size_t k = per_frame(e, 48);
	int rc;

	for (; n > k; v += k, n -= k)
		if ((rc = psamples_one(s, v, k)) < 0)
			return rc;
	return psamples_one(s, v, n);
}

static int offcpu_one(void *s, const struct cygprof_offcpu *v, size_t n)
{
	struct netp_enc *e = s;
	size_t at = array_start(e, NETP_T_OFFCPU, 0, 0, n);
	for (size_t i = 0; i < n && !e->err; i++) {
		put_u64(e, v[i].start_ns);
		put_u64(e, v[i].end_ns);
		put_u32(e, v[i].thread_idx);
		put_u32(e, v[i].tid);
		put_u32(e, v[i].stack);
		put_u32(e, v[i].flags);
	}
	return frame_end(e, at, 0);
}

/* Past the frame size: several frames (an append is the same in parts). */
static int ns_append_offcpu(void *s, const struct cygprof_offcpu *v, size_t n)
{
	struct netp_enc *e = s;
	size_t k = per_frame(e, 32);
	int rc;

	for (; n > k; v += k, n -= k)
		if ((rc = offcpu_one(s, v, k)) < 0)
			return rc;
	return offcpu_one(s, v, n);
}

static int ns_publish(void *s)
{
	struct netp_enc *e = s;
	return frame_end(e, frame_start(e, NETP_T_PUBLISH), 1);
}

static int ns_close(void *s)
{
	struct netp_enc *e = s;
	return frame_end(e, frame_start(e, NETP_T_END), 1);
}

static void ns_discard(void *s)
{
	struct netp_enc *e = s;
	frame_end(e, frame_start(e, NETP_T_ABORT), 1);
}

static const struct cap_sink_ops net_ops = {
	.begin = ns_begin,
	.commit = ns_commit,
	.set_meta = ns_set_meta,
	.put_proc = ns_put_proc,
	.put_thread = ns_put_thread,
	.put_tree = ns_put_tree,
	.put_sites = ns_put_sites,
	.append_events = ns_append_events,
	.put_object = ns_put_object,
	.put_symbol = ns_put_symbol,
	.append_mem = ns_append_mem,
	.put_stacks = ns_put_stacks,
	.put_counter = ns_put_counter,
	.append_samples = ns_append_samples,
	.append_psamples = ns_append_psamples,
	.append_offcpu = ns_append_offcpu,
	.publish = ns_publish,
	.close = ns_close,
	.discard = ns_discard,
};

struct cap_sink cap_sink_net(struct netp_enc *enc)
{
	return (struct cap_sink){ .ops = &net_ops, .state = enc };
}

void netp_enc_free(struct netp_enc *enc)
{
	free(enc->buf);
	enc->buf = NULL;
	enc->len = enc->cap = 0;
	free(enc->zbuf);
	enc->zbuf = NULL;
	enc->zcap = 0;
	ZSTD_freeCCtx(enc->zc);
	enc->zc = NULL;
}

/* ---- decoder ------------------------------------------------------------ */

struct rd {
	const uint8_t *p;
	size_t n;
	int bad;
};

static const uint8_t *take(struct rd *r, size_t n)
{
	if (r->bad || r->n < n) {
		r->bad = 1;
		return NULL;
	}
	const uint8_t *p = r->p;
	r->p += n;
	r->n -= n;
	return p;
}

static uint8_t get_u8(struct rd *r)
{
	const uint8_t *p = take(r, 1);
	return p ? p[0] : 0;
}
static uint16_t get_u16(struct rd *r)
{
	const uint8_t *p = take(r, 2);
	return p ? (uint16_t)(p[0] | p[1] << 8) : 0;
}
static uint32_t get_u32(struct rd *r)
{
	const uint8_t *p = take(r, 4);
	uint32_t v = 0;
	for (int i = 0; p && i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}
static uint64_t get_u64(struct rd *r)
{
	const uint8_t *p = take(r, 8);
	uint64_t v = 0;
	for (int i = 0; p && i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* A string copied out (NUL-terminated, owned: free()); NULL for the null
 * string; a string containing NUL or running past the payload marks r bad. */
static char *get_str(struct rd *r, int *null)
{
	uint32_t n = get_u32(r);
	*null = 0;
	if (r->bad)
		return NULL;
	if (n == NETP_NOSTR) {
		*null = 1;
		return NULL;
	}
	const uint8_t *p = take(r, n);
	if (!p || memchr(p, 0, n)) {
		r->bad = 1;
		return NULL;
	}
	char *s = malloc((size_t)n + 1);
	if (!s) {
		r->bad = 2;
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

long netp_frame(const uint8_t *p, size_t avail, uint32_t *type, const uint8_t **payload,
		uint32_t *plen)
{
	if (avail < NETP_HDR)
		return 0;
	uint32_t len = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		       (uint32_t)p[3] << 24;
	uint32_t t = (uint32_t)p[4] | (uint32_t)p[5] << 8;
	uint32_t flags = (uint32_t)p[6] | (uint32_t)p[7] << 8;
	if (len > NETP_MAX_FRAME || t == 0 || t >= NETP_T_COUNT_ ||
	    (flags && (flags != NETP_F_MORE || (t != NETP_T_TREE && t != NETP_T_SITES))))
		return -EBADMSG;
	if (avail - NETP_HDR < len)
		return 0;
	*type = t;
	*payload = p + NETP_HDR;
	*plen = len;
	return (long)NETP_HDR + len;
}

static const char *const type_names[NETP_T_COUNT_] = {
	[NETP_T_BEGIN] = "begin",	[NETP_T_COMMIT] = "commit",
	[NETP_T_META] = "meta",		[NETP_T_PROC] = "proc",
	[NETP_T_THREAD] = "thread",	[NETP_T_TREE] = "tree",
	[NETP_T_SITES] = "sites",	[NETP_T_EVENTS] = "events",
	[NETP_T_OBJECT] = "object",	[NETP_T_SYMBOL] = "symbol",
	[NETP_T_MEM] = "mem",		[NETP_T_STACKS] = "stacks",
	[NETP_T_COUNTER] = "counter",	[NETP_T_SAMPLES] = "samples",
	[NETP_T_PSAMPLES] = "psamples", [NETP_T_OFFCPU] = "offcpu",
	[NETP_T_PUBLISH] = "publish",	[NETP_T_END] = "end",		[NETP_T_ABORT] = "abort",
	[NETP_T_ZBATCH] = "zbatch",
};

const char *netp_type_name(uint32_t type)
{
	return type > 0 && type < NETP_T_COUNT_ ? type_names[type] : "unknown";
}

void netp_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int netp_unzip(const uint8_t *payload, uint32_t plen, uint8_t **buf, size_t *cap, size_t *n,
	       char *err, size_t errlen)
{
	*n = 0;
	if (plen < 4) {
		netp_seterr(err, errlen, "malformed zbatch frame (%u bytes)", (unsigned)plen);
		return -EBADMSG;
	}
	uint32_t raw = (uint32_t)payload[0] | (uint32_t)payload[1] << 8 |
		       (uint32_t)payload[2] << 16 | (uint32_t)payload[3] << 24;
	const uint8_t *z = payload + 4;
	size_t zn = plen - 4;
	if (raw > NETP_MAX_FRAME || ZSTD_getFrameContentSize(z, zn) != raw ||
	    ZSTD_findFrameCompressedSize(z, zn) != zn) {
		netp_seterr(err, errlen, "malformed zbatch frame (%u bytes, %u stated)", (unsigned)plen,
		       (unsigned)raw);
		return -EBADMSG;
	}
	if (raw > *cap || !*buf) {
		uint8_t *p = realloc(*buf, raw ? raw : 1);
		if (!p) {
			netp_seterr(err, errlen, "out of memory decoding a zbatch frame");
			return -ENOMEM;
		}
		*buf = p;
		*cap = raw ? raw : 1;
	}
	size_t got = ZSTD_decompress(*buf, raw, z, zn);
	if (ZSTD_isError(got) || got != raw) {
		netp_seterr(err, errlen, "malformed zbatch frame: %s",
		       ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short");
		return -EBADMSG;
	}
	*n = raw;
	return 0;
}

int netp_join(struct netp_join *j, uint32_t type, unsigned flags, const uint8_t *payload,
	      uint32_t plen, const uint8_t **out, uint32_t *outlen, char *err, size_t errlen)
{
	if (!j->open && !(flags & NETP_F_MORE)) {
		*out = payload;
		*outlen = plen;
		return 0;
	}
	if (j->open && type != j->type) {
		netp_seterr(err, errlen, "a %s frame inside a split %s frame", netp_type_name(type),
		       netp_type_name(j->type));
		return -EBADMSG;
	}
	size_t rec = type == NETP_T_TREE ? 40 : type == NETP_T_SITES ? 32 : 0;
	uint32_t id = plen >= 8 ? rd32(payload) : 0, cnt = plen >= 8 ? rd32(payload + 4) : 0;
	if (!rec || plen < 8 || (uint64_t)cnt * rec != plen - 8u) {
		netp_seterr(err, errlen, "malformed %s frame (%u bytes)", netp_type_name(type),
		       (unsigned)plen);
		return -EBADMSG;
	}
	if (j->open && id != j->id) {
		netp_seterr(err, errlen, "a split %s frame of thread %u continued for thread %u",
		       netp_type_name(type), (unsigned)j->id, (unsigned)id);
		return -EBADMSG;
	}
	if (!j->open) {
		j->open = 1;
		j->type = type;
		j->id = id;
		j->count = 0;
		j->len = 8;
	}
	size_t add = plen - 8u;
	if (j->count + cnt > UINT32_MAX || j->len + add > UINT32_MAX) {
		netp_seterr(err, errlen, "a split %s frame of more than 4 GiB", netp_type_name(type));
		return -EBADMSG;
	}
	if (j->len + add > j->cap) {
		size_t cap = j->cap ? j->cap : 4096;
		while (cap < j->len + add)
			cap *= 2;
		uint8_t *p = realloc(j->buf, cap);
		if (!p) {
			netp_seterr(err, errlen, "out of memory joining a split %s frame",
			       netp_type_name(type));
			return -ENOMEM;
		}
		j->buf = p;
		j->cap = cap;
	}
	if (add)
		memcpy(j->buf + j->len, payload + 8, add);
	j->len += add;
	j->count += cnt;
	if (flags & NETP_F_MORE)
		return 1;
	wr32(j->buf, j->id);
	wr32(j->buf + 4, (uint32_t)j->count);
	j->open = 0;
	*out = j->buf;
	*outlen = (uint32_t)j->len;
	return 0;
}

void netp_join_free(struct netp_join *j)
{
	free(j->buf);
	memset(j, 0, sizeof *j);
}

/* Read an array header: id (when has_id), count; allocate count records of
 * size sz after checking they fill the rest of the payload exactly. */
static void *get_array(struct rd *r, int has_id, uint32_t *id, size_t rec, size_t elem,
		       size_t *n)
{
	*id = has_id ? get_u32(r) : 0;
	uint32_t cnt = get_u32(r);
	*n = 0;
	if (r->bad || (uint64_t)cnt * rec != r->n) {
		r->bad = 1;
		return NULL;
	}
	void *v = calloc(cnt ? cnt : 1, elem);
	if (!v)
		r->bad = 2;
	*n = cnt;
	return v;
}

int netp_dispatch(uint32_t type, const uint8_t *payload, uint32_t plen,
		  const struct cap_sink *sink, char *err, size_t errlen)
{
	const struct cap_sink_ops *o = sink->ops;
	void *s = sink->state;
	struct rd r = { payload, plen, 0 };
	int rc = 0, null;
	uint32_t id;
	size_t n;

	switch (type) {
	case NETP_T_BEGIN:
	case NETP_T_COMMIT:
	case NETP_T_PUBLISH:
	case NETP_T_END:
	case NETP_T_ABORT:
		if (plen) {
			r.bad = 1;
			break;
		}
		if (type == NETP_T_BEGIN)
			rc = o->begin(s);
		else if (type == NETP_T_COMMIT)
			rc = o->commit(s);
		else if (type == NETP_T_PUBLISH)
			rc = o->publish(s);
		else if (type == NETP_T_END) {
			rc = o->close(s);
			if (rc >= 0)
				rc = NETP_DONE_END;
		} else {
			o->discard(s);
			rc = NETP_DONE_ABORT;
		}
		break;
	case NETP_T_META: {
		int null2;
		char *k = get_str(&r, &null);
		char *v = get_str(&r, &null2);
		if (!r.bad && (null || null2 || r.n))
			r.bad = 1;
		if (!r.bad)
			rc = o->set_meta(s, k, v);
		free(k);
		free(v);
		break;
	}
	case NETP_T_PROC: {
		struct cygprof_proc p = { 0 };
		p.idx = get_u32(&r);
		p.pid = get_u32(&r);
		p.ppid = get_u32(&r);
		p.parent_idx = get_u32(&r);
		p.start_ns = get_u64(&r);
		p.end_ns = get_u64(&r);
		p.end_kind = get_u32(&r);
		p.end_code = (int32_t)get_u32(&r);
		p.command = get_str(&r, &null);
		p.exe = get_str(&r, &null);
		if (!r.bad && r.n)
			r.bad = 1;
		if (!r.bad)
			rc = o->put_proc(s, &p);
		free(p.command);
		free(p.exe);
		break;
	}
	case NETP_T_THREAD: {
		struct cygprof_thread t = { 0 };
		t.idx = get_u32(&r);
		t.proc_idx = get_u32(&r);
		t.tid = get_u32(&r);
		t.flags = get_u32(&r);
		t.start_ns = get_u64(&r);
		t.end_ns = get_u64(&r);
		t.calls = get_u64(&r);
		t.events = get_u64(&r);
		t.lost = get_u64(&r);
		t.waits = get_u64(&r);
		t.wait_ns = get_u64(&r);
		t.unpaired = get_u64(&r);
		t.unwound = get_u64(&r);
		const uint8_t *nm = take(&r, sizeof t.name);
		if (nm) {
			memcpy(t.name, nm, sizeof t.name);
			t.name[sizeof t.name - 1] = 0;
		}
		t.overflow = get_u64(&r);
		t.sig_lost = get_u64(&r);
		t.mem_lost = get_u64(&r);
		if (!r.bad && r.n)
			r.bad = 1;
		if (!r.bad)
			rc = o->put_thread(s, &t);
		break;
	}
	case NETP_T_TREE: {
		struct cygprof_node *v = get_array(&r, 1, &id, 40, sizeof *v, &n);
		if (v && NETP_RAW(*v, 40) && n)
			memcpy(v, take(&r, n * sizeof *v), n * sizeof *v);
		else
			for (size_t i = 0; v && !r.bad && i < n; i++) {
				v[i].parent = get_u32(&r);
				v[i].flags = get_u32(&r);
				v[i].fn = get_u64(&r);
				v[i].site = get_u64(&r);
				v[i].calls = get_u64(&r);
				v[i].total_ns = get_u64(&r);
			}
		if (!r.bad)
			rc = o->put_tree(s, id, v, n);
		free(v);
		break;
	}
	case NETP_T_SITES: {
		struct cygprof_callsite *v = get_array(&r, 1, &id, 32, sizeof *v, &n);
		for (size_t i = 0; v && !r.bad && i < n; i++) {
			v[i].node = get_u32(&r);
			v[i].flags = get_u32(&r);
			v[i].site = get_u64(&r);
			v[i].calls = get_u64(&r);
			v[i].total_ns = get_u64(&r);
		}
		if (!r.bad)
			rc = o->put_sites(s, id, v, n);
		free(v);
		break;
	}
	case NETP_T_EVENTS: {
		struct cygprof_event *v = get_array(&r, 1, &id, 16, sizeof *v, &n);
		const uint8_t *p = v && n ? take(&r, n * 16) : NULL;
		uint64_t ts = 0;
		for (size_t i = 0; p && i < n; i++, p += 16) {
			ts += rd64(p); /* the steps back to times (modulo 2^64) */
			v[i].ts_ns = ts;
			v[i].node = rd32(p + 8);
			v[i].kind = rd32(p + 12);
		}
		if (!r.bad)
			rc = o->append_events(s, id, v, n);
		free(v);
		break;
	}
	case NETP_T_OBJECT: {
		struct cygprof_object ob = { 0 };
		ob.idx = get_u32(&r);
		ob.proc_idx = get_u32(&r);
		ob.start = get_u64(&r);
		ob.end = get_u64(&r);
		ob.bias = get_u64(&r);
		ob.build_id_len = get_u32(&r);
		const uint8_t *bid = take(&r, sizeof ob.build_id);
		if (bid)
			memcpy(ob.build_id, bid, sizeof ob.build_id);
		ob.path = get_str(&r, &null);
		if (!r.bad && (r.n || ob.build_id_len > sizeof ob.build_id))
			r.bad = 1;
		if (!r.bad)
			rc = o->put_object(s, &ob);
		free(ob.path);
		break;
	}
	case NETP_T_SYMBOL: {
		struct cygprof_symbol sym = { 0 };
		sym.proc_idx = get_u32(&r);
		sym.object_idx = get_u32(&r);
		sym.addr = get_u64(&r);
		sym.size = get_u64(&r);
		sym.name = get_str(&r, &null);
		if (!r.bad && (r.n || null))
			r.bad = 1;
		if (!r.bad)
			rc = o->put_symbol(s, &sym);
		free(sym.name);
		break;
	}
	case NETP_T_MEM: {
		struct cygprof_mem_event *v = get_array(&r, 1, &id, 32, sizeof *v, &n);
		if (v && NETP_RAW(*v, 32) && n)
			memcpy(v, take(&r, n * sizeof *v), n * sizeof *v);
		else
			for (size_t i = 0; v && !r.bad && i < n; i++) {
				v[i].ts_ns = get_u64(&r);
				v[i].addr = get_u64(&r);
				v[i].size = get_u64(&r);
				v[i].stack = get_u32(&r);
				v[i].op = get_u8(&r);
				v[i].fn = get_u8(&r);
				v[i].flags = get_u16(&r);
			}
		if (!r.bad)
			rc = o->append_mem(s, id, v, n);
		free(v);
		break;
	}
	case NETP_T_STACKS: {
		struct cygprof_stack_node *v = get_array(&r, 0, &id, 24, sizeof *v, &n);
		for (size_t i = 0; v && !r.bad && i < n; i++) {
			v[i].id = get_u32(&r);
			v[i].parent = get_u32(&r);
			v[i].proc_idx = get_u32(&r);
			v[i].kind = get_u32(&r);
			v[i].addr = get_u64(&r);
		}
		if (!r.bad)
			rc = o->put_stacks(s, v, n);
		free(v);
		break;
	}
	case NETP_T_COUNTER: {
		struct cygprof_counter c = { 0 };
		c.id = get_u32(&r);
		c.proc_idx = get_u32(&r);
		c.unit = get_u32(&r);
		c.flags = get_u32(&r);
		c.name = get_str(&r, &null);
		if (!r.bad && (r.n || null))
			r.bad = 1;
		if (!r.bad)
			rc = o->put_counter(s, &c);
		free(c.name);
		break;
	}
	case NETP_T_SAMPLES: {
		struct cygprof_sample *v = get_array(&r, 1, &id, 16, sizeof *v, &n);
		for (size_t i = 0; v && !r.bad && i < n; i++) {
			v[i].t_ns = get_u64(&r);
			v[i].value = (int64_t)get_u64(&r);
		}
		if (!r.bad)
			rc = o->append_samples(s, id, v, n);
		free(v);
		break;
	}
	case NETP_T_PSAMPLES: {
		struct cygprof_psample *v = get_array(&r, 0, &id, 48, sizeof *v, &n);
		for (size_t i = 0; v && !r.bad && i < n; i++) {
			v[i].t_ns = get_u64(&r);
			v[i].weight_ns = get_u64(&r);
			v[i].rr_ticks = get_u64(&r);
			v[i].thread_idx = get_u32(&r);
			v[i].pid = get_u32(&r);
			v[i].tid = get_u32(&r);
			v[i].stack = get_u32(&r);
			v[i].flags = get_u32(&r);
			v[i].pad = get_u32(&r);
		}
		if (!r.bad)
			rc = o->append_psamples(s, v, n);
		free(v);
		break;
	}
	case NETP_T_OFFCPU: {
		struct cygprof_offcpu *v = get_array(&r, 0, &id, 32, sizeof *v, &n);
		for (size_t i = 0; v && !r.bad && i < n; i++) {
			v[i].start_ns = get_u64(&r);
			v[i].end_ns = get_u64(&r);
			v[i].thread_idx = get_u32(&r);
			v[i].tid = get_u32(&r);
			v[i].stack = get_u32(&r);
			v[i].flags = get_u32(&r);
		}
		if (!r.bad)
			rc = o->append_offcpu(s, v, n);
		free(v);
		break;
	}
	default:
		netp_seterr(err, errlen, "unknown frame type %u", (unsigned)type);
		return -EBADMSG;
	}
	if (r.bad == 2) {
		netp_seterr(err, errlen, "out of memory decoding a %s frame", netp_type_name(type));
		return -ENOMEM;
	}
	if (r.bad) {
		netp_seterr(err, errlen, "malformed %s frame (%u bytes)", netp_type_name(type),
		       (unsigned)plen);
		return -EBADMSG;
	}
	if (rc < 0)
		netp_seterr(err, errlen, "%s frame: %s", netp_type_name(type), cygprof_strerror(rc));
	return rc;
}
