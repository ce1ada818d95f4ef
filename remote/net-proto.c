/* SPDX-License-Identifier: MIT */
/* net-proto.c - the frames that carry a stream capture's values
 * (docs/remote.md "Frames"): the sender's stream callbacks, batching and
 * compression; the receiver's framing, joining and replay. */
#include "net-proto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

static void wr16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void wr32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t rd16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- sender ---------------------------------------------------------------- */

/* Room for more bytes at the end of the buffer: a pointer to them (e->len
 * advanced), NULL without memory. */
static uint8_t *enc_grow(struct netp_enc *e, size_t more)
{
	if (e->len + more > e->cap) {
		size_t cap = e->cap ? e->cap : 4096;
		while (cap < e->len + more)
			cap *= 2;
		uint8_t *p = realloc(e->buf, cap);
		if (!p)
			return NULL;
		e->buf = p;
		e->cap = cap;
	}
	e->len += more;
	return e->buf + e->len - more;
}

/* The connection's zstd stream, made at its first batch: level
 * NETP_ZLEVEL, window 2^zwlog. */
static int enc_zstart(struct netp_enc *e)
{
	if (e->zc)
		return 0;
	e->zc = ZSTD_createCCtx();
	if (!e->zc)
		return -ENOMEM;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(e->zc, ZSTD_c_compressionLevel, NETP_ZLEVEL)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(e->zc, ZSTD_c_windowLog, (int)e->zwlog)))
		return -EINVAL;
	return 0;
}

/* The buffer as one ZBATCH frame in zbuf, the next bytes of the
 * connection's zstd stream (with end, the stream's last: its frame ended):
 * its size, or 0 to send the buffer as it is, outside the stream (no
 * compression agreed, a small flush that is not the last, a buffer past
 * what a ZBATCH holds; or the stream failed, which ends compression: the
 * receiver has all the stream's batches before, whole). */
static size_t enc_zip(struct netp_enc *e, int end)
{
	if (!e->zwlog || e->zfail || (e->len < NETP_ZMIN && !(end && e->zc)) ||
	    ZSTD_compressBound(e->len) + 4 > NETP_MAX_FRAME)
		return 0;
	if (enc_zstart(e) < 0) {
		e->zfail = 1;
		return 0;
	}
	ZSTD_inBuffer in = { e->buf, e->len, 0 };
	size_t pos = NETP_HDR + 4, left;
	do {
		if (e->zcap < pos + ZSTD_CStreamOutSize()) {
			size_t cap = e->zcap ? e->zcap : NETP_HDR + 4 + ZSTD_compressBound(e->len);
			while (cap < pos + ZSTD_CStreamOutSize())
				cap *= 2;
			uint8_t *p = realloc(e->zbuf, cap);
			if (!p) {
				e->zfail = 1;
				return 0;
			}
			e->zbuf = p;
			e->zcap = cap;
		}
		ZSTD_outBuffer out = { e->zbuf, e->zcap, pos };
		left = ZSTD_compressStream2(e->zc, &out, &in, end ? ZSTD_e_end : ZSTD_e_flush);
		pos = out.pos;
		if (ZSTD_isError(left) || pos - NETP_HDR > NETP_MAX_FRAME) {
			e->zfail = 1;
			return 0;
		}
	} while (left);
	wr32(e->zbuf, (uint32_t)(pos - NETP_HDR));
	wr16(e->zbuf + 4, NETP_T_ZBATCH);
	wr16(e->zbuf + 6, 0);
	wr32(e->zbuf + NETP_HDR, (uint32_t)e->len);
	return pos;
}

/* The buffer out through flush (with end: the last of the connection). */
static int enc_flush(struct netp_enc *e, int end)
{
	if (!e->flush || !e->len)
		return 0;
	size_t zn = enc_zip(e, end);
	int r = zn ? e->flush(e->arg, e->zbuf, zn) : e->flush(e->arg, e->buf, e->len);
	if (r < 0)
		return r;
	e->sent += zn ? zn : e->len;
	e->raw += e->len;
	e->len = 0;
	return 0;
}

enum { FLUSH_NO, FLUSH, FLUSH_END };

/* One frame of the given header whose payload is the n pieces p[i] of
 * len[i] bytes; flushed with flush (FLUSH_END: the last frame of the
 * connection) or past NETP_FLUSH_AT. */
static int enc_frame(struct netp_enc *e, uint32_t type, unsigned flags, int n,
		     const void *const *p, const size_t *len, int flush)
{
	size_t plen = 0;
	for (int i = 0; i < n; i++)
		plen += len[i];
	uint8_t *out = enc_grow(e, NETP_HDR + plen);
	if (!out)
		return -ENOMEM;
	wr32(out, (uint32_t)plen);
	wr16(out + 4, type);
	wr16(out + 6, flags);
	out += NETP_HDR;
	for (int i = 0; i < n; i++) {
		if (len[i])
			memcpy(out, p[i], len[i]);
		out += len[i];
	}
	if (flush || e->len >= NETP_FLUSH_AT)
		return enc_flush(e, flush == FLUSH_END);
	return 0;
}

static int enc_bare(struct netp_enc *e, uint32_t type, int flush)
{
	return enc_frame(e, type, 0, 0, NULL, NULL, flush);
}

/* A value larger than a frame goes in parts, all but the last flagged
 * NETP_F_MORE, each with the same db and key. */
static int ns_put(void *arg, unsigned int db, const void *key, size_t klen, const void *value,
		  size_t vlen)
{
	struct netp_enc *e = arg;
	size_t max = e->max_frame && e->max_frame < NETP_MAX_FRAME ? e->max_frame : NETP_MAX_FRAME;
	const uint8_t *v = value;
	uint8_t hdr[NETP_PUT_HDR];
	int rc;

	if (db > UINT16_MAX || klen > UINT16_MAX || NETP_PUT_HDR + klen >= max)
		return -EINVAL;
	size_t room = max - NETP_PUT_HDR - klen;
	wr16(hdr, db);
	wr16(hdr + 2, (uint32_t)klen);
	do {
		size_t n = vlen > room ? room : vlen;
		const void *p[3] = { hdr, key, v };
		const size_t len[3] = { sizeof hdr, klen, n };
		rc = enc_frame(e, NETP_T_PUT, vlen > room ? NETP_F_MORE : 0, 3, p, len, FLUSH_NO);
		v += n;
		vlen -= n;
	} while (vlen && !rc);
	return rc;
}

static int ns_begin(void *arg) { return enc_bare(arg, NETP_T_BEGIN, FLUSH_NO); }
static int ns_commit(void *arg) { return enc_bare(arg, NETP_T_COMMIT, FLUSH); }
static int ns_publish(void *arg) { return enc_bare(arg, NETP_T_PUBLISH, FLUSH); }
static int ns_close(void *arg) { return enc_bare(arg, NETP_T_END, FLUSH_END); }
static void ns_discard(void *arg) { (void)enc_bare(arg, NETP_T_ABORT, FLUSH_END); }

const struct cygprof_capture_stream netp_stream = {
	.put = ns_put,
	.begin = ns_begin,
	.commit = ns_commit,
	.publish = ns_publish,
	.close = ns_close,
	.discard = ns_discard,
};

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

/* ---- receiver -------------------------------------------------------------- */

int netp_header(const uint8_t *h, uint32_t *type, unsigned *flags, uint32_t *len)
{
	*len = rd32(h);
	*type = rd16(h + 4);
	*flags = rd16(h + 6);
	if (*len > NETP_MAX_FRAME || *type == 0 || *type >= NETP_T_COUNT_ ||
	    (*flags && (*flags != NETP_F_MORE || *type != NETP_T_PUT)))
		return -EBADMSG;
	return 0;
}

long netp_frame(const uint8_t *p, size_t avail, uint32_t *type, const uint8_t **payload,
		uint32_t *plen)
{
	unsigned flags;
	uint32_t t, len;

	if (avail < NETP_HDR)
		return 0;
	if (netp_header(p, &t, &flags, &len))
		return -EBADMSG;
	if (avail - NETP_HDR < len)
		return 0;
	*type = t;
	*payload = p + NETP_HDR;
	*plen = len;
	return (long)NETP_HDR + len;
}

static const char *const type_names[NETP_T_COUNT_] = {
	[NETP_T_BEGIN] = "begin",     [NETP_T_COMMIT] = "commit", [NETP_T_PUT] = "put",
	[NETP_T_PUBLISH] = "publish", [NETP_T_END] = "end",	  [NETP_T_ABORT] = "abort",
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
	/* one line, whatever bytes a peer put into a key quoted here */
	for (char *c = err; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

int netp_unzip(struct netp_rx *rx, const uint8_t *payload, uint32_t plen)
{
	rx->zlen = 0;
	if (!rx->zwlog) {
		netp_seterr(rx->err, sizeof rx->err,
			    "a zbatch frame, but the handshake agreed on no compression");
		return -EBADMSG;
	}
	uint32_t raw = plen >= 4 ? rd32(payload) : 0;
	if (plen < 4 || raw > NETP_MAX_FRAME) {
		netp_seterr(rx->err, sizeof rx->err, "malformed zbatch frame (%u bytes, %u stated)",
			    (unsigned)plen, (unsigned)raw);
		return -EBADMSG;
	}
	if (!rx->zd) {
		rx->zd = ZSTD_createDCtx();
		if (!rx->zd) {
			netp_seterr(rx->err, sizeof rx->err, "out of memory decoding a zbatch frame");
			return -ENOMEM;
		}
		if (ZSTD_isError(ZSTD_DCtx_setParameter(rx->zd, ZSTD_d_windowLogMax,
							(int)rx->zwlog))) {
			netp_seterr(rx->err, sizeof rx->err, "no zstd window of 2^%u bytes",
				    rx->zwlog);
			return -EINVAL;
		}
	}
	if (raw > rx->zcap || !rx->zbuf) {
		uint8_t *p = realloc(rx->zbuf, raw ? raw : 1);
		if (!p) {
			netp_seterr(rx->err, sizeof rx->err, "out of memory decoding a zbatch frame");
			return -ENOMEM;
		}
		rx->zbuf = p;
		rx->zcap = raw ? raw : 1;
	}
	/* all its bytes, into exactly raw bytes: nothing left in the input,
	 * nor in the decoder */
	ZSTD_inBuffer in = { payload + 4, plen - 4, 0 };
	ZSTD_outBuffer out = { rx->zbuf, raw, 0 };
	uint8_t extra;
	size_t r = 0, ipos, opos;
	do {
		ipos = in.pos;
		opos = out.pos;
		r = ZSTD_decompressStream(rx->zd, &out, &in);
	} while (!ZSTD_isError(r) && in.pos < in.size && (in.pos > ipos || out.pos > opos));
	if (!ZSTD_isError(r) && in.pos == in.size && out.pos == raw) {
		ZSTD_outBuffer more = { &extra, 1, 0 };
		ZSTD_inBuffer none = { NULL, 0, 0 };
		r = ZSTD_decompressStream(rx->zd, &more, &none);
		if (!ZSTD_isError(r) && !more.pos) {
			rx->zlen = raw;
			return 0;
		}
	}
	if (ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge)
		netp_seterr(rx->err, sizeof rx->err,
			    "the zbatch stream needs a window over the %u bytes agreed",
			    1u << rx->zwlog);
	else if (ZSTD_isError(r))
		netp_seterr(rx->err, sizeof rx->err, "malformed zbatch frame: %s",
			    ZSTD_getErrorName(r));
	else
		netp_seterr(rx->err, sizeof rx->err,
			    "malformed zbatch frame: not the %u bytes it states", (unsigned)raw);
	return -EBADMSG;
}

/* A PUT payload: the value put. */
static int dispatch_put(const uint8_t *payload, uint32_t plen, struct cygprof_capture *cap,
			char *err, size_t errlen)
{
	uint32_t db, klen;
	int rc;

	if (plen < NETP_PUT_HDR || plen - NETP_PUT_HDR < (klen = rd16(payload + 2))) {
		netp_seterr(err, errlen, "malformed put frame (%u bytes)", (unsigned)plen);
		return -EBADMSG;
	}
	db = rd16(payload);
	rc = cygprof_capture_put_value(cap, db, payload + NETP_PUT_HDR, klen,
				       payload + NETP_PUT_HDR + klen, plen - NETP_PUT_HDR - klen);
	if (rc == CYGPROF_E_CORRUPT && cygprof_capture_damage(NULL))
		netp_seterr(err, errlen, "refused a value: %s", cygprof_capture_damage(NULL));
	else if (rc == -EPERM && db == CYGPROF_DB_META)
		netp_seterr(err, errlen, "refused meta '%.*s': a key of the capture's own",
			    (int)(klen > 40 ? 40 : klen), (const char *)payload + NETP_PUT_HDR);
	else if (rc < 0)
		netp_seterr(err, errlen, "put frame (DB %u, %u-byte key): %s", (unsigned)db,
			    (unsigned)klen, cygprof_strerror(rc));
	return rc;
}

int netp_dispatch(uint32_t type, const uint8_t *payload, uint32_t plen,
		  struct cygprof_capture **capp, char *err, size_t errlen)
{
	struct cygprof_capture *cap = *capp;
	int rc;

	if (type == NETP_T_PUT)
		return dispatch_put(payload, plen, cap, err, errlen);
	if (type == 0 || type >= NETP_T_COUNT_ || type == NETP_T_ZBATCH) {
		netp_seterr(err, errlen, "unknown frame type %u", (unsigned)type);
		return -EBADMSG;
	}
	if (plen) {
		netp_seterr(err, errlen, "malformed %s frame (%u bytes)", netp_type_name(type),
			    (unsigned)plen);
		return -EBADMSG;
	}
	switch (type) {
	case NETP_T_BEGIN:
		rc = cygprof_capture_begin(cap);
		break;
	case NETP_T_COMMIT:
		rc = cygprof_capture_commit(cap);
		break;
	case NETP_T_PUBLISH:
		rc = cygprof_capture_publish(cap);
		break;
	case NETP_T_END: {
		int e;

		*capp = NULL; /* closed, even when that fails */
		/* sealed, then without its free pages: a compaction that fails
		 * keeps the capture whole, and err says why (a warning) */
		rc = cygprof_capture_seal(cap);
		e = rc ? 0 : cygprof_capture_compact(cap, NULL);
		if (e)
			netp_seterr(err, errlen, "not compacted, kept whole with its free pages: %s",
				    cygprof_strerror(e));
		e = cygprof_capture_close(cap);
		if (!rc)
			rc = e;
		if (rc >= 0)
			rc = NETP_DONE_END;
		break;
	}
	default:
		*capp = NULL;
		cygprof_capture_discard(cap);
		return NETP_DONE_ABORT;
	}
	if (rc < 0)
		netp_seterr(err, errlen, "%s frame: %s", netp_type_name(type), cygprof_strerror(rc));
	return rc;
}

/* A part of a value (flags NETP_F_MORE), or the last one: joined in
 * rx->part; 0 when a part was kept, 1 when the last completed the value. */
static int rx_part(struct netp_rx *rx, unsigned flags, const uint8_t *p, uint32_t n)
{
	size_t head;

	rx->parts++;
	if (n < NETP_PUT_HDR || n - NETP_PUT_HDR < rd16(p + 2)) {
		netp_seterr(rx->err, sizeof rx->err, "malformed put frame (%u bytes)", (unsigned)n);
		return -EBADMSG;
	}
	head = NETP_PUT_HDR + rd16(p + 2);
	if (rx->plen && (head > rx->plen || memcmp(rx->part, p, head))) {
		netp_seterr(rx->err, sizeof rx->err, "a part of another value inside a split value");
		return -EBADMSG;
	}
	if (!rx->plen)
		head = 0; /* the first part: its db and key too */
	if (rx->plen + (n - head) > (size_t)UINT32_MAX) {
		netp_seterr(rx->err, sizeof rx->err, "a split value of more than 4 GiB");
		return -EBADMSG;
	}
	if (rx->plen + (n - head) > rx->pcap) {
		size_t cap = rx->pcap ? rx->pcap : 4096;
		while (cap < rx->plen + (n - head))
			cap *= 2;
		uint8_t *q = realloc(rx->part, cap);
		if (!q) {
			netp_seterr(rx->err, sizeof rx->err, "out of memory joining a split value");
			return -ENOMEM;
		}
		rx->part = q;
		rx->pcap = cap;
	}
	memcpy(rx->part + rx->plen, p + head, n - head);
	rx->plen += n - head;
	return !(flags & NETP_F_MORE);
}

/* One frame that is not a ZBATCH. */
static int rx_one(struct netp_rx *rx, uint32_t type, unsigned flags, const uint8_t *p,
		  uint32_t n)
{
	int rc;

	if (rx->plen && type != NETP_T_PUT) {
		netp_seterr(rx->err, sizeof rx->err, "a %s frame inside a split value",
			    netp_type_name(type));
		return -EBADMSG;
	}
	if ((flags & NETP_F_MORE) || rx->plen) {
		rc = rx_part(rx, flags, p, n);
		if (rc <= 0)
			return rc;
		rc = netp_dispatch(type, rx->part, (uint32_t)rx->plen, &rx->cap, rx->err,
				   sizeof rx->err);
		rx->plen = 0;
	} else {
		rc = netp_dispatch(type, p, n, &rx->cap, rx->err, sizeof rx->err);
	}
	if (!rx->cap)
		rx->ended = 1;
	else if (rc >= 0 && type == NETP_T_BEGIN)
		rx->in_batch = 1;
	else if (rc >= 0 && type == NETP_T_COMMIT)
		rx->in_batch = 0;
	/* the capture's size on disk, as it grows (a value put again under
	 * its key, an open event block at each commit, replaces the one before) */
	if (rc == NETP_DONE_MORE && rx->max && cygprof_capture_file_size(rx->cap) > rx->max) {
		netp_seterr(rx->err, sizeof rx->err, "the capture passed --max-bytes %" PRIu64,
			    rx->max);
		return -EFBIG;
	}
	return rc;
}

int netp_rx_frame(struct netp_rx *rx, const uint8_t *hdr, const uint8_t *payload)
{
	uint32_t type, len;
	unsigned flags;
	size_t n, off = 0;
	int rc;

	if (rx->ended) {
		netp_seterr(rx->err, sizeof rx->err, "a frame after the end of the stream");
		return -EBADMSG;
	}
	if (netp_header(hdr, &type, &flags, &len)) {
		netp_seterr(rx->err, sizeof rx->err, "malformed frame header");
		return -EBADMSG;
	}
	if (type != NETP_T_ZBATCH) {
		rx->total += NETP_HDR + (uint64_t)len;
		return rx_one(rx, type, flags, payload, len);
	}
	rc = netp_unzip(rx, payload, len);
	n = rx->zlen;
	rx->total += n;
	while (!rc && off < n) {
		const uint8_t *p;
		long fl = netp_frame(rx->zbuf + off, n - off, &type, &p, &len);
		if (fl <= 0 || type == NETP_T_ZBATCH) {
			netp_seterr(rx->err, sizeof rx->err,
				    "malformed zbatch frame (a frame inside cut or nested)");
			return -EBADMSG;
		}
		rc = rx_one(rx, type, rd16(rx->zbuf + off + 6), p, len);
		off += (size_t)fl;
		if (rc != NETP_DONE_MORE)
			break; /* refused, or the end: what follows is not replayed */
	}
	return rc;
}

void netp_rx_free(struct netp_rx *rx)
{
	free(rx->part);
	free(rx->zbuf);
	ZSTD_freeDCtx(rx->zd);
	rx->zd = NULL;
	rx->part = rx->zbuf = NULL;
	rx->plen = rx->pcap = rx->zlen = rx->zcap = 0;
}
