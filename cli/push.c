/* SPDX-License-Identifier: MIT */
/* push.c - profiles to a Pyroscope server: POST URL/ingest with the gzip'd
 * pprof as the multipart part "profile" (libcurl, certificates checked),
 * and record --push's sending thread.
 *
 * record --push: the collector hands each interval's call paths over
 * (collector_opts.interval, in its thread); they are encoded here at once
 * (small: one sample per call path) and queued, at most PUSH_QUEUE of them
 * (a full queue drops its oldest, counted).  The thread sends them in
 * order, each at most PUSH_TRIES times with a back-off doubling from
 * PUSH_BACKOFF_MS, a refusal (4xx) once; then it drops it, counted.  At
 * the end what is queued is sent within PUSH_END_MS, the rest dropped. */
#include "config.h"

#define _GNU_SOURCE
#include "push.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "collector.h"
#include "export.h"

#define PUSH_QUEUE 8
#define PUSH_TRIES 3
#define PUSH_BACKOFF_MS 250
#define PUSH_END_MS 15000

void push_url_check(const char *cmd, const char *opt, const char *url)
{
	CURLU *u;
	CURLUcode rc;
	char *host = NULL;

	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
		cli_die(2, "%s: %s %s: not an http:// or https:// URL", cmd, opt, url);
	/* what curl would refuse at the first send, refused now: the
	 * program would otherwise run to its end for nothing */
	u = curl_url();
	if (!u)
		cli_die(1, "%s: out of memory", cmd);
	rc = curl_url_set(u, CURLUPART_URL, url, 0);
	if (!rc)
		rc = curl_url_get(u, CURLUPART_HOST, &host, 0);
	if (!rc && (!host || !*host))
		rc = CURLUE_NO_HOST;
	curl_free(host);
	curl_url_cleanup(u);
	if (rc)
		cli_die(2, "%s: %s %s: not a valid URL (%s)", cmd, opt, url, curl_url_strerror(rc));
}

void push_label(struct push_target *t, const char *cmd, const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t klen = eq ? (size_t)(eq - kv) : 0;

	if (!eq || !klen || !eq[1])
		cli_die(2, "%s: bad --label '%s' (KEY=VALUE)", cmd, kv);
	for (size_t i = 0; i < klen; i++) {
		char ch = kv[i];

		if (!(ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (i && ch >= '0' && ch <= '9')))
			cli_die(2, "%s: bad --label key in '%s' (letters, digits and _, not "
				"starting with a digit)", cmd, kv);
	}
	for (const char *s = eq + 1; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == ',' || *s == '}' || *s == '{' || *s == '=')
			cli_die(2, "%s: bad --label value in '%s' (no control characters, ',', "
				"'=', '{' or '}')", cmd, kv);
	for (size_t i = 0; i < t->nlabels; i++)
		if (!strncmp(t->label[i], kv, klen + 1)) {
			t->label[i] = kv;
			return;
		}
	if (t->nlabels == PUSH_MAX_LABELS)
		cli_die(2, "%s: more than %d labels", cmd, PUSH_MAX_LABELS);
	t->label[t->nlabels++] = kv;
}

/* ---- one POST ----------------------------------------------------------- */

struct body {
	char text[512];
	size_t n;
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct body *b = arg;
	size_t len = size * nmemb, room = sizeof b->text - 1 - b->n;

	memcpy(b->text + b->n, p, len < room ? len : room);
	b->n += len < room ? len : room;
	b->text[b->n] = 0;
	return len;
}

/* The server's message: its first line, JSON's "message" or "error" text
 * when it sends JSON. */
static void server_message(struct body *b, char *out, size_t outlen)
{
	char *s = b->text, *e;

	for (const char *key = "\"message\""; key; key = key[1] == 'm' ? "\"error\"" : NULL) {
		char *k = strstr(s, key);

		if (k && (k = strchr(k + strlen(key), '"')) && (e = strchr(k + 1, '"'))) {
			snprintf(out, outlen, "%.*s", (int)(e - k - 1), k + 1);
			return;
		}
	}
	while (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t')
		s++;
	e = s + strcspn(s, "\r\n");
	while (e > s && e[-1] == ' ')
		e--;
	snprintf(out, outlen, "%.*s", (int)(e - s), s);
	for (char *q = out; *q; q++)
		if ((unsigned char)*q < 0x20)
			*q = ' ';
}

int push_send(const struct push_target *t, const void *gz, size_t len, uint64_t from_s,
	      uint64_t until_s, char *err, size_t errlen)
{
	CURL *h = curl_easy_init();
	curl_mime *mime = NULL;
	struct curl_slist *hdr = NULL;
	struct body body = {.n = 0};
	char *name = NULL, *esc = NULL, *url = NULL, *auth = NULL, cerr[CURL_ERROR_SIZE] = "";
	size_t nlen = strlen(t->app) + 3;
	long status = 0;
	int rc = -1;
	CURLcode cc;

	if (!h) {
		snprintf(err, errlen, "cannot start libcurl");
		return -1;
	}
	for (size_t i = 0; i < t->nlabels; i++)
		nlen += strlen(t->label[i]) + 1;
	name = malloc(nlen);
	if (!name)
		goto oom;
	snprintf(name, nlen, "%s{", t->app);
	for (size_t i = 0; i < t->nlabels; i++)
		snprintf(name + strlen(name), nlen - strlen(name), "%s%s", i ? "," : "", t->label[i]);
	strcat(name, "}");
	esc = curl_easy_escape(h, name, 0);
	if (!esc)
		goto oom;
	const char *sl = t->server[0] && t->server[strlen(t->server) - 1] == '/' ? "" : "/";
	if (asprintf(&url, "%s%singest?name=%s&from=%llu&until=%llu&format=pprof&spyName=cygprof"
			   "&sampleRate=100",
		     t->server, sl, esc, (unsigned long long)from_s, (unsigned long long)until_s) < 0) {
		url = NULL;
		goto oom;
	}
	mime = curl_mime_init(h);
	curl_mimepart *part = mime ? curl_mime_addpart(mime) : NULL;
	if (!part || curl_mime_name(part, "profile") ||
	    curl_mime_filename(part, "profile.pprof") ||
	    curl_mime_type(part, "application/octet-stream") ||
	    curl_mime_data(part, gz, len))
		goto oom;
	if (t->token) {
		if (asprintf(&auth, "Authorization: Bearer %s", t->token) < 0) {
			auth = NULL;
			goto oom;
		}
		hdr = curl_slist_append(hdr, auth);
		if (!hdr)
			goto oom;
	}
	if (t->tenant) {
		/* Pyroscope (and Grafana's other multi-tenant servers) in
		 * multi-tenant mode: the tenant of every request */
		char *org = NULL;
		struct curl_slist *h2;

		if (asprintf(&org, "X-Scope-OrgID: %s", t->tenant) < 0)
			goto oom;
		h2 = curl_slist_append(hdr, org);
		free(org);
		if (!h2)
			goto oom;
		hdr = h2;
	}
	if (t->basic) {
		/* Grafana Cloud: the instance ID as user, a token as password */
		const char *colon = strchr(t->basic, ':');
		char *user = strndup(t->basic, (size_t)(colon - t->basic));

		if (!user)
			goto oom;
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, user);
		curl_easy_setopt(h, CURLOPT_PASSWORD, colon + 1);
		explicit_bzero(user, strlen(user));
		free(user);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_MIMEPOST, mime);
	if (hdr)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (t->cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, t->cacert);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, t->timeout_ms > 0 ? t->timeout_ms : 30000L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "cygprof/" CYGPROF_VERSION);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	cc = curl_easy_perform(h);
	if (cc != CURLE_OK) {
		snprintf(err, errlen, "%s: %s", t->server, cerr[0] ? cerr : curl_easy_strerror(cc));
		rc = -1;
	} else {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200 && status < 300) {
			rc = 0;
		} else {
			char msg[256];

			server_message(&body, msg, sizeof msg);
			snprintf(err, errlen, "%s: HTTP %ld%s%s", t->server, status, msg[0] ? ": " : "",
				 msg);
			rc = status > 0 ? (int)status : -1;
		}
	}
	goto out;
oom:
	snprintf(err, errlen, "out of memory");
	rc = -1;
out:
	curl_slist_free_all(hdr);
	curl_mime_free(mime);
	curl_free(esc);
	free(name);
	free(url);
	if (auth) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	curl_easy_cleanup(h);
	return rc;
}

/* ---- record --push's thread --------------------------------------------- */

struct item {
	uint8_t *gz;
	size_t len;
	uint64_t from_s, until_s;
};

struct pusher {
	struct push_target *t;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct item q[PUSH_QUEUE];
	size_t head, n;
	int stop, running, failed;
	uint64_t end_deadline_ns; /* CLOCK_MONOTONIC: at the end, give up past it */
	uint64_t sent, dropped;
	char last_err[512];
	char pid_label[32];
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait ms, or less when the end's deadline comes first (p->mu held). */
static void backoff(struct pusher *p, long ms)
{
	struct timespec ts;
	uint64_t now = mono_ns(), until = now + (uint64_t)ms * 1000000u;

	if (p->stop && until > p->end_deadline_ns)
		until = p->end_deadline_ns;
	ts.tv_sec = (time_t)(until / 1000000000u);
	ts.tv_nsec = (long)(until % 1000000000u);
	pthread_cond_timedwait(&p->cv, &p->mu, &ts);
}

static void *pusher_main(void *arg)
{
	struct pusher *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->n && !p->stop)
			pthread_cond_wait(&p->cv, &p->mu);
		if (!p->n)
			break;
		struct item it = p->q[p->head];
		p->head = (p->head + 1) % PUSH_QUEUE;
		p->n--;
		int ok = 0;
		for (int k = 0; k < PUSH_TRIES && !ok; k++) {
			char err[512];
			uint64_t now = mono_ns();

			if (p->stop && now >= p->end_deadline_ns)
				break;
			struct push_target t = *p->t;
			if (p->stop && (p->end_deadline_ns - now) / 1000000u < (uint64_t)t.timeout_ms)
				t.timeout_ms = (long)((p->end_deadline_ns - now) / 1000000u) + 1;
			pthread_mutex_unlock(&p->mu);
			int rc = push_send(&t, it.gz, it.len, it.from_s, it.until_s, err, sizeof err);
			pthread_mutex_lock(&p->mu);
			if (!rc) {
				ok = 1;
				break;
			}
			snprintf(p->last_err, sizeof p->last_err, "%s", err);
			if (rc >= 400 && rc < 500 && rc != 408 && rc != 429)
				break; /* refused: the same again would be too */
			if (k + 1 < PUSH_TRIES)
				backoff(p, PUSH_BACKOFF_MS << k);
		}
		if (ok)
			p->sent++;
		else
			p->dropped++;
		free(it.gz);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct pusher *pusher_start(struct push_target *t)
{
	struct pusher *p = calloc(1, sizeof *p);

	if (!p)
		cli_die(1, "record: out of memory");
	p->t = t;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!t->timeout_ms)
		t->timeout_ms = 5000;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	return p;
}

/* The thread, started at the first interval: after the program was
 * forked (spawn.c forks, and a child forked while another thread holds a
 * lock of libc's would inherit it held).  It takes no signal: SIGINT and
 * SIGTERM go to the collector, which forwards them to the program, and a
 * SIGPIPE of a TLS write to a peer gone (libcurl with CURLOPT_NOSIGNAL
 * does not ignore it) stays pending there instead of ending cygprof.
 * 0, or -1 (the intervals are then dropped). */
static int pusher_thread(struct pusher *p)
{
	sigset_t all, old;
	int e;

	if (p->running)
		return 0;
	if (p->failed)
		return -1;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&p->th, NULL, pusher_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		p->failed = 1;
		snprintf(p->last_err, sizeof p->last_err, "cannot start the sending thread: %s",
			 strerror(e));
		return -1;
	}
	p->running = 1;
	return 0;
}

void pusher_interval(void *arg, const struct collector_interval *iv)
{
	struct pusher *p = arg;
	struct pprof_paths pp = {
		.npaths = iv->npaths,
		.parent = iv->parent,
		.fn = iv->fn,
		.names = iv->names,
		.nnames = iv->nnames,
		.nval = 2,
		.def = 1,
		.vtype = {"calls", "time"},
		.vunit = {"count", "nanoseconds"},
		.val = {iv->calls, iv->self_ns},
		.time_ns = iv->from_ns,
		.duration_ns = iv->until_ns - iv->from_ns,
	};
	struct item it = {
		.from_s = iv->from_ns / 1000000000u,
		.until_s = iv->until_ns / 1000000000u,
	};

	/* whole seconds, as the API takes them: the same rounding on both
	 * sides keeps the intervals contiguous; the last one is never empty */
	if (iv->final && it.until_s <= it.from_s)
		it.until_s = it.from_s + 1;
	int err = pusher_thread(p) ? -EAGAIN : export_pprof_paths(&pp, &it.gz, &it.len);

	pthread_mutex_lock(&p->mu);
	if (iv->pid > 0 && !p->pid_label[0] && p->t->nlabels < PUSH_MAX_LABELS) {
		int have = 0;

		for (size_t i = 0; i < p->t->nlabels; i++)
			have |= !strncmp(p->t->label[i], "pid=", 4);
		snprintf(p->pid_label, sizeof p->pid_label, "pid=%d", iv->pid);
		if (!have) /* after the defaults, before the --label ones */
			push_label(p->t, "record", p->pid_label);
	}
	if (err) {
		p->dropped++;
		if (err != -EAGAIN)
			snprintf(p->last_err, sizeof p->last_err, "out of memory");
		pthread_mutex_unlock(&p->mu);
		return;
	}
	if (p->n == PUSH_QUEUE) { /* the server does not keep up: the oldest goes */
		free(p->q[p->head].gz);
		p->head = (p->head + 1) % PUSH_QUEUE;
		p->n--;
		p->dropped++;
	}
	p->q[(p->head + p->n) % PUSH_QUEUE] = it;
	p->n++;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void pusher_end(void *arg, uint64_t *sent, uint64_t *dropped)
{
	struct pusher *p = arg;

	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	p->end_deadline_ns = mono_ns() + (uint64_t)PUSH_END_MS * 1000000u;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->running) {
		pthread_join(p->th, NULL);
		p->running = 0;
	}
	*sent = p->sent;
	*dropped = p->dropped;
}

const char *pusher_last_error(struct pusher *p)
{
	return p->last_err;
}

void pusher_free(struct pusher *p)
{
	if (!p)
		return;
	if (p->running) {
		uint64_t s, d;

		pusher_end(p, &s, &d);
	}
	for (size_t i = 0; i < p->n; i++)
		free(p->q[(p->head + i) % PUSH_QUEUE].gz);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}
