/* SPDX-License-Identifier: MIT */
/* fuzz-net.c - libFuzzer harness for the frame decoder of `cygprof receive`
 * (remote/net-proto.c, docs/remote.md "Frames").
 *
 * Each input is a stream as it follows the handshake: frames are cut with
 * netp_frame() and replayed with netp_dispatch() into the net sink (the
 * encoder), as cmd-receive.c replays them into a capture, until the input
 * ends, a frame is refused, or END/ABORT; a ZBATCH frame is decompressed
 * with netp_unzip() and its frames replayed the same way; the parts of a
 * split TREE or SITES frame are joined first (netp_join()).  Every frame
 * the decoder accepts whole must encode back to the same bytes (the thread
 * name excepted: the decoder ends it with a NUL), a refused one must say
 * why in one line, and a frame's length never runs past the input.  Built with -Dfuzz=true (clang): see
 * fuzz/README.md.
 *
 * Linked with replay-main.c instead it is a plain program that runs the
 * same function over files and directories given on the command line (the seed
 * corpus as a unit test in every build).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Replay the frames of data; inside a ZBATCH (nested), a ZBATCH is refused.
 * 1 when END or ABORT was replayed or a frame refused: the stream stops. */
static int run_frames(const uint8_t *data, size_t size, int nested, struct netp_enc *enc,
		      const struct cap_sink *sink, struct netp_join *join)
{
	size_t off = 0;

	while (off < size) {
		uint32_t type = 0, plen = 0;
		const uint8_t *payload = NULL;
		char err[256] = "";
		long fl = netp_frame(data + off, size - off, &type, &payload, &plen);

		if (fl <= 0)
			return 1;
		if ((size_t)fl > size - off || payload != data + off + NETP_HDR ||
		    (size_t)fl != NETP_HDR + (size_t)plen)
			abort(); /* a frame past the input */
		off += (size_t)fl;
		if (type == NETP_T_ZBATCH) {
			uint8_t *buf = NULL;
			size_t cap = 0, n = 0;
			int stop = 1;
			if (nested)
				return 1;
			if (netp_unzip(payload, plen, &buf, &cap, &n, err, sizeof err) == 0) {
				if (n > NETP_MAX_FRAME)
					abort(); /* more than the payload may state */
				stop = run_frames(buf, n, 1, enc, sink, join);
			} else if (!err[0] || strchr(err, '\n')) {
				abort();
			}
			free(buf);
			if (stop)
				return 1;
			continue;
		}
		const uint8_t *jp;
		uint32_t jlen;
		int jr = netp_join(join, type, netp_flags(data + off - (size_t)fl), payload, plen, &jp,
				   &jlen, err, sizeof err);
		if (jr < 0) {
			if (!err[0] || strchr(err, '\n'))
				abort();
			return 1;
		}
		if (jr > 0)
			continue; /* a part of a split frame */
		enc->len = 0;
		int rc = netp_dispatch(type, jp, jlen, sink, err, sizeof err);
		if (rc < 0) {
			if (!err[0] || strchr(err, '\n'))
				abort(); /* a refusal says why, in one line */
			return 1;
		}
		if (enc->err)
			abort(); /* the encoder refused what the decoder accepted */
		if (type != NETP_T_THREAD && jp == payload &&
		    (enc->len != (size_t)fl || memcmp(enc->buf, payload - NETP_HDR, enc->len)))
			abort(); /* decoded and encoded again: not the same frame */
		if (rc == NETP_DONE_END || rc == NETP_DONE_ABORT)
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct netp_enc enc = { 0 };
	struct cap_sink sink = cap_sink_net(&enc);
	struct netp_join join = { 0 };

	run_frames(data, size, 0, &enc, &sink, &join);
	netp_join_free(&join);
	netp_enc_free(&enc);
	return 0;
}
