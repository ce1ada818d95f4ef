/* SPDX-License-Identifier: MIT */
/* fuzz-net.c - libFuzzer harness for the receiving side of `cygprof
 * receive` (remote/net-proto.c, docs/remote.md "Frames"), down to the
 * capture library's check of every value it is given
 * (cygprof_capture_put_value(): the reader's decoders).
 *
 * Each input is a stream as it follows the handshake (compression agreed,
 * a window of 2^NETP_ZWLOG): its frames are cut with netp_frame() and fed
 * to a receiver (netp_rx_frame(): ZBATCH frames decompressed as one zstd
 * stream, split values joined, every frame replayed) until the input ends,
 * a frame is refused, or END/ABORT.  The receiver's capture is a
 * stream capture whose stream is the sender's encoder (netp_stream), so
 * every frame accepted is encoded again and must give back the same bytes
 * (a ZBATCH: the frames inside; frames joined from parts are left out); a
 * refused frame must say why in one line; a frame never runs past the
 * input.  It aborts otherwise.  Built with -Dfuzz=true (clang): see
 * fuzz/README.md.
 *
 * Linked with replay-main.c instead it is a plain program that runs the
 * same function over files and directories given on the command line (the
 * seed corpus as a unit test in every build).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What the frame at f (fl bytes) just received must encode back to:
 * itself, or the frames inside a ZBATCH (decompressed by the receiver). */
static size_t expected(const struct netp_rx *rx, const uint8_t *f, long fl, uint32_t type,
		       const uint8_t **want)
{
	*want = f;
	if (type != NETP_T_ZBATCH)
		return (size_t)fl;
	*want = rx->zbuf;
	return rx->zlen;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct netp_enc enc = { 0 };
	struct netp_rx rx = { .zwlog = NETP_ZWLOG }; /* as agreed by record --send */
	size_t off = 0;

	if (cygprof_capture_create_stream(&netp_stream, &enc, &rx.cap))
		abort();
	while (off < size && !rx.ended) {
		uint32_t type = 0, plen = 0;
		const uint8_t *payload = NULL, *want;
		long fl = netp_frame(data + off, size - off, &type, &payload, &plen);

		if (fl <= 0)
			break;
		if ((size_t)fl > size - off || payload != data + off + NETP_HDR ||
		    (size_t)fl != NETP_HDR + (size_t)plen)
			abort(); /* a frame past the input */
		uint64_t parts = rx.parts;
		enc.len = 0;
		int rc = netp_rx_frame(&rx, data + off, payload);
		if (rc < 0) {
			if (!rx.err[0] || strchr(rx.err, '\n'))
				abort(); /* a refusal says why, in one line */
			break;
		}
		size_t n = expected(&rx, data + off, fl, type, &want);
		/* decoded and encoded again: the same frames (all of them, or
		 * those before an END or ABORT inside a ZBATCH) */
		if (rx.parts == parts && n &&
		    (enc.len > n || (rc == NETP_DONE_MORE && enc.len != n) ||
		     (enc.len && memcmp(enc.buf, want, enc.len))))
			abort();
		off += (size_t)fl;
	}
	if (!rx.ended)
		cygprof_capture_discard(rx.cap);
	netp_rx_free(&rx);
	netp_enc_free(&enc);
	return 0;
}
