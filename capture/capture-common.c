/* SPDX-License-Identifier: MIT */
/* capture-common.c - pieces shared by the capture writer and reader: error
 * codes, environment setup, read transactions, close, symbol lookup. */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "capture-private.h"

const char *const capture_db_names[DB_COUNT] = {
	[DB_META] = "meta",	    [DB_PROCS] = "procs",     [DB_THREADS] = "threads",
	[DB_TREES] = "trees",	    [DB_TIMELINE] = "timeline", [DB_OBJECTS] = "objects",
	[DB_SYMBOLS] = "symbols", [DB_MEM] = "mem",	      [DB_STACKS] = "stacks",
	[DB_SITES] = "sites",	    [DB_COUNTERS] = "counters", [DB_SAMPLES] = "samples",
	[DB_PSAMPLES] = "psamples", [DB_OFFCPU] = "offcpu",   [DB_CPU] = "cpu",
	[DB_LATENCY] = "latency",
};

/* The detail of the last damage (or version) error of this thread: appended
 * by cygprof_strerror() so that every command names what is damaged. */
static __thread char last_detail[200];
static __thread char last_msg[256];

void capture_detail_clear(void)
{
	last_detail[0] = 0;
}

const char *capture_detail_last(void)
{
	return last_detail;
}

int capture_damage(struct cygprof_capture *cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_detail, sizeof(last_detail), fmt, ap);
	va_end(ap);
	if (cap && !cap->detail[0])
		snprintf(cap->detail, sizeof(cap->detail), "%s", last_detail);
	return CYGPROF_E_CORRUPT;
}

const char *cygprof_capture_damage(const struct cygprof_capture *cap)
{
	if (cap)
		return cap->detail[0] ? cap->detail : NULL;
	return last_detail[0] ? last_detail : NULL;
}

void capture_describe_in(const struct cygprof_capture *cap, unsigned int db, const void *key,
			 size_t klen, char *buf, size_t n)
{
	/* schema 6 stores the stack nodes in blocks */
	if (db == DB_STACKS && cap && cap->schema >= CAPTURE_STACK_BLOCKS_SCHEMA && klen >= 4) {
		snprintf(buf, n, "stack block %u", get_be32(key));
		return;
	}
	capture_describe(db, key, klen, buf, n);
}

void capture_describe(unsigned int db, const void *key, size_t klen, char *buf, size_t n)
{
	const uint8_t *k = key;
	uint32_t a = klen >= 4 ? get_be32(k) : 0;

	switch (db) {
	case DB_META:
		snprintf(buf, n, "meta '%.*s'", (int)(klen > 40 ? 40 : klen), (const char *)key);
		return;
	case DB_PROCS:
		snprintf(buf, n, "process %u record", a);
		return;
	case DB_THREADS:
		snprintf(buf, n, "thread %u record", a);
		return;
	case DB_TREES:
		snprintf(buf, n, "thread %u call tree", a);
		return;
	case DB_SITES:
		snprintf(buf, n, "thread %u call sites", a);
		return;
	case DB_TIMELINE:
		snprintf(buf, n, "thread %u timeline block %u", a, klen >= 8 ? get_be32(k + 4) : 0);
		return;
	case DB_MEM:
		snprintf(buf, n, "thread %u memory block %u", a, klen >= 8 ? get_be32(k + 4) : 0);
		return;
	case DB_OBJECTS:
		snprintf(buf, n, "object %u record", a);
		return;
	case DB_SYMBOLS:
		snprintf(buf, n, "process %u symbol at 0x%llx", a,
			 klen >= 12 ? (unsigned long long)get_be64(k + 4) : 0ull);
		return;
	case DB_STACKS:
		snprintf(buf, n, "stack node %u", a);
		return;
	case DB_COUNTERS:
		snprintf(buf, n, "counter %u record", a);
		return;
	case DB_SAMPLES:
		snprintf(buf, n, "counter %u samples block %u", a, klen >= 8 ? get_be32(k + 4) : 0);
		return;
	case DB_PSAMPLES:
		snprintf(buf, n, "perf samples block %u", klen >= 8 ? get_be32(k + 4) : 0);
		return;
	case DB_OFFCPU:
		snprintf(buf, n, "off-CPU block %u", klen >= 8 ? get_be32(k + 4) : 0);
		return;
	case DB_LATENCY:
		snprintf(buf, n, "thread %u latency record", a);
		return;
	case DB_CPU:
		snprintf(buf, n, "thread %u CPU record", a);
		return;
	}
	snprintf(buf, n, "%s record", db < DB_COUNT ? capture_db_names[db] : "?");
}

int capture_value(struct cygprof_capture *cap, unsigned int db, const MDB_val *k, MDB_val *v)
{
	char what[96];
	const uint8_t *p = v->mv_data;
	size_t n = v->mv_size;

	if (!cap->crc)
		return 0;
	if (n < CAPTURE_CRC_SIZE ||
	    capture_value_crc(db, k->mv_data, k->mv_size, p, n - CAPTURE_CRC_SIZE) !=
		    get_le32(p + n - CAPTURE_CRC_SIZE)) {
		capture_describe_in(cap, db, k->mv_data, k->mv_size, what, sizeof(what));
		return capture_damage(cap, "%s: checksum mismatch", what);
	}
	v->mv_size = n - CAPTURE_CRC_SIZE;
	return 0;
}

const char *cygprof_strerror(int err)
{
	const char *base;

	switch (err) {
	case 0:
		return "success";
	case CYGPROF_E_NOTCAPTURE:
		return "not a cygprof capture";
	case CYGPROF_E_CORRUPT:
		base = "truncated or damaged capture";
		if (!last_detail[0])
			return base;
		snprintf(last_msg, sizeof(last_msg), "%s (%s)", base, last_detail);
		return last_msg;
	case CYGPROF_E_VERSION:
		base = "capture written by a newer cygprof (unknown schema)";
		if (!last_detail[0])
			return base;
		snprintf(last_msg, sizeof(last_msg), "%s (%s)", base, last_detail);
		return last_msg;
	case CYGPROF_E_ADDRSPACE:
		return "address space limit (ulimit -v) too small for the capture";
	case CYGPROF_E_NOTFOUND:
		return "no such record";
	case CYGPROF_E_NOTXN:
		return "no batch in progress";
	case CYGPROF_E_RDONLY:
		return "capture opened read-only";
	case CYGPROF_E_FULL:
		return "No space left on device"; /* strerror(ENOSPC): also EDQUOT */
	}
	if (err < 0 && err > -4096)
		return strerror(-err);
	return "unknown error";
}

int capture_err(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return 0;
	case MDB_NOTFOUND:
		return CYGPROF_E_NOTFOUND;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_BAD_DBI:
		return CYGPROF_E_CORRUPT;
	case MDB_INVALID:
	case MDB_VERSION_MISMATCH:
	case MDB_INCOMPATIBLE:
		return CYGPROF_E_NOTCAPTURE;
	case MDB_MAP_FULL:
	case ENOSPC:
	case EDQUOT:
		return CYGPROF_E_FULL;
	case MDB_BAD_VALSIZE:
		return -EINVAL;
	case MDB_TXN_FULL:
	case MDB_CURSOR_FULL:
	case MDB_PAGE_FULL:
		return -E2BIG;
	case MDB_READERS_FULL:
	case MDB_MAP_RESIZED:
		return -EAGAIN;
	}
	if (rc > 0)
		return -rc;
	return -EIO;
}

uint8_t *cbuf_grow(struct cbuf *b, size_t n)
{
	uint8_t *p;
	size_t cap;

	if (b->oom)
		return NULL;
	if (n > b->cap - b->len) {
		cap = b->cap ? b->cap : 256;
		while (n > cap - b->len) {
			if (cap > SIZE_MAX / 2) {
				b->oom = true;
				return NULL;
			}
			cap *= 2;
		}
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return NULL;
		}
		b->p = p;
		b->cap = cap;
	}
	p = b->p + b->len;
	b->len += n;
	return p;
}

void cbuf_str(struct cbuf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n > UINT32_MAX) {
		b->oom = true;
		return;
	}
	cbuf_le32(b, (uint32_t)n);
	cbuf_bytes(b, s, n);
}

char *crd_str(struct crd *r)
{
	uint32_t n = crd_le32(r);
	const uint8_t *p = crd_take(r, n);
	char *s;

	if (!p)
		return NULL;
	s = malloc((size_t)n + 1);
	if (!s) {
		r->oom = true;
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

int crd_status(const struct crd *r)
{
	if (r->bad)
		return CYGPROF_E_CORRUPT;
	if (r->oom)
		return -ENOMEM;
	return 0;
}

/* LMDB opens its file without O_CLOEXEC (twice for a writer: data and
 * meta writes): make every descriptor of the file close-on-exec, so that
 * neither the traced program nor its children inherit one. */
static void cloexec_all(MDB_env *env)
{
	struct stat want, st;
	struct dirent *e;
	int fd, n;
	DIR *d;

	if (mdb_env_get_fd(env, &fd) || fstat(fd, &want))
		return;
	fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
	d = opendir("/proc/self/fd");
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		n = atoi(e->d_name);
		if (n == dirfd(d) || fstat(n, &st))
			continue;
		if (st.st_dev == want.st_dev && st.st_ino == want.st_ino)
			fcntl(n, F_SETFD, fcntl(n, F_GETFD) | FD_CLOEXEC);
	}
	if (d)
		closedir(d);
}

int capture_env_open(struct cygprof_capture *cap, const char *file, unsigned int flags,
		     size_t mapsize)
{
	MDB_stat st;
	int rc;

	rc = mdb_env_create(&cap->env);
	if (rc) {
		cap->env = NULL;
		return capture_err(rc);
	}
	if (mapsize)
		rc = mdb_env_set_mapsize(cap->env, mapsize);
	if (!rc)
		rc = mdb_env_set_maxdbs(cap->env, CAPTURE_MAXDBS);
	if (!rc)
		rc = mdb_env_open(cap->env, file,
				  flags | MDB_NOSUBDIR | MDB_NOTLS | MDB_NOLOCK, 0600);
	if (!rc)
		rc = mdb_env_stat(cap->env, &st);
	if (rc) {
		mdb_env_close(cap->env);
		cap->env = NULL;
		return capture_err(rc);
	}
	cloexec_all(cap->env);
	cap->psize = st.ms_psize;
	cap->maxkey = (size_t)mdb_env_get_maxkeysize(cap->env);
	return 0;
}

int capture_rbegin(struct cygprof_capture *cap, MDB_txn **txn)
{
	int rc, tries;

	/* every reader call starts here: its damage detail is its own */
	capture_detail_clear();
	if (!cap->env)
		return -EOPNOTSUPP; /* a stream capture has nothing to read */
	if (cap->txn) {
		*txn = cap->txn;
		return 0;
	}
	for (tries = 0;; tries++) {
		rc = mdb_txn_begin(cap->env, NULL, MDB_RDONLY, txn);
		if (rc == MDB_MAP_RESIZED && tries < 4) {
			/* a live writer grew the map: adopt its size */
			mdb_env_set_mapsize(cap->env, 0);
			continue;
		}
		if (rc)
			*txn = NULL;
		return capture_err(rc);
	}
}

void capture_rend(struct cygprof_capture *cap, MDB_txn *txn)
{
	if (txn && txn != cap->txn)
		mdb_txn_abort(txn);
}

void capture_free(struct cygprof_capture *cap)
{
	unsigned int s;
	size_t i;

	if (cap->txn)
		mdb_txn_abort(cap->txn);
	if (cap->env)
		mdb_env_close(cap->env);
	for (s = 0; s < STREAM_COUNT; s++) {
		for (i = 0; i < cap->npend[s]; i++) {
			if (cap->pend[s][i]) {
				free(cap->pend[s][i]->buf);
				free(cap->pend[s][i]->stk);
				mem5_enc_free(cap->pend[s][i]->m5);
			}
			free(cap->pend[s][i]);
		}
		free(cap->pend[s]);
	}
	if (cap->tmp_path && !cap->published)
		unlink(cap->tmp_path);
	if (cap->lock_fd)
		close(cap->lock_fd - 1);
	if (cap->reserved)
		close(cap->reserve_fd);
	free(cap->tmp_path);
	ZSTD_freeCCtx(cap->zc);
	ZSTD_freeCCtx(cap->zc_mem);
	ZSTD_freeDCtx(cap->zd);
	free(cap->zbuf.p);
	free(cap->cols.p);
	free(cap->dirty);
	free(cap->vstreams);
	free(cap->log.ent);
	free(cap->log.data);
	free(cap->scratch.p);
	free(cap->mraw.p);
	free(cap->trust);
	for (s = 0; s < STK_STREAMS; s++)
		free(cap->stk_col[s].p);
	free(cap->path);
	free(cap);
}

int cygprof_capture_close(struct cygprof_capture *cap)
{
	int rc = 0, rc2;

	if (!cap)
		return 0;
	if (cap->stream) {
		rc = capture_writer_finish(cap);
	} else if (!cap->rdonly && cap->env) {
		rc = capture_writer_finish(cap);
		/* what was committed is a capture: publish it even after an error
		 * (the error is still returned); but the copy of a reopened one
		 * replaces its original only when complete */
		if (!rc || !cap->reopened) {
			rc2 = cygprof_capture_publish(cap);
			if (!rc)
				rc = rc2;
		}
	}
	capture_free(cap);
	return rc;
}

int cygprof_capture_publish(struct cygprof_capture *cap)
{
	if (!cap)
		return -EINVAL;
	if (cap->rdonly)
		return CYGPROF_E_RDONLY;
	if (cap->stream)
		return capture_stream_call(cap, cap->stream->publish);
	if (cap->published)
		return 0;
	if (rename(cap->tmp_path, cap->path))
		return -errno;
	cap->published = true;
	return 0;
}

void cygprof_capture_discard(struct cygprof_capture *cap)
{
	if (!cap)
		return;
	if (cap->stream && !cap->stream_err && cap->stream->discard)
		cap->stream->discard(cap->stream_arg);
	if (cap->rdonly || cap->published) {
		cygprof_capture_close(cap);
		return;
	}
	/* capture_free aborts the open transaction and unlinks the new file */
	capture_free(cap);
}

uint64_t cygprof_capture_file_size(struct cygprof_capture *cap)
{
	struct stat st;

	if (!cap)
		return 0;
	if (cap->rdonly)
		return cap->file_size;
	if (cap->stream)
		return 0;
	if (stat(cap->published ? cap->path : cap->tmp_path, &st))
		return 0;
	return (uint64_t)st.st_size;
}

const struct cygprof_symbol *cygprof_symbols_lookup(const struct cygprof_symbol *syms, size_t n,
						    uint64_t addr)
{
	const struct cygprof_symbol *s;
	size_t lo = 0, hi = n, mid;

	if (!syms || !n)
		return NULL;
	/* the first symbol starting above addr */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &syms[lo - 1];
	if (!s->size || addr - s->addr < s->size)
		return s;
	return NULL;
}

int capture_writer_lock(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	return fcntl(fd, F_OFD_SETLK, &fl) ? -errno : 0;
}

int capture_writer_holds(int fd)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };

	/* a read lock would conflict only with a writer's write lock */
	if (fcntl(fd, F_OFD_GETLK, &fl))
		return 0;
	return fl.l_type == F_WRLCK;
}

/* ---- column-coded rows (schema 7 trees and sites) ---------------------------- */

/* The rows of a tree or sites value (LE32 count, LE32 row size, the rows)
 * stored column by column: row i's 32-bit word w is mostly close to row
 * i-1's (a parent index, an address's upper half) or small (calls, times),
 * which 40-byte rows hide from zstd.  Written at most once a checkpoint,
 * so a pass over the words costs little next to the compression. */
static bool cols_shape(const uint8_t *raw, size_t n, uint32_t *count, uint32_t *words)
{
	uint32_t c, rs;

	if (n < 8)
		return false;
	c = get_le32(raw);
	rs = get_le32(raw + 4);
	if (!rs || rs % 4 || rs > CAPTURE_COLS_ROW_MAX || (n - 8) / rs != c || (n - 8) % rs)
		return false;
	*count = c;
	*words = rs / 4;
	return true;
}

static size_t varint32_len(uint32_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint32_t zigzag32(uint32_t v)
{
	return v << 1 ^ (0 - (v >> 31));
}

static uint32_t unzigzag32(uint32_t v)
{
	return v >> 1 ^ (0 - (v & 1));
}

bool capture_cols_encode(const uint8_t *raw, size_t n, struct cbuf *out)
{
	uint32_t count, words, w, i;

	out->len = 0;
	if (!cols_shape(raw, n, &count, &words))
		return false;
	cbuf_bytes(out, raw, 8);
	for (w = 0; w < words; w++) {
		const uint8_t *at = raw + 8 + 4 * (size_t)w;
		size_t rs = 4 * (size_t)words, plain = 0, delta = 0;
		uint32_t prev = 0;
		uint8_t mode, *p;

		/* each column as it is or as zigzag differences from the row
		 * before, whichever is shorter */
		for (i = 0; i < count; i++) {
			uint32_t v = get_le32(at + i * rs);

			plain += varint32_len(v);
			delta += varint32_len(zigzag32(v - prev));
			prev = v;
		}
		mode = delta < plain ? CAPTURE_COLS_DELTA : CAPTURE_COLS_PLAIN;
		p = cbuf_grow(out, 1 + (mode == CAPTURE_COLS_DELTA ? delta : plain));
		if (!p)
			return false;
		*p++ = mode;
		prev = 0;
		for (i = 0; i < count; i++) {
			uint32_t v = get_le32(at + i * rs);

			p += put_varint(p, mode == CAPTURE_COLS_DELTA ? zigzag32(v - prev) : v);
			prev = v;
		}
	}
	return !out->oom;
}

int capture_cols_decode(const uint8_t *c, size_t cn, uint8_t *raw, size_t n)
{
	uint32_t count, words, w, i;
	size_t off = 8;

	if (cn < 8 || n < 8)
		return CYGPROF_E_CORRUPT;
	memcpy(raw, c, 8);
	if (!cols_shape(raw, n, &count, &words))
		return CYGPROF_E_CORRUPT;
	for (w = 0; w < words; w++) {
		uint8_t *at = raw + 8 + 4 * (size_t)w;
		size_t rs = 4 * (size_t)words;
		uint32_t prev = 0;
		uint8_t mode;

		if (off >= cn)
			return CYGPROF_E_CORRUPT;
		mode = c[off++];
		if (mode != CAPTURE_COLS_PLAIN && mode != CAPTURE_COLS_DELTA)
			return CYGPROF_E_CORRUPT;
		for (i = 0; i < count; i++) {
			uint64_t x;

			if (!get_varint(c, cn, &off, &x) || x > UINT32_MAX)
				return CYGPROF_E_CORRUPT;
			prev = mode == CAPTURE_COLS_DELTA ? prev + unzigzag32((uint32_t)x) : (uint32_t)x;
			put_le32(at + i * rs, prev);
		}
	}
	return off == cn ? 0 : CYGPROF_E_CORRUPT;
}
