/* SPDX-License-Identifier: MIT */
/* cmd-receive.c - cygprof receive: accept one `cygprof record --send`
 * connection, check its token and write what it streams as an ordinary
 * capture (docs/remote.md).  A connection that ends before the sender's
 * end leaves a readable capture without "complete" and with
 * "remote_error" saying what happened. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "cygprof/cygprof-capture.h"
#include "net-proto.h"
#include "net.h"

#define RECEIVE_MAX_DEFAULT (4ull << 30)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof receive --listen ADDR:PORT --token-file FILE [options]\n"
		"\n"
		"Wait for one 'cygprof record --send ADDR:PORT' and write the capture it\n"
		"streams.  The sender must know the token of FILE (which only its owner\n"
		"may read).  When the connection ends early the capture is kept, marked\n"
		"incomplete, and the exit status is 1.\n"
		"\n"
		"options:\n"
		"  --listen ADDR:PORT     where to listen (port 0: any; the port is printed)\n"
		"  --token-file FILE      the shared token (16 to 4096 bytes)\n"
		"  -o, --output FILE      the capture to write (default %s)\n"
		"  -f, --force            replace FILE even when it is not a capture\n"
		"  --max-bytes N          refuse a stream longer than N bytes (default 4G)\n"
		"  --timeout SEC          give up after SEC seconds without data (default:\n"
		"                         wait as long as the connection is up)\n"
		"  -h, --help             this help\n",
		CYGPROF_DEFAULT_CAPTURE);
}

struct recv_opts {
	const char *listen, *token_file, *output;
	uint64_t max_bytes;
	int timeout_ms, force;
};

static void parse_opts(int argc, char **argv, struct recv_opts *o)
{
	enum { O_LISTEN = 256, O_TOKEN, O_MAX, O_TIMEOUT };
	static const struct option lopts[] = {
		{"listen", required_argument, NULL, O_LISTEN},
		{"token-file", required_argument, NULL, O_TOKEN},
		{"output", required_argument, NULL, 'o'},
		{"force", no_argument, NULL, 'f'},
		{"max-bytes", required_argument, NULL, O_MAX},
		{"timeout", required_argument, NULL, O_TIMEOUT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->output = CYGPROF_DEFAULT_CAPTURE;
	o->max_bytes = RECEIVE_MAX_DEFAULT;
	o->timeout_ms = -1;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":ho:f", lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case 'o':
			o->output = optarg;
			break;
		case 'f':
			o->force = 1;
			break;
		case O_LISTEN:
			o->listen = optarg;
			break;
		case O_TOKEN:
			o->token_file = optarg;
			break;
		case O_MAX:
			o->max_bytes = cli_parse_size("receive", "--max-bytes", optarg, 1024,
						      UINT64_MAX);
			break;
		case O_TIMEOUT:
			o->timeout_ms = (int)cli_parse_uint("receive", "--timeout", optarg, 1,
								86400) * 1000;
			break;
		default:
			cli_bad_option("receive", c, argv);
		}
	}
	if (optind < argc)
		cli_die(2, "receive: unexpected argument '%s' (see 'cygprof receive --help')",
			argv[optind]);
	if (!o->listen)
		cli_die(2, "receive: needs --listen ADDR:PORT");
	if (!o->token_file)
		cli_die(2, "receive: needs --token-file FILE");
}

/* Keep what arrived: commit the open batch, say why it stopped, publish,
 * close (no "complete": readers show the capture as incomplete). */
static void keep_incomplete(struct cygprof_capture *cap, int in_batch, const char *why)
{
	if (in_batch)
		(void)cygprof_capture_commit(cap);
	(void)cygprof_capture_set_meta(cap, "remote_error", why);
	(void)cygprof_capture_publish(cap);
	(void)cygprof_capture_close(cap);
}

/* The state of one stream. */
struct rx {
	const struct cap_sink *sink;
	int in_batch;
	int ended; /* END or ABORT was replayed: the capture is closed or gone */
	uint64_t total, max; /* the frames' bytes (uncompressed), --max-bytes */
	struct netp_join join; /* a tree or sites frame split in parts */
	char *err;
	size_t errlen;
};

/* Count n more bytes of frames: -EFBIG past --max-bytes. */
static int rx_count(struct rx *x, uint64_t n)
{
	x->total += n;
	if (x->total <= x->max)
		return 0;
	snprintf(x->err, x->errlen, "the stream passed --max-bytes %" PRIu64, x->max);
	return -EFBIG;
}

/* Replay one frame (not ZBATCH; flags from its header): NETP_DONE_* or < 0. */
static int rx_frame(struct rx *x, uint32_t type, unsigned flags, const uint8_t *p, uint32_t len)
{
	const uint8_t *jp;
	uint32_t jlen;
	int rc = netp_join(&x->join, type, flags, p, len, &jp, &jlen, x->err, x->errlen);
	if (rc)
		return rc > 0 ? NETP_DONE_MORE : rc; /* a part kept, or refused */
	rc = netp_dispatch(type, jp, jlen, x->sink, x->err, x->errlen);
	if (type == NETP_T_END || type == NETP_T_ABORT)
		x->ended = 1;
	if (rc >= 0 && type == NETP_T_BEGIN)
		x->in_batch = 1;
	else if (rc >= 0 && type == NETP_T_COMMIT)
		x->in_batch = 0;
	return rc;
}

/* Replay the frames of a ZBATCH payload. */
static int rx_zbatch(struct rx *x, const uint8_t *p, uint32_t len, uint8_t **zbuf, size_t *zcap)
{
	size_t n, off = 0;
	uint32_t raw = len >= 4 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
					  (uint32_t)p[3] << 24
				: 0;
	/* the stated size counts before anything is decompressed */
	int rc = rx_count(x, raw);
	if (rc < 0)
		return rc;
	rc = netp_unzip(p, len, zbuf, zcap, &n, x->err, x->errlen);
	if (rc < 0)
		return rc;
	while (off < n) {
		uint32_t type = 0, plen = 0;
		const uint8_t *pp = NULL;
		long fl = netp_frame(*zbuf + off, n - off, &type, &pp, &plen);
		if (fl <= 0 || type == NETP_T_ZBATCH) {
			snprintf(x->err, x->errlen, "malformed zbatch frame (a frame inside cut or "
				 "nested)");
			return -EBADMSG;
		}
		off += (size_t)fl;
		rc = rx_frame(x, type, netp_flags(pp - NETP_HDR), pp, plen);
		if (rc != NETP_DONE_MORE)
			return rc;
	}
	return NETP_DONE_MORE;
}

int cmd_receive(int argc, char **argv)
{
	struct recv_opts o;
	char err[512] = "";
	uint8_t *tok;
	size_t ntok;

	parse_opts(argc, argv, &o);
	cli_output_check("receive", o.output, OUT_CAPTURE, o.force, NULL);
	if (net_token_load(o.token_file, &tok, &ntok, err, sizeof err) < 0)
		cli_die(2, "receive: --token-file %s", err);
	int lfd = net_listen(o.listen, err, sizeof err);
	if (lfd < 0)
		cli_die(lfd == -EINVAL ? 2 : 1, "receive: %s", err);
	fprintf(stderr, "receive: listening on port %d\n", net_local_port(lfd));
	int fd;
	do
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		cli_die(1, "receive: accept: %s", strerror(errno));
	close(lfd);
	int hs_timeout = o.timeout_ms > 0 ? o.timeout_ms : 30000;
	if (net_handshake_server(fd, tok, ntok, hs_timeout, err, sizeof err) < 0)
		cli_die(1, "receive: %s", err);
	free(tok);

	struct cygprof_capture *cap;
	int rc = cygprof_capture_create(o.output, &cap);
	if (rc < 0)
		cli_die(1, "receive: %s: %s", o.output, cygprof_strerror(rc));
	struct cap_sink sink = cap_sink_capture(cap);
	uint8_t hdr[NETP_HDR], *payload = NULL, *zbuf = NULL;
	size_t pcap = 0, zcap = 0;
	uint64_t wire = 0;
	char why[600];
	struct rx x = { .sink = &sink, .max = o.max_bytes, .err = err, .errlen = sizeof err };

	for (;;) {
		uint32_t type = 0, plen = 0;
		const uint8_t *pp;
		rc = net_read_full(fd, hdr, sizeof hdr, o.timeout_ms);
		if (rc < 0)
			break;
		uint32_t len = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 |
			       (uint32_t)hdr[3] << 24;
		long fl = netp_frame(hdr, sizeof hdr, &type, &pp, &plen);
		if (fl < 0) {
			rc = -EBADMSG;
			snprintf(err, sizeof err, "malformed frame header");
			break;
		}
		type = (uint32_t)hdr[4] | (uint32_t)hdr[5] << 8;
		wire += NETP_HDR + (uint64_t)len;
		/* a compressed batch counts by what it holds (rx_zbatch) */
		if (type != NETP_T_ZBATCH && (rc = rx_count(&x, NETP_HDR + (uint64_t)len)) < 0)
			break;
		if (len > pcap) {
			uint8_t *np = realloc(payload, len);
			if (!np) {
				rc = -ENOMEM;
				snprintf(err, sizeof err, "out of memory");
				break;
			}
			payload = np;
			pcap = len;
		}
		if (len) {
			rc = net_read_full(fd, payload, len, o.timeout_ms);
			if (rc < 0)
				break;
		}
		if (type == NETP_T_ZBATCH)
			rc = rx_zbatch(&x, payload, len, &zbuf, &zcap);
		else
			rc = rx_frame(&x, type, netp_flags(hdr), payload, len);
		if (rc == NETP_DONE_END || rc == NETP_DONE_ABORT) {
			netp_join_free(&x.join);
			free(payload);
			free(zbuf);
			close(fd);
			if (rc == NETP_DONE_ABORT)
				cli_die(1, "receive: the sender gave up the capture");
			fprintf(stderr, "receive: %s: %" PRIu64 " bytes received (%" PRIu64
				" uncompressed)\n", o.output, wire, x.total);
			return 0;
		}
		if (rc < 0)
			break;
	}
	if (x.ended) /* closing the capture failed: nothing more to keep */
		cli_die(1, "receive: %s: %s", o.output, err);
	uint64_t total = x.total;
	int in_batch = x.in_batch;
	netp_join_free(&x.join); /* a tree cut in parts is dropped: the last whole one stays */
	free(zbuf);
	free(payload);
	close(fd);
	if (rc == -EPIPE)
		snprintf(why, sizeof why, "connection lost after %" PRIu64 " bytes", total);
	else if (rc == -ETIMEDOUT)
		snprintf(why, sizeof why, "no data for %d s after %" PRIu64 " bytes",
			 o.timeout_ms / 1000, total);
	else if (err[0])
		snprintf(why, sizeof why, "%s after %" PRIu64 " bytes", err, total);
	else
		snprintf(why, sizeof why, "%s after %" PRIu64 " bytes", strerror(-rc), total);
	keep_incomplete(cap, in_batch, why);
	cli_die(1, "receive: %s; %s kept, incomplete", why, o.output);
	return 1;
}
