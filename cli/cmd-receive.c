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
		"  --max-bytes N          cut the stream once the capture passes N bytes\n"
		"                         (default 4G)\n"
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

int cmd_receive(int argc, char **argv)
{
	struct recv_opts o;
	char err[512] = "";
	uint8_t *tok;
	size_t ntok;

	parse_opts(argc, argv, &o);
	cli_output_check("receive", o.output, OUT_CAPTURE, o.force, NULL);
	cli_output_lock("receive", o.output);
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
	unsigned zwlog;
	if (net_handshake_server(fd, tok, ntok, NETP_ZWLOG, &zwlog, hs_timeout, err, sizeof err) < 0)
		cli_die(1, "receive: %s", err);
	free(tok);

	struct netp_rx x = { .max = o.max_bytes, .zwlog = zwlog };
	int rc = cygprof_capture_create(o.output, &x.cap);
	if (rc < 0)
		cli_die(1, "receive: %s: %s", o.output, cygprof_strerror(rc));
	uint8_t hdr[NETP_HDR], *payload = NULL;
	size_t pcap = 0;
	uint64_t wire = 0;
	char why[600];

	for (;;) {
		uint32_t type, len;
		unsigned flags;
		rc = net_read_full(fd, hdr, sizeof hdr, o.timeout_ms);
		if (rc < 0)
			break;
		if (netp_header(hdr, &type, &flags, &len) < 0) {
			rc = -EBADMSG;
			snprintf(x.err, sizeof x.err, "malformed frame header");
			break;
		}
		wire += NETP_HDR + (uint64_t)len;
		if (len > pcap) {
			uint8_t *np = realloc(payload, len);
			if (!np) {
				rc = -ENOMEM;
				snprintf(x.err, sizeof x.err, "out of memory");
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
		rc = netp_rx_frame(&x, hdr, payload);
		if (rc == NETP_DONE_END || rc == NETP_DONE_ABORT) {
			netp_rx_free(&x);
			free(payload);
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
		cli_die(1, "receive: %s: %s", o.output, x.err);
	netp_rx_free(&x); /* a value cut in parts is dropped: the last whole one stays */
	free(payload);
	close(fd);
	if (rc == -EPIPE)
		snprintf(why, sizeof why, "connection lost after %" PRIu64 " bytes", x.total);
	else if (rc == -ETIMEDOUT)
		snprintf(why, sizeof why, "no data for %d s after %" PRIu64 " bytes",
			 o.timeout_ms / 1000, x.total);
	else if (x.err[0])
		snprintf(why, sizeof why, "%s after %" PRIu64 " bytes", x.err, x.total);
	else
		snprintf(why, sizeof why, "%s after %" PRIu64 " bytes", strerror(-rc), x.total);
	keep_incomplete(x.cap, x.in_batch, why);
	cli_die(1, "receive: %s; %s kept, incomplete", why, o.output);
	return 1;
}
