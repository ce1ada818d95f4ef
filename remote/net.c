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

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* connect(2) given up at deadline dl (CLOCK_MONOTONIC ms): 0 or -errno. */
static int connect_within(int fd, const struct sockaddr *sa, socklen_t len, int64_t dl)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	int rc = connect(fd, sa, len) == 0 ? 0 : -errno;
	while (rc == -EINPROGRESS || rc == -EINTR) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int64_t left = dl - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		int r = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0) {
			int e = 0;
			socklen_t el = sizeof e;
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
				e = errno;
			rc = -e;
		}
	}
	if (rc == 0 && fcntl(fd, F_SETFL, fl) < 0)
		rc = -errno;
	return rc;
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
	int64_t t0 = now_ms(), dl = t0 + NET_CONNECT_MS;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		rc = connect_within(fd, a->ai_addr, a->ai_addrlen, dl);
		if (rc == 0) {
			int one = 1;
			(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			freeaddrinfo(res);
			return fd;
		}
		close(fd);
		if (rc == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	if (rc == -ETIMEDOUT)
		netp_seterr(err, errlen, "connect to %s: no answer after %.1f s", spec,
			    (double)(now_ms() - t0) / 1000);
	else
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

/* ---- the receiver's side of the handshake, as a state machine ----------
 *
 * One struct hs per peer in its handshake, advanced by hs_step() as far as
 * its socket allows without waiting (MSG_DONTWAIT), so that one poll()
 * serves many peers side by side: a peer that trickles its hello or holds
 * its connection costs the others nothing.  net_handshake_server() runs
 * the same steps on one socket, waiting in poll() between them. */

enum hs_stepno {
	HS_HELLO,   /* reading the magic and version (12 bytes) */
	HS_OFFER,   /* reading the compression offer (4 bytes) */
	HS_NONCE,   /* writing magic, version, window and nonce */
	HS_PROOF,   /* reading the HMAC */
	HS_VERDICT, /* writing K or T */
	HS_BYE,     /* writing magic and version to a peer of another version */
};

static const char *const hs_what[] = { "hello", "hello", "nonce", "proof", "verdict", "hello" };

struct hs {
	int fd;
	enum hs_stepno step;
	int refuse;             /* after HS_VERDICT or HS_BYE: the error to give */
	unsigned zwlog;
	size_t got, sent, nout;
	int64_t hello_dl, dl;   /* deadlines (CLOCK_MONOTONIC ms): the hello, the whole */
	int hello_ms, ms;       /* what they were set to, for the message */
	uint8_t hello[16], mac[32], out[16 + NET_NONCE];
	char why[200];          /* the refusal said after HS_VERDICT or HS_BYE */
	char peer[64];
};

static int hs_deadline(const struct hs *h)
{
	return h->step <= HS_OFFER && h->hello_dl < h->dl ? 0 : 1;
}

/* The deadline that applies now, and the limit it was set to. */
static int64_t hs_due(const struct hs *h, int *ms)
{
	if (hs_deadline(h) == 0) {
		if (ms)
			*ms = h->hello_ms;
		return h->hello_dl;
	}
	if (ms)
		*ms = h->ms;
	return h->dl;
}

/* Read what the current step still needs: 1 done, 0 would block, <0 error. */
static int hs_in(struct hs *h, uint8_t *buf, size_t want)
{
	while (h->got < want) {
		ssize_t r = recv(h->fd, buf + h->got, want - h->got, MSG_DONTWAIT);
		if (r == 0)
			return -EPIPE;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return errno == ECONNRESET ? -EPIPE : -errno;
		}
		h->got += (size_t)r;
	}
	h->got = 0;
	return 1;
}

static int hs_out(struct hs *h)
{
	while (h->sent < h->nout) {
		ssize_t r = send(h->fd, h->out + h->sent, h->nout - h->sent,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return errno == ECONNRESET ? -EPIPE : -errno;
		}
		h->sent += (size_t)r;
	}
	h->sent = h->nout = 0;
	return 1;
}

static void hs_queue(struct hs *h, const void *p, size_t n)
{
	memcpy(h->out, p, n);
	h->nout = n;
	h->sent = 0;
}

/* Advance h as far as its socket allows: 1 the peer proved its token
 * (h->zwlog agreed), 0 it must wait (POLLIN, or POLLOUT: hs_events()),
 * <0 refused with err saying why.  -EIO: getrandom failed (ours). */
static int hs_step(struct hs *h, const struct net_server *s, char *err, size_t errlen)
{
	uint8_t want[32];
	int rc;

	for (;;) {
		switch (h->step) {
		case HS_HELLO:
			if ((rc = hs_in(h, h->hello, 12)) <= 0)
				goto io;
			if (memcmp(h->hello, NETP_MAGIC, 8)) {
				netp_seterr(err, errlen, "the peer is not cygprof record --send");
				return -EPROTO;
			}
			if (get32(h->hello + 8) != NETP_VERSION) {
				uint8_t bye[12];
				memcpy(bye, NETP_MAGIC, 8);
				put32(bye + 8, NETP_VERSION);
				hs_queue(h, bye, 12);
				snprintf(h->why, sizeof h->why,
					 "the sender speaks protocol %u, this receiver %u",
					 (unsigned)get32(h->hello + 8), NETP_VERSION);
				h->refuse = -EPROTO;
				h->step = HS_BYE;
				break;
			}
			h->step = HS_OFFER;
			break;
		case HS_OFFER:
			if ((rc = hs_in(h, h->hello + 12, 4)) <= 0)
				goto io;
			h->zwlog = zwlog_agree(get32(h->hello + 12), s->zwlog_max);
			memcpy(h->out, NETP_MAGIC, 8);
			put32(h->out + 8, NETP_VERSION);
			put32(h->out + 12, h->zwlog);
			if (s->fixed_nonce) {
				memcpy(h->out + 16, s->fixed_nonce, NET_NONCE);
			} else if (getrandom(h->out + 16, NET_NONCE, 0) != NET_NONCE) {
				netp_seterr(err, errlen, "getrandom: %s", strerror(errno));
				return -EIO;
			}
			h->nout = sizeof h->out;
			h->sent = 0;
			h->step = HS_NONCE;
			break;
		case HS_NONCE:
			if ((rc = hs_out(h)) <= 0)
				goto io;
			h->step = HS_PROOF;
			break;
		case HS_PROOF: {
			if ((rc = hs_in(h, h->mac, sizeof h->mac)) <= 0)
				goto io;
			proof(s->tok, s->ntok, h->out + 16, want);
			uint8_t verdict = ct_equal(h->mac, want, 32) ? 'K' : 'T';
			if (verdict != 'K') {
				snprintf(h->why, sizeof h->why, "wrong token");
				h->refuse = -EACCES;
			}
			hs_queue(h, &verdict, 1);
			h->step = HS_VERDICT;
			break;
		}
		case HS_VERDICT:
		case HS_BYE:
			rc = hs_out(h);
			if (h->refuse && rc != 0) { /* said, or not: refused either way */
				netp_seterr(err, errlen, "%s", h->why);
				return h->refuse;
			}
			if (rc <= 0)
				goto io;
			return 1;
		}
	}
io:
	if (rc == 0)
		return 0;
	return io_err(rc, hs_what[h->step], h->ms, err, errlen);
}

/* What h waits for. */
static short hs_events(const struct hs *h)
{
	return h->step == HS_NONCE || h->step == HS_VERDICT || h->step == HS_BYE ? POLLOUT : POLLIN;
}

static void hs_init(struct hs *h, int fd, int hello_ms, int ms)
{
	int64_t now = now_ms();

	memset(h, 0, sizeof *h);
	h->fd = fd;
	h->ms = ms;
	h->hello_ms = hello_ms < ms ? hello_ms : ms;
	/* + 1: now_ms() truncates, and the peer gets all its milliseconds */
	h->dl = now + ms + 1;
	h->hello_dl = now + h->hello_ms + 1;
}

/* The handshake on one socket, waiting in poll() between the steps. */
static int handshake_server(int fd, const struct net_server *s, unsigned *zwlog, char *err,
			    size_t errlen)
{
	struct hs h;

	hs_init(&h, fd, s->handshake_ms, s->handshake_ms);
	for (;;) {
		int rc = hs_step(&h, s, err, errlen);
		if (rc > 0) {
			*zwlog = h.zwlog;
			return 0;
		}
		if (rc < 0)
			return rc;
		int ms;
		int64_t due = hs_due(&h, &ms);
		rc = wait_fd(fd, hs_events(&h), -1, due);
		if (rc < 0)
			return io_err(rc, hs_what[h.step], ms, err, errlen);
	}
}

int net_handshake_server(int fd, const uint8_t *tok, size_t n, unsigned zwlog_max,
			 unsigned *zwlog, int timeout_ms, char *err, size_t errlen)
{
	struct net_server s = { .lfd = -1, .tok = tok, .ntok = n, .zwlog_max = zwlog_max,
				.handshake_ms = timeout_ms };
	if (timeout_ms < 0)
		s.handshake_ms = INT32_MAX / 2; /* none: far enough */
	return handshake_server(fd, &s, zwlog, err, errlen);
}

/* The client's io_err(): how long it actually waited, not its limit. */
static int client_err(int rc, const char *what, int64_t t0, char *err, size_t errlen)
{
	if (rc != -ETIMEDOUT)
		return io_err(rc, what, 0, err, errlen);
	netp_seterr(err, errlen, "handshake not done after %.1f s (%s)",
		    (double)(now_ms() - t0) / 1000, what);
	return rc;
}

int net_handshake_client(int fd, const uint8_t *tok, size_t n, unsigned zwlog_offer,
			 unsigned *zwlog, int timeout_ms, char *err, size_t errlen)
{
	uint8_t hello[16], reply[16 + NET_NONCE], mac[32], verdict;
	int64_t t0 = now_ms(), dl = deadline_in(timeout_ms);
	memcpy(hello, NETP_MAGIC, 8);
	put32(hello + 8, NETP_VERSION);
	put32(hello + 12, zwlog_offer);
	int rc = write_full(fd, hello, sizeof hello, -1, dl);
	if (rc < 0)
		return client_err(rc, "hello", t0, err, errlen);
	rc = read_full(fd, reply, 12, -1, dl, NULL);
	if (rc < 0)
		return client_err(rc, "hello", t0, err, errlen);
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
		return client_err(rc, "nonce", t0, err, errlen);
	*zwlog = get32(reply + 12);
	if (*zwlog && (*zwlog < NETP_ZWLOG_MIN || *zwlog > zwlog_offer)) {
		netp_seterr(err, errlen, "the receiver agreed to a compression window (%u) "
			    "this sender did not offer", *zwlog);
		return -EPROTO;
	}
	proof(tok, n, reply + 16, mac);
	rc = write_full(fd, mac, sizeof mac, -1, dl);
	if (rc < 0)
		return client_err(rc, "proof", t0, err, errlen);
	rc = read_full(fd, &verdict, 1, -1, dl, NULL);
	if (rc < 0)
		return client_err(rc, "verdict", t0, err, errlen);
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

/* A peer refused: counted, reported, closed. */
static void hs_refuse(struct net_server *s, struct hs *h, const char *why)
{
	close(h->fd);
	s->nrefused++;
	if (s->refused)
		s->refused(s->arg, h->peer, why);
}

/* Drop entry i of the table of n, keeping the others in the order they
 * were accepted (the order their refusals are reported in). */
static void hs_drop(struct hs *hs, int *n, int i)
{
	memmove(&hs[i], &hs[i + 1], (size_t)(*n - i - 1) * sizeof *hs);
	(*n)--;
}

int net_accept_sender(struct net_server *s, unsigned *zwlog, char *peer, size_t peerlen,
		      char *err, size_t errlen)
{
	struct hs *hs = calloc(NET_HANDSHAKES, sizeof *hs);
	struct pollfd *pf = calloc(NET_HANDSHAKES + 1, sizeof *pf);
	int lflags = fcntl(s->lfd, F_GETFL);
	int n = 0, rc = 0, won = -1;
	char why[512];

	if (!hs || !pf || lflags < 0) {
		rc = lflags < 0 ? -errno : -ENOMEM;
		netp_seterr(err, errlen, "accept: %s", strerror(-rc));
		goto out;
	}
	/* accept(2) must not wait: the peers in their handshake are served
	 * between two connections (the caller's flags are put back) */
	if (!(lflags & O_NONBLOCK) && fcntl(s->lfd, F_SETFL, lflags | O_NONBLOCK) < 0) {
		rc = -errno;
		netp_seterr(err, errlen, "accept: %s", strerror(-rc));
		goto out;
	}
	for (;;) {
		/* Every peer waiting in the backlog, each taken as far as
		 * what it sent allows at once: peers that sent everything
		 * are served in the order they came. */
		for (;;) {
			struct sockaddr_storage ss;
			socklen_t sl = sizeof ss;
			int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl,
					 SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (fd < 0) {
				int e = errno;
				if (e == EINTR)
					continue;
				if (e == EAGAIN || e == EWOULDBLOCK)
					break;
				if (peer_error(e)) { /* gone before it was accepted */
					s->nrefused++;
					if (s->refused) {
						snprintf(why, sizeof why, "accept: %s", strerror(e));
						s->refused(s->arg, "a peer", why);
					}
					continue;
				}
				netp_seterr(err, errlen, "accept: %s", strerror(e));
				rc = -e;
				goto out;
			}
			if (n == NET_HANDSHAKES) {
				/* Full: the peer nearest its deadline (one still in
				 * its hello, long before a sender past it) makes
				 * room; nobody waits for a place. */
				int old = 0;
				for (int i = 1; i < n; i++)
					if (hs_due(&hs[i], NULL) < hs_due(&hs[old], NULL))
						old = i;
				snprintf(why, sizeof why, "dropped for a newer peer: %d handshakes "
					 "at once", NET_HANDSHAKES);
				hs_refuse(s, &hs[old], why);
				hs_drop(hs, &n, old);
			}
			struct hs *h = &hs[n++];
			hs_init(h, fd, NET_HELLO_MS, s->handshake_ms);
			peer_name(&ss, sl, h->peer, sizeof h->peer);
			int r = hs_step(h, s, why, sizeof why);
			if (r > 0) {
				won = n - 1;
				goto out;
			}
			if (r == -EIO) { /* getrandom failed: ours, not the peer's */
				netp_seterr(err, errlen, "%s", why);
				rc = r;
				goto out;
			}
			if (r < 0) {
				hs_refuse(s, h, why);
				hs_drop(hs, &n, n - 1);
			}
		}
		if (!n && (lflags & O_NONBLOCK)) {
			rc = -EAGAIN;
			goto out;
		}
		/* Wait for the listener, the peers, or the nearest deadline. */
		int64_t due = -1;
		for (int i = 0; i < n; i++) {
			pf[i] = (struct pollfd){ .fd = hs[i].fd, .events = hs_events(&hs[i]) };
			int64_t d = hs_due(&hs[i], NULL);
			if (due < 0 || d < due)
				due = d;
		}
		pf[n] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
		int64_t left = due < 0 ? -1 : due - now_ms();
		int pr = poll(pf, (nfds_t)n + 1, left < 0 ? (due < 0 ? -1 : 0)
						  : left > INT32_MAX ? INT32_MAX : (int)left);
		if (pr < 0 && errno != EINTR) {
			rc = -errno;
			netp_seterr(err, errlen, "poll: %s", strerror(-rc));
			goto out;
		}
		/* The peers that can go on, in the order they came; then those
		 * past their deadline. */
		int64_t now = now_ms();
		for (int i = 0, k = 0; i < n; k++) {
			short re = pr > 0 ? pf[k].revents : 0;
			int r = 0, ms;
			if (re)
				r = hs_step(&hs[i], s, why, sizeof why);
			if (r > 0) {
				won = i;
				goto out;
			}
			if (r == -EIO) {
				netp_seterr(err, errlen, "%s", why);
				rc = r;
				goto out;
			}
			if (!r && hs_due(&hs[i], &ms) <= now)
				r = io_err(-ETIMEDOUT, hs_what[hs[i].step], ms, why, sizeof why);
			if (r < 0) {
				hs_refuse(s, &hs[i], why);
				hs_drop(hs, &n, i);
				continue;
			}
			i++;
		}
	}
out:
	if (lflags >= 0 && !(lflags & O_NONBLOCK))
		(void)fcntl(s->lfd, F_SETFL, lflags);
	if (won >= 0) {
		struct hs *h = &hs[won];
		rc = h->fd;
		*zwlog = h->zwlog;
		snprintf(peer, peerlen, "%s", h->peer);
		/* the sender's frames are read with poll() and a deadline:
		 * a blocking socket as before */
		int fl = fcntl(rc, F_GETFL);
		if (fl >= 0)
			(void)fcntl(rc, F_SETFL, fl & ~O_NONBLOCK);
		hs_drop(hs, &n, won);
	}
	/* One sender per receive: the peers still in their handshake are
	 * refused (those in the backlog are closed unseen when it exits). */
	for (int i = 0; hs && i < n; i++)
		hs_refuse(s, &hs[i], rc >= 0 ? "another sender is being received"
					     : "receive stopped");
	free(hs);
	free(pf);
	return rc;
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
