/* SPDX-License-Identifier: MIT */
/* net-proto.h - the frames of `record --send` / `receive` (docs/remote.md):
 * one frame per capture-writer call, encoded by the net sink and replayed
 * into another sink (normally the capture sink) by netp_dispatch(). */
#ifndef CYGPROF_NET_PROTO_H
#define CYGPROF_NET_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "capture-sink.h"

#define NETP_MAGIC "CYGPNET\n" /* 8 bytes, both directions of the handshake */
#define NETP_VERSION 1u
#define NETP_HDR 8u                       /* u32 len, u16 type, u16 flags */
#define NETP_MAX_FRAME (64u << 20)        /* payload bytes */
#define NETP_FLUSH_AT (1u << 20)          /* the net sink flushes past this */
#define NETP_F_MORE 1u /* flags: a part of a split TREE or SITES frame, more follow */

enum netp_type {
	NETP_T_BEGIN = 1,
	NETP_T_COMMIT,
	NETP_T_META,
	NETP_T_PROC,
	NETP_T_THREAD,
	NETP_T_TREE,
	NETP_T_SITES,
	NETP_T_EVENTS,
	NETP_T_OBJECT,
	NETP_T_SYMBOL,
	NETP_T_MEM,
	NETP_T_STACKS,
	NETP_T_COUNTER,
	NETP_T_SAMPLES,
	NETP_T_PSAMPLES,
	NETP_T_OFFCPU,
	NETP_T_PUBLISH, /* the capture becomes visible at its path */
	NETP_T_END,     /* close: the run is over */
	NETP_T_ABORT,   /* discard */
	NETP_T_ZBATCH,  /* u32 raw length + one zstd frame: whole frames (no ZBATCH) */
	NETP_T_COUNT_
};

/* The net sink's state: frames accumulate in buf; flush (when set) is
 * called with the whole buffer at each commit, at the end and when the
 * buffer passes NETP_FLUSH_AT, and returns 0 or a negative errno, which
 * every later op returns as well.  Without flush the buffer just grows
 * (tests).  err: the first error (-ENOMEM, -EINVAL for a frame too large).
 * With compress set, a flush of NETP_ZMIN bytes or more goes out as one
 * ZBATCH frame when zstd makes it smaller. */
struct netp_enc {
	uint8_t *buf;
	size_t len, cap;
	int err;
	int (*flush)(void *arg, const uint8_t *p, size_t n);
	void *arg;
	uint64_t sent; /* bytes flushed so far (compressed: what went out) */
	uint64_t raw;  /* the frames' bytes before compression */
	int compress;  /* zstd level (1: fast), 0: none */
	uint32_t max_frame; /* split arrays past this payload size (0: NETP_MAX_FRAME; tests) */
	unsigned part;      /* the flags of the array frame being written */
	void *zc;      /* ZSTD_CCtx */
	uint8_t *zbuf;
	size_t zcap;
};

#define NETP_ZMIN 256u

/* The frames of a ZBATCH payload, decompressed into *buf (grown as needed,
 * owned: free()); their length in *n.  -EBADMSG (err says why) when the
 * payload is not one zstd frame of the raw length it states, or states
 * more than NETP_MAX_FRAME; -ENOMEM. */
/* An error message into err (errlen bytes; nothing when err is NULL). */
__attribute__((format(printf, 3, 4))) void netp_seterr(char *err, size_t errlen,
							 const char *fmt, ...);

int netp_unzip(const uint8_t *payload, uint32_t plen, uint8_t **buf, size_t *cap, size_t *n,
	       char *err, size_t errlen);

/* A sink encoding into enc (which must outlive it). */
struct cap_sink cap_sink_net(struct netp_enc *enc);
void netp_enc_free(struct netp_enc *enc);

/* Parse the frame header at p (avail bytes): the whole frame's size (> 0)
 * with *type, *payload and *plen set; 0 when more bytes are needed; -EBADMSG
 * for a length over NETP_MAX_FRAME, an unknown type or flags other than
 * NETP_F_MORE on a TREE or SITES frame. */
long netp_frame(const uint8_t *p, size_t avail, uint32_t *type, const uint8_t **payload,
		uint32_t *plen);

/* The flags of the frame whose header is at p. */
static inline unsigned netp_flags(const uint8_t *p) { return (unsigned)p[6] | (unsigned)p[7] << 8; }

/* Arrays larger than a frame are sent in several: an append in several
 * appends, a TREE or SITES (which replace) in parts flagged NETP_F_MORE
 * but the last, joined here.  Feed every frame: 0 with *out and *outlen the
 * payload to dispatch (the frame's own, or the parts joined), 1 when a part
 * was kept and more must come, <0 (err) for a part of another type or
 * thread in between, a malformed part, or more than 4 GiB. */
struct netp_join {
	uint32_t type, id;
	uint64_t count;
	uint8_t *buf; /* u32 id, u32 count, the records */
	size_t len, cap;
	int open;
};
int netp_join(struct netp_join *j, uint32_t type, unsigned flags, const uint8_t *payload,
	      uint32_t plen, const uint8_t **out, uint32_t *outlen, char *err, size_t errlen);
void netp_join_free(struct netp_join *j);

enum {
	NETP_DONE_MORE = 0,  /* a frame replayed, the stream goes on */
	NETP_DONE_END = 1,   /* END: the sink was closed */
	NETP_DONE_ABORT = 2, /* ABORT: the sink was discarded */
};

/* Decode one frame's payload and make the call on sink (not ZBATCH:
 * netp_unzip() first, then each frame inside).  NETP_DONE_*, or
 * <0: -EBADMSG for a malformed payload (err says what), or the sink's
 * error.  err (errlen bytes) gets one line on failure. */
int netp_dispatch(uint32_t type, const uint8_t *payload, uint32_t plen,
		  const struct cap_sink *sink, char *err, size_t errlen);

const char *netp_type_name(uint32_t type);

#endif
