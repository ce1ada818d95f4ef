/* SPDX-License-Identifier: MIT */
/* push.h - profiles to a Pyroscope server (cygprof push, record --push):
 * the HTTP POST of /ingest with libcurl, and the thread that sends
 * record --push's intervals from a bounded queue (docs/fleet.md). */
#ifndef CLI_PUSH_H
#define CLI_PUSH_H

#include <stddef.h>
#include <stdint.h>

#define PUSH_MAX_LABELS 32

/* Where and as what profiles go. */
struct push_target {
	const char *server;  /* http(s)://host[:port][/prefix] */
	const char *app;     /* the application name (Pyroscope's __name__) */
	const char *label[PUSH_MAX_LABELS]; /* KEY=VALUE, the defaults first */
	size_t nlabels;
	char *token;         /* the bearer token, NULL: none (owned) */
	char *tenant;        /* X-Scope-OrgID, NULL: none (owned) */
	char *basic;         /* basic auth USER:PASSWORD, NULL: none (owned) */
	const char *cacert;  /* --push-cacert: the CAs to check the server with
			      * (NULL: the system's) */
	long timeout_ms;     /* per request */
};

/* The server URL of --push or push --server checked before anything runs:
 * http:// or https:// and a URL libcurl can parse (a host, a valid port),
 * or die with "CMD: OPT URL: why", exit 2. */
void push_url_check(const char *cmd, const char *opt, const char *url);
/* A --label KEY=VALUE added (a KEY given before is replaced); exits 2 on a
 * bad one.  The strings are borrowed. */
void push_label(struct push_target *t, const char *cmd, const char *kv);
/* The variables of the tenant and of basic auth (docs/fleet.md). */
#define PUSH_ENV_TENANT "CYGPROF_PUSH_TENANT"
#define PUSH_ENV_BASIC "CYGPROF_PUSH_BASIC_AUTH"

/* The credentials of t, never from the command line: the bearer token of
 * --push-token-file, the tenant (X-Scope-OrgID) of --push-tenant-file or
 * CYGPROF_PUSH_TENANT, basic auth USER:PASSWORD of --push-basic-auth-file
 * or CYGPROF_PUSH_BASIC_AUTH (a file given wins over its variable); NULL
 * files: none.  Refused (exit 2, one line that never shows a secret): a
 * secret's file others may read, an empty file, a control character,
 * basic auth not USER:PASSWORD, a token and basic auth together. */
void push_credentials(struct push_target *t, const char *cmd, const char *token_file,
		      const char *tenant_file, const char *basic_file);
/* The two variables checked (cli_check_env()): one line, exit 2. */
void push_check_env(void);
/* Wipe and free them. */
void push_credentials_free(struct push_target *t);

/* POST one gzip'd pprof for [from_s, until_s).  0 when the server took it;
 * else the HTTP status (>= 300) or -1 (no answer: connection, TLS,
 * timeout), with one line in err. */
int push_send(const struct push_target *t, const void *gz, size_t len, uint64_t from_s,
	      uint64_t until_s, char *err, size_t errlen);

/* ---- record --push: the sending thread ------------------------------------ */

struct pusher;
struct collector_interval;

/* The sender of t's intervals (exits 1 without memory); its thread starts
 * at the first interval, after the program was forked.  Without a pid
 * label, the label pid= of the program started is added then. */
struct pusher *pusher_start(struct push_target *t);
/* collector_opts.interval: encode and queue (a full queue drops its oldest). */
void pusher_interval(void *arg, const struct collector_interval *iv);
/* collector_opts.interval_end: send what is queued (within a bounded
 * time), stop the thread, and tell what was sent and dropped. */
void pusher_end(void *arg, uint64_t *sent, uint64_t *dropped);
/* After the end: the last error seen ("" none); free. */
const char *pusher_last_error(struct pusher *p);
void pusher_free(struct pusher *p);

#endif
