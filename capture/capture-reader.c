/* SPDX-License-Identifier: MIT */
/* capture-reader.c - opening a capture and decoding its records.
 *
 * Every decoder checks lengths and returns CYGPROF_E_CORRUPT rather than
 * reading out of bounds.  Trailing bytes after the known fields of a value
 * are ignored (they belong to newer optional fields).
 */
#define _GNU_SOURCE /* memmem */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "capture-private.h"

#define LMDB_MAGIC 0xBEEFC0DEu
#define EV_CHUNK 1024

/* Look at the LMDB meta page before anything is mapped: a file that is not
 * LMDB at all is NOTCAPTURE, one too short for its two meta pages CORRUPT.
 * The layout is LMDB's native MDB_meta after a 16-byte page header. */
static int precheck(struct cygprof_capture *cap, int fd, const struct stat *st)
{
	uint8_t hdr[64];
	uint32_t magic, psize;
	size_t psize_off = 16 + 4 + 4 + sizeof(void *) + sizeof(size_t);
	ssize_t n;

	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	if (!S_ISREG(st->st_mode))
		return CYGPROF_E_NOTCAPTURE;
	do
		n = pread(fd, hdr, sizeof(hdr), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n < psize_off + 4)
		return CYGPROF_E_NOTCAPTURE;
	/* native byte order, as LMDB writes it */
	memcpy(&magic, hdr + 16, sizeof(magic));
	memcpy(&psize, hdr + psize_off, sizeof(psize));
	if (magic != LMDB_MAGIC)
		return CYGPROF_E_NOTCAPTURE;
	if (psize < 256 || psize > 65536 || (psize & (psize - 1)))
		return capture_damage(cap, "LMDB meta page: page size %u", psize);
	if ((uint64_t)st->st_size < 2 * (uint64_t)psize)
		return capture_damage(cap, "file truncated: %llu bytes",
				      (unsigned long long)st->st_size);
	return 0;
}

/* A raw meta value: with its checksum when the capture has them. */
static int meta_raw(struct cygprof_capture *cap, MDB_txn *txn, const char *key, MDB_val *v)
{
	MDB_val k = { .mv_size = strlen(key), .mv_data = (void *)key };
	int rc;

	rc = mdb_get(txn, cap->dbi[DB_META], &k, v);
	if (rc)
		return capture_err(rc);
	return capture_value(cap, DB_META, &k, v);
}

static int parse_u64(const MDB_val *v, uint64_t *out)
{
	const uint8_t *p = v->mv_data;
	uint64_t x = 0;
	size_t i;

	if (!v->mv_size || v->mv_size > 19)
		return -1;
	for (i = 0; i < v->mv_size; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		x = x * 10 + (p[i] - '0');
	}
	*out = x;
	return 0;
}

/* magic and schema are read before the schema is known.  A schema 1
 * capture stores the bare strings; schema 2 seals every value, magic and
 * schema included, with a trailing CRC32C, and has a "crc32c" key that
 * schema 1 never has: a damaged length or digit cannot make a schema 2
 * capture read as an unchecked schema 1 one. */
static int check_schema(struct cygprof_capture *cap, MDB_txn *txn)
{
	size_t mlen = strlen(CAPTURE_MAGIC);
	MDB_val k = { .mv_size = 5, .mv_data = "magic" }, v;
	uint64_t schema = 0;
	int rc;

	rc = mdb_get(txn, cap->dbi[DB_META], &k, &v);
	if (rc == MDB_NOTFOUND)
		return CYGPROF_E_NOTCAPTURE;
	if (rc)
		return capture_err(rc);
	if (v.mv_size < mlen || memcmp(v.mv_data, CAPTURE_MAGIC, mlen))
		return CYGPROF_E_NOTCAPTURE;
	if (v.mv_size == mlen) {
		cap->crc = false;
	} else {
		cap->crc = true;
		rc = capture_value(cap, DB_META, &k, &v);
		if (rc)
			return rc;
		if (v.mv_size != mlen)
			return capture_damage(cap, "meta 'magic': wrong length");
	}
	rc = meta_raw(cap, txn, "schema", &v);
	if (rc == CYGPROF_E_NOTFOUND)
		return capture_damage(cap, "meta 'schema' missing");
	if (rc)
		return rc;
	if (parse_u64(&v, &schema) || !schema)
		return capture_damage(cap, "meta 'schema' malformed");
	if (schema > CYGPROF_CAPTURE_SCHEMA) {
		capture_damage(cap, "schema %llu; this cygprof reads schemas 1 to %d",
			       (unsigned long long)schema, CYGPROF_CAPTURE_SCHEMA);
		return CYGPROF_E_VERSION;
	}
	if ((schema >= 2) != cap->crc)
		return capture_damage(cap, "meta 'schema' %llu does not match the checksums",
				      (unsigned long long)schema);
	k = (MDB_val){ .mv_size = 6, .mv_data = "crc32c" };
	rc = mdb_get(txn, cap->dbi[DB_META], &k, &v);
	if (rc && rc != MDB_NOTFOUND)
		return capture_err(rc);
	if (!rc != cap->crc)
		return capture_damage(cap, "meta 'crc32c' does not match schema %llu",
				      (unsigned long long)schema);
	cap->schema = (unsigned int)schema;
	return 0;
}

/* A sealed capture (closed by the writer) says which transaction sealed it
 * and how many entries each DB has: a record that vanished (a damaged
 * branch page) or an older snapshot (a damaged meta page) shows here. */
static int check_seal(struct cygprof_capture *cap, MDB_txn *txn, uint64_t txnid,
		      const uint64_t entries[DB_COUNT], const uint32_t digests[DB_COUNT])
{
	MDB_val v;
	uint64_t id, n;
	char buf[48 * DB_COUNT], *p, *end;
	unsigned long dg;
	size_t len;
	int rc, i;

	if (!cap->crc)
		return 0;
	rc = meta_raw(cap, txn, "txn", &v);
	if (rc == CYGPROF_E_NOTFOUND) {
		/* not closed: interrupted, nothing to check, but then it cannot
		 * say it is complete */
		rc = meta_raw(cap, txn, "complete", &v);
		if (rc == CYGPROF_E_NOTFOUND)
			return 0;
		if (rc)
			return rc;
		return capture_damage(cap, "complete capture without its seal (meta 'txn')");
	}
	if (rc)
		return rc;
	if (parse_u64(&v, &id))
		return capture_damage(cap, "meta 'txn' malformed");
	cap->sealed = true;
	if (id != txnid)
		return capture_damage(cap, "LMDB meta page: transaction %llu, sealed at %llu",
				      (unsigned long long)txnid, (unsigned long long)id);
	rc = meta_raw(cap, txn, "counts", &v);
	if (rc == CYGPROF_E_NOTFOUND)
		return capture_damage(cap, "meta 'counts' missing");
	if (rc)
		return rc;
	len = v.mv_size < sizeof(buf) - 1 ? v.mv_size : sizeof(buf) - 1;
	memcpy(buf, v.mv_data, len);
	buf[len] = 0;
	p = buf;
	for (i = 0; i < DB_COUNT; i++) {
		size_t nl = strlen(capture_db_names[i]);

		/* a capture written before the DB existed: its seal lacks it */
		if (cap->missing[i])
			continue;
		if (i) {
			if (*p != ' ')
				return capture_damage(cap, "meta 'counts' malformed");
			p++;
		}
		if (strncmp(p, capture_db_names[i], nl) || p[nl] != '=' || p[nl + 1] < '0' ||
		    p[nl + 1] > '9')
			return capture_damage(cap, "meta 'counts' malformed");
		errno = 0;
		n = strtoull(p + nl + 1, &end, 10);
		if (errno)
			return capture_damage(cap, "meta 'counts' malformed");
		if (*end != ':' || !((end[1] >= '0' && end[1] <= '9') || (end[1] >= 'a' && end[1] <= 'f')))
			return capture_damage(cap, "meta 'counts' malformed");
		dg = strtoul(end + 1, &p, 16);
		if (p - end != 9)
			return capture_damage(cap, "meta 'counts' malformed");
		if (entries[i] == UINT64_MAX ? n != 0 : n != entries[i])
			return capture_damage(cap, "%s: %llu entries, %llu written",
					      capture_db_names[i],
					      entries[i] == UINT64_MAX ? 0ull
								       : (unsigned long long)entries[i],
					      (unsigned long long)n);
		if (entries[i] != UINT64_MAX && dg != digests[i])
			return capture_damage(cap, "%s: keys changed since written",
					      capture_db_names[i]);
	}
	if (*p)
		return capture_damage(cap, "meta 'counts' malformed");
	return 0;
}

/* Check the checksum of every value but the event blocks (read and checked
 * when they are decoded): what every report reads anyway, so that a damaged
 * record fails the open rather than a later call whose error a command
 * might take for "absent". */
static int check_values(struct cygprof_capture *cap, MDB_txn *txn)
{
	MDB_cursor *cur;
	MDB_val k, v;
	unsigned int db;
	int rc = 0, r;

	if (!cap->crc)
		return 0;
	for (db = 0; db < DB_COUNT && !rc; db++) {
		if (db == DB_TIMELINE || db == DB_MEM || db == DB_SAMPLES || db == DB_PSAMPLES ||
		    db == DB_OFFCPU || cap->missing[db])
			continue;
		rc = capture_err(mdb_cursor_open(txn, cap->dbi[db], &cur));
		if (rc)
			break;
		for (r = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !r && !rc;
		     r = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
			rc = capture_value(cap, db, &k, &v);
		mdb_cursor_close(cur);
		if (!rc && r != MDB_NOTFOUND)
			rc = capture_err(r);
	}
	return rc;
}

static int open_dbs(struct cygprof_capture *cap, uint64_t txnid, const uint64_t entries[DB_COUNT],
		    const uint32_t digests[DB_COUNT])
{
	MDB_txn *txn;
	int rc, i;

	rc = mdb_txn_begin(cap->env, NULL, MDB_RDONLY, &txn);
	if (rc)
		return capture_err(rc);
	if (mdb_txn_id(txn) != txnid) {
		rc = capture_damage(cap, "LMDB meta pages changed while opening");
		goto out;
	}
	rc = mdb_dbi_open(txn, capture_db_names[DB_META], 0, &cap->dbi[DB_META]);
	if (rc) {
		rc = rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE ? CYGPROF_E_NOTCAPTURE
								  : capture_err(rc);
		goto out;
	}
	rc = check_schema(cap, txn);
	if (rc)
		goto out;
	for (i = 0; i < DB_COUNT; i++) {
		if (i == DB_META)
			continue;
		if (entries[i] == UINT64_MAX) {
			if (capture_db_optional((unsigned int)i, cap->schema)) {
				/* written before this DB existed: reads as empty */
				cap->missing[i] = true;
				continue;
			}
			rc = capture_damage(cap, "DB '%s' missing", capture_db_names[i]);
			goto out;
		}
		rc = mdb_dbi_open(txn, capture_db_names[i], 0, &cap->dbi[i]);
		if (rc) {
			rc = rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE
				     ? capture_damage(cap, "DB '%s' missing", capture_db_names[i])
				     : capture_err(rc);
			goto out;
		}
	}
	rc = check_seal(cap, txn, txnid, entries, digests);
	if (!rc)
		rc = check_values(cap, txn);
	if (rc)
		goto out;
	{
		MDB_val k = {7, (void *)"damaged"}, v;
		cap->program_damaged = mdb_get(txn, cap->dbi[DB_META], &k, &v) == 0;
	}
	cap->nstacks_stored = entries[DB_STACKS] == UINT64_MAX ? 0 : entries[DB_STACKS];
	if (cap->schema >= CAPTURE_STACK_BLOCKS_SCHEMA && cap->nstacks_stored) {
		/* in blocks: the nodes are the last block's first id and count */
		MDB_cursor *cur;
		MDB_val k, v;

		cap->nstacks_stored = 0;
		rc = capture_err(mdb_cursor_open(txn, cap->dbi[DB_STACKS], &cur));
		if (!rc) {
			rc = capture_err(mdb_cursor_get(cur, &k, &v, MDB_LAST));
			mdb_cursor_close(cur);
		}
		if (!rc)
			rc = capture_value(cap, DB_STACKS, &k, &v);
		if (!rc && (v.mv_size < CAPTURE_STACK_BLOCK_HDR || !get_le32(v.mv_data) ||
			    get_le32((uint8_t *)v.mv_data + 4) > CAPTURE_STACK_BLOCK_NODES))
			rc = capture_damage(cap, "stack block %u: malformed",
					    k.mv_size == 4 ? get_be32(k.mv_data) : 0);
		if (rc)
			goto out;
		cap->nstacks_stored = (uint64_t)get_le32(v.mv_data) - 1 +
				      get_le32((uint8_t *)v.mv_data + 4);
	}
	/* committing keeps the handles for later transactions */
	return capture_err(mdb_txn_commit(txn));
out:
	mdb_txn_abort(txn);
	return rc;
}

/* ---- a capture still being written -----------------------------------------
 *
 * Its writer reuses the pages of older transactions: a reader that mapped
 * the file could see them change under it.  So a live capture is read from
 * a private copy of one commit.  LMDB writes a transaction's pages before
 * its meta page, and reuses only pages that the two newest transactions no
 * longer reach: a copy whose newest meta page names the transaction that is
 * still the file's newest once the copy is done holds that transaction
 * whole.  The writer is never waited for nor touched. */
#define LIVE_TRIES 64

static int copy_fd(int in, int out)
{
	static char buf[1 << 20];
	off_t off = 0;
	ssize_t r, w;

	for (;;) {
		r = pread(in, buf, sizeof buf, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			return 0;
		for (ssize_t done = 0; done < r; done += w) {
			w = pwrite(out, buf + done, (size_t)(r - done), off + done);
			if (w < 0 && errno == EINTR)
				w = 0;
			else if (w < 0)
				return errno == ENOSPC ? -ENOMEM : -errno;
		}
		off += r;
	}
}

int capture_live_snapshot(struct cygprof_capture *cap, int fd, int *out)
{
	uint64_t before, copied, after;
	int tries, rc, m;

	for (tries = 0; tries < LIVE_TRIES; tries++) {
		rc = capture_meta_txnid(fd, &before);
		if (rc)
			return rc;
		m = memfd_create("cygprof-snapshot", MFD_CLOEXEC);
		if (m < 0)
			return -errno;
		rc = copy_fd(fd, m);
		if (!rc)
			rc = capture_meta_txnid(m, &copied);
		if (!rc)
			rc = capture_meta_txnid(fd, &after);
		if (!rc && copied == after) {
			*out = m;
			return 0;
		}
		close(m);
		if (rc && rc != CYGPROF_E_CORRUPT)
			return rc;
		sched_yield();
	}
	return capture_damage(cap, "the capture changed during each of %d copies of it: its "
			      "writer commits faster than it can be read", LIVE_TRIES);
}

/* Open the capture whose file is fd (closed before returning). */
static int open_fd(const char *path, int fd, struct cygprof_capture **out)
{
	struct cygprof_capture *cap;
	uint64_t txnid = 0, entries[DB_COUNT];
	uint32_t digests[DB_COUNT];
	char fdpath[64];
	unsigned int psize = 0;
	struct stat st;
	size_t mapsize;
	int rc;

	cap = calloc(1, sizeof(*cap));
	if (!cap) {
		close(fd);
		return -ENOMEM;
	}
	cap->rdonly = true;
	cap->path = strdup(path);
	if (!cap->path) {
		rc = -ENOMEM;
		goto fail;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		goto fail;
	}
	rc = precheck(cap, fd, &st);
	if (rc)
		goto fail;
	if (capture_writer_holds(fd)) {
		int snap;

		rc = capture_live_snapshot(cap, fd, &snap);
		if (rc)
			goto fail;
		close(fd);
		fd = snap;
		cap->in_progress = true;
		if (fstat(fd, &st)) {
			rc = -errno;
			goto fail;
		}
		rc = precheck(cap, fd, &st);
		if (rc)
			goto fail;
	}
	cap->file_size = (uint64_t)st.st_size;
	/* every page LMDB may reach must be in the file and well formed: LMDB
	 * trusts its pages, so check them all before it reads any */
	rc = capture_verify(cap, fd, cap->file_size, &psize, &txnid, entries, digests);
	if (rc)
		goto fail;
	if (cap->file_size > SIZE_MAX - psize) {
		rc = -EFBIG;
		goto fail;
	}
	/* a map that fits the file (LMDB would map the size recorded by the
	 * writer: 64 GiB of address space) */
	mapsize = ((size_t)cap->file_size + psize - 1) / psize * psize;
	/* open the very file checked above */
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	rc = capture_env_open(cap, access(fdpath, F_OK) ? path : fdpath, MDB_RDONLY, mapsize);
	if (rc)
		goto fail;
	close(fd);
	fd = -1;
	if (cap->psize != psize) {
		rc = capture_damage(cap, "LMDB meta page: page size");
		goto fail;
	}
	rc = open_dbs(cap, txnid, entries, digests);
	if (rc)
		goto fail;
	*out = cap;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	capture_free(cap);
	return rc;
}

int cygprof_capture_open(const char *path, struct cygprof_capture **out)
{
	int fd;

	capture_detail_clear();
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!path || !*path)
		return -EINVAL;
	/* O_NONBLOCK: a FIFO must not block the open */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	return open_fd(path, fd, out);
}

/* Whether the first len bytes of fd hold the capture magic string. */
static int holds_magic(int fd, size_t len)
{
	static const char magic[] = CAPTURE_MAGIC;
	char *buf = malloc(len);
	ssize_t n;
	int found = 0;

	if (!buf)
		return 0;
	n = pread(fd, buf, len, 0);
	if (n >= (ssize_t)sizeof magic - 1)
		found = memmem(buf, (size_t)n, magic, sizeof magic - 1) != NULL;
	free(buf);
	return found;
}

int cygprof_capture_probe(const char *path)
{
	struct cygprof_capture *cap;
	struct stat st;
	int rc, fd;

	if (!path || !*path)
		return -EINVAL;
	/* never through a symlink, never blocking on a FIFO or a device */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0)
		return errno == ELOOP ? 0 : -errno;
	if (fstat(fd, &st)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	capture_detail_clear();
	int keep = dup(fd); /* open_fd closes fd */
	rc = open_fd(path, fd, &cap);
	if (!rc) {
		cygprof_capture_close(cap);
		rc = 1;
	} else if (rc == CYGPROF_E_VERSION) {
		rc = 1; /* of an unknown schema: still a capture */
	} else if (rc == CYGPROF_E_CORRUPT) {
		/* A damaged or truncated capture (a collector killed early, a
		 * cut copy) is one when its magic is near the start; another
		 * program's damaged LMDB file is not. */
		rc = keep >= 0 && holds_magic(keep, 1 << 20);
	} else if (rc == CYGPROF_E_NOTCAPTURE || rc == -EISDIR) {
		rc = 0;
	}
	if (keep >= 0)
		close(keep);
	return rc;
}

/* ---- records ----------------------------------------------------------------- */

int cygprof_capture_get_meta(struct cygprof_capture *cap, const char *key, char **value)
{
	MDB_txn *txn;
	MDB_val k, v;
	int rc;

	if (!cap || !key || !value)
		return -EINVAL;
	*value = NULL;
	k.mv_size = strlen(key);
	k.mv_data = (void *)key;
	if (!k.mv_size || k.mv_size > cap->maxkey)
		return CYGPROF_E_NOTFOUND;
	rc = capture_rbegin(cap, &txn);
	if (rc)
		return rc;
	rc = capture_err(mdb_get(txn, cap->dbi[DB_META], &k, &v));
	if (!rc)
		rc = capture_value(cap, DB_META, &k, &v);
	if (!rc) {
		*value = malloc(v.mv_size + 1);
		if (*value) {
			memcpy(*value, v.mv_data, v.mv_size);
			(*value)[v.mv_size] = 0;
		} else {
			rc = -ENOMEM;
		}
	}
	capture_rend(cap, txn);
	return rc;
}

/* Walk every record of a DB in key order, growing a caller array of elsize
 * elements; decode(k, v, elem) fills one element. */
typedef int (*decode_fn)(const MDB_val *k, const MDB_val *v, void *elem);
typedef void (*clear_fn)(void *elem);

static int load(struct cygprof_capture *cap, unsigned int db, const uint8_t *prefix,
		size_t plen, size_t elsize, decode_fn decode, clear_fn clear, void **arr,
		size_t *np)
{
	MDB_cursor *cur = NULL;
	MDB_txn *txn;
	MDB_val k, v;
	MDB_cursor_op op = MDB_FIRST;
	uint8_t *a = NULL, *tmp;
	size_t n = 0, cap_n = 0, i;
	int rc;

	*arr = NULL;
	*np = 0;
	if (cap->missing[db])
		return 0;
	rc = capture_rbegin(cap, &txn);
	if (rc)
		return rc;
	rc = capture_err(mdb_cursor_open(txn, cap->dbi[db], &cur));
	if (rc)
		goto out;
	if (plen) {
		k.mv_size = plen;
		k.mv_data = (void *)prefix;
		op = MDB_SET_RANGE;
	}
	for (;; op = MDB_NEXT) {
		rc = mdb_cursor_get(cur, &k, &v, op);
		if (rc == MDB_NOTFOUND) {
			rc = 0;
			break;
		}
		if (rc) {
			rc = capture_err(rc);
			break;
		}
		if (plen && (k.mv_size < plen || memcmp(k.mv_data, prefix, plen)))
			break;
		rc = capture_value(cap, db, &k, &v);
		if (rc)
			break;
		if (n == cap_n) {
			cap_n = cap_n ? cap_n * 2 : 64;
			tmp = realloc(a, cap_n * elsize);
			if (!tmp) {
				rc = -ENOMEM;
				break;
			}
			a = tmp;
		}
		memset(a + n * elsize, 0, elsize);
		rc = decode(&k, &v, a + n * elsize);
		if (rc) {
			if (clear)
				clear(a + n * elsize);
			if (rc == CYGPROF_E_CORRUPT) {
				char what[96];

				capture_describe_in(cap, db, k.mv_data, k.mv_size, what, sizeof(what));
				capture_damage(cap, "%s: malformed", what);
			}
			break;
		}
		n++;
	}
out:
	if (cur)
		mdb_cursor_close(cur);
	capture_rend(cap, txn);
	if (rc) {
		for (i = 0; clear && i < n; i++)
			clear(a + i * elsize);
		free(a);
		return rc;
	}
	*arr = a;
	*np = n;
	return 0;
}

static int decode_proc(const MDB_val *k, const MDB_val *v, void *elem)
{
	return record_decode(&layout_proc, k, v, elem);
}

static void clear_proc(void *elem)
{
	struct cygprof_proc *p = elem;

	free(p->command);
	free(p->exe);
}

int cygprof_capture_get_procs(struct cygprof_capture *cap, struct cygprof_proc **procs, size_t *n)
{
	if (!cap || !procs || !n)
		return -EINVAL;
	return load(cap, DB_PROCS, NULL, 0, sizeof(**procs), decode_proc, clear_proc,
		    (void **)procs, n);
}

void cygprof_procs_free(struct cygprof_proc *procs, size_t n)
{
	size_t i;

	for (i = 0; procs && i < n; i++)
		clear_proc(&procs[i]);
	free(procs);
}

static int decode_cpu(const MDB_val *k, const MDB_val *v, struct cygprof_cpu *c,
		      struct cygprof_cpu_node **nodes, size_t *n);
static int decode_latency(const MDB_val *k, const MDB_val *v, struct cygprof_latency *h,
			  struct cygprof_lat_row **rows, size_t *n);

static int decode_thread(const MDB_val *k, const MDB_val *v, void *elem)
{
	struct cygprof_thread *t = elem;
	int rc = record_decode(&layout_thread, k, v, elem);

	if (rc)
		return rc;
	if (t->events > UINT64_MAX / 8 || t->lost > UINT64_MAX / 8 || t->calls > UINT64_MAX / 8 ||
	    t->unwound > UINT64_MAX / 8 || t->unpaired > UINT64_MAX / 8 ||
	    t->sig_lost > UINT64_MAX / 8)
		return CYGPROF_E_CORRUPT;
	return 0;
}

int cygprof_capture_get_threads(struct cygprof_capture *cap, struct cygprof_thread **threads,
				size_t *n)
{
	int rc;

	if (!cap || !threads || !n)
		return -EINVAL;
	rc = load(cap, DB_THREADS, NULL, 0, sizeof(**threads), decode_thread, NULL,
		  (void **)threads, n);
	/* Values that cannot be true: each call makes at most an entry and
	 * an exit event, so events and lost events together cannot be more.
	 * Unless the traced program wrote into the collector's mapping (meta
	 * "damaged"): then calls of rejected nodes are missing while their
	 * events were stored.  A capture cut off, or written by a collector
	 * that counted the events drained while it folded the calls, can say
	 * so too: the thread is not damage, its events up to what its calls
	 * make are kept (the last consistent point), the rest left out, and
	 * the thread is flagged CYGPROF_THREAD_TRIMMED for the reader's
	 * warning.  (The events after the last checkpoint of a capture cut
	 * off are not counted in its record: they stay.) */
	free(cap->trust);
	cap->trust = NULL;
	cap->ntrust = 0;
	for (size_t i = 0; !rc && !cap->program_damaged && i < *n; i++) {
		struct cygprof_thread *t = &(*threads)[i];
		uint64_t most = 2 * (t->calls + t->sig_lost) + t->unwound + t->unpaired;
		if (t->events + t->lost <= most)
			continue;
		struct ev_trust *v = realloc(cap->trust, (cap->ntrust + 1) * sizeof(*v));
		if (!v) {
			rc = -ENOMEM;
			free(*threads);
			*threads = NULL;
			*n = 0;
			break;
		}
		cap->trust = v;
		t->events = most > t->lost ? most - t->lost : 0;
		t->flags |= CYGPROF_THREAD_TRIMMED;
		v[cap->ntrust++] = (struct ev_trust){ t->idx, t->events };
	}
	return rc;
}

static int decode_object(const MDB_val *k, const MDB_val *v, void *elem)
{
	struct cygprof_object *o = elem;
	int rc = record_decode(&layout_object, k, v, elem);

	if (!rc && o->build_id_len > sizeof(o->build_id))
		return CYGPROF_E_CORRUPT;
	return rc;
}

static void clear_object(void *elem)
{
	free(((struct cygprof_object *)elem)->path);
}

int cygprof_capture_get_objects(struct cygprof_capture *cap, struct cygprof_object **objs,
				size_t *n)
{
	if (!cap || !objs || !n)
		return -EINVAL;
	return load(cap, DB_OBJECTS, NULL, 0, sizeof(**objs), decode_object, clear_object,
		    (void **)objs, n);
}

void cygprof_objects_free(struct cygprof_object *objs, size_t n)
{
	size_t i;

	for (i = 0; objs && i < n; i++)
		clear_object(&objs[i]);
	free(objs);
}

static int decode_symbol(const MDB_val *k, const MDB_val *v, void *elem)
{
	return record_decode(&layout_symbol, k, v, elem);
}

static void clear_symbol(void *elem)
{
	free(((struct cygprof_symbol *)elem)->name);
}

int cygprof_capture_get_symbols(struct cygprof_capture *cap, uint32_t proc_idx,
				struct cygprof_symbol **syms, size_t *n)
{
	uint8_t prefix[4];

	if (!cap || !syms || !n)
		return -EINVAL;
	put_be32(prefix, proc_idx);
	return load(cap, DB_SYMBOLS, prefix, sizeof(prefix), sizeof(**syms), decode_symbol,
		    clear_symbol, (void **)syms, n);
}

void cygprof_symbols_free(struct cygprof_symbol *syms, size_t n)
{
	size_t i;

	for (i = 0; syms && i < n; i++)
		clear_symbol(&syms[i]);
	free(syms);
}

/* ---- trees ------------------------------------------------------------------- */

/* A schema 7 column-coded value (LE32 raw length, CAPTURE_COLS_MAGIC, a
 * zstd frame of the columns): *v becomes the raw rows, in *buf.  The
 * columns of n bytes of rows take at most 8 + 6 bytes a word of them. */
static int unpack_cols(struct cygprof_capture *cap, MDB_val *v, uint8_t **buf, size_t raw)
{
	const uint8_t *z = (const uint8_t *)v->mv_data + 8;
	size_t zn = v->mv_size - 8, cn, n;
	unsigned long long csize;
	uint8_t *c;
	int rc;

	csize = ZSTD_getFrameContentSize(z, zn);
	if (raw > zn * CAPTURE_PACK_RATIO + CAPTURE_PACK_SLACK || raw < 8 ||
	    csize == ZSTD_CONTENTSIZE_UNKNOWN || csize == ZSTD_CONTENTSIZE_ERROR ||
	    csize > 8 + (raw - 8) / 4 * 6 + CAPTURE_COLS_ROW_MAX ||
	    ZSTD_findFrameCompressedSize(z, zn) != zn)
		return CYGPROF_E_CORRUPT;
	cn = (size_t)csize;
	c = malloc(cn ? cn : 1);
	*buf = malloc(raw);
	if (!c || !*buf) {
		free(c);
		return -ENOMEM;
	}
	if (!cap->zd && !(cap->zd = ZSTD_createDCtx())) {
		free(c);
		return -ENOMEM;
	}
	n = ZSTD_decompressDCtx(cap->zd, c, cn, z, zn);
	rc = ZSTD_isError(n) || n != cn ? CYGPROF_E_CORRUPT : capture_cols_decode(c, cn, *buf, raw);
	free(c);
	if (rc)
		return rc;
	v->mv_data = *buf;
	v->mv_size = raw;
	return 0;
}

/* A schema 2 packed value (LE32 raw length, then a zstd frame or the raw
 * bytes): *v becomes the raw bytes, in *buf (free it) when decompressed. */
static int unpack(struct cygprof_capture *cap, MDB_val *v, uint8_t **buf)
{
	const uint8_t *p = v->mv_data;
	size_t raw, zn, n;

	*buf = NULL;
	if (cap->schema < 2)
		return 0;
	if (v->mv_size < 4)
		return CYGPROF_E_CORRUPT;
	raw = get_le32(p);
	zn = v->mv_size - 4;
	if (zn == raw) {
		v->mv_data = (uint8_t *)v->mv_data + 4;
		v->mv_size = raw;
		return 0;
	}
	if (cap->schema >= CAPTURE_COLS_SCHEMA && zn > 4 && zn < raw &&
	    !memcmp(p + 4, CAPTURE_COLS_MAGIC, 4))
		return unpack_cols(cap, v, buf, raw);
	if (zn > raw || raw > zn * CAPTURE_PACK_RATIO + CAPTURE_PACK_SLACK ||
	    ZSTD_getFrameContentSize(p + 4, zn) != raw ||
	    ZSTD_findFrameCompressedSize(p + 4, zn) != zn)
		return CYGPROF_E_CORRUPT;
	*buf = malloc(raw ? raw : 1);
	if (!*buf)
		return -ENOMEM;
	if (!cap->zd) {
		cap->zd = ZSTD_createDCtx();
		if (!cap->zd)
			return -ENOMEM;
	}
	n = ZSTD_decompressDCtx(cap->zd, *buf, raw, p + 4, zn);
	if (ZSTD_isError(n) || n != raw)
		return CYGPROF_E_CORRUPT;
	v->mv_data = *buf;
	v->mv_size = raw;
	return 0;
}

/* A packed per-thread array (trees, sites; checksum stripped): unpacked
 * into *packed (free it), its header (LE32 count, LE32 record size at
 * least min) checked against its length, *a an array of count elements of
 * elsize bytes (NULL when empty) for the caller to fill from *rec, each
 * *size bytes apart.  0, CYGPROF_E_CORRUPT or -ENOMEM. */
static int unpack_array(struct cygprof_capture *cap, MDB_val v, size_t min, size_t elsize,
			uint8_t **packed, const uint8_t **rec, uint32_t *count, uint32_t *size,
			void **a)
{
	int rc = unpack(cap, &v, packed);

	*a = NULL;
	if (rc)
		return rc;
	if (v.mv_size < 8)
		return CYGPROF_E_CORRUPT;
	*rec = (const uint8_t *)v.mv_data + 8;
	*count = get_le32(v.mv_data);
	*size = get_le32((const uint8_t *)v.mv_data + 4);
	if (*size < min || (uint64_t)*count * *size > (uint64_t)v.mv_size - 8)
		return CYGPROF_E_CORRUPT;
	if (*count && !(*a = malloc((size_t)*count * elsize)))
		return -ENOMEM;
	return 0;
}

typedef int (*thread_decode_fn)(struct cygprof_capture *cap, uint32_t thread_idx, MDB_val v,
				void **out, size_t *n);

/* A tree value as nodes (*out owned, NULL when empty). */
static int decode_tree(struct cygprof_capture *cap, uint32_t thread_idx, MDB_val v, void **out,
		       size_t *n)
{
	struct cygprof_node *a;
	const uint8_t *p;
	uint8_t *packed = NULL;
	uint32_t count = 0, size, i;
	int rc;

	rc = unpack_array(cap, v, CAPTURE_NODE_SIZE, sizeof(*a), &packed, &p, &count, &size,
			  (void **)&a);
	for (i = 0; !rc && i < count; i++, p += size) {
		record_decode_row(&layout_node, p, &a[i]);
		if (a[i].parent != CYGPROF_NONE && a[i].parent >= i)
			rc = capture_damage(cap, "thread %u call tree: node %u has parent %u",
					    thread_idx, i, a[i].parent);
	}
	if (rc == CYGPROF_E_CORRUPT && !capture_detail_last()[0])
		capture_damage(cap, "thread %u call tree: malformed", thread_idx);
	free(packed);
	if (rc) {
		free(a);
		a = NULL;
	}
	*out = a;
	*n = rc ? 0 : count;
	return rc;
}

/* A sites value as entries (*out owned, NULL when empty). */
static int decode_sites(struct cygprof_capture *cap, uint32_t thread_idx, MDB_val v, void **out,
			size_t *n)
{
	struct cygprof_callsite *a;
	const uint8_t *p;
	uint8_t *packed = NULL;
	uint32_t count = 0, size, i;
	int rc;

	rc = unpack_array(cap, v, CAPTURE_SITE_SIZE, sizeof(*a), &packed, &p, &count, &size,
			  (void **)&a);
	for (i = 0; !rc && i < count; i++, p += size) {
		record_decode_row(&layout_site, p, &a[i]);
	}
	if (rc == CYGPROF_E_CORRUPT && !capture_detail_last()[0])
		capture_damage(cap, "thread %u call sites: malformed", thread_idx);
	free(packed);
	if (rc) {
		free(a);
		a = NULL;
	}
	*out = a;
	*n = rc ? 0 : count;
	return rc;
}

/* The value of a thread in a per-thread DB (trees, sites), decoded; none
 * stored: empty (*out NULL, *n 0). */
static int get_thread_value(struct cygprof_capture *cap, unsigned int db, uint32_t thread_idx,
			    thread_decode_fn decode, void **out, size_t *n)
{
	uint8_t key[4];
	MDB_txn *txn;
	MDB_val k = { .mv_size = sizeof(key), .mv_data = key }, v;
	int rc;

	*out = NULL;
	*n = 0;
	put_be32(key, thread_idx);
	rc = capture_rbegin(cap, &txn);
	if (rc)
		return rc;
	rc = mdb_get(txn, cap->dbi[db], &k, &v);
	if (rc) {
		rc = rc == MDB_NOTFOUND ? 0 : capture_err(rc);
	} else {
		rc = capture_value(cap, db, &k, &v);
		if (!rc)
			rc = decode(cap, thread_idx, v, out, n);
	}
	capture_rend(cap, txn);
	return rc;
}

int cygprof_capture_get_tree(struct cygprof_capture *cap, uint32_t thread_idx,
			     struct cygprof_node **nodes, size_t *n)
{
	if (!cap || !nodes || !n)
		return -EINVAL;
	return get_thread_value(cap, DB_TREES, thread_idx, decode_tree, (void **)nodes, n);
}

/* ---- call sites ------------------------------------------------------------- */

int cygprof_capture_get_sites(struct cygprof_capture *cap, uint32_t thread_idx,
			      struct cygprof_callsite **out, size_t *n)
{
	struct cygprof_callsite *a = NULL;
	int rc;

	if (!cap || !out || !n)
		return -EINVAL;
	*out = NULL;
	*n = 0;
	if (cap->missing[DB_SITES]) {
		/* written before sites were stored: one per node */
		struct cygprof_node *nodes;
		size_t nn, j;
		rc = cygprof_capture_get_tree(cap, thread_idx, &nodes, &nn);
		if (rc)
			return rc;
		a = calloc(nn ? nn : 1, sizeof(*a));
		if (!a) {
			free(nodes);
			return -ENOMEM;
		}
		for (j = 1; j < nn; j++) {
			a[*n].node = (uint32_t)j;
			a[*n].site = nodes[j].site;
			a[*n].calls = nodes[j].calls;
			a[*n].total_ns = nodes[j].total_ns;
			(*n)++;
		}
		free(nodes);
		*out = a;
		return 0;
	}
	return get_thread_value(cap, DB_SITES, thread_idx, decode_sites, (void **)out, n);
}

/* ---- event blocks ---------------------------------------------------------- */

/* One event block, header decoded and events ready to decode. */
struct blk {
	uint32_t count;
	uint64_t first_ts;
	const uint8_t *raw; /* the encoded events */
	size_t len;
};

static int grow_buf(uint8_t **buf, size_t *cap, size_t want)
{
	uint8_t *p;
	size_t n;

	if (want <= *cap)
		return 0;
	n = *cap ? *cap : 65536;
	while (n < want)
		n *= 2;
	p = realloc(*buf, n);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}

/* The header of a block value (checksum already stripped).  min is the
 * smallest encoding of an event, which bounds count. */
static int block_hdr(struct cygprof_capture *cap, const MDB_val *v, size_t min, struct blk *b,
		     size_t *zoff)
{
	const uint8_t *p = v->mv_data;
	uint32_t raw;

	if (cap->schema == 1) {
		if (v->mv_size < CAPTURE_BLOCK_HDR || v->mv_size > CAPTURE_BLOCK_LIMIT)
			return CYGPROF_E_CORRUPT;
		b->count = get_le32(p);
		b->first_ts = get_le64(p + 4);
		b->raw = p + CAPTURE_BLOCK_HDR;
		b->len = v->mv_size - CAPTURE_BLOCK_HDR;
		*zoff = 0;
	} else {
		if (v->mv_size < CAPTURE_ZBLOCK_HDR)
			return CYGPROF_E_CORRUPT;
		b->count = get_le32(p);
		b->first_ts = get_le64(p + 4);
		raw = get_le32(p + 12);
		if (raw > CAPTURE_RAW_LIMIT)
			return CYGPROF_E_CORRUPT;
		b->raw = NULL;
		b->len = raw;
		*zoff = CAPTURE_ZBLOCK_HDR;
	}
	/* schema 1 writers could store an empty block; schema 2 never does */
	if ((!b->count && cap->schema >= 2) || b->count > b->len / min)
		return CYGPROF_E_CORRUPT;
	return 0;
}

/* The whole pages of a value read through LMDB's map, which the reader
 * will not read again: drop them from the map (the file's pages stay in
 * the page cache), so that reading a capture many times the size of
 * memory does not keep it all resident (its blocks are mostly in overflow
 * pages of their own). */
static void map_drop(const void *p, size_t len)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)p + pg - 1) & ~(pg - 1);
	uintptr_t hi = ((uintptr_t)p + len) & ~(pg - 1);

	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* Header and events of a block value; schema 2 events are decompressed
 * into *buf. */
static int block_open(struct cygprof_capture *cap, const MDB_val *v, size_t min, uint8_t **buf,
		      size_t *bufcap, struct blk *b)
{
	const uint8_t *z;
	size_t zoff, zlen, n;
	unsigned long long csize;
	int rc;

	rc = block_hdr(cap, v, min, b, &zoff);
	if (rc || cap->schema == 1)
		return rc;
	z = (const uint8_t *)v->mv_data + zoff;
	zlen = v->mv_size - zoff;
	csize = ZSTD_getFrameContentSize(z, zlen);
	if (csize != b->len || ZSTD_findFrameCompressedSize(z, zlen) != zlen)
		return CYGPROF_E_CORRUPT;
	rc = grow_buf(buf, bufcap, b->len ? b->len : 1);
	if (rc)
		return rc;
	if (!cap->zd) {
		cap->zd = ZSTD_createDCtx();
		if (!cap->zd)
			return -ENOMEM;
	}
	n = ZSTD_decompressDCtx(cap->zd, *buf, b->len, z, zlen);
	if (ZSTD_isError(n) || n != b->len)
		return CYGPROF_E_CORRUPT;
	b->raw = *buf;
	if (cap->rdonly) /* a writer's value may be a dirty page on its heap */
		map_drop(v->mv_data, v->mv_size);
	return 0;
}

/* A block of thread's stream in db at (k, v): 1 when it belongs to another
 * thread, 0 when it is the next one expected (*seq), else damage. */
static int block_key(struct cygprof_capture *cap, unsigned int db, uint32_t thread,
		     const MDB_val *k, uint32_t seq)
{
	if (k->mv_size != 8)
		return capture_damage(cap, "%s: key of %zu bytes", capture_db_names[db],
				      k->mv_size);
	if (get_be32(k->mv_data) != thread)
		return 1;
	/* schema 2 writes dense sequence numbers: a gap is a lost block */
	if (cap->schema >= 2 && get_be32((const uint8_t *)k->mv_data + 4) != seq)
		return db == DB_SAMPLES
			       ? capture_damage(cap, "counter %u samples block %u missing", thread,
						seq)
		       : db == DB_PSAMPLES ? capture_damage(cap, "perf samples block %u missing", seq)
		       : db == DB_OFFCPU   ? capture_damage(cap, "off-CPU block %u missing", seq)
				   : capture_damage(cap, "thread %u %s block %u missing", thread,
						    db == DB_MEM ? "memory" : "timeline", seq);
	return 0;
}

static int block_damage(struct cygprof_capture *cap, unsigned int db, const MDB_val *k, int rc)
{
	char what[96];

	if (rc != CYGPROF_E_CORRUPT)
		return rc;
	capture_describe_in(cap, db, k->mv_data, k->mv_size, what, sizeof(what));
	return capture_damage(cap, "%s: malformed", what);
}

/* ---- timeline ------------------------------------------------------------- */

/* The calls open before a schema 5 timeline block (see put_stack()), at
 * *off of its raw bytes, into st (NULL: only checked). */
struct ev_stack {
	struct cygprof_open_call *c;
	size_t n, cap;
	uint32_t depth;
	bool valid;
};

static int decode_open_calls(const struct blk *b, size_t *off, struct ev_stack *st)
{
	uint64_t depth, n, node, back, prev = 0;

	if (!get_varint(b->raw, b->len, off, &depth) || !get_varint(b->raw, b->len, off, &n) ||
	    depth > UINT32_MAX || n > depth || n > CAPTURE_STACK_MAX ||
	    n != (depth < CAPTURE_STACK_MAX ? depth : CAPTURE_STACK_MAX))
		return CYGPROF_E_CORRUPT;
	if (st) {
		if (capture_grow(&st->c, &st->cap, n ? n : 1, sizeof(*st->c)))
			return -ENOMEM;
		st->n = (size_t)n;
		st->depth = (uint32_t)depth;
	}
	for (uint64_t i = 0; i < n; i++) {
		if (!get_varint(b->raw, b->len, off, &node) ||
		    !get_varint(b->raw, b->len, off, &back))
			return CYGPROF_E_CORRUPT;
		/* nested calls are entered in order, before the block */
		if (node > UINT32_MAX || back > b->first_ts || b->first_ts - back < prev)
			return CYGPROF_E_CORRUPT;
		prev = b->first_ts - back;
		if (st) {
			st->c[i].enter_ns = prev;
			st->c[i].node = (uint32_t)node;
			st->c[i].reserved = 0;
		}
	}
	return 0;
}

/* The events of a timeline block (after its open calls in schema 5: into
 * st when not NULL) to fn in runs of up to EV_CHUNK. */
static int decode_block(const struct blk *b, unsigned int schema, struct ev_stack *st,
			uint64_t *last, struct cygprof_event *buf, size_t *nbuf,
			cygprof_event_fn fn, void *data)
{
	const uint8_t *p = b->raw;
	size_t len = b->len, off = 0, nb = *nbuf;
	uint64_t a, d, ts = b->first_ts;
	uint32_t i;
	int rc;

	/* blocks continue each other in time */
	if (ts < *last)
		return CYGPROF_E_CORRUPT;
	if (schema >= 5 && (rc = decode_open_calls(b, &off, st)))
		return rc;
	for (i = 0; i < b->count; i++) {
		if (!get_varint(p, len, &off, &a) || !get_varint(p, len, &off, &d))
			return CYGPROF_E_CORRUPT;
		if (a >> 2 > UINT32_MAX || (a & 3) > CYGPROF_EV_UNWIND || ts + d < ts)
			return CYGPROF_E_CORRUPT;
		ts += d;
		buf[nb].ts_ns = ts;
		buf[nb].node = (uint32_t)(a >> 2);
		buf[nb].kind = (uint32_t)(a & 3);
		if (++nb == EV_CHUNK) {
			rc = fn(buf, nb, data);
			nb = 0;
			if (rc) {
				*nbuf = 0;
				return rc;
			}
		}
	}
	*last = ts;
	*nbuf = nb;
	return 0;
}

/* Every block of one stream (a thread's in DB_TIMELINE or DB_MEM, a
 * counter's in DB_SAMPLES) in sequence order, checked, opened (or only its
 * header read: hdr_only) and given to fn; a CYGPROF_E_CORRUPT of fn is
 * reported as damage of that block. */
static int foreach_block(struct cygprof_capture *cap, unsigned int db, uint32_t id, size_t min,
			 bool hdr_only, int (*fn)(const struct blk *b, void *arg), void *arg)
{
	MDB_cursor *cur = NULL;
	MDB_cursor_op op = MDB_SET_RANGE;
	MDB_txn *txn;
	MDB_val k, v;
	struct blk b;
	uint8_t key[8], *raw = NULL;
	size_t rawcap = 0, zoff;
	uint32_t seq = 0;
	int rc;

	rc = capture_rbegin(cap, &txn);
	if (rc)
		return rc;
	rc = capture_err(mdb_cursor_open(txn, cap->dbi[db], &cur));
	put_be32(key, id);
	put_be32(key + 4, 0);
	k.mv_size = sizeof(key);
	k.mv_data = key;
	for (; !rc; op = MDB_NEXT, seq++) {
		rc = mdb_cursor_get(cur, &k, &v, op);
		if (rc == MDB_NOTFOUND) {
			rc = 0;
			break;
		}
		if (rc) {
			rc = capture_err(rc);
			break;
		}
		rc = block_key(cap, db, id, &k, seq);
		if (rc == 1) {
			rc = 0;
			break;
		}
		if (!rc)
			rc = capture_value(cap, db, &k, &v);
		if (!rc)
			rc = block_damage(cap, db, &k,
					  hdr_only ? block_hdr(cap, &v, min, &b, &zoff)
						   : block_open(cap, &v, min, &raw, &rawcap, &b));
		if (!rc) {
			rc = fn(&b, arg);
			rc = rc == CYGPROF_E_CORRUPT ? block_damage(cap, db, &k, rc) : rc;
		}
	}
	if (cur)
		mdb_cursor_close(cur);
	capture_rend(cap, txn);
	free(raw);
	return rc;
}

/* How many of a thread's events a reader is given: all, unless its record
 * counts more events than its calls make (cygprof_capture_get_threads()). */
static uint64_t trust_limit(const struct cygprof_capture *cap, uint32_t thread)
{
	for (size_t i = 0; i < cap->ntrust; i++)
		if (cap->trust[i].thread == thread)
			return cap->trust[i].limit;
	return UINT64_MAX;
}

struct ev_walk {
	unsigned int schema;
	uint64_t last;
	struct cygprof_event *buf;
	size_t nbuf;
	cygprof_event_fn fn;
	void *data;
	cygprof_event_fn user; /* a trimmed thread's: fn counts for it */
	void *user_data;
	uint64_t left;         /* events it may still be given */
};

/* The walk of a thread whose events are trimmed (trust_limit()): the first
 * left events, then a stop (1, turned into 0 by the caller). */
static int ev_trimmed(const struct cygprof_event *ev, size_t n, void *data)
{
	struct ev_walk *w = data;
	int rc;

	if (!w->left)
		return 1;
	if (n > w->left)
		n = (size_t)w->left;
	w->left -= n;
	rc = w->user(ev, n, w->user_data);
	return rc ? rc : w->left ? 0 : 1;
}

static int ev_block(const struct blk *b, void *arg)
{
	struct ev_walk *w = arg;

	return decode_block(b, w->schema, NULL, &w->last, w->buf, &w->nbuf, w->fn, w->data);
}

int cygprof_capture_foreach_event(struct cygprof_capture *cap, uint32_t thread_idx,
				  cygprof_event_fn fn, void *data)
{
	struct ev_walk w = { .fn = fn, .data = data, .schema = cap ? cap->schema : 0 };
	int rc;

	if (!cap || !fn)
		return -EINVAL;
	if (!cap->rdonly) {
		rc = capture_flush_thread(cap, STREAM_TIMELINE, thread_idx);
		if (rc)
			return rc;
	}
	w.left = trust_limit(cap, thread_idx);
	if (w.left != UINT64_MAX) {
		w.user = fn;
		w.user_data = data;
		w.fn = ev_trimmed;
		w.data = &w;
	}
	w.buf = malloc(EV_CHUNK * sizeof(*w.buf));
	if (!w.buf)
		return -ENOMEM;
	rc = foreach_block(cap, DB_TIMELINE, thread_idx, 2, false, ev_block, &w);
	if (!rc && w.nbuf)
		rc = w.fn(w.buf, w.nbuf, w.data);
	free(w.buf);
	/* the stop at the trimmed thread's last event is no error */
	return w.user && rc == 1 && !w.left ? 0 : rc;
}

/* The next block of a thread's stream in db, from key (thread, *next_seq):
 * *end when there is none (or it was the last possible key), else its
 * value checked and given to open (with its key) in a read transaction of
 * its own, and *next_seq moved past it.  What the memory and timeline
 * cursors share. */
static int stream_fetch(struct cygprof_capture *cap, unsigned int db, uint32_t thread,
			uint32_t *next_seq, bool *end,
			int (*open)(struct cygprof_capture *cap, const MDB_val *k, const MDB_val *v,
				    void *arg),
			void *arg)
{
	MDB_cursor *mc = NULL;
	MDB_txn *txn;
	MDB_val k, v;
	uint8_t key[8];
	uint32_t seq;
	int rc;

	rc = capture_rbegin(cap, &txn);
	if (rc)
		return rc;
	rc = capture_err(mdb_cursor_open(txn, cap->dbi[db], &mc));
	put_be32(key, thread);
	put_be32(key + 4, *next_seq);
	k.mv_size = sizeof(key);
	k.mv_data = key;
	if (!rc)
		rc = mdb_cursor_get(mc, &k, &v, MDB_SET_RANGE);
	if (rc == MDB_NOTFOUND) {
		*end = true;
		rc = 0;
		goto out;
	}
	if (rc) {
		rc = capture_err(rc);
		goto out;
	}
	rc = block_key(cap, db, thread, &k, *next_seq);
	if (rc == 1) {
		/* the next thread's blocks */
		*end = true;
		rc = 0;
		goto out;
	}
	if (!rc)
		rc = capture_value(cap, db, &k, &v);
	if (rc)
		goto out;
	seq = get_be32((const uint8_t *)k.mv_data + 4);
	if (seq == UINT32_MAX)
		*end = true; /* the last possible key: nothing after it */
	else
		*next_seq = seq + 1;
	rc = open(cap, &k, &v, arg);
out:
	if (mc)
		mdb_cursor_close(mc);
	capture_rend(cap, txn);
	return rc;
}

/* A pull cursor over one thread's timeline: one block decoded at a time,
 * so a reader that merges threads by time holds a block per thread, not
 * the timeline.  Like the memory cursor, it opens a read transaction only
 * while it fetches a block. */
struct cygprof_event_cursor {
	struct cygprof_capture *cap;
	uint32_t thread;
	uint32_t next_seq; /* key of the next block to fetch */
	bool end;
	uint64_t last;     /* time of the previous block's last event */
	struct cygprof_event *ev; /* the current block's events */
	size_t nev, cap_ev;
	uint8_t *raw;
	size_t rawcap;
	uint32_t seq;      /* the current block's key */
	bool given;        /* a block was given */
	struct ev_stack st;    /* the calls open before the current block */
	struct ev_stack probe; /* cursor_exit()'s */
	uint64_t given_n;  /* events given so far ... */
	uint64_t limit;    /* ... and how many may be (CYGPROF_THREAD_TRIMMED) */
	uint8_t *praw;
	size_t prawcap;
};

/* What opening a cursor on a thread's stream shares: the arguments checked,
 * a writer's pending block of that stream written (the cursor reads what
 * was appended), and size bytes of zeroed cursor at *out. */
static int cursor_alloc(struct cygprof_capture *cap, unsigned int stream, uint32_t thread,
			size_t size, void *out)
{
	void **cur = out;
	int rc;

	if (!cur)
		return -EINVAL;
	*cur = NULL;
	if (!cap)
		return -EINVAL;
	if (!cap->rdonly) {
		rc = capture_flush_thread(cap, stream, thread);
		if (rc)
			return rc;
	}
	*cur = calloc(1, size);
	return *cur ? 0 : -ENOMEM;
}

int cygprof_event_cursor_open(struct cygprof_capture *cap, uint32_t thread_idx,
			      struct cygprof_event_cursor **cur)
{
	struct cygprof_event_cursor *c;
	int rc = cursor_alloc(cap, STREAM_TIMELINE, thread_idx, sizeof(*c), cur);

	if (rc)
		return rc;
	c = *cur;
	c->cap = cap;
	c->thread = thread_idx;
	c->end = cap->missing[DB_TIMELINE];
	c->limit = trust_limit(cap, thread_idx);
	return 0;
}

void cygprof_event_cursor_close(struct cygprof_event_cursor *cur)
{
	if (!cur)
		return;
	free(cur->ev);
	free(cur->raw);
	free(cur->st.c);
	free(cur->probe.c);
	free(cur->praw);
	free(cur);
}

static int ev_append(const struct cygprof_event *ev, size_t n, void *data)
{
	struct cygprof_event_cursor *c = data;

	if (c->nev + n > c->cap_ev) {
		size_t want = c->cap_ev ? c->cap_ev : EV_CHUNK;
		struct cygprof_event *p;

		while (want < c->nev + n)
			want *= 2;
		p = realloc(c->ev, want * sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->ev = p;
		c->cap_ev = want;
	}
	memcpy(c->ev + c->nev, ev, n * sizeof(*ev));
	c->nev += n;
	return 0;
}

/* A cursor's next block: its value opened and decoded by fn. */
static int ev_open(struct cygprof_capture *cap, const MDB_val *k, const MDB_val *v, void *arg)
{
	struct cygprof_event_cursor *c = arg;
	struct cygprof_event buf[EV_CHUNK];
	size_t nbuf = 0;
	struct blk b;
	int rc;

	rc = block_damage(cap, DB_TIMELINE, k, block_open(cap, v, 2, &c->raw, &c->rawcap, &b));
	if (rc)
		return rc;
	c->seq = get_be32((const uint8_t *)k->mv_data + 4);
	c->given = true;
	c->st.valid = cap->schema >= 5;
	rc = decode_block(&b, cap->schema, &c->st, &c->last, buf, &nbuf, ev_append, c);
	if (!rc && nbuf)
		rc = ev_append(buf, nbuf, c);
	return rc == CYGPROF_E_CORRUPT ? block_damage(cap, DB_TIMELINE, k, rc) : rc;
}

int cygprof_event_cursor_next(struct cygprof_event_cursor *c, const struct cygprof_event **ev,
			      size_t *n)
{
	int rc;

	if (!c || !ev || !n)
		return -EINVAL;
	*ev = NULL;
	*n = 0;
	c->nev = 0;
	if (c->end)
		return 0;
	rc = stream_fetch(c->cap, DB_TIMELINE, c->thread, &c->next_seq, &c->end, ev_open, c);
	if (rc) {
		c->end = true;
		c->nev = 0;
		return rc;
	}
	if (c->limit != UINT64_MAX && c->given_n + c->nev >= c->limit) {
		/* the last consistent point: nothing after it */
		c->nev = (size_t)(c->limit - c->given_n);
		c->end = true;
	}
	c->given_n += c->nev;
	*ev = c->ev;
	*n = c->nev;
	return 0;
}

/* The number of blocks of a thread's stream in db (dense keys from 0:
 * the last key's sequence number plus one). */
static int stream_count(struct cygprof_capture *cap, MDB_txn *txn, unsigned int db,
			uint32_t thread, uint32_t *n)
{
	MDB_cursor *mc;
	MDB_val k, v;
	uint8_t key[8];
	int rc;

	*n = 0;
	rc = capture_err(mdb_cursor_open(txn, cap->dbi[db], &mc));
	if (rc)
		return rc;
	if (thread < UINT32_MAX) {
		put_be32(key, thread + 1);
		put_be32(key + 4, 0);
		k.mv_size = sizeof(key);
		k.mv_data = key;
		rc = mdb_cursor_get(mc, &k, &v, MDB_SET_RANGE);
		rc = rc == MDB_NOTFOUND ? mdb_cursor_get(mc, &k, &v, MDB_LAST)
		     : rc		 ? rc
					 : mdb_cursor_get(mc, &k, &v, MDB_PREV);
	} else {
		rc = mdb_cursor_get(mc, &k, &v, MDB_LAST);
	}
	if (!rc && k.mv_size == 8 && get_be32(k.mv_data) == thread) {
		uint32_t last = get_be32((const uint8_t *)k.mv_data + 4);
		*n = last == UINT32_MAX ? UINT32_MAX : last + 1;
	}
	mdb_cursor_close(mc);
	return rc == MDB_NOTFOUND ? 0 : capture_err(rc);
}

/* The checked value of block seq of a thread's stream in db. */
static int stream_get(struct cygprof_capture *cap, MDB_txn *txn, unsigned int db,
		      uint32_t thread, uint32_t seq, uint8_t key[8], MDB_val *k, MDB_val *v)
{
	int rc;

	put_be32(key, thread);
	put_be32(key + 4, seq);
	k->mv_size = 8;
	k->mv_data = key;
	rc = mdb_get(txn, cap->dbi[db], k, v);
	if (rc == MDB_NOTFOUND)
		return capture_damage(cap, "thread %u timeline block %u missing", thread, seq);
	return rc ? capture_err(rc) : capture_value(cap, db, k, v);
}

int cygprof_event_cursor_seek(struct cygprof_event_cursor *c, uint64_t ts_ns)
{
	struct cygprof_capture *cap;
	MDB_txn *txn;
	MDB_val k, v;
	uint8_t key[8];
	uint32_t n, lo = 0, hi, mid;
	size_t zoff;
	struct blk b;
	int rc;

	if (!c)
		return -EINVAL;
	cap = c->cap;
	c->next_seq = 0;
	c->end = cap->missing[DB_TIMELINE];
	c->last = 0;
	c->given = false;
	c->nev = 0;
	if (cap->schema < 5)
		return -EOPNOTSUPP; /* where it lands, the open calls are unknown */
	if (c->end)
		return 0;
	rc = capture_rbegin(cap, &txn);
	if (rc)
		return rc;
	rc = stream_count(cap, txn, DB_TIMELINE, c->thread, &n);
	/* the first block whose first event is at or after ts_ns; the block
	 * before it holds the events before ts_ns (and may hold some at it) */
	hi = n;
	while (!rc && lo < hi) {
		mid = lo + (hi - lo) / 2;
		rc = stream_get(cap, txn, DB_TIMELINE, c->thread, mid, key, &k, &v);
		if (!rc)
			rc = block_damage(cap, DB_TIMELINE, &k, block_hdr(cap, &v, 2, &b, &zoff));
		if (!rc && b.first_ts < ts_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	capture_rend(cap, txn);
	if (!rc)
		c->next_seq = lo ? lo - 1 : 0;
	return rc;
}

int cygprof_event_cursor_open_calls(struct cygprof_event_cursor *c,
				    const struct cygprof_open_call **calls, size_t *n,
				    uint32_t *depth)
{
	if (!c || !calls || !n || !depth)
		return -EINVAL;
	if (c->cap->schema < 5)
		return -EOPNOTSUPP;
	if (!c->given || !c->st.valid)
		return -EINVAL;
	*calls = c->st.c;
	*n = c->st.n;
	*depth = c->st.depth;
	return 0;
}

struct exit_walk {
	uint32_t level, depth;
	uint64_t exit;
};

static int exit_events(const struct cygprof_event *ev, size_t n, void *data)
{
	struct exit_walk *w = data;

	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == CYGPROF_EV_ENTER) {
			w->depth++;
		} else if (w->depth && --w->depth == w->level) {
			w->exit = ev[i].ts_ns;
			return 1;
		}
	}
	return 0;
}

struct event_cursor_probe_arg {
	struct cygprof_event_cursor *c;
	MDB_txn *txn;
	struct blk b;
};

/* cursor_exit(): the open calls of block seq into c->probe, its events at
 * a->b. */
static int probe_block(struct event_cursor_probe_arg *a, uint32_t seq)
{
	struct cygprof_event_cursor *c = a->c;
	uint8_t key[8];
	MDB_val k, v;
	size_t off = 0;
	int rc;

	rc = stream_get(c->cap, a->txn, DB_TIMELINE, c->thread, seq, key, &k, &v);
	if (!rc)
		rc = block_open(c->cap, &v, 2, &c->praw, &c->prawcap, &a->b);
	if (!rc)
		rc = decode_open_calls(&a->b, &off, &c->probe);
	return rc ? block_damage(c->cap, DB_TIMELINE, &k, rc) : 0;
}

/* Whether the call (level, enter) is open before block seq's first event. */
static int still_open(struct event_cursor_probe_arg *a, uint32_t seq, uint32_t level,
		      uint64_t enter, bool *open)
{
	int rc = probe_block(a, seq);

	*open = !rc && level < a->c->probe.n && a->c->probe.c[level].enter_ns == enter;
	return rc;
}

int cygprof_event_cursor_exit(struct cygprof_event_cursor *c, uint32_t level,
			      uint64_t enter_ns, uint64_t *exit_ns)
{
	struct event_cursor_probe_arg a = { .c = c };
	struct exit_walk w = { .level = level };
	struct cygprof_event buf[EV_CHUNK];
	uint32_t n, lo, hi, mid;
	size_t nbuf = 0;
	uint64_t last = 0;
	bool open;
	int rc;

	if (!c || !exit_ns)
		return -EINVAL;
	if (c->cap->schema < 5)
		return -EOPNOTSUPP;
	if (!c->given)
		return -EINVAL;
	if (level >= CAPTURE_STACK_MAX)
		return CYGPROF_E_NOTFOUND;
	rc = capture_rbegin(c->cap, &a.txn);
	if (rc)
		return rc;
	rc = stream_count(c->cap, a.txn, DB_TIMELINE, c->thread, &n);
	if (!rc && (c->seq == UINT32_MAX || c->seq + 1 >= n)) {
		rc = CYGPROF_E_NOTFOUND;
		goto out;
	}
	/* open before block lo, not before block hi (n: the end): the exit
	 * is in the last block before it opens no more */
	lo = c->seq + 1;
	hi = n;
	if (!rc && !(rc = still_open(&a, lo, level, enter_ns, &open)) && !open) {
		rc = CYGPROF_E_NOTFOUND; /* not a call open at the block's end */
		goto out;
	}
	if (!rc && !(rc = still_open(&a, n - 1, level, enter_ns, &open)) && open)
		lo = n - 1;
	else if (!rc)
		hi = n - 1;
	while (!rc && hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (!(rc = still_open(&a, mid, level, enter_ns, &open))) {
			if (open)
				lo = mid;
			else
				hi = mid;
		}
	}
	if (!rc)
		rc = probe_block(&a, lo);
	if (!rc) {
		w.depth = c->probe.depth;
		rc = decode_block(&a.b, c->cap->schema, NULL, &last, buf, &nbuf, exit_events, &w);
		if (!rc && nbuf)
			rc = exit_events(buf, nbuf, &w);
		rc = rc == 1 ? 0 : rc ? rc : CYGPROF_E_NOTFOUND;
	}
	if (!rc)
		*exit_ns = w.exit;
out:
	capture_rend(c->cap, a.txn);
	return rc;
}

/* ---- memory events ------------------------------------------------------------ */

/* A schema 5 block (docs/capture-format.md, "mem") being decoded: a
 * cursor into each column, the open run of times, the addresses of the
 * block's allocations (for the frees that refer to one) and its table of
 * (size, stack) pairs. */
struct mem5_pair {
	uint64_t size;
	uint32_t stack;
};

struct mem5_alloc {
	uint64_t addr, size;
};

struct mem5_dec {
	const uint8_t *p;
	size_t off[MEM5_STREAMS], end[MEM5_STREAMS];
	unsigned int at[MEM5_COL_COUNT]; /* each column's (first) stream */
	uint64_t bit[MEM5_COL_COUNT];    /* split: the next bit of its MANT stream */
	bool ns, split, claim, live, pack;
	uint64_t pal[MEM5_PAL_MAX], nhdr; /* pack: the palette, events read */
	unsigned int npal;
	uint64_t unit; /* of the times, in ns */
	uint64_t t, run_left, addr;
	struct mem5_alloc *allocs;
	uint64_t *frees;
	size_t nallocs, callocs, nfrees, cfrees;
	uint64_t *bin[MEM5_BINS]; /* the frees of each size class */
	size_t nbin[MEM5_BINS], cbin[MEM5_BINS];
	struct mem5_pair *pairs;
	size_t npairs, cpairs;
	uint32_t *stks;
	size_t nstks, cstks;
	/* claim: each free's links among the unclaimed of its class (index + 1,
	 * 0 none), the last of each class */
	struct mem5_free *fl;
	size_t cfl;
	uint32_t ftail[MEM5_BINS];
	struct mem5_live lv; /* live: the allocations not freed by reference */
};

static void mem5_release(struct mem5_dec *d)
{
	free(d->allocs);
	free(d->frees);
	free(d->pairs);
	free(d->stks);
	free(d->fl);
	free(d->lv.t);
	free(d->lv.live);
	for (unsigned int b = 0; b < MEM5_BINS; b++)
		free(d->bin[b]);
}

/* Start decoding the count events at raw[0..len) of a block whose first
 * time is first_ts; false when malformed. */
static bool mem5_open(struct mem5_dec *d, const uint8_t *raw, size_t len, uint64_t first_ts)
{
	uint64_t flags, n;
	size_t off = 0, c, ns;

	if (!get_varint(raw, len, &off, &flags) || flags & ~(uint64_t)MEM5_BLOCK_FLAGS ||
	    (flags & MEM5_BLOCK_NS && flags >> MEM5_BLOCK_UNIT_SHIFT & MEM5_BLOCK_UNIT_MASK))
		return false;
	d->ns = flags & MEM5_BLOCK_NS;
	d->split = flags & MEM5_BLOCK_SPLIT;
	d->claim = flags & MEM5_BLOCK_CLAIM;
	d->live = flags & MEM5_BLOCK_LIVE;
	d->pack = flags & MEM5_BLOCK_PACK;
	d->unit = d->ns ? 1 : capture_mem5_unit_ns(flags >> MEM5_BLOCK_UNIT_SHIFT & 3);
	for (c = ns = 0; c < MEM5_COL_COUNT; c++) {
		d->at[c] = (unsigned int)ns;
		ns += d->pack && c == MEM5_COL_HDR		? 3
		      : d->split && MEM5_SPLIT_COLS >> c & 1 ? 2
							   : 1;
	}
	for (c = 0; c < ns; c++) {
		if (!get_varint(raw, len, &off, &n))
			return false;
		d->off[c] = (size_t)n; /* lengths for now */
	}
	for (c = 0; c < ns; c++) {
		n = d->off[c];
		if (n > len - off)
			return false;
		d->off[c] = off;
		d->end[c] = off + (size_t)n;
		off += (size_t)n;
	}
	if (first_ts % d->unit)
		return false; /* times in units start on one */
	d->p = raw;
	d->nhdr = 0;
	d->npal = 0;
	if (d->pack) {
		/* the palette: all of the PAL stream */
		c = d->at[MEM5_COL_HDR];
		if (!get_varint(raw, d->end[c], &d->off[c], &n) || n > MEM5_PAL_MAX)
			return false;
		d->npal = (unsigned int)n;
		for (ns = 0; ns < d->npal; ns++)
			if (!get_varint(raw, d->end[c], &d->off[c], &d->pal[ns]))
				return false;
	}
	d->p = raw;
	d->t = first_ts / d->unit;
	d->run_left = 0;
	d->addr = 0;
	memset(d->bit, 0, sizeof(d->bit));
	d->nallocs = d->nfrees = d->npairs = d->nstks = 0;
	memset(d->nbin, 0, sizeof(d->nbin));
	memset(d->ftail, 0, sizeof(d->ftail));
	mem5_live_reset(&d->lv);
	return true;
}

/* One more element of elsize bytes at the end of *a (*n of them, room for
 * *cap); false and *oom when it cannot grow. */
static bool mem5_push(void **a, size_t *n, size_t *cap, size_t elsize, bool *oom)
{
	void *p;
	size_t c;

	if (*n == *cap) {
		c = *cap ? *cap * 2 : 256;
		p = realloc(*a, c * elsize);
		if (!p) {
			*oom = true;
			return false;
		}
		*a = p;
		*cap = c;
	}
	(*n)++;
	return true;
}

static bool mem5_col(struct mem5_dec *d, unsigned int c, uint64_t *v)
{
	unsigned int s = d->at[c], k;
	uint64_t x;

	if (d->pack && c == MEM5_COL_HDR) {
		/* 2 bits an event: an index in the palette, else an escape */
		if (d->nhdr >> 2 >= d->end[s + 1] - d->off[s + 1])
			return false;
		k = d->p[d->off[s + 1] + (d->nhdr >> 2)] >> (2 * (d->nhdr & 3)) & 3;
		d->nhdr++;
		if (k < d->npal) {
			*v = d->pal[k];
			return true;
		}
		return get_varint(d->p, d->end[s + 2], &d->off[s + 2], v);
	}
	if (!d->split || !(MEM5_SPLIT_COLS >> c & 1))
		return get_varint(d->p, d->end[s], &d->off[s], v);
	/* split: the bit length k, then the k - 1 bits below the highest */
	if (d->off[s] >= d->end[s] || (k = d->p[d->off[s]++]) > 64)
		return false;
	if (k < 2) {
		*v = k;
		return true;
	}
	if ((uint64_t)(d->end[s + 1] - d->off[s + 1]) * 8 - d->bit[c] < k - 1)
		return false;
	for (x = 1; --k; d->bit[c]++)
		x = x << 1 | (d->p[d->off[s + 1] + (d->bit[c] >> 3)] >> (d->bit[c] & 7) & 1);
	*v = x;
	return true;
}

/* With claim: the block's last free, of class bin, at the end of its
 * class's unclaimed frees; false and *oom when out of memory. */
static bool mem5_free_add(struct mem5_dec *d, unsigned int bin, bool *oom)
{
	struct mem5_free *f;
	size_t o = d->nfrees, c;

	if (o >= d->cfl) {
		c = d->cfl ? d->cfl * 2 : 4096;
		while (c <= o)
			c *= 2;
		f = realloc(d->fl, c * sizeof(*f));
		if (!f) {
			*oom = true;
			return false;
		}
		d->fl = f;
		d->cfl = c;
	}
	f = &d->fl[o];
	f->bin = (uint16_t)bin;
	f->claimed = 0;
	f->next = 0;
	f->prev = d->ftail[bin];
	if (f->prev)
		d->fl[f->prev].next = (uint32_t)o;
	d->ftail[bin] = (uint32_t)o;
	return true;
}

/* Free o (1-based) claimed by an alloc: off its class's unclaimed list. */
static void mem5_claim_free(struct mem5_dec *d, uint32_t o)
{
	struct mem5_free *f = &d->fl[o];

	if (f->claimed)
		return;
	f->claimed = 1;
	if (f->next)
		d->fl[f->next].prev = f->prev;
	else
		d->ftail[f->bin] = f->prev;
	if (f->prev)
		d->fl[f->prev].next = f->next;
}

/* The next event of the block into ev; false when malformed, -ENOMEM
 * through *oom. */
static bool mem5_next(struct mem5_dec *d, struct cygprof_mem_event *ev, bool *oom)
{
	uint64_t hdr, form, dt, n, v, size = 0, stack = 0, addr;
	unsigned int bin, b;

	if (!mem5_col(d, MEM5_COL_HDR, &hdr) || hdr >> (MEM5_FLAGS_SHIFT + 16) ||
	    (hdr >> MEM_HDR_FN_SHIFT & MEM_HDR_FN_MASK) >= CYGPROF_FN_COUNT)
		return false;
	form = hdr >> MEM5_FORM_SHIFT & 3;
	if (form > MEM5_FORM_REF)
		return false;
	if (!d->run_left) {
		if (!mem5_col(d, MEM5_COL_DT, &dt) || !mem5_col(d, MEM5_COL_RUN, &n) || !n ||
		    d->t + dt < d->t)
			return false;
		d->t += dt;
		d->run_left = n;
	}
	if (d->t > UINT64_MAX / d->unit)
		return false;
	d->run_left--;
	/* an alloc's pair first: its size class finds the free it refers to */
	if (!(hdr & MEM_HDR_OP)) {
		if (!mem5_col(d, MEM5_COL_PAIR, &v) || v > d->npairs)
			return false;
		if (!v) {
			if (!mem5_col(d, MEM5_COL_NEW, &size) || !mem5_col(d, MEM5_COL_SREF, &v) ||
			    v > d->nstks)
				return false;
			if (v == d->nstks) {
				if (!mem5_col(d, MEM5_COL_SNEW, &stack) || stack > UINT32_MAX ||
				    !mem5_push((void **)&d->stks, &d->nstks, &d->cstks,
					       sizeof(*d->stks), oom))
					return false;
				d->stks[v] = (uint32_t)stack;
			}
			stack = d->stks[v];
			if (!mem5_push((void **)&d->pairs, &d->npairs, &d->cpairs,
				       sizeof(*d->pairs), oom))
				return false;
			d->pairs[d->npairs - 1].size = size;
			d->pairs[d->npairs - 1].stack = (uint32_t)stack;
		} else {
			size = d->pairs[v - 1].size;
			stack = d->pairs[v - 1].stack;
		}
	}
	bin = MEM5_BIN_NONE;
	if (form == MEM5_FORM_REF && (hdr & MEM_HDR_OP)) {
		if (!mem5_col(d, MEM5_COL_REF, &v) || !v || v > (d->live ? d->lv.n : d->nallocs))
			return false;
		if (d->live) {
			/* the v-th last allocation still live */
			uint32_t o = mem5_live_find(&d->lv, d->lv.n - (uint32_t)v + 1);

			mem5_live_add(&d->lv, o, -1);
			v = d->nallocs - o + 1;
		}
		addr = d->allocs[d->nallocs - v].addr;
		bin = capture_mem5_bin(d->allocs[d->nallocs - v].size);
	} else if (form == MEM5_FORM_REF) {
		b = capture_mem5_bin(size);
		if (!mem5_col(d, MEM5_COL_AREF, &v) || v < 2)
			return false;
		if (v & 1) {
			if (v >> 1 > d->nfrees)
				return false;
			addr = d->frees[d->nfrees - (v >> 1)];
			if (d->claim)
				mem5_claim_free(d, (uint32_t)(d->nfrees - (v >> 1) + 1));
		} else if (d->claim) {
			/* the (v >> 1)-th last unclaimed free of the class */
			uint32_t i = d->ftail[b];

			if (v >> 1 > MEM5_CLAIM_MAX)
				return false;
			for (n = 1; i && n < v >> 1; n++)
				i = d->fl[i].prev;
			if (!i)
				return false;
			addr = d->frees[i - 1];
			mem5_claim_free(d, i);
		} else {
			if (v >> 1 > d->nbin[b])
				return false;
			addr = d->bin[b][d->nbin[b] - (v >> 1)];
		}
	} else {
		if (!mem5_col(d, MEM5_COL_ADDR, &v))
			return false;
		v = unzigzag(v);
		if (form == MEM5_FORM_ADDR16)
			v <<= 4;
		addr = d->addr + v;
	}
	if (!(hdr & MEM_HDR_OP)) {
		if (!mem5_push((void **)&d->allocs, &d->nallocs, &d->callocs, sizeof(*d->allocs),
			       oom))
			return false;
		d->allocs[d->nallocs - 1].addr = addr;
		d->allocs[d->nallocs - 1].size = size;
		if (d->live) {
			if (d->nallocs > UINT32_MAX / 2 ||
			    !mem5_live_room(&d->lv, (uint32_t)d->nallocs)) {
				*oom = true;
				return false;
			}
			mem5_live_add(&d->lv, (uint32_t)d->nallocs, 1);
		}
	} else {
		if (!mem5_push((void **)&d->frees, &d->nfrees, &d->cfrees, sizeof(*d->frees),
			       oom) ||
		    !mem5_push((void **)&d->bin[bin], &d->nbin[bin], &d->cbin[bin],
			       sizeof(uint64_t), oom))
			return false;
		d->frees[d->nfrees - 1] = addr;
		d->bin[bin][d->nbin[bin] - 1] = addr;
		if (d->claim && !mem5_free_add(d, bin, oom))
			return false;
	}
	d->addr = addr;
	ev->ts_ns = d->t * d->unit;
	ev->addr = addr;
	ev->size = size;
	ev->stack = (uint32_t)stack;
	ev->op = (uint8_t)(hdr & MEM_HDR_OP);
	ev->fn = (uint8_t)(hdr >> MEM_HDR_FN_SHIFT & MEM_HDR_FN_MASK);
	ev->flags = (uint16_t)(hdr >> MEM5_FLAGS_SHIFT);
	return true;
}

/* Smallest encoding of a memory event in a capture's blocks. */
static size_t mem_event_min(const struct cygprof_capture *cap)
{
	return cap->schema >= 5 ? CAPTURE_MEM5_EVENT_MIN : CAPTURE_MEM_EVENT_MIN;
}

/* A cursor holds the decoded bytes of one block and decodes it event by
 * event.  It opens a read transaction (or uses the writer's open one) only
 * while it fetches the next block, so any number of cursors can be open at
 * once on one handle, and a writer can still grow its map in between. */
struct cygprof_mem_cursor {
	struct cygprof_capture *cap;
	uint32_t thread;
	uint32_t next_seq;  /* key of the next block to fetch */
	bool end;           /* no more blocks */
	int err;            /* sticky error */
	uint8_t *buf;       /* the events of the current block */
	size_t len, cap_len;
	size_t off;         /* next event in buf */
	uint32_t left;      /* events left in buf */
	uint64_t ts, addr;  /* of the previous event */
	bool any;           /* a block was read: ts is valid across blocks */
	char what[96];      /* the current block, for a damage message */
	struct mem5_dec d5; /* schema 5: where each column is */
};

int cygprof_mem_cursor_open(struct cygprof_capture *cap, uint32_t thread_idx,
			    struct cygprof_mem_cursor **cur)
{
	struct cygprof_mem_cursor *c;
	int rc = cursor_alloc(cap, STREAM_MEM, thread_idx, sizeof(*c), cur);

	if (rc)
		return rc;
	c = *cur;
	c->cap = cap;
	c->thread = thread_idx;
	c->end = cap->missing[DB_MEM];
	return 0;
}

void cygprof_mem_cursor_close(struct cygprof_mem_cursor *cur)
{
	if (!cur)
		return;
	free(cur->buf);
	mem5_release(&cur->d5);
	free(cur);
}

/* The memory cursor's next block, decoded into c->buf. */
static int mem_open(struct cygprof_capture *cap, const MDB_val *k, const MDB_val *v, void *arg)
{
	struct cygprof_mem_cursor *c = arg;
	struct blk b;
	int rc;

	capture_describe(DB_MEM, k->mv_data, k->mv_size, c->what, sizeof(c->what));
	if (cap->schema == 1) {
		rc = block_hdr(cap, v, mem_event_min(cap), &b, &(size_t){ 0 });
		if (!rc)
			rc = grow_buf(&c->buf, &c->cap_len, b.len ? b.len : 1);
		if (!rc && b.len)
			memcpy(c->buf, b.raw, b.len);
	} else {
		rc = block_open(cap, v, mem_event_min(cap), &c->buf, &c->cap_len, &b);
	}
	if (!rc && cap->schema >= 5 && b.count && !mem5_open(&c->d5, c->buf, b.len, b.first_ts))
		rc = CYGPROF_E_CORRUPT;
	if (rc)
		return rc == CYGPROF_E_CORRUPT ? capture_damage(cap, "%s: malformed", c->what) : rc;
	if (!b.count)
		return 0; /* an empty schema 1 block */
	c->len = b.len;
	c->off = 0;
	c->left = b.count;
	/* blocks continue each other in time */
	if (c->any && b.first_ts < c->ts) {
		c->left = 0;
		return capture_damage(cap, "%s: time goes back", c->what);
	}
	c->ts = b.first_ts;
	c->addr = 0;
	c->end = false;
	return 0;
}

/* Decode the thread's next block into c->buf; c->end at the end. */
static int mem_fetch(struct cygprof_mem_cursor *c)
{
	return stream_fetch(c->cap, DB_MEM, c->thread, &c->next_seq, &c->end, mem_open, c);
}

/* Decode the memory event at p[*off..len) after the one at time *ts and
 * address *addr (both advanced); false when malformed. */
static bool mem_event(const uint8_t *p, size_t len, size_t *off, uint64_t *ts, uint64_t *addr,
		      struct cygprof_mem_event *ev)
{
	uint64_t hdr, dts, d, size = 0, stack = 0;

	if (!get_varint(p, len, off, &hdr) || !get_varint(p, len, off, &dts) ||
	    !get_varint(p, len, off, &d))
		return false;
	if (hdr >> (MEM_HDR_FLAGS_SHIFT + 16) ||
	    (hdr >> MEM_HDR_FN_SHIFT & MEM_HDR_FN_MASK) >= CYGPROF_FN_COUNT || *ts + dts < *ts)
		return false;
	if (!(hdr & MEM_HDR_OP) &&
	    (!get_varint(p, len, off, &size) || !get_varint(p, len, off, &stack) ||
	     stack > UINT32_MAX))
		return false;
	d = unzigzag(d);
	if (hdr & MEM_HDR_SCALED)
		d <<= 4;
	*ts += dts;
	*addr += d;
	ev->ts_ns = *ts;
	ev->addr = *addr;
	ev->size = size;
	ev->stack = (uint32_t)stack;
	ev->op = (uint8_t)(hdr & MEM_HDR_OP);
	ev->fn = (uint8_t)(hdr >> MEM_HDR_FN_SHIFT & MEM_HDR_FN_MASK);
	ev->flags = (uint16_t)(hdr >> MEM_HDR_FLAGS_SHIFT);
	return true;
}

int cygprof_mem_cursor_next(struct cygprof_mem_cursor *cur, struct cygprof_mem_event *ev)
{
	int rc;

	if (!cur || !ev)
		return -EINVAL;
	if (cur->err)
		return cur->err;
	while (!cur->left) {
		if (cur->end)
			return 0;
		rc = mem_fetch(cur);
		if (rc) {
			cur->err = rc;
			return rc;
		}
	}
	if (cur->cap->schema >= 5) {
		bool oom = false;

		if (!mem5_next(&cur->d5, ev, &oom)) {
			if (!oom)
				goto corrupt;
			cur->err = -ENOMEM;
			return cur->err;
		}
		cur->ts = ev->ts_ns;
	} else if (!mem_event(cur->buf, cur->len, &cur->off, &cur->ts, &cur->addr, ev)) {
		goto corrupt;
	}
	/* a stack id past the stash of a sealed capture that has one */
	if (cur->cap->sealed && cur->cap->nstacks_stored && ev->stack > cur->cap->nstacks_stored)
		goto corrupt;
	cur->any = true;
	cur->left--;
	return 1;
corrupt:
	cur->err = capture_damage(cur->cap, "%s: malformed", cur->what);
	return cur->err;
}

static int count_block(const struct blk *b, void *arg)
{
	*(uint64_t *)arg += b->count;
	return 0;
}

int cygprof_capture_mem_count(struct cygprof_capture *cap, uint32_t thread_idx, uint64_t *n)
{
	uint64_t total = 0;
	int rc;

	if (!n)
		return -EINVAL;
	*n = 0;
	if (!cap)
		return -EINVAL;
	if (!cap->rdonly) {
		rc = capture_flush_thread(cap, STREAM_MEM, thread_idx);
		if (rc)
			return rc;
	}
	if (cap->missing[DB_MEM])
		return 0;
	rc = foreach_block(cap, DB_MEM, thread_idx, mem_event_min(cap), true, count_block,
			   &total);
	if (!rc)
		*n = total;
	return rc;
}

/* ---- stack stash ------------------------------------------------------------- */

static int decode_stack(const MDB_val *k, const MDB_val *v, void *elem)
{
	struct cygprof_stack_node *s = elem;
	int rc = record_decode(&layout_stack, k, v, elem);

	if (!rc && (s->parent >= s->id || s->kind > CYGPROF_FRAME_IP))
		return CYGPROF_E_CORRUPT;
	return rc;
}

int capture_stack_block(struct cygprof_capture *cap, uint32_t seq, MDB_val v, uint32_t want_first,
			struct cygprof_stack_node **nodes, size_t *n, size_t *ncap, uint32_t *first,
			uint32_t *count)
{
	const uint8_t *p = v.mv_data, *raw;
	size_t off = 0, len[STK_STREAMS], at[STK_STREAMS], end[STK_STREAMS], need;
	uint64_t x, parent, proc, addr = 0, d;
	uint8_t *packed = NULL;
	uint32_t i, id;
	unsigned int c;
	int rc;

	if (v.mv_size < CAPTURE_STACK_BLOCK_HDR)
		return capture_damage(cap, "stack block %u: malformed", seq);
	*first = get_le32(p);
	*count = get_le32(p + 4);
	if (!*count || *count > CAPTURE_STACK_BLOCK_NODES || !*first ||
	    *first - 1 > UINT32_MAX - *count)
		return capture_damage(cap, "stack block %u: malformed", seq);
	if (want_first && *first != want_first)
		return capture_damage(cap, "stack block %u: first node %u, %u expected", seq, *first,
				      want_first);
	v.mv_data = (uint8_t *)v.mv_data + CAPTURE_STACK_BLOCK_HDR;
	v.mv_size -= CAPTURE_STACK_BLOCK_HDR;
	rc = unpack(cap, &v, &packed);
	if (rc) {
		free(packed);
		return rc == CYGPROF_E_CORRUPT ? capture_damage(cap, "stack block %u: malformed", seq)
					       : rc;
	}
	raw = v.mv_data;
	/* the streams' lengths, then the streams (bytes after them ignored) */
	for (c = 0; c < STK_STREAMS; c++)
		if (!get_varint(raw, v.mv_size, &off, &x) || x > v.mv_size) {
			rc = CYGPROF_E_CORRUPT;
			break;
		} else {
			len[c] = (size_t)x;
		}
	for (c = 0; !rc && c < STK_STREAMS; c++) {
		if (len[c] > v.mv_size - off) {
			rc = CYGPROF_E_CORRUPT;
			break;
		}
		at[c] = off;
		end[c] = off + len[c];
		off = end[c];
	}
	if (!rc && len[STK_KIND] != *count)
		rc = CYGPROF_E_CORRUPT;
	need = *n + *count;
	if (!rc && need > *ncap) {
		size_t nc = *ncap ? *ncap : 256;
		struct cygprof_stack_node *t;

		while (nc < need)
			nc *= 2;
		t = realloc(*nodes, nc * sizeof(*t));
		if (!t)
			rc = -ENOMEM;
		else {
			*nodes = t;
			*ncap = nc;
		}
	}
	for (i = 0; !rc && i < *count; i++) {
		struct cygprof_stack_node *s = &(*nodes)[*n + i];

		id = *first + i;
		if (!get_varint(raw, end[STK_PARENT], &at[STK_PARENT], &parent) ||
		    !get_varint(raw, end[STK_PROC], &at[STK_PROC], &proc) ||
		    !get_varint(raw, end[STK_ADDR], &at[STK_ADDR], &d) || parent >= id ||
		    proc > UINT32_MAX || raw[at[STK_KIND] + i] > CYGPROF_FRAME_IP) {
			rc = CYGPROF_E_CORRUPT;
			break;
		}
		addr += unzigzag(d);
		*s = (struct cygprof_stack_node){ .id = id, .parent = parent ? id - (uint32_t)parent : 0,
						  .proc_idx = (uint32_t)proc,
						  .kind = raw[at[STK_KIND] + i], .addr = addr };
	}
	/* every stream holds exactly its nodes' values */
	if (!rc && (at[STK_PARENT] != end[STK_PARENT] || at[STK_PROC] != end[STK_PROC] ||
		    at[STK_ADDR] != end[STK_ADDR]))
		rc = CYGPROF_E_CORRUPT;
	free(packed);
	if (rc == CYGPROF_E_CORRUPT)
		return capture_damage(cap, "stack block %u: malformed", seq);
	if (!rc)
		*n += *count;
	return rc;
}

/* Schema 6: the nodes of every stacks block, in key order. */
static int load_stack_blocks(struct cygprof_capture *cap, struct cygprof_stack_node **v,
			     size_t *n)
{
	MDB_cursor *cur = NULL;
	MDB_txn *txn;
	MDB_val k, val;
	MDB_cursor_op op = MDB_FIRST;
	size_t ncap = 0;
	uint32_t seq = 0, first, count;
	int rc;

	*v = NULL;
	*n = 0;
	rc = capture_rbegin(cap, &txn);
	if (rc)
		return rc;
	rc = capture_err(mdb_cursor_open(txn, cap->dbi[DB_STACKS], &cur));
	for (; !rc; op = MDB_NEXT, seq++) {
		rc = mdb_cursor_get(cur, &k, &val, op);
		if (rc == MDB_NOTFOUND) {
			rc = 0;
			break;
		}
		if (rc) {
			rc = capture_err(rc);
			break;
		}
		rc = capture_value(cap, DB_STACKS, &k, &val);
		if (rc)
			break;
		if (k.mv_size != 4 || get_be32(k.mv_data) != seq) {
			rc = capture_damage(cap, "stack block %u missing", seq);
			break;
		}
		rc = capture_stack_block(cap, seq, val, (uint32_t)*n + 1, v, n, &ncap, &first,
					 &count);
	}
	if (cur)
		mdb_cursor_close(cur);
	capture_rend(cap, txn);
	if (rc) {
		free(*v);
		*v = NULL;
		*n = 0;
	}
	return rc;
}

int cygprof_capture_get_stacks(struct cygprof_capture *cap, struct cygprof_stack_node **v,
			       size_t *n)
{
	size_t i;
	int rc;

	if (!cap || !v || !n)
		return -EINVAL;
	if (!cap->rdonly && (rc = capture_flush_stacks(cap)))
		return rc;
	if (cap->schema >= CAPTURE_STACK_BLOCKS_SCHEMA)
		return cap->missing[DB_STACKS] ? (*v = NULL, *n = 0, 0) : load_stack_blocks(cap, v, n);
	rc = load(cap, DB_STACKS, NULL, 0, sizeof(**v), decode_stack, NULL, (void **)v, n);
	if (rc)
		return rc;
	/* dense ids: with parent < id, every parent is in the array before
	 * its children */
	for (i = 0; i < *n; i++) {
		/* a sample's own frame exists from schema 4 on */
		if ((*v)[i].kind == CYGPROF_FRAME_IP && cap->schema < 4) {
			capture_damage(cap, "stack node %zu: malformed", i + 1);
			free(*v);
			*v = NULL;
			*n = 0;
			return CYGPROF_E_CORRUPT;
		}
		if ((*v)[i].id != i + 1) {
			capture_damage(cap, "stack node %zu missing", i + 1);
			free(*v);
			*v = NULL;
			*n = 0;
			return CYGPROF_E_CORRUPT;
		}
	}
	return 0;
}

/* ---- counters ----------------------------------------------------------------- */

static int decode_counter(const MDB_val *k, const MDB_val *v, void *elem)
{
	struct cygprof_counter *c = elem;
	int rc = record_decode(&layout_counter, k, v, elem);

	if (!rc && (c->unit > CYGPROF_UNIT_COUNT || !c->name || !c->name[0] ||
		    strlen(c->name) > CAPTURE_COUNTER_NAME_MAX))
		return CYGPROF_E_CORRUPT;
	return rc;
}

static void clear_counter(void *elem)
{
	struct cygprof_counter *c = elem;

	free(c->name);
}

int cygprof_capture_get_counters(struct cygprof_capture *cap, struct cygprof_counter **v,
				 size_t *n)
{
	size_t i;
	int rc;

	if (!cap || !v || !n)
		return -EINVAL;
	rc = load(cap, DB_COUNTERS, NULL, 0, sizeof(**v), decode_counter, clear_counter,
		  (void **)v, n);
	if (rc)
		return rc;
	/* dense ids from 0 */
	for (i = 0; i < *n; i++) {
		if ((*v)[i].id != i) {
			capture_damage(cap, "counter %zu missing", i);
			cygprof_counters_free(*v, *n);
			*v = NULL;
			*n = 0;
			return CYGPROF_E_CORRUPT;
		}
	}
	return 0;
}

void cygprof_counters_free(struct cygprof_counter *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		free(v[i].name);
	free(v);
}

/* Make room in the array *a of *cap elements of elsize bytes for want. */
static int rows_grow(void **a, size_t *cap, size_t want, size_t elsize)
{
	size_t nc;
	void *na;

	if (want <= *cap)
		return 0;
	nc = *cap ? *cap : 256;
	while (nc < want)
		nc *= 2;
	na = realloc(*a, nc * elsize);
	if (!na)
		return -ENOMEM;
	*a = na;
	*cap = nc;
	return 0;
}

/* The samples read so far of one counter. */
struct sm_walk {
	uint64_t last; /* time of the previous sample: blocks continue each other */
	struct cygprof_sample *a;
	size_t n, cap;
};

/* Append the samples of block b to w. */
static int sm_block(const struct blk *b, void *arg)
{
	struct sm_walk *w = arg;
	const uint8_t *p = b->raw;
	size_t off = 0, want = w->n + b->count;
	uint64_t d, z, ts = b->first_ts, val = 0;
	uint32_t i;
	int rc;

	if (ts < w->last)
		return CYGPROF_E_CORRUPT;
	rc = rows_grow((void **)&w->a, &w->cap, want, sizeof(*w->a));
	if (rc)
		return rc;
	for (i = 0; i < b->count; i++) {
		if (!get_varint(p, b->len, &off, &d) || !get_varint(p, b->len, &off, &z) ||
		    ts + d < ts)
			return CYGPROF_E_CORRUPT;
		ts += d;
		val += unzigzag(z);
		w->a[w->n].t_ns = ts;
		w->a[w->n].value = (int64_t)val;
		w->n++;
	}
	/* bytes after the count-th sample are ignored (versioning rules) */
	w->last = ts;
	return 0;
}

int cygprof_capture_get_samples(struct cygprof_capture *cap, uint32_t counter_id,
				struct cygprof_sample **s, size_t *n)
{
	struct sm_walk w = { 0 };
	int rc;

	if (!cap || !s || !n)
		return -EINVAL;
	*s = NULL;
	*n = 0;
	if (cap->missing[DB_SAMPLES])
		return 0;
	if (!cap->rdonly) {
		rc = capture_flush_thread(cap, STREAM_SAMPLES, counter_id);
		if (rc)
			return rc;
	}
	rc = foreach_block(cap, DB_SAMPLES, counter_id, CAPTURE_SAMPLE_MIN, false, sm_block,
			   &w);
	if (rc) {
		free(w.a);
		return rc;
	}
	*s = w.a;
	*n = w.n;
	return 0;
}

/* ---- perf samples and off-CPU intervals ------------------------------------- */

/* The records read so far of the psamples or offcpu stream: each record is
 * nv varints, the first a zigzag time delta (appends of separate calls may go
 * back in time, several rings), which put() checks and stores at rec. */
struct ps_walk {
	void *a;
	size_t n, cap, elsize;
	unsigned int nv;
	int (*put)(void *rec, uint64_t ts, const uint64_t *v);
};

static int ps_put(void *rec, uint64_t ts, const uint64_t *v)
{
	struct cygprof_psample *a = rec;

	if (v[3] > (uint64_t)UINT32_MAX || v[4] > UINT32_MAX || v[5] > UINT32_MAX ||
	    v[6] > UINT32_MAX || v[7] > UINT32_MAX)
		return CYGPROF_E_CORRUPT;
	a->t_ns = ts;
	a->weight_ns = v[1];
	a->rr_ticks = v[2] ? v[2] - 1 : UINT64_MAX;
	a->thread_idx = v[3] ? (uint32_t)(v[3] - 1) : CYGPROF_NONE;
	a->pid = (uint32_t)v[4];
	a->tid = (uint32_t)v[5];
	a->stack = (uint32_t)v[6];
	a->flags = (uint32_t)v[7];
	a->pad = 0;
	return 0;
}

static int oc_put(void *rec, uint64_t ts, const uint64_t *v)
{
	struct cygprof_offcpu *a = rec;

	if (ts + v[1] < ts || v[2] > (uint64_t)UINT32_MAX || v[3] > UINT32_MAX ||
	    v[4] > UINT32_MAX || v[5] > UINT32_MAX)
		return CYGPROF_E_CORRUPT;
	a->start_ns = ts;
	a->end_ns = ts + v[1];
	a->thread_idx = v[2] ? (uint32_t)(v[2] - 1) : CYGPROF_NONE;
	a->tid = (uint32_t)v[3];
	a->stack = (uint32_t)v[4];
	a->flags = (uint32_t)v[5];
	return 0;
}

/* The empty walks of the two streams. */
static const struct ps_walk ps_rows = { .elsize = sizeof(struct cygprof_psample), .nv = 8,
					.put = ps_put };
static const struct ps_walk oc_rows = { .elsize = sizeof(struct cygprof_offcpu), .nv = 6,
					.put = oc_put };

/* Append the records of block b to w. */
static int ps_block(const struct blk *b, void *arg)
{
	struct ps_walk *w = arg;
	const uint8_t *p = b->raw;
	size_t off = 0;
	uint64_t v[8], ts = b->first_ts;
	uint32_t i;
	unsigned int j;
	int rc;

	rc = rows_grow(&w->a, &w->cap, w->n + b->count, w->elsize);
	if (rc)
		return rc;
	for (i = 0; i < b->count; i++) {
		for (j = 0; j < w->nv; j++)
			if (!get_varint(p, b->len, &off, &v[j]))
				return CYGPROF_E_CORRUPT;
		ts += unzigzag(v[0]);
		rc = w->put((char *)w->a + w->n * w->elsize, ts, v);
		if (rc)
			return rc;
		w->n++;
	}
	/* bytes after the count-th record are ignored (versioning rules) */
	return 0;
}

static int cmp_psample(const void *x, const void *y)
{
	const struct cygprof_psample *a = x, *b = y;

	/* stable: pad holds the index while sorting */
	if (a->t_ns != b->t_ns)
		return a->t_ns < b->t_ns ? -1 : 1;
	return a->pad < b->pad ? -1 : a->pad > b->pad;
}

static int cmp_offcpu(const void *x, const void *y)
{
	const struct cygprof_offcpu *a = x, *b = y;

	if (a->start_ns != b->start_ns)
		return a->start_ns < b->start_ns ? -1 : 1;
	return a->flags < b->flags ? -1 : a->flags > b->flags;
}

static int get_stream(struct cygprof_capture *cap, unsigned int stream, unsigned int db,
		      size_t min, const struct ps_walk *rows, void **out, size_t *n)
{
	struct ps_walk w = *rows;
	int rc;

	if (cap->missing[db])
		return 0;
	if (!cap->rdonly) {
		rc = capture_flush_thread(cap, stream, CAPTURE_ONE_STREAM);
		if (rc)
			return rc;
	}
	rc = foreach_block(cap, db, CAPTURE_ONE_STREAM, min, false, ps_block, &w);
	if (rc) {
		free(w.a);
		return rc;
	}
	*out = w.a;
	*n = w.n;
	return 0;
}

int cygprof_capture_get_psamples(struct cygprof_capture *cap, struct cygprof_psample **s,
				 size_t *n)
{
	size_t i;
	int rc;

	if (!cap || !s || !n)
		return -EINVAL;
	*s = NULL;
	*n = 0;
	rc = get_stream(cap, STREAM_PSAMPLES, DB_PSAMPLES, CAPTURE_PSAMPLE_MIN, &ps_rows,
			(void **)s, n);
	if (rc || !*n)
		return rc;
	for (i = 0; i < *n; i++)
		(*s)[i].pad = (uint32_t)i;
	qsort(*s, *n, sizeof(**s), cmp_psample);
	for (i = 0; i < *n; i++)
		(*s)[i].pad = 0;
	return 0;
}

int cygprof_capture_get_offcpu(struct cygprof_capture *cap, struct cygprof_offcpu **o,
			       size_t *n)
{
	uint32_t *fl;
	size_t i;
	int rc;

	if (!cap || !o || !n)
		return -EINVAL;
	*o = NULL;
	*n = 0;
	rc = get_stream(cap, STREAM_OFFCPU, DB_OFFCPU, CAPTURE_OFFCPU_MIN, &oc_rows, (void **)o,
			n);
	if (rc || !*n)
		return rc;
	/* stable: flags holds the index while sorting */
	fl = malloc(*n * sizeof(*fl));
	if (!fl) {
		free(fl);
		free(*o);
		*o = NULL;
		*n = 0;
		return -ENOMEM;
	}
	for (i = 0; i < *n; i++) {
		fl[i] = (*o)[i].flags;
		(*o)[i].flags = (uint32_t)i;
	}
	qsort(*o, *n, sizeof(**o), cmp_offcpu);
	for (i = 0; i < *n; i++)
		(*o)[i].flags = fl[(*o)[i].flags];
	free(fl);
	return 0;
}

/* ---- one value, as cygprof_capture_put_value() gets it -------------------- */

static int ev_none(const struct cygprof_event *ev, size_t n, void *data)
{
	(void)ev;
	(void)n;
	(void)data;
	return 0;
}

/* The records of an event block value of db, decoded; the times into f. */
static int check_block(struct cygprof_capture *cap, unsigned int db, const MDB_val *v,
		       struct value_facts *f)
{
	static const size_t min[DB_COUNT] = {
		[DB_TIMELINE] = 2, [DB_MEM] = CAPTURE_MEM_EVENT_MIN, /* schema 5: less */
		[DB_SAMPLES] = CAPTURE_SAMPLE_MIN, [DB_PSAMPLES] = CAPTURE_PSAMPLE_MIN,
		[DB_OFFCPU] = CAPTURE_OFFCPU_MIN,
	};
	struct ps_walk pw = db == DB_PSAMPLES ? ps_rows : oc_rows;
	struct sm_walk sw = { 0 };
	struct cygprof_event *evbuf = NULL;
	struct cygprof_mem_event me;
	struct mem5_dec d5 = { 0 };
	uint8_t *raw = NULL;
	size_t rawcap = 0, nbuf = 0, off = 0;
	uint64_t last = 0, addr = 0;
	struct blk b;
	uint32_t i;
	int rc;

	rc = block_open(cap, v, db == DB_MEM ? mem_event_min(cap) : min[db], &raw, &rawcap, &b);
	if (rc)
		goto out;
	f->first_ts = f->last_ts = b.first_ts;
	switch (db) {
	case DB_TIMELINE:
		evbuf = malloc(EV_CHUNK * sizeof(*evbuf));
		rc = evbuf ? decode_block(&b, cap->schema, NULL, &last, evbuf, &nbuf, ev_none, NULL) : -ENOMEM;
		f->last_ts = last;
		break;
	case DB_MEM:
		last = b.first_ts;
		if (cap->schema >= 5 && !mem5_open(&d5, b.raw, b.len, b.first_ts))
			rc = CYGPROF_E_CORRUPT;
		for (i = 0; i < b.count && !rc; i++) {
			bool oom = false;

			if (cap->schema >= 5 ? !mem5_next(&d5, &me, &oom)
					     : !mem_event(b.raw, b.len, &off, &last, &addr, &me))
				rc = oom ? -ENOMEM : CYGPROF_E_CORRUPT;
			else if (me.stack > f->max_stack)
				f->max_stack = me.stack;
			if (!rc)
				last = me.ts_ns;
		}
		f->last_ts = last;
		break;
	case DB_SAMPLES:
		rc = sm_block(&b, &sw);
		f->last_ts = sw.last;
		break;
	case DB_PSAMPLES:
	case DB_OFFCPU:
		rc = ps_block(&b, &pw);
		break;
	}
out:
	free(evbuf);
	free(sw.a);
	free(pw.a);
	free(raw);
	mem5_release(&d5);
	return rc;
}

int capture_check_value(struct cygprof_capture *cap, unsigned int db, const MDB_val *k,
			const MDB_val *v, struct value_facts *f)
{
	static const size_t klen[DB_COUNT] = {
		[DB_PROCS] = 4,	  [DB_THREADS] = 4, [DB_TREES] = 4,  [DB_TIMELINE] = 8,
		[DB_OBJECTS] = 4, [DB_SYMBOLS] = 12, [DB_MEM] = 8,    [DB_STACKS] = 4,
		[DB_SITES] = 4,	  [DB_COUNTERS] = 4, [DB_SAMPLES] = 8, [DB_PSAMPLES] = 8,
		[DB_OFFCPU] = 8,  [DB_CPU] = 4,	     [DB_LATENCY] = 4,
	};
	/* the DBs of one record per value, as load() decodes them */
	static const struct {
		decode_fn decode;
		clear_fn clear;
	} records[DB_COUNT] = {
		[DB_PROCS] = { decode_proc, clear_proc },
		[DB_THREADS] = { decode_thread, NULL },
		[DB_OBJECTS] = { decode_object, clear_object },
		[DB_SYMBOLS] = { decode_symbol, clear_symbol },
		[DB_STACKS] = { decode_stack, NULL },
		[DB_COUNTERS] = { decode_counter, clear_counter },
	};
	union {
		struct cygprof_proc p;
		struct cygprof_thread t;
		struct cygprof_object o;
		struct cygprof_symbol s;
		struct cygprof_stack_node st;
		struct cygprof_counter c;
	} u;
	void *arr = NULL;
	char what[96];
	size_t n;
	int rc;

	memset(f, 0, sizeof(*f));
	memset(&u, 0, sizeof(u));
	if (db >= DB_COUNT)
		return -EINVAL;
	capture_describe_in(cap, db, k->mv_data, k->mv_size, what, sizeof(what));
	if (db == DB_META) {
		/* what cygprof_capture_set_meta() can write: C strings */
		if ((k->mv_size && memchr(k->mv_data, 0, k->mv_size)) ||
		    (v->mv_size && memchr(v->mv_data, 0, v->mv_size)))
			return capture_damage(cap, "%s: a NUL byte", what);
		return 0;
	}
	if (k->mv_size != klen[db])
		return capture_damage(cap, "%s: key of %zu bytes", capture_db_names[db],
				      k->mv_size);
	/* the one-stream DBs: the reader reads the blocks of stream 0 only */
	if ((db == DB_PSAMPLES || db == DB_OFFCPU) && get_be32(k->mv_data) != CAPTURE_ONE_STREAM)
		return capture_damage(cap, "%s: not of stream 0", what);
	if (db == DB_STACKS && cap->schema >= CAPTURE_STACK_BLOCKS_SCHEMA) {
		struct cygprof_stack_node *nodes = NULL;
		size_t nn = 0, ncap = 0;

		rc = capture_stack_block(cap, get_be32(k->mv_data), *v, 0, &nodes, &nn, &ncap,
					 &f->stk_first, &f->stk_count);
		free(nodes);
		return rc;
	}
	if (records[db].decode) {
		rc = records[db].decode(k, v, &u);
		if (records[db].clear)
			records[db].clear(&u);
	} else if (db == DB_TREES || db == DB_SITES) {
		rc = (db == DB_TREES ? decode_tree : decode_sites)(cap, get_be32(k->mv_data), *v,
								   &arr, &n);
		free(arr);
		return rc;
	} else if (db == DB_LATENCY) {
		struct cygprof_latency h;
		rc = decode_latency(k, v, &h, (struct cygprof_lat_row **)&arr, &n);
		free(arr);
	} else if (db == DB_CPU) {
		struct cygprof_cpu c;
		rc = decode_cpu(k, v, &c, (struct cygprof_cpu_node **)&arr, &n);
		free(arr);
	} else {
		rc = check_block(cap, db, v, f);
	}
	if (rc == CYGPROF_E_CORRUPT)
		return capture_damage(cap, "%s: malformed", what);
	return rc;
}

int cygprof_capture_in_progress(const struct cygprof_capture *cap)
{
	return cap && cap->in_progress;
}

/* ---- CPU samples and off-CPU time per thread ------------------------------- */

static int decode_cpu(const MDB_val *k, const MDB_val *v, struct cygprof_cpu *c,
		      struct cygprof_cpu_node **nodes, size_t *n)
{
	size_t i;
	int rc;

	memset(c, 0, sizeof(*c));
	rc = record_decode_varrows(&layout_cpu, k, v, c, &layout_cpu_node, (void **)nodes, n,
				   sizeof(**nodes));
	if (rc)
		return rc;
	/* as the writer stores them: nodes in increasing order, the parts of
	 * the samples no more than the samples */
	for (i = 1; i < *n; i++)
		if ((*nodes)[i].node <= (*nodes)[i - 1].node)
			rc = CYGPROF_E_CORRUPT;
	if (c->overhead > c->samples || c->unplaced > c->samples - c->overhead ||
	    c->method > CYGPROF_CPU_TIMER)
		rc = CYGPROF_E_CORRUPT;
	if (rc) {
		free(*nodes);
		*nodes = NULL;
		*n = 0;
	}
	return rc;
}

int cygprof_capture_get_cpu(struct cygprof_capture *cap, uint32_t thread_idx,
			    struct cygprof_cpu *c, struct cygprof_cpu_node **v, size_t *n)
{
	uint8_t key[4];
	MDB_txn *txn;
	MDB_val k = { .mv_size = sizeof(key), .mv_data = key }, val;
	int rc;

	if (!cap || !c || !v || !n)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	*v = NULL;
	*n = 0;
	if (cap->missing[DB_CPU])
		return CYGPROF_E_NOTFOUND;
	put_be32(key, thread_idx);
	rc = capture_rbegin(cap, &txn);
	if (rc)
		return rc;
	rc = mdb_get(txn, cap->dbi[DB_CPU], &k, &val);
	if (rc) {
		rc = rc == MDB_NOTFOUND ? CYGPROF_E_NOTFOUND : capture_err(rc);
	} else {
		rc = capture_value(cap, DB_CPU, &k, &val);
		if (!rc) {
			rc = decode_cpu(&k, &val, c, v, n);
			if (rc == CYGPROF_E_CORRUPT)
				rc = capture_damage(cap, "thread %u CPU record: malformed", thread_idx);
		}
	}
	capture_rend(cap, txn);
	return rc;
}

/* ---- latency histograms per thread ------------------------------------------ */

static int decode_latency(const MDB_val *k, const MDB_val *v, struct cygprof_latency *h,
			  struct cygprof_lat_row **rows, size_t *n)
{
	size_t i;
	int rc;

	memset(h, 0, sizeof(*h));
	rc = record_decode_varrows(&layout_latency, k, v, h, &layout_lat_row, (void **)rows, n,
				   sizeof(**rows));
	if (rc)
		return rc;
	/* as the writer checks them: by node, each node's range first, its
	 * buckets going up, none reaching below where the one before ended */
	for (i = 0; i < *n && !rc; i++) {
		const struct cygprof_lat_row *r = &(*rows)[i];
		int first = !i || r->node != r[-1].node;
		if (r->kind > CYGPROF_LAT_RANGE || (i && r->node < r[-1].node) ||
		    first != (r->kind == CYGPROF_LAT_RANGE) || r->hi_ns < r->lo_ns ||
		    (!first && r[-1].kind == CYGPROF_LAT_BUCKET && r->lo_ns < r[-1].hi_ns))
			rc = CYGPROF_E_CORRUPT;
	}
	if (rc) {
		free(*rows);
		*rows = NULL;
		*n = 0;
	}
	return rc;
}

int cygprof_capture_get_latency(struct cygprof_capture *cap, uint32_t thread_idx,
				struct cygprof_latency *h, struct cygprof_lat_row **v, size_t *n)
{
	uint8_t key[4];
	MDB_txn *txn;
	MDB_val k = { .mv_size = sizeof(key), .mv_data = key }, val;
	int rc;

	if (!cap || !h || !v || !n)
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	*v = NULL;
	*n = 0;
	if (cap->missing[DB_LATENCY])
		return CYGPROF_E_NOTFOUND;
	put_be32(key, thread_idx);
	rc = capture_rbegin(cap, &txn);
	if (rc)
		return rc;
	rc = mdb_get(txn, cap->dbi[DB_LATENCY], &k, &val);
	if (rc) {
		rc = rc == MDB_NOTFOUND ? CYGPROF_E_NOTFOUND : capture_err(rc);
	} else {
		rc = capture_value(cap, DB_LATENCY, &k, &val);
		if (!rc) {
			rc = decode_latency(&k, &val, h, v, n);
			if (rc == CYGPROF_E_CORRUPT)
				rc = capture_damage(cap, "thread %u latency record: malformed",
						    thread_idx);
		}
	}
	capture_rend(cap, txn);
	return rc;
}
