/* SPDX-License-Identifier: MIT */
/* test-net-proto.c - the frames of `record --send` (remote/net-proto.c):
 * writer calls encoded by the net sink, replayed into an LMDB capture and
 * read back; flushing; truncated streams; malformed frames refused. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture-sink.h"
#include "check.h"
#include "net-proto.h"
#include "net.h"
#include "sha256.h"

static char dir[PATH_MAX];

static const char *tmp_path(const char *name)
{
	static char buf[4][PATH_MAX + 64];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

/* The data of one small run. */
static const struct cygprof_node nodes[] = {
	{ CYGPROF_NONE, 0, 0, 0, 0, 0 },
	{ 0, 0, 0x401000, 0x400500, 1, 1000 },
	{ 1, 0, 0x401100, 0x401010, 1000, 700 },
};
static const struct cygprof_callsite sites[] = {
	{ 1, 0, 0x400500, 1, 1000 },
	{ 2, 0, 0x401010, 600, 400 },
	{ 2, 0, 0x401020, 400, 300 },
};
static const struct cygprof_event events[] = {
	{ 10, 1, CYGPROF_EV_ENTER }, { 20, 2, CYGPROF_EV_ENTER },
	{ 30, 2, CYGPROF_EV_EXIT },  { 1010, 1, CYGPROF_EV_EXIT },
};
static const struct cygprof_stack_node stacks[] = {
	{ 1, 0, 0, CYGPROF_FRAME_FN, 0x401000 },
	{ 2, 1, 0, CYGPROF_FRAME_RA, 0x401010 },
	{ 3, 2, 0, CYGPROF_FRAME_IP, 0x401105 },
};
static const struct cygprof_mem_event mem[] = {
	{ 15, 0x10000, 64, 2, CYGPROF_MEM_ALLOC, CYGPROF_FN_MALLOC, 0 },
	{ 25, 0x10000, 0, 0, CYGPROF_MEM_FREE, CYGPROF_FN_FREE, 0 },
};
static const struct cygprof_sample samples[] = { { 0, 100 }, { 500, -7 } };
static const struct cygprof_psample psamples[] = {
	{ 100, 1000, UINT64_MAX, 0, 42, 42, 3, 0, 0 },
	{ 200, 1000, UINT64_MAX, 0, 42, 42, 3, CYGPROF_SAMPLE_KERNEL, 0 },
};
static const struct cygprof_offcpu offcpu[] = { { 300, 400, 0, 42, 2, 0 } };

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Make every writer call of a run on sink; with half: stop after the first
 * batch (a stream cut there). */
static int write_run(const struct cap_sink *k, int half)
{
	const struct cap_sink_ops *o = k->ops;
	void *s = k->state;
	struct cygprof_proc p = { 0, 42, 1, CYGPROF_NONE, 0, 2000, CYGPROF_END_EXIT, 3,
				  (char *)"prog arg", (char *)"/tmp/prog" };
	struct cygprof_thread t = { .idx = 0, .proc_idx = 0, .tid = 42, .flags = 1,
				    .start_ns = 5, .end_ns = 1990, .calls = 1001, .events = 4,
				    .overflow = 2, .mem_lost = 1 };
	struct cygprof_object ob = { 0, 0, 0x400000, 0x402000, 0, 4, { 1, 2, 3, 4 },
				     (char *)"/tmp/prog" };
	struct cygprof_symbol sym1 = { 0, 0, 0x401000, 0x100, (char *)"main" };
	struct cygprof_symbol sym2 = { 0, 0, 0x401100, 0x20, (char *)"leaf" };
	struct cygprof_counter c = { 0, CYGPROF_NONE, CYGPROF_UNIT_BYTES, 0,
				     (char *)"meminfo/MemFree" };
	int rc = 0;

	strcpy(t.name, "prog");
	rc |= o->begin(s);
	rc |= o->set_meta(s, "command", "prog arg");
	rc |= o->set_meta(s, "mode", "profile+timeline+memory");
	rc |= o->put_proc(s, &p);
	rc |= o->put_thread(s, &t);
	rc |= o->put_object(s, &ob);
	rc |= o->commit(s);
	rc |= o->publish(s);
	if (half)
		return rc;
	rc |= o->begin(s);
	rc |= o->put_tree(s, 0, nodes, N(nodes));
	rc |= o->put_sites(s, 0, sites, N(sites));
	rc |= o->append_events(s, 0, events, N(events));
	rc |= o->put_symbol(s, &sym1);
	rc |= o->put_symbol(s, &sym2);
	rc |= o->put_stacks(s, stacks, N(stacks));
	rc |= o->append_mem(s, 0, mem, N(mem));
	rc |= o->put_counter(s, &c);
	rc |= o->append_samples(s, 0, samples, N(samples));
	rc |= o->append_psamples(s, psamples, N(psamples));
	rc |= o->append_offcpu(s, offcpu, N(offcpu));
	rc |= o->set_meta(s, "complete", "1");
	rc |= o->commit(s);
	rc |= o->close(s);
	return rc;
}

/* Replay a byte stream into a new capture at path; returns the last
 * dispatch result (NETP_DONE_END at a clean end), or 0 when the bytes ran
 * out mid-stream (then the capture is closed with "remote_error" set, as
 * `cygprof receive` does). */
static int replay(const uint8_t *p, size_t n, const char *path, char *err, size_t errlen)
{
	struct cygprof_capture *cap;
	int rc = cygprof_capture_create(path, &cap);
	if (rc < 0)
		return rc;
	struct cap_sink k = cap_sink_capture(cap);
	struct netp_join join = { 0 };
	size_t off = 0;
	for (;;) {
		uint32_t type, plen;
		const uint8_t *payload;
		long fl = netp_frame(p + off, n - off, &type, &payload, &plen);
		if (fl < 0) {
			netp_join_free(&join);
			cygprof_capture_discard(cap);
			return (int)fl;
		}
		if (fl == 0) {
			netp_join_free(&join);
			/* Cut: what a receiver does when the connection drops. */
			cygprof_capture_commit(cap);
			cygprof_capture_set_meta(cap, "remote_error", "connection lost");
			cygprof_capture_publish(cap);
			cygprof_capture_close(cap);
			return 0;
		}
		const uint8_t *jp;
		uint32_t jlen;
		rc = netp_join(&join, type, netp_flags(p + off), payload, plen, &jp, &jlen, err,
			       errlen);
		off += (size_t)fl;
		if (rc > 0)
			continue; /* a part of a split tree or sites frame */
		if (!rc)
			rc = netp_dispatch(type, jp, jlen, &k, err, errlen);
		if (rc < 0) {
			netp_join_free(&join);
			cygprof_capture_discard(cap);
			return rc;
		}
		if (rc != NETP_DONE_MORE) {
			netp_join_free(&join);
			return rc;
		}
	}
}

static int encode_run(struct netp_enc *e, int half)
{
	struct cap_sink k = cap_sink_net(e);
	return write_run(&k, half);
}

/* Every call through the frames into a capture; with max_frame, arrays are
 * split (appends in several frames, tree and sites in parts joined again). */
static void roundtrip(uint32_t max_frame, const char *name)
{
	struct netp_enc e = { .max_frame = max_frame };
	char err[200] = "";
	const char *path = tmp_path(name);

	CHECK_EQ_INT(encode_run(&e, 0), 0);
	CHECK_EQ_INT(e.err, 0);
	size_t parts = 0, trees = 0;
	for (size_t off = 0; off < e.len;) {
		uint32_t type, plen;
		const uint8_t *pl;
		long fl = netp_frame(e.buf + off, e.len - off, &type, &pl, &plen);
		CHECK(fl > 0);
		if (fl <= 0)
			break;
		parts += netp_flags(e.buf + off) == NETP_F_MORE;
		trees += type == NETP_T_TREE;
		off += (size_t)fl;
	}
	/* 3 nodes and 3 sites, one a frame: two parts of each flagged */
	CHECK_EQ_U64(parts, max_frame ? 4 : 0);
	CHECK_EQ_U64(trees, max_frame ? 3 : 1);
	CHECK_EQ_INT(replay(e.buf, e.len, path, err, sizeof err), NETP_DONE_END);
	CHECK_EQ_STR(err, "");
	netp_enc_free(&e);

	struct cygprof_capture *cap;
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	char *v = NULL;
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "command", &v), 0);
	CHECK_EQ_STR(v, "prog arg");
	free(v);
	v = NULL;
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "complete", &v), 0);
	CHECK_EQ_STR(v, "1");
	free(v);

	struct cygprof_proc *procs;
	size_t n;
	CHECK_EQ_INT(cygprof_capture_get_procs(cap, &procs, &n), 0);
	CHECK_EQ_U64(n, 1);
	if (n == 1) {
		CHECK_EQ_U64(procs[0].pid, 42);
		CHECK_EQ_U64(procs[0].parent_idx, CYGPROF_NONE);
		CHECK_EQ_U64(procs[0].end_kind, CYGPROF_END_EXIT);
		CHECK_EQ_INT(procs[0].end_code, 3);
		CHECK_EQ_STR(procs[0].command, "prog arg");
		CHECK_EQ_STR(procs[0].exe, "/tmp/prog");
	}
	cygprof_procs_free(procs, n);

	struct cygprof_thread *th;
	CHECK_EQ_INT(cygprof_capture_get_threads(cap, &th, &n), 0);
	CHECK_EQ_U64(n, 1);
	if (n == 1) {
		CHECK_EQ_U64(th[0].tid, 42);
		CHECK_EQ_U64(th[0].calls, 1001);
		CHECK_EQ_U64(th[0].overflow, 2);
		CHECK_EQ_U64(th[0].mem_lost, 1);
		CHECK_EQ_STR(th[0].name, "prog");
	}
	free(th);

	struct cygprof_node *tree;
	CHECK_EQ_INT(cygprof_capture_get_tree(cap, 0, &tree, &n), 0);
	CHECK_EQ_U64(n, N(nodes));
	CHECK(n == N(nodes) && !memcmp(tree, nodes, sizeof nodes));
	free(tree);

	struct cygprof_callsite *cs;
	CHECK_EQ_INT(cygprof_capture_get_sites(cap, 0, &cs, &n), 0);
	CHECK_EQ_U64(n, N(sites));
	CHECK(n == N(sites) && !memcmp(cs, sites, sizeof sites));
	free(cs);

	struct cygprof_object *objs;
	CHECK_EQ_INT(cygprof_capture_get_objects(cap, &objs, &n), 0);
	CHECK_EQ_U64(n, 1);
	if (n == 1) {
		CHECK_EQ_U64(objs[0].build_id_len, 4);
		CHECK_EQ_U64(objs[0].build_id[3], 4);
		CHECK_EQ_U64(objs[0].end, 0x402000);
		CHECK_EQ_STR(objs[0].path, "/tmp/prog");
	}
	cygprof_objects_free(objs, n);

	struct cygprof_symbol *syms;
	CHECK_EQ_INT(cygprof_capture_get_symbols(cap, 0, &syms, &n), 0);
	CHECK_EQ_U64(n, 2);
	if (n == 2) {
		CHECK_EQ_STR(syms[0].name, "main");
		CHECK_EQ_STR(syms[1].name, "leaf");
		CHECK_EQ_U64(syms[1].size, 0x20);
	}
	cygprof_symbols_free(syms, n);

	struct cygprof_stack_node *st;
	CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &st, &n), 0);
	CHECK_EQ_U64(n, N(stacks));
	CHECK(n == N(stacks) && !memcmp(st, stacks, sizeof stacks));
	free(st);

	struct cygprof_mem_cursor *cur;
	struct cygprof_mem_event me;
	size_t k = 0;
	CHECK_EQ_INT(cygprof_mem_cursor_open(cap, 0, &cur), 0);
	while (cur && cygprof_mem_cursor_next(cur, &me) == 1) {
		CHECK(k < N(mem) && !memcmp(&me, &mem[k], sizeof me));
		k++;
	}
	cygprof_mem_cursor_close(cur);
	CHECK_EQ_U64(k, N(mem));

	struct cygprof_counter *ctr;
	CHECK_EQ_INT(cygprof_capture_get_counters(cap, &ctr, &n), 0);
	CHECK_EQ_U64(n, 1);
	if (n == 1)
		CHECK_EQ_STR(ctr[0].name, "meminfo/MemFree");
	cygprof_counters_free(ctr, n);

	struct cygprof_sample *sa;
	CHECK_EQ_INT(cygprof_capture_get_samples(cap, 0, &sa, &n), 0);
	CHECK_EQ_U64(n, N(samples));
	CHECK(n == N(samples) && !memcmp(sa, samples, sizeof samples));
	free(sa);

	struct cygprof_psample *ps;
	CHECK_EQ_INT(cygprof_capture_get_psamples(cap, &ps, &n), 0);
	CHECK_EQ_U64(n, N(psamples));
	CHECK(n == N(psamples) && !memcmp(ps, psamples, sizeof psamples));
	free(ps);

	struct cygprof_offcpu *oc;
	CHECK_EQ_INT(cygprof_capture_get_offcpu(cap, &oc, &n), 0);
	CHECK_EQ_U64(n, N(offcpu));
	CHECK(n == N(offcpu) && !memcmp(oc, offcpu, sizeof offcpu));
	free(oc);
	cygprof_capture_close(cap);
}

static void test_roundtrip(void)
{
	roundtrip(0, "rt.cap");
}

/* Frames of at most 40 bytes of payload: one node, site or stack node, two
 * events, one memory event a frame. */
static void test_split(void)
{
	roundtrip(40, "split.cap");

	/* a part of another type, or of another thread, in between: refused */
	struct netp_join j = { 0 };
	uint8_t part[8 + 40] = { 0 }, other[8 + 40] = { 0 };
	const uint8_t *out;
	uint32_t olen;
	char err[200] = "";
	part[4] = 1;
	other[0] = 7;
	other[4] = 1;
	CHECK_EQ_INT(netp_join(&j, NETP_T_TREE, NETP_F_MORE, part, sizeof part, &out, &olen, err,
			       sizeof err), 1);
	CHECK_EQ_INT(netp_join(&j, NETP_T_META, 0, part, 4, &out, &olen, err, sizeof err),
		     -EBADMSG);
	CHECK(strstr(err, "inside a split tree frame") != NULL);
	CHECK_EQ_INT(netp_join(&j, NETP_T_TREE, 0, other, sizeof other, &out, &olen, err,
			       sizeof err), -EBADMSG);
	CHECK(strstr(err, "thread 0 continued for thread 7") != NULL);
	CHECK_EQ_INT(netp_join(&j, NETP_T_TREE, 0, part, sizeof part - 1, &out, &olen, err,
			       sizeof err), -EBADMSG);
	CHECK_EQ_INT(netp_join(&j, NETP_T_TREE, 0, part, sizeof part, &out, &olen, err,
			       sizeof err), 0);
	CHECK(olen == 8 + 80 && out[4] == 2);
	netp_join_free(&j);
	/* the flag is refused on anything but a tree or sites frame */
	uint8_t hdr[8] = { 0, 0, 0, 0, NETP_T_EVENTS, 0, NETP_F_MORE, 0 };
	uint32_t type, plen;
	const uint8_t *pl;
	CHECK_EQ_INT(netp_frame(hdr, sizeof hdr, &type, &pl, &plen), -EBADMSG);
	hdr[4] = NETP_T_SITES;
	CHECK_EQ_INT(netp_frame(hdr, sizeof hdr, &type, &pl, &plen), 8);
}

static int count_events(const struct cygprof_event *ev, size_t n, void *data)
{
	(void)ev;
	*(size_t *)data += n;
	return 0;
}

/* The timeline goes through the capture's block encoding: read it back. */
static void test_events(void)
{
	struct netp_enc e = { 0 };
	char err[200] = "";
	const char *path = tmp_path("ev.cap");

	CHECK_EQ_INT(encode_run(&e, 0), 0);
	CHECK_EQ_INT(replay(e.buf, e.len, path, err, sizeof err), NETP_DONE_END);
	netp_enc_free(&e);
	struct cygprof_capture *cap;
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (!cap)
		return;
	size_t n = 0;
	CHECK_EQ_INT(cygprof_capture_foreach_event(cap, 0, count_events, &n), 0);
	CHECK_EQ_U64(n, N(events));
	cygprof_capture_close(cap);
}

struct sink_buf {
	uint8_t *p;
	size_t n;
	int calls, fail;
};

static int flush_to(void *arg, const uint8_t *p, size_t n)
{
	struct sink_buf *b = arg;
	if (b->fail)
		return -EPIPE;
	uint8_t *q = realloc(b->p, b->n + n);
	if (!q)
		return -ENOMEM;
	memcpy(q + b->n, p, n);
	b->p = q;
	b->n += n;
	b->calls++;
	return 0;
}

/* Flushed at each commit, publish and close: the flushed bytes are the
 * whole stream; a failing flush makes every later call fail. */
static void test_flush(void)
{
	struct netp_enc plain = { 0 };
	struct sink_buf b = { 0 };
	struct netp_enc e = { .flush = flush_to, .arg = &b };

	CHECK_EQ_INT(encode_run(&plain, 0), 0);
	CHECK_EQ_INT(encode_run(&e, 0), 0);
	CHECK_EQ_U64(e.len, 0);
	CHECK_EQ_U64(e.sent, plain.len);
	CHECK_EQ_U64(b.n, plain.len);
	CHECK(b.n == plain.len && !memcmp(b.p, plain.buf, b.n));
	CHECK_EQ_INT(b.calls, 4); /* commit, publish, commit, close */
	netp_enc_free(&e);
	netp_enc_free(&plain);
	free(b.p);

	struct sink_buf bad = { .fail = 1 };
	struct netp_enc f = { .flush = flush_to, .arg = &bad };
	struct cap_sink k = cap_sink_net(&f);
	CHECK_EQ_INT(k.ops->begin(k.state), 0);
	CHECK_EQ_INT(k.ops->commit(k.state), -EPIPE);
	CHECK_EQ_INT(k.ops->set_meta(k.state, "a", "b"), -EPIPE);
	netp_enc_free(&f);
}

struct ev_got {
	struct cygprof_event *v;
	size_t n;
};

static int got_events(void *s, uint32_t t, const struct cygprof_event *v, size_t n)
{
	struct ev_got *g = s;
	(void)t;
	free(g->v);
	g->v = malloc(n * sizeof *v);
	if (!g->v)
		return -ENOMEM;
	memcpy(g->v, v, n * sizeof *v);
	g->n = n;
	return 0;
}

static void write_events(struct netp_enc *e, const struct cygprof_event *ev, size_t n)
{
	struct cap_sink k = cap_sink_net(e);
	CHECK_EQ_INT(cap_sink_begin(&k), 0);
	CHECK_EQ_INT(cap_sink_append_events(&k, 3, ev, n), 0);
	CHECK_EQ_INT(cap_sink_commit(&k), 0);
	CHECK_EQ_INT(cap_sink_close(&k), 0);
}

/* compress: a flush goes out as one ZBATCH frame holding exactly the
 * frames an uncompressed flush sends; event times travel as steps and come
 * back exactly, even going back or wrapping. */
static void test_compressed(void)
{
	enum { NEV = 20000 };
	struct cygprof_event *ev = malloc(NEV * sizeof *ev);
	struct netp_enc plain = { 0 };
	struct sink_buf b = { 0 };
	struct netp_enc z = { .flush = flush_to, .arg = &b, .compress = 1 };
	uint8_t *out = NULL, *zb = NULL;
	size_t nout = 0, zcap = 0, off = 0;
	char err[200] = "";

	CHECK(ev != NULL);
	if (!ev)
		return;
	for (size_t i = 0; i < NEV; i++)
		ev[i] = (struct cygprof_event){ 1000000 + i * 37, (uint32_t)(i % 7), (uint32_t)(i & 1) };
	ev[5].ts_ns = 3;	    /* a step back */
	ev[6].ts_ns = UINT64_MAX;  /* and the largest time */
	write_events(&plain, ev, NEV);
	write_events(&z, ev, NEV);
	CHECK_EQ_INT(z.err, 0);
	CHECK_EQ_U64(z.raw, plain.len);
	CHECK(z.sent * 10 < z.raw);
	while (off < b.n) {
		uint32_t type, plen;
		const uint8_t *pl;
		long fl = netp_frame(b.p + off, b.n - off, &type, &pl, &plen);
		CHECK(fl > 0);
		if (fl <= 0)
			break;
		const uint8_t *add = b.p + off;
		size_t nadd = (size_t)fl;
		if (type == NETP_T_ZBATCH) {
			CHECK_EQ_INT(netp_unzip(pl, plen, &zb, &zcap, &nadd, err, sizeof err), 0);
			add = zb;
		}
		uint8_t *q = realloc(out, nout + nadd);
		if (!q)
			break;
		out = q;
		memcpy(out + nout, add, nadd);
		nout += nadd;
		off += (size_t)fl;
	}
	CHECK(nout == plain.len && !memcmp(out, plain.buf, nout));

	/* the events frame replayed: the times as they were */
	static const struct cap_sink_ops evops = { .append_events = got_events };
	struct ev_got g = { 0 };
	struct cap_sink gk = { &evops, &g };
	uint32_t type, plen;
	const uint8_t *pl;
	long fl = netp_frame(plain.buf, plain.len, &type, &pl, &plen); /* BEGIN */
	CHECK(fl > 0);
	if (fl > 0) {
		fl = netp_frame(plain.buf + fl, plain.len - (size_t)fl, &type, &pl, &plen);
		CHECK_EQ_INT(type, NETP_T_EVENTS);
		CHECK_EQ_INT(netp_dispatch(type, pl, plen, &gk, err, sizeof err), NETP_DONE_MORE);
		CHECK(g.n == NEV && !memcmp(g.v, ev, NEV * sizeof *ev));
	}

	/* a ZBATCH that lies about its size, or holds garbage */
	uint8_t bad[64] = { 0xff, 0xff, 0xff, 0x7f, 1, 2, 3 };
	CHECK_EQ_INT(netp_unzip(bad, sizeof bad, &zb, &zcap, &nout, err, sizeof err),
		     -EBADMSG);
	CHECK(strstr(err, "zbatch") != NULL);

	free(g.v);
	free(out);
	free(zb);
	free(b.p);
	free(ev);
	netp_enc_free(&plain);
	netp_enc_free(&z);
}

/* A stream cut anywhere: never a crash; cut after the first batch, the
 * capture keeps it and says what happened, with no "complete". */
static void test_cut(void)
{
	struct netp_enc e = { 0 };
	struct netp_enc half = { 0 };
	char err[200];

	CHECK_EQ_INT(encode_run(&e, 0), 0);
	CHECK_EQ_INT(encode_run(&half, 1), 0);
	CHECK(half.len < e.len && !memcmp(half.buf, e.buf, half.len));

	/* Every prefix parses without error up to its last whole frame. */
	for (size_t cut = 0; cut < e.len; cut++) {
		size_t off = 0;
		int bad = 0;
		for (;;) {
			uint32_t type, plen;
			const uint8_t *payload;
			long fl = netp_frame(e.buf + off, cut - off, &type, &payload, &plen);
			if (fl <= 0) {
				bad = fl < 0;
				break;
			}
			off += (size_t)fl;
		}
		if (bad)
			CHECK_FAIL_("prefix %zu refused", cut);
	}

	/* The first batch and a few bytes of the next frame. */
	const char *path = tmp_path("cut.cap");
	CHECK_EQ_INT(replay(e.buf, half.len + 5, path, err, sizeof err), 0);
	struct cygprof_capture *cap;
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (cap) {
		char *v = NULL;
		CHECK_EQ_INT(cygprof_capture_get_meta(cap, "complete", &v), CYGPROF_E_NOTFOUND);
		free(v);
		v = NULL;
		CHECK_EQ_INT(cygprof_capture_get_meta(cap, "remote_error", &v), 0);
		CHECK_EQ_STR(v, "connection lost");
		free(v);
		struct cygprof_thread *th;
		size_t n;
		CHECK_EQ_INT(cygprof_capture_get_threads(cap, &th, &n), 0);
		CHECK_EQ_U64(n, 1);
		free(th);
		cygprof_capture_close(cap);
	}
	netp_enc_free(&e);
	netp_enc_free(&half);
}

/* A sink that accepts everything (for malformed frames). */
static int ok0(void *s) { (void)s; return 0; }
static int ok_meta(void *s, const char *k, const char *v) { (void)s; (void)k; (void)v; return 0; }
static int ok_tree(void *s, uint32_t t, const struct cygprof_node *v, size_t n)
{
	(void)s; (void)t; (void)v; (void)n;
	return 0;
}
static const struct cap_sink_ops null_ops = { .begin = ok0, .commit = ok0, .set_meta = ok_meta,
					      .put_tree = ok_tree };

static void hdr(uint8_t *p, uint32_t len, uint16_t type, uint16_t flags)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(len >> (8 * i));
	p[4] = (uint8_t)type;
	p[5] = (uint8_t)(type >> 8);
	p[6] = (uint8_t)flags;
	p[7] = (uint8_t)(flags >> 8);
}

static void test_malformed(void)
{
	struct cap_sink k = { &null_ops, NULL };
	uint8_t f[64] = { 0 };
	uint32_t type, plen;
	const uint8_t *payload;
	char err[200] = "";

	hdr(f, 0, 0, 0);
	CHECK_EQ_INT(netp_frame(f, 8, &type, &payload, &plen), -EBADMSG); /* type 0 */
	hdr(f, 0, NETP_T_COUNT_, 0);
	CHECK_EQ_INT(netp_frame(f, 8, &type, &payload, &plen), -EBADMSG);
	hdr(f, 0, NETP_T_BEGIN, 1);
	CHECK_EQ_INT(netp_frame(f, 8, &type, &payload, &plen), -EBADMSG); /* flags */
	hdr(f, NETP_MAX_FRAME + 1, NETP_T_TREE, 0);
	CHECK_EQ_INT(netp_frame(f, 8, &type, &payload, &plen), -EBADMSG); /* too long */
	hdr(f, 4, NETP_T_TREE, 0);
	CHECK_EQ_INT(netp_frame(f, 10, &type, &payload, &plen), 0); /* needs more */
	CHECK_EQ_INT(netp_frame(f, 12, &type, &payload, &plen), 12);

	/* begin with a payload */
	CHECK_EQ_INT(netp_dispatch(NETP_T_BEGIN, f, 1, &k, err, sizeof err), -EBADMSG);
	CHECK_EQ_STR(err, "malformed begin frame (1 bytes)");
	/* tree: count 2 but room for one node */
	uint8_t t[8 + 40] = { 0 };
	t[4] = 2;
	CHECK_EQ_INT(netp_dispatch(NETP_T_TREE, t, sizeof t, &k, err, sizeof err), -EBADMSG);
	/* tree: count 0x7fffffff (no allocation of that) */
	t[4] = 0xff, t[5] = 0xff, t[6] = 0xff, t[7] = 0x7f;
	CHECK_EQ_INT(netp_dispatch(NETP_T_TREE, t, sizeof t, &k, err, sizeof err), -EBADMSG);
	t[4] = 1, t[5] = t[6] = t[7] = 0;
	CHECK_EQ_INT(netp_dispatch(NETP_T_TREE, t, sizeof t, &k, err, sizeof err), 0);
	/* meta: a string with a NUL, a string running past the payload, a
	 * null key, bytes left over */
	uint8_t m[] = { 1, 0, 0, 0, 'a', 1, 0, 0, 0, 0 };
	CHECK_EQ_INT(netp_dispatch(NETP_T_META, m, sizeof m, &k, err, sizeof err), -EBADMSG);
	m[9] = 'b';
	CHECK_EQ_INT(netp_dispatch(NETP_T_META, m, sizeof m, &k, err, sizeof err), 0);
	m[5] = 2;
	CHECK_EQ_INT(netp_dispatch(NETP_T_META, m, sizeof m, &k, err, sizeof err), -EBADMSG);
	uint8_t m2[] = { 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0 };
	CHECK_EQ_INT(netp_dispatch(NETP_T_META, m2, sizeof m2, &k, err, sizeof err), -EBADMSG);
	uint8_t m3[] = { 0, 0, 0, 0, 0, 0, 0, 0, 9 };
	CHECK_EQ_INT(netp_dispatch(NETP_T_META, m3, sizeof m3, &k, err, sizeof err), -EBADMSG);
	CHECK_EQ_INT(netp_dispatch(99, m3, sizeof m3, &k, err, sizeof err), -EBADMSG);
	CHECK_EQ_STR(err, "unknown frame type 99");
	CHECK_EQ_STR(netp_type_name(NETP_T_STACKS), "stacks");
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static void test_sha256(void)
{
	uint8_t d[32];
	char h[65];
	struct sha256 c;

	sha256_init(&c);
	sha256_update(&c, "abc", 3);
	sha256_final(&c, d);
	hex(d, 32, h);
	CHECK_EQ_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256_init(&c);
	for (int i = 0; i < 1000; i++)
		sha256_update(&c, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
			      1000);
	sha256_final(&c, d);
	hex(d, 32, h);
	CHECK_EQ_STR(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	/* RFC 4231 test cases 2 and 6 (a key longer than a block) */
	hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
	hex(d, 32, h);
	CHECK_EQ_STR(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	uint8_t key[131];
	memset(key, 0xaa, sizeof key);
	const char *m = "Test Using Larger Than Block-Size Key - Hash Key First";
	hmac_sha256(key, sizeof key, m, strlen(m), d);
	hex(d, 32, h);
	CHECK_EQ_STR(h, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
	CHECK(ct_equal(d, d, 32));
	uint8_t d2[32];
	memcpy(d2, d, 32);
	d2[31] ^= 1;
	CHECK(!ct_equal(d, d2, 32));
}

static const char *write_token(const char *name, const char *text, mode_t mode)
{
	const char *path = tmp_path(name);
	FILE *f = fopen(path, "w");
	if (!f)
		return path;
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
	return path;
}

static void test_token(void)
{
	uint8_t *tok = NULL;
	size_t n = 0;
	char err[300] = "";

	CHECK_EQ_INT(net_token_load(write_token("t1", "0123456789abcdef\n", 0600), &tok, &n, err,
				    sizeof err), 0);
	CHECK_EQ_U64(n, 16);
	free(tok);
	CHECK_EQ_INT(net_token_load(write_token("t2", "0123456789abcdef\n", 0644), &tok, &n, err,
				    sizeof err), -EPERM);
	CHECK(strstr(err, "readable by others") != NULL);
	CHECK_EQ_INT(net_token_load(write_token("t3", "short\n", 0600), &tok, &n, err, sizeof err),
		     -EINVAL);
	CHECK_EQ_INT(net_token_load(tmp_path("none"), &tok, &n, err, sizeof err), -ENOENT);
}

/* The server side in a child over a socketpair; its result as exit code. */
static void handshake_case(const char *ctok, const char *stok, int want_c, int want_s)
{
	int sv[2];
	char err[300] = "";

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		CHECK_FAIL_("socketpair: %s", strerror(errno));
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		int rc = net_handshake_server(sv[1], (const uint8_t *)stok, strlen(stok), 5000,
					      err, sizeof err);
		_exit(rc == 0 ? 0 : rc == -EACCES ? 1 : 2);
	}
	close(sv[1]);
	int rc = net_handshake_client(sv[0], (const uint8_t *)ctok, strlen(ctok), 5000, err,
				      sizeof err);
	CHECK_EQ_INT(rc, want_c);
	close(sv[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st));
	CHECK_EQ_INT(WEXITSTATUS(st), want_s);
}

static void test_handshake(void)
{
	handshake_case("0123456789abcdef", "0123456789abcdef", 0, 0);
	handshake_case("0123456789abcdeX", "0123456789abcdef", -EACCES, 1);

	/* A peer that is not cygprof. */
	int sv[2];
	char err[300] = "";
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return;
	CHECK_EQ_INT(write(sv[0], "GET / HTTP/1.0\r\n", 16), 16);
	CHECK_EQ_INT(net_handshake_server(sv[1], (const uint8_t *)"0123456789abcdef", 16, 5000,
					  err, sizeof err),
		     -EPROTO);
	CHECK_EQ_STR(err, "the peer is not cygprof record --send");
	close(sv[0]);
	/* A peer that hangs up. */
	CHECK_EQ_INT(net_handshake_server(sv[1], (const uint8_t *)"0123456789abcdef", 16, 5000,
					  err, sizeof err),
		     -EPIPE);
	close(sv[1]);
}

static void test_loopback(void)
{
	char err[300] = "";
	int l = net_listen("127.0.0.1:0", err, sizeof err);
	CHECK(l >= 0);
	if (l < 0)
		return;
	int port = net_local_port(l);
	CHECK(port > 0);
	char spec[64];
	snprintf(spec, sizeof spec, "127.0.0.1:%d", port);
	int c = net_connect(spec, err, sizeof err);
	CHECK(c >= 0);
	int a = accept(l, NULL, NULL);
	CHECK(a >= 0);
	CHECK_EQ_INT(net_write_full(c, "hello", 5, 1000), 0);
	char buf[8] = "";
	CHECK_EQ_INT(net_read_full(a, buf, 5, 1000), 0);
	CHECK_EQ_STR(buf, "hello");
	CHECK_EQ_INT(net_read_full(a, buf, 1, 50), -ETIMEDOUT);
	close(c);
	CHECK_EQ_INT(net_read_full(a, buf, 1, 1000), -EPIPE);
	close(a);
	close(l);
	CHECK_EQ_INT(net_listen("nocolon", err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "nocolon: expected ADDR:PORT");
	CHECK_EQ_INT(net_listen("127.0.0.1:99999", err, sizeof err), -EINVAL);
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/test-net-proto.XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 99;
	}
	RUN_TEST(test_roundtrip);
	RUN_TEST(test_split);
	RUN_TEST(test_events);
	RUN_TEST(test_flush);
	RUN_TEST(test_compressed);
	RUN_TEST(test_cut);
	RUN_TEST(test_malformed);
	RUN_TEST(test_sha256);
	RUN_TEST(test_token);
	RUN_TEST(test_handshake);
	RUN_TEST(test_loopback);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	CHECK_DONE();
}
