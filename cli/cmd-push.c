/* SPDX-License-Identifier: MIT */
/* cmd-push.c - cygprof push: a capture's profile, as export --format=pprof
 * writes it, to a Pyroscope server's /ingest (push.c; docs/fleet.md). */
#include "config.h"

#define _GNU_SOURCE
#include <curl/curl.h>
#include <getopt.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "export.h"
#include "push.h"
#include "view.h"

#define CMD "push"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof push --server URL [--app NAME] [--label KEY=VALUE]...\n"
		"                    [--push-token-file FILE] [--push-tenant-file FILE]\n"
		"                    [--push-basic-auth-file FILE] [--push-cacert FILE] [CAPTURE]\n"
		"\n"
		"Send the profile of a capture (CAPTURE defaults to " CYGPROF_DEFAULT_CAPTURE ") to a\n"
		"Pyroscope server: POST URL/ingest with the gzip'd pprof of export\n"
		"--format=pprof (calls, exact time, and perf samples when recorded), for the\n"
		"capture's wall-clock start and end; a --memory capture's allocation stacks\n"
		"go in a second request.  HTTPS checks the server's certificate.\n"
		"\n"
		"options:\n"
		"  --server URL           the server, http://HOST:PORT or https://... (required)\n"
		"  --app NAME             the application name (default: the command's name)\n"
		"  --label KEY=VALUE      a label of the profile (repeatable); the defaults\n"
		"                         hostname, command and pid may be replaced\n"
		"  --push-token-file FILE send the token in FILE (only its owner may read it)\n"
		"                         as 'Authorization: Bearer TOKEN'\n"
		"  --push-tenant-file FILE\n"
		"                         send the tenant ID in FILE as X-Scope-OrgID\n"
		"                         (Pyroscope multi-tenant; else $CYGPROF_PUSH_TENANT)\n"
		"  --push-basic-auth-file FILE\n"
		"                         HTTP basic auth with USER:PASSWORD of FILE (only its\n"
		"                         owner may read it; Grafana Cloud: instance ID and\n"
		"                         token; else $CYGPROF_PUSH_BASIC_AUTH)\n"
		"  --push-cacert FILE     check an https server against the CA certificates\n"
		"                         of FILE (PEM) instead of the system's\n"
		"  -h, --help             this help\n"
		"\n"
		"exit status: 0 sent; 1 the capture cannot be read; 2 usage; 4 the server\n"
		"refused the profile or could not be reached (one line says which)\n");
}

/* The basename of the first word of the recorded command, into buf. */
static const char *command_name(const char *cmd, char *buf, size_t len)
{
	const char *s = cmd ? cmd : "", *e = s + strcspn(s, " "), *b = s;

	for (const char *q = s; q < e; q++)
		if (*q == '/')
			b = q + 1;
	snprintf(buf, len, "%.*s", (int)(e - b), b);
	if (!buf[0])
		snprintf(buf, len, "cygprof");
	return buf;
}

int cmd_push(int argc, char **argv)
{
	enum { O_SERVER = 256, O_APP, O_LABEL, O_TOKEN, O_CACERT, O_TENANT, O_BASIC };
	static const struct option lopts[] = {
		{"server", required_argument, NULL, O_SERVER},
		{"app", required_argument, NULL, O_APP},
		{"label", required_argument, NULL, O_LABEL},
		{"push-token-file", required_argument, NULL, O_TOKEN},
		{"push-tenant-file", required_argument, NULL, O_TENANT},
		{"push-basic-auth-file", required_argument, NULL, O_BASIC},
		{"push-cacert", required_argument, NULL, O_CACERT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct push_target t = {.timeout_ms = 30000};
	const char *labels[PUSH_MAX_LABELS], *token_file = NULL, *file;
	const char *tenant_file = NULL, *basic_file = NULL;
	size_t nl = 0;
	char host[256], cmdname[256], pidl[64], hostl[300], cmdl[300], err[768];
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
		switch (c) {
		case O_SERVER:
			t.server = optarg;
			break;
		case O_APP:
			if (!*optarg)
				cli_die(2, "%s: --app needs a name", CMD);
			t.app = optarg;
			break;
		case O_LABEL:
			if (nl == PUSH_MAX_LABELS - 3)
				cli_die(2, "%s: more than %d labels", CMD, PUSH_MAX_LABELS - 3);
			labels[nl++] = optarg;
			break;
		case O_TOKEN:
			token_file = optarg;
			break;
		case O_TENANT:
			tenant_file = optarg;
			break;
		case O_BASIC:
			basic_file = optarg;
			break;
		case O_CACERT:
			if (access(optarg, R_OK))
				cli_die(2, "%s: --push-cacert %s: %s", CMD, optarg, strerror(errno));
			t.cacert = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			cli_bad_option(CMD, c, argv);
		}
	}
	if (!t.server)
		cli_die(2, "%s: no server given (--server URL)", CMD);
	push_url_check(CMD, "--server", t.server);
	file = cli_capture_arg(CMD, argc, argv);
	push_credentials(&t, CMD, token_file, tenant_file, basic_file);

	struct view *v = cli_open_view(file, NULL);
	const char *cs = view_meta_str(v, "clock_start"), *hn = view_meta_str(v, "hostname");
	unsigned long long tick, mono, real = 0;
	const struct cygprof_proc *procs;
	size_t nprocs = 0;

	if (!cs || sscanf(cs, "tick=%llu mono_ns=%llu real_ns=%llu", &tick, &mono, &real) != 3)
		cli_die(1, "%s: %s: the capture has no wall clock (clock_start): recorded by an "
			"older cygprof", CMD, file ? file : CYGPROF_DEFAULT_CAPTURE);
	uint64_t from_s = real / 1000000000u;
	uint64_t until_s = (real + view_duration_ns(v)) / 1000000000u;
	if (until_s <= from_s)
		until_s = from_s + 1;
	snprintf(host, sizeof host, "%s", hn ? hn : "unknown");
	command_name(view_meta_str(v, "command"), cmdname, sizeof cmdname);
	snprintf(hostl, sizeof hostl, "hostname=%s", host);
	snprintf(cmdl, sizeof cmdl, "command=%s", cmdname);
	push_label(&t, CMD, hostl);
	push_label(&t, CMD, cmdl);
	if (!view_procs(v, &procs, &nprocs) && nprocs) {
		snprintf(pidl, sizeof pidl, "pid=%u", procs[0].pid);
		push_label(&t, CMD, pidl);
	}
	for (size_t i = 0; i < nl; i++)
		push_label(&t, CMD, labels[i]);
	if (!t.app)
		t.app = cmdname;

	/* The profile of the calls (with the perf samples, when recorded);
	 * a --memory capture's allocation stacks as a second profile (its
	 * sample types alloc_objects, alloc_space, leaked_space are other
	 * stacks than the call paths'): two requests for the same interval. */
	struct export_opts o = {.file = file ? file : CYGPROF_DEFAULT_CAPTURE};
	uint8_t *gz[2] = {NULL, NULL};
	size_t len[2] = {0, 0};
	int n = 1, rc = export_pprof_bytes(v, &o, &gz[0], &len[0]);
	if (!rc && view_mode_has(v, "memory")) {
		o.weight = EXPORT_W_ALLOCATED;
		rc = export_pprof_bytes(v, &o, &gz[1], &len[1]);
		n = 2;
	}
	if (rc)
		cli_die(1, "%s: %s: %s", CMD, o.file,
			rc < 0 && rc > -4096 ? strerror(-rc) : cygprof_strerror(rc));
	curl_global_init(CURL_GLOBAL_DEFAULT);
	/* a server that closes while a TLS write is under way: an error, not
	 * the end of cygprof (CURLOPT_NOSIGNAL leaves SIGPIPE alone) */
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < n && !rc; i++)
		rc = push_send(&t, gz[i], len[i], from_s, until_s, err, sizeof err);
	free(gz[0]);
	free(gz[1]);
	push_credentials_free(&t);
	if (rc)
		cli_die(4, "%s: %s", CMD, err);
	curl_global_cleanup();
	return cli_finish(v);
}
