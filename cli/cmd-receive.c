/* SPDX-License-Identifier: MIT */
/* cmd-receive.c - cygprof receive: accept connections, their handshakes
 * side by side, until one
 * `cygprof record --send` proves its token, and write what it streams as an
 * ordinary capture (docs/remote.md).  Every other peer (not cygprof, a
 * wrong token, too slow, gone during the handshake) costs one line and
 * nothing else.  A connection that ends before the sender's end leaves a
 * readable capture without "complete" and with "remote_error" saying what
 * happened. */
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
		"may read).  Any other peer (not cygprof, a wrong token, no hello within\n"
		"%d s, a handshake not done within %d s) is refused in one line and\n"
		"receive goes on listening.  Up to %d handshakes run side by side; those\n"
		"still running when a sender passes are refused, and peers connecting\n"
		"while it is served are closed when the capture ends.  When the sender's\n"
		"connection ends early the capture is kept, marked incomplete, and the exit\n"
		"status is 1.\n"
		"\n"
		"options:\n"
		"  --listen ADDR:PORT     where to listen (port 0: any; the port is printed)\n"
		"  --token-file FILE      the shared token (16 to 4096 bytes)\n"
		"  -o, --output FILE      the capture to write (default %s)\n"
		"  -f, --force            replace FILE even when it is not a capture\n"
		"  --max-bytes N          cut the stream once the capture passes N bytes\n"
		"                         (default 4G)\n"
		"  --timeout SEC          give up after SEC seconds without data from the\n"
		"                         sender (default: wait as long as the connection\n"
		"                         is up)\n"
		"  -h, --help             this help\n"
		"\n"
		"environment:\n"
		"  CYGPROF_HANDSHAKE_MS   each peer's whole handshake, in ms (default %d)\n",
		NET_HELLO_MS / 1000, NET_HANDSHAKE_MS / 1000, NET_HANDSHAKES, CYGPROF_DEFAULT_CAPTURE,
		NET_HANDSHAKE_MS);
}

struct recv_opts {
	const char *listen, *token_file, *output;
	uint64_t max_bytes;
	int timeout_ms, force;
	int handshake_ms; /* NET_HANDSHAKE_MS, or CYGPROF_HANDSHAKE_MS */
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
	const char *hs = getenv("CYGPROF_HANDSHAKE_MS");
	/* checked by cli_check_env() before: empty is unset */
	o->handshake_ms = hs && *hs ? (int)cli_parse_uint("receive", "CYGPROF_HANDSHAKE_MS", hs, 1,
						   600000)
			     : NET_HANDSHAKE_MS;
}

/* Keep what arrived: commit the open batch, say why it stopped, publish,
 * close (no "complete": readers show the capture as incomplete). */
static void keep_incomplete(struct cygprof_capture *cap, int in_batch, const char *why)
{
	if (in_batch)
		(void)cygprof_capture_commit(cap);
	(void)cygprof_capture_set_meta(cap, "remote_error", why);
	/* without its free pages; a failed compaction keeps it whole (the
	 * line that follows says it is kept, incomplete) */
	if (!cygprof_capture_seal(cap))
		(void)cygprof_capture_compact(cap, NULL);
	(void)cygprof_capture_publish(cap);
	(void)cygprof_capture_close(cap);
}

/* A peer refused during the handshake: one line, and receive goes on. */
static void refused(void *arg, const char *peer, const char *why)
{
	(void)arg;
	fprintf(stderr, "receive: refused %s: %s\n", peer, why);
}

int cmd_receive(int argc, char **argv)
{
	struct recv_opts o;
	char err[512] = "", peer[128];
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
	struct net_server srv = { .lfd = lfd, .tok = tok, .ntok = ntok, .zwlog_max = NETP_ZWLOG,
				  .handshake_ms = o.handshake_ms, .refused = refused };
	unsigned zwlog;
	int fd = net_accept_sender(&srv, &zwlog, peer, sizeof peer, err, sizeof err);
	if (fd < 0)
		cli_die(1, "receive: %s", err);
	free(tok);
	/* One capture per receive: the peers still in their handshake were
	 * refused, those waiting in the backlog are closed when receive exits. */

	struct netp_rx x = { .max = o.max_bytes, .zwlog = zwlog };
	int rc = cygprof_capture_create(o.output, &x.cap);
	if (rc < 0)
		cli_die(1, "receive: %s: %s", o.output, cygprof_strerror(rc));
	uint64_t wire = 0; /* bytes read after the handshake */
	char why[900];

	rc = net_rx_conn(fd, &x, o.timeout_ms, &wire);
	if (rc == NETP_DONE_END || rc == NETP_DONE_ABORT) {
		netp_rx_free(&x);
		close(fd);
		close(lfd);
		if (rc == NETP_DONE_ABORT)
			cli_die(1, "receive: the sender %s gave up the capture", peer);
		if (x.err[0]) /* the capture is whole: only its compaction failed */
			cli_warn("warning: %s: %s", o.output, x.err);
		fprintf(stderr, "receive: %s: %" PRIu64 " bytes received from %s (%" PRIu64
			" uncompressed)\n", o.output, wire, peer, x.total);
		return 0;
	}
	if (x.ended) /* closing the capture failed: nothing more to keep */
		cli_die(1, "receive: %s: %s", o.output, x.err);
	netp_rx_free(&x); /* a value cut in parts is dropped: the last whole one stays */
	close(fd);
	close(lfd);
	char got[320];
	snprintf(got, sizeof got, "after %" PRIu64 " bytes received from %s (%" PRIu64
		 " uncompressed)", wire, peer, x.total);
	if (rc == -EPIPE)
		snprintf(why, sizeof why, "connection lost %s", got);
	else if (rc == -ETIMEDOUT)
		snprintf(why, sizeof why, "no data for %d s %s", o.timeout_ms / 1000, got);
	else if (x.err[0])
		snprintf(why, sizeof why, "%s %s", x.err, got);
	else
		snprintf(why, sizeof why, "%s %s", strerror(-rc), got);
	keep_incomplete(x.cap, x.in_batch, why);
	cli_die(1, "receive: %s; %s kept, incomplete", why, o.output);
	return 1;
}
