/* SPDX-License-Identifier: MIT */
/* test-capture.c - round trips through the capture library and its error paths. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lmdb.h>
#include <zstd.h>

#include "cygprof/cygprof-capture.h"
#include "../lib/check.h"

static char dir[1024];
static char timeline_path[PATH_MAX];

static const char *tmp_path(const char *name)
{
	static char buf[4][PATH_MAX];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static void test_meta(void)
{
	const char *path = tmp_path("meta.cap");
	struct cygprof_capture *cap;
	char *v = NULL;

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "command", "./a.out -x 1"), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "mode", "profile"), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "mode", "profile+timeline"), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "empty", ""), 0);
	CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
	CHECK_EQ_INT(cygprof_capture_begin(cap), -EBUSY);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "clock", "tsc"), 0);
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "clock", &v), 0); /* inside the batch */
	CHECK_EQ_STR(v, "tsc");
	free(v);
	CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	CHECK_EQ_INT(cygprof_capture_commit(cap), CYGPROF_E_NOTXN);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, NULL, "x"), -EINVAL);
	CHECK(cygprof_capture_file_size(cap) > 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(NULL), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "command", &v), 0);
	CHECK_EQ_STR(v, "./a.out -x 1");
	free(v);
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "mode", &v), 0);
	CHECK_EQ_STR(v, "profile+timeline");
	free(v);
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "empty", &v), 0);
	CHECK_EQ_STR(v, "");
	free(v);
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "clock", &v), 0);
	CHECK_EQ_STR(v, "tsc");
	free(v);
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "magic", &v), 0);
	CHECK_EQ_STR(v, "cygprof-capture");
	free(v);
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "schema", &v), 0);
	CHECK_EQ_STR(v, "8");
	free(v);
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "nope", &v), CYGPROF_E_NOTFOUND);
	CHECK(v == NULL);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "x", "y"), CYGPROF_E_RDONLY);
	CHECK_EQ_INT(cygprof_capture_begin(cap), CYGPROF_E_RDONLY);
	CHECK_EQ_INT(cygprof_capture_commit(cap), CYGPROF_E_RDONLY);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
}

static void test_procs_threads(void)
{
	const char *path = tmp_path("procs.cap");
	struct cygprof_capture *cap;
	struct cygprof_proc pin[3], *pout = NULL;
	struct cygprof_thread tin[3], *tout = NULL;
	char *longcmd = malloc(20001);
	size_t n = 0, i;

	memset(longcmd, 'a', 20000);
	longcmd[20000] = 0;
	pin[0] = (struct cygprof_proc){ 0, 100, 1, CYGPROF_NONE, 0, 5000000000ull,
					CYGPROF_END_EXEC, 0, "sh -c ./prog", "/bin/sh" };
	pin[1] = (struct cygprof_proc){ 1, 100, 1, 0, 12, UINT64_MAX, CYGPROF_END_SIGNAL, 9,
					longcmd, "" };
	pin[2] = (struct cygprof_proc){ 2, 4000000000u, 100, 1, 77, 88, CYGPROF_END_EXIT, -3,
					"prog arg", "/tmp/prog" };
	for (i = 0; i < 3; i++) {
		tin[i] = (struct cygprof_thread){ .idx = (uint32_t)i, .proc_idx = (uint32_t)i,
						  .tid = 100 + (uint32_t)i, .flags = 1u << i };
		tin[i].start_ns = rnd();
		tin[i].end_ns = rnd();
		tin[i].calls = rnd() >> 8;
		tin[i].events = tin[i].calls + (rnd() >> 12);
		tin[i].lost = tin[i].calls - (rnd() >> 12);
		tin[i].waits = rnd();
		tin[i].wait_ns = rnd();
		tin[i].unpaired = rnd() >> 8;
		tin[i].unwound = rnd() >> 8;
		tin[i].overflow = rnd();
		tin[i].sig_lost = rnd() >> 8;
		tin[i].mem_lost = rnd();
	}
	strcpy(tin[0].name, "main");
	strcpy(tin[1].name, "fifteen-chars-x");
	tin[2].name[0] = 0;

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
	/* out of order on purpose: the reader returns them by idx */
	CHECK_EQ_INT(cygprof_capture_put_proc(cap, &pin[2]), 0);
	CHECK_EQ_INT(cygprof_capture_put_proc(cap, &pin[0]), 0);
	CHECK_EQ_INT(cygprof_capture_put_thread(cap, &tin[1]), 0);
	CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	CHECK_EQ_INT(cygprof_capture_put_proc(cap, &pin[1]), 0);
	CHECK_EQ_INT(cygprof_capture_put_thread(cap, &tin[0]), 0);
	CHECK_EQ_INT(cygprof_capture_put_thread(cap, &tin[2]), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		goto out;
	CHECK_EQ_INT(cygprof_capture_put_proc(cap, &pin[0]), CYGPROF_E_RDONLY);
	CHECK_EQ_INT(cygprof_capture_get_procs(cap, &pout, &n), 0);
	CHECK_EQ_U64(n, 3);
	for (i = 0; i < n && i < 3; i++) {
		CHECK_EQ_U64(pout[i].idx, pin[i].idx);
		CHECK_EQ_U64(pout[i].pid, pin[i].pid);
		CHECK_EQ_U64(pout[i].ppid, pin[i].ppid);
		CHECK_EQ_U64(pout[i].parent_idx, pin[i].parent_idx);
		CHECK_EQ_U64(pout[i].start_ns, pin[i].start_ns);
		CHECK_EQ_U64(pout[i].end_ns, pin[i].end_ns);
		CHECK_EQ_U64(pout[i].end_kind, pin[i].end_kind);
		CHECK_EQ_INT(pout[i].end_code, pin[i].end_code);
		CHECK_EQ_STR(pout[i].command, pin[i].command);
		CHECK_EQ_STR(pout[i].exe, pin[i].exe);
	}
	cygprof_procs_free(pout, n);
	CHECK_EQ_INT(cygprof_capture_get_threads(cap, &tout, &n), 0);
	CHECK_EQ_U64(n, 3);
	for (i = 0; i < n && i < 3; i++) {
		CHECK_EQ_U64(tout[i].idx, tin[i].idx);
		CHECK_EQ_U64(tout[i].proc_idx, tin[i].proc_idx);
		CHECK_EQ_U64(tout[i].tid, tin[i].tid);
		CHECK_EQ_U64(tout[i].flags, tin[i].flags);
		CHECK_EQ_U64(tout[i].start_ns, tin[i].start_ns);
		CHECK_EQ_U64(tout[i].end_ns, tin[i].end_ns);
		CHECK_EQ_U64(tout[i].calls, tin[i].calls);
		CHECK_EQ_U64(tout[i].events, tin[i].events);
		CHECK_EQ_U64(tout[i].lost, tin[i].lost);
		CHECK_EQ_U64(tout[i].waits, tin[i].waits);
		CHECK_EQ_U64(tout[i].wait_ns, tin[i].wait_ns);
		CHECK_EQ_U64(tout[i].unpaired, tin[i].unpaired);
		CHECK_EQ_U64(tout[i].unwound, tin[i].unwound);
		CHECK_EQ_STR(tout[i].name, tin[i].name);
	}
	free(tout);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
out:
	free(longcmd);
}

static void test_trees(void)
{
	const char *path = tmp_path("trees.cap");
	struct cygprof_capture *cap;
	struct cygprof_node *in, *out = NULL, bad[2];
	size_t n = 0, i, big = 100000;

	in = calloc(big, sizeof(*in));
	in[0].parent = CYGPROF_NONE;
	for (i = 1; i < big; i++) {
		in[i].parent = (uint32_t)(rnd() % i);
		in[i].flags = 0;
		in[i].fn = rnd();
		in[i].site = rnd();
		in[i].calls = rnd() % 100000;
		in[i].total_ns = rnd();
	}
	bad[0] = (struct cygprof_node){ .parent = CYGPROF_NONE };
	bad[1] = (struct cygprof_node){ .parent = 1 };

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_put_tree(cap, 0, in, big), 0);
	CHECK_EQ_INT(cygprof_capture_put_tree(cap, 1, in, 1), 0);
	CHECK_EQ_INT(cygprof_capture_put_tree(cap, 2, NULL, 0), 0);
	CHECK_EQ_INT(cygprof_capture_put_tree(cap, 3, bad, 2), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		goto out;
	CHECK_EQ_INT(cygprof_capture_get_tree(cap, 0, &out, &n), 0);
	CHECK_EQ_U64(n, big);
	if (n == big)
		for (i = 0; i < big; i++) {
			if (out[i].parent != in[i].parent || out[i].flags != in[i].flags ||
			    out[i].fn != in[i].fn || out[i].site != in[i].site ||
			    out[i].calls != in[i].calls || out[i].total_ns != in[i].total_ns) {
				CHECK_EQ_U64(i, UINT64_MAX);
				break;
			}
		}
	free(out);
	CHECK_EQ_INT(cygprof_capture_get_tree(cap, 1, &out, &n), 0);
	CHECK_EQ_U64(n, 1);
	if (n == 1)
		CHECK_EQ_U64(out[0].parent, CYGPROF_NONE);
	free(out);
	CHECK_EQ_INT(cygprof_capture_get_tree(cap, 2, &out, &n), 0);
	CHECK_EQ_U64(n, 0);
	CHECK(out == NULL);
	CHECK_EQ_INT(cygprof_capture_get_tree(cap, 3, &out, &n), 0);
	CHECK_EQ_U64(n, 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
out:
	free(in);
}

static void test_objects(void)
{
	const char *path = tmp_path("objects.cap");
	struct cygprof_capture *cap;
	struct cygprof_object in[3], *out = NULL;
	size_t n = 0, i, j;

	memset(in, 0, sizeof(in));
	for (i = 0; i < 3; i++) {
		in[i].idx = (uint32_t)i;
		in[i].proc_idx = (uint32_t)(i / 2);
		in[i].start = 0x400000 + i * 0x100000;
		in[i].end = in[i].start + 0x8000;
		in[i].bias = i ? in[i].start : 0;
	}
	in[0].build_id_len = 20;
	in[1].build_id_len = 32;
	in[2].build_id_len = 0;
	for (i = 0; i < 2; i++)
		for (j = 0; j < in[i].build_id_len; j++)
			in[i].build_id[j] = (uint8_t)(rnd() | 1);
	in[0].path = "/usr/bin/prog";
	in[1].path = "/lib/x86_64-linux-gnu/libc.so.6";
	in[2].path = "[vdso]";

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
	for (i = 0; i < 3; i++)
		CHECK_EQ_INT(cygprof_capture_put_object(cap, &in[i]), 0);
	in[2].build_id_len = 33;
	CHECK_EQ_INT(cygprof_capture_put_object(cap, &in[2]), -EINVAL);
	in[2].build_id_len = 0;
	CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_get_objects(cap, &out, &n), 0);
	CHECK_EQ_U64(n, 3);
	for (i = 0; i < n && i < 3; i++) {
		CHECK_EQ_U64(out[i].idx, in[i].idx);
		CHECK_EQ_U64(out[i].proc_idx, in[i].proc_idx);
		CHECK_EQ_U64(out[i].start, in[i].start);
		CHECK_EQ_U64(out[i].end, in[i].end);
		CHECK_EQ_U64(out[i].bias, in[i].bias);
		CHECK_EQ_U64(out[i].build_id_len, in[i].build_id_len);
		CHECK(!memcmp(out[i].build_id, in[i].build_id, in[i].build_id_len));
		CHECK_EQ_STR(out[i].path, in[i].path);
	}
	cygprof_objects_free(out, n);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
}

static void test_symbols(void)
{
	const char *path = tmp_path("symbols.cap");
	struct cygprof_capture *cap;
	struct cygprof_symbol in[] = {
		{ 0, 0, 0x2000, 0x100, "b" },
		{ 0, 0, 0x1000, 0x10, "a" },
		{ 0, CYGPROF_NONE, 0x3000, 0, "0x3000" },
		{ 1, 1, 0x1000, 0x20, "other_proc" },
		{ 0, 0, 0x2100, 0x10, "c" },
		{ 0, 0, UINT64_MAX - 0xf, 0x10, "top" },
	};
	struct cygprof_symbol *s = NULL;
	size_t n = 0, i;

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		CHECK_EQ_INT(cygprof_capture_put_symbol(cap, &in[i]), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_get_symbols(cap, 7, &s, &n), 0);
	CHECK_EQ_U64(n, 0);
	cygprof_symbols_free(s, n);
	CHECK_EQ_INT(cygprof_capture_get_symbols(cap, 1, &s, &n), 0);
	CHECK_EQ_U64(n, 1);
	if (n == 1) {
		CHECK_EQ_STR(s[0].name, "other_proc");
		CHECK_EQ_U64(s[0].object_idx, 1);
		CHECK_EQ_U64(s[0].size, 0x20);
	}
	cygprof_symbols_free(s, n);
	CHECK_EQ_INT(cygprof_capture_get_symbols(cap, 0, &s, &n), 0);
	CHECK_EQ_U64(n, 5);
	if (n == 5) {
		CHECK_EQ_STR(s[0].name, "a");
		CHECK_EQ_STR(s[1].name, "b");
		CHECK_EQ_STR(s[2].name, "c");
		CHECK_EQ_STR(s[3].name, "0x3000");
		CHECK_EQ_STR(s[4].name, "top");
		CHECK_EQ_U64(s[3].object_idx, CYGPROF_NONE);
		for (i = 0; i < n; i++)
			CHECK_EQ_U64(s[i].proc_idx, 0);
		CHECK(cygprof_symbols_lookup(s, n, 0) == NULL);
		CHECK(cygprof_symbols_lookup(s, n, 0xfff) == NULL);
		CHECK(cygprof_symbols_lookup(s, n, 0x1000) == &s[0]);
		CHECK(cygprof_symbols_lookup(s, n, 0x100f) == &s[0]);
		CHECK(cygprof_symbols_lookup(s, n, 0x1010) == NULL); /* gap */
		CHECK(cygprof_symbols_lookup(s, n, 0x1fff) == NULL);
		CHECK(cygprof_symbols_lookup(s, n, 0x2000) == &s[1]);
		CHECK(cygprof_symbols_lookup(s, n, 0x20ff) == &s[1]);
		CHECK(cygprof_symbols_lookup(s, n, 0x2100) == &s[2]); /* adjacent */
		CHECK(cygprof_symbols_lookup(s, n, 0x2110) == NULL);
		CHECK(cygprof_symbols_lookup(s, n, 0x3000) == &s[3]);
		CHECK(cygprof_symbols_lookup(s, n, 0x7fffffff) == &s[3]); /* size 0 */
		CHECK(cygprof_symbols_lookup(s, n, UINT64_MAX) == &s[4]);
		CHECK(cygprof_symbols_lookup(s, n, UINT64_MAX - 0xf) == &s[4]);
		CHECK(cygprof_symbols_lookup(s, 1, 0x5000) == NULL);
		CHECK(cygprof_symbols_lookup(s, 0, 0x1000) == NULL);
		CHECK(cygprof_symbols_lookup(NULL, 0, 0x1000) == NULL);
	}
	cygprof_symbols_free(s, n);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
}

/* ---- timeline ---------------------------------------------------------------- */

#define TL_EVENTS 1000000
#define TL_THREADS 2

struct tl_check {
	const struct cygprof_event *want;
	size_t n;
	size_t pos;
	size_t calls;
	int mismatch;
};

static int tl_cb(const struct cygprof_event *ev, size_t n, void *data)
{
	struct tl_check *c = data;
	size_t i;

	c->calls++;
	for (i = 0; i < n; i++, c->pos++) {
		if (c->pos >= c->n || ev[i].ts_ns != c->want[c->pos].ts_ns ||
		    ev[i].node != c->want[c->pos].node || ev[i].kind != c->want[c->pos].kind) {
			if (!c->mismatch)
				printf("# event %zu differs\n", c->pos);
			c->mismatch++;
		}
	}
	return 0;
}

static int stop_cb(const struct cygprof_event *ev, size_t n, void *data)
{
	(*(size_t *)data)++;
	return 42;
}

static uint64_t delta(void)
{
	uint64_t r = rnd() % 100;

	if (r < 70)
		return rnd() % 200;
	if (r < 97)
		return rnd() % 5000;
	return rnd() % 10000000;
}

static void check_thread(struct cygprof_capture *cap, uint32_t t, const struct cygprof_event *want,
			 size_t n)
{
	struct tl_check c = { .want = want, .n = n };

	CHECK_EQ_INT(cygprof_capture_foreach_event(cap, t, tl_cb, &c), 0);
	CHECK_EQ_U64(c.pos, n);
	CHECK_EQ_INT(c.mismatch, 0);
}

static void test_timeline(void)
{
	const char *path = timeline_path;
	struct cygprof_capture *cap;
	struct cygprof_event *ev[TL_THREADS], bad[2];
	size_t per = TL_EVENTS / TL_THREADS, done[TL_THREADS] = { 0 }, i, k, chunk, stops = 0;
	uint64_t ts[TL_THREADS] = { 1000, 123456789 }, size;
	int batch, t;

	for (t = 0; t < TL_THREADS; t++) {
		ev[t] = malloc(per * sizeof(*ev[t]));
		for (i = 0; i < per; i++) {
			ts[t] += delta();
			ev[t][i].ts_ns = ts[t];
			ev[t][i].node = (uint32_t)(rnd() % 300);
			ev[t][i].kind = (uint32_t)(rnd() % 3);
		}
	}
	/* one huge node index, still exact */
	ev[1][5].node = UINT32_MAX - 1;

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	/* several batches; threads interleaved in chunks of random size */
	for (batch = 0; batch < 8; batch++) {
		CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
		for (k = 0; k < 200; k++) {
			t = (int)(rnd() % TL_THREADS);
			chunk = rnd() % 4 ? rnd() % 64 + 1 : rnd() % 3000 + 1;
			if (chunk > per - done[t])
				chunk = per - done[t];
			if (batch < 7 && done[t] + chunk > per * (batch + 1) / 8)
				continue;
			CHECK_EQ_INT(cygprof_capture_append_events(cap, (uint32_t)t,
								  ev[t] + done[t], chunk), 0);
			done[t] += chunk;
		}
		CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
		if (batch == 3) {
			/* a writer sees what it has appended so far */
			check_thread(cap, 0, ev[0], done[0]);
		}
	}
	/* the rest outside a batch, in one large and many small appends */
	CHECK_EQ_INT(cygprof_capture_append_events(cap, 0, ev[0] + done[0], (per - done[0]) / 2),
		     0);
	done[0] += (per - done[0]) / 2;
	for (t = 0; t < TL_THREADS; t++)
		while (done[t] < per) {
			chunk = rnd() % 7 + 1;
			if (chunk > per - done[t])
				chunk = per - done[t];
			CHECK_EQ_INT(cygprof_capture_append_events(cap, (uint32_t)t,
								  ev[t] + done[t], chunk), 0);
			done[t] += chunk;
		}
	/* time going backwards and unknown kinds are refused */
	bad[0] = (struct cygprof_event){ .ts_ns = ts[0] - 1 };
	CHECK_EQ_INT(cygprof_capture_append_events(cap, 0, bad, 1), -EINVAL);
	bad[0] = (struct cygprof_event){ .ts_ns = ts[1], .kind = 7 };
	CHECK_EQ_INT(cygprof_capture_append_events(cap, 1, bad, 1), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_append_events(cap, 1, NULL, 0), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		goto out;
	for (t = 0; t < TL_THREADS; t++)
		check_thread(cap, (uint32_t)t, ev[t], per);
	check_thread(cap, 2, NULL, 0);
	CHECK_EQ_INT(cygprof_capture_foreach_event(cap, 0, stop_cb, &stops), 42);
	CHECK_EQ_U64(stops, 1);
	size = cygprof_capture_file_size(cap);
	printf("# timeline: %d events, file %llu bytes, %.2f bytes/event\n", TL_EVENTS,
	       (unsigned long long)size, (double)size / TL_EVENTS);
	CHECK((double)size / TL_EVENTS < 8.0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
out:
	for (t = 0; t < TL_THREADS; t++)
		free(ev[t]);
}

/* ---- the timeline by time (schema 5) ---------------------------------------- */

/* A well-nested timeline (a random walk of the call depth, with a burst past
 * the 1024 stored open calls and calls still open at the end), written in
 * many blocks; every block's open calls, a seek to many times, and the
 * exit of every call open at a block's end are checked against the events
 * themselves. */
#define TI_EVENTS 700000

static void test_time_index(void)
{
	const char *path = tmp_path("time-index.cap");
	struct cygprof_event *ev = malloc(TI_EVENTS * sizeof(*ev));
	uint64_t *exit_at = malloc(TI_EVENTS * sizeof(*exit_at)); /* per enter */
	size_t *open = malloc(TI_EVENTS * sizeof(*open)), *bstart = NULL;
	size_t depth = 0, i, nb = 0, cb = 0, j, b;
	struct cygprof_capture *cap;
	struct cygprof_event_cursor *cur;
	const struct cygprof_event *got;
	const struct cygprof_open_call *oc;
	size_t n, noc, at;
	uint32_t full;
	uint64_t ts = 5000, x;

	if (!ev || !exit_at || !open)
		goto out;
	for (i = 0; i < TI_EVENTS; i++) {
		size_t want = i > 300000 && i < 303000 ? 1100 : 12 + (i / 50000) % 3 * 10;
		int enter = depth < 2 || (depth < want && rnd() % 100 < (i > 690000 ? 70 : 52));

		ts += rnd() % 4 ? rnd() % 60 : 0;
		ev[i].ts_ns = ts;
		if (i > 300000 && i < 302000)
			enter = 1; /* deep */
		if (enter) {
			ev[i].node = (uint32_t)(depth * 7 + rnd() % 5);
			ev[i].kind = CYGPROF_EV_ENTER;
			exit_at[i] = UINT64_MAX;
			open[depth++] = i;
		} else {
			ev[i].node = ev[open[depth - 1]].node;
			ev[i].kind = rnd() % 50 ? CYGPROF_EV_EXIT : CYGPROF_EV_UNWIND;
			exit_at[open[--depth]] = ts;
		}
	}
	CHECK(depth > 2); /* calls open at the end */
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	for (i = 0; i < TI_EVENTS; i += n) {
		n = rnd() % 5000 + 1;
		if (n > TI_EVENTS - i)
			n = TI_EVENTS - i;
		if (rnd() % 8) {
			CHECK_EQ_INT(cygprof_capture_append_events(cap, 0, ev + i, n), 0);
			continue;
		}
		/* a commit stores the open block, rewritten as it grows */
		CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
		CHECK_EQ_INT(cygprof_capture_append_events(cap, 0, ev + i, n), 0);
		CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	}
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		goto out;
	/* the blocks in order: where each starts, its open calls */
	CHECK_EQ_INT(cygprof_event_cursor_open(cap, 0, &cur), 0);
	depth = 0;
	at = 0;
	while (!cygprof_event_cursor_next(cur, &got, &n) && n) {
		if (nb == cb) {
			cb = cb ? cb * 2 : 64;
			bstart = realloc(bstart, (cb + 1) * sizeof(*bstart));
		}
		bstart[nb++] = at;
		CHECK_EQ_INT(cygprof_event_cursor_open_calls(cur, &oc, &noc, &full), 0);
		CHECK_EQ_U64(full, depth);
		CHECK_EQ_U64(noc, depth < 1024 ? depth : 1024);
		for (j = 0; j < noc; j++) {
			CHECK_EQ_U64(oc[j].node, ev[open[j]].node);
			CHECK_EQ_U64(oc[j].enter_ns, ev[open[j]].ts_ns);
		}
		for (j = 0; j < n; j++, at++) {
			CHECK_EQ_U64(got[j].ts_ns, ev[at].ts_ns);
			if (ev[at].kind == CYGPROF_EV_ENTER)
				open[depth++] = at;
			else
				depth--;
		}
		/* every call open at the block's end: its exit */
		for (j = 0; j < depth; j++) {
			int rc = cygprof_event_cursor_exit(cur, (uint32_t)j, ev[open[j]].ts_ns, &x);

			if (j >= 1024 || exit_at[open[j]] == UINT64_MAX) {
				CHECK_EQ_INT(rc, CYGPROF_E_NOTFOUND);
			} else {
				CHECK_EQ_INT(rc, 0);
				CHECK_EQ_U64(x, exit_at[open[j]]);
			}
			if (j == 30 && depth > 1100)
				j = depth - 40; /* enough of a deep stack */
		}
	}
	CHECK_EQ_U64(at, TI_EVENTS);
	printf("# time index: %zu events in %zu blocks\n", at, nb);
	CHECK(nb >= 4);
	bstart[nb] = TI_EVENTS;
	/* seeks: the block given holds the first event at or after the time */
	for (i = 0; i < 300; i++) {
		uint64_t t = i < 2 ? (i ? UINT64_MAX : 0) : ev[rnd() % TI_EVENTS].ts_ns + rnd() % 3;

		for (j = 0; j < TI_EVENTS && ev[j].ts_ns < t; j++)
			;
		CHECK_EQ_INT(cygprof_event_cursor_seek(cur, t), 0);
		CHECK_EQ_INT(cygprof_event_cursor_next(cur, &got, &n), 0);
		for (b = 0; b + 1 < nb && bstart[b + 1] <= j; b++)
			;
		/* the block holding event j (the last one when none is at t),
		 * or the one before when j starts a block at t (ties) */
		CHECK(n > 0 && (got[0].ts_ns == ev[bstart[b]].ts_ns ||
				(b > 0 && got[0].ts_ns == ev[bstart[b - 1]].ts_ns)));
		CHECK(got[0].ts_ns <= t || b == 0);
	}
	cygprof_event_cursor_close(cur);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
out:
	free(bstart);
	free(ev);
	free(exit_at);
	free(open);
}

/* ---- a realistic memory event model ---------------------------------------- */

/* One thread's heap: a bump pointer with LIFO free lists per 16-byte size
 * class (as malloc's tcache/bins), large blocks from a separate mmap area,
 * frees mostly of recent blocks, realloc growing in place at the top. */
#define MM_CLASSES 64
#define MM_LIVE_MAX 4096

struct mm_block {
	uint64_t addr, size;
	uint8_t cxx;
	uint8_t array;
};

struct mm_heap {
	uint64_t ts, top, mmap_top;
	uint64_t *freel[MM_CLASSES];
	size_t nfree[MM_CLASSES], cfree[MM_CLASSES];
	struct mm_block live[MM_LIVE_MAX];
	size_t nlive;
};

static uint64_t mm_size(void)
{
	uint64_t r = rnd() % 100;

	if (r < 60)
		return rnd() % 57 + 8;
	if (r < 85)
		return rnd() % 449 + 64;
	if (r < 97)
		return rnd() % 7681 + 512;
	return rnd() % 1040000 + 8192;
}

static uint64_t mm_chunk(uint64_t size)
{
	return (size + 16 + 15) & ~(uint64_t)15;
}

static unsigned int mm_class(uint64_t size)
{
	uint64_t c = mm_chunk(size) / 16;

	return c < MM_CLASSES ? (unsigned int)c : 0;
}

static uint64_t mm_get(struct mm_heap *h, uint64_t size)
{
	unsigned int c = mm_class(size);
	uint64_t a;

	if (size >= 131072) {
		h->mmap_top -= (size + 4096 + 4095) & ~(uint64_t)4095;
		return h->mmap_top + 16;
	}
	if (c && h->nfree[c])
		return h->freel[c][--h->nfree[c]];
	a = h->top + 16;
	h->top += mm_chunk(size);
	return a;
}

static void mm_put(struct mm_heap *h, uint64_t addr, uint64_t size)
{
	unsigned int c = mm_class(size);

	if (size >= 131072 || !c)
		return;
	if (h->nfree[c] == h->cfree[c]) {
		h->cfree[c] = h->cfree[c] ? h->cfree[c] * 2 : 64;
		h->freel[c] = realloc(h->freel[c], h->cfree[c] * sizeof(uint64_t));
	}
	h->freel[c][h->nfree[c]++] = addr;
}

static uint32_t mm_stack(void)
{
	uint64_t r = rnd() % 100;

	if (r < 70)
		return (uint32_t)(rnd() % 40 + 1);
	if (r < 95)
		return (uint32_t)(rnd() % 400 + 1);
	return (uint32_t)(rnd() % 5000 + 1);
}

/* Append up to 2 events (one op, or a realloc pair) to ev; returns how many. */
static size_t mm_step(struct mm_heap *h, struct cygprof_mem_event *ev)
{
	struct mm_block *b;
	uint64_t r = rnd() % 100, nsize;
	size_t i;
	int do_alloc;

	h->ts += delta();
	if (h->nlive && r < 5) {
		/* realloc of a live C block: in place when it is the last one */
		i = rnd() % 2 ? h->nlive - 1 : rnd() % h->nlive;
		b = &h->live[i];
		if (b->cxx)
			goto plain;
		nsize = b->size + rnd() % (b->size + 64);
		ev[0] = (struct cygprof_mem_event){ .ts_ns = h->ts, .addr = b->addr,
						    .op = CYGPROF_MEM_FREE,
						    .fn = CYGPROF_FN_REALLOC };
		ev[1] = ev[0];
		ev[1].op = CYGPROF_MEM_ALLOC;
		ev[1].size = nsize;
		ev[1].stack = mm_stack();
		if (b->size < 131072 && b->addr - 16 + mm_chunk(b->size) == h->top &&
		    nsize < 131072) {
			h->top = b->addr - 16 + mm_chunk(nsize);
		} else {
			mm_put(h, b->addr, b->size);
			ev[1].addr = mm_get(h, nsize);
		}
		b->addr = ev[1].addr;
		b->size = nsize;
		return 2;
	}
plain:
	do_alloc = !h->nlive ||
		   (h->nlive < MM_LIVE_MAX && rnd() % 1000 < 500 + (h->nlive < 1000 ? 30 : 0));
	if (do_alloc) {
		b = &h->live[h->nlive++];
		b->size = mm_size();
		b->cxx = rnd() % 10 < 3;
		b->array = b->cxx && rnd() % 4 == 0;
		b->addr = mm_get(h, b->size);
		ev[0] = (struct cygprof_mem_event){ .ts_ns = h->ts, .addr = b->addr,
						    .size = b->size, .stack = mm_stack(),
						    .op = CYGPROF_MEM_ALLOC };
		if (b->cxx)
			ev[0].fn = b->array ? CYGPROF_FN_NEW_ARRAY : CYGPROF_FN_NEW;
		else
			ev[0].fn = rnd() % 100 < 85 ? CYGPROF_FN_MALLOC
				   : rnd() % 4 ? CYGPROF_FN_CALLOC : CYGPROF_FN_POSIX_MEMALIGN;
		return 1;
	}
	/* free: mostly the newest blocks */
	i = rnd() % 100 < 50 ? h->nlive - 1 - rnd() % (h->nlive < 4 ? h->nlive : 4)
			     : rnd() % h->nlive;
	b = &h->live[i];
	ev[0] = (struct cygprof_mem_event){ .ts_ns = h->ts, .addr = b->addr,
					    .op = CYGPROF_MEM_FREE };
	ev[0].fn = !b->cxx ? CYGPROF_FN_FREE : b->array ? CYGPROF_FN_DELETE_ARRAY
							 : CYGPROF_FN_DELETE;
	mm_put(h, b->addr, b->size);
	h->live[i] = h->live[--h->nlive];
	return 1;
}

static void mm_free(struct mm_heap *h)
{
	unsigned int c;

	for (c = 0; c < MM_CLASSES; c++)
		free(h->freel[c]);
}

#define MEM_EVENTS 2000000
#define MEM_THREADS 3

static int mem_same(const struct cygprof_mem_event *a, const struct cygprof_mem_event *b)
{
	return a->ts_ns == b->ts_ns && a->addr == b->addr && a->size == b->size &&
	       a->stack == b->stack && a->op == b->op && a->fn == b->fn && a->flags == b->flags;
}

/* Read the first want[t] events of every thread through cursors open at the
 * same time, merged by time as analysis does. */
static void check_mem(struct cygprof_capture *cap, struct cygprof_mem_event **ev,
		      const size_t *want)
{
	struct cygprof_mem_cursor *cur[MEM_THREADS];
	struct cygprof_mem_event head[MEM_THREADS], e;
	size_t pos[MEM_THREADS] = { 0 }, bad = 0;
	int live[MEM_THREADS], t, best, rc;
	uint64_t count;

	for (t = 0; t < MEM_THREADS; t++) {
		CHECK_EQ_INT(cygprof_capture_mem_count(cap, (uint32_t)t, &count), 0);
		CHECK_EQ_U64(count, want[t]);
		cur[t] = NULL;
		CHECK_EQ_INT(cygprof_mem_cursor_open(cap, (uint32_t)t, &cur[t]), 0);
		if (!cur[t])
			return;
		live[t] = cygprof_mem_cursor_next(cur[t], &head[t]);
		CHECK(live[t] >= 0);
	}
	for (;;) {
		best = -1;
		for (t = 0; t < MEM_THREADS; t++)
			if (live[t] > 0 && (best < 0 || head[t].ts_ns < head[best].ts_ns))
				best = t;
		if (best < 0)
			break;
		t = best;
		if (pos[t] >= want[t] || !mem_same(&head[t], &ev[t][pos[t]])) {
			if (!bad++)
				printf("# thread %d event %zu differs\n", t, pos[t]);
		}
		pos[t]++;
		live[t] = cygprof_mem_cursor_next(cur[t], &head[t]);
		CHECK(live[t] >= 0);
	}
	for (t = 0; t < MEM_THREADS; t++) {
		CHECK_EQ_U64(pos[t], want[t]);
		/* at the end it stays at the end */
		rc = cygprof_mem_cursor_next(cur[t], &e);
		CHECK_EQ_INT(rc, 0);
		cygprof_mem_cursor_close(cur[t]);
	}
	CHECK_EQ_U64(bad, 0);
}

static void test_mem(void)
{
	const char *path = tmp_path("mem.cap");
	static struct mm_heap heap[MEM_THREADS];
	struct cygprof_mem_event *ev[MEM_THREADS], bad, e;
	struct cygprof_mem_cursor *cur = NULL;
	size_t per = MEM_EVENTS / MEM_THREADS, done[MEM_THREADS] = { 0 }, n[MEM_THREADS], i, k,
	       chunk, allocs = 0;
	const uint64_t base[MEM_THREADS] = { 0x55555555a000ull, 0x7ffff0000b00ull,
					     0x7fffe8000b00ull };
	struct cygprof_capture *cap;
	uint64_t size, count;
	int batch, t;

	for (t = 0; t < MEM_THREADS; t++) {
		heap[t].ts = 1000 + (uint64_t)t * 777;
		heap[t].top = base[t];
		heap[t].mmap_top = 0x7ffff7ff0000ull - ((uint64_t)t << 36);
		ev[t] = malloc((per + 1) * sizeof(*ev[t]));
		for (i = 0; i < per;) {
			k = mm_step(&heap[t], ev[t] + i);
			i += k;
		}
		n[t] = i > per ? per : i; /* drop half a trailing realloc pair */
		for (i = 0; i < n[t]; i++)
			allocs += ev[t][i].op == CYGPROF_MEM_ALLOC;
		mm_free(&heap[t]);
	}
	/* extremes still round trip exactly */
	ev[0][10].flags = 0xffff;
	ev[0][11].addr = 1;
	ev[0][12].addr = UINT64_MAX;
	if (ev[1][7].op == CYGPROF_MEM_ALLOC) {
		ev[1][7].size = UINT64_MAX;
		ev[1][7].stack = UINT32_MAX;
	}

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	for (batch = 0; batch < 8; batch++) {
		CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
		for (k = 0; k < 400; k++) {
			t = (int)(rnd() % MEM_THREADS);
			chunk = rnd() % 4 ? rnd() % 64 + 1 : rnd() % 5000 + 1;
			if (chunk > n[t] - done[t])
				chunk = n[t] - done[t];
			if (batch < 7 && done[t] + chunk > n[t] * (batch + 1) / 8)
				continue;
			CHECK_EQ_INT(cygprof_capture_append_mem(cap, (uint32_t)t,
							       ev[t] + done[t], chunk), 0);
			done[t] += chunk;
		}
		if (batch == 2) {
			/* inside a batch, a writer reads its own events */
			check_mem(cap, ev, done);
		}
		CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
		if (batch == 4)
			check_mem(cap, ev, done);
	}
	/* the rest outside a batch */
	for (t = 0; t < MEM_THREADS; t++)
		while (done[t] < n[t]) {
			chunk = rnd() % 2 ? rnd() % 7 + 1 : rnd() % 20000 + 1;
			if (chunk > n[t] - done[t])
				chunk = n[t] - done[t];
			CHECK_EQ_INT(cygprof_capture_append_mem(cap, (uint32_t)t,
							       ev[t] + done[t], chunk), 0);
			done[t] += chunk;
		}
	/* refused: time going backwards, unknown op or fn, a FREE with a size */
	bad = (struct cygprof_mem_event){ .ts_ns = ev[0][n[0] - 1].ts_ns - 1,
					  .op = CYGPROF_MEM_FREE };
	CHECK_EQ_INT(cygprof_capture_append_mem(cap, 0, &bad, 1), -EINVAL);
	bad.ts_ns = UINT64_MAX;
	bad.op = 2;
	CHECK_EQ_INT(cygprof_capture_append_mem(cap, 0, &bad, 1), -EINVAL);
	bad.op = CYGPROF_MEM_ALLOC;
	bad.fn = CYGPROF_FN_COUNT;
	CHECK_EQ_INT(cygprof_capture_append_mem(cap, 0, &bad, 1), -EINVAL);
	bad.fn = CYGPROF_FN_FREE;
	bad.op = CYGPROF_MEM_FREE;
	bad.size = 8;
	CHECK_EQ_INT(cygprof_capture_append_mem(cap, 0, &bad, 1), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_append_mem(cap, 0, NULL, 0), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		goto out;
	check_mem(cap, ev, n);
	CHECK_EQ_INT(cygprof_capture_mem_count(cap, MEM_THREADS, &count), 0);
	CHECK_EQ_U64(count, 0);
	CHECK_EQ_INT(cygprof_mem_cursor_open(cap, MEM_THREADS, &cur), 0);
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), 0);
	cygprof_mem_cursor_close(cur);
	size = cygprof_capture_file_size(cap);
	printf("# mem: %zu events (%.0f%% allocs), file %llu bytes, %.2f bytes/event\n",
	       n[0] + n[1] + n[2], 100.0 * (double)allocs / (double)(n[0] + n[1] + n[2]),
	       (unsigned long long)size, (double)size / (double)(n[0] + n[1] + n[2]));
	CHECK((double)size / (double)(n[0] + n[1] + n[2]) < 12.0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
out:
	for (t = 0; t < MEM_THREADS; t++)
		free(ev[t]);
}

/* ---- stack stash ----------------------------------------------------------- */

static void test_stacks(void)
{
	const char *path = tmp_path("stacks.cap");
	struct cygprof_stack_node *in, *out = NULL, bad;
	struct cygprof_capture *cap;
	size_t n = 0, i, big = 100000, done;

	in = calloc(big, sizeof(*in));
	for (i = 0; i < big; i++) {
		in[i].id = (uint32_t)i + 1;
		/* mostly deep chains with shared prefixes, some new roots */
		in[i].parent = !i || rnd() % 50 == 0 ? 0
			       : rnd() % 3 ? (uint32_t)i : (uint32_t)(rnd() % i + 1);
		in[i].proc_idx = (uint32_t)(rnd() % 3);
		in[i].kind = (uint32_t)(rnd() % 3);
		in[i].addr = rnd();
	}
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	/* refused: not the next id, parent not before, unknown kind */
	bad = in[0];
	bad.id = 2;
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, &bad, 1), -EINVAL);
	bad.id = 1;
	bad.parent = 1;
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, &bad, 1), -EINVAL);
	bad.parent = 0;
	bad.kind = CYGPROF_FRAME_IP + 1;
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, &bad, 1), -EINVAL);
	/* in batches of thousands, then the rest outside a batch */
	for (done = 0; done < big / 2; done += 5000) {
		CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
		CHECK_EQ_INT(cygprof_capture_put_stacks(cap, in + done, 5000), 0);
		CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	}
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, in + done, 1), 0);
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, in + done + 1, big - done - 1), 0);
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, NULL, 0), 0);
	/* a writer reads them back */
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &out, &n), 0);
	CHECK_EQ_U64(n, big);
	free(out);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		goto out;
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &out, &n), 0);
	CHECK_EQ_U64(n, big);
	if (n == big)
		for (i = 0; i < big; i++) {
			if (out[i].id != in[i].id || out[i].parent != in[i].parent ||
			    out[i].proc_idx != in[i].proc_idx || out[i].kind != in[i].kind ||
			    out[i].addr != in[i].addr) {
				CHECK_EQ_U64(i, UINT64_MAX);
				break;
			}
		}
	free(out);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
out:
	free(in);
}

static int copy_file(const char *from, const char *to, off_t len);
static int raw_node_stacks(const char *path, const struct cygprof_stack_node *v, size_t n,
			   const char *schema);
static int raw_put(const char *path, const char *db, const void *key, size_t klen,
		   const void *val, size_t vlen);
static uint64_t size_of(const char *path);

/* Varint v at p (room for 10 bytes): its length. */
static size_t put_var(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* A schema 6 stacks block value (header, packed raw: LE32 length, the
 * bytes) of nodes v[0 .. n) into out: the streams PARENT, PROC, KIND, ADDR
 * after their lengths, extra bytes after them; first and count as given
 * (n nodes are encoded whatever count says); its length. */
static size_t stack_block(uint8_t *out, uint32_t first, uint32_t count,
			  const struct cygprof_stack_node *v, size_t n, size_t extra)
{
	uint8_t st[4][256], raw[1200];
	size_t len[4] = { 0 }, r = 0, i, c;
	uint64_t prev = 0, d;

	for (i = 0; i < n; i++) {
		len[0] += put_var(st[0] + len[0], v[i].parent ? v[i].id - v[i].parent : 0);
		len[1] += put_var(st[1] + len[1], v[i].proc_idx);
		st[2][len[2]++] = (uint8_t)v[i].kind;
		d = v[i].addr - prev;
		len[3] += put_var(st[3] + len[3], d << 1 ^ (0 - (d >> 63)));
		prev = v[i].addr;
	}
	for (c = 0; c < 4; c++)
		r += put_var(raw + r, len[c]);
	for (c = 0; c < 4; c++) {
		memcpy(raw + r, st[c], len[c]);
		r += len[c];
	}
	memset(raw + r, 0xee, extra);
	r += extra;
	for (c = 0; c < 4; c++) {
		out[c] = (uint8_t)(first >> 8 * c);
		out[4 + c] = (uint8_t)(count >> 8 * c);
		out[8 + c] = (uint8_t)(r >> 8 * c);
	}
	memcpy(out + 12, raw, r);
	return 12 + r;
}

/* The entries of DB db of the capture at path (UINT64_MAX: none). */
static uint64_t db_entries(const char *path, const char *db)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_stat st;
	uint64_t n = UINT64_MAX;

	if (mdb_env_create(&env))
		return n;
	mdb_env_set_maxdbs(env, 16);
	if (!mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK, 0600) &&
	    !mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) {
		if (!mdb_dbi_open(txn, db, 0, &dbi) && !mdb_stat(txn, dbi, &st))
			n = st.ms_entries;
		mdb_txn_abort(txn);
	}
	mdb_env_close(env);
	return n;
}

/* Schema 6 stacks: the stash's nodes in blocks of at most 16384,
 * compressed; a block put again while it grows; damaged blocks named. */
static void test_stack_blocks(void)
{
	const char *path = tmp_path("stkblk.cap"), *bad = tmp_path("stkblk-bad.cap");
	struct cygprof_stack_node *in, *out = NULL, v[5];
	struct cygprof_capture *cap;
	size_t n = 0, i, big = 40000, done, len;
	uint8_t key[4] = { 0 }, val[1300];
	int rc;

	in = calloc(big, sizeof(*in));
	for (i = 0; i < big; i++) {
		in[i].id = (uint32_t)i + 1;
		in[i].parent = !i || rnd() % 40 == 0 ? 0 : (uint32_t)(rnd() % i + 1);
		in[i].proc_idx = (uint32_t)(rnd() % 2);
		in[i].kind = (uint32_t)(rnd() % 3);
		in[i].addr = 0x555555554000ull + rnd() % 0x100000;
	}
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	if (!cap)
		goto out;
	for (done = 0; done < big; done += 7000) {
		CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
		CHECK_EQ_INT(cygprof_capture_put_stacks(cap, in + done,
							big - done < 7000 ? big - done : 7000),
			     0);
		/* read back by the writer inside its batch */
		CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &out, &n), 0);
		CHECK_EQ_U64(n, done + (big - done < 7000 ? big - done : 7000));
		free(out);
		CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	}
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	/* 40000 nodes: blocks of 16384, 16384 and 7232 */
	CHECK_EQ_U64(db_entries(path, "stacks"), 3);
	printf("# stacks: %zu nodes, file %llu bytes\n", big, (unsigned long long)size_of(path));
	CHECK(size_of(path) < big * 12);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		goto out;
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &out, &n), 0);
	CHECK_EQ_U64(n, big);
	CHECK(n == big && !memcmp(out, in, big * sizeof(*in)));
	free(out);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	/* hand-made blocks: 0 holds nodes 1-3, 1 holds 4-5 */
	v[0] = (struct cygprof_stack_node){ .id = 1, .kind = 0, .addr = 0x1000 };
	v[1] = (struct cygprof_stack_node){ .id = 2, .parent = 1, .kind = 1, .addr = 0x0ff0 };
	v[2] = (struct cygprof_stack_node){ .id = 3, .parent = 1, .proc_idx = 7, .kind = 2,
					    .addr = UINT64_MAX };
	v[3] = (struct cygprof_stack_node){ .id = 4, .parent = 3, .kind = 1, .addr = 1 };
	v[4] = (struct cygprof_stack_node){ .id = 5, .kind = 0, .addr = 0 };
#define STK_CASE(what, k0, first0, count0, n0, extra0, k1, first1, count1, want, detail)    \
	do {                                                                               \
		CHECK_EQ_INT(copy_file(path, bad, (off_t)size_of(path)), 0);               \
		CHECK_EQ_INT(raw_node_stacks(bad, NULL, 0, "6"), 0);                       \
		key[3] = k0;                                                               \
		len = stack_block(val, first0, count0, v, n0, extra0);                     \
		CHECK_EQ_INT(raw_put(bad, "stacks", key, 4, val, len), 0);                 \
		key[3] = k1;                                                               \
		len = stack_block(val, first1, count1, v + 3, 2, 0);                       \
		CHECK_EQ_INT(raw_put(bad, "stacks", key, 4, val, len), 0);                 \
		rc = cygprof_capture_open(bad, &cap);                                      \
		if (!rc)                                                                   \
			rc = cygprof_capture_get_stacks(cap, &out, &n);                     \
		CHECK_EQ_INT(rc, want);                                                    \
		if (rc)                                                                    \
			CHECK_EQ_STR(cygprof_capture_damage(cap), detail);                  \
		else {                                                                     \
			CHECK_EQ_U64(n, 5);                                                \
			CHECK(n == 5 && !memcmp(out, v, sizeof(v)));                       \
			free(out);                                                         \
		}                                                                          \
		printf("# %s\n", what);                                                    \
		cygprof_capture_close(cap);                                                \
		cap = NULL;                                                                \
	} while (0)
	STK_CASE("good, bytes after the streams", 0, 1, 3, 3, 5, 1, 4, 2, 0, "");
	STK_CASE("block 1 not after block 0", 0, 1, 3, 3, 0, 1, 5, 2, CYGPROF_E_CORRUPT,
		 "stack block 1: first node 5, 4 expected");
	STK_CASE("block 1 missing", 0, 1, 3, 3, 0, 2, 4, 2, CYGPROF_E_CORRUPT,
		 "stack block 1 missing");
	STK_CASE("a count the streams do not hold", 0, 1, 4, 3, 0, 1, 5, 2, CYGPROF_E_CORRUPT,
		 "stack block 0: malformed");
	STK_CASE("no node", 0, 1, 0, 0, 0, 1, 1, 2, CYGPROF_E_CORRUPT,
		 "stack block 0: malformed");
	v[1].parent = 3; /* after it */
	STK_CASE("a parent not before", 0, 1, 3, 3, 0, 1, 4, 2, CYGPROF_E_CORRUPT,
		 "stack block 0: malformed");
	v[1].parent = 1;
	v[2].kind = 3;
	STK_CASE("an unknown kind", 0, 1, 3, 3, 0, 1, 4, 2, CYGPROF_E_CORRUPT,
		 "stack block 0: malformed");
	v[2].kind = 2;
	/* the last block's count, read at open, passes the most a block holds */
	STK_CASE("a last block of too many nodes", 0, 1, 3, 3, 0, 1, 4, 16385, CYGPROF_E_CORRUPT,
		 "stack block 1: malformed");
#undef STK_CASE
out:
	free(in);
}

/* A tiny initial map forces MDB_MAP_FULL inside a batch: the library grows the
 * map and replays the batch. */
static void test_map_growth(void)
{
	const char *path = tmp_path("grow.cap");
	struct cygprof_capture *cap;
	struct cygprof_node *nodes, *out = NULL;
	size_t n = 0, nn = 20000, i;
	uint32_t t;
	char *v = NULL;

	nodes = calloc(nn, sizeof(*nodes));
	nodes[0].parent = CYGPROF_NONE;
	for (i = 1; i < nn; i++) {
		nodes[i].parent = (uint32_t)(i - 1);
		nodes[i].fn = i;
	}
	setenv("CYGPROF_CAPTURE_MAPSIZE", "1048576", 1);
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	unsetenv("CYGPROF_CAPTURE_MAPSIZE");
	CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "k", "v"), 0);
	for (t = 0; t < 8; t++)
		CHECK_EQ_INT(cygprof_capture_put_tree(cap, t, nodes, nn), 0);
	CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	for (t = 8; t < 12; t++)
		CHECK_EQ_INT(cygprof_capture_put_tree(cap, t, nodes, nn), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		goto out;
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "k", &v), 0);
	CHECK_EQ_STR(v, "v");
	free(v);
	for (t = 0; t < 12; t++) {
		CHECK_EQ_INT(cygprof_capture_get_tree(cap, t, &out, &n), 0);
		CHECK_EQ_U64(n, nn);
		if (n == nn)
			CHECK_EQ_U64(out[nn - 1].fn, nn - 1);
		free(out);
	}
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
out:
	free(nodes);
}

/* ---- error paths ----------------------------------------------------------- */

static int copy_file(const char *from, const char *to, off_t len)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t r;
	off_t done = 0;

	if (in < 0 || out < 0)
		return -1;
	while (done < len && (r = read(in, buf, sizeof(buf))) > 0) {
		if (r > len - done)
			r = (ssize_t)(len - done);
		if (write(out, buf, (size_t)r) != r)
			return -1;
		done += r;
	}
	close(in);
	close(out);
	return 0;
}

/* CRC32C, bit by bit: an independent check of the library's. */
static uint32_t crc32c(uint32_t crc, const void *data, size_t n)
{
	const uint8_t *p = data;
	uint32_t c = ~crc;
	int k;

	while (n--) {
		c ^= *p++;
		for (k = 0; k < 8; k++)
			c = c & 1 ? c >> 1 ^ 0x82F63B78u : c >> 1;
	}
	return ~c;
}

/* A schema 2 value: the bytes, then LE32 CRC32C of the DB name, LE32 key
 * length, the key and the bytes. */
static size_t seal_value(uint8_t *out, const char *db, const void *key, size_t klen,
			 const void *val, size_t vlen)
{
	uint8_t kl[4] = { (uint8_t)klen, (uint8_t)(klen >> 8), (uint8_t)(klen >> 16),
			  (uint8_t)(klen >> 24) };
	uint32_t c;

	c = crc32c(0, db, strlen(db));
	c = crc32c(c, kl, 4);
	c = crc32c(c, key, klen);
	c = crc32c(c, val, vlen);
	memmove(out, val, vlen);
	out[vlen] = (uint8_t)c;
	out[vlen + 1] = (uint8_t)(c >> 8);
	out[vlen + 2] = (uint8_t)(c >> 16);
	out[vlen + 3] = (uint8_t)(c >> 24);
	return vlen + 4;
}

static const char *const all_dbs[] = { "meta",	  "procs", "threads", "trees",	"timeline",
				       "objects", "symbols", "mem",   "stacks", "sites",
				       "counters", "samples", "psamples", "offcpu", "cpu",
				       "latency" };
/* all_dbs[] from here on were added within schema 2: a capture written
 * before them lacks them and its seal does not name them */
#define ALL_DBS_V2 10

/* After a change behind the library's back, write the seal a closed
 * capture carries (meta "txn" and "counts") for the new transaction. */
static int reseal(MDB_txn *txn)
{
	char counts[512], id[32];
	uint8_t buf[600];
	MDB_dbi meta, dbi;
	MDB_stat st;
	MDB_val k, v;
	size_t off = 0, i;
	int rc;

	rc = mdb_dbi_open(txn, "meta", 0, &meta);
	k = (MDB_val){ 3, "txn" };
	if (!rc && mdb_get(txn, meta, &k, &v) == MDB_NOTFOUND)
		return 0; /* not sealed */
	snprintf(id, sizeof(id), "%zu", mdb_txn_id(txn));
	v = (MDB_val){ seal_value(buf, "meta", "txn", 3, id, strlen(id)), buf };
	if (!rc)
		rc = mdb_put(txn, meta, &k, &v, 0);
	for (i = 0; i < sizeof(all_dbs) / sizeof(*all_dbs) && !rc; i++) {
		uint32_t digest = 0;
		MDB_cursor *cur;
		MDB_val ck, cv;
		int r;

		rc = mdb_dbi_open(txn, all_dbs[i], 0, &dbi);
		if (rc == MDB_NOTFOUND && i >= ALL_DBS_V2) {
			rc = 0;
			continue;
		}
		if (rc == MDB_NOTFOUND) {
			st.ms_entries = 0;
			rc = 0;
		} else if (!rc) {
			rc = mdb_stat(txn, dbi, &st);
			if (!rc)
				rc = mdb_cursor_open(txn, dbi, &cur);
			for (r = rc ? rc : mdb_cursor_get(cur, &ck, &cv, MDB_FIRST); !r;
			     r = mdb_cursor_get(cur, &ck, &cv, MDB_NEXT)) {
				uint8_t kl[4] = { (uint8_t)ck.mv_size, (uint8_t)(ck.mv_size >> 8), 0, 0 };

				digest = crc32c(digest, kl, 4);
				digest = crc32c(digest, ck.mv_data, ck.mv_size);
			}
			if (!rc)
				mdb_cursor_close(cur);
		}
		off += (size_t)snprintf(counts + off, sizeof(counts) - off, "%s%s=%zu:%08x",
					i ? " " : "", all_dbs[i], st.ms_entries, digest);
	}
	k = (MDB_val){ 6, "counts" };
	v = (MDB_val){ seal_value(buf, "meta", "counts", 6, counts, off), buf };
	if (!rc)
		rc = mdb_put(txn, meta, &k, &v, 0);
	return rc;
}

/* Damaged values written behind the library's back (with a valid checksum
 * when crc, and the seal updated) decode as CORRUPT. */
static int raw_put2(const char *path, const char *db, const void *key, size_t klen,
		    const void *val, size_t vlen, bool crc)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	uint8_t *buf = malloc(vlen + 4);
	MDB_val k = { klen, (void *)key }, v = { vlen, (void *)val };
	int rc;

	if (crc)
		v = (MDB_val){ seal_value(buf, db, key, klen, val, vlen), buf };
	rc = mdb_env_create(&env);
	if (rc)
		return rc;
	mdb_env_set_maxdbs(env, 16);
	rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_NOLOCK, 0644);
	if (!rc)
		rc = mdb_txn_begin(env, NULL, 0, &txn);
	if (!rc) {
		rc = mdb_dbi_open(txn, db, 0, &dbi);
		if (!rc)
			rc = mdb_put(txn, dbi, &k, &v, 0);
		if (!rc)
			rc = reseal(txn);
		if (!rc)
			rc = mdb_txn_commit(txn);
		else
			mdb_txn_abort(txn);
	}
	mdb_env_close(env);
	free(buf);
	return rc;
}

static int raw_put(const char *path, const char *db, const void *key, size_t klen,
		   const void *val, size_t vlen)
{
	return raw_put2(path, db, key, klen, val, vlen, true);
}

/* The stacks DB of the capture at path emptied and filled with nodes
 * one a value (the layout of schema 5 and older), as an older cygprof
 * wrote them; the capture says it is of schema (a digit). */
static int raw_node_stacks(const char *path, const struct cygprof_stack_node *v, size_t n,
			   const char *schema)
{
	static const char *const stacks[] = { "stacks" };
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	uint8_t key[4], val[20];
	size_t i;
	int rc;

	rc = mdb_env_create(&env);
	if (rc)
		return rc;
	mdb_env_set_maxdbs(env, 16);
	rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_NOLOCK, 0644);
	if (!rc)
		rc = mdb_txn_begin(env, NULL, 0, &txn);
	if (!rc) {
		rc = mdb_dbi_open(txn, stacks[0], 0, &dbi);
		if (!rc)
			rc = mdb_drop(txn, dbi, 0);
		if (!rc)
			rc = mdb_txn_commit(txn);
		else
			mdb_txn_abort(txn);
	}
	mdb_env_close(env);
	for (i = 0; i < n && !rc; i++) {
		key[0] = (uint8_t)(v[i].id >> 24);
		key[1] = (uint8_t)(v[i].id >> 16);
		key[2] = (uint8_t)(v[i].id >> 8);
		key[3] = (uint8_t)v[i].id;
		for (int b = 0; b < 4; b++) {
			val[b] = (uint8_t)(v[i].parent >> 8 * b);
			val[4 + b] = (uint8_t)(v[i].proc_idx >> 8 * b);
			val[8 + b] = (uint8_t)(v[i].kind >> 8 * b);
		}
		for (int b = 0; b < 8; b++)
			val[12 + b] = (uint8_t)(v[i].addr >> 8 * b);
		rc = raw_put(path, "stacks", key, 4, val, 20);
	}
	if (!rc)
		rc = raw_put(path, "meta", "schema", 6, schema, 1);
	return rc;
}

/* A tree or sites value given in its raw layout, stored packed without
 * compression (LE32 raw length, then the raw bytes). */
static int raw_packed(const char *path, const char *db, const uint8_t *key, const uint8_t *val,
		      size_t len)
{
	uint8_t out[256];

	out[0] = (uint8_t)len;
	out[1] = out[2] = out[3] = 0;
	memcpy(out + 4, val, len);
	return raw_put(path, db, key, 4, out, 4 + len);
}

/* An event block given in the schema 1 layout (count, first_ts, events)
 * stored as schema 2 (count, first_ts, raw length, zstd frame). */
static int raw_block(const char *path, const char *db, const uint8_t *key, const uint8_t *val,
		     size_t len)
{
	uint8_t out[256];
	size_t z;

	memcpy(out, val, 12);
	out[12] = (uint8_t)(len - 12);
	out[13] = out[14] = out[15] = 0;
	z = ZSTD_compress(out + 16, sizeof(out) - 16, val + 12, len - 12, 1);
	if (ZSTD_isError(z))
		return -1;
	return raw_put(path, db, key, 8, out, 16 + z);
}

static void test_errors(void)
{
	struct cygprof_capture *cap = (void *)1;
	const char *p;
	struct stat st;
	uint8_t junk[65536];
	size_t i;
	int fd;

	CHECK_EQ_INT(cygprof_capture_open(tmp_path("does-not-exist.cap"), &cap), -ENOENT);
	CHECK(cap == NULL);
	CHECK_EQ_INT(cygprof_capture_open(dir, &cap), -EISDIR);

	p = tmp_path("random.cap");
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)rnd();
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(write(fd, junk, sizeof(junk)) == (ssize_t)sizeof(junk));
	close(fd);
	CHECK_EQ_INT(cygprof_capture_open(p, &cap), CYGPROF_E_NOTCAPTURE);

	p = tmp_path("empty.cap");
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	close(fd);
	CHECK_EQ_INT(cygprof_capture_open(p, &cap), CYGPROF_E_NOTCAPTURE);

	/* truncated to half its size */
	p = tmp_path("half.cap");
	CHECK_EQ_INT(stat(timeline_path, &st), 0);
	CHECK_EQ_INT(copy_file(timeline_path, p, st.st_size / 2), 0);
	CHECK_EQ_INT(cygprof_capture_open(p, &cap), CYGPROF_E_CORRUPT);
	/* ...and to 5000 bytes: the second meta page is missing */
	CHECK_EQ_INT(copy_file(timeline_path, p, 5000), 0);
	CHECK_EQ_INT(cygprof_capture_open(p, &cap), CYGPROF_E_CORRUPT);

	/* a newer schema: the error names it */
	p = tmp_path("schema9.cap");
	CHECK_EQ_INT(cygprof_capture_create(p, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "schema", "9"), -EPERM);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "txn", "3"), -EPERM);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(raw_put(p, "meta", "schema", 6, "9", 1), 0);
	CHECK_EQ_INT(cygprof_capture_open(p, &cap), CYGPROF_E_VERSION);
	CHECK_EQ_STR(cygprof_strerror(CYGPROF_E_VERSION),
		     "capture written by a newer cygprof (unknown schema) (schema 9; this "
		     "cygprof reads schemas 1 to 8)");
	/* "2" damaged into "1" (with a valid checksum even) is not schema 1 */
	CHECK_EQ_INT(raw_put(p, "meta", "schema", 6, "1", 1), 0);
	CHECK_EQ_INT(cygprof_capture_open(p, &cap), CYGPROF_E_CORRUPT);
	/* ...nor without its checksum: then magic has one and schema not */
	CHECK_EQ_INT(raw_put2(p, "meta", "schema", 6, "1", 1, false), 0);
	CHECK_EQ_INT(cygprof_capture_open(p, &cap), CYGPROF_E_CORRUPT);

	/* an LMDB file without the magic */
	p = tmp_path("nomagic.cap");
	CHECK_EQ_INT(cygprof_capture_create(p, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(raw_put(p, "meta", "magic", 5, "something-else", 14), 0);
	CHECK_EQ_INT(cygprof_capture_open(p, &cap), CYGPROF_E_NOTCAPTURE);

	CHECK_EQ_INT(cygprof_capture_create(tmp_path("no/such/dir.cap"), &cap), -ENOENT);
	CHECK(strlen(cygprof_strerror(CYGPROF_E_CORRUPT)) > 0);
	CHECK(strlen(cygprof_strerror(-ENOENT)) > 0);
	CHECK(strlen(cygprof_strerror(12345)) > 0);
}

static int count_cb(const struct cygprof_event *ev, size_t n, void *data)
{
	*(size_t *)data += n;
	return 0;
}

static void test_corrupt_values(void)
{
	const char *path = tmp_path("damaged.cap");
	struct cygprof_capture *cap;
	struct cygprof_proc proc = { .idx = 0, .command = "x", .exe = "y" }, *procs = NULL;
	struct cygprof_thread *threads = NULL;
	struct cygprof_node *nodes = NULL;
	struct cygprof_object *objs = NULL;
	struct cygprof_symbol *syms = NULL;
	struct cygprof_event ev = { .ts_ns = 5, .node = 1, .kind = 0 };
	uint8_t key[12] = { 0 }, val[80];
	size_t n = 99, seen = 0;

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_put_proc(cap, &proc), 0);
	CHECK_EQ_INT(cygprof_capture_append_events(cap, 0, &ev, 1), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	/* a proc whose string length runs past the end of the value */
	memset(val, 0, sizeof(val));
	val[36] = 200;
	key[3] = 1;
	CHECK_EQ_INT(raw_put(path, "procs", key, 4, val, 41), 0);
	/* a thread record cut short */
	CHECK_EQ_INT(raw_put(path, "threads", key, 4, val, 50), 0);
	/* a tree claiming more nodes than it holds, and one with a bad parent */
	memset(val, 0, sizeof(val));
	val[0] = 2;
	val[4] = 40;
	CHECK_EQ_INT(raw_packed(path, "trees", key, val, 48), 0);
	key[3] = 2;
	val[0] = 1;
	val[8] = 5; /* parent 5 of node 0 */
	CHECK_EQ_INT(raw_packed(path, "trees", key, val, 48), 0);
	/* packed: a frame that claims to expand past the bound */
	key[3] = 3;
	{
		uint8_t z[64];
		size_t zn = ZSTD_compress(z + 4, sizeof(z) - 4, val, 48, 1);

		z[0] = z[1] = z[2] = 0xff;
		z[3] = 0x7f;
		CHECK_EQ_INT(raw_put(path, "trees", key, 4, z, 4 + zn), 0);
		/* ...and one whose frame expands to other than its stated size */
		key[3] = 4;
		z[0] = 47;
		z[1] = z[2] = z[3] = 0;
		CHECK_EQ_INT(raw_put(path, "trees", key, 4, z, 4 + zn), 0);
	}
	key[3] = 2;
	/* an object with build_id_len 40 */
	memset(val, 0, sizeof(val));
	val[28] = 40;
	CHECK_EQ_INT(raw_put(path, "objects", key, 4, val, 64 + 4), 0);
	/* a symbol of process 2 with a value too short */
	CHECK_EQ_INT(raw_put(path, "symbols", key, 12, val, 5), 0);
	/* a timeline block of thread 1 claiming 3 events but holding 2.5 */
	memset(val, 0, sizeof(val));
	val[0] = 3;
	val[12] = 4; val[13] = 1; val[14] = 8; val[15] = 2; val[16] = 0x80;
	memset(key, 0, 8);
	key[3] = 1;
	CHECK_EQ_INT(raw_block(path, "timeline", key, val, 17), 0);
	/* thread 2: a varint longer than 64 bits */
	key[3] = 2;
	val[0] = 1;
	memset(val + 12, 0xff, 11);
	val[23] = 1;
	CHECK_EQ_INT(raw_block(path, "timeline", key, val, 24), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_get_procs(cap, &procs, &n), CYGPROF_E_CORRUPT);
	CHECK(procs == NULL);
	CHECK_EQ_U64(n, 0);
	CHECK_EQ_INT(cygprof_capture_get_threads(cap, &threads, &n), CYGPROF_E_CORRUPT);
	CHECK_EQ_INT(cygprof_capture_get_tree(cap, 1, &nodes, &n), CYGPROF_E_CORRUPT);
	CHECK_EQ_INT(cygprof_capture_get_tree(cap, 2, &nodes, &n), CYGPROF_E_CORRUPT);
	CHECK(nodes == NULL);
	CHECK_EQ_INT(cygprof_capture_get_tree(cap, 3, &nodes, &n), CYGPROF_E_CORRUPT);
	CHECK_EQ_INT(cygprof_capture_get_tree(cap, 4, &nodes, &n), CYGPROF_E_CORRUPT);
	CHECK_EQ_STR(cygprof_capture_damage(NULL), "thread 4 call tree: malformed");
	CHECK_EQ_INT(cygprof_capture_get_objects(cap, &objs, &n), CYGPROF_E_CORRUPT);
	CHECK_EQ_INT(cygprof_capture_get_symbols(cap, 2, &syms, &n), CYGPROF_E_CORRUPT);
	CHECK_EQ_INT(cygprof_capture_foreach_event(cap, 0, count_cb, &seen), 0);
	CHECK_EQ_U64(seen, 1);
	CHECK_EQ_INT(cygprof_capture_foreach_event(cap, 1, count_cb, &seen), CYGPROF_E_CORRUPT);
	CHECK_EQ_INT(cygprof_capture_foreach_event(cap, 2, count_cb, &seen), CYGPROF_E_CORRUPT);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
}

static void le64_at(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

static uint32_t get_le32_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The value of key in DB db of the capture at path, its checksum cut off
 * (malloc'd, *n bytes; NULL when absent). */
static uint8_t *raw_get(const char *path, const char *db, const void *key, size_t klen,
			size_t *n)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = { klen, (void *)key }, v;
	uint8_t *out = NULL;

	*n = 0;
	if (mdb_env_create(&env))
		return NULL;
	mdb_env_set_maxdbs(env, 16);
	if (!mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK, 0600) &&
	    !mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) {
		if (!mdb_dbi_open(txn, db, 0, &dbi) && !mdb_get(txn, dbi, &k, &v) && v.mv_size >= 4 &&
		    (out = malloc(v.mv_size))) {
			memcpy(out, v.mv_data, v.mv_size - 4);
			*n = v.mv_size - 4;
		}
		mdb_txn_abort(txn);
	}
	mdb_env_close(env);
	return out;
}

/* The columns of a schema 7 tree or sites value (LE32 raw length,
 * "cols", a zstd frame) at v: malloc'd, *cn bytes; NULL when v is not one. */
static uint8_t *cols_of(const uint8_t *v, size_t n, size_t *cn)
{
	unsigned long long c;
	uint8_t *out;

	if (n < 8 || memcmp(v + 4, "cols", 4))
		return NULL;
	c = ZSTD_getFrameContentSize(v + 8, n - 8);
	if (c == ZSTD_CONTENTSIZE_UNKNOWN || c == ZSTD_CONTENTSIZE_ERROR || !(out = malloc(c + 16)))
		return NULL;
	*cn = ZSTD_decompress(out, c, v + 8, n - 8);
	if (ZSTD_isError(*cn)) {
		free(out);
		return NULL;
	}
	return out;
}

/* The size of a zstd frame (level 1) of n rows of size bytes at v after
 * their count and size, as schema 6 stores them (rows laid out as the
 * structs are on a little-endian host). */
static size_t frame_of(const void *v, size_t n, size_t size)
{
	size_t len = 8 + n * size, zn;
	uint8_t *raw = malloc(len), *z = malloc(ZSTD_compressBound(len));
	uint32_t h[2] = { (uint32_t)n, (uint32_t)size };

	memcpy(raw, h, 8);
	memcpy(raw + 8, v, n * size);
	zn = ZSTD_compress(z, ZSTD_compressBound(len), raw, len, 1);
	free(raw);
	free(z);
	return ZSTD_isError(zn) ? 0 : zn;
}

/* Columns c (cn bytes) stored as the thread's tree, rows of raw bytes. */
static int put_cols(const char *path, const char *db, const uint8_t *key, uint32_t raw,
		    const uint8_t *c, size_t cn)
{
	size_t bound = ZSTD_compressBound(cn), zn;
	uint8_t *v = malloc(8 + bound);
	int rc;

	memcpy(v, &raw, 4); /* little-endian hosts only run this */
	memcpy(v + 4, "cols", 4);
	zn = ZSTD_compress(v + 8, bound, c, cn, 3);
	rc = ZSTD_isError(zn) ? -1 : raw_put(path, db, key, 4, v, 8 + zn);
	free(v);
	return rc;
}

/* Schema 7: a tree and call sites as a program's are (few functions,
 * parents close by, small counts) are stored column-coded, a third of
 * their zstd frame's size or less, and read back exactly; damaged columns
 * read as a damaged capture; a reopened schema 6 capture keeps the frames
 * a schema 6 reader reads. */
static int raw_drop2(const char *path, const char *const *dbs, size_t n, bool sealed);

static void test_cols(void)
{
	const char *path = tmp_path("cols.cap");
	struct cygprof_capture *cap;
	struct cygprof_node *in, *out = NULL;
	struct cygprof_callsite *sin, *sout = NULL;
	size_t nn = 20000, ns = 30000, n = 0, i, vn, cn, raw_tree = 8 + nn * 40;
	uint8_t key[4] = { 0 }, *v, *c, bad[128];

	in = calloc(nn, sizeof(*in));
	sin = calloc(ns, sizeof(*sin));
	in[0].parent = CYGPROF_NONE;
	for (i = 0; i < nn; i++) {
		if (i)
			in[i].parent = (uint32_t)(i - 1 - rnd() % (i < 8 ? i : 8));
		in[i].fn = 0x55d0c0401000ull + 16 * (rnd() % 600);
		in[i].site = in[i].fn + 0x20000 + rnd() % 4096;
		in[i].calls = 1 + rnd() % 3000;
		in[i].total_ns = in[i].calls * (40 + rnd() % 400);
	}
	in[nn - 1].total_ns = UINT64_MAX; /* every bit of a word */
	in[nn - 1].fn = 0;
	for (i = 0; i < ns; i++) {
		sin[i].node = (uint32_t)(i * nn / ns);
		sin[i].site = 0x55d0c0421000ull + rnd() % 65536;
		sin[i].calls = rnd() % 500;
		sin[i].total_ns = sin[i].calls * 97;
	}
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_put_tree(cap, 0, in, nn), 0);
	CHECK_EQ_INT(cygprof_capture_put_sites(cap, 0, sin, ns), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	v = raw_get(path, "trees", key, 4, &vn);
	CHECK(v != NULL && vn > 8 && !memcmp(v + 4, "cols", 4));
	if (v)
		printf("# tree: %zu nodes, %zu bytes raw, %zu stored, %zu as a frame of rows\n", nn,
		       raw_tree, vn, 4 + frame_of(in, nn, sizeof(*in)));
	/* smaller than the level 1 frame of the rows (schema 6's form) */
	CHECK(vn < 4 + frame_of(in, nn, sizeof(*in)));
	free(v);
	v = raw_get(path, "sites", key, 4, &vn);
	CHECK(v != NULL && vn > 8 && !memcmp(v + 4, "cols", 4));
	if (v)
		printf("# sites: %zu entries, %zu bytes raw, %zu stored, %zu as a frame of rows\n", ns,
		       8 + ns * 32, vn, 4 + frame_of(sin, ns, sizeof(*sin)));
	CHECK(vn < 4 + frame_of(sin, ns, sizeof(*sin)));
	free(v);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		goto out;
	CHECK_EQ_INT(cygprof_capture_get_tree(cap, 0, &out, &n), 0);
	CHECK_EQ_U64(n, nn);
	for (i = 0; out && n == nn && i < nn; i++)
		if (memcmp(&out[i], &in[i], sizeof(*in))) {
			CHECK_EQ_U64(i, UINT64_MAX);
			break;
		}
	free(out);
	out = NULL;
	CHECK_EQ_INT(cygprof_capture_get_sites(cap, 0, &sout, &n), 0);
	CHECK_EQ_U64(n, ns);
	for (i = 0; sout && n == ns && i < ns; i++)
		if (memcmp(&sout[i], &sin[i], sizeof(*sin))) {
			CHECK_EQ_U64(i, UINT64_MAX);
			break;
		}
	free(sout);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	/* damaged columns: a whole small tree of 2 nodes of 10 words coded
	 * by hand (each column "as it is"), then broken one way each */
	{
		uint8_t good[8 + 10 * 11];
		uint32_t two = 2, rs = 40, raw = 8 + 2 * 40;
		size_t gl = 8, w;
		struct {
			const char *why;
			size_t len;
			int at, val;
		} cases[] = {
			{ "good", 0, -1, 0 },
			{ "an unknown column mode", 0, 8, 2 },
			{ "a byte after the last column", 1, -1, 0 },
			{ "a column cut short", (size_t)-1, -1, 0 },
			{ "a row size not of 4-byte words", 0, 4, 41 },
			{ "more rows than the raw length holds", 0, 0, 3 },
		};

		memcpy(good, &two, 4);
		memcpy(good + 4, &rs, 4);
		for (w = 0; w < 10; w++) {
			good[gl++] = 0; /* the column as it is */
			gl += put_var(good + gl, w ? w : 0xffffffffu); /* row 0 */
			gl += put_var(good + gl, w ? w + 1 : 0);       /* row 1 */
		}
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			size_t bl = gl + (cases[i].len == (size_t)-1 ? (size_t)-1 : cases[i].len);

			memcpy(bad, good, gl);
			bad[gl] = 1;
			if (cases[i].at >= 0)
				bad[cases[i].at] = (uint8_t)cases[i].val;
			CHECK_EQ_INT(put_cols(path, "trees", key, raw, bad, bl), 0);
			CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
			if (!cap)
				continue;
			printf("# %s\n", cases[i].why);
			CHECK_EQ_INT(cygprof_capture_get_tree(cap, 0, &out, &n),
				     i ? CYGPROF_E_CORRUPT : 0);
			if (!i && out && n == 2) {
				CHECK_EQ_U64(out[0].parent, CYGPROF_NONE);
				CHECK_EQ_U64(out[1].parent, 0);
				CHECK_EQ_U64(out[0].fn, 2ull | 3ull << 32);
				CHECK_EQ_U64(out[1].fn, 3ull | 4ull << 32);
				CHECK_EQ_U64(out[1].total_ns, 9ull | 10ull << 32);
			}
			free(out);
			out = NULL;
			cygprof_capture_close(cap);
		}
	}

	/* a schema 6 capture reopened stays schema 6: frames of the rows (it
	 * has no latency DB, added with schema 8) */
	const char *const later[] = { "latency" };
	CHECK_EQ_INT(raw_drop2(path, later, 1, true), 0);
	CHECK_EQ_INT(raw_put(path, "meta", "schema", 6, "6", 1), 0);
	CHECK_EQ_INT(cygprof_capture_open_rw(path, &cap), 0);
	if (cap) {
		CHECK_EQ_INT(cygprof_capture_put_tree(cap, 0, in, nn), 0);
		CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	}
	v = raw_get(path, "trees", key, 4, &vn);
	CHECK(v != NULL && vn > 8 && memcmp(v + 4, "cols", 4));
	c = v ? cols_of(v, vn, &cn) : NULL;
	CHECK(c == NULL);
	free(c);
	free(v);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (cap) {
		CHECK_EQ_INT(cygprof_capture_get_tree(cap, 0, &out, &n), 0);
		CHECK_EQ_U64(n, nn);
		if (out && n == nn)
			CHECK_EQ_INT(memcmp(out, in, nn * sizeof(*in)), 0);
		free(out);
		CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	}
out:
	free(in);
	free(sin);
}

/* The leaf pages of DB db of the capture at path (0 when absent). */
static size_t leaf_pages(const char *path, const char *db)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_stat st;
	size_t n = 0;

	if (mdb_env_create(&env))
		return 0;
	mdb_env_set_maxdbs(env, 16);
	if (!mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK, 0600) &&
	    !mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) {
		if (!mdb_dbi_open(txn, db, 0, &dbi) && !mdb_stat(txn, dbi, &st))
			n = st.ms_leaf_pages;
		mdb_txn_abort(txn);
	}
	mdb_env_close(env);
	return n;
}

/* Symbols put out of address order (as the stash finds them) are put
 * again in key order when the capture is closed: the leaf pages are
 * full, where LMDB's splits left them about half full, and every symbol
 * reads back as it was put. */
static void test_refill(void)
{
	const char *path = tmp_path("refill.cap");
	struct cygprof_capture *cap;
	struct cygprof_symbol in, *out = NULL;
	size_t n = 0, i, nsym = 3000, node;
	char name[32];

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	for (i = 0; i < nsym; i++) {
		/* a permutation of 0 .. nsym - 1 (7919 is prime to 3000) */
		size_t j = i * 7919 % nsym;

		snprintf(name, sizeof name, "fn_%05zu_%zx", j, j * 31);
		in = (struct cygprof_symbol){ .proc_idx = 0, .object_idx = (uint32_t)(j % 3),
					      .addr = 0x401000 + 16 * j, .size = j, .name = name };
		CHECK_EQ_INT(cygprof_capture_put_symbol(cap, &in), 0);
	}
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	/* a node: 8 bytes of header, a 12-byte key, the record (4 + 8 + 4 +
	 * a 12 to 14-byte name) and its checksum, 2 bytes of page index */
	node = 8 + 12 + 16 + 14 + 4 + 2;
	printf("# %zu symbols: %zu leaf pages, %zu when full\n", nsym, leaf_pages(path, "symbols"),
	       nsym * node / (4096 - 16) + 1);
	CHECK(leaf_pages(path, "symbols") <= nsym * node / (4096 - 16) + 1);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_get_symbols(cap, 0, &out, &n), 0);
	CHECK_EQ_U64(n, nsym);
	for (i = 0; out && i < n; i++) {
		snprintf(name, sizeof name, "fn_%05zu_%zx", i, i * 31);
		if (out[i].addr != 0x401000 + 16 * i || out[i].size != i ||
		    out[i].object_idx != i % 3 || strcmp(out[i].name, name)) {
			CHECK_EQ_U64(i, UINT64_MAX);
			break;
		}
	}
	cygprof_symbols_free(out, n);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
}

/* A memory block still open at a commit is written quickly (zstd level
 * 1: it is written again); when it closes, or at the end even when no
 * event came after that commit, at its level (5): the value is then the
 * frame of level 5 of its raw bytes. */
/* The memory encoder's bytes (issue 31, point 9: the encoder made cheaper,
 * its output the same): a generated stream of two threads, with what the
 * encoder's short cuts take (a free of the allocation just made, an
 * allocation at the last free of its size class) and what they must leave
 * to the general paths (older frees, claims deeper in a class's list or of
 * another class, addresses never freed, double frees), appended in chunks
 * of every size with commits between (open blocks written again), read
 * back exactly, and its blocks (the raw columns, after the key and block
 * header) hashed: the digest is the encoder's before the change.  A change
 * of the encoding itself (with a schema bump) sets a new digest here. */
#define MEMB_EVENTS 300000
#define MEMB_DIGEST 0x1264c45498ae1893ull

static uint64_t memb_rs = 0x9e3779b97f4a7c15ull;
static uint64_t memb_rnd(void)
{
	memb_rs ^= memb_rs << 13;
	memb_rs ^= memb_rs >> 7;
	memb_rs ^= memb_rs << 17;
	return memb_rs;
}

/* n events of one thread from time ts: a malloc/free loop over 4 paths for
 * the first third, then a heap of up to 2048 live blocks. */
static void memb_gen(struct cygprof_mem_event *ev, size_t n, uint64_t ts, uint64_t base)
{
	static uint64_t live[2048], lsz[2048];
	uint64_t freed[64] = { 0 }, fsz[64] = { 0 };
	size_t nl = 0, i, j;
	unsigned k;

	for (i = 0; i < n; i++) {
		struct cygprof_mem_event *e = &ev[i];

		memset(e, 0, sizeof(*e));
		ts += memb_rnd() % 8 ? memb_rnd() % 200 : memb_rnd() % 3000000;
		e->ts_ns = ts;
		if (i < n / 3) {
			k = (unsigned)(i / 2 % 4);
			e->addr = base + 0x40 * k;
			if (i % 2 == 0) {
				e->op = CYGPROF_MEM_ALLOC;
				e->fn = CYGPROF_FN_MALLOC;
				e->size = 16 * (k + 1);
				e->stack = k + 1;
			} else {
				e->op = CYGPROF_MEM_FREE;
				e->fn = CYGPROF_FN_FREE;
			}
			continue;
		}
		if (nl && (nl == 2048 || memb_rnd() % 100 < 48)) {
			/* the last (a LIFO heap), a recent one, any, or a
			 * double free (not live any more) */
			unsigned r = (unsigned)(memb_rnd() % 16);

			j = r < 8 ? nl - 1 : r < 13 ? nl - 1 - memb_rnd() % (nl < 6 ? nl : 6)
						     : memb_rnd() % nl;
			e->op = CYGPROF_MEM_FREE;
			e->fn = memb_rnd() % 8 ? CYGPROF_FN_FREE : CYGPROF_FN_REALLOC;
			e->addr = live[j];
			freed[i % 64] = live[j];
			fsz[i % 64] = lsz[j];
			if (r != 15) {
				live[j] = live[nl - 1];
				lsz[j] = lsz[nl - 1];
				nl--;
			}
			continue;
		}
		e->op = CYGPROF_MEM_ALLOC;
		e->fn = memb_rnd() % 10 ? CYGPROF_FN_MALLOC : CYGPROF_FN_CALLOC;
		e->size = memb_rnd() % 8 ? 8 + memb_rnd() % 120 : memb_rnd() % 200000;
		e->stack = (uint32_t)(1 + (memb_rnd() % 8 ? memb_rnd() % 40 : memb_rnd() % 3000));
		j = memb_rnd() % 64;
		if (memb_rnd() % 3 && freed[j]) {
			/* where a free was: of its size (class) or not */
			e->addr = freed[j];
			if (memb_rnd() % 4)
				e->size = fsz[j];
			freed[j] = 0;
		} else {
			e->addr = base + 0x100000 + (memb_rnd() % 100000) * 16;
		}
		live[nl] = e->addr;
		lsz[nl++] = e->size;
	}
}

/* An event read back: exact, but for a time stored in a unit of 10 us to
 * 1 ms (a thread alone: ns only while others may write) */
static int memb_same(const struct cygprof_mem_event *a, const struct cygprof_mem_event *b,
		     bool ns)
{
	struct cygprof_mem_event x = *a;

	if (!ns && x.ts_ns <= b->ts_ns && b->ts_ns - x.ts_ns < 1000000 && x.ts_ns % 10000 == 0)
		x.ts_ns = b->ts_ns;
	return mem_same(&x, b);
}

static uint64_t memb_fnv(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* FNV-1a over the mem DB's keys, block headers and raw columns. */
static uint64_t memb_digest(const char *path, uint64_t *blocks)
{
	uint64_t h = 14695981039346656037ull;
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *cur;
	MDB_val k, v;
	uint8_t *raw;
	size_t n, got;

	*blocks = 0;
	if (mdb_env_create(&env))
		return 0;
	mdb_env_set_maxdbs(env, 16);
	if (mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK, 0600) ||
	    mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) {
		mdb_env_close(env);
		return 0;
	}
	if (!mdb_dbi_open(txn, "mem", 0, &dbi) && !mdb_cursor_open(txn, dbi, &cur)) {
		for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
		     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			const uint8_t *p = v.mv_data;

			if (v.mv_size < 20) /* the header, the frame, a CRC32C */
				break;
			n = (size_t)p[12] | (size_t)p[13] << 8 | (size_t)p[14] << 16 |
			    (size_t)p[15] << 24;
			raw = malloc(n ? n : 1);
			got = ZSTD_decompress(raw, n, p + 16, v.mv_size - 20);
			if (ZSTD_isError(got) || got != n) {
				free(raw);
				h = 0;
				break;
			}
			h = memb_fnv(h, k.mv_data, k.mv_size);
			h = memb_fnv(h, p, 16);
			h = memb_fnv(h, raw, n);
			free(raw);
			(*blocks)++;
		}
		mdb_cursor_close(cur);
	}
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return h;
}

static void test_mem_bytes(void)
{
	const char *path = tmp_path("membytes.cap");
	struct cygprof_mem_event *ev[2], e;
	struct cygprof_mem_cursor *cur;
	struct cygprof_capture *cap;
	size_t done[2] = { 0, 0 }, chunk, i, bad;
	uint64_t count, blocks, dig;
	int t, batch = 0, rc;

	for (t = 0; t < 2; t++) {
		ev[t] = malloc(MEMB_EVENTS * sizeof(*ev[t]));
		if (!ev[t])
			return;
		memb_gen(ev[t], MEMB_EVENTS, 1000 + (uint64_t)t * 333,
			 0x555555550000ull + ((uint64_t)t << 32));
	}
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
	/* thread 0 alone for its first half (blocks in 10 us and coarser
	 * units), then both (in ns) */
	while (done[0] < MEMB_EVENTS || done[1] < MEMB_EVENTS) {
		for (t = 0; t < 2; t++) {
			if (t == 1 && done[0] < MEMB_EVENTS / 2)
				continue;
			chunk = memb_rnd() % 4 ? memb_rnd() % 50 + 1 : memb_rnd() % 9000 + 1;
			if (chunk > MEMB_EVENTS - done[t])
				chunk = MEMB_EVENTS - done[t];
			if (chunk)
				CHECK_EQ_INT(cygprof_capture_append_mem(cap, (uint32_t)t,
									ev[t] + done[t], chunk),
					     0);
			done[t] += chunk;
		}
		if (++batch % 40 == 0) {
			CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
			CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
		}
	}
	CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	for (t = 0; t < 2; t++) {
		CHECK_EQ_INT(cygprof_capture_mem_count(cap, (uint32_t)t, &count), 0);
		CHECK_EQ_U64(count, MEMB_EVENTS);
		cur = NULL;
		CHECK_EQ_INT(cygprof_mem_cursor_open(cap, (uint32_t)t, &cur), 0);
		if (!cur)
			continue;
		for (i = bad = 0; (rc = cygprof_mem_cursor_next(cur, &e)) > 0; i++)
			if (i >= MEMB_EVENTS || !memb_same(&e, &ev[t][i], t == 1)) {
				if (!bad++)
					printf("# thread %d event %zu differs\n", t, i);
			}
		CHECK_EQ_INT(rc, 0);
		CHECK_EQ_U64(i, MEMB_EVENTS);
		CHECK_EQ_U64(bad, 0);
		cygprof_mem_cursor_close(cur);
	}
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	dig = memb_digest(path, &blocks);
	printf("# mem blocks %llu, digest %016llx\n", (unsigned long long)blocks,
	       (unsigned long long)dig);
	CHECK(blocks > 2);
	CHECK_EQ_U64(dig, MEMB_DIGEST);
	free(ev[0]);
	free(ev[1]);
}

static void test_mem_levels(void)
{
	const char *path = tmp_path("levels.cap");
	struct cygprof_mem_event ev[4000];
	struct cygprof_stack_node st = { .id = 1, .kind = CYGPROF_FRAME_FN, .addr = 0x10 };
	struct cygprof_capture *cap;
	uint8_t key[8] = { 0 }, *v, *raw, *z;
	size_t n, i, zn;

	for (i = 0; i < 4000; i++)
		ev[i] = (struct cygprof_mem_event){ .ts_ns = 1000 + i * 37, .addr = 0x5000 + 48 * (i % 64),
						    .size = (i & 1) ? 0 : 24 + i % 5,
						    .stack = (i & 1) ? 0 : 1, .op = (uint8_t)(i & 1),
						    .fn = (i & 1) ? CYGPROF_FN_FREE : CYGPROF_FN_MALLOC };
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, &st, 1), 0);
	CHECK_EQ_INT(cygprof_capture_append_mem(cap, 0, ev, 4000), 0);
	CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	CHECK_EQ_INT(cygprof_capture_publish(cap), 0);
	/* after the commit: level 1 */
	for (int pass = 0; pass < 2; pass++) {
		v = raw_get(path, "mem", key, 8, &n);
		CHECK(v && n > 16);
		if (!v || n <= 16)
			return;
		zn = get_le32_at(v + 12);
		raw = malloc(zn);
		CHECK_EQ_U64(ZSTD_decompress(raw, zn, v + 16, n - 16), zn);
		z = malloc(ZSTD_compressBound(zn));
		size_t z1 = ZSTD_compress(z, ZSTD_compressBound(zn), raw, zn, pass ? 5 : 1);
		CHECK(!ZSTD_isError(z1) && z1 == n - 16 && !memcmp(z, v + 16, z1));
		free(z);
		free(raw);
		free(v);
		if (!pass) {
			/* nothing more for the block: the end writes it at level 5 */
			CHECK_EQ_INT(cygprof_capture_set_meta(cap, "x", "1"), 0);
			CHECK_EQ_INT(cygprof_capture_close(cap), 0);
		}
	}
}

/* Damaged stash nodes and memory blocks decode as CORRUPT. */
static void test_corrupt_mem(void)
{
	const char *path = tmp_path("damaged-mem.cap");
	struct cygprof_stack_node good[2] = { { 1, 0, 0, 0, 0x1000 }, { 2, 1, 0, 1, 0x2000 } };
	struct cygprof_mem_event ev = { .ts_ns = 10000, .addr = 0x1000, .size = 8, .stack = 2 }, e;
	struct cygprof_stack_node *out = NULL;
	struct cygprof_mem_cursor *cur = NULL;
	struct cygprof_capture *cap;
	uint8_t key[8] = { 0 }, val[64];
	uint64_t count;
	size_t n = 99;

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, good, 2), 0);
	CHECK_EQ_INT(cygprof_capture_append_mem(cap, 0, &ev, 1), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	/* the nodes as schema 5 stored them, one a value (schema 6: blocks,
	 * test_stack_blocks) */
	CHECK_EQ_INT(raw_node_stacks(path, good, 2, "5"), 0);

	/* node 3 with parent 3 */
	memset(val, 0, sizeof(val));
	key[3] = 3;
	val[0] = 3;
	CHECK_EQ_INT(raw_put(path, "stacks", key, 4, val, 20), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &out, &n), CYGPROF_E_CORRUPT);
	CHECK(out == NULL);
	CHECK_EQ_U64(n, 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	/* parent fixed, but an unknown kind; then a gap in the ids; then short */
	val[0] = 2;
	val[8] = 9;
	CHECK_EQ_INT(raw_put(path, "stacks", key, 4, val, 20), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &out, &n), CYGPROF_E_CORRUPT);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	val[8] = 1;
	CHECK_EQ_INT(raw_put(path, "stacks", key, 4, val, 20), 0);
	key[3] = 5;
	CHECK_EQ_INT(raw_put(path, "stacks", key, 4, val, 20), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &out, &n), CYGPROF_E_CORRUPT);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	key[3] = 4;
	CHECK_EQ_INT(raw_put(path, "stacks", key, 4, val, 19), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &out, &n), CYGPROF_E_CORRUPT);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	/* ...and with node 4 whole and trailing bytes (newer fields) it reads */
	memset(val + 20, 0xee, 8);
	CHECK_EQ_INT(raw_put(path, "stacks", key, 4, val, 28), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &out, &n), 0);
	CHECK_EQ_U64(n, 5);
	free(out);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	/* mem (schema 5 blocks: flags, the 10 column lengths, the columns):
	 * thread 1 claims 2 events and holds 1.5 (a FREE, then an ALLOC
	 * without its address); thread 2 has an unknown fn; thread 3 a second
	 * block earlier than the first; thread 4 a FREE referring to an
	 * allocation the block does not have */
	static const uint8_t t1[] = { 0, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0,
				      CYGPROF_FN_FREE << 1 | 1, 0, 0, 2, 2 };
	static const uint8_t t2[] = { 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 15 << 1 | 1, 0, 1, 2 };
	static const uint8_t t3[] = { 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0,
				      CYGPROF_FN_FREE << 1 | 1, 0, 1, 2 };
	static const uint8_t t4[] = { 0, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0,
				      2 << 5 /* form REF */ | CYGPROF_FN_FREE << 1 | 1,
				      0, 1, 1 };
	memset(val, 0, sizeof(val));
	memset(key, 0, sizeof(key));
	key[3] = 1;
	val[0] = 2;
	memcpy(val + 12, t1, sizeof(t1));
	CHECK_EQ_INT(raw_block(path, "mem", key, val, 12 + sizeof(t1)), 0);
	key[3] = 2;
	val[0] = 1;
	memcpy(val + 12, t2, sizeof(t2));
	CHECK_EQ_INT(raw_block(path, "mem", key, val, 12 + sizeof(t2)), 0);
	key[3] = 3;
	le64_at(val + 4, 100000);
	memcpy(val + 12, t3, sizeof(t3));
	CHECK_EQ_INT(raw_block(path, "mem", key, val, 12 + sizeof(t3)), 0);
	key[7] = 1;
	le64_at(val + 4, 99000);
	CHECK_EQ_INT(raw_block(path, "mem", key, val, 12 + sizeof(t3)), 0);
	key[3] = 4;
	key[7] = 0;
	le64_at(val + 4, 0);
	memcpy(val + 12, t4, sizeof(t4));
	CHECK_EQ_INT(raw_block(path, "mem", key, val, 12 + sizeof(t4)), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_mem_cursor_open(cap, 0, &cur), 0);
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), 1);
	CHECK(mem_same(&e, &ev));
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), 0);
	cygprof_mem_cursor_close(cur);
	CHECK_EQ_INT(cygprof_mem_cursor_open(cap, 1, &cur), 0);
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), 1);
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), CYGPROF_E_CORRUPT);
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), CYGPROF_E_CORRUPT);
	cygprof_mem_cursor_close(cur);
	CHECK_EQ_INT(cygprof_mem_cursor_open(cap, 2, &cur), 0);
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), CYGPROF_E_CORRUPT);
	cygprof_mem_cursor_close(cur);
	CHECK_EQ_INT(cygprof_mem_cursor_open(cap, 3, &cur), 0);
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), 1);
	CHECK_EQ_U64(e.ts_ns, 100000);
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), CYGPROF_E_CORRUPT);
	cygprof_mem_cursor_close(cur);
	CHECK_EQ_INT(cygprof_capture_mem_count(cap, 3, &count), 0);
	CHECK_EQ_U64(count, 2);
	CHECK_EQ_INT(cygprof_mem_cursor_open(cap, 4, &cur), 0);
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), CYGPROF_E_CORRUPT);
	cygprof_mem_cursor_close(cur);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
}

/* Memory blocks with the flags of docs/capture-format.md (E, SPLIT, CLAIM,
 * LIVE, PACK): one that reads, and one malformed block a flag. */
static void test_mem_flags(void)
{
	const char *path = tmp_path("mem-flags.cap");
	struct cygprof_stack_node good[2] = { { 1, 0, 0, 0, 0x1000 }, { 2, 1, 0, 1, 0x2000 } };
	struct cygprof_mem_event ev = { .ts_ns = 10000, .addr = 0x1000, .size = 8, .stack = 2 }, e;
	struct cygprof_mem_cursor *cur = NULL;
	struct cygprof_capture *cap;
	uint8_t key[8] = { 0 }, val[96];
	const uint8_t h1 = 1 << 5 | CYGPROF_FN_MALLOC << 1, h2 = 2 << 5 | CYGPROF_FN_FREE << 1 | 1;
	/* E 1 (10 us), SPLIT, LIVE, PACK: an alloc at 0x1000 (ADDR16: zigzag
	 * 0x200, 10 bits), its free by live rank 1; 17 stream lengths */
	const uint8_t good_blk[] = { 2 | 8 | 32 | 64, 3, 1, 0, 1, 1, 1, 2, 1, 0, 0, 0, 1, 0, 1,
				     1, 0, 1,
				     2, h1, h2, /* PAL */ 1 << 2, /* PACK */ 0, /* DT */ 2, /* RUN */
				     10, 0, 0, /* ADDR */ 1, /* REF */ 0, /* PAIR */ 8, /* NEW */
				     0, /* SREF */ 2 /* SNEW */ };
	static const uint8_t bad[][24] = {
		/* an unknown flag */
		{ 0x80, 1, 0 },
		/* NS with E */
		{ 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
		/* SPLIT: a bit length of 65 */
		{ 8, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, CYGPROF_FN_FREE << 1 | 1, 0, 1,
		  65 },
		/* LIVE: a free of rank 1 with no allocation live */
		{ 32, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 2 << 5 | CYGPROF_FN_FREE << 1 | 1, 0, 1, 1 },
		/* CLAIM: an alloc of the last unclaimed free, none */
		{ 16, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 2 << 5 | CYGPROF_FN_MALLOC << 1, 0, 1, 2, 0, 8,
		  0, 2 },
		/* PACK: a palette of 4 */
		{ 64, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4 },
	};
	static const size_t bad_len[] = { 3, 11, 20, 15, 19, 13 };
	unsigned int i;

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, good, 2), 0);
	CHECK_EQ_INT(cygprof_capture_append_mem(cap, 0, &ev, 1), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	memset(val, 0, sizeof(val));
	key[3] = 1;
	val[0] = 2;
	val[5] = 0x4e; /* first_ts 0x4e00 = 19968: not on 10 us */
	memcpy(val + 12, good_blk, sizeof(good_blk));
	CHECK_EQ_INT(raw_block(path, "mem", key, val, 12 + sizeof(good_blk)), 0);
	key[3] = 2;
	le64_at(val + 4, 20000);
	CHECK_EQ_INT(raw_block(path, "mem", key, val, 12 + sizeof(good_blk)), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		key[3] = (uint8_t)(3 + i);
		memset(val + 12, 0, sizeof(val) - 12);
		val[0] = 1;
		memcpy(val + 12, bad[i], bad_len[i]);
		CHECK_EQ_INT(raw_block(path, "mem", key, val, 12 + bad_len[i]), 0);
	}
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_mem_cursor_open(cap, 1, &cur), 0);
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), CYGPROF_E_CORRUPT);
	cygprof_mem_cursor_close(cur);
	CHECK_EQ_INT(cygprof_mem_cursor_open(cap, 2, &cur), 0);
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), 1);
	ev.ts_ns = 20000;
	CHECK(mem_same(&e, &ev));
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), 1);
	CHECK_EQ_U64(e.ts_ns, 20000);
	CHECK_EQ_U64(e.addr, 0x1000);
	CHECK_EQ_INT(e.op, CYGPROF_MEM_FREE);
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), 0);
	cygprof_mem_cursor_close(cur);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ_INT(cygprof_mem_cursor_open(cap, 3 + i, &cur), 0);
		CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &e), CYGPROF_E_CORRUPT);
		cygprof_mem_cursor_close(cur);
	}
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
}

/* Remove the named DBs from a capture, as written before they existed. */
/* Drop DBs; sealed: and write the seal of the result in the same
 * transaction (a capture as a writer that did not know those DBs sealed
 * it). */
static int raw_drop2(const char *path, const char *const *dbs, size_t n, bool sealed)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	size_t i;
	int rc;

	rc = mdb_env_create(&env);
	if (rc)
		return rc;
	mdb_env_set_maxdbs(env, 16);
	rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_NOLOCK, 0644);
	if (!rc)
		rc = mdb_txn_begin(env, NULL, 0, &txn);
	if (!rc) {
		for (i = 0; i < n && !rc; i++) {
			rc = mdb_dbi_open(txn, dbs[i], 0, &dbi);
			if (!rc)
				rc = mdb_drop(txn, dbi, 1);
		}
		if (!rc && sealed)
			rc = reseal(txn);
		if (!rc)
			rc = mdb_txn_commit(txn);
		else
			mdb_txn_abort(txn);
	}
	mdb_env_close(env);
	return rc;
}

static int raw_drop(const char *path, const char *const *dbs, size_t n)
{
	return raw_drop2(path, dbs, n, false);
}

static const char *schema1_path;

/* A schema 5 capture (tests/data/schema5.data: `record --timeline
 * --memory` of examples/mem-basic.c at -O0 by the cygprof before schema
 * 6) reads its stack nodes, one a value; reopened to add to it
 * (import-perf), it stays schema 5 and its new nodes go one a value too,
 * continuing its ids. */
static void test_schema5_stacks(void)
{
	const char *path = tmp_path("schema5.cap");
	char src[PATH_MAX];
	struct cygprof_stack_node *out = NULL, add[2];
	struct cygprof_capture *cap;
	size_t n = 0;
	char *v = NULL, *slash;

	snprintf(src, sizeof src, "%s", schema1_path);
	slash = strrchr(src, '/');
	snprintf(slash ? slash + 1 : src, sizeof src - (size_t)(slash ? slash + 1 - src : 0), "%s",
		 "schema5.data");
	CHECK_EQ_INT(copy_file(src, path, (off_t)size_of(src)), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "schema", &v), 0);
	CHECK_EQ_STR(v, "5");
	free(v);
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &out, &n), 0);
	CHECK_EQ_U64(n, 31);
	free(out);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_U64(db_entries(path, "stacks"), 31);

	CHECK_EQ_INT(cygprof_capture_open_rw(path, &cap), 0);
	if (!cap)
		return;
	add[0] = (struct cygprof_stack_node){ .id = 32, .kind = CYGPROF_FRAME_RA, .addr = 0x42 };
	add[1] = (struct cygprof_stack_node){ .id = 33, .parent = 32, .kind = CYGPROF_FRAME_IP,
					      .addr = 0x43 };
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, add, 2), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_U64(db_entries(path, "stacks"), 33);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "schema", &v), 0);
	CHECK_EQ_STR(v, "5");
	free(v);
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &out, &n), 0);
	CHECK_EQ_U64(n, 33);
	if (n == 33)
		CHECK(!memcmp(out + 31, add, sizeof add));
	free(out);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	/* a schema 6 capture reopened: its new nodes start a new block */
	path = tmp_path("blocks-rw.cap");
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	add[0].id = 1;
	add[1].id = 2;
	add[1].parent = 1;
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, add, 2), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(cygprof_capture_open_rw(path, &cap), 0);
	if (!cap)
		return;
	add[0].id = 3;
	add[1].id = 4;
	add[1].parent = 3;
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, add, 2), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_U64(db_entries(path, "stacks"), 2);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &out, &n), 0);
	CHECK_EQ_U64(n, 4);
	if (n == 4)
		CHECK(out[3].id == 4 && out[3].parent == 3 && out[3].addr == 0x43);
	free(out);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
}

/* A schema 1 capture (tests/data/schema1.data: `record --timeline --memory`
 * of examples/mem-basic.c at -O0 by the cygprof before schema 2) opens and
 * reads exactly; without the DBs added later within schema 1 it reads them
 * as empty; without an original DB it is damaged. */
static void test_old_capture(void)
{
	static const char *const dbs[] = { "mem", "stacks", "sites" };
	const char *path = tmp_path("old.cap");
	struct cygprof_stack_node *out = (void *)1;
	struct cygprof_thread *th = NULL;
	struct cygprof_node *nodes = NULL;
	struct cygprof_callsite *sites = NULL;
	struct cygprof_mem_cursor *cur = NULL;
	struct cygprof_mem_event ev;
	struct cygprof_capture *cap;
	struct stat st;
	size_t n = 99, seen = 0, allocs = 0, frees = 0, i;
	uint64_t count = 99, calls = 0;
	char *v = NULL;
	int rc;

	CHECK_EQ_INT(stat(schema1_path, &st), 0);
	CHECK_EQ_INT(copy_file(schema1_path, path, st.st_size), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "schema", &v), 0);
	CHECK_EQ_STR(v, "1");
	free(v);
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "mode", &v), 0);
	CHECK_EQ_STR(v, "profile+timeline+memory");
	free(v);
	CHECK_EQ_INT(cygprof_capture_get_threads(cap, &th, &n), 0);
	CHECK_EQ_U64(n, 1);
	if (n)
		CHECK_EQ_U64(th[0].calls, 65);
	free(th);
	CHECK_EQ_INT(cygprof_capture_get_tree(cap, 0, &nodes, &n), 0);
	for (i = 1; i < n; i++)
		calls += nodes[i].calls;
	CHECK_EQ_U64(calls, 65);
	free(nodes);
	CHECK_EQ_INT(cygprof_capture_get_sites(cap, 0, &sites, &n), 0);
	CHECK(n > 0);
	free(sites);
	CHECK_EQ_INT(cygprof_capture_foreach_event(cap, 0, count_cb, &seen), 0);
	CHECK_EQ_U64(seen, 130);
	CHECK_EQ_INT(cygprof_capture_mem_count(cap, 0, &count), 0);
	CHECK_EQ_U64(count, 237);
	CHECK_EQ_INT(cygprof_mem_cursor_open(cap, 0, &cur), 0);
	while ((rc = cygprof_mem_cursor_next(cur, &ev)) == 1) {
		allocs += ev.op == CYGPROF_MEM_ALLOC;
		frees += ev.op == CYGPROF_MEM_FREE;
	}
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_U64(allocs, 121);
	CHECK_EQ_U64(frees, 116);
	cygprof_mem_cursor_close(cur);
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &out, &n), 0);
	CHECK(n > 0);
	free(out);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(raw_drop(path, dbs, 3), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_foreach_event(cap, 0, count_cb, &seen), 0);
	CHECK_EQ_U64(seen, 260);
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &out, &n), 0);
	CHECK_EQ_U64(n, 0);
	CHECK(out == NULL);
	CHECK_EQ_INT(cygprof_capture_mem_count(cap, 0, &count), 0);
	CHECK_EQ_U64(count, 0);
	CHECK_EQ_INT(cygprof_mem_cursor_open(cap, 0, &cur), 0);
	CHECK_EQ_INT(cygprof_mem_cursor_next(cur, &ev), 0);
	cygprof_mem_cursor_close(cur);
	/* sites: one per node, from the tree */
	CHECK_EQ_INT(cygprof_capture_get_sites(cap, 0, &sites, &n), 0);
	CHECK(n > 0);
	free(sites);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	/* an old DB missing is still damage */
	CHECK_EQ_INT(raw_drop(path, (const char *const[]){ "symbols" }, 1), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), CYGPROF_E_CORRUPT);
	CHECK_EQ_STR(cygprof_capture_damage(NULL), "DB 'symbols' missing");

	/* a schema 2 capture lacking a DB is damaged */
	path = tmp_path("new-dropped.cap");
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(raw_drop(path, dbs, 1), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), CYGPROF_E_CORRUPT);
}

/* Counters: definitions in order, samples appended in small batches (as the
 * collector does) and in one large one crossing blocks, ordering errors,
 * read back by the writer and after reopening; a capture written before
 * the counters DBs existed reads as having none. */
static void test_counters(void)
{
	const char *path = tmp_path("counters.cap");
	struct cygprof_counter defs[3] = {
		{ .id = 0, .proc_idx = CYGPROF_NONE, .unit = CYGPROF_UNIT_BYTES,
		  .name = "meminfo/MemFree" },
		{ .id = 1, .proc_idx = 0, .unit = CYGPROF_UNIT_NS, .name = "stat/cpu_time" },
		{ .id = 2, .proc_idx = 1, .unit = CYGPROF_UNIT_BYTES, .name = "memdump/Cache" },
	}, bad, *cv = (void *)1;
	struct cygprof_sample *big, *out = NULL, sm[2];
	struct cygprof_capture *cap;
	size_t nbig = 200000, n = 99, i;
	const char *const dropped[] = { "counters", "samples" };
	int rc;

	big = calloc(nbig, sizeof(*big));
	for (i = 0; i < nbig; i++) {
		big[i].t_ns = i * 10000000ull + (rnd() % 1000);
		big[i].value = (int64_t)(rnd() % 3 ? (rnd() & 0xffffffffffffull) : rnd());
	}
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	/* none yet */
	CHECK_EQ_INT(cygprof_capture_get_counters(cap, &cv, &n), 0);
	CHECK_EQ_U64(n, 0);
	/* refused: not the next id, no or empty name, unknown unit, flags,
	 * samples of an undefined counter */
	bad = defs[1];
	CHECK_EQ_INT(cygprof_capture_put_counter(cap, &bad), -EINVAL);
	bad = defs[0];
	bad.name = "";
	CHECK_EQ_INT(cygprof_capture_put_counter(cap, &bad), -EINVAL);
	bad.name = NULL;
	CHECK_EQ_INT(cygprof_capture_put_counter(cap, &bad), -EINVAL);
	bad = defs[0];
	bad.unit = 3;
	CHECK_EQ_INT(cygprof_capture_put_counter(cap, &bad), -EINVAL);
	bad = defs[0];
	bad.flags = 1;
	CHECK_EQ_INT(cygprof_capture_put_counter(cap, &bad), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_put_counter(cap, NULL), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_append_samples(cap, 0, big, 1), -EINVAL);
	for (i = 0; i < 3; i++)
		CHECK_EQ_INT(cygprof_capture_put_counter(cap, &defs[i]), 0);
	CHECK_EQ_INT(cygprof_capture_put_counter(cap, &defs[2]), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_append_samples(cap, 3, big, 1), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_append_samples(cap, 0, NULL, 1), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_append_samples(cap, 0, NULL, 0), 0);

	/* counter 0: one sample per batch and commit, like the collector;
	 * counter 1: one large append crossing blocks; counter 2: none */
	for (i = 0; i < 1000; i++) {
		CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
		CHECK_EQ_INT(cygprof_capture_append_samples(cap, 0, big + i, 1), 0);
		CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	}
	CHECK_EQ_INT(cygprof_capture_append_samples(cap, 1, big, nbig), 0);
	/* time going back: refused, nothing appended (also within one call) */
	CHECK_EQ_INT(cygprof_capture_append_samples(cap, 0, big + 998, 1), -EINVAL);
	sm[0] = big[1000];
	sm[1] = big[999];
	CHECK_EQ_INT(cygprof_capture_append_samples(cap, 0, sm, 2), -EINVAL);
	/* equal times are allowed */
	sm[0] = big[999];
	sm[0].value = -5;
	CHECK_EQ_INT(cygprof_capture_append_samples(cap, 0, sm, 1), 0);

	/* the writer reads them back */
	CHECK_EQ_INT(cygprof_capture_get_samples(cap, 0, &out, &n), 0);
	CHECK_EQ_U64(n, 1001);
	if (n == 1001) {
		CHECK(!memcmp(out, big, 1000 * sizeof(*out)));
		CHECK_EQ_INT(out[1000].value, -5);
	}
	free(out);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		goto out;
	CHECK_EQ_INT(cygprof_capture_get_counters(cap, &cv, &n), 0);
	CHECK_EQ_U64(n, 3);
	for (i = 0; i < n && i < 3; i++) {
		CHECK_EQ_U64(cv[i].id, i);
		CHECK_EQ_U64(cv[i].proc_idx, defs[i].proc_idx);
		CHECK_EQ_U64(cv[i].unit, defs[i].unit);
		CHECK_EQ_U64(cv[i].flags, 0);
		CHECK_EQ_STR(cv[i].name, defs[i].name);
	}
	cygprof_counters_free(cv, n);
	CHECK_EQ_INT(cygprof_capture_get_samples(cap, 0, &out, &n), 0);
	CHECK_EQ_U64(n, 1001);
	if (n == 1001)
		CHECK(!memcmp(out, big, 1000 * sizeof(*out)));
	free(out);
	CHECK_EQ_INT(cygprof_capture_get_samples(cap, 1, &out, &n), 0);
	CHECK_EQ_U64(n, nbig);
	if (n == nbig)
		CHECK(!memcmp(out, big, nbig * sizeof(*out)));
	free(out);
	out = (void *)1;
	CHECK_EQ_INT(cygprof_capture_get_samples(cap, 2, &out, &n), 0);
	CHECK_EQ_U64(n, 0);
	CHECK(out == NULL);
	CHECK_EQ_INT(cygprof_capture_get_samples(cap, 7, &out, &n), 0);
	CHECK_EQ_U64(n, 0);
	/* a reader cannot write */
	CHECK_EQ_INT(cygprof_capture_put_counter(cap, &defs[0]), CYGPROF_E_RDONLY);
	CHECK_EQ_INT(cygprof_capture_append_samples(cap, 0, big, 1), CYGPROF_E_RDONLY);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	/* a counter record out of range is damage */
	{
		uint8_t key[4] = { 0, 0, 0, 1 }, val[32] = { 0 };

		val[4] = 9; /* unit */
		val[12] = 1; /* name length */
		val[16] = 'x';
		CHECK_EQ_INT(raw_put(path, "counters", key, 4, val, 17), 0);
		CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
		if (cap) {
			CHECK_EQ_INT(cygprof_capture_get_counters(cap, &cv, &n), CYGPROF_E_CORRUPT);
			CHECK_EQ_STR(cygprof_capture_damage(cap), "counter 1 record: malformed");
			CHECK_EQ_INT(cygprof_capture_close(cap), 0);
		}
	}

	/* sealed by a writer that did not know the counters DBs (schema 3
	 * requires them) ... */
	CHECK_EQ_INT(raw_drop2(path, dropped, 2, true), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), CYGPROF_E_CORRUPT);
	CHECK(strstr(cygprof_strerror(CYGPROF_E_CORRUPT), "DB 'counters' missing") != NULL);
	/* ... that is, a schema 2 writer: none */
	CHECK_EQ_INT(raw_put(path, "meta", "schema", 6, "2", 1), 0);
	rc = cygprof_capture_open(path, &cap);
	CHECK_EQ_INT(rc, 0);
	if (cap) {
		cv = (void *)1;
		CHECK_EQ_INT(cygprof_capture_get_counters(cap, &cv, &n), 0);
		CHECK_EQ_U64(n, 0);
		CHECK(cv == NULL);
		CHECK_EQ_INT(cygprof_capture_get_samples(cap, 0, &out, &n), 0);
		CHECK_EQ_U64(n, 0);
		CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	}
	/* but a seal naming a DB the file lacks is damage */
	path = tmp_path("counters-dropped.cap");
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(raw_drop(path, dropped + 1, 1), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), CYGPROF_E_CORRUPT);
out:
	free(big);
}

/* perf samples and off-CPU intervals: round trip across blocks and commits,
 * calls going back in time (one ring per CPU), the refused calls, and a
 * capture of schema 3 (without the DBs) that reads them as empty. */
static void test_psamples(void)
{
	const char *path = tmp_path("psamples.cap");
	const char *const dropped[] = { "psamples", "offcpu" };
	struct cygprof_psample *ps, *out = NULL, bad[2];
	struct cygprof_offcpu *oc, *oout = NULL, obad[2];
	struct cygprof_stack_node node = { .id = 1, .kind = CYGPROF_FRAME_IP, .addr = 0x1234 };
	struct cygprof_stack_node *sv = NULL;
	struct cygprof_capture *cap;
	size_t nps = 50000, noc = 20000, n = 99, i, half;
	bool ok;

	ps = calloc(nps, sizeof(*ps));
	oc = calloc(noc, sizeof(*oc));
	for (i = 0; i < nps; i++) {
		ps[i].t_ns = i * 1000003ull + rnd() % 1000;
		ps[i].weight_ns = rnd() % 4 ? 1000000 : rnd();
		ps[i].rr_ticks = rnd() % 3 ? rnd() >> (rnd() % 64) : UINT64_MAX;
		ps[i].thread_idx = rnd() % 5 ? (uint32_t)(rnd() % 8) : CYGPROF_NONE;
		ps[i].pid = (uint32_t)rnd();
		ps[i].tid = (uint32_t)rnd();
		ps[i].stack = (uint32_t)(rnd() % 100);
		ps[i].flags = (uint32_t)(rnd() % 4);
	}
	for (i = 0; i < noc; i++) {
		oc[i].start_ns = i * 5000011ull + rnd() % 1000;
		oc[i].end_ns = oc[i].start_ns + rnd() % 100000000;
		oc[i].thread_idx = rnd() % 5 ? (uint32_t)(rnd() % 8) : CYGPROF_NONE;
		oc[i].tid = (uint32_t)rnd();
		oc[i].stack = (uint32_t)(rnd() % 100);
	}
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	if (!cap)
		goto out;
	/* none yet */
	out = (void *)1;
	CHECK_EQ_INT(cygprof_capture_get_psamples(cap, &out, &n), 0);
	CHECK_EQ_U64(n, 0);
	CHECK(out == NULL);
	CHECK_EQ_INT(cygprof_capture_get_offcpu(cap, &oout, &n), 0);
	CHECK_EQ_U64(n, 0);
	/* refused, nothing appended: time going back within a call, pad,
	 * reserved flags, end before start, NULL */
	bad[0] = ps[1];
	bad[1] = ps[0];
	CHECK_EQ_INT(cygprof_capture_append_psamples(cap, bad, 2), -EINVAL);
	bad[1] = ps[2];
	bad[1].pad = 1;
	CHECK_EQ_INT(cygprof_capture_append_psamples(cap, bad, 2), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_append_psamples(cap, NULL, 1), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_append_psamples(cap, NULL, 0), 0);
	obad[0] = oc[1];
	obad[1] = oc[0];
	CHECK_EQ_INT(cygprof_capture_append_offcpu(cap, obad, 2), -EINVAL);
	obad[1] = oc[2];
	obad[1].flags = 2; /* 1 is CYGPROF_OFFCPU_WAIT */
	CHECK_EQ_INT(cygprof_capture_append_offcpu(cap, obad, 2), -EINVAL);
	obad[1] = oc[2];
	obad[1].end_ns = obad[1].start_ns - 1;
	CHECK_EQ_INT(cygprof_capture_append_offcpu(cap, obad, 2), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_append_offcpu(cap, NULL, 1), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_append_offcpu(cap, NULL, 0), 0);
	/* a sample's own frame */
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, &node, 1), 0);

	/* the second half first, in one call crossing blocks; then the first
	 * half a few at a time in batches, like one ring after another */
	half = nps / 2;
	CHECK_EQ_INT(cygprof_capture_append_psamples(cap, ps + half, nps - half), 0);
	for (i = 0; i < half; i += 1000) {
		CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
		CHECK_EQ_INT(cygprof_capture_append_psamples(cap, ps + i, 1000), 0);
		CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	}
	half = noc / 2;
	CHECK_EQ_INT(cygprof_capture_append_offcpu(cap, oc + half, noc - half), 0);
	CHECK_EQ_INT(cygprof_capture_append_offcpu(cap, oc, half), 0);

	/* the writer reads them back, in time order */
	CHECK_EQ_INT(cygprof_capture_get_psamples(cap, &out, &n), 0);
	CHECK_EQ_U64(n, nps);
	if (n == nps)
		CHECK(!memcmp(out, ps, nps * sizeof(*out)));
	free(out);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		goto out;
	CHECK_EQ_INT(cygprof_capture_get_psamples(cap, &out, &n), 0);
	CHECK_EQ_U64(n, nps);
	ok = n == nps && !memcmp(out, ps, nps * sizeof(*out));
	CHECK(ok);
	free(out);
	CHECK_EQ_INT(cygprof_capture_get_offcpu(cap, &oout, &n), 0);
	CHECK_EQ_U64(n, noc);
	ok = n == noc && !memcmp(oout, oc, noc * sizeof(*oout));
	CHECK(ok);
	free(oout);
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &sv, &n), 0);
	CHECK_EQ_U64(n, 1);
	if (n == 1)
		CHECK_EQ_U64(sv[0].kind, CYGPROF_FRAME_IP);
	free(sv);
	/* a reader cannot write */
	CHECK_EQ_INT(cygprof_capture_append_psamples(cap, ps, 1), CYGPROF_E_RDONLY);
	CHECK_EQ_INT(cygprof_capture_append_offcpu(cap, oc, 1), CYGPROF_E_RDONLY);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	/* a schema 3 capture has no CYGPROF_FRAME_IP: damage (its nodes one
	 * a value, as schemas before 6 store them) */
	CHECK_EQ_INT(raw_node_stacks(path, &node, 1, "3"), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (cap) {
		CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &sv, &n), CYGPROF_E_CORRUPT);
		CHECK_EQ_STR(cygprof_capture_damage(cap), "stack node 1: malformed");
		CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	}
	CHECK_EQ_INT(raw_put(path, "meta", "schema", 6, "4", 1), 0);

	/* sealed by a writer that did not know the new DBs: schema 4 requires them ... */
	CHECK_EQ_INT(raw_drop2(path, dropped, 2, true), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), CYGPROF_E_CORRUPT);
	CHECK(strstr(cygprof_strerror(CYGPROF_E_CORRUPT), "DB 'psamples' missing") != NULL);
	/* ... a schema 3 one reads them as empty */
	CHECK_EQ_INT(raw_put(path, "meta", "schema", 6, "3", 1), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (cap) {
		out = (void *)1;
		CHECK_EQ_INT(cygprof_capture_get_psamples(cap, &out, &n), 0);
		CHECK_EQ_U64(n, 0);
		CHECK(out == NULL);
		oout = (void *)1;
		CHECK_EQ_INT(cygprof_capture_get_offcpu(cap, &oout, &n), 0);
		CHECK_EQ_U64(n, 0);
		CHECK(oout == NULL);
		CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	}
	/* a damaged block is named */
	path = tmp_path("psamples-bad.cap");
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_append_psamples(cap, ps, 10), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	{
		uint8_t key[8] = { 0, 0, 0, 0, 0, 0, 0, 0 }, val[16] = { 0 };

		val[0] = 5; /* count 5, raw length 0 */
		CHECK_EQ_INT(raw_put(path, "psamples", key, 8, val, 16), 0);
		CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
		if (cap) {
			CHECK_EQ_INT(cygprof_capture_get_psamples(cap, &out, &n),
				     CYGPROF_E_CORRUPT);
			CHECK_EQ_STR(cygprof_capture_damage(cap), "perf samples block 0: malformed");
			CHECK_EQ_INT(cygprof_capture_close(cap), 0);
		}
	}
out:
	free(ps);
	free(oc);
}

/* Adding to a closed capture: a copy is written and renamed over it at
 * close; a discard or failure leaves the file as it was. */
/* CPU samples and off-CPU time per thread (schema 6): a round trip of
 * every field (values that take 1 to 10 bytes as varints), an empty one, a
 * record put again, the refused puts, a thread without one, a value of a
 * later writer (longer header, more fields per row) read as far as known,
 * damage named, a schema 5 capture (no DB) reading none, and a capture
 * reopened from a schema 5 one refusing them. */
static void test_cpu(void)
{
	const char *path = tmp_path("cpu.cap"), *p5 = tmp_path("cpu5.cap");
	const char *const dropped[] = { "cpu", "latency" };
	struct cygprof_cpu c = {
		.thread_idx = 3, .method = CYGPROF_CPU_PERF, .flags = CYGPROF_CPU_SWITCHES,
		.period_ns = 1000000, .cpu_ns = 412345678, .samples = 420, .overhead = 17,
		.unplaced = 2, .wait_ns = 1ull << 40, .blocked_ns = UINT64_MAX,
		.unplaced_ns = 127, .switches = 128, .switches_lost = 5,
	}, got;
	struct cygprof_cpu_node v[4] = {
		{ .node = 0, .samples = 1 },
		{ .node = 1, .samples = 300, .overhead = 16, .wait_ns = 5, .blocked_ns = 1ull << 62 },
		{ .node = 7, .samples = 100, .overhead = 1 },
		{ .node = UINT32_MAX, .wait_ns = UINT64_MAX },
	}, bad[2], *out = NULL;
	struct cygprof_capture *cap;
	size_t n = 99;

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_put_cpu(cap, &c, v, 4), 0);
	/* put again: replaced */
	c.thread_idx = 4;
	CHECK_EQ_INT(cygprof_capture_put_cpu(cap, &c, v, 4), 0);
	c.samples = 421;
	CHECK_EQ_INT(cygprof_capture_put_cpu(cap, &c, v, 4), 0);
	/* none */
	got = c;
	got.thread_idx = 5;
	got.method = CYGPROF_CPU_OFF;
	CHECK_EQ_INT(cygprof_capture_put_cpu(cap, &got, NULL, 0), 0);
	/* refused, nothing stored: out of order, twice the same node, pads */
	bad[0] = v[1];
	bad[1] = v[0];
	c.thread_idx = 9;
	CHECK_EQ_INT(cygprof_capture_put_cpu(cap, &c, bad, 2), -EINVAL);
	bad[1] = v[1];
	CHECK_EQ_INT(cygprof_capture_put_cpu(cap, &c, bad, 2), -EINVAL);
	bad[1] = v[2];
	bad[1].pad = 1;
	CHECK_EQ_INT(cygprof_capture_put_cpu(cap, &c, bad, 2), -EINVAL);
	c.pad = 1;
	CHECK_EQ_INT(cygprof_capture_put_cpu(cap, &c, v, 1), -EINVAL);
	c.pad = 0;
	CHECK_EQ_INT(cygprof_capture_put_cpu(cap, &c, NULL, 1), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_put_cpu(cap, NULL, v, 1), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_get_cpu(cap, 3, &got, &out, &n), 0);
	c.thread_idx = 3;
	c.samples = 420;
	CHECK(!memcmp(&got, &c, sizeof(c)));
	CHECK_EQ_U64(n, 4);
	CHECK(n == 4 && !memcmp(out, v, sizeof(v)));
	free(out);
	CHECK_EQ_INT(cygprof_capture_get_cpu(cap, 4, &got, &out, &n), 0);
	CHECK_EQ_U64(got.samples, 421);
	CHECK_EQ_U64(got.thread_idx, 4);
	CHECK_EQ_U64(n, 4);
	free(out);
	CHECK_EQ_INT(cygprof_capture_get_cpu(cap, 5, &got, &out, &n), 0);
	CHECK_EQ_U64(got.method, CYGPROF_CPU_OFF);
	CHECK_EQ_U64(n, 0);
	CHECK(out == NULL);
	CHECK_EQ_INT(cygprof_capture_get_cpu(cap, 9, &got, &out, &n), CYGPROF_E_NOTFOUND);
	CHECK_EQ_INT(cygprof_capture_get_cpu(cap, 0, &got, &out, &n), CYGPROF_E_NOTFOUND);
	CHECK_EQ_INT(cygprof_capture_put_cpu(cap, &c, v, 1), CYGPROF_E_RDONLY);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	{
		/* a later writer's value: two more header bytes, six fields a
		 * row; read as far as this reader knows */
		uint8_t key[4] = { 0, 0, 0, 6 }, val[4 + 90 + 8 + 12], *p = val;
		uint32_t hl = 90;
		memset(val, 0, sizeof(val));
		memcpy(p, &hl, 4); /* little-endian host */
		p[4] = CYGPROF_CPU_TIMER; /* method, flags, 10 LE64, then 2 more bytes */
		p[12] = 0x40; /* period_ns 64 */
		p += 4 + hl;
		p[0] = 2;      /* two rows */
		p[4] = 6;      /* of six fields */
		p += 8;
		const uint8_t rows[12] = { 2, 5, 0, 0, 0, 9, 3, 1, 0, 0, 0, 0x7f };
		memcpy(p, rows, sizeof(rows));
		CHECK_EQ_INT(raw_put(path, "cpu", key, 4, val, sizeof(val)), 0);
		CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
		if (cap) {
			CHECK_EQ_INT(cygprof_capture_get_cpu(cap, 6, &got, &out, &n), 0);
			CHECK_EQ_U64(got.method, CYGPROF_CPU_TIMER);
			CHECK_EQ_U64(got.period_ns, 64);
			CHECK_EQ_U64(n, 2);
			if (n == 2) {
				CHECK_EQ_U64(out[0].node, 2);
				CHECK_EQ_U64(out[0].samples, 5);
				CHECK_EQ_U64(out[1].node, 3);
				CHECK_EQ_U64(out[1].samples, 1);
			}
			free(out);
			CHECK_EQ_INT(cygprof_capture_close(cap), 0);
		}
		/* nodes out of order, a row cut short: damage, named */
		val[4 + 90 + 8 + 6] = 1;
		CHECK_EQ_INT(raw_put(path, "cpu", key, 4, val, sizeof(val)), 0);
		CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
		if (cap) {
			CHECK_EQ_INT(cygprof_capture_get_cpu(cap, 6, &got, &out, &n),
				     CYGPROF_E_CORRUPT);
			CHECK_EQ_STR(cygprof_capture_damage(cap), "thread 6 CPU record: malformed");
			CHECK(out == NULL);
			CHECK_EQ_INT(cygprof_capture_close(cap), 0);
		}
		val[4 + 90 + 8 + 6] = 3;
		CHECK_EQ_INT(raw_put(path, "cpu", key, 4, val, sizeof(val) - 1), 0);
		CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
		if (cap) {
			CHECK_EQ_INT(cygprof_capture_get_cpu(cap, 6, &got, &out, &n),
				     CYGPROF_E_CORRUPT);
			CHECK_EQ_INT(cygprof_capture_close(cap), 0);
		}
	}

	/* schema 5: no cpu DB, no records; reopened, it stays schema 5 and
	 * refuses them */
	CHECK_EQ_INT(cygprof_capture_create(p5, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(raw_drop2(p5, dropped, 2, true), 0);
	CHECK_EQ_INT(raw_put(p5, "meta", "schema", 6, "5", 1), 0);
	CHECK_EQ_INT(cygprof_capture_open(p5, &cap), 0);
	if (cap) {
		CHECK_EQ_INT(cygprof_capture_get_cpu(cap, 0, &got, &out, &n), CYGPROF_E_NOTFOUND);
		CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	}
	CHECK_EQ_INT(cygprof_capture_open_rw(p5, &cap), 0);
	if (cap) {
		CHECK_EQ_INT(cygprof_capture_put_cpu(cap, &c, v, 1), -EPERM);
		CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	}
	CHECK_EQ_INT(cygprof_capture_open(p5, &cap), 0);
	if (cap) {
		char *s = NULL;
		CHECK_EQ_INT(cygprof_capture_get_meta(cap, "schema", &s), 0);
		CHECK_EQ_STR(s ? s : "", "5");
		free(s);
		CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	}
	/* a schema 6 capture requires it */
	CHECK_EQ_INT(raw_put(p5, "meta", "schema", 6, "6", 1), 0);
	CHECK_EQ_INT(cygprof_capture_open(p5, &cap), CYGPROF_E_CORRUPT);
	CHECK(strstr(cygprof_strerror(CYGPROF_E_CORRUPT), "DB 'cpu' missing") != NULL);
}

/* Latency histograms per thread (schema 8): a round trip of every field,
 * the refused puts (nodes out of order, a node not starting with its range,
 * buckets going down or overlapping, an unknown kind), a thread without
 * one, and a schema 7 capture reading none and refusing them reopened. */
static void test_latency(void)
{
	const char *path = tmp_path("lat.cap"), *p7 = tmp_path("lat7.cap");
	const char *const dropped[] = { "latency" };
	struct cygprof_latency h = { .thread_idx = 2, .sub = 8, .unit_ns = 5 }, got;
	struct cygprof_lat_row v[5] = {
		{ 1, CYGPROF_LAT_RANGE, 1000, 100000, 1000 },
		{ 1, CYGPROF_LAT_BUCKET, 960, 1024, 900 },
		{ 1, CYGPROF_LAT_BUCKET, 98304, 102400, 100 },
		{ 7, CYGPROF_LAT_RANGE, 5, 5, 1 },
		{ 7, CYGPROF_LAT_BUCKET, 0, UINT64_MAX, 1 },
	}, bad[3], *out = NULL;
	struct cygprof_capture *cap;
	size_t n = 99;

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_put_latency(cap, &h, v, 5), 0);
	/* refused, nothing stored */
	memcpy(bad, v, sizeof bad);
	bad[0].node = 3; /* nodes out of order */
	CHECK_EQ_INT(cygprof_capture_put_latency(cap, &h, bad, 2), -EINVAL);
	memcpy(bad, v + 1, 2 * sizeof *bad); /* no range first */
	CHECK_EQ_INT(cygprof_capture_put_latency(cap, &h, bad, 2), -EINVAL);
	memcpy(bad, v, 3 * sizeof *bad);
	bad[2].lo_ns = 1000; /* overlapping the bucket before */
	CHECK_EQ_INT(cygprof_capture_put_latency(cap, &h, bad, 3), -EINVAL);
	memcpy(bad, v, 2 * sizeof *bad);
	bad[1].kind = 2;
	CHECK_EQ_INT(cygprof_capture_put_latency(cap, &h, bad, 2), -EINVAL);
	bad[1] = v[1];
	bad[1].hi_ns = 10; /* hi below lo */
	CHECK_EQ_INT(cygprof_capture_put_latency(cap, &h, bad, 2), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_get_latency(cap, 2, &got, &out, &n), 0);
	CHECK_EQ_U64(got.thread_idx, 2);
	CHECK_EQ_U64(got.sub, 8);
	CHECK_EQ_U64(got.unit_ns, 5);
	CHECK_EQ_U64(n, 5);
	CHECK(out && !memcmp(out, v, sizeof v));
	free(out);
	out = NULL;
	CHECK_EQ_INT(cygprof_capture_get_latency(cap, 3, &got, &out, &n), CYGPROF_E_NOTFOUND);
	CHECK_EQ_U64(n, 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	/* schema 7: no latency DB, no records; reopened, it stays schema 7 and
	 * refuses them */
	CHECK_EQ_INT(cygprof_capture_create(p7, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(raw_drop2(p7, dropped, 1, true), 0);
	CHECK_EQ_INT(raw_put(p7, "meta", "schema", 6, "7", 1), 0);
	CHECK_EQ_INT(cygprof_capture_open(p7, &cap), 0);
	if (cap) {
		CHECK_EQ_INT(cygprof_capture_get_latency(cap, 0, &got, &out, &n),
			     CYGPROF_E_NOTFOUND);
		CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	}
	CHECK_EQ_INT(cygprof_capture_open_rw(p7, &cap), 0);
	if (cap) {
		CHECK_EQ_INT(cygprof_capture_put_latency(cap, &h, v, 1), -EPERM);
		CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	}
	/* a schema 8 capture requires it */
	CHECK_EQ_INT(raw_put(p7, "meta", "schema", 6, "8", 1), 0);
	CHECK_EQ_INT(cygprof_capture_open(p7, &cap), CYGPROF_E_CORRUPT);
	CHECK(strstr(cygprof_strerror(CYGPROF_E_CORRUPT), "DB 'latency' missing") != NULL);
}

static void test_open_rw(void)
{
	const char *path = tmp_path("rw.cap"), *p2 = tmp_path("rw-open.cap");
	struct cygprof_stack_node nodes[3] = {
		{ .id = 1, .kind = CYGPROF_FRAME_FN, .addr = 0x10 },
		{ .id = 2, .parent = 1, .kind = CYGPROF_FRAME_RA, .addr = 0x20 },
		{ .id = 3, .parent = 2, .kind = CYGPROF_FRAME_IP, .addr = 0x30 },
	}, *sv = NULL;
	struct cygprof_psample ps[4] = {
		{ .t_ns = 100, .thread_idx = 0, .pid = 7, .tid = 7, .stack = 2 },
		{ .t_ns = 300, .thread_idx = 0, .pid = 7, .tid = 7, .stack = 2 },
		{ .t_ns = 200, .thread_idx = 1, .pid = 7, .tid = 8, .stack = 3,
		  .flags = CYGPROF_SAMPLE_IMPORTED, .rr_ticks = UINT64_MAX },
		{ .t_ns = 400, .thread_idx = CYGPROF_NONE, .pid = 9, .tid = 9 },
	}, *out = NULL;
	struct cygprof_event ev = { .ts_ns = 500, .node = 1, .kind = CYGPROF_EV_ENTER };
	struct cygprof_capture *cap, *w;
	struct stat st0, st1;
	char *v = NULL;
	size_t n = 0;

	CHECK_EQ_INT(cygprof_capture_open_rw(tmp_path("rw-none.cap"), &cap), -ENOENT);
	CHECK(cap == NULL);
	CHECK_EQ_INT(cygprof_capture_open_rw(dir, &cap), -EISDIR);
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, nodes, 2), 0);
	CHECK_EQ_INT(cygprof_capture_append_psamples(cap, ps, 2), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "k", "v"), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(stat(path, &st0), 0);

	/* a capture still being written is refused */
	CHECK_EQ_INT(cygprof_capture_create(p2, &w), 0);
	CHECK_EQ_INT(cygprof_capture_publish(w), 0);
	CHECK_EQ_INT(cygprof_capture_open_rw(p2, &cap), -EPERM);
	CHECK_EQ_INT(cygprof_capture_close(w), 0);

	/* discarded: the file is untouched */
	CHECK_EQ_INT(cygprof_capture_open_rw(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_append_psamples(cap, ps + 2, 2), 0);
	cygprof_capture_discard(cap);
	CHECK_EQ_INT(stat(path, &st1), 0);
	CHECK_EQ_U64(st1.st_ino, st0.st_ino);

	CHECK_EQ_INT(cygprof_capture_open_rw(path, &cap), 0);
	if (!cap)
		return;
	/* ids continue the stored ones */
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, nodes, 1), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, nodes + 2, 1), 0);
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &sv, &n), 0);
	CHECK_EQ_U64(n, 3);
	free(sv);
	/* streams that must continue in time are not offered */
	CHECK_EQ_INT(cygprof_capture_append_events(cap, 0, &ev, 1), -EPERM);
	CHECK_EQ_INT(cygprof_capture_append_psamples(cap, ps + 2, 2), 0);
	CHECK_EQ_INT(cygprof_capture_get_psamples(cap, &out, &n), 0);
	CHECK_EQ_U64(n, 4);
	free(out);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);

	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "k", &v), 0);
	CHECK_EQ_STR(v, "v");
	free(v);
	CHECK_EQ_INT(cygprof_capture_get_psamples(cap, &out, &n), 0);
	CHECK_EQ_U64(n, 4);
	if (n == 4) {
		CHECK_EQ_U64(out[0].t_ns, 100);
		CHECK_EQ_U64(out[1].t_ns, 200);
		CHECK_EQ_U64(out[1].tid, 8);
		CHECK_EQ_U64(out[1].stack, 3);
		CHECK_EQ_U64(out[1].flags, CYGPROF_SAMPLE_IMPORTED);
		CHECK_EQ_U64(out[1].rr_ticks, UINT64_MAX);
		CHECK_EQ_U64(out[2].t_ns, 300);
		CHECK_EQ_U64(out[3].thread_idx, CYGPROF_NONE);
	}
	free(out);
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &sv, &n), 0);
	CHECK_EQ_U64(n, 3);
	if (n == 3)
		CHECK_EQ_U64(sv[2].kind, CYGPROF_FRAME_IP);
	free(sv);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	{
		DIR *d = opendir(dir);
		struct dirent *e;
		int left = 0;

		/* no temporary file left behind */
		while (d && (e = readdir(d)))
			if (!strncmp(e->d_name, ".rw", 3))
				left++;
		if (d)
			closedir(d);
		CHECK_EQ_INT(left, 0);
	}
}

/* Readers must work when the lock file cannot be created. */
static void test_readonly_dir(void)
{
	char sub[PATH_MAX], file[PATH_MAX + 16], lock[PATH_MAX + 32];
	struct cygprof_capture *cap;
	char *v = NULL;

	snprintf(sub, sizeof(sub), "%s/ro", dir);
	snprintf(file, sizeof(file), "%s/c.cap", sub);
	snprintf(lock, sizeof(lock), "%s-lock", file);
	CHECK_EQ_INT(mkdir(sub, 0755), 0);
	CHECK_EQ_INT(cygprof_capture_create(file, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "k", "ro"), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	unlink(lock);
	chmod(sub, 0555);
	if (geteuid() == 0)
		printf("# running as root: the read-only directory is still writable\n");
	CHECK_EQ_INT(cygprof_capture_open(file, &cap), 0);
	if (cap) {
		CHECK_EQ_INT(cygprof_capture_get_meta(cap, "k", &v), 0);
		CHECK_EQ_STR(v, "ro");
		free(v);
		CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	}
	chmod(sub, 0755);
}


/* ---- schema 2: checksums, creation, readers that write nothing ---------- */

uint32_t capture_crc32c_update(uint32_t crc, const void *data, size_t n);

static void test_crc(void)
{
	uint8_t buf[1000];
	size_t i, off, n;

	CHECK_EQ_U64(capture_crc32c_update(0, "123456789", 9), 0xE3069283u);
	CHECK_EQ_U64(crc32c(0, "123456789", 9), 0xE3069283u);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	/* every alignment and length, in one piece and in two */
	for (off = 0; off < 9; off++)
		for (n = 0; n < 300; n += 7) {
			uint32_t a = capture_crc32c_update(0, buf + off, n);

			CHECK_EQ_U64(a, crc32c(0, buf + off, n));
			CHECK_EQ_U64(capture_crc32c_update(capture_crc32c_update(0, buf + off, n / 3),
							   buf + off + n / 3, n - n / 3),
				     a);
		}
}

static int count_files(const char *d, const char *prefix)
{
	struct dirent *e;
	DIR *dd = opendir(d);
	int n = 0;

	while (dd && (e = readdir(dd)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			n++;
	if (dd)
		closedir(dd);
	return n;
}

static char *slurp(const char *path)
{
	static char buf[256];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	buf[0] = 0;
	if (fd < 0)
		return buf;
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	close(fd);
	return buf;
}

static void put_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

/* The capture's descriptors (LMDB's own included) are close-on-exec. */
static int open_fds_of(const char *name, int *cloexec)
{
	char link[300], target[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");
	int n = 0, fd;
	ssize_t len;

	*cloexec = 0;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		if (!strstr(target, name))
			continue;
		fd = atoi(e->d_name);
		n++;
		*cloexec += !!(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	}
	if (d)
		closedir(d);
	return n;
}

/* create makes a new file next to the output and changes nothing at the
 * output until publish (or close); discard leaves the output as it was. */
static void test_create_publish(void)
{
	char sub[PATH_MAX], out[PATH_MAX + 16], victim[PATH_MAX + 16];
	struct cygprof_capture *cap, *rd;
	struct stat st;
	int n, cl;

	snprintf(sub, sizeof(sub), "%s/pub", dir);
	snprintf(out, sizeof(out), "%s/out.data", sub);
	snprintf(victim, sizeof(victim), "%s/victim", sub);
	CHECK_EQ_INT(mkdir(sub, 0755), 0);
	put_text(out, "keep me\n");

	/* discard: the old file stays, the new one is gone */
	CHECK_EQ_INT(cygprof_capture_create(out, &cap), 0);
	CHECK_EQ_INT(count_files(sub, ".out.data."), 1);
	CHECK_EQ_STR(slurp(out), "keep me\n");
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "k", "v"), 0);
	n = open_fds_of("/pub/.out.data.", &cl);
	CHECK(n >= 1); /* LMDB has two: reads and meta writes */
	CHECK_EQ_INT(cl, n);
	cygprof_capture_discard(cap);
	CHECK_EQ_INT(count_files(sub, ".out.data."), 0);
	CHECK_EQ_STR(slurp(out), "keep me\n");
	cygprof_capture_discard(NULL);

	/* publish: the capture replaces the file at once, and again is a no-op */
	CHECK_EQ_INT(cygprof_capture_create(out, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_publish(cap), 0);
	CHECK_EQ_INT(cygprof_capture_publish(cap), 0);
	CHECK_EQ_INT(count_files(sub, ".out.data."), 0);
	CHECK_EQ_INT(cygprof_capture_probe(out), 1);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "k", "after"), 0);
	CHECK(cygprof_capture_file_size(cap) > 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(stat(out, &st), 0);
	CHECK_EQ_U64(st.st_mode & 0777, 0644); /* 0666 less the umask */
	CHECK_EQ_INT(cygprof_capture_open(out, &rd), 0);
	if (rd) {
		char *v = NULL;

		CHECK_EQ_INT(cygprof_capture_get_meta(rd, "k", &v), 0);
		CHECK_EQ_STR(v, "after");
		free(v);
		n = open_fds_of("/pub/out.data", &cl);
		CHECK_EQ_INT(n, 1);
		CHECK_EQ_INT(cl, n);
		cygprof_capture_discard(rd); /* on a reader: close */
	}

	/* close without publish publishes; a symlink at the output is
	 * replaced, its target never written */
	put_text(victim, "victim\n");
	unlink(out);
	CHECK_EQ_INT(symlink(victim, out), 0);
	CHECK_EQ_INT(cygprof_capture_create(out, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_STR(slurp(victim), "victim\n");
	CHECK_EQ_INT(lstat(out, &st), 0);
	CHECK(S_ISREG(st.st_mode));

	/* no lock file, ever */
	CHECK_EQ_INT(count_files(sub, "out.data-lock"), 0);
	CHECK_EQ_INT(cygprof_capture_create(sub, &cap), -EISDIR);
	CHECK(cap == NULL);
	CHECK_EQ_INT(cygprof_capture_publish(NULL), -EINVAL);
}

static void test_probe(void)
{
	char p[PATH_MAX + 32];
	struct cygprof_capture *cap;

	CHECK_EQ_INT(cygprof_capture_probe(timeline_path), 1);
	snprintf(p, sizeof(p), "%s/probe-text", dir);
	put_text(p, "int main(void) { return 0; }\n");
	CHECK_EQ_INT(cygprof_capture_probe(p), 0);
	snprintf(p, sizeof(p), "%s/probe-link", dir);
	CHECK_EQ_INT(symlink(timeline_path, p), 0);
	CHECK_EQ_INT(cygprof_capture_probe(p), 0); /* never followed */
	CHECK_EQ_INT(cygprof_capture_probe(dir), 0);
	snprintf(p, sizeof(p), "%s/probe-fifo", dir);
	CHECK_EQ_INT(mkfifo(p, 0644), 0);
	CHECK_EQ_INT(cygprof_capture_probe(p), 0); /* and did not block */
	CHECK_EQ_INT(cygprof_capture_open(p, &cap), CYGPROF_E_NOTCAPTURE);
	CHECK_EQ_INT(cygprof_capture_probe("/dev/null"), 0);
	CHECK_EQ_INT(cygprof_capture_probe(tmp_path("probe-none")), -ENOENT);
	CHECK_EQ_INT(cygprof_capture_probe(schema1_path), 1);
	/* a damaged capture is still a capture */
	snprintf(p, sizeof(p), "%s/probe-damaged", dir);
	CHECK_EQ_INT(cygprof_capture_create(p, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(raw_put2(p, "meta", "x", 1, "y", 1, false), 0);
	CHECK_EQ_INT(cygprof_capture_probe(p), 1);
	CHECK_EQ_INT(cygprof_capture_probe(NULL), -EINVAL);
}

/* A reader creates, writes and follows nothing: a symlink planted where
 * the lock file was is left alone, the capture is unchanged. */
static void test_reader_writes_nothing(void)
{
	char lock[PATH_MAX + 16], victim[PATH_MAX + 16];
	struct cygprof_capture *cap;
	struct stat before, after;
	size_t seen = 0;
	int files;

	snprintf(lock, sizeof(lock), "%s-lock", timeline_path);
	snprintf(victim, sizeof(victim), "%s/lock-victim", dir);
	put_text(victim, "precious\n");
	CHECK_EQ_INT(symlink(victim, lock), 0);
	files = count_files(dir, "");
	CHECK_EQ_INT(stat(timeline_path, &before), 0);
	sleep(1); /* a write would show in the times */
	CHECK_EQ_INT(cygprof_capture_open(timeline_path, &cap), 0);
	if (cap) {
		CHECK_EQ_INT(cygprof_capture_foreach_event(cap, 0, count_cb, &seen), 0);
		CHECK(seen > 0);
		CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	}
	CHECK_EQ_INT(stat(timeline_path, &after), 0);
	CHECK_EQ_U64((uint64_t)after.st_mtime, (uint64_t)before.st_mtime);
	CHECK_EQ_U64((uint64_t)after.st_ctime, (uint64_t)before.st_ctime);
	CHECK_EQ_STR(slurp(victim), "precious\n");
	CHECK_EQ_INT(count_files(dir, ""), files);
	unlink(lock);
}

static int count_events_cb(const struct cygprof_event *ev, size_t n, void *data)
{
	(void)ev;
	*(size_t *)data += n;
	return 0;
}

/* A thread whose record counts more events than its calls make (a capture
 * cut off after a record that counted events drained after its calls were
 * read, as an older collector wrote them): its first 2 * calls events are
 * given, by the cursor and by foreach, the thread flagged, nothing is
 * damage; a thread beside it keeps all its events. */
static void test_trimmed_thread(void)
{
	const char *path = tmp_path("trimmed.cap");
	struct cygprof_thread t[2] = { { .idx = 0, .calls = 3, .events = 10 },
				       { .idx = 1, .calls = 5, .events = 10 } },
			      *out = NULL;
	struct cygprof_node nodes[2] = { { .parent = CYGPROF_NONE }, { .parent = 0, .fn = 0x1000,
									 .calls = 3 } };
	struct cygprof_event ev[10];
	struct cygprof_capture *cap;
	struct cygprof_event_cursor *cur;
	const struct cygprof_event *e;
	size_t n, k, total;

	for (size_t i = 0; i < 10; i++)
		ev[i] = (struct cygprof_event){ 100 * (i + 1), 1,
						i % 2 ? CYGPROF_EV_EXIT : CYGPROF_EV_ENTER };
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	for (uint32_t i = 0; i < 2; i++) {
		CHECK_EQ_INT(cygprof_capture_put_thread(cap, &t[i]), 0);
		CHECK_EQ_INT(cygprof_capture_put_tree(cap, i, nodes, 2), 0);
		CHECK_EQ_INT(cygprof_capture_append_events(cap, i, ev, 10), 0);
	}
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "complete", "1"), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_get_threads(cap, &out, &n), 0);
	CHECK(cygprof_capture_damage(cap) == NULL);
	CHECK_EQ_U64(n, 2);
	if (n == 2) {
		CHECK_EQ_U64(out[0].events, 6);
		CHECK(out[0].flags & CYGPROF_THREAD_TRIMMED);
		CHECK_EQ_U64(out[1].events, 10);
		CHECK(!(out[1].flags & CYGPROF_THREAD_TRIMMED));
	}
	free(out);
	for (uint32_t i = 0; i < 2; i++) {
		total = 0;
		CHECK_EQ_INT(cygprof_event_cursor_open(cap, i, &cur), 0);
		while (cur && !cygprof_event_cursor_next(cur, &e, &k) && k) {
			if (!total)
				CHECK_EQ_U64(e[0].ts_ns, 100);
			total += k;
		}
		cygprof_event_cursor_close(cur);
		CHECK_EQ_U64(total, i ? 10 : 6);
		total = 0;
		CHECK_EQ_INT(cygprof_capture_foreach_event(cap, i, count_events_cb, &total), 0);
		CHECK_EQ_U64(total, i ? 10 : 6);
	}
	cygprof_capture_close(cap);
}

/* Damage found at open names what is damaged. */
static void test_damage_named(void)
{
	const char *path = tmp_path("named.cap");
	struct cygprof_thread t = { .idx = 3, .calls = 10, .events = 20 }, *out = NULL;
	struct cygprof_capture *cap;
	uint8_t key[4] = { 0, 0, 0, 3 }, val[124] = { 0 };
	size_t n;

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_put_thread(cap, &t), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "complete", "1"), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	CHECK(cap && cygprof_capture_damage(cap) == NULL);
	cygprof_capture_close(cap);

	/* a record whose checksum does not match */
	CHECK_EQ_INT(raw_put2(path, "threads", key, 4, val, sizeof(val), false), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), CYGPROF_E_CORRUPT);
	CHECK_EQ_STR(cygprof_capture_damage(NULL), "thread 3 record: checksum mismatch");
	CHECK_EQ_STR(cygprof_strerror(CYGPROF_E_CORRUPT),
		     "truncated or damaged capture (thread 3 record: checksum mismatch)");

	/* a checksum that matches values that cannot be true, more events and
	 * lost events than two per call, is no damage: the thread is trimmed
	 * to what its calls make (test_trimmed_thread) */
	val[28] = 10; /* calls */
	val[36] = 15; /* events */
	val[44] = 6;  /* lost */
	CHECK_EQ_INT(raw_put(path, "threads", key, 4, val, sizeof(val)), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (cap) {
		CHECK_EQ_INT(cygprof_capture_get_threads(cap, &out, &n), 0);
		CHECK(cygprof_capture_damage(cap) == NULL);
		CHECK_EQ_U64(n, 1);
		if (n == 1) {
			CHECK_EQ_U64(out[0].events, 14);
			CHECK(out[0].flags & CYGPROF_THREAD_TRIMMED);
		}
		free(out);
		cygprof_capture_close(cap);
	}
	val[44] = 5;
	CHECK_EQ_INT(raw_put(path, "threads", key, 4, val, sizeof(val)), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (cap) {
		CHECK_EQ_INT(cygprof_capture_get_threads(cap, &out, &n), 0);
		CHECK_EQ_U64(n, 1);
		if (n == 1) {
			CHECK_EQ_U64(out[0].events, 15);
			CHECK(!(out[0].flags & CYGPROF_THREAD_TRIMMED));
		}
		free(out);
		cygprof_capture_close(cap);
	}

	/* a record that vanished, as a damaged branch page would make it: the
	 * counts of the seal no longer match (raw_drop does not reseal) */
	CHECK_EQ_INT(raw_drop(path, (const char *const[]){ "stacks" }, 1), 0);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), CYGPROF_E_CORRUPT);
}

/* The meta page LMDB picks is the one with the larger transaction id: a
 * damaged id that makes it pick the older snapshot is found by the seal. */
static void test_older_snapshot(void)
{
	const char *path = tmp_path("snap.cap");
	struct cygprof_capture *cap;
	uint64_t t0, t1, *older;
	uint8_t page[8192];
	int fd;

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "complete", "1"), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "more", "1"), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	fd = open(path, O_RDWR);
	CHECK(pread(fd, page, sizeof(page), 0) == (ssize_t)sizeof(page));
	memcpy(&t0, page + 16 + 128, 8);
	memcpy(&t1, page + 4096 + 16 + 128, 8);
	/* the older meta page gets the larger id */
	older = t0 < t1 ? &t0 : &t1;
	*older = (t0 > t1 ? t0 : t1) + 1;
	CHECK(pwrite(fd, older, 8, (t0 > t1 ? 4096 : 0) + 16 + 128) == 8);
	close(fd);
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), CYGPROF_E_CORRUPT);
	printf("# %s\n", cygprof_strerror(CYGPROF_E_CORRUPT));
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* Under RLIMIT_AS: a reader maps what the file needs, a writer starts at a
 * quarter of the limit and says so when it cannot grow. */
/* The free pages of an LMDB file (its free list, as mdb_stat -f counts
 * them), or UINT64_MAX when it does not open. */
static uint64_t free_pages(const char *path)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t n = UINT64_MAX;
	size_t c;

	if (mdb_env_create(&env))
		return n;
	if (!mdb_env_set_maxdbs(env, 16) &&
	    !mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK, 0600) &&
	    !mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) {
		if (!mdb_cursor_open(txn, 0, &cur)) {
			int r;

			n = 0;
			for (r = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !r;
			     r = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
				memcpy(&c, v.mv_data, sizeof c);
				n += c;
			}
			mdb_cursor_close(cur);
		}
		mdb_txn_abort(txn);
	}
	mdb_env_close(env);
	return n;
}

static uint64_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (uint64_t)st.st_size;
}

/* A capture whose trees, meta and memory block were written again at
 * every commit: pages freed, which the compaction drops. */
static struct cygprof_capture *churned(const char *path, struct cygprof_node *tree, size_t nn,
				       struct cygprof_mem_event *ev, size_t nev)
{
	struct cygprof_stack_node st[2] = {
		{ .id = 1, .kind = CYGPROF_FRAME_FN, .addr = 0x1000 },
		{ .id = 2, .parent = 1, .kind = CYGPROF_FRAME_RA, .addr = 0x1010 },
	};
	struct cygprof_thread th = { .idx = 0, .tid = 42, .calls = 1 };
	struct cygprof_capture *cap = NULL;
	char val[64];
	size_t i, round;

	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	if (!cap)
		return NULL;
	CHECK_EQ_INT(cygprof_capture_put_stacks(cap, st, 2), 0);
	for (round = 0; round < 30; round++) {
		CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
		for (i = 1; i < nn; i++)
			tree[i].calls++;
		th.calls = round + 1;
		CHECK_EQ_INT(cygprof_capture_put_thread(cap, &th), 0);
		CHECK_EQ_INT(cygprof_capture_put_tree(cap, 0, tree, nn), 0);
		snprintf(val, sizeof val, "%zu", round);
		CHECK_EQ_INT(cygprof_capture_set_meta(cap, "round", val), 0);
		CHECK_EQ_INT(cygprof_capture_append_mem(cap, 0, ev + round * (nev / 30), nev / 30),
			     0);
		CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	}
	return cap;
}

static void same_capture(const char *a, const char *b, const struct cygprof_node *tree,
			 size_t nn, const struct cygprof_mem_event *ev, size_t nev)
{
	struct cygprof_capture *ca = NULL, *cb = NULL;
	struct cygprof_node *ta = NULL, *tb = NULL;
	struct cygprof_mem_cursor *cur = NULL, *curb = NULL;
	struct cygprof_mem_event e, eb, ev2;
	struct cygprof_stack_node *sa = NULL;
	char *va = NULL, *vb = NULL;
	size_t na = 0, nb = 0, i, ns = 0, bad = 0;

	CHECK_EQ_INT(cygprof_capture_open(a, &ca), 0);
	CHECK_EQ_INT(cygprof_capture_open(b, &cb), 0);
	if (!ca || !cb)
		goto out;
	CHECK_EQ_INT(cygprof_capture_get_tree(ca, 0, &ta, &na), 0);
	CHECK_EQ_INT(cygprof_capture_get_tree(cb, 0, &tb, &nb), 0);
	CHECK_EQ_U64(na, nn);
	CHECK_EQ_U64(nb, nn);
	CHECK(na == nb && (!na || !memcmp(ta, tb, na * sizeof(*ta))));
	CHECK(nb == nn && !memcmp(tb, tree, nn * sizeof(*tb)));
	CHECK_EQ_INT(cygprof_capture_get_meta(ca, "round", &va), 0);
	CHECK_EQ_INT(cygprof_capture_get_meta(cb, "round", &vb), 0);
	CHECK_EQ_STR(vb, "29");
	CHECK(va && vb && !strcmp(va, vb));
	CHECK_EQ_INT(cygprof_capture_get_stacks(cb, &sa, &ns), 0);
	CHECK_EQ_U64(ns, 2);
	/* one thread: times in 10 us to 1 ms units, the same in both */
	CHECK_EQ_INT(cygprof_mem_cursor_open(ca, 0, &cur), 0);
	CHECK_EQ_INT(cygprof_mem_cursor_open(cb, 0, &curb), 0);
	for (i = 0; cur && curb && cygprof_mem_cursor_next(cur, &e) == 1; i++) {
		ev2 = ev[i];
		ev2.ts_ns = e.ts_ns;
		if (i >= nev || !mem_same(&e, &ev2) || e.ts_ns > ev[i].ts_ns ||
		    cygprof_mem_cursor_next(curb, &eb) != 1 || !mem_same(&e, &eb))
			bad++;
	}
	CHECK_EQ_INT(curb ? cygprof_mem_cursor_next(curb, &eb) : -1, 0);
	cygprof_mem_cursor_close(cur);
	cygprof_mem_cursor_close(curb);
	CHECK_EQ_U64(i, nev / 30 * 30);
	CHECK_EQ_U64(bad, 0);
out:
	free(ta);
	free(tb);
	free(va);
	free(vb);
	free(sa);
	cygprof_capture_close(ca);
	cygprof_capture_close(cb);
}

static void test_compact(void)
{
	const char *path = tmp_path("compact.cap"), *orig = tmp_path("compact-orig.cap"),
		   *p2 = tmp_path("compact2.cap");
	static struct mm_heap heap;
	struct cygprof_capture *cap;
	struct cygprof_mem_event *ev;
	struct cygprof_node *tree;
	size_t nn = 3000, nev = 300000, i;
	uint64_t saved = 1, before;
	struct stat st;
	DIR *d;
	struct dirent *de;
	int left;

	tree = calloc(nn, sizeof(*tree));
	tree[0].parent = CYGPROF_NONE;
	for (i = 1; i < nn; i++) {
		tree[i].parent = (uint32_t)(rnd() % i);
		tree[i].fn = 0x400000 + rnd() % 4096;
		tree[i].site = tree[i].fn + 5;
		tree[i].total_ns = rnd() % 1000000;
	}
	ev = malloc(nev * sizeof(*ev));
	heap.ts = 1000;
	heap.top = 0x55555555a000ull;
	heap.mmap_top = 0x7ffff7ff0000ull;
	for (i = 0; i < nev;) {
		struct cygprof_mem_event two[2];
		size_t k = mm_step(&heap, two);

		for (size_t j = 0; j < k && i < nev; j++, i++) {
			ev[i] = two[j];
			ev[i].stack = ev[i].op == CYGPROF_MEM_ALLOC ? 1 + (uint32_t)(rnd() % 2) : 0;
		}
	}
	mm_free(&heap);

	cap = churned(path, tree, nn, ev, nev);
	if (!cap)
		goto out;
	/* not sealed yet: refused */
	CHECK_EQ_INT(cygprof_capture_compact(cap, &saved), -EINVAL);
	CHECK_EQ_U64(saved, 0);
	CHECK_EQ_INT(cygprof_capture_compact(NULL, NULL), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_seal(cap), 0);
	CHECK_EQ_INT(cygprof_capture_publish(cap), 0);
	/* what the compaction starts from: sealed, its freed pages in it */
	CHECK_EQ_INT(copy_file(path, orig, (off_t)size_of(path)), 0);
	before = size_of(orig);
	CHECK(free_pages(orig) > 0 && free_pages(orig) != UINT64_MAX);
	CHECK_EQ_INT(cygprof_capture_compact(cap, &saved), 0);
	CHECK(saved > 0);
	printf("# compact: %llu -> %llu bytes (%llu free pages)\n", (unsigned long long)before,
	       (unsigned long long)size_of(path), (unsigned long long)free_pages(orig));
	CHECK_EQ_U64(size_of(path) + saved, before);
	CHECK_EQ_U64(free_pages(path), 0);
	/* the writer takes nothing more; compacting again does nothing */
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "late", "1"), -EINVAL);
	CHECK_EQ_INT(cygprof_capture_compact(cap, &saved), 0);
	CHECK_EQ_U64(saved, 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	/* every record as before, the seal checked at open */
	same_capture(orig, path, tree, nn, ev, nev);
	/* no copy left behind */
	left = 0;
	d = opendir(dir);
	while (d && (de = readdir(d)))
		left += !strncmp(de->d_name, ".compact", 8);
	if (d)
		closedir(d);
	CHECK_EQ_INT(left, 0);

	/* not published: the new file is compacted, close publishes it */
	for (i = 1; i < nn; i++)
		tree[i].calls = 0;
	cap = churned(p2, tree, nn, ev, nev);
	if (!cap)
		goto out;
	CHECK_EQ_INT(stat(p2, &st), -1);
	CHECK_EQ_INT(cygprof_capture_seal(cap), 0);
	CHECK_EQ_INT(cygprof_capture_compact(cap, &saved), 0);
	CHECK(saved > 0);
	CHECK_EQ_INT(stat(p2, &st), -1);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	CHECK_EQ_U64(size_of(p2), size_of(path));
	CHECK_EQ_U64(free_pages(p2), 0);
	same_capture(orig, p2, tree, nn, ev, nev);

	/* CYGPROF_CAPTURE_COMPACT=0: nothing done */
	for (i = 1; i < nn; i++)
		tree[i].calls = 0;
	setenv("CYGPROF_CAPTURE_COMPACT", "0", 1);
	cap = churned(p2, tree, nn, ev, nev);
	if (cap) {
		CHECK_EQ_INT(cygprof_capture_seal(cap), 0);
		CHECK_EQ_INT(cygprof_capture_compact(cap, &saved), 0);
		CHECK_EQ_U64(saved, 0);
		CHECK_EQ_INT(cygprof_capture_close(cap), 0);
		CHECK(free_pages(p2) > 0);
	}
	unsetenv("CYGPROF_CAPTURE_COMPACT");

	/* a stream capture, a reader: refused */
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_compact(cap, &saved), -EINVAL);
	cygprof_capture_close(cap);
out:
	free(tree);
	free(ev);
}

static void test_addrspace(void)
{
#ifdef UNDER_ASAN
	printf("# skipped under ASan (its shadow needs terabytes of address space)\n");
#else
	const char *path = tmp_path("as.cap");
	struct cygprof_node *nodes;
	size_t nn = 400000, i;
	pid_t pid;
	int st = -1;

	fflush(stdout);
	pid = fork();
	if (!pid) {
		struct rlimit rl = { (rlim_t)256 << 20, (rlim_t)256 << 20 };
		struct cygprof_capture *cap, *rd;
		int rc, code = 0;

		nodes = calloc(nn, sizeof(*nodes));
		for (i = 0; i < nn; i++) {
			nodes[i].parent = i ? (uint32_t)i - 1 : CYGPROF_NONE;
			/* incompressible */
			nodes[i].fn = rnd();
			nodes[i].site = rnd();
			nodes[i].calls = rnd();
			nodes[i].total_ns = rnd();
		}
		if (setrlimit(RLIMIT_AS, &rl))
			_exit(10);
		/* a reader under 256 MB of address space (the old one mapped 64 GiB) */
		if (cygprof_capture_open(timeline_path, &rd))
			_exit(11);
		cygprof_capture_close(rd);
		if (cygprof_capture_create(path, &cap))
			_exit(12);
		/* 16 MB per tree: the map (64 MB, then at most 3/4 of the limit)
		 * fills up */
		for (i = 0; i < 40; i++) {
			rc = cygprof_capture_put_tree(cap, (uint32_t)i, nodes, nn);
			if (rc)
				break;
		}
		if (rc != CYGPROF_E_ADDRSPACE) {
			printf("# rc %d after %zu trees\n", rc, i);
			code = 13;
		}
		if (strcmp(cygprof_strerror(rc),
			   "address space limit (ulimit -v) too small for the capture"))
			code = 14;
		cygprof_capture_discard(cap);
		_exit(code);
	}
	CHECK(pid > 0);
	waitpid(pid, &st, 0);
	CHECK_EQ_INT(WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st), 0);
	CHECK_EQ_INT(count_files(dir, ".as.cap."), 0);
#endif
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");

	if (argc < 2) {
		fprintf(stderr, "usage: test-capture tests/data/schema1.data\n");
		return 2;
	}
	schema1_path = argv[1];
	snprintf(dir, sizeof(dir), "%s/cygprof-test-capture-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(timeline_path, sizeof(timeline_path), "%s/timeline.cap", dir);

	RUN_TEST(test_meta);
	RUN_TEST(test_procs_threads);
	RUN_TEST(test_trees);
	RUN_TEST(test_cols);
	RUN_TEST(test_refill);
	RUN_TEST(test_objects);
	RUN_TEST(test_symbols);
	RUN_TEST(test_timeline);
	RUN_TEST(test_time_index);
	RUN_TEST(test_mem);
	RUN_TEST(test_stacks);
	RUN_TEST(test_stack_blocks);
	RUN_TEST(test_map_growth);
	RUN_TEST(test_errors);
	RUN_TEST(test_corrupt_values);
	RUN_TEST(test_corrupt_mem);
	RUN_TEST(test_mem_flags);
	RUN_TEST(test_mem_levels);
	RUN_TEST(test_mem_bytes);
	RUN_TEST(test_old_capture);
	RUN_TEST(test_schema5_stacks);
	RUN_TEST(test_counters);
	RUN_TEST(test_psamples);
	RUN_TEST(test_cpu);
	RUN_TEST(test_latency);
	RUN_TEST(test_open_rw);
	RUN_TEST(test_readonly_dir);
	RUN_TEST(test_crc);
	RUN_TEST(test_create_publish);
	RUN_TEST(test_probe);
	RUN_TEST(test_reader_writes_nothing);
	RUN_TEST(test_damage_named);
	RUN_TEST(test_trimmed_thread);
	RUN_TEST(test_older_snapshot);
	RUN_TEST(test_addrspace);
	RUN_TEST(test_compact);

	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	CHECK_DONE();
}
