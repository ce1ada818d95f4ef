/* SPDX-License-Identifier: MIT */
/* net-proto.h - the frames of `record --send` / `receive` (docs/remote.md):
 * a transport for the values of a stream capture
 * (cygprof_capture_create_stream()).  The sender's stream callbacks
 * (netp_stream) turn each put into a PUT frame of the capture's own key and
 * value bytes and each begin, commit, publish, close and discard into a
 * frame of its own, and compress the batches as one zstd stream per
 * connection (ZBATCH frames); the receiver (struct netp_rx) decompresses
 * that stream, joins the parts of a split value and replays every frame
 * into an LMDB capture (cygprof_capture_put_value() and friends).  No
 * record is encoded or decoded here: the capture library does both. */
#ifndef CYGPROF_NET_PROTO_H
#define CYGPROF_NET_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "cygprof/cygprof-capture.h"

#define NETP_MAGIC "CYGPNET\n" /* 8 bytes, both directions of the handshake */
#define NETP_VERSION 5u /* 4: no latency DB (schema 7); 3: stack nodes one a value,
			 * no cpu DB (schema 5); 2: memory blocks of flags 0
			 * only; 1: one codec per record type */
#define NETP_HDR 8u                       /* u32 len, u16 type, u16 flags */
#define NETP_MAX_FRAME (64u << 20)        /* payload bytes */
#define NETP_FLUSH_AT (1u << 20)          /* the sender flushes past this */
#define NETP_F_MORE 1u /* flags: a part of a PUT's value, more parts follow */
#define NETP_PUT_HDR 4u /* a PUT payload: u16 db, u16 key length, key, value */
#define NETP_ZMIN 256u  /* a flush this large goes out compressed */
/* The window of a connection's zstd stream (log2, agreed in the handshake):
 * 8 MiB, so that a value put again (an open event block, at most 256 KiB
 * stored, at each commit) finds the copy put before across the other
 * values of a commit; what a receiver accepts at most. */
#define NETP_ZWLOG 23u
#define NETP_ZWLOG_MIN 10u /* zstd's smallest window */
#define NETP_ZLEVEL 1      /* zstd's fastest */

enum netp_type {
	NETP_T_BEGIN = 1, /* cygprof_capture_begin() */
	NETP_T_COMMIT,    /* cygprof_capture_commit() */
	NETP_T_PUT,       /* one value: cygprof_capture_put_value() */
	NETP_T_PUBLISH,   /* the capture becomes visible at its path */
	NETP_T_END,       /* close: the run is over */
	NETP_T_ABORT,     /* discard */
	NETP_T_ZBATCH,    /* u32 raw length + the connection's zstd stream: whole frames */
	NETP_T_COUNT_
};

/* The sender's state, the arg of netp_stream: frames accumulate in buf;
 * flush (when set) is called with the whole buffer at each commit, publish,
 * close and discard and when the buffer passes NETP_FLUSH_AT, and returns 0
 * or a negative errno, which is the stream capture's error from then on.
 * Without flush the buffer just grows (tests).  With zwlog set (the window
 * the handshake agreed, net_handshake_client()), a flush of NETP_ZMIN bytes
 * or more, and the last one, go out as one ZBATCH frame: the next bytes of
 * the connection's one zstd stream (one ZSTD_CCtx, each batch ended with a
 * flush, the last with the end of the frame), so that a value put again
 * costs little more than what changed; smaller flushes go out as they are,
 * outside the stream. */
struct netp_enc {
	uint8_t *buf;
	size_t len, cap;
	int (*flush)(void *arg, const uint8_t *p, size_t n);
	void *arg;
	uint64_t sent; /* bytes flushed so far (compressed: what went out) */
	uint64_t raw;  /* the frames' bytes before compression */
	unsigned zwlog; /* compress with this window log; 0: no compression */
	uint32_t max_frame; /* split values past this payload size (0: NETP_MAX_FRAME; tests) */
	void *zc;      /* ZSTD_CCtx: the connection's stream */
	int zfail;     /* the stream failed (no memory): no compression from then on */
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
 * bytes) gets one line on failure.  END seals, compacts and closes, and
 * ABORT discards the capture: *cap is NULL after them (also when closing
 * failed); after an END that compaction failed (the capture is kept
 * whole) err says so, and NETP_DONE_END is returned. */
int netp_dispatch(uint32_t type, const uint8_t *payload, uint32_t plen,
		  struct cygprof_capture **cap, char *err, size_t errlen);

/* The receiver of one stream: frames in, calls on cap out. */
struct netp_rx {
	struct cygprof_capture *cap;
	uint64_t max;   /* refuse a stream once cap's file passes this many
			 * bytes (cygprof_capture_file_size(); 0: no limit) */
	unsigned zwlog; /* the window agreed in the handshake
			 * (net_handshake_server()); 0: a ZBATCH is malformed */
	uint64_t total; /* bytes of frames so far, before compression */
	int in_batch;   /* between BEGIN and COMMIT */
	int ended;      /* END or ABORT replayed: cap is closed or gone */
	uint64_t parts; /* frames that were a part of a value */
	uint8_t *part;  /* the parts of a value so far: PUT header, key, value */
	size_t plen, pcap;
	void *zd;       /* ZSTD_DCtx: the connection's stream */
	uint8_t *zbuf;  /* the frames of the last ZBATCH, zlen bytes */
	size_t zlen, zcap;
	char err[512];  /* why the last call failed, one line */
};

/* The frames of a ZBATCH payload: the next bytes of the connection's zstd
 * stream, decompressed into rx->zbuf (rx->zlen bytes) with a window of at
 * most 2^rx->zwlog.  -EBADMSG (rx->err says why, one line) without
 * compression agreed, or when the bytes do not decompress to exactly the
 * raw length they state (at most NETP_MAX_FRAME), or need a larger window;
 * -ENOMEM; -EINVAL for a window zstd does not have.  After an error the
 * stream cannot go on. */
int netp_unzip(struct netp_rx *rx, const uint8_t *payload, uint32_t plen);

/* One frame: its header (NETP_HDR bytes, checked by netp_header()) and
 * payload.  A ZBATCH is decompressed (netp_unzip()) and its frames are
 * replayed in turn; the parts of a split value are joined (a frame of
 * another kind or value in between is malformed) and put as one.
 * NETP_DONE_*, or <0 with rx->err: -EFBIG once the capture passed max,
 * -EBADMSG, or netp_dispatch()'s error. */
int netp_rx_frame(struct netp_rx *rx, const uint8_t *hdr, const uint8_t *payload);
void netp_rx_free(struct netp_rx *rx);

const char *netp_type_name(uint32_t type);

#endif
