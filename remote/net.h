/* SPDX-License-Identifier: MIT */
/* net.h - the TCP side of `record --send` / `receive` (docs/remote.md):
 * addresses, full reads and writes with a timeout, the token and the
 * handshake.  Every function returns 0 (or an fd) or a negative errno, with
 * one line in err on failure. */
#ifndef CYGPROF_NET_H
#define CYGPROF_NET_H

#include <stddef.h>
#include <stdint.h>

struct netp_rx;

#define NET_TOKEN_MIN 16
#define NET_TOKEN_MAX 4096
#define NET_NONCE 32
/* Connections the kernel completes and queues while receive is busy with
 * another (the peers in their handshake, or the sender it serves). */
#define NET_BACKLOG 16
/* Peers receive takes through their handshake side by side; one more
 * drops the one nearest its deadline (net_accept_sender()). */
#define NET_HANDSHAKES 32
/* A peer's hello (16 bytes, sent as soon as it connects) must have come
 * within this of its accept, or within the whole handshake's deadline
 * when that is shorter: a peer holding its connection or trickling its
 * hello occupies a place for a second at most. */
#define NET_HELLO_MS 1000
/* The deadline of a whole handshake on the receiver's side: a peer that has
 * not proved its token within it is dropped (a legitimate one needs three
 * round trips).  receive's CYGPROF_HANDSHAKE_MS overrides it (tests). */
#define NET_HANDSHAKE_MS 10000

/* "HOST:PORT" or "[V6]:PORT": a listening socket (SO_REUSEADDR, backlog
 * NET_BACKLOG) or a connected one (connected within NET_CONNECT_MS: a
 * listener whose backlog is full drops the SYNs, which the kernel retries
 * for two minutes). */
#define NET_CONNECT_MS 30000
int net_listen(const char *spec, char *err, size_t errlen);
int net_connect(const char *spec, char *err, size_t errlen);
/* The port a socket is bound to (for --listen with port 0). */
int net_local_port(int fd);

/* -EPIPE when the peer closed (for a read: before n bytes came),
 * -ETIMEDOUT after timeout_ms without progress (-1: no limit). */
int net_read_full(int fd, void *p, size_t n, int timeout_ms);
int net_write_full(int fd, const void *p, size_t n, int timeout_ms);

/* Read a token file: at most NET_TOKEN_MAX bytes, trailing newlines
 * stripped, at least NET_TOKEN_MIN left; refused when group or others may
 * read it.  *tok owned: free(). */
int net_token_load(const char *path, uint8_t **tok, size_t *n, char *err, size_t errlen);

/* The handshake: version and compression, then the client proves it
 * knows the token by HMAC-SHA256(token, nonce || "cygprof-send-v1") over
 * the server's random nonce; the token itself never travels.  The client
 * offers a zstd window (log2, 0: no compression), the server agrees to the
 * smaller of that and zwlog_max (0: none), and both sides get the same
 * *zwlog: the window of the ZBATCH stream (struct netp_enc and netp_rx),
 * or 0 for frames sent as they are.  -EACCES for a wrong token (both
 * sides), -EPROTO for a peer that is not cygprof or of another version,
 * -EPIPE for a peer that closed, -ETIMEDOUT when the whole handshake took
 * more than timeout_ms (one deadline, not one per read; the client's
 * message says how long it waited). */
int net_handshake_server(int fd, const uint8_t *tok, size_t n, unsigned zwlog_max,
			 unsigned *zwlog, int timeout_ms, char *err, size_t errlen);
int net_handshake_client(int fd, const uint8_t *tok, size_t n, unsigned zwlog_offer,
			 unsigned *zwlog, int timeout_ms, char *err, size_t errlen);

/* A listening socket's side of receive: take the peers through their
 * handshakes side by side (at most NET_HANDSHAKES at once, each within
 * NET_HELLO_MS for its hello and handshake_ms in all) until one passes.
 * Every other peer is refused, closed and reported in one line (refused()),
 * and costs nothing else. */
struct net_server {
	int lfd;                /* net_listen(); non-blocking or not: see net_accept_sender() */
	const uint8_t *tok;     /* the token (borrowed), ntok bytes */
	size_t ntok;
	unsigned zwlog_max;     /* the compression window agreed at most (NETP_ZWLOG) */
	int handshake_ms;       /* each peer's whole handshake (NET_HANDSHAKE_MS); its
				 * hello within NET_HELLO_MS or this, the shorter */
	/* A peer refused: its address and why, each one line; NULL: silent. */
	void (*refused)(void *arg, const char *peer, const char *why);
	void *arg;
	/* NULL, or NET_NONCE bytes used as every nonce instead of random
	 * ones: the fuzzer only, which must be able to prove a token. */
	const uint8_t *fixed_nonce;
	uint64_t nrefused;      /* peers refused so far */
};

/* Accept connections on s->lfd until a peer completes the handshake; return
 * its socket (blocking; close() it), with *zwlog the window agreed and peer
 * its address ("ADDR:PORT", "[V6]:PORT", or "local" for a unix socket).  A
 * peer that is not cygprof, of another version, with a wrong token, that
 * closes or does not finish within its deadlines is refused; so is the one
 * nearest its deadline when a peer comes with NET_HANDSHAKES in theirs, and
 * every one still in its handshake when another passes (one accept(2)
 * itself fails, ECONNABORTED..., is reported as "a peer").  Peers whose
 * bytes are all there are served in the order they came.  -EAGAIN when
 * s->lfd is non-blocking and no peer waits or is in its handshake; another
 * negative errno when accept(2) fails for the listener's own sake (EMFILE,
 * ENOMEM...: err says so), or getrandom fails. */
int net_accept_sender(struct net_server *s, unsigned *zwlog, char *peer, size_t peerlen,
		      char *err, size_t errlen);

/* Read the frames of an accepted sender from fd and replay them into rx
 * (netp_rx_frame()) until END or ABORT: NETP_DONE_END or NETP_DONE_ABORT.
 * Else <0: -EPIPE the connection ended, -ETIMEDOUT no byte for timeout_ms
 * (-1: no limit), other read errors (rx->err empty for these: the caller
 * says what happened); or with rx->err set, -EBADMSG a malformed frame,
 * -ENOMEM, or what netp_rx_frame() returned.  *wire counts every byte read
 * from fd (those of a frame cut short too). */
int net_rx_conn(int fd, struct netp_rx *rx, int timeout_ms, uint64_t *wire);

#endif
