/* SPDX-License-Identifier: MIT */
/* test-net-proto.c - the frames of `record --send` (remote/net-proto.c):
 * every record type written through a stream capture, carried as frames
 * and stored by cygprof_capture_put_value() gives the very capture a
 * direct write gives (every DB compared key by key, value by value, and
 * read back), event blocks put again as they grow repeating their bytes;
 * split values, flushing, compression (one zstd stream across the batches,
 * in step with plain batches, the receiver's window), cut streams;
 * malformed frames and values a reader would refuse are refused in one
 * line and store nothing; mutated streams never leave a damaged capture;
 * the token, the handshake (and its agreement on compression) and the
 * sockets. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zstd.h>

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

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The data of one small run: every record type. */
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
/* times in 10 us: single-thread memory blocks keep no finer (docs/capture-format.md) */
static const struct cygprof_mem_event mem[] = {
	{ 10000, 0x10000, 64, 2, CYGPROF_MEM_ALLOC, CYGPROF_FN_MALLOC, 0 },
	{ 30000, 0x10000, 0, 0, CYGPROF_MEM_FREE, CYGPROF_FN_FREE, 0 },
};
static const struct cygprof_sample samples[] = { { 0, 100 }, { 500, -7 } };
static const struct cygprof_psample psamples[] = {
	{ 100, 1000, UINT64_MAX, 0, 42, 42, 3, 0, 0 },
	{ 200, 1000, UINT64_MAX, 0, 42, 42, 3, CYGPROF_SAMPLE_KERNEL, 0 },
};
static const struct cygprof_offcpu offcpu[] = { { 300, 400, 0, 42, 2, 0 } };
static const struct cygprof_cpu cpu = { 0, CYGPROF_CPU_PERF, CYGPROF_CPU_SWITCHES, 0, 1000000,
					 5000000, 6, 1, 0, 1500, 700000, 3, 12, 0 };
static const struct cygprof_cpu_node cpu_nodes[] = { { 1, 0, 4, 1, 1500, 0 },
						     { 2, 0, 1, 0, 0, 700000 } };

/* Every writer call of a run on cap: with half, stop after the first batch
 * (a stream cut there); with big, a second thread whose timeline, memory
 * events and samples fill several blocks over many commits (blocks
 * rewritten while open, then the next ones started). */
static int write_run(struct cygprof_capture *cap, int half, int big)
{
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
	rc |= cygprof_capture_begin(cap);
	rc |= cygprof_capture_set_meta(cap, "command", "prog arg");
	rc |= cygprof_capture_set_meta(cap, "mode", "profile+timeline+memory");
	rc |= cygprof_capture_put_proc(cap, &p);
	rc |= cygprof_capture_put_thread(cap, &t);
	rc |= cygprof_capture_put_object(cap, &ob);
	rc |= cygprof_capture_commit(cap);
	rc |= cygprof_capture_publish(cap);
	if (half)
		return rc;
	rc |= cygprof_capture_begin(cap);
	rc |= cygprof_capture_put_tree(cap, 0, nodes, N(nodes));
	rc |= cygprof_capture_put_sites(cap, 0, sites, N(sites));
	rc |= cygprof_capture_append_events(cap, 0, events, N(events));
	rc |= cygprof_capture_put_symbol(cap, &sym1);
	rc |= cygprof_capture_put_symbol(cap, &sym2);
	rc |= cygprof_capture_put_stacks(cap, stacks, N(stacks));
	rc |= cygprof_capture_append_mem(cap, 0, mem, N(mem));
	rc |= cygprof_capture_put_counter(cap, &c);
	rc |= cygprof_capture_append_samples(cap, 0, samples, N(samples));
	rc |= cygprof_capture_append_psamples(cap, psamples, N(psamples));
	rc |= cygprof_capture_append_offcpu(cap, offcpu, N(offcpu));
	rc |= cygprof_capture_put_cpu(cap, &cpu, cpu_nodes, N(cpu_nodes));
	rc |= cygprof_capture_commit(cap);
	if (big) {
		/* thread 1: 60 commits of 3000 events, memory events and
		 * samples each (some 750 KB of encoded events) */
		enum { PER = 3000 };
		static struct cygprof_event ev[PER];
		static struct cygprof_mem_event me[PER];
		static struct cygprof_sample sa[PER];
		static struct cygprof_node tree[5000];
		uint64_t ts = 1000;
		t.idx = 1;
		t.tid = 43;
		t.calls = 60 * PER;
		t.events = 60 * PER;
		for (size_t i = 1; i < N(tree); i++)
			tree[i] = (struct cygprof_node){ (uint32_t)(i - 1) / 2, 0, 0x401000 + i,
							 0x400000 + i, i, i * 10 };
		tree[0].parent = CYGPROF_NONE;
		for (int round = 0; round < 60; round++) {
			for (size_t i = 0; i < PER; i++, ts += 1 + i % 7) {
				ev[i] = (struct cygprof_event){ ts, (uint32_t)(i % 4999 + 1),
								(uint32_t)(i & 1) };
				me[i] = (struct cygprof_mem_event){
					ts, 0x20000 + 16 * (i % 100), (i & 1) ? 0 : 32 + i % 50,
					(i & 1) ? 0 : 1 + (uint32_t)(i % 3),
					(uint8_t)(i & 1), (i & 1) ? CYGPROF_FN_FREE : CYGPROF_FN_MALLOC, 0
				};
				sa[i] = (struct cygprof_sample){ ts, (int64_t)(i * 13 % 1001) - 500 };
			}
			rc |= cygprof_capture_begin(cap);
			rc |= cygprof_capture_append_events(cap, 1, ev, PER);
			rc |= cygprof_capture_append_mem(cap, 1, me, PER);
			rc |= cygprof_capture_append_samples(cap, 0, sa, PER);
			if (round % 10 == 0) {
				rc |= cygprof_capture_put_thread(cap, &t);
				rc |= cygprof_capture_put_tree(cap, 1, tree, N(tree));
			}
			rc |= cygprof_capture_commit(cap);
		}
	}
	rc |= cygprof_capture_begin(cap);
	rc |= cygprof_capture_set_meta(cap, "complete", "1");
	rc |= cygprof_capture_commit(cap);
	rc |= cygprof_capture_close(cap);
	return rc;
}

/* The frames of a run: a stream capture into e (no flush: e->buf). */
static int encode_run(struct netp_enc *e, int half, int big)
{
	struct cygprof_capture *cap;
	int rc = cygprof_capture_create_stream(&netp_stream, e, &cap);

	if (rc)
		return rc;
	rc = write_run(cap, half, big);
	if (half)
		cygprof_capture_discard(cap); /* no END: a stream cut there */
	return rc;
}

/* The same run written directly into a capture at path. */
static int direct_run(const char *path, int big)
{
	struct cygprof_capture *cap;
	int rc = cygprof_capture_create(path, &cap);

	return rc ? rc : write_run(cap, 0, big);
}

/* What `cygprof receive` does with a byte stream, compression agreed:
 * replay its frames into a new capture at path.  Returns NETP_DONE_END or NETP_DONE_ABORT at an
 * end, else (the bytes ran out, 0, or a frame was refused, < 0, with its
 * line in err) keeps what arrived: commit, "remote_error", publish, close. */
static int replay(const uint8_t *p, size_t n, const char *path, char *err, size_t errlen)
{
	struct netp_rx rx = { .zwlog = NETP_ZWLOG };
	size_t off = 0;
	int rc = cygprof_capture_create(path, &rx.cap);

	if (rc < 0)
		return rc;
	for (;;) {
		uint32_t type, plen;
		const uint8_t *payload;
		long fl = netp_frame(p + off, n - off, &type, &payload, &plen);
		if (fl < 0) {
			snprintf(rx.err, sizeof rx.err, "malformed frame header");
			rc = (int)fl;
			break;
		}
		if (fl == 0) {
			snprintf(rx.err, sizeof rx.err, "connection lost");
			rc = 0;
			break;
		}
		rc = netp_rx_frame(&rx, p + off, payload);
		off += (size_t)fl;
		if (rc != NETP_DONE_MORE)
			break;
	}
	snprintf(err, errlen, "%s", rc < 0 ? rx.err : "");
	if (!rx.ended) {
		if (rx.in_batch)
			cygprof_capture_commit(rx.cap);
		cygprof_capture_set_meta(rx.cap, "remote_error", rx.err);
		cygprof_capture_publish(rx.cap);
		cygprof_capture_close(rx.cap);
	}
	netp_rx_free(&rx);
	return rc;
}

static const char *const db_names[] = { "meta",	   "procs",    "threads", "trees",
					"timeline", "objects",  "symbols", "mem",
					"stacks",   "sites",    "counters", "samples",
					"psamples", "offcpu" };

struct text {
	char *p;
	size_t n, cap;
};

static void text_add(struct text *t, const char *tag, const void *v, size_t n)
{
	static const char hexd[] = "0123456789abcdef";
	size_t need = t->n + strlen(tag) + 2 * n + 3;

	if (need > t->cap) {
		size_t cap = t->cap ? t->cap : 4096;
		while (cap < need)
			cap *= 2;
		char *q = realloc(t->p, cap);
		if (!q)
			return;
		t->p = q;
		t->cap = cap;
	}
	t->n += (size_t)sprintf(t->p + t->n, "%s ", tag);
	for (size_t i = 0; i < n; i++) {
		t->p[t->n++] = hexd[((const uint8_t *)v)[i] >> 4];
		t->p[t->n++] = hexd[((const uint8_t *)v)[i] & 15];
	}
	t->p[t->n++] = '\n';
	t->p[t->n] = 0;
}

/* Every key and value of every DB of the capture at path, in hex, one
 * line each (LMDB read directly: what is stored, checksums included). */
static char *contents(const char *path)
{
	struct text t = { 0 };
	MDB_env *env;
	MDB_txn *txn;
	int rc = mdb_env_create(&env);

	if (rc)
		return NULL;
	mdb_env_set_maxdbs(env, 16);
	rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK, 0);
	if (!rc)
		rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
	for (size_t d = 0; !rc && d < N(db_names); d++) {
		MDB_dbi dbi;
		MDB_cursor *cur;
		MDB_val k, v;
		if (mdb_dbi_open(txn, db_names[d], 0, &dbi) || mdb_cursor_open(txn, dbi, &cur)) {
			text_add(&t, "missing DB", db_names[d], strlen(db_names[d]));
			continue;
		}
		for (int r = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !r;
		     r = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			text_add(&t, db_names[d], k.mv_data, k.mv_size);
			text_add(&t, "=", v.mv_data, v.mv_size);
		}
		mdb_cursor_close(cur);
	}
	if (!rc)
		mdb_txn_abort(txn);
	mdb_env_close(env);
	return t.p;
}

static int add_events(const struct cygprof_event *ev, size_t n, void *data)
{
	text_add(data, "events", ev, n * sizeof(*ev));
	return 0;
}

/* The records of every event block stream of the capture at path, as the
 * reader gives them (threads and counters 0 to 3). */
static char *streams(const char *path)
{
	struct text t = { 0 };
	struct cygprof_capture *cap;
	void *v;
	size_t n;

	if (cygprof_capture_open(path, &cap))
		return NULL;
	for (uint32_t i = 0; i < 4; i++) {
		struct cygprof_mem_cursor *cur;
		struct cygprof_mem_event me;
		CHECK_EQ_INT(cygprof_capture_foreach_event(cap, i, add_events, &t), 0);
		CHECK_EQ_INT(cygprof_mem_cursor_open(cap, i, &cur), 0);
		while (cur && cygprof_mem_cursor_next(cur, &me) == 1)
			text_add(&t, "mem", &me, sizeof me);
		cygprof_mem_cursor_close(cur);
		if (!cygprof_capture_get_samples(cap, i, (struct cygprof_sample **)&v, &n)) {
			text_add(&t, "samples", v, n * sizeof(struct cygprof_sample));
			free(v);
		}
	}
	if (!cygprof_capture_get_psamples(cap, (struct cygprof_psample **)&v, &n)) {
		text_add(&t, "psamples", v, n * sizeof(struct cygprof_psample));
		free(v);
	}
	if (!cygprof_capture_get_offcpu(cap, (struct cygprof_offcpu **)&v, &n)) {
		text_add(&t, "offcpu", v, n * sizeof(struct cygprof_offcpu));
		free(v);
	}
	cygprof_capture_close(cap);
	return t.p;
}

static void check_same_text(const char *a, const char *b, char *x, char *y)
{
	CHECK(x && y);
	if (x && y && strcmp(x, y)) {
		size_t i = 0;
		while (x[i] && x[i] == y[i])
			i++;
		while (i && x[i - 1] != '\n')
			i--;
		CHECK_FAIL_("%s and %s differ at:\n# %.200s\n# %.200s", a, b, x + i, y + i);
	}
	free(x);
	free(y);
}

/* The two captures hold the same keys and values in every DB, and give
 * the same records. */
static void check_same(const char *a, const char *b)
{
	check_same_text(a, b, contents(a), contents(b));
	check_same_text(a, b, streams(a), streams(b));
}

/* The small run's records, read back from the capture at path. */
static void check_read(const char *path)
{
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
	CHECK(n >= 1);
	if (n >= 1) {
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
	CHECK(n >= N(samples) && !memcmp(sa, samples, sizeof samples));
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

	struct cygprof_cpu cr;
	struct cygprof_cpu_node *cn;
	CHECK_EQ_INT(cygprof_capture_get_cpu(cap, 0, &cr, &cn, &n), 0);
	CHECK(!memcmp(&cr, &cpu, sizeof cpu));
	CHECK_EQ_U64(n, N(cpu_nodes));
	CHECK(n == N(cpu_nodes) && !memcmp(cn, cpu_nodes, sizeof cpu_nodes));
	free(cn);
	cygprof_capture_close(cap);
}

/* Every call through a stream capture, the frames and put_value into a
 * capture: the same DBs, keys and values as a direct write, which read
 * back as written; with max_frame, values are split in parts and joined. */
static void roundtrip(uint32_t max_frame, int big, const char *name)
{
	struct netp_enc e = { .max_frame = max_frame };
	char err[600] = "", rname[64], dname[64];

	snprintf(rname, sizeof rname, "%s.recv", name);
	snprintf(dname, sizeof dname, "%s.direct", name);
	const char *recv = tmp_path(rname), *direct = tmp_path(dname);
	CHECK_EQ_INT(encode_run(&e, 0, big), 0);
	CHECK_EQ_INT(direct_run(direct, big), 0);
	size_t parts = 0, puts = 0, again = 0, most = 0, blocks = 0, lastlen = 0;
	uint8_t *last = NULL;
	for (size_t off = 0; off < e.len;) {
		uint32_t type, plen;
		const uint8_t *pl;
		long fl = netp_frame(e.buf + off, e.len - off, &type, &pl, &plen);
		CHECK(fl > 0);
		if (fl <= 0)
			break;
		CHECK(plen <= (max_frame ? max_frame : NETP_MAX_FRAME));
		parts += e.buf[off + 6] == NETP_F_MORE;
		puts += type == NETP_T_PUT;
		/* thread 1's timeline blocks (the big run, unsplit): how often
		 * each is put again; each put stored (a zstd frame of raw blocks
		 * after the 16-byte header, its 9-byte frame header and 3-byte
		 * block header) repeats the events of the one before */
		if (type == NETP_T_PUT && e.buf[off + 6] == 0 && pl[0] == CYGPROF_DB_TIMELINE &&
		    pl[2] == 8 && pl[7] == 1 && !max_frame) {
			const uint8_t *v = pl + 12;
			size_t vlen = plen - 12, raw = v[12] | v[13] << 8 | (size_t)v[14] << 16;
			CHECK(vlen == 16 + 9 + raw + 3 * (raw / (128 << 10) + 1));
			again = last && !memcmp(last, pl, 12) ? again + 1 : 1;
			if (again > 1)
				CHECK(lastlen <= plen && !memcmp(last + 12 + 28, v + 28,
								 lastlen - 12 - 28));
			blocks += again == 1;
			most = again > most ? again : most;
			free(last);
			last = malloc(plen);
			if (last)
				memcpy(last, pl, plen);
			lastlen = plen;
		}
		off += (size_t)fl;
	}
	free(last);
	CHECK(puts > 15);
	/* an open block is put again at each commit until half full, then
	 * the next one starts (about 9 KB a commit: 14 commits to 128 KiB) */
	if (big && !max_frame)
		CHECK(most >= 10 && blocks >= 4);
	if (max_frame)
		CHECK(parts > 10); /* trees, sites, blocks: more than a frame */
	else
		CHECK_EQ_U64(parts, 0);
	CHECK_EQ_INT(replay(e.buf, e.len, recv, err, sizeof err), NETP_DONE_END);
	CHECK_EQ_STR(err, "");
	netp_enc_free(&e);
	check_same(direct, recv);
	check_read(recv);
}

static void test_roundtrip(void)
{
	roundtrip(0, 0, "rt");
}

/* Many blocks of three streams over many commits: each open block is put
 * again at every commit until it is full, then the next one starts. */
static void test_roundtrip_big(void)
{
	roundtrip(0, 1, "big");
}

/* Frames of at most 40 bytes of payload: every value of more than 32
 * bytes goes in parts. */
static void test_split(void)
{
	roundtrip(40, 0, "split");
	roundtrip(4096, 1, "split-big");
}

static int count_events(const struct cygprof_event *ev, size_t n, void *data)
{
	(void)ev;
	*(size_t *)data += n;
	return 0;
}

/* A stream capture writes nothing and reads nothing. */
static void test_stream_capture(void)
{
	struct netp_enc e = { 0 };
	struct cygprof_capture *cap;
	static const struct cygprof_capture_stream noput = { 0 };
	size_t n = 0;
	char *v;

	CHECK_EQ_INT(cygprof_capture_create_stream(&noput, NULL, &cap), -EINVAL);
	CHECK(cap == NULL);
	CHECK_EQ_INT(cygprof_capture_create_stream(&netp_stream, &e, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_append_events(cap, 0, events, N(events)), 0);
	CHECK_EQ_INT(cygprof_capture_foreach_event(cap, 0, count_events, &n), -EOPNOTSUPP);
	CHECK_EQ_INT(cygprof_capture_get_meta(cap, "x", &v), -EOPNOTSUPP);
	CHECK_EQ_U64(cygprof_capture_file_size(cap), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "schema", "9"), -EPERM);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
	/* the pending block went out at close, then END */
	CHECK(e.len > 2 * NETP_HDR && e.buf[4] == NETP_T_PUT);
	CHECK_EQ_INT(e.buf[e.len - NETP_HDR + 4], NETP_T_END);
	netp_enc_free(&e);
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
 * whole stream; a failing flush is the capture's error from then on. */
static void test_flush(void)
{
	struct netp_enc plain = { 0 };
	struct sink_buf b = { 0 };
	struct netp_enc e = { .flush = flush_to, .arg = &b };

	CHECK_EQ_INT(encode_run(&plain, 0, 0), 0);
	CHECK_EQ_INT(encode_run(&e, 0, 0), 0);
	CHECK_EQ_U64(e.len, 0);
	CHECK_EQ_U64(e.sent, plain.len);
	CHECK_EQ_U64(b.n, plain.len);
	CHECK(b.n == plain.len && !memcmp(b.p, plain.buf, b.n));
	CHECK_EQ_INT(b.calls, 5); /* commit, publish, commit, commit, close */
	netp_enc_free(&e);
	netp_enc_free(&plain);
	free(b.p);

	struct sink_buf bad = { .fail = 1 };
	struct netp_enc f = { .flush = flush_to, .arg = &bad };
	struct cygprof_capture *cap;
	CHECK_EQ_INT(cygprof_capture_create_stream(&netp_stream, &f, &cap), 0);
	if (!cap)
		return;
	CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
	CHECK_EQ_INT(cygprof_capture_commit(cap), -EPIPE);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "a", "b"), -EPIPE);
	CHECK_EQ_INT(cygprof_capture_append_events(cap, 0, events, N(events)), -EPIPE);
	CHECK_EQ_INT(cygprof_capture_begin(cap), -EPIPE);
	CHECK_EQ_INT(cygprof_capture_close(cap), -EPIPE);
	netp_enc_free(&f);
}

static void hdr(uint8_t *p, uint32_t len, uint16_t type, uint16_t flags);
static size_t put_frame(uint8_t *f, unsigned flags, unsigned db, const void *key, size_t klen,
			const void *val, size_t vlen);

/* The frames of a stream as they went out, ZBATCH frames expanded (one
 * zstd stream); the ZBATCH frames' zstd bytes joined in *zs (*nz bytes),
 * and *nplain frames outside the stream. */
static size_t unzip_all(const uint8_t *p, size_t n, uint8_t **out, uint8_t **zs, size_t *nz,
			size_t *nplain)
{
	struct netp_rx rx = { .zwlog = NETP_ZWLOG };
	size_t nout = 0;

	*out = *zs = NULL;
	*nz = *nplain = 0;
	for (size_t off = 0; off < n;) {
		uint32_t type, plen;
		const uint8_t *pl;
		long fl = netp_frame(p + off, n - off, &type, &pl, &plen);
		CHECK(fl > 0);
		if (fl <= 0)
			break;
		const uint8_t *add = p + off;
		size_t nadd = (size_t)fl;
		if (type == NETP_T_ZBATCH) {
			CHECK_EQ_INT(netp_unzip(&rx, pl, plen), 0);
			CHECK_EQ_STR(rx.err, "");
			add = rx.zbuf;
			nadd = rx.zlen;
			uint8_t *q = realloc(*zs, *nz + plen);
			if (q) {
				memcpy(q + *nz, pl + 4, plen - 4);
				*zs = q;
				*nz += plen - 4;
			}
		} else {
			++*nplain;
		}
		uint8_t *q = realloc(*out, nout + nadd + 1);
		if (!q)
			break;
		*out = q;
		memcpy(*out + nout, add, nadd);
		nout += nadd;
		off += (size_t)fl;
	}
	netp_rx_free(&rx);
	return nout;
}

/* The next bytes of a zstd stream of window 2^wlog that compresses the n
 * bytes at p (ended with a flush) as a ZBATCH frame in f stating raw
 * bytes: its length. */
static size_t zbatch(void *zc, const void *p, size_t n, uint32_t raw, uint8_t *f, size_t cap)
{
	ZSTD_inBuffer in = { p, n, 0 };
	ZSTD_outBuffer out = { f, cap, NETP_HDR + 4 };
	while (ZSTD_compressStream2(zc, &out, &in, ZSTD_e_flush) > 0)
		;
	hdr(f, (uint32_t)(out.pos - NETP_HDR), NETP_T_ZBATCH, 0);
	memcpy(f + NETP_HDR, &raw, 4);
	return out.pos;
}

/* A receiver of window 2^zwlog fed one frame. */
static int rx_one_frame(struct netp_rx *rx, const uint8_t *f)
{
	rx->err[0] = 0;
	return netp_rx_frame(rx, f, f + NETP_HDR);
}

/* The ZBATCH frames refused in one line each, and what the stream decoder
 * stores at most: its window as agreed. */
static void zbatch_refused(void)
{
	static uint8_t f[1 << 16], body[4096];
	uint8_t begin[NETP_HDR];
	void *zc = ZSTD_createCCtx();
	struct netp_rx rx = { .zwlog = NETP_ZWLOG };
	size_t n;

	hdr(begin, 0, NETP_T_BEGIN, 0);
	/* no compression agreed */
	struct netp_rx plain = { 0 };
	n = zbatch(zc, begin, NETP_HDR, NETP_HDR, f, sizeof f);
	CHECK_EQ_INT(rx_one_frame(&plain, f), -EBADMSG);
	CHECK_EQ_STR(plain.err, "a zbatch frame, but the handshake agreed on no compression");
	netp_rx_free(&plain);
	/* more, or fewer, bytes than it states */
	ZSTD_CCtx_reset(zc, ZSTD_reset_session_only);
	n = zbatch(zc, begin, NETP_HDR, NETP_HDR - 1, f, sizeof f);
	CHECK_EQ_INT(rx_one_frame(&rx, f), -EBADMSG);
	CHECK_EQ_STR(rx.err, "malformed zbatch frame: not the 7 bytes it states");
	netp_rx_free(&rx);
	ZSTD_CCtx_reset(zc, ZSTD_reset_session_only);
	n = zbatch(zc, begin, NETP_HDR, NETP_HDR + 1, f, sizeof f);
	CHECK_EQ_INT(rx_one_frame(&rx, f), -EBADMSG);
	CHECK_EQ_STR(rx.err, "malformed zbatch frame: not the 9 bytes it states");
	netp_rx_free(&rx);
	/* cut: the last byte of the batch missing */
	ZSTD_CCtx_reset(zc, ZSTD_reset_session_only);
	n = zbatch(zc, begin, NETP_HDR, NETP_HDR, f, sizeof f);
	hdr(f, (uint32_t)(n - NETP_HDR - 1), NETP_T_ZBATCH, 0);
	CHECK_EQ_INT(rx_one_frame(&rx, f), -EBADMSG);
	CHECK(strstr(rx.err, "malformed zbatch frame") && !strchr(rx.err, '\n'));
	netp_rx_free(&rx);
	/* garbage; a stated length past NETP_MAX_FRAME */
	uint8_t bad[64] = { 0xff, 0xff, 0xff, 0x7f, 1, 2, 3 };
	CHECK_EQ_INT(netp_unzip(&rx, bad, sizeof bad), -EBADMSG);
	CHECK_EQ_STR(rx.err, "malformed zbatch frame (64 bytes, 2147483647 stated)");
	bad[3] = 0;
	CHECK_EQ_INT(netp_unzip(&rx, bad, sizeof bad), -EBADMSG);
	CHECK(strstr(rx.err, "malformed zbatch frame: ") && !strchr(rx.err, '\n'));
	netp_rx_free(&rx);
	/* a stream of a larger window than agreed: refused before it is
	 * decoded */
	ZSTD_CCtx_reset(zc, ZSTD_reset_session_and_parameters);
	ZSTD_CCtx_setParameter(zc, ZSTD_c_windowLog, NETP_ZWLOG + 1);
	for (size_t i = 0; i < sizeof body; i++)
		body[i] = (uint8_t)(i * 7);
	n = zbatch(zc, body, sizeof body, sizeof body, f, sizeof f);
	CHECK_EQ_INT(rx_one_frame(&rx, f), -EBADMSG);
	CHECK_EQ_STR(rx.err, "the zbatch stream needs a window over the 8388608 bytes agreed");
	netp_rx_free(&rx);
	/* two batches of one stream: the second refers to the first */
	ZSTD_CCtx_reset(zc, ZSTD_reset_session_and_parameters);
	uint8_t meta[NETP_HDR + NETP_PUT_HDR + 1 + sizeof body];
	for (size_t i = 0; i < sizeof body; i++)
		body[i] = (uint8_t)('a' + i % 26);
	size_t mlen = put_frame(meta, 0, CYGPROF_DB_META, "k", 1, body, sizeof body);
	CHECK_EQ_INT(cygprof_capture_create(tmp_path("zz.cap"), &rx.cap), 0);
	n = zbatch(zc, meta, mlen, (uint32_t)mlen, f, sizeof f);
	CHECK(n < 200);
	CHECK_EQ_INT(rx_one_frame(&rx, f), NETP_DONE_MORE);
	n = zbatch(zc, meta, mlen, (uint32_t)mlen, f, sizeof f);
	CHECK(n < 40);
	CHECK_EQ_INT(rx_one_frame(&rx, f), NETP_DONE_MORE);
	CHECK_EQ_U64(rx.zlen, mlen);
	CHECK(rx.zlen == mlen && !memcmp(rx.zbuf, meta, mlen));
	cygprof_capture_discard(rx.cap);
	netp_rx_free(&rx);
	ZSTD_freeCCtx(zc);
}

struct zfail_sink {
	struct sink_buf b;
	struct netp_enc *enc;
	int fail_at; /* the stream fails (no memory) after this many flushes */
};

static int flush_zfail(void *arg, const uint8_t *p, size_t n)
{
	struct zfail_sink *z = arg;
	if (z->b.calls + 1 == z->fail_at)
		z->enc->zfail = 1;
	return flush_to(&z->b, p, n);
}

/* Compression agreed: a flush goes out as one ZBATCH frame, the next
 * bytes of one zstd stream, and the receiver takes it as the frames an
 * uncompressed flush sends; small flushes go outside the stream, the last
 * one ends it.  A block put again costs little more than what it gained. */
static void test_compressed(void)
{
	struct netp_enc plain = { 0 };
	struct sink_buf b = { 0 };
	struct netp_enc z = { .flush = flush_to, .arg = &b, .zwlog = NETP_ZWLOG };
	uint8_t *out, *zs;
	size_t nout, nz, nplain;
	char err[600] = "";

	CHECK_EQ_INT(encode_run(&plain, 0, 1), 0);
	CHECK_EQ_INT(encode_run(&z, 0, 1), 0);
	CHECK_EQ_U64(z.raw, plain.len);
	/* the big run puts thread 1's growing blocks 60 times: some 1.6 MB of
	 * frames, each block stored; what went out is about its events once,
	 * compressed */
	CHECK(z.raw > 1500000);
	CHECK(z.sent * 8 < z.raw);
	nout = unzip_all(b.p, b.n, &out, &zs, &nz, &nplain);
	CHECK(nout == plain.len && !memcmp(out, plain.buf, nout));
	CHECK(nplain > 0); /* the publish: 8 bytes */
	/* the ZBATCH frames are one zstd frame, ended at END */
	CHECK_EQ_U64(ZSTD_findFrameCompressedSize(zs, nz), nz);
	free(out);
	free(zs);
	CHECK_EQ_INT(replay(b.p, b.n, tmp_path("z.recv"), err, sizeof err), NETP_DONE_END);
	CHECK_EQ_STR(err, "");
	CHECK_EQ_INT(direct_run(tmp_path("z.direct"), 1), 0);
	check_same(tmp_path("z.direct"), tmp_path("z.recv"));
	free(b.p);
	netp_enc_free(&z);

	/* the stream fails in the sender (no memory): the batches after go
	 * out as they are, and the receiver stays in step */
	struct zfail_sink zf = { .fail_at = 8 };
	struct netp_enc f = { .flush = flush_zfail, .arg = &zf, .zwlog = NETP_ZWLOG };
	zf.enc = &f;
	CHECK_EQ_INT(encode_run(&f, 0, 1), 0);
	nout = unzip_all(zf.b.p, zf.b.n, &out, &zs, &nz, &nplain);
	CHECK(nout == plain.len && !memcmp(out, plain.buf, nout));
	CHECK(nplain > 50);
	free(out);
	free(zs);
	CHECK_EQ_INT(replay(zf.b.p, zf.b.n, tmp_path("zf.recv"), err, sizeof err), NETP_DONE_END);
	CHECK_EQ_STR(err, "");
	check_same(tmp_path("z.direct"), tmp_path("zf.recv"));
	free(zf.b.p);
	netp_enc_free(&f);
	netp_enc_free(&plain);
	zbatch_refused();
}

/* A stream cut anywhere: never a crash, never a damaged capture; cut after
 * the first batch, the capture keeps it and says what happened, with no
 * "complete". */
static void test_cut(void)
{
	struct netp_enc e = { 0 };
	struct netp_enc half = { 0 };
	char err[600];

	CHECK_EQ_INT(encode_run(&e, 0, 0), 0);
	CHECK_EQ_INT(encode_run(&half, 1, 0), 0);
	/* the half run's stream ends with ABORT (its discard) */
	half.len -= NETP_HDR;
	CHECK(half.len < e.len && !memcmp(half.buf, e.buf, half.len));

	/* Every prefix replays up to its last whole frame into a capture that
	 * opens. */
	for (size_t cut = 0; cut < e.len; cut += 7) {
		struct cygprof_capture *cap;
		CHECK_EQ_INT(replay(e.buf, cut, tmp_path("prefix.cap"), err, sizeof err), 0);
		CHECK_EQ_INT(cygprof_capture_open(tmp_path("prefix.cap"), &cap), 0);
		cygprof_capture_close(cap);
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

static void hdr(uint8_t *p, uint32_t len, uint16_t type, uint16_t flags)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(len >> (8 * i));
	p[4] = (uint8_t)type;
	p[5] = (uint8_t)(type >> 8);
	p[6] = (uint8_t)flags;
	p[7] = (uint8_t)(flags >> 8);
}

/* A PUT frame of (db, key, value) at f: its length. */
static size_t put_frame(uint8_t *f, unsigned flags, unsigned db, const void *key, size_t klen,
			const void *val, size_t vlen)
{
	hdr(f, (uint32_t)(NETP_PUT_HDR + klen + vlen), NETP_T_PUT, (uint16_t)flags);
	f[8] = (uint8_t)db;
	f[9] = (uint8_t)(db >> 8);
	f[10] = (uint8_t)klen;
	f[11] = (uint8_t)(klen >> 8);
	memcpy(f + 12, key, klen);
	if (vlen)
		memcpy(f + 12 + klen, val, vlen);
	return NETP_HDR + NETP_PUT_HDR + klen + vlen;
}

static int put(struct netp_rx *rx, unsigned db, const void *key, size_t klen, const void *val,
	       size_t vlen)
{
	static uint8_t f[1 << 16];
	put_frame(f, 0, db, key, klen, val, vlen);
	rx->err[0] = 0;
	return netp_rx_frame(rx, f, f + NETP_HDR);
}

/* A value the reader would refuse, or out of sequence: refused in one line
 * naming it, and nothing stored. */
static void refused(struct netp_rx *rx, unsigned db, const void *key, size_t klen,
		    const void *val, size_t vlen, const char *want)
{
	CHECK_EQ_INT(put(rx, db, key, klen, val, vlen), CYGPROF_E_CORRUPT);
	if (!strstr(rx->err, want) || strchr(rx->err, '\n'))
		CHECK_FAIL_("\"%s\" does not say \"%s\"", rx->err, want);
}

/* The value bytes the writer makes for one call, caught from a stream
 * capture: the first put of db. */
struct caught {
	unsigned db;
	uint8_t key[16], val[4096];
	size_t klen, vlen;
	int got;
};

static int catch_put(void *arg, unsigned db, const void *key, size_t klen, const void *val,
		     size_t vlen)
{
	struct caught *c = arg;
	if (c->got || db != c->db || klen > sizeof c->key || vlen > sizeof c->val)
		return 0;
	memcpy(c->key, key, klen);
	memcpy(c->val, val, vlen);
	c->klen = klen;
	c->vlen = vlen;
	c->got = 1;
	return 0;
}

static const struct cygprof_capture_stream catch_ops = { .put = catch_put };

static void test_malformed(void)
{
	uint8_t f[256] = { 0 };
	uint32_t type, plen;
	const uint8_t *payload;
	unsigned flags;
	char err[200] = "";

	hdr(f, 0, 0, 0);
	CHECK_EQ_INT(netp_frame(f, 8, &type, &payload, &plen), -EBADMSG); /* type 0 */
	hdr(f, 0, NETP_T_COUNT_, 0);
	CHECK_EQ_INT(netp_frame(f, 8, &type, &payload, &plen), -EBADMSG);
	hdr(f, 0, NETP_T_BEGIN, NETP_F_MORE);
	CHECK_EQ_INT(netp_frame(f, 8, &type, &payload, &plen), -EBADMSG); /* flags */
	hdr(f, 0, NETP_T_PUT, 2);
	CHECK_EQ_INT(netp_header(f, &type, &flags, &plen), -EBADMSG);
	hdr(f, NETP_MAX_FRAME + 1, NETP_T_PUT, 0);
	CHECK_EQ_INT(netp_frame(f, 8, &type, &payload, &plen), -EBADMSG); /* too long */
	hdr(f, 4, NETP_T_PUT, NETP_F_MORE);
	CHECK_EQ_INT(netp_frame(f, 10, &type, &payload, &plen), 0); /* needs more */
	CHECK_EQ_INT(netp_frame(f, 12, &type, &payload, &plen), 12);

	struct netp_rx rx = { 0 };
	const char *path = tmp_path("bad.cap");
	CHECK_EQ_INT(cygprof_capture_create(path, &rx.cap), 0);
	if (!rx.cap)
		return;
	/* begin with a payload; unknown types */
	CHECK_EQ_INT(netp_dispatch(NETP_T_BEGIN, f, 1, &rx.cap, err, sizeof err), -EBADMSG);
	CHECK_EQ_STR(err, "malformed begin frame (1 bytes)");
	CHECK_EQ_INT(netp_dispatch(NETP_T_END, f, 1, &rx.cap, err, sizeof err), -EBADMSG);
	CHECK_EQ_INT(netp_dispatch(NETP_T_ABORT, f, 1, &rx.cap, err, sizeof err), -EBADMSG);
	CHECK(rx.cap != NULL); /* still open */
	CHECK_EQ_INT(netp_dispatch(99, f, 0, &rx.cap, err, sizeof err), -EBADMSG);
	CHECK_EQ_STR(err, "unknown frame type 99");
	CHECK_EQ_INT(netp_dispatch(NETP_T_ZBATCH, f, 0, &rx.cap, err, sizeof err), -EBADMSG);
	/* a PUT too short for its header or its key */
	CHECK_EQ_INT(netp_dispatch(NETP_T_PUT, f, 3, &rx.cap, err, sizeof err), -EBADMSG);
	uint8_t p[] = { 0, 0, 9, 0, 'a', 'b' };
	CHECK_EQ_INT(netp_dispatch(NETP_T_PUT, p, sizeof p, &rx.cap, err, sizeof err), -EBADMSG);
	CHECK_EQ_STR(err, "malformed put frame (6 bytes)");
	CHECK_EQ_STR(netp_type_name(NETP_T_PUT), "put");

	uint8_t k4[4] = { 0, 0, 0, 0 }, k8[8] = { 0 }, val[128] = { 0 };
	CHECK_EQ_INT(put(&rx, 16, k4, 4, val, 8), -EINVAL); /* no such DB */
	CHECK(strstr(rx.err, "DB 16") != NULL);
	/* the library's own meta keys, as set_meta refuses them */
	CHECK_EQ_INT(put(&rx, CYGPROF_DB_META, "txn", 3, "1", 1), -EPERM);
	CHECK_EQ_STR(rx.err, "refused meta 'txn': a key of the capture's own");
	CHECK_EQ_INT(put(&rx, CYGPROF_DB_META, "counts", 6, "", 0), -EPERM);
	CHECK_EQ_INT(put(&rx, CYGPROF_DB_META, "a\nb", 3, "", 0), 0); /* an odd key is a key */
	refused(&rx, CYGPROF_DB_META, "k", 1, "a\0b", 3, "meta 'k': a NUL byte");
	CHECK_EQ_INT(put(&rx, CYGPROF_DB_META, "", 0, "v", 1), -EINVAL);
	/* keys of the wrong size */
	refused(&rx, CYGPROF_DB_PROCS, k8, 8, val, 36, "procs: key of 8 bytes");
	refused(&rx, CYGPROF_DB_TIMELINE, k4, 4, val, 16, "timeline: key of 4 bytes");
	/* values too short, or with a string past their end */
	refused(&rx, CYGPROF_DB_PROCS, k4, 4, val, 35, "process 0 record: malformed");
	refused(&rx, CYGPROF_DB_THREADS, k4, 4, val, 99, "thread 0 record: malformed");
	val[36] = 200;
	refused(&rx, CYGPROF_DB_PROCS, k4, 4, val, 44, "process 0 record: malformed");
	memset(val, 0, sizeof val);

	/* a tree stored raw (packed length = its size), then damaged */
	uint8_t tv[4 + 8 + 3 * 40] = { 8 + 3 * 40, 0, 0, 0, 3, 0, 0, 0, 40 };
	for (int i = 0; i < 3; i++)
		tv[12 + 40 * i] = i ? (uint8_t)(i - 1) : 0xff, tv[13] = tv[14] = tv[15] = 0xff;
	CHECK_EQ_INT(put(&rx, CYGPROF_DB_TREES, k4, 4, tv, sizeof tv), 0);
	tv[12 + 2 * 40] = 2; /* node 2's parent: itself */
	refused(&rx, CYGPROF_DB_TREES, k4, 4, tv, sizeof tv,
		"thread 0 call tree: node 2 has parent 2");
	tv[0] = 1; /* the packed length */
	refused(&rx, CYGPROF_DB_TREES, k4, 4, tv, sizeof tv, "thread 0 call tree: malformed");
	struct cygprof_capture *sc;

	/* stack nodes in blocks: the block put last again (as it grows), or
	 * the next one, which starts after it; counters with the next id */
	struct caught s = { .db = CYGPROF_DB_STACKS };
	CHECK_EQ_INT(cygprof_capture_create_stream(&catch_ops, &s, &sc), 0);
	CHECK_EQ_INT(cygprof_capture_put_stacks(sc, stacks, 1), 0);
	cygprof_capture_close(sc);
	CHECK(s.got);
	CHECK_EQ_INT(put(&rx, s.db, s.key, s.klen, s.val, s.vlen), 0);
	CHECK_EQ_INT(put(&rx, s.db, s.key, s.klen, s.val, s.vlen), 0);
	s.key[3] = 2;
	refused(&rx, s.db, s.key, s.klen, s.val, s.vlen,
		"stack block 2: out of sequence (block 1 expected)");
	s.key[3] = 1;
	refused(&rx, s.db, s.key, s.klen, s.val, s.vlen, "stack block 1: first node 1, 2 expected");
	/* first 1, count 1, raw length, the 4 stream lengths, PARENT, PROC,
	 * KIND: an unknown kind */
	s.key[3] = 0;
	s.val[18] = 9;
	refused(&rx, s.db, s.key, s.klen, s.val, s.vlen, "stack block 0: malformed");
	struct caught ct = { .db = CYGPROF_DB_COUNTERS };
	struct cygprof_counter cnt = { 0, CYGPROF_NONE, CYGPROF_UNIT_COUNT, 0, (char *)"x/y" };
	CHECK_EQ_INT(cygprof_capture_create_stream(&catch_ops, &ct, &sc), 0);
	CHECK_EQ_INT(cygprof_capture_put_counter(sc, &cnt), 0);
	cygprof_capture_close(sc);
	ct.key[3] = 1;
	refused(&rx, ct.db, ct.key, ct.klen, ct.val, ct.vlen, "counter 1 record: out of sequence");
	ct.key[3] = 0;
	CHECK_EQ_INT(put(&rx, ct.db, ct.key, ct.klen, ct.val, ct.vlen), 0);

	/* event blocks: dense, the open one rewritten or the next one, time
	 * going on; memory stacks put before */
	struct caught b = { .db = CYGPROF_DB_TIMELINE };
	CHECK_EQ_INT(cygprof_capture_create_stream(&catch_ops, &b, &sc), 0);
	CHECK_EQ_INT(cygprof_capture_append_events(sc, 0, events, N(events)), 0);
	cygprof_capture_close(sc);
	CHECK(b.got);
	b.key[7] = 1;
	refused(&rx, b.db, b.key, b.klen, b.val, b.vlen,
		"thread 0 timeline block 1: out of sequence (block 0 expected)");
	b.key[7] = 0;
	CHECK_EQ_INT(put(&rx, b.db, b.key, b.klen, b.val, b.vlen), 0);
	CHECK_EQ_INT(put(&rx, b.db, b.key, b.klen, b.val, b.vlen), 0); /* rewritten */
	b.key[7] = 2;
	refused(&rx, b.db, b.key, b.klen, b.val, b.vlen, "block 2: out of sequence (block 0 put last)");
	b.key[7] = 1; /* the next block starts at 10, before the last event (1010) */
	refused(&rx, b.db, b.key, b.klen, b.val, b.vlen, "thread 0 timeline block 1: time goes back");
	b.val[1] ^= 0x40; /* the count */
	refused(&rx, b.db, b.key, b.klen, b.val, b.vlen, "thread 0 timeline block 1: malformed");
	b.val[1] ^= 0x40;
	/* any thread index: what is kept per stream does not grow with it */
	b.key[0] = b.key[1] = b.key[2] = 0xff;
	b.key[7] = 0;
	CHECK_EQ_INT(put(&rx, b.db, b.key, b.klen, b.val, b.vlen), 0);
	b.key[0] = b.key[1] = b.key[2] = 0;
	struct caught m = { .db = CYGPROF_DB_MEM };
	CHECK_EQ_INT(cygprof_capture_create_stream(&catch_ops, &m, &sc), 0);
	CHECK_EQ_INT(cygprof_capture_append_mem(sc, 0, mem, N(mem)), 0); /* stack 2 */
	cygprof_capture_close(sc);
	refused(&rx, m.db, m.key, m.klen, m.val, m.vlen, "thread 0 memory block 0: stack 2 not put");
	struct caught sm = { .db = CYGPROF_DB_SAMPLES };
	CHECK_EQ_INT(cygprof_capture_create_stream(&catch_ops, &sm, &sc), 0);
	CHECK_EQ_INT(cygprof_capture_put_counter(sc, &cnt), 0);
	CHECK_EQ_INT(cygprof_capture_append_samples(sc, 0, samples, N(samples)), 0);
	cygprof_capture_close(sc);
	sm.key[3] = 1;
	refused(&rx, sm.db, sm.key, sm.klen, sm.val, sm.vlen, "counter 1 samples block 0: no such counter");
	struct caught ps = { .db = CYGPROF_DB_PSAMPLES };
	CHECK_EQ_INT(cygprof_capture_create_stream(&catch_ops, &ps, &sc), 0);
	CHECK_EQ_INT(cygprof_capture_append_psamples(sc, psamples, N(psamples)), 0);
	cygprof_capture_close(sc);
	ps.key[3] = 1;
	refused(&rx, ps.db, ps.key, ps.klen, ps.val, ps.vlen, "perf samples block 0: not of stream 0");

	/* a split value: parts of one value only, nothing else in between */
	uint8_t f1[64], f2[64];
	put_frame(f1, NETP_F_MORE, CYGPROF_DB_META, "k", 1, "ab", 2);
	put_frame(f2, 0, CYGPROF_DB_META, "j", 1, "cd", 2);
	CHECK_EQ_INT(netp_rx_frame(&rx, f1, f1 + NETP_HDR), 0);
	CHECK_EQ_INT(netp_rx_frame(&rx, f2, f2 + NETP_HDR), -EBADMSG);
	CHECK_EQ_STR(rx.err, "a part of another value inside a split value");
	rx.plen = 0;
	hdr(f2, 0, NETP_T_COMMIT, 0);
	CHECK_EQ_INT(netp_rx_frame(&rx, f1, f1 + NETP_HDR), 0);
	CHECK_EQ_INT(netp_rx_frame(&rx, f2, f2 + NETP_HDR), -EBADMSG);
	CHECK_EQ_STR(rx.err, "a commit frame inside a split value");
	rx.plen = 0;
	put_frame(f2, 0, CYGPROF_DB_META, "k", 1, "cd", 2);
	CHECK_EQ_INT(netp_rx_frame(&rx, f1, f1 + NETP_HDR), 0);
	CHECK_EQ_INT(netp_rx_frame(&rx, f2, f2 + NETP_HDR), 0);
	/* --max-bytes: the capture's size (a file of a few pages already),
	 * after the frame that made it pass */
	rx.max = cygprof_capture_file_size(rx.cap);
	CHECK(rx.max > 4096);
	CHECK_EQ_INT(put(&rx, CYGPROF_DB_META, "m", 1, "x", 1), 0);
	rx.max = 4096;
	CHECK_EQ_INT(put(&rx, CYGPROF_DB_META, "m", 1, "y", 1), -EFBIG);
	CHECK_EQ_STR(rx.err, "the capture passed --max-bytes 4096");

	/* what was accepted reads back; what was refused left nothing */
	CHECK_EQ_INT(cygprof_capture_close(rx.cap), 0);
	netp_rx_free(&rx);
	struct cygprof_capture *cap;
	CHECK_EQ_INT(cygprof_capture_open(path, &cap), 0);
	if (cap) {
		char *v = NULL;
		struct cygprof_node *t;
		struct cygprof_proc *pr;
		struct cygprof_stack_node *st;
		size_t n;
		CHECK_EQ_INT(cygprof_capture_get_meta(cap, "k", &v), 0);
		CHECK_EQ_STR(v, "abcd");
		free(v);
		CHECK_EQ_INT(cygprof_capture_get_tree(cap, 0, &t, &n), 0);
		CHECK(n == 3 && t[0].parent == CYGPROF_NONE && t[2].parent == 1);
		free(t);
		CHECK_EQ_INT(cygprof_capture_get_procs(cap, &pr, &n), 0);
		CHECK_EQ_U64(n, 0);
		CHECK_EQ_INT(cygprof_capture_get_stacks(cap, &st, &n), 0);
		CHECK_EQ_U64(n, 1);
		free(st);
		n = 0;
		CHECK_EQ_INT(cygprof_capture_foreach_event(cap, 0, count_events, &n), 0);
		CHECK_EQ_U64(n, N(events));
		cygprof_capture_close(cap);
	}
}

/* Every reader call on the capture at path: 0 when all succeed, else the
 * first error.  (A thread record with more events than calls make is no
 * error: the reader trims its events to what its calls make.) */
static int read_all(const char *path)
{
	struct cygprof_capture *cap;
	struct cygprof_thread *th = NULL;
	struct cygprof_counter *ctr = NULL;
	size_t nth = 0, nctr = 0, n;
	int rc = cygprof_capture_open(path, &cap);

	if (rc)
		return rc;
	void *v;
	struct cygprof_proc *procs;
	if (!rc && !(rc = cygprof_capture_get_procs(cap, &procs, &n)))
		cygprof_procs_free(procs, n);
	rc = rc ? rc : cygprof_capture_get_threads(cap, &th, &nth);
	struct cygprof_object *objs;
	if (!rc && !(rc = cygprof_capture_get_objects(cap, &objs, &n)))
		cygprof_objects_free(objs, n);
	if (!rc && !(rc = cygprof_capture_get_stacks(cap, (struct cygprof_stack_node **)&v, &n)))
		free(v);
	rc = rc ? rc : cygprof_capture_get_counters(cap, &ctr, &nctr);
	if (!rc && !(rc = cygprof_capture_get_psamples(cap, (struct cygprof_psample **)&v, &n)))
		free(v);
	if (!rc && !(rc = cygprof_capture_get_offcpu(cap, (struct cygprof_offcpu **)&v, &n)))
		free(v);
	for (uint32_t i = 0; !rc && i < 4; i++) {
		struct cygprof_cpu cr;
		int e = cygprof_capture_get_cpu(cap, i, &cr, (struct cygprof_cpu_node **)&v, &n);
		if (!e)
			free(v);
		else if (e != CYGPROF_E_NOTFOUND)
			rc = e;
	}
	for (uint32_t i = 0; !rc && i < 4; i++) {
		struct cygprof_symbol *syms;
		struct cygprof_mem_cursor *cur;
		struct cygprof_mem_event me;
		if (!(rc = cygprof_capture_get_tree(cap, i, (struct cygprof_node **)&v, &n)))
			free(v);
		if (!rc && !(rc = cygprof_capture_get_sites(cap, i, (struct cygprof_callsite **)&v, &n)))
			free(v);
		n = 0;
		rc = rc ? rc : cygprof_capture_foreach_event(cap, i, count_events, &n);
		if (!rc && !(rc = cygprof_capture_get_symbols(cap, i, &syms, &n)))
			cygprof_symbols_free(syms, n);
		if (!rc && !(rc = cygprof_mem_cursor_open(cap, i, &cur))) {
			int r;
			while ((r = cygprof_mem_cursor_next(cur, &me)) == 1)
				;
			rc = r;
			cygprof_mem_cursor_close(cur);
		}
		if (!rc && !(rc = cygprof_capture_get_samples(cap, i, (struct cygprof_sample **)&v, &n)))
			free(v);
	}
	free(th);
	cygprof_counters_free(ctr, nctr);
	cygprof_capture_close(cap);
	return rc;
}

/* A sender that lies: the stream at p (n bytes) with bytes changed or
 * dropped, rounds times.  Whatever the receiver accepts before it stops
 * leaves a capture that opens and reads without damage; a refusal is one
 * line.  The refusals. */
static int mutate(const uint8_t *p, size_t len, int rounds, uint64_t seed)
{
	char err[600];
	int refusals = 0;
	uint8_t *buf = malloc(len + 64);

	if (!buf)
		return 0;
	for (int round = 0; round < rounds; round++) {
		size_t n = len;
		memcpy(buf, p, n);
		for (int k = 0; k < 1 + round % 4; k++) {
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			size_t at = seed % n;
			switch (seed >> 60 & 3) {
			case 0: /* a byte changed */
			case 1:
				buf[at] ^= (uint8_t)(1u << (seed >> 40 & 7));
				break;
			case 2: /* a byte dropped */
				memmove(buf + at, buf + at + 1, n - at - 1);
				n--;
				break;
			default: /* a byte set */
				buf[at] = (uint8_t)(seed >> 32);
				break;
			}
		}
		int rc = replay(buf, n, tmp_path("mut.cap"), err, sizeof err);
		refusals += rc < 0;
		if (rc < 0 && (!err[0] || strchr(err, '\n')))
			CHECK_FAIL_("round %d: refused without one line: '%s'", round, err);
		if (rc == NETP_DONE_ABORT)
			continue;
		rc = read_all(tmp_path("mut.cap"));
		if (rc)
			CHECK_FAIL_("round %d: the capture received reads as %s", round,
				    cygprof_strerror(rc));
	}
	free(buf);
	return refusals;
}

/* Streams with bytes changed, dropped or repeated, plain and compressed
 * (the stream decoder refuses what does not decode, in one line). */
static void test_mutated(void)
{
	struct netp_enc e = { 0 };
	struct sink_buf b = { 0 };
	struct netp_enc z = { .flush = flush_to, .arg = &b, .zwlog = NETP_ZWLOG };

	CHECK_EQ_INT(encode_run(&e, 0, 0), 0);
	CHECK(mutate(e.buf, e.len, 400, 0x9e3779b97f4a7c15ull) > 100);
	CHECK_EQ_INT(encode_run(&z, 0, 0), 0);
	CHECK(b.n > 0 && b.n < e.len);
	CHECK(mutate(b.p, b.n, 200, 0x2545f4914f6cdd1dull) > 100);
	free(b.p);
	netp_enc_free(&z);
	netp_enc_free(&e);
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

/* The server side (window at most smax) in a child over a socketpair; its
 * result as exit code, the window it agreed to as the client's. */
static void handshake_case(const char *ctok, const char *stok, unsigned offer, unsigned smax,
			   int want_c, int want_s, unsigned want_zwlog)
{
	int sv[2];
	char err[300] = "";
	unsigned zc = 99, zs = 99;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		CHECK_FAIL_("socketpair: %s", strerror(errno));
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		int rc = net_handshake_server(sv[1], (const uint8_t *)stok, strlen(stok), smax, &zs,
					      5000, err, sizeof err);
		_exit(rc == -EACCES ? 1 : rc ? 2 : zs == want_zwlog ? 0 : 3);
	}
	close(sv[1]);
	int rc = net_handshake_client(sv[0], (const uint8_t *)ctok, strlen(ctok), offer, &zc, 5000,
				      err, sizeof err);
	CHECK_EQ_INT(rc, want_c);
	if (!rc)
		CHECK_EQ_INT(zc, want_zwlog);
	close(sv[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st));
	CHECK_EQ_INT(WEXITSTATUS(st), want_s);
}

static void test_handshake(void)
{
	handshake_case("0123456789abcdef", "0123456789abcdef", NETP_ZWLOG, NETP_ZWLOG, 0, 0,
		       NETP_ZWLOG);
	handshake_case("0123456789abcdeX", "0123456789abcdef", NETP_ZWLOG, NETP_ZWLOG, -EACCES, 1,
		       NETP_ZWLOG);
	/* compression: both sides agree on the smaller window, or none */
	handshake_case("0123456789abcdef", "0123456789abcdef", 0, NETP_ZWLOG, 0, 0, 0);
	handshake_case("0123456789abcdef", "0123456789abcdef", NETP_ZWLOG, 20, 0, 0, 20);
	handshake_case("0123456789abcdef", "0123456789abcdef", 20, NETP_ZWLOG, 0, 0, 20);
	handshake_case("0123456789abcdef", "0123456789abcdef", NETP_ZWLOG, 0, 0, 0, 0);
	handshake_case("0123456789abcdef", "0123456789abcdef", 5, NETP_ZWLOG, 0, 0, 0);
	handshake_case("0123456789abcdef", "0123456789abcdef", 40, NETP_ZWLOG, 0, 0, 0);

	/* A peer that is not cygprof. */
	int sv[2];
	unsigned zw;
	char err[300] = "";
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return;
	CHECK_EQ_INT(write(sv[0], "GET / HTTP/1.0\r\n", 16), 16);
	CHECK_EQ_INT(net_handshake_server(sv[1], (const uint8_t *)"0123456789abcdef", 16,
					  NETP_ZWLOG, &zw, 5000, err, sizeof err),
		     -EPROTO);
	CHECK_EQ_STR(err, "the peer is not cygprof record --send");
	close(sv[0]);
	/* A peer that hangs up. */
	CHECK_EQ_INT(net_handshake_server(sv[1], (const uint8_t *)"0123456789abcdef", 16,
					  NETP_ZWLOG, &zw, 5000, err, sizeof err),
		     -EPIPE);
	close(sv[1]);

	/* A receiver that agrees to a window the sender did not offer. */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return;
	uint8_t reply[16 + 32] = "CYGPNET\n\5\0\0\0\x18\0\0\0";
	CHECK_EQ_INT(write(sv[1], reply, sizeof reply), (int)sizeof reply);
	CHECK_EQ_INT(net_handshake_client(sv[0], (const uint8_t *)"0123456789abcdef", 16,
					  NETP_ZWLOG, &zw, 5000, err, sizeof err),
		     -EPROTO);
	CHECK_EQ_STR(err, "the receiver agreed to a compression window (24) this sender did not "
			  "offer");
	close(sv[0]);
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

static const char *corpus; /* fuzz/corpus-net (argv[1]) */

/* The seeds of fuzz-net are real streams of record --send: each one is
 * received whole into a capture that reads without damage. */
static void test_corpus(void)
{
	static const char *const seeds[] = { "calls.net", "timeline.net", "memory.net",
					     "counters.net", "sample.net", "timeline-z.net",
					     "memory-z.net", "split.net" };
	char path[PATH_MAX + 64], err[600];

	if (!corpus) {
		CHECK_FAIL_("%s", "no corpus directory given");
		return;
	}
	for (size_t i = 0; i < N(seeds); i++) {
		FILE *f;
		uint8_t *buf;
		long n;
		snprintf(path, sizeof path, "%s/%s", corpus, seeds[i]);
		f = fopen(path, "rb");
		if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET)) {
			CHECK_FAIL_("%s: cannot read", path);
			if (f)
				fclose(f);
			continue;
		}
		buf = malloc((size_t)n);
		if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
			int rc = replay(buf, (size_t)n, tmp_path("seed.cap"), err, sizeof err);
			if (rc != NETP_DONE_END)
				CHECK_FAIL_("%s: %d %s", seeds[i], rc, err);
			rc = read_all(tmp_path("seed.cap"));
			if (rc)
				CHECK_FAIL_("%s: %s", seeds[i], cygprof_strerror(rc));
		}
		free(buf);
		fclose(f);
	}
}

/* A sender of the protocol before this one is refused in one line. */
static void test_old_version(void)
{
	int sv[2];
	char err[300] = "";
	uint8_t hello[12] = "CYGPNET\n\1\0\0\0", reply[12];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return;
	CHECK_EQ_INT(write(sv[0], hello, sizeof hello), 12);
	unsigned zw;
	CHECK_EQ_INT(net_handshake_server(sv[1], (const uint8_t *)"0123456789abcdef", 16,
					  NETP_ZWLOG, &zw, 5000, err, sizeof err),
		     -EPROTO);
	CHECK_EQ_STR(err, "the sender speaks protocol 1, this receiver 5");
	CHECK_EQ_INT(read(sv[0], reply, sizeof reply), 12);
	CHECK(!memcmp(reply, "CYGPNET\n\5\0\0\0", 12));
	close(sv[0]);
	close(sv[1]);
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One deadline for the whole handshake: a peer sending its hello a byte
 * every 20 ms (each well within 200 ms) is dropped once 200 ms passed. */
static void test_handshake_deadline(void)
{
	int sv[2];
	char err[300] = "";
	unsigned zw;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[1]);
		for (int i = 0; i < 12; i++) {
			struct timespec d = { 0, 20 * 1000000L };
			if (write(sv[0], &NETP_MAGIC "\3\0\0\0"[i], 1) != 1)
				_exit(0);
			nanosleep(&d, NULL);
		}
		_exit(0);
	}
	close(sv[0]);
	double t0 = mono_s();
	CHECK_EQ_INT(net_handshake_server(sv[1], (const uint8_t *)"0123456789abcdef", 16,
					  NETP_ZWLOG, &zw, 200, err, sizeof err),
		     -ETIMEDOUT);
	double dt = mono_s() - t0;
	CHECK(dt >= 0.19 && dt < 2.0);
	/* a timeout per read would have let the hello in (12 x 20 ms) */
	CHECK_EQ_STR(err, "handshake not done within 200 ms (hello)");
	close(sv[1]);
	waitpid(pid, NULL, 0);
}

/* The accept loop: peers refused one by one, each reported once, the
 * sender after them served; -EAGAIN on a non-blocking listener with no
 * peer left. */
struct seen {
	int n;
	char why[4][200];
};

static void seen_refused(void *arg, const char *peer, const char *why)
{
	struct seen *s = arg;
	CHECK_EQ_STR(peer, "local");
	if (s->n < 4)
		snprintf(s->why[s->n], sizeof s->why[0], "%s", why);
	s->n++;
}

static void test_accept_sender(void)
{
	const char *tok = "0123456789abcdef";
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t alen = sizeof a.sun_family;
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	char peer[64], err[300] = "";
	unsigned zw = 99;

	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, alen) || listen(lfd, 8)) {
		CHECK_FAIL_("unix listener: %s", strerror(errno));
		return;
	}
	alen = sizeof a;
	getsockname(lfd, (struct sockaddr *)&a, &alen);
	int c[3];
	for (int i = 0; i < 3; i++) {
		c[i] = socket(AF_UNIX, SOCK_STREAM, 0);
		CHECK_EQ_INT(connect(c[i], (struct sockaddr *)&a, alen), 0);
	}
	CHECK_EQ_INT(write(c[0], "GET / HTTP/1.0\r\n", 16), 16);
	shutdown(c[0], SHUT_WR);
	shutdown(c[1], SHUT_WR); /* a connect and close */
	pid_t pid = fork();
	if (pid == 0) { /* the sender, third in line */
		unsigned z;
		_exit(net_handshake_client(c[2], (const uint8_t *)tok, 16, NETP_ZWLOG, &z, 5000,
					   err, sizeof err) ? 1 : 0);
	}
	struct seen seen = { 0 };
	struct net_server srv = { .lfd = lfd, .tok = (const uint8_t *)tok, .ntok = 16,
				  .zwlog_max = NETP_ZWLOG, .handshake_ms = 5000,
				  .refused = seen_refused, .arg = &seen };
	int fd = net_accept_sender(&srv, &zw, peer, sizeof peer, err, sizeof err);
	CHECK(fd >= 0);
	CHECK_EQ_INT(zw, NETP_ZWLOG);
	CHECK_EQ_STR(peer, "local");
	CHECK_EQ_INT(seen.n, 2);
	CHECK_EQ_INT((int)srv.nrefused, 2);
	CHECK_EQ_STR(seen.why[0], "the peer is not cygprof record --send");
	CHECK_EQ_STR(seen.why[1], "connection closed during the handshake (hello)");
	int st = -1;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ_INT(net_accept_sender(&srv, &zw, peer, sizeof peer, err, sizeof err), -EAGAIN);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 3; i++)
		close(c[i]);
	close(lfd);
}

/* Handshakes side by side: 33 peers that hold their connection silent,
 * then a sender.  The table holds NET_HANDSHAKES: the 33rd and the sender
 * each drop the peer nearest its deadline; the sender is served at once,
 * and the 31 peers still in their hello are refused. */
struct counted {
	int dropped, other, late, n;
};

static void count_refused(void *arg, const char *peer, const char *why)
{
	struct counted *c = arg;
	(void)peer;
	c->n++;
	if (!strcmp(why, "another sender is being received"))
		c->other++;
	else if (!strncmp(why, "dropped for a newer peer: ", 26))
		c->dropped++;
	else if (!strcmp(why, "handshake not done within 1000 ms (hello)"))
		c->late++;
}

static void test_accept_many(void)
{
	const char *tok = "0123456789abcdef";
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t alen = sizeof a.sun_family;
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	char peer[64], err[300] = "";
	unsigned zw = 99;
	enum { HOLD = NET_HANDSHAKES + 1 };
	int c[HOLD + 1];

	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, alen) || listen(lfd, HOLD + 4)) {
		CHECK_FAIL_("unix listener: %s", strerror(errno));
		return;
	}
	alen = sizeof a;
	getsockname(lfd, (struct sockaddr *)&a, &alen);
	for (int i = 0; i <= HOLD; i++) {
		c[i] = socket(AF_UNIX, SOCK_STREAM, 0);
		CHECK_EQ_INT(connect(c[i], (struct sockaddr *)&a, alen), 0);
	}
	pid_t pid = fork();
	if (pid == 0) { /* the sender, last in line */
		unsigned z;
		_exit(net_handshake_client(c[HOLD], (const uint8_t *)tok, 16, NETP_ZWLOG, &z, 5000,
					   err, sizeof err) ? 1 : 0);
	}
	struct counted seen = { 0 };
	struct net_server srv = { .lfd = lfd, .tok = (const uint8_t *)tok, .ntok = 16,
				  .zwlog_max = NETP_ZWLOG, .handshake_ms = 60000,
				  .refused = count_refused, .arg = &seen };
	double t0 = mono_s();
	int fd = net_accept_sender(&srv, &zw, peer, sizeof peer, err, sizeof err);
	double dt = mono_s() - t0;
	CHECK(fd >= 0);
	/* served at once, beside the silent peers: on a quiet machine before
	 * their hello's deadline (1 s), so the rest are "another sender"; a
	 * busy one may let some of them reach it first */
	CHECK(dt < 5);
	CHECK_EQ_INT(seen.dropped, 2);
	CHECK_EQ_INT(seen.other + seen.late, HOLD - 2);
	if (dt < 0.9)
		CHECK_EQ_INT(seen.other, HOLD - 2);
	CHECK_EQ_INT(seen.n, HOLD);
	CHECK_EQ_INT((int)srv.nrefused, HOLD);
	/* the listener is left blocking, the sender's socket too */
	CHECK(!(fcntl(lfd, F_GETFL) & O_NONBLOCK));
	CHECK(fd < 0 || !(fcntl(fd, F_GETFL) & O_NONBLOCK));
	int st = -1;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i <= HOLD; i++)
		close(c[i]);
	close(lfd);
}

/* The sender's side says how long it waited, not its limit. */
static void test_client_waited(void)
{
	int sv[2];
	char err[300] = "";
	unsigned zw;
	double secs = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return;
	CHECK_EQ_INT(net_handshake_client(sv[0], (const uint8_t *)"0123456789abcdef", 16,
					  NETP_ZWLOG, &zw, 300, err, sizeof err),
		     -ETIMEDOUT);
	CHECK(sscanf(err, "handshake not done after %lf s (hello)", &secs) == 1);
	CHECK(secs >= 0.3 && secs < 3);
	CHECK(strstr(err, " s (hello)") && !strchr(err, '\n'));
	close(sv[0]);
	close(sv[1]);
}

int main(int argc, char **argv)
{
	const char *base = getenv("TMPDIR");

	corpus = argc > 1 ? argv[1] : NULL;
	snprintf(dir, sizeof dir, "%s/test-net-proto.XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 99;
	}
	RUN_TEST(test_roundtrip);
	RUN_TEST(test_roundtrip_big);
	RUN_TEST(test_split);
	RUN_TEST(test_stream_capture);
	RUN_TEST(test_flush);
	RUN_TEST(test_compressed);
	RUN_TEST(test_cut);
	RUN_TEST(test_malformed);
	RUN_TEST(test_mutated);
	RUN_TEST(test_corpus);
	RUN_TEST(test_sha256);
	RUN_TEST(test_token);
	RUN_TEST(test_handshake);
	RUN_TEST(test_old_version);
	RUN_TEST(test_handshake_deadline);
	RUN_TEST(test_accept_sender);
	RUN_TEST(test_accept_many);
	RUN_TEST(test_client_waited);
	RUN_TEST(test_loopback);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	CHECK_DONE();
}
