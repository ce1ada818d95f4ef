/* SPDX-License-Identifier: MIT */
/* net.h - the TCP side of `record --send` / `receive` (docs/remote.md):
 * addresses, full reads and writes with a timeout, the token and the
 * handshake.  Every function returns 0 (or an fd) or a negative errno, with
 * one line in err on failure. */
#ifndef CYGPROF_NET_H
#define CYGPROF_NET_H

#include <stddef.h>
#include <stdint.h>

#define NET_TOKEN_MIN 16
#define NET_TOKEN_MAX 4096
#define NET_NONCE 32

/* "HOST:PORT" or "[V6]:PORT": a listening socket (SO_REUSEADDR, backlog 1)
 * or a connected one. */
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
 * sides), -EPROTO for a peer that is not cygprof or of another version. */
int net_handshake_server(int fd, const uint8_t *tok, size_t n, unsigned zwlog_max,
			 unsigned *zwlog, int timeout_ms, char *err, size_t errlen);
int net_handshake_client(int fd, const uint8_t *tok, size_t n, unsigned zwlog_offer,
			 unsigned *zwlog, int timeout_ms, char *err, size_t errlen);

#endif
