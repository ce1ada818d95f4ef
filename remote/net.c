/* SPDX-License-Identifier: MIT */
/* net.c - sockets, token and handshake of `record --send` / `receive`. */
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
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 1) == 0) {
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

static int wait_fd(int fd, short ev, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = ev };
	for (;;) {
		int r = poll(&p, 1, timeout_ms);
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

int net_read_full(int fd, void *buf, size_t n, int timeout_ms)
{
	uint8_t *p = buf;
	while (n) {
		int rc = wait_fd(fd, POLLIN, timeout_ms);
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
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int net_write_full(int fd, const void *buf, size_t n, int timeout_ms)
{
	const uint8_t *p = buf;
	while (n) {
		int rc = wait_fd(fd, POLLOUT, timeout_ms);
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

static int io_err(int rc, const char *what, char *err, size_t errlen)
{
	if (rc == -EPIPE)
		netp_seterr(err, errlen, "connection closed during the handshake (%s)", what);
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

int net_handshake_server(int fd, const uint8_t *tok, size_t n, unsigned zwlog_max,
			 unsigned *zwlog, int timeout_ms, char *err, size_t errlen)
{
	uint8_t hello[16], reply[16 + NET_NONCE], mac[32], want[32];
	int rc = net_read_full(fd, hello, 12, timeout_ms);
	if (rc < 0)
		return io_err(rc, "hello", err, errlen);
	if (memcmp(hello, NETP_MAGIC, 8)) {
		netp_seterr(err, errlen, "the peer is not cygprof record --send");
		return -EPROTO;
	}
	memcpy(reply, NETP_MAGIC, 8);
	put32(reply + 8, NETP_VERSION);
	if (get32(hello + 8) != NETP_VERSION) {
		netp_seterr(err, errlen, "the sender speaks protocol %u, this receiver %u",
		       (unsigned)get32(hello + 8), NETP_VERSION);
		(void)net_write_full(fd, reply, 12, timeout_ms);
		return -EPROTO;
	}
	rc = net_read_full(fd, hello + 12, 4, timeout_ms);
	if (rc < 0)
		return io_err(rc, "hello", err, errlen);
	*zwlog = zwlog_agree(get32(hello + 12), zwlog_max);
	put32(reply + 12, *zwlog);
	if (getrandom(reply + 16, NET_NONCE, 0) != NET_NONCE) {
		netp_seterr(err, errlen, "getrandom: %s", strerror(errno));
		return -EIO;
	}
	rc = net_write_full(fd, reply, sizeof reply, timeout_ms);
	if (rc < 0)
		return io_err(rc, "nonce", err, errlen);
	rc = net_read_full(fd, mac, sizeof mac, timeout_ms);
	if (rc < 0)
		return io_err(rc, "proof", err, errlen);
	proof(tok, n, reply + 16, want);
	uint8_t verdict = ct_equal(mac, want, 32) ? 'K' : 'T';
	rc = net_write_full(fd, &verdict, 1, timeout_ms);
	if (verdict != 'K') {
		netp_seterr(err, errlen, "refused a sender with a wrong token");
		return -EACCES;
	}
	if (rc < 0)
		return io_err(rc, "verdict", err, errlen);
	return 0;
}

int net_handshake_client(int fd, const uint8_t *tok, size_t n, unsigned zwlog_offer,
			 unsigned *zwlog, int timeout_ms, char *err, size_t errlen)
{
	uint8_t hello[16], reply[16 + NET_NONCE], mac[32], verdict;
	memcpy(hello, NETP_MAGIC, 8);
	put32(hello + 8, NETP_VERSION);
	put32(hello + 12, zwlog_offer);
	int rc = net_write_full(fd, hello, sizeof hello, timeout_ms);
	if (rc < 0)
		return io_err(rc, "hello", err, errlen);
	rc = net_read_full(fd, reply, 12, timeout_ms);
	if (rc < 0)
		return io_err(rc, "hello", err, errlen);
	if (memcmp(reply, NETP_MAGIC, 8)) {
		netp_seterr(err, errlen, "the peer is not cygprof receive");
		return -EPROTO;
	}
	if (get32(reply + 8) != NETP_VERSION) {
		netp_seterr(err, errlen, "the receiver speaks protocol %u, this sender %u",
		       (unsigned)get32(reply + 8), NETP_VERSION);
		return -EPROTO;
	}
	rc = net_read_full(fd, reply + 12, 4 + NET_NONCE, timeout_ms);
	if (rc < 0)
		return io_err(rc, "nonce", err, errlen);
	*zwlog = get32(reply + 12);
	if (*zwlog && (*zwlog < NETP_ZWLOG_MIN || *zwlog > zwlog_offer)) {
		netp_seterr(err, errlen, "the receiver agreed to a compression window (%u) "
			    "this sender did not offer", *zwlog);
		return -EPROTO;
	}
	proof(tok, n, reply + 16, mac);
	rc = net_write_full(fd, mac, sizeof mac, timeout_ms);
	if (rc < 0)
		return io_err(rc, "proof", err, errlen);
	rc = net_read_full(fd, &verdict, 1, timeout_ms);
	if (rc < 0)
		return io_err(rc, "verdict", err, errlen);
	if (verdict != 'K') {
		netp_seterr(err, errlen, "the receiver refused the token");
		return -EACCES;
	}
	return 0;
}
