/* SPDX-License-Identifier: MIT */
/* output.c - the capture a run writes: a new LMDB capture at -o, or with
 * record --send a stream capture whose values go out as frames on the
 * connected socket (remote/net-proto.h; docs/remote.md).  The collector
 * writes both through the same cygprof_capture_* calls; only here do they
 * differ: how they are made and what the end reports. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include "collector-private.h"
#include "view.h"
#include "net-proto.h"
#include "net.h"

/* record --send: a write making no progress for this long loses the
 * connection (a receiver that stopped reading). */
#define SEND_TIMEOUT_MS 60000

/* The frames' flush: the buffer onto the socket. */
static int send_flush(void *arg, const uint8_t *p, size_t n)
{
	return net_write_full(*(int *)arg, p, n, SEND_TIMEOUT_MS);
}

/* The one line for a lost connection (or any failed send). */
static void send_lost(const struct collector *c, const struct netp_enc *enc, int rc,
		      int status, char *err, size_t errlen)
{
	const struct collector_opts *o = c->o;
	char st[300];

	if (c->attach)
		snprintf(st, sizeof st, "; the process attached to runs on");
	else if (WIFSIGNALED(status))
		snprintf(st, sizeof st, "; %s ran on to its end, killed by signal %d", o->argv[0],
			 WTERMSIG(status));
	else
		snprintf(st, sizeof st, "; %s ran on to its end, exit status %d", o->argv[0],
			 WEXITSTATUS(status));
	snprintf(err, errlen, "record: connection to %s lost after %llu bytes: %s%s", o->send_to,
		 (unsigned long long)enc->sent,
		 rc == -EPIPE ? "the receiver closed it"
		 : rc == -ETIMEDOUT ? "the receiver stopped reading"
				    : cygprof_strerror(rc),
		 st);
}

static int disk_full(const char *path)
{
	char dir[4096];
	struct statvfs sv;
	char *slash;

	snprintf(dir, sizeof dir, "%s", path);
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = 0;
	else
		snprintf(dir, sizeof dir, ".");
	return statvfs(dir, &sv) == 0 && sv.f_bavail < 16;
}

void collector_write_failed(struct collector *c, int err)
{
	uint64_t now = tick_ns(c, collector_now(c));

	if (!err || c->werr)
		return;
	if (err != CYGPROF_E_FULL && !c->o->send_to && disk_full(c->o->output))
		err = CYGPROF_E_FULL;
	c->werr = err;
	c->werr_ns = c->err && c->err_ns <= now ? c->err_ns : now;
}

int collector_output_open(struct collector *c, struct netp_enc *enc, int *send_fd, char *err,
			  size_t errlen)
{
	const struct collector_opts *o = c->o;
	int rc;

	memset(enc, 0, sizeof *enc);
	if (o->send_to) {
		/* frames, batched: flushed at each commit and past NETP_FLUSH_AT */
		enc->flush = send_flush;
		enc->arg = send_fd;
		enc->zwlog = o->send_zwlog; /* one zstd stream, as the handshake agreed */
		rc = cygprof_capture_create_stream(&netp_stream, enc, &c->cap);
		if (!rc)
			rc = collector_put_meta_static(c);
		if (rc)
			snprintf(err, errlen, "cannot stream to %s: %s", o->send_to,
				 cygprof_strerror(rc));
		return rc;
	}
	rc = cygprof_capture_create(o->output, &c->cap);
	/* what the recording is, before anything else: a capture cut short
	 * at any moment (a full disk, a killed collector) still says it */
	if (!rc) {
		/* one transaction: a file system with little room left holds it */
		rc = cygprof_capture_begin(c->cap);
		if (!rc)
			rc = collector_put_meta_static(c);
		if (!rc)
			rc = cygprof_capture_commit(c->cap);
		if (rc) {
			cygprof_capture_discard(c->cap);
			c->cap = NULL;
		}
	}
	if (rc)
		snprintf(err, errlen, "cannot create capture '%s': %s", o->output,
			 cygprof_strerror(rc));
	return rc;
}

int collector_output_end(struct collector *c, struct netp_enc *enc, int rc, int status,
			 struct collector_result *res, char *err, size_t errlen)
{
	const struct collector_opts *o = c->o;
	int e;

	/* the share of calls in system headers (record warns when most are
	 * there), read through the writer's own handle: reopening the file
	 * would map it again */
	if (!rc && !o->send_to && !o->time_sampled) {
		struct view_opts vo = {.debuginfo = c->dbg, .raw_times = 1};
		struct view *v;

		if (!view_new(c->cap, &vo, &v)) {
			if (view_sysheader_calls(v, &res->sysheader_calls, &res->tree_calls))
				res->sysheader_calls = res->tree_calls = 0;
			view_close(v);
		}
	}
	/* sealed: the file keeps only its live pages (a failure keeps it
	 * whole, with a warning) */
	if (!rc && !o->send_to && !o->no_compact)
		res->compact_err = cygprof_capture_compact(c->cap, &res->compact_saved);
	e = cygprof_capture_close(c->cap);

	c->cap = NULL;
	if (!rc)
		rc = e;
	if (o->send_to) {
		/* a failed write of the frames is the stream's error from then
		 * on, which close returns: the connection is lost */
		if (e < 0)
			send_lost(c, enc, e, status, err, errlen);
		else if (rc)
			snprintf(err, errlen, "record: sending to %s: %s", o->send_to,
				 cygprof_strerror(rc));
		res->capture_bytes = enc->sent;
		netp_enc_free(enc);
		return rc;
	}
	if (rc && rc != CYGPROF_E_FULL && disk_full(o->output))
		rc = CYGPROF_E_FULL; /* LMDB may report a failed write as EIO */
	if (rc)
		snprintf(err, errlen, "writing capture '%s': %s", o->output, cygprof_strerror(rc));
	else {
		struct stat stt;
		if (!stat(o->output, &stt))
			res->capture_bytes = (uint64_t)stt.st_size;
	}
	return rc;
}
