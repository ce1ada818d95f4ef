/* SPDX-License-Identifier: MIT */
/* net.c - sockets, token and handshake of `record --send` / `receive`, and
 * the receiver's accepting of senders and reading of their frames. */
#define _GNU_SOURCE
#include "net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "net-proto.h"
#include "sha256.h"

/* Split "HOST:PORT" / "[V6]:PORT" and resolve it. */
static int resolve(const char *spec, int passive, struct addrinfo **res, char *err, size_t errlen)
{
	char host[256];
	const char *port;
	const char *colon = strrchr(spec, ':');

	if (!colon || !colon[1]) {
		netp_seterr(err, errlen, "%s: expected ADDR:PORT", spec);
		return -EINVAL;
	}
	size_t hl = (size_t)(colon - spec);
	const char *h = spec;
	if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']')
		h++, hl -= 2;
	if (hl >= sizeof host) {
		netp_seterr(err, errlen, "%s: host name too long", spec);
		return -EINVAL;
	}
	memcpy(host, h, hl);
	host[hl] = 0;
	port = colon + 1;
	char *end;
	long pn = strtol(port, &end, 10);
	if (*end || pn < 0 || pn > 65535) {
		netp_seterr(err, errlen, "%s: bad port '%s'", spec, port);
		return -EINVAL;
	}
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0) };
	int rc = getaddrinfo(hl ? host : NULL, port, &hints, res);
	if (rc) {
		netp_seterr(err, errlen, "%s: %s", spec, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	return 0;
}

int net_listen(const char *spec, char *err, size_t errlen)
{
	struct addrinfo *res;
	int rc = resolve(spec, 1, &res, err, errlen);
	if (rc < 0)
		return rc;
	rc = -EADDRNOTAVAIL;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		int one = 1;
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, NET_BACKLOG) == 0) {
			freeaddrinfo(res);
			return fd;
		}
		rc = -errno;
		close(fd);
	}
	freeaddrinfo(res);
	netp_seterr(err, errlen, "listen on %s: %s", spec, strerror(-rc));
	return rc;
}

int net_connect(const char *spec, char *err, size_t errlen)
{
	struct addrinfo *res;
	int rc = resolve(spec, 0, &res, err, errlen);
	if (rc < 0)
		return rc;
	rc = -EHOSTUNREACH;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
			int one = 1;
			(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			freeaddrinfo(res);
			return fd;
		}
		rc = -errno;
		close(fd);
	}
	freeaddrinfo(res);
	netp_seterr(err, errlen, "connect to %s: %s", spec, strerror(-rc));
	return rc;
}

int net_local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -EAFNOSUPPORT;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A deadline timeout_ms from now (CLOCK_MONOTONIC, ms), or -1 for none. */
static int64_t deadline_in(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
}

/* Wait for ev on fd at most timeout_ms (-1: no limit), and never past
 * deadline (-1: none). */
static int wait_fd(int fd, short ev, int timeout_ms, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = ev };
	for (;;) {
		int t = timeout_ms;
		if (deadline >= 0) {
			int64_t left = deadline - now_ms();
			if (left <= 0)
				return -ETIMEDOUT;
			if (t < 0 || left < t)
				t = (int)left;
		}
		int r = poll(&p, 1, t);
		if (r > 0)
			return 0;
		if (r == 0 && (deadline < 0 || t == timeout_ms))
			return -ETIMEDOUT;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* net_read_full() with a deadline (-1: none) for all n bytes, and *got
 * (when set) counting the bytes read, those of a read cut short too. */
static int read_full(int fd, void *buf, size_t n, int timeout_ms, int64_t deadline,
		     uint64_t *got)
{
	uint8_t *p = buf;
	while (n) {
		int rc = wait_fd(fd, POLLIN, timeout_ms, deadline);
		if (rc < 0)
			return rc;
		ssize_t r = read(fd, p, n);
		if (r == 0)
			return -EPIPE;
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return errno == ECONNRESET ? -EPIPE : -errno;
		}
		if (got)
			*got += (uint64_t)r;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t n, int timeout_ms, int64_t deadline)
{
	const uint8_t *p = buf;
	while (n) {
		int rc = wait_fd(fd, POLLOUT, timeout_ms, deadline);
		if (rc < 0)
			return rc;
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return errno == ECONNRESET ? -EPIPE : -errno;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int net_read_full(int fd, void *buf, size_t n, int timeout_ms)
{
	return read_full(fd, buf, n, timeout_ms, -1, NULL);
}

int net_write_full(int fd, const void *buf, size_t n, int timeout_ms)
{
	return write_full(fd, buf, n, timeout_ms, -1);
}

int net_token_load(const char *path, uint8_t **tok, size_t *n, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		netp_seterr(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		netp_seterr(err, errlen, "%s: not a regular file", path);
		return -EINVAL;
	}
	if (st.st_mode & 077) {
		close(fd);
		netp_seterr(err, errlen, "%s: readable by others (chmod 600 it)", path);
		return -EPERM;
	}
	uint8_t *b = malloc(NET_TOKEN_MAX + 1);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, b + len, NET_TOKEN_MAX + 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len > NET_TOKEN_MAX)
			break;
	}
	close(fd);
	while (len && (b[len - 1] == '\n' || b[len - 1] == '\r'))
		len--;
	if (len > NET_TOKEN_MAX || len < NET_TOKEN_MIN) {
		free(b);
		netp_seterr(err, errlen, "%s: the token must have %d to %d bytes", path, NET_TOKEN_MIN,
		       NET_TOKEN_MAX);
		return -EINVAL;
	}
	*tok = b;
	*n = len;
	return 0;
}

static const char proof_label[] = "cygprof-send-v1";

static void proof(const uint8_t *tok, size_t n, const uint8_t nonce[NET_NONCE], uint8_t out[32])
{
	uint8_t msg[NET_NONCE + sizeof proof_label - 1];
	memcpy(msg, nonce, NET_NONCE);
	memcpy(msg + NET_NONCE, proof_label, sizeof proof_label - 1);
	hmac_sha256(tok, n, msg, sizeof msg, out);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int io_err(int rc, const char *what, int timeout_ms, char *err, size_t errlen)
{
	if (rc == -EPIPE)
		netp_seterr(err, errlen, "connection closed during the handshake (%s)", what);
	else if (rc == -ETIMEDOUT)
		netp_seterr(err, errlen, "handshake not done within %d ms (%s)", timeout_ms, what);
	else
		netp_seterr(err, errlen, "handshake (%s): %s", what, strerror(-rc));
	return rc;
}

/* The window a server agrees to for a client's offer: none (0) for no
 * offer or one it does not know, else the smaller of the two. */
static unsigned zwlog_agree(uint32_t offer, unsigned max)
{
	if (offer < NETP_ZWLOG_MIN || offer > 31 || max < NETP_ZWLOG_MIN)
		return 0;
	return offer < max ? offer : max;
}

/* net_handshake_server(), with the nonce fixed_nonce when it is set. */
static int handshake_server(int fd, const uint8_t *tok, size_t n, unsigned zwlog_max,
			    unsigned *zwlog, const uint8_t *fixed_nonce, int timeout_ms, char *err,
			    size_t errlen)
{
	uint8_t hello[16], reply[16 + NET_NONCE], mac[32], want[32];
	int64_t dl = deadline_in(timeout_ms);
	int rc = read_full(fd, hello, 12, -1, dl, NULL);
	if (rc < 0)
		return io_err(rc, "hello", timeout_ms, err, errlen);
	if (memcmp(hello, NETP_MAGIC, 8)) {
		netp_seterr(err, errlen, "the peer is not cygprof record --send");
		return -EPROTO;
	}
	memcpy(reply, NETP_MAGIC, 8);
	put32(reply + 8, NETP_VERSION);
	if (get32(hello + 8) != NETP_VERSION) {
		netp_seterr(err, errlen, "the sender speaks protocol %u, this receiver %u",
		       (unsigned)get32(hello + 8), NETP_VERSION);
		(void)write_full(fd, reply, 12, -1, dl);
		return -EPROTO;
	}
	rc = read_full(fd, hello + 12, 4, -1, dl, NULL);
	if (rc < 0)
		return io_err(rc, "hello", timeout_ms, err, errlen);
	*zwlog = zwlog_agree(get32(hello + 12), zwlog_max);
	put32(reply + 12, *zwlog);
	if (fixed_nonce) {
		memcpy(reply + 16, fixed_nonce, NET_NONCE);
	} else if (getrandom(reply + 16, NET_NONCE, 0) != NET_NONCE) {
		netp_seterr(err, errlen, "getrandom: %s", strerror(errno));
		return -EIO;
	}
	rc = write_full(fd, reply, sizeof reply, -1, dl);
	if (rc < 0)
		return io_err(rc, "nonce", timeout_ms, err, errlen);
	rc = read_full(fd, mac, sizeof mac, -1, dl, NULL);
	if (rc < 0)
		return io_err(rc, "proof", timeout_ms, err, errlen);
	proof(tok, n, reply + 16, want);
	uint8_t verdict = ct_equal(mac, want, 32) ? 'K' : 'T';
	rc = write_full(fd, &verdict, 1, -1, dl);
	if (verdict != 'K') {
		netp_seterr(err, errlen, "wrong token");
		return -EACCES;
	}
	if (rc < 0)
		return io_err(rc, "verdict", timeout_ms, err, errlen);
	return 0;
}

int net_handshake_server(int fd, const uint8_t *tok, size_t n, unsigned zwlog_max,
			 unsigned *zwlog, int timeout_ms, char *err, size_t errlen)
{
	return handshake_server(fd, tok, n, zwlog_max, zwlog, NULL, timeout_ms, err, errlen);
}

int net_handshake_client(int fd, const uint8_t *tok, size_t n, unsigned zwlog_offer,
			 unsigned *zwlog, int timeout_ms, char *err, size_t errlen)
{
	uint8_t hello[16], reply[16 + NET_NONCE], mac[32], verdict;
	int64_t dl = deadline_in(timeout_ms);
	memcpy(hello, NETP_MAGIC, 8);
	put32(hello + 8, NETP_VERSION);
	put32(hello + 12, zwlog_offer);
	int rc = write_full(fd, hello, sizeof hello, -1, dl);
	if (rc < 0)
		return io_err(rc, "hello", timeout_ms, err, errlen);
	rc = read_full(fd, reply, 12, -1, dl, NULL);
	if (rc < 0)
		return io_err(rc, "hello", timeout_ms, err, errlen);
	if (memcmp(reply, NETP_MAGIC, 8)) {
		netp_seterr(err, errlen, "the peer is not cygprof receive");
		return -EPROTO;
	}
	if (get32(reply + 8) != NETP_VERSION) {
		netp_seterr(err, errlen, "the receiver speaks protocol %u, this sender %u",
		       (unsigned)get32(reply + 8), NETP_VERSION);
		return -EPROTO;
	}
	rc = read_full(fd, reply + 12, 4 + NET_NONCE, -1, dl, NULL);
	if (rc < 0)
		return io_err(rc, "nonce", timeout_ms, err, errlen);
	*zwlog = get32(reply + 12);
	if (*zwlog && (*zwlog < NETP_ZWLOG_MIN || *zwlog > zwlog_offer)) {
		netp_seterr(err, errlen, "the receiver agreed to a compression window (%u) "
			    "this sender did not offer", *zwlog);
		return -EPROTO;
	}
	proof(tok, n, reply + 16, mac);
	rc = write_full(fd, mac, sizeof mac, -1, dl);
	if (rc < 0)
		return io_err(rc, "proof", timeout_ms, err, errlen);
	rc = read_full(fd, &verdict, 1, -1, dl, NULL);
	if (rc < 0)
		return io_err(rc, "verdict", timeout_ms, err, errlen);
	if (verdict != 'K') {
		netp_seterr(err, errlen, "the receiver refused the token");
		return -EACCES;
	}
	return 0;
}

/* A peer's address as "ADDR:PORT", "[V6]:PORT", or "local" (a unix
 * socket: the fuzzer's). */
static void peer_name(const struct sockaddr_storage *ss, socklen_t len, char *out, size_t outlen)
{
	char host[NI_MAXHOST], serv[NI_MAXSERV];

	if (ss->ss_family == AF_UNIX) {
		snprintf(out, outlen, "local");
		return;
	}
	if (getnameinfo((const struct sockaddr *)ss, len, host, sizeof host, serv, sizeof serv,
			NI_NUMERICHOST | NI_NUMERICSERV)) {
		snprintf(out, outlen, "an unknown address");
		return;
	}
	snprintf(out, outlen, ss->ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

/* accept(2)'s errors that belong to the connection, not to the listener
 * (its manual: retry as for EAGAIN). */
static int peer_error(int e)
{
	return e == ECONNABORTED || e == EPROTO || e == ENETDOWN || e == ENOPROTOOPT ||
	       e == EHOSTDOWN || e == ENONET || e == EHOSTUNREACH || e == EOPNOTSUPP ||
	       e == ENETUNREACH || e == EPERM;
}

int net_accept_sender(struct net_server *s, unsigned *zwlog, char *peer, size_t peerlen,
		      char *err, size_t errlen)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof ss;
		char why[512];
		int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);

		if (fd < 0) {
			int e = errno;
			if (e == EINTR)
				continue;
			if (peer_error(e)) { /* gone before it was accepted */
				s->nrefused++;
				if (s->refused) {
					snprintf(why, sizeof why, "accept: %s", strerror(e));
					s->refused(s->arg, "a peer", why);
				}
				continue;
			}
			if (e == EAGAIN || e == EWOULDBLOCK)
				return -EAGAIN;
			netp_seterr(err, errlen, "accept: %s", strerror(e));
			return -e;
		}
		peer_name(&ss, sl, peer, peerlen);
		/* One peer at a time: the others wait in the backlog, each
		 * for at most the handshakes of those before it. */
		int rc = handshake_server(fd, s->tok, s->ntok, s->zwlog_max, zwlog, s->fixed_nonce,
					  s->handshake_ms, why, sizeof why);
		if (rc == 0)
			return fd;
		close(fd);
		if (rc == -EIO) { /* getrandom failed: ours, not the peer's */
			netp_seterr(err, errlen, "%s", why);
			return rc;
		}
		s->nrefused++;
		if (s->refused)
			s->refused(s->arg, peer, why);
	}
}

int net_rx_conn(int fd, struct netp_rx *rx, int timeout_ms, uint64_t *wire)
{
	uint8_t hdr[NETP_HDR], *payload = NULL;
	size_t cap = 0;
	int rc;

	for (;;) {
		uint32_t type, len;
		unsigned flags;

		rc = read_full(fd, hdr, sizeof hdr, timeout_ms, -1, wire);
		if (rc < 0)
			break;
		if (netp_header(hdr, &type, &flags, &len) < 0) {
			rc = -EBADMSG;
			netp_seterr(rx->err, sizeof rx->err, "malformed frame header");
			break;
		}
		if (len > cap) {
			uint8_t *np = realloc(payload, len);
			if (!np) {
				rc = -ENOMEM;
				netp_seterr(rx->err, sizeof rx->err, "out of memory for a frame of %u bytes",
					    (unsigned)len);
				break;
			}
			payload = np;
			cap = len;
		}
		if (len) {
			rc = read_full(fd, payload, len, timeout_ms, -1, wire);
			if (rc < 0)
				break;
		}
		rc = netp_rx_frame(rx, hdr, payload);
		if (rc != NETP_DONE_MORE)
			break;
	}
	free(payload);
	return rc;
}
