/* SPDX-License-Identifier: MIT */
/* net-proto.h - the frames of `record --send` / `receive` (docs/remote.md):
 * a transport for the values of a stream capture
 * (cygprof_capture_create_stream()).  The sender's stream callbacks
 * (netp_stream) turn each put into a PUT frame of the capture's own key and
 * value bytes and each begin, commit, publish, close and discard into a
 * frame of its own; the receiver (struct netp_rx) joins the parts of a
 * split value, decompresses ZBATCH frames and replays every frame into an
 * LMDB capture (cygprof_capture_put_value() and friends).  No record is
 * encoded or decoded here: the capture library does both. */
#ifndef CYGPROF_NET_PROTO_H
#define CYGPROF_NET_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "cygprof/cygprof-capture.h"

#define NETP_MAGIC "CYGPNET\n" /* 8 bytes, both directions of the handshake */
#define NETP_VERSION 2u        /* 1: one codec per record type (before the PUT frame) */
#define NETP_HDR 8u                       /* u32 len, u16 type, u16 flags */
#define NETP_MAX_FRAME (64u << 20)        /* payload bytes */
#define NETP_FLUSH_AT (1u << 20)          /* the sender flushes past this */
#define NETP_F_MORE 1u /* flags: a part of a PUT's value, more parts follow */
#define NETP_PUT_HDR 4u /* a PUT payload: u16 db, u16 key length, key, value */
#define NETP_ZMIN 256u  /* a flush this large goes out compressed */

enum netp_type {
	NETP_T_BEGIN = 1, /* cygprof_capture_begin() */
	NETP_T_COMMIT,    /* cygprof_capture_commit() */
	NETP_T_PUT,       /* one value: cygprof_capture_put_value() */
	NETP_T_PUBLISH,   /* the capture becomes visible at its path */
	NETP_T_END,       /* close: the run is over */
	NETP_T_ABORT,     /* discard */
	NETP_T_ZBATCH,    /* u32 raw length + one zstd frame: whole frames (no ZBATCH) */
	NETP_T_COUNT_
};

/* The sender's state, the arg of netp_stream: frames accumulate in buf;
 * flush (when set) is called with the whole buffer at each commit, publish,
 * close and discard and when the buffer passes NETP_FLUSH_AT, and returns 0
 * or a negative errno, which is the stream capture's error from then on.
 * Without flush the buffer just grows (tests).  With compress set (a zstd
 * level), a flush of NETP_ZMIN bytes or more goes out as one ZBATCH frame
 * when zstd makes it smaller. */
struct netp_enc {
	uint8_t *buf;
	size_t len, cap;
	int (*flush)(void *arg, const uint8_t *p, size_t n);
	void *arg;
	uint64_t sent; /* bytes flushed so far (compressed: what went out) */
	uint64_t raw;  /* the frames' bytes before compression */
	int compress;  /* zstd level (1: fast), 0: none */
	uint32_t max_frame; /* split values past this payload size (0: NETP_MAX_FRAME; tests) */
	void *zc;      /* ZSTD_CCtx */
	uint8_t *zbuf;
	size_t zcap;
};

/* The callbacks of a stream capture sending frames: arg is a struct
 * netp_enc (which must outlive the capture). */
extern const struct cygprof_capture_stream netp_stream;
void netp_enc_free(struct netp_enc *enc);

/* An error message into err (errlen bytes; nothing when err is NULL), on
 * one line: control characters become '?'. */
__attribute__((format(printf, 3, 4))) void netp_seterr(char *err, size_t errlen,
							 const char *fmt, ...);

/* The frames of a ZBATCH payload, decompressed into *buf (grown as needed,
 * owned: free()); their length in *n.  -EBADMSG (err says why) when the
 * payload is not one zstd frame of the raw length it states, or states
 * more than NETP_MAX_FRAME; -ENOMEM. */
int netp_unzip(const uint8_t *payload, uint32_t plen, uint8_t **buf, size_t *cap, size_t *n,
	       char *err, size_t errlen);

/* The frame header at h (NETP_HDR bytes): 0 with its type, flags and
 * payload length, or -EBADMSG for a length over NETP_MAX_FRAME, an unknown
 * type or flags other than NETP_F_MORE on a PUT. */
int netp_header(const uint8_t *h, uint32_t *type, unsigned *flags, uint32_t *len);

/* The frame at p (avail bytes): its whole size (> 0) with *type, *payload
 * and *plen set; 0 when more bytes are needed; -EBADMSG (netp_header()). */
long netp_frame(const uint8_t *p, size_t avail, uint32_t *type, const uint8_t **payload,
		uint32_t *plen);

enum {
	NETP_DONE_MORE = 0,  /* a frame replayed, the stream goes on */
	NETP_DONE_END = 1,   /* END: the capture was closed */
	NETP_DONE_ABORT = 2, /* ABORT: the capture was discarded */
};

/* Replay one whole frame's payload (not ZBATCH, not a part of a value) on
 * *cap.  NETP_DONE_*, or <0: -EBADMSG for a malformed frame, or the
 * capture's error (a value it refused: CYGPROF_E_CORRUPT); err (errlen
 * bytes) gets one line on failure.  END closes and ABORT discards the
 * capture: *cap is NULL after them (also when closing failed). */
int netp_dispatch(uint32_t type, const uint8_t *payload, uint32_t plen,
		  struct cygprof_capture **cap, char *err, size_t errlen);

/* The receiver of one stream: frames in, calls on cap out. */
struct netp_rx {
	struct cygprof_capture *cap;
	uint64_t max;   /* refuse more than this many bytes of frames (before
			 * compression; 0: no limit) */
	uint64_t total; /* bytes of frames so far, before compression */
	int in_batch;   /* between BEGIN and COMMIT */
	int ended;      /* END or ABORT replayed: cap is closed or gone */
	uint64_t parts; /* frames that were a part of a value */
	uint8_t *part;  /* the parts of a value so far: PUT header, key, value */
	size_t plen, pcap;
	uint8_t *zbuf;  /* a ZBATCH decompressed */
	size_t zcap;
	char err[512];  /* why the last call failed, one line */
};

/* One frame: its header (NETP_HDR bytes, checked by netp_header()) and
 * payload.  A ZBATCH counts by the length it states (checked against max
 * before it is decompressed) and its frames are replayed in turn; the parts
 * of a split value are joined (a frame of another kind or value in between
 * is malformed) and put as one.  NETP_DONE_*, or <0 with rx->err: -EFBIG
 * past max, -EBADMSG, or netp_dispatch()'s error. */
int netp_rx_frame(struct netp_rx *rx, const uint8_t *hdr, const uint8_t *payload);
void netp_rx_free(struct netp_rx *rx);

const char *netp_type_name(uint32_t type);

#endif
