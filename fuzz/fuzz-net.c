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
 * An input that begins with CONN_SEP is several connections instead: the
 * byte streams between the separators, each written by a client of its own
 * to a unix socket the harness listens on, then closed for writing.  The
 * receiver's own accept loop (net_accept_sender(): the handshake with its
 * deadline) takes them in order with a fixed nonce, so that an input can
 * prove the token (FUZZ_TOKEN); every peer refused must be reported in one
 * line, and the connection served must be the first one that begins with a
 * valid hello and proof: none before it refused, none without them let in.
 * The one served is read by the receiver's frame loop (net_rx_conn()),
 * which must count every byte it read, into a stream capture as above; the
 * connections after it stay in the backlog until the listener closes, as
 * when receive exits.
 *
 * Linked with replay-main.c instead it is a plain program that runs the
 * same function over files and directories given on the command line (the
 * seed corpus as a unit test in every build).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "net-proto.h"
#include "net.h"
#include "sha256.h"

/* Between the connections of an input (fuzz/net-corpus.py --connections). */
#define CONN_SEP "CYGPCONN"
#define CONN_SEP_LEN 8
#define MAX_CONNS 8
/* The token and nonce of the connections (net-corpus.py knows them). */
#define FUZZ_TOKEN "fuzz-corpus-token-0123456789"
static const uint8_t fuzz_nonce[NET_NONCE] = "fuzz-net: a fixed 32-byte nonce";

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

/* One connection's bytes, as far as its client could write them. */
struct conn {
	const uint8_t *p;
	size_t n;
	int fd; /* the client's end */
};

/* Whether c begins with the hello and the proof of the token over the
 * fixed nonce (docs/remote.md "Handshake and token"): what passes. */
static int proves_token(const struct conn *c)
{
	static const char label[] = "cygprof-send-v1";
	uint8_t msg[NET_NONCE + sizeof label - 1], mac[32];

	uint8_t version[4] = { NETP_VERSION & 0xff, NETP_VERSION >> 8 & 0xff,
			       NETP_VERSION >> 16 & 0xff, NETP_VERSION >> 24 };

	if (c->n < 16 + 32 || memcmp(c->p, NETP_MAGIC, 8) || memcmp(c->p + 8, version, 4))
		return 0;
	memcpy(msg, fuzz_nonce, NET_NONCE);
	memcpy(msg + NET_NONCE, label, sizeof label - 1);
	hmac_sha256(FUZZ_TOKEN, sizeof FUZZ_TOKEN - 1, msg, sizeof msg, mac);
	return !memcmp(c->p + 16, mac, 32);
}

struct refusals {
	unsigned n;
};

static void on_refused(void *arg, const char *peer, const char *why)
{
	struct refusals *r = arg;
	if (strcmp(peer, "local") || !why[0] || strchr(why, '\n'))
		abort(); /* a peer refused is named, with why, in one line */
	r->n++;
}

/* A listening unix socket of an abstract name the kernel picks; its
 * address in *a, *alen. */
static int listener(struct sockaddr_un *a, socklen_t *alen)
{
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lfd < 0)
		abort();
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	*alen = sizeof a->sun_family; /* autobind */
	if (bind(lfd, (struct sockaddr *)a, *alen) || listen(lfd, MAX_CONNS + 1))
		abort();
	*alen = sizeof *a;
	if (getsockname(lfd, (struct sockaddr *)a, alen))
		abort();
	return lfd;
}

static void connections(const uint8_t *data, size_t size)
{
	struct conn c[MAX_CONNS];
	size_t nc = 0;
	struct sockaddr_un a;
	socklen_t alen;
	int lfd = listener(&a, &alen);

	/* Split at the separators, then connect and write each in turn. */
	const uint8_t *p = data + CONN_SEP_LEN, *end = data + size;
	while (nc < MAX_CONNS) {
		const uint8_t *q = memmem(p, (size_t)(end - p), CONN_SEP, CONN_SEP_LEN);
		c[nc].p = p;
		c[nc].n = (size_t)((q ? q : end) - p);
		c[nc].fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (c[nc].fd < 0 || connect(c[nc].fd, (struct sockaddr *)&a, alen))
			abort();
		ssize_t w = c[nc].n ? send(c[nc].fd, c[nc].p, c[nc].n, MSG_NOSIGNAL) : 0;
		if (w < 0 && errno != EAGAIN)
			abort();
		c[nc].n = w < 0 ? 0 : (size_t)w; /* what the socket took */
		shutdown(c[nc].fd, SHUT_WR);
		nc++;
		if (!q)
			break;
		p = q + CONN_SEP_LEN;
	}

	struct refusals ref = { 0 };
	struct net_server srv = { .lfd = lfd, .tok = (const uint8_t *)FUZZ_TOKEN,
				  .ntok = sizeof FUZZ_TOKEN - 1, .zwlog_max = NETP_ZWLOG,
				  .handshake_ms = NET_HANDSHAKE_MS, .refused = on_refused,
				  .arg = &ref, .fixed_nonce = fuzz_nonce };
	unsigned zwlog = 99;
	char peer[64], err[512];
	size_t first = nc; /* the first connection that proves the token */
	for (size_t i = 0; i < nc && first == nc; i++)
		if (proves_token(&c[i]))
			first = i;
	int fd = net_accept_sender(&srv, &zwlog, peer, sizeof peer, err, sizeof err);
	if (ref.n != srv.nrefused)
		abort();
	if (fd < 0) {
		/* every connection refused, and none could pass */
		if (fd != -EAGAIN || first != nc || ref.n != nc)
			abort();
	} else {
		/* the first one that proves the token, no sooner, no later */
		if (first == nc || ref.n != first || strcmp(peer, "local") || zwlog > NETP_ZWLOG)
			abort();
		struct netp_enc enc = { 0 };
		struct netp_rx rx = { .zwlog = zwlog };
		uint64_t wire = 0;
		if (cygprof_capture_create_stream(&netp_stream, &enc, &rx.cap))
			abort();
		int rc = net_rx_conn(fd, &rx, 1000, &wire);
		size_t after = c[first].n - 48; /* the bytes after the handshake */
		/* The frame loop read every byte that came when the stream
		 * ended with the connection, never more; it never waits here. */
		if (wire > after || (rc == -EPIPE && wire != after) || rc == -ETIMEDOUT)
			abort();
		if (rc < 0 && rc != -EPIPE && (!rx.err[0] || strchr(rx.err, '\n')))
			abort(); /* a refusal says why, in one line */
		if (!rx.ended)
			cygprof_capture_discard(rx.cap);
		netp_rx_free(&rx);
		netp_enc_free(&enc);
		close(fd);
	}
	for (size_t i = 0; i < nc; i++)
		close(c[i].fd);
	close(lfd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= CONN_SEP_LEN && !memcmp(data, CONN_SEP, CONN_SEP_LEN)) {
		connections(data, size);
		return 0;
	}
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
