/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* capture-writer.c - creating a capture and writing its records.
 *
 * All puts go through wput(), which opens a write transaction when none is
 * open and logs the put so that the whole transaction can be replayed after
 * growing the map on MDB_MAP_FULL.  Outside a batch every public put commits
 * on its own (wdone).  Timeline and memory events are buffered per thread
 * in a pending block and written when the block is full, at commit and at
 * close.  A stream capture (cygprof_capture_create_stream()) has no LMDB:
 * wput() hands each value to its callback instead, everything before it
 * (encoding, blocks, keys) being the same but the packing: a stream packs
 * nothing (event blocks as stored zstd frames, trees and call sites raw),
 * so that a block put again repeats the bytes put before.  put_value()
 * stores a value such a stream handed out, checked by the reader's
 * decoders, packed as this writer packs it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zstd.h>

#include "capture-private.h"

/* Commit inside a batch once this much has been logged, which bounds both
 * the replay log and the dirty pages of one LMDB transaction. */
#define LOG_MAX ((size_t)128 << 20)
/* Map sizes. */
#define MAP_DEFAULT (sizeof(size_t) >= 8 ? (size_t)64 << 30 : (size_t)512 << 20)
#define MAP_GROW_TRIES 24

static int check_writer(struct cygprof_capture *cap)
{
	if (!cap)
		return -EINVAL;
	if (cap->rdonly)
		return CYGPROF_E_RDONLY;
	if (cap->compacted)
		return -EINVAL; /* sealed and copied: the file written is not the capture's */
	return cap->stream_err;
}

int capture_stream_call(struct cygprof_capture *cap, int (*fn)(void *arg))
{
	int rc;

	if (cap->stream_err || !fn)
		return cap->stream_err;
	rc = fn(cap->stream_arg);
	if (rc < 0)
		cap->stream_err = rc;
	return rc;
}

/* A write that lost what its transaction held: the writer's error from
 * then on (see cygprof_capture_end_failed()).  Returns rc. */
static int write_failed(struct cygprof_capture *cap, int rc)
{
	if (rc && !cap->stream_err)
		cap->stream_err = rc;
	return rc;
}

static void log_clear(struct cygprof_capture *cap)
{
	cap->log.n = 0;
	cap->log.len = 0;
}

/* Log a put; the value gets its checksum appended in the log (vlen grows
 * by CAPTURE_CRC_SIZE). */
static int log_add(struct cygprof_capture *cap, unsigned int db, const void *key, size_t klen,
		   const void *val, size_t vlen)
{
	struct wlog *l = &cap->log;
	size_t need = klen + vlen + CAPTURE_CRC_SIZE, cap2;
	void *p;

	if (l->n == l->cap) {
		cap2 = l->cap ? l->cap * 2 : 64;
		p = realloc(l->ent, cap2 * sizeof(*l->ent));
		if (!p)
			return -ENOMEM;
		l->ent = p;
		l->cap = cap2;
	}
	if (need > l->dcap - l->len) {
		cap2 = l->dcap ? l->dcap : 65536;
		while (need > cap2 - l->len)
			cap2 *= 2;
		p = realloc(l->data, cap2);
		if (!p)
			return -ENOMEM;
		l->data = p;
		l->dcap = cap2;
	}
	memcpy(l->data + l->len, key, klen);
	if (vlen)
		memcpy(l->data + l->len + klen, val, vlen);
	put_le32(l->data + l->len + klen + vlen, capture_value_crc(db, key, klen, val, vlen));
	l->ent[l->n++] = (struct wlog_ent){ .db = db, .klen = klen, .vlen = vlen + CAPTURE_CRC_SIZE,
					    .off = l->len };
	l->len += need;
	return 0;
}

static void txn_abort(struct cygprof_capture *cap)
{
	if (cap->txn)
		mdb_txn_abort(cap->txn);
	cap->txn = NULL;
	log_clear(cap);
}

static int grow(struct cygprof_capture *cap)
{
	size_t want = cap->mapsize * 2;
	int rc;

	if (want < cap->mapsize)
		return CYGPROF_E_FULL;
	/* under a finite RLIMIT_AS the map may take at most 3/4 of it */
	if (cap->addrspace_limited && want > cap->addrspace / 4 * 3)
		return CYGPROF_E_ADDRSPACE;
	/* LMDB unmaps the old map before it maps the new one, and a failed
	 * map leaves it none: its next transaction reads through a null
	 * pointer.  So first see that the new size fits beside the old map. */
	if (cap->addrspace_limited) {
		void *probe = mmap(NULL, want, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				   -1, 0);

		if (probe == MAP_FAILED)
			return CYGPROF_E_ADDRSPACE;
		munmap(probe, want);
	}
	rc = mdb_env_set_mapsize(cap->env, want);
	if (rc == ENOMEM)
		return cap->addrspace_limited ? CYGPROF_E_ADDRSPACE : CYGPROF_E_FULL;
	if (rc)
		return capture_err(rc);
	cap->mapsize = want;
	return 0;
}

static int txn_start(struct cygprof_capture *cap)
{
	MDB_envinfo info;
	int rc;

	if (cap->txn)
		return 0;
	/* grow early while no transaction is open: it is only allowed then */
	if (!mdb_env_info(cap->env, &info) &&
	    (info.me_last_pgno + 1) * (size_t)cap->psize > cap->mapsize / 2)
		grow(cap);
	rc = mdb_txn_begin(cap->env, NULL, 0, &cap->txn);
	if (rc) {
		cap->txn = NULL;
		return write_failed(cap, capture_err(rc));
	}
	log_clear(cap);
	return 0;
}

/* Abort the open transaction and redo all its logged puts in a new one,
 * growing the map first when grow_first. */
static int replay(struct cygprof_capture *cap, bool grow_first)
{
	struct wlog *l = &cap->log;
	MDB_val k, v;
	size_t i;
	int rc, tries;

	for (tries = 0; tries < MAP_GROW_TRIES; tries++) {
		if (cap->txn)
			mdb_txn_abort(cap->txn);
		cap->txn = NULL;
		if (grow_first) {
			rc = grow(cap);
			if (rc)
				goto fail;
		}
		rc = mdb_txn_begin(cap->env, NULL, 0, &cap->txn);
		if (rc) {
			cap->txn = NULL;
			rc = capture_err(rc);
			goto fail;
		}
		for (i = 0, rc = 0; i < l->n && !rc; i++) {
			k.mv_data = l->data + l->ent[i].off;
			k.mv_size = l->ent[i].klen;
			v.mv_data = l->data + l->ent[i].off + l->ent[i].klen;
			v.mv_size = l->ent[i].vlen;
			rc = mdb_put(cap->txn, cap->dbi[l->ent[i].db], &k, &v, 0);
		}
		if (!rc)
			return 0;
		if (rc != MDB_MAP_FULL) {
			rc = capture_err(rc);
			goto fail;
		}
		grow_first = true;
	}
	rc = CYGPROF_E_FULL;
fail:
	txn_abort(cap);
	return write_failed(cap, rc);
}

/* LMDB reads the pages it needs (branch pages, the free list) through its
 * read-only shared map of the file, and a page once read stays mapped: on
 * a long recording the writer's resident size grew with the capture
 * (0.5 MB/s at full rate, 338 MB after 10 minutes).  They are clean page
 * cache pages; drop them from the map every MAP_TRIM_EVERY commits (the
 * next access maps them again from the page cache).  Between transactions
 * only: no pointer into the map is held then. */
#define MAP_TRIM_EVERY 16

static void map_trim(struct cygprof_capture *cap)
{
	struct stat st;
	char line[512];
	FILE *f;
	int fd;

	if (++cap->commits_untrimmed < MAP_TRIM_EVERY)
		return;
	cap->commits_untrimmed = 0;
	/* LMDB does not give its map's address (mdb_env_info's me_mapaddr is
	 * only set with MDB_FIXEDMAP): find the shared mapping of the file */
	if (mdb_env_get_fd(cap->env, &fd) || fstat(fd, &st))
		return;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi, off, ino;
		unsigned int maj, mnr;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perms, &off, &maj, &mnr,
			   &ino) != 7)
			continue;
		if (ino == (unsigned long)st.st_ino && makedev(maj, mnr) == st.st_dev &&
		    perms[3] == 's' && perms[1] == '-')
			(void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
	}
	fclose(f);
}

static int txn_commit(struct cygprof_capture *cap)
{
	int rc, tries;

	if (!cap->txn)
		return 0;
	for (tries = 0; tries < MAP_GROW_TRIES; tries++) {
		rc = mdb_txn_commit(cap->txn);
		cap->txn = NULL; /* freed by LMDB even on failure */
		if (rc != MDB_MAP_FULL) {
			log_clear(cap);
			if (!rc)
				map_trim(cap);
			return write_failed(cap, capture_err(rc));
		}
		rc = replay(cap, true);
		if (rc)
			return rc;
	}
	txn_abort(cap);
	return write_failed(cap, CYGPROF_E_FULL);
}

static int wput(struct cygprof_capture *cap, unsigned int db, const void *key, size_t klen,
		const void *val, size_t vlen)
{
	struct wlog_ent *e;
	MDB_val k, v;
	int rc, err;

	if (!klen || klen > cap->maxkey)
		return -EINVAL;
	if (vlen > UINT32_MAX - CAPTURE_CRC_SIZE)
		return -E2BIG;
	if (cap->stream_err)
		return cap->stream_err;
	if (cap->stream) {
		rc = cap->stream->put(cap->stream_arg, db, key, klen, val, vlen);
		if (rc < 0)
			cap->stream_err = rc;
		return rc;
	}
	if (cap->txn && cap->log.len > LOG_MAX) {
		rc = txn_commit(cap);
		if (rc)
			return rc;
	}
	rc = txn_start(cap);
	if (rc)
		return rc;
	rc = log_add(cap, db, key, klen, val, vlen);
	if (rc)
		return rc;
	/* put the logged copy: it carries the checksum */
	e = &cap->log.ent[cap->log.n - 1];
	k = (MDB_val){ .mv_size = klen, .mv_data = cap->log.data + e->off };
	v = (MDB_val){ .mv_size = e->vlen, .mv_data = cap->log.data + e->off + klen };
	rc = mdb_put(cap->txn, cap->dbi[db], &k, &v, 0);
	if (!rc)
		return 0;
	if (rc == MDB_MAP_FULL)
		return replay(cap, true);
	/* drop this put and restore the transaction from the log; anything
	 * but a value LMDB refuses (a page spilled to a full disk) lost it */
	err = capture_err(rc);
	cap->log.n--;
	cap->log.len = cap->log.ent[cap->log.n].off;
	replay(cap, false);
	return err == -EINVAL ? err : write_failed(cap, err);
}

/* End of a public put: outside a batch, commit what was written. */
static int wdone(struct cygprof_capture *cap, int rc)
{
	int rc2;

	if (cap->batch || !cap->txn)
		return rc;
	rc2 = txn_commit(cap);
	return rc ? rc : rc2;
}

/* ---- create -------------------------------------------------------------- */

static size_t initial_mapsize(struct cygprof_capture *cap)
{
	const char *s = getenv(CAPTURE_MAPSIZE_ENV);
	unsigned long long v;
	struct rlimit rl;
	size_t m = MAP_DEFAULT;
	char *end;

	if (!getrlimit(RLIMIT_AS, &rl) && rl.rlim_cur != RLIM_INFINITY) {
		cap->addrspace_limited = true;
		cap->addrspace = rl.rlim_cur > SIZE_MAX ? SIZE_MAX : (size_t)rl.rlim_cur;
		/* leave the rest to the collector's own mappings */
		if (m > cap->addrspace / 4)
			m = cap->addrspace / 4;
		m &= ~(size_t)0xffff;
		if (m < 65536)
			m = 65536;
	}
	/* decimal only, as cygprof checks it (cli/env.c); anything else is
	 * ignored: a library prints nothing */
	if (s && *s >= '0' && *s <= '9') {
		errno = 0;
		v = strtoull(s, &end, 10);
		if (!errno && !*end && v >= 65536 && v <= SIZE_MAX)
			return (size_t)v;
	}
	return m;
}

static int put_raw(MDB_txn *txn, struct cygprof_capture *cap, unsigned int db, const char *key,
		   const void *val, size_t vlen)
{
	uint8_t buf[64];
	MDB_val k = { .mv_size = strlen(key), .mv_data = (void *)key };
	MDB_val v = { .mv_size = vlen + CAPTURE_CRC_SIZE, .mv_data = buf };

	if (vlen > sizeof(buf) - CAPTURE_CRC_SIZE)
		return EINVAL;
	memcpy(buf, val, vlen);
	put_le32(buf + vlen, capture_value_crc(db, k.mv_data, k.mv_size, val, vlen));
	return mdb_put(txn, cap->dbi[db], &k, &v, 0);
}

static int init_dbs(struct cygprof_capture *cap)
{
	static const char schema[] = { '0' + CYGPROF_CAPTURE_SCHEMA };
	MDB_txn *txn;
	int rc, i;

	rc = mdb_txn_begin(cap->env, NULL, 0, &txn);
	if (rc)
		return capture_err(rc);
	for (i = 0; i < DB_COUNT && !rc; i++)
		rc = mdb_dbi_open(txn, capture_db_names[i], MDB_CREATE, &cap->dbi[i]);
	if (!rc)
		rc = put_raw(txn, cap, DB_META, "magic", CAPTURE_MAGIC, strlen(CAPTURE_MAGIC));
	if (!rc)
		rc = put_raw(txn, cap, DB_META, "schema", schema, sizeof(schema));
	/* present only in schema 2 and later: a schema 1 capture with it is
	 * damaged (a flip of "2" into "1" cannot turn the checks off) */
	if (!rc)
		rc = put_raw(txn, cap, DB_META, "crc32c", "1", 1);
	if (rc) {
		mdb_txn_abort(txn);
		return capture_err(rc);
	}
	return capture_err(mdb_txn_commit(txn));
}

int capture_make_temp(const char *path, char **tmp, int *fdp)
{
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
	const char *base = path + dlen;
	char *t;
	int fd;

	char tag[64];

	if (!*base)
		return -EISDIR;
	/* what killed writers of this name left (their pid in the name) */
	capture_temp_clean(path);
	capture_temp_tag(tag, sizeof tag);
	t = malloc(dlen + strlen(base) + strlen(tag) + 10);
	if (!t)
		return -ENOMEM;
	memcpy(t, path, dlen);
	sprintf(t + dlen, ".%s.%s.XXXXXX", base, tag);
	fd = mkostemp(t, O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		free(t);
		return fd;
	}
	/* mkostemp makes 0600: give the capture the mode a plain creat(2)
	 * would (0666 less the umask) */
	{
		mode_t um = umask(022);

		umask(um);
		if (fchmod(fd, 0666 & ~um))
			(void)0; /* a capture readable by its owner only is still a capture */
	}
	*tmp = t;
	*fdp = fd;
	return 0;
}

/* A writer's handle of the current schema, with its compressor. */
static struct cygprof_capture *writer_alloc(void)
{
	struct cygprof_capture *cap = calloc(1, sizeof(*cap));

	if (!cap)
		return NULL;
	cap->schema = CYGPROF_CAPTURE_SCHEMA;
	cap->crc = true;
	cap->vstk_seq = UINT32_MAX;
	cap->block_max = CAPTURE_BLOCK_HDR + CAPTURE_RAW_MAX;
	cap->zc = ZSTD_createCCtx();
	if (!cap->zc) {
		capture_free(cap);
		return NULL;
	}
	return cap;
}

int cygprof_capture_create_stream(const struct cygprof_capture_stream *ops, void *arg,
				  struct cygprof_capture **out)
{
	struct cygprof_capture *cap;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!ops || !ops->put)
		return -EINVAL;
	cap = writer_alloc();
	if (!cap)
		return -ENOMEM;
	cap->stream = ops;
	cap->stream_arg = arg;
	cap->maxkey = CAPTURE_MAXKEY;
	*out = cap;
	return 0;
}

/* The handle of a writer of path and its new file (*fd, open): the start of
 * cygprof_capture_create() and cygprof_capture_open_rw(). */
static int new_writer(const char *path, struct cygprof_capture **out,
		      struct cygprof_capture **capp, int *fd)
{
	struct cygprof_capture *cap;
	struct stat st;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!path || !*path)
		return -EINVAL;
	/* rename(2) could not replace a directory at the end: say so now */
	if (!lstat(path, &st) && S_ISDIR(st.st_mode))
		return -EISDIR;
	cap = writer_alloc();
	if (!cap)
		return -ENOMEM;
	cap->path = strdup(path);
	rc = cap->path ? capture_make_temp(path, &cap->tmp_path, fd) : -ENOMEM;
	if (rc) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		capture_free(cap);
		return rc;
	}
	*capp = cap;
	return 0;
}

/* Hold CAPTURE_RESERVE bytes of the capture's file system in an unnamed
 * file next to it (O_TMPFILE, else a new name removed at once): nothing is
 * left behind however cygprof ends, and closing it gives the room back for
 * cygprof_capture_end_failed().  A file system that has not that much
 * room fails the create with CYGPROF_E_FULL; one that cannot allocate
 * ahead (no fallocate) gets the bytes written. */
static int reserve_make(struct cygprof_capture *cap)
{
	static const char zeros[4096];
	const char *slash = strrchr(cap->tmp_path, '/');
	char *dir;
	int fd, rc = 0;
	off_t off;

	dir = slash ? strndup(cap->tmp_path, (size_t)(slash - cap->tmp_path) + 1) : strdup(".");
	if (!dir)
		return -ENOMEM;
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && errno != ENOSPC && errno != EDQUOT && errno != EIO) {
		/* no O_TMPFILE there: a name of its own, removed at once */
		char *t = malloc(strlen(cap->tmp_path) + sizeof("-rXXXXXX"));

		errno = ENOMEM;
		if (t) {
			sprintf(t, "%s-rXXXXXX", cap->tmp_path);
			fd = mkostemp(t, O_CLOEXEC);
			if (fd >= 0)
				unlink(t);
			free(t);
		}
	}
	rc = errno;
	free(dir);
	if (fd < 0)
		return rc == ENOSPC || rc == EDQUOT ? CYGPROF_E_FULL : -rc;
	rc = 0;
	if (fallocate(fd, 0, 0, CAPTURE_RESERVE)) {
		rc = errno;
		if (rc == EOPNOTSUPP || rc == ENOSYS) {
			for (off = 0, rc = 0; off < CAPTURE_RESERVE && !rc; off += sizeof(zeros)) {
				errno = ENOSPC; /* a short write: no room for the rest */
				if (pwrite(fd, zeros, sizeof(zeros), off) != (ssize_t)sizeof(zeros))
					rc = errno;
			}
		}
	}
	if (rc) {
		close(fd);
		return rc == ENOSPC || rc == EDQUOT ? CYGPROF_E_FULL : -rc;
	}
	cap->reserve_fd = fd;
	cap->reserved = true;
	return 0;
}

int cygprof_capture_create(const char *path, struct cygprof_capture **out)
{
	struct cygprof_capture *cap;
	char fdpath[64];
	size_t mapsize;
	int rc, fd = -1;

	rc = new_writer(path, out, &cap, &fd);
	if (rc)
		return rc;
	rc = reserve_make(cap);
	if (rc)
		goto fail;
	mapsize = initial_mapsize(cap);
	cap->mapsize = mapsize;
	/* LMDB opens by name: open the very inode made above through its
	 * descriptor, so nothing else can be put in its place */
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	if (access(fdpath, F_OK))
		snprintf(fdpath, sizeof(fdpath), "%s", "");
	for (;;) {
		rc = capture_env_open(cap, *fdpath ? fdpath : cap->tmp_path, MDB_NOSYNC,
				      cap->mapsize);
		if (rc == -ENOMEM && cap->mapsize > ((size_t)16 << 20)) {
			cap->mapsize /= 2;
			continue;
		}
		break;
	}
	/* kept open, write-locked, until the writer ends: readers take it for
	 * a capture still being written */
	if (!capture_writer_lock(fd))
		cap->lock_fd = fd + 1;
	else
		close(fd);
	fd = -1;
	if (rc == -ENOMEM)
		rc = cap->addrspace_limited ? CYGPROF_E_ADDRSPACE : -ENOMEM;
	if (rc)
		goto fail;
	rc = init_dbs(cap);
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

/* ---- adding to an existing capture ------------------------------------------ */

/* Copy the file at path into fd (a new file); the mode follows. */
static int copy_into(const char *path, int fd)
{
	static char buf[1 << 16];
	struct stat st;
	ssize_t r, w, off;
	int in, rc = 0;

	in = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return -errno; /* ELOOP: a symbolic link, which the rename would replace */
	if (fstat(in, &st) || !S_ISREG(st.st_mode)) {
		close(in);
		return CYGPROF_E_NOTCAPTURE;
	}
	while (!rc && (r = read(in, buf, sizeof(buf))) != 0) {
		if (r < 0) {
			if (errno != EINTR)
				rc = -errno;
			continue;
		}
		for (off = 0; off < r && !rc; off += w) {
			w = write(fd, buf + off, (size_t)(r - off));
			if (w < 0) {
				w = 0;
				if (errno != EINTR)
					rc = errno == ENOSPC || errno == EDQUOT ? CYGPROF_E_FULL : -errno;
			}
		}
	}
	if (!rc && fchmod(fd, st.st_mode & 07777))
		(void)0; /* the umask's mode make_temp gave it will do */
	close(in);
	return rc;
}

/* The schema a capture of schema old is once reopened: its event blocks
 * and stack nodes stay as they were written, so one older than schema 5
 * becomes schema 4 (the DBs of schema 4 and 5, the event blocks of 2 to
 * 4); one of schema 5 stays schema 5 (a stack node a value, without the
 * cpu DB of schema 6: a reader of schema 5 must still read it); 6 and
 * later stay what they are. */
static unsigned int reopened_schema(unsigned int old)
{
	return old < 5 ? 4 : old < CYGPROF_CAPTURE_SCHEMA ? old : CYGPROF_CAPTURE_SCHEMA;
}

/* Writer state of a capture reopened from a closed one of schema old: the
 * next stack id and counter id (and stacks block), the next block of the
 * one-stream DBs, and every DB of the schema it becomes (an older capture
 * gets the DBs it lacks; those of a later schema stay missing). */
static int reopen_state(struct cygprof_capture *cap, unsigned int old)
{
	const char schema[] = { (char)('0' + reopened_schema(old)) };
	MDB_cursor *cur;
	MDB_val k, v;
	MDB_stat st;
	int rc, i;

	rc = txn_start(cap);
	for (i = 0; i < DB_COUNT && !rc; i++) {
		cap->missing[i] = capture_db_optional((unsigned int)i, reopened_schema(old));
		if (!cap->missing[i])
			rc = capture_err(mdb_dbi_open(cap->txn, capture_db_names[i], MDB_CREATE,
						      &cap->dbi[i]));
	}
	if (!rc)
		rc = capture_err(put_raw(cap->txn, cap, DB_META, "schema", schema, sizeof(schema)));
	if (!rc)
		rc = capture_err(mdb_stat(cap->txn, cap->dbi[DB_STACKS], &st));
	if (!rc)
		cap->nstacks = st.ms_entries > UINT32_MAX ? UINT32_MAX : (uint32_t)st.ms_entries;
	if (!rc && reopened_schema(old) >= CAPTURE_STACK_BLOCKS_SCHEMA && st.ms_entries) {
		/* in blocks (checked at open): nodes added start a new one */
		cap->stk_seq = (uint32_t)st.ms_entries;
		rc = capture_err(mdb_cursor_open(cap->txn, cap->dbi[DB_STACKS], &cur));
		if (!rc) {
			rc = capture_err(mdb_cursor_get(cur, &k, &v, MDB_LAST));
			mdb_cursor_close(cur);
		}
		if (!rc && v.mv_size < CAPTURE_STACK_BLOCK_HDR)
			rc = CYGPROF_E_CORRUPT;
		if (!rc)
			cap->nstacks = get_le32(v.mv_data) - 1 + get_le32((uint8_t *)v.mv_data + 4);
	}
	if (!rc)
		rc = capture_err(mdb_stat(cap->txn, cap->dbi[DB_COUNTERS], &st));
	if (!rc)
		cap->ncounters = st.ms_entries > UINT32_MAX ? UINT32_MAX : (uint32_t)st.ms_entries;
	if (!rc)
		rc = capture_err(mdb_stat(cap->txn, cap->dbi[DB_PSAMPLES], &st));
	if (!rc)
		cap->next_seq[STREAM_PSAMPLES] = (uint32_t)st.ms_entries;
	if (!rc)
		rc = capture_err(mdb_stat(cap->txn, cap->dbi[DB_OFFCPU], &st));
	if (!rc)
		cap->next_seq[STREAM_OFFCPU] = (uint32_t)st.ms_entries;
	if (!rc)
		rc = txn_commit(cap);
	return rc;
}

int cygprof_capture_open_rw(const char *path, struct cygprof_capture **out)
{
	struct cygprof_capture *cap, *rd = NULL;
	struct stat st;
	unsigned int old = CYGPROF_CAPTURE_SCHEMA;
	int rc, fd = -1;
	bool ok;

	rc = new_writer(path, out, &cap, &fd);
	if (rc)
		return rc;
	cap->reopened = true;
	rc = copy_into(path, fd);
	close(fd);
	/* the copy is what is checked: a file changed meanwhile is not trusted */
	if (!rc)
		rc = cygprof_capture_open(cap->tmp_path, &rd);
	if (!rc) {
		ok = rd->sealed && rd->schema >= 2;
		old = rd->schema;
		cygprof_capture_close(rd);
		if (!ok)
			rc = -EPERM;
	}
	if (!rc && stat(cap->tmp_path, &st))
		rc = -errno;
	if (!rc) {
		cap->mapsize = initial_mapsize(cap);
		/* room for the file and as much again */
		while (cap->mapsize / 2 < (uint64_t)st.st_size && cap->mapsize < SIZE_MAX / 2)
			cap->mapsize *= 2;
		rc = capture_env_open(cap, cap->tmp_path, MDB_NOSYNC, cap->mapsize);
		if (rc == -ENOMEM)
			rc = cap->addrspace_limited ? CYGPROF_E_ADDRSPACE : -ENOMEM;
	}
	if (!rc)
		rc = reopen_state(cap, old);
	if (!rc)
		cap->schema = reopened_schema(old);
	if (rc) {
		capture_free(cap);
		return rc;
	}
	*out = cap;
	return 0;
}

/* ---- batches -------------------------------------------------------------- */

int cygprof_capture_begin(struct cygprof_capture *cap)
{
	int rc = check_writer(cap);

	if (rc)
		return rc;
	if (cap->batch)
		return -EBUSY;
	rc = cap->stream ? capture_stream_call(cap, cap->stream->begin) : txn_start(cap);
	if (rc)
		return rc;
	cap->batch = true;
	return 0;
}

/* Zstandard's frame format (RFC 8878), stored: a frame with its content
 * size (4 bytes, single segment) whose blocks are raw, at most 128 KiB each.
 * It decompresses like any frame, and the frame of n bytes begins with the
 * bytes of the frame of fewer, but for its size fields. */
#define ZSTORED_MAGIC 0xFD2FB528u
#define ZSTORED_FHD 0xa0 /* 4-byte content size, single segment, no checksum */
#define ZSTORED_HDR 9    /* magic, frame header descriptor, content size */
#define ZSTORED_BLOCK ((size_t)128 << 10)

static size_t zstored(uint8_t *out, const uint8_t *src, size_t n)
{
	uint8_t *o = out + ZSTORED_HDR;
	size_t b;
	uint32_t h;

	put_le32(out, ZSTORED_MAGIC);
	out[4] = ZSTORED_FHD;
	put_le32(out + 5, (uint32_t)n);
	do {
		b = n < ZSTORED_BLOCK ? n : ZSTORED_BLOCK;
		h = (uint32_t)b << 3 | (b == n); /* block type 0 (raw), last block */
		o[0] = (uint8_t)h;
		o[1] = (uint8_t)(h >> 8);
		o[2] = (uint8_t)(h >> 16);
		memcpy(o + 3, src, b);
		o += 3 + b;
		src += b;
		n -= b;
	} while (n);
	return (size_t)(o - out);
}

/* An event block value into cap->zbuf: the schema 2 header (count,
 * first_ts, raw length) and the n bytes of events at raw as one zstd frame,
 * compressed, or stored (zstored()) by a stream capture, which packs
 * nothing: put_value() compresses a stored block as this does. */
static int block_value(struct cygprof_capture *cap, uint32_t count, uint64_t first_ts,
		       const uint8_t *raw, size_t n, int level)
{
	struct cbuf *z = &cap->zbuf;
	size_t bound, zn;
	uint8_t *out;
	void *zc = cap->zc;

	if (level == CAPTURE_MEM5_ZSTD_LEVEL && level != CAPTURE_ZSTD_LEVEL && !cap->stream) {
		if (!cap->zc_mem && !(cap->zc_mem = ZSTD_createCCtx()))
			return -ENOMEM;
		zc = cap->zc_mem;
	}
	bound = cap->stream ? ZSTORED_HDR + n + 3 * (n / ZSTORED_BLOCK + 1) : ZSTD_compressBound(n);
	z->len = 0;
	out = cbuf_grow(z, CAPTURE_ZBLOCK_HDR + bound);
	if (!out) {
		z->oom = false;
		return -ENOMEM;
	}
	put_le32(out, count);
	put_le64(out + 4, first_ts);
	put_le32(out + 12, (uint32_t)n);
	if (cap->stream)
		zn = zstored(out + CAPTURE_ZBLOCK_HDR, raw, n);
	else
		zn = ZSTD_compressCCtx(zc, out + CAPTURE_ZBLOCK_HDR, bound, raw, n, level);
	if (ZSTD_isError(zn))
		return -EIO;
	z->len = CAPTURE_ZBLOCK_HDR + zn;
	return 0;
}

/* Write a pending block (its events: p->buf after its CAPTURE_BLOCK_HDR
 * reserved bytes, or the columns of a memory block, p->m5). */
static int stacks_flush(struct cygprof_capture *cap);

static int flush_block(struct cygprof_capture *cap, struct pending *p, bool close)
{
	uint8_t key[8];
	int rc;

	/* the stack nodes the events refer to come first (a stream's
	 * receiver checks that a memory block's stacks were put) */
	rc = stacks_flush(cap);
	if (rc)
		return rc;
	/* A small block stays open: later events extend it and rewrite the key,
	 * so frequent commits do not leave many tiny blocks behind. */
	if (p->m5 ? mem5_enc_len(p->m5) >= CAPTURE_MEM5_RAW_MAX / 2
		  : p->len >= cap->block_max / 2)
		close = true;
	put_be32(key, p->thread);
	put_be32(key + 4, p->seq);
	if (p->m5) {
		uint64_t first_ts;

		/* in ns once more than one thread may have memory events; a
		 * block written quickly and not changed since keeps its unit */
		if (p->dirty || !p->quick)
			p->ns = cap->mem_threads > 1 || cap->mem_may > 1;
		rc = mem5_enc_block(p->m5, &cap->mraw, p->count, p->first_ts, p->ns, &first_ts);
		/* a block still open is written again (at its level) when it
		 * closes or the capture ends: until then, quickly */
		p->quick = !close && !cap->finishing && !cap->stream; /* a stream stores */
		if (!rc)
			rc = block_value(cap, p->count, first_ts, cap->mraw.p, cap->mraw.len,
					 p->quick ? CAPTURE_ZSTD_LEVEL : CAPTURE_MEM5_ZSTD_LEVEL);
	} else {
		rc = block_value(cap, p->count, p->first_ts, p->buf + CAPTURE_BLOCK_HDR,
				 p->len - CAPTURE_BLOCK_HDR, CAPTURE_ZSTD_LEVEL);
	}
	if (!rc)
		rc = wput(cap, p->db, key, sizeof(key), cap->zbuf.p, cap->zbuf.len);
	if (rc)
		return rc;
	p->dirty = false;
	if (close) {
		p->seq++;
		p->count = 0;
		p->len = CAPTURE_BLOCK_HDR;
		if (p->m5)
			mem5_enc_next_block(p->m5);
	}
	return 0;
}

static int flush_dirty(struct cygprof_capture *cap)
{
	struct pending *p;
	size_t i;
	int rc = 0, rc2;

	for (i = 0; i < cap->ndirty; i++) {
		p = cap->dirty[i];
		if (!p->dirty || !p->count)
			continue;
		rc2 = flush_block(cap, p, false);
		if (!rc)
			rc = rc2;
	}
	cap->ndirty = 0;
	return rc;
}

int cygprof_capture_commit(struct cygprof_capture *cap)
{
	int rc = check_writer(cap), rc2;

	if (rc)
		return rc;
	if (!cap->batch)
		return CYGPROF_E_NOTXN;
	rc = stacks_flush(cap);
	rc2 = flush_dirty(cap);
	if (!rc)
		rc = rc2;
	cap->batch = false;
	if (cap->stream)
		rc2 = rc ? 0 : capture_stream_call(cap, cap->stream->commit);
	else
		rc2 = txn_commit(cap);
	return rc ? rc : rc2;
}

/* The seal, in the last transaction: meta "txn" (the id of this
 * transaction) and "counts" (the entries of every DB after it), which a
 * reader checks so that a record that vanished or an older snapshot is
 * detected. */
static int seal(struct cygprof_capture *cap)
{
	char txt[48 * DB_COUNT], id[24];
	size_t off = 0;
	MDB_stat st;
	int rc, i;

	rc = txn_start(cap);
	if (rc)
		return rc;
	snprintf(id, sizeof(id), "%zu", mdb_txn_id(cap->txn));
	rc = wput(cap, DB_META, "txn", 3, id, strlen(id));
	if (!rc)
		rc = wput(cap, DB_META, "counts", 6, "", 0);
	for (i = 0; i < DB_COUNT && !rc; i++) {
		uint32_t digest = 0;
		MDB_cursor *cur;
		MDB_val k, v;
		int r;

		if (cap->missing[i])
			continue; /* a reopened capture of a schema without it */
		rc = capture_err(mdb_stat(cap->txn, cap->dbi[i], &st));
		if (!rc)
			rc = capture_err(mdb_cursor_open(cap->txn, cap->dbi[i], &cur));
		if (rc)
			break;
		/* keys only: the values in overflow pages are not read */
		for (r = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !r;
		     r = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
			digest = capture_key_digest(digest, k.mv_data, k.mv_size);
		mdb_cursor_close(cur);
		if (r != MDB_NOTFOUND) {
			rc = capture_err(r);
			break;
		}
		off += (size_t)snprintf(txt + off, sizeof(txt) - off, "%s%s=%zu:%08x", off ? " " : "",
					capture_db_names[i], st.ms_entries, digest);
	}
	if (!rc)
		rc = wput(cap, DB_META, "counts", 6, txt, off);
	return rc;
}

bool capture_fsync_asked(void)
{
	const char *s = getenv("CYGPROF_FSYNC");

	return s && *s && strcmp(s, "0");
}

static int writer_finish(struct cygprof_capture *cap);

int capture_writer_finish(struct cygprof_capture *cap)
{
	int rc;

	if (cap->finished)
		return cap->stream_err ? cap->stream_err : cap->finish_rc;
	cap->finished = true;
	cap->finish_rc = rc = writer_finish(cap);
	return rc;
}

/* A DB put out of key order (symbols, as the stash finds them) has leaf
 * pages about half full: LMDB splits a full page in halves, and the
 * compacting copy keeps pages as they are.  Put again in key order with
 * MDB_APPEND, which fills each page before it starts the next: in the
 * last transaction, unlogged, so that a failure (or a later MAP_FULL) is
 * undone by replay(), which redoes the transaction's logged puts on the
 * DB as it was.  Only DBs of small values (no overflow page), of at most
 * REFILL_MAX bytes.  0, or the error of the replay. */
#define REFILL_MAX ((size_t)16 << 20)

static int refill(struct cygprof_capture *cap, unsigned int db)
{
	struct cbuf b = { 0 };
	MDB_cursor *cur;
	MDB_stat st;
	MDB_val k, v;
	size_t off;
	int rc, r;

	if (cap->missing[db])
		return 0;
	rc = txn_start(cap);
	if (rc)
		return rc;
	rc = mdb_stat(cap->txn, cap->dbi[db], &st);
	if (rc || st.ms_leaf_pages < 2 || st.ms_overflow_pages ||
	    st.ms_leaf_pages > REFILL_MAX / cap->psize)
		return 0;
	rc = mdb_cursor_open(cap->txn, cap->dbi[db], &cur);
	if (rc)
		return 0;
	for (r = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !r; r = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		cbuf_le32(&b, (uint32_t)k.mv_size);
		cbuf_bytes(&b, k.mv_data, k.mv_size);
		cbuf_le32(&b, (uint32_t)v.mv_size);
		cbuf_bytes(&b, v.mv_data, v.mv_size);
	}
	mdb_cursor_close(cur);
	if (r != MDB_NOTFOUND || b.oom) {
		free(b.p);
		return 0; /* nothing changed yet */
	}
	rc = mdb_drop(cap->txn, cap->dbi[db], 0);
	for (off = 0; !rc && off < b.len;) {
		k.mv_size = get_le32(b.p + off);
		k.mv_data = b.p + off + 4;
		off += 4 + k.mv_size;
		v.mv_size = get_le32(b.p + off);
		v.mv_data = b.p + off + 4;
		off += 4 + v.mv_size;
		rc = mdb_put(cap->txn, cap->dbi[db], &k, &v, MDB_APPEND);
	}
	free(b.p);
	return rc ? replay(cap, rc == MDB_MAP_FULL) : 0;
}

static int writer_finish(struct cygprof_capture *cap)
{
	int rc, rc2;

	/* a failed write: what was committed stays as it is (sealed by
	 * cygprof_capture_end_failed(), or not at all) */
	if (cap->stream_err && !cap->stream)
		return cap->stream_err;
	cap->finishing = true; /* the open blocks are written for the last time */
	rc = stacks_flush(cap);
	rc2 = flush_dirty(cap);
	if (!rc)
		rc = rc2;
	/* and those written quickly at a commit, at their level */
	for (unsigned int st = 0; st < STREAM_COUNT && !rc; st++)
		for (size_t i = 0; i < cap->npend[st] && !rc; i++)
			if (cap->pend[st][i] && cap->pend[st][i]->quick && cap->pend[st][i]->count)
				rc = flush_block(cap, cap->pend[st][i], false);
	cap->batch = false;
	/* a stream: its close after the last put (the receiver seals) */
	if (cap->stream)
		return rc ? rc : capture_stream_call(cap, cap->stream->close);
	for (unsigned int db = 0; db < DB_COUNT && !rc; db++)
		rc = refill(cap, db);
	if (!rc)
		rc = seal(cap);
	rc2 = txn_commit(cap);
	if (!rc)
		rc = rc2;
	/* Flushed to the page cache, not forced to the disk: an fsync of a
	 * large capture costs the user seconds for a crash of the whole system
	 * only (a crash of cygprof or of the program loses nothing committed). */
	rc2 = capture_fsync_asked() ? capture_err(mdb_env_sync(cap->env, 1)) : 0;
	return rc ? rc : rc2;
}

/* LMDB refuses every transaction after a failed write of its meta page
 * (MDB_PANIC): open the same inode again (through a duplicate of LMDB's own
 * descriptor), which reads the last meta page written whole. */
static int env_reopen(struct cygprof_capture *cap)
{
	char fdpath[64];
	MDB_txn *txn;
	int fd, dfd, rc, i;

	if (mdb_env_get_fd(cap->env, &fd))
		return -EIO;
	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return -errno;
	mdb_env_close(cap->env);
	cap->env = NULL;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", dfd);
	rc = capture_env_open(cap, fdpath, MDB_NOSYNC, cap->mapsize);
	close(dfd);
	if (rc)
		return rc;
	rc = capture_err(mdb_txn_begin(cap->env, NULL, 0, &txn));
	if (rc)
		return rc;
	for (i = 0; i < DB_COUNT && !rc; i++)
		if (!cap->missing[i])
			rc = capture_err(mdb_dbi_open(txn, capture_db_names[i], 0, &cap->dbi[i]));
	if (rc) {
		mdb_txn_abort(txn);
		return rc;
	}
	return capture_err(mdb_txn_commit(txn));
}

int cygprof_capture_seal(struct cygprof_capture *cap)
{
	/* the open batch, if any, is the last transaction, with the seal */
	if (!cap || cap->rdonly || (!cap->stream && !cap->env))
		return -EINVAL;
	return capture_writer_finish(cap);
}

int cygprof_capture_end_failed(struct cygprof_capture *cap, const char *why)
{
	int failed, rc;

	if (!cap || !why || !*why || strchr(why, '\n') || cap->rdonly || cap->stream ||
	    !cap->stream_err || cap->ended)
		return -EINVAL;
	failed = cap->stream_err;
	/* what the failed write left open is dropped: its pending events are
	 * not written either (the blocks before them were lost with it) */
	txn_abort(cap);
	cap->batch = false;
	cap->ndirty = 0;
	cap->stk_dirty = false;
	if (cap->reserved) {
		close(cap->reserve_fd);
		cap->reserved = false;
	}
	cap->stream_err = 0;
	rc = txn_start(cap);
	if (rc) {
		cap->stream_err = 0;
		rc = env_reopen(cap);
		if (!rc)
			rc = txn_start(cap);
	}
	if (!rc)
		rc = wput(cap, DB_META, "ended", 5, why, strlen(why));
	if (!rc)
		rc = seal(cap);
	if (!rc)
		rc = txn_commit(cap);
	else
		txn_abort(cap);
	/* the writer's error stays the first one */
	cap->stream_err = failed;
	if (!rc)
		cap->ended = true;
	return rc;
}

int capture_flush_thread(struct cygprof_capture *cap, unsigned int stream, uint32_t thread_idx)
{
	struct pending *p;

	if (cap->stream)
		return -EOPNOTSUPP; /* nothing to read back */
	if (thread_idx >= cap->npend[stream] || !cap->pend[stream][thread_idx])
		return 0;
	p = cap->pend[stream][thread_idx];
	if (!p->dirty || !p->count)
		return 0;
	return wdone(cap, flush_block(cap, p, false));
}

/* ---- records ---------------------------------------------------------------- */

/* The library's own meta keys, which no caller writes. */
static bool own_meta_key(const char *key, size_t n)
{
	static const char *const own[] = { "magic", "schema", "crc32c", "txn", "counts", "ended" };
	size_t i;

	for (i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (n == strlen(own[i]) && !memcmp(key, own[i], n))
			return true;
	return false;
}

int cygprof_capture_set_meta(struct cygprof_capture *cap, const char *key, const char *value)
{
	int rc = check_writer(cap);

	if (rc)
		return rc;
	if (!key || !value)
		return -EINVAL;
	if (own_meta_key(key, strlen(key)))
		return -EPERM;
	return wdone(cap, wput(cap, DB_META, key, strlen(key), value, strlen(value)));
}

/* A packed value (trees, sites) into cap->zbuf: LE32 raw length, then a
 * zstd frame of the raw bytes, or the raw bytes themselves when that is not
 * smaller or would expand more than a reader accepts (CAPTURE_PACK_RATIO),
 * and always for a stream capture, which packs nothing: put_value() packs
 * a raw value as this does. */
static int packed_value(struct cygprof_capture *cap, const uint8_t *raw, size_t n, int level)
{
	struct cbuf *z = &cap->zbuf;
	size_t bound = ZSTD_compressBound(n), zn = 0;
	uint8_t *out;

	if (n > UINT32_MAX)
		return -E2BIG;
	z->len = 0;
	out = cbuf_grow(z, 4 + (bound > n ? bound : n));
	if (!out) {
		z->oom = false;
		return -ENOMEM;
	}
	put_le32(out, (uint32_t)n);
	if (!cap->stream)
		zn = ZSTD_compressCCtx(cap->zc, out + 4, bound, raw, n, level);
	if (cap->stream || ZSTD_isError(zn) || zn >= n ||
	    n > zn * CAPTURE_PACK_RATIO + CAPTURE_PACK_SLACK) {
		if (n)
			memcpy(out + 4, raw, n);
		zn = n;
	}
	z->len = 4 + zn;
	return 0;
}

/* A tree or sites value packed: from schema 7 its rows column-coded
 * (LE32 raw length, CAPTURE_COLS_MAGIC, a zstd frame of the columns) when
 * that is smaller than packed_value()'s frame of the rows; a stream
 * capture packs nothing (its receiver packs the raw rows so). */
static int packed_rows(struct cygprof_capture *cap, const uint8_t *raw, size_t n)
{
	struct cbuf *z = &cap->zbuf, *c = &cap->cols;
	size_t bound, zn, m = sizeof(CAPTURE_COLS_MAGIC) - 1;
	int rc = packed_value(cap, raw, n, CAPTURE_ZSTD_LEVEL);

	if (rc || cap->stream || cap->schema < CAPTURE_COLS_SCHEMA)
		return rc;
	if (!capture_cols_encode(raw, n, c)) {
		c->oom = false;
		return 0; /* not rows, or no memory for it: the frame will do */
	}
	bound = ZSTD_compressBound(c->len);
	if (!cbuf_grow(c, bound)) {
		c->oom = false;
		return 0;
	}
	c->len -= bound; /* the frame goes after the columns */
	zn = ZSTD_compressCCtx(cap->zc, c->p + c->len, bound, c->p, c->len,
			       CAPTURE_COLS_ZSTD_LEVEL);
	/* smaller, and never exactly 4 + n bytes (which reads as raw) */
	if (ZSTD_isError(zn) || 4 + m + zn >= z->len || m + zn >= n ||
	    n > zn * CAPTURE_PACK_RATIO + CAPTURE_PACK_SLACK)
		return 0;
	z->len = 0;
	cbuf_le32(z, (uint32_t)n);
	cbuf_bytes(z, CAPTURE_COLS_MAGIC, m);
	cbuf_bytes(z, c->p + c->len, zn);
	if (z->oom) {
		z->oom = false;
		return -ENOMEM;
	}
	return 0;
}

/* Do not keep the buffers of a huge value around. */
static void trim_buffers(struct cygprof_capture *cap)
{
	if (cap->scratch.cap > ((size_t)1 << 20)) {
		free(cap->scratch.p);
		cap->scratch = (struct cbuf){ 0 };
	}
	if (cap->zbuf.cap > ((size_t)4 << 20)) {
		free(cap->zbuf.p);
		cap->zbuf = (struct cbuf){ 0 };
	}
	if (cap->cols.cap > ((size_t)4 << 20)) {
		free(cap->cols.p);
		cap->cols = (struct cbuf){ 0 };
	}
}

static int put_scratch(struct cygprof_capture *cap, unsigned int db, const uint8_t *key,
		       size_t klen)
{
	struct cbuf *b = &cap->scratch;
	int rc;

	if (b->oom) {
		b->oom = false;
		return -ENOMEM;
	}
	if (db == DB_TREES || db == DB_SITES) {
		rc = packed_rows(cap, b->p, b->len);
		if (!rc)
			rc = wput(cap, db, key, klen, cap->zbuf.p, cap->zbuf.len);
		rc = wdone(cap, rc);
	} else {
		rc = wdone(cap, wput(cap, db, key, klen, b->p, b->len));
	}
	trim_buffers(cap);
	return rc;
}

/* Store rec, a record of db laid out by l (capture-record.c). */
static int put_record(struct cygprof_capture *cap, unsigned int db,
		      const struct record_layout *l, const void *rec)
{
	uint8_t key[12];
	size_t klen = record_encode(l, rec, key, &cap->scratch);

	return put_scratch(cap, db, key, klen);
}

int cygprof_capture_put_proc(struct cygprof_capture *cap, const struct cygprof_proc *p)
{
	int rc = check_writer(cap);

	if (rc)
		return rc;
	if (!p)
		return -EINVAL;
	return put_record(cap, DB_PROCS, &layout_proc, p);
}

int cygprof_capture_put_thread(struct cygprof_capture *cap, const struct cygprof_thread *t)
{
	int rc = check_writer(cap);

	if (rc)
		return rc;
	if (!t)
		return -EINVAL;
	return put_record(cap, DB_THREADS, &layout_thread, t);
}

int cygprof_capture_put_cpu(struct cygprof_capture *cap, const struct cygprof_cpu *c,
			    const struct cygprof_cpu_node *v, size_t n)
{
	uint8_t key[4];
	size_t i;
	int rc = check_writer(cap);

	if (rc)
		return rc;
	if (!c || (n && !v) || c->pad || n > UINT32_MAX)
		return -EINVAL;
	if (cap->missing[DB_CPU])
		return -EPERM;
	for (i = 0; i < n; i++)
		if (v[i].pad || (i && v[i].node <= v[i - 1].node))
			return -EINVAL;
	record_encode_varrows(&layout_cpu, c, key, &layout_cpu_node, v, n, sizeof(*v),
			      &cap->scratch);
	return put_scratch(cap, DB_CPU, key, sizeof(key));
}

int cygprof_capture_put_latency(struct cygprof_capture *cap, const struct cygprof_latency *h,
				const struct cygprof_lat_row *v, size_t n)
{
	uint8_t key[4];
	size_t i;
	int rc = check_writer(cap);

	if (rc)
		return rc;
	if (!h || (n && !v) || n > UINT32_MAX)
		return -EINVAL;
	if (cap->missing[DB_LATENCY])
		return -EPERM;
	for (i = 0; i < n; i++) {
		if (v[i].kind > CYGPROF_LAT_RANGE || (i && v[i].node < v[i - 1].node))
			return -EINVAL;
		/* a node starts with its range; its buckets go up */
		int first = !i || v[i].node != v[i - 1].node;
		if (first != (v[i].kind == CYGPROF_LAT_RANGE) || v[i].hi_ns < v[i].lo_ns ||
		    (!first && v[i - 1].kind == CYGPROF_LAT_BUCKET && v[i].lo_ns < v[i - 1].hi_ns))
			return -EINVAL;
	}
	record_encode_varrows(&layout_latency, h, key, &layout_lat_row, v, n, sizeof(*v),
			      &cap->scratch);
	return put_scratch(cap, DB_LATENCY, key, sizeof(key));
}

int cygprof_capture_put_tree(struct cygprof_capture *cap, uint32_t thread_idx,
			     const struct cygprof_node *nodes, size_t n)
{
	struct cbuf *b = &cap->scratch;
	uint8_t key[4];
	size_t i;
	int rc = check_writer(cap);

	if (rc)
		return rc;
	if ((n && !nodes) || n > (UINT32_MAX - CAPTURE_TREE_HDR) / CAPTURE_NODE_SIZE)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (nodes[i].parent != CYGPROF_NONE && nodes[i].parent >= i)
			return -EINVAL;
	put_be32(key, thread_idx);
	record_encode_rows(&layout_node, nodes, n, sizeof(*nodes), b);
	return put_scratch(cap, DB_TREES, key, sizeof(key));
}

int cygprof_capture_put_sites(struct cygprof_capture *cap, uint32_t thread_idx,
			      const struct cygprof_callsite *v, size_t n)
{
	struct cbuf *b = &cap->scratch;
	uint8_t key[4];
	int rc = check_writer(cap);

	if (rc)
		return rc;
	if ((n && !v) || n > (UINT32_MAX - CAPTURE_TREE_HDR) / CAPTURE_SITE_SIZE)
		return -EINVAL;
	put_be32(key, thread_idx);
	record_encode_rows(&layout_site, v, n, sizeof(*v), b);
	return put_scratch(cap, DB_SITES, key, sizeof(key));
}

int cygprof_capture_put_object(struct cygprof_capture *cap, const struct cygprof_object *o)
{
	int rc = check_writer(cap);

	if (rc)
		return rc;
	if (!o || o->build_id_len > sizeof(o->build_id))
		return -EINVAL;
	return put_record(cap, DB_OBJECTS, &layout_object, o);
}

int cygprof_capture_put_symbol(struct cygprof_capture *cap, const struct cygprof_symbol *s)
{
	int rc = check_writer(cap);

	if (rc)
		return rc;
	if (!s)
		return -EINVAL;
	return put_record(cap, DB_SYMBOLS, &layout_symbol, s);
}

/* ---- timeline ------------------------------------------------------------- */

static struct pending *pending_get(struct cygprof_capture *cap, unsigned int stream,
				   uint32_t thread)
{
	struct pending **pp, *p;
	size_t n, old = cap->npend[stream];

	if (thread >= old) {
		n = old ? old : 16;
		while (n <= thread)
			n *= 2;
		pp = realloc(cap->pend[stream], n * sizeof(*pp));
		if (!pp)
			return NULL;
		memset(pp + old, 0, (n - old) * sizeof(*pp));
		cap->pend[stream] = pp;
		cap->npend[stream] = n;
	}
	p = cap->pend[stream][thread];
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		p->db = stream == STREAM_MEM	    ? DB_MEM
			: stream == STREAM_SAMPLES  ? DB_SAMPLES
			: stream == STREAM_PSAMPLES ? DB_PSAMPLES
			: stream == STREAM_OFFCPU   ? DB_OFFCPU
						    : DB_TIMELINE;
		p->thread = thread;
		p->len = CAPTURE_BLOCK_HDR;
		p->seq = cap->next_seq[stream]; /* 0 but in a reopened capture */
		cap->pend[stream][thread] = p;
	}
	return p;
}

static int mark_dirty(struct cygprof_capture *cap, struct pending *p)
{
	struct pending **d;
	size_t n;

	if (p->dirty)
		return 0;
	if (cap->ndirty == cap->cdirty) {
		n = cap->cdirty ? cap->cdirty * 2 : 16;
		d = realloc(cap->dirty, n * sizeof(*d));
		if (!d)
			return -ENOMEM;
		cap->dirty = d;
		cap->cdirty = n;
	}
	cap->dirty[cap->ndirty++] = p;
	p->dirty = true;
	return 0;
}

static int reserve(struct pending *p, size_t want)
{
	uint8_t *buf;
	size_t n;

	if (want <= p->cap)
		return 0;
	n = p->cap ? p->cap : 256;
	while (n < want)
		n *= 2;
	buf = realloc(p->buf, n);
	if (!buf)
		return -ENOMEM;
	p->buf = buf;
	p->cap = n;
	return 0;
}

/* Room in p for n more records of at most max bytes each (a block holds at
 * most block_max), and p on the dirty list. */
static int pending_reserve(struct cygprof_capture *cap, struct pending *p, size_t n, size_t max)
{
	size_t want = n > cap->block_max / max ? cap->block_max : p->len + n * max;
	int rc;

	if (want > cap->block_max)
		want = cap->block_max;
	rc = reserve(p, want);
	return rc ? rc : mark_dirty(cap, p);
}

/* Before a record of at most max bytes: write and close a full block. */
static int pending_room(struct cygprof_capture *cap, struct pending *p, size_t max)
{
	int rc;

	if (p->len + max <= cap->block_max)
		return 0;
	rc = flush_block(cap, p, true);
	return rc ? rc : mark_dirty(cap, p);
}

/* pending_room(), and a new block of memory events or samples starts
 * afresh at time ts: every block decodes on its own. */
static int pending_next(struct cygprof_capture *cap, struct pending *p, size_t max, uint64_t ts)
{
	int rc = pending_room(cap, p, max);

	if (!rc && !p->count) {
		p->first_ts = ts;
		p->last_ts = ts;
		p->last_addr = 0;
	}
	return rc;
}

/* A writer that may append to a stream of timed records: not a reopened
 * capture (a block must continue the stored ones in time). */
static int check_appender(struct cygprof_capture *cap)
{
	int rc = check_writer(cap);

	return rc ? rc : cap->reopened ? -EPERM : 0;
}

/* The pending block of stream/key, once the times of the n records of elsize
 * bytes (a uint64_t at ts_off) are checked to go on from the stream's last,
 * with room reserved for n records of max bytes: a rejected call appends
 * nothing. */
static int timed_check(struct cygprof_capture *cap, unsigned int stream, uint32_t key,
		       const void *recs, size_t n, size_t elsize, size_t ts_off,
		       struct pending **pp)
{
	struct pending *p = pending_get(cap, stream, key);
	uint64_t last, ts;
	size_t i;

	if (!p)
		return -ENOMEM;
	last = p->any ? p->last_ts : 0;
	for (i = 0; i < n; i++) {
		memcpy(&ts, (const uint8_t *)recs + i * elsize + ts_off, sizeof(ts));
		if (ts < last)
			return -EINVAL;
		last = ts;
	}
	*pp = p;
	return 0;
}

static int timed_begin(struct cygprof_capture *cap, unsigned int stream, uint32_t key,
		       const void *recs, size_t n, size_t elsize, size_t ts_off, size_t max,
		       struct pending **pp)
{
	int rc = timed_check(cap, stream, key, recs, n, elsize, ts_off, pp);

	return rc ? rc : pending_reserve(cap, *pp, n, max);
}

/* The calls open before a timeline block's first event (at first_ts), at
 * out: varint(depth), varint(n stored: the outermost, at most
 * CAPTURE_STACK_MAX), then per call varint(node), varint(first_ts - enter).
 * Returns the bytes written (at most CAPTURE_STACK_BYTES). */
static size_t put_stack(uint8_t *out, const struct pending *p, uint64_t first_ts)
{
	size_t n = p->depth < CAPTURE_STACK_MAX ? p->depth : CAPTURE_STACK_MAX;
	uint8_t *o = out;

	o += put_varint(o, p->depth);
	o += put_varint(o, n);
	for (size_t i = 0; i < n; i++) {
		o += put_varint(o, p->stk[i].node);
		o += put_varint(o, first_ts - p->stk[i].enter);
	}
	return (size_t)(o - out);
}

/* The open calls after event e: an enter opens one, an exit or unwind
 * closes the innermost (one with none open was entered before the
 * thread's timeline began: a fork child's). */
static int track_stack(struct pending *p, const struct cygprof_event *e)
{
	if (e->kind != CYGPROF_EV_ENTER) {
		if (p->depth)
			p->depth--;
		return 0;
	}
	if (capture_grow(&p->stk, &p->cstk, p->depth + 1, sizeof(*p->stk)))
		return -ENOMEM;
	p->stk[p->depth].node = e->node;
	p->stk[p->depth++].enter = e->ts_ns;
	return 0;
}

int cygprof_capture_append_events(struct cygprof_capture *cap, uint32_t thread_idx,
				  const struct cygprof_event *ev, size_t n)
{
	struct pending *p;
	uint64_t last;
	size_t i, want;
	uint8_t *out;
	int rc = check_appender(cap);

	if (rc)
		return rc;
	if (!n)
		return 0;
	if (!ev)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (ev[i].kind > CYGPROF_EV_UNWIND)
			return -EINVAL;
	rc = timed_begin(cap, STREAM_TIMELINE, thread_idx, ev, n, sizeof(*ev),
			 offsetof(struct cygprof_event, ts_ns), CAPTURE_EVENT_MAX, &p);
	if (rc)
		return rc;
	last = p->last_ts;
	for (i = 0; i < n; i++) {
		p->last_ts = last;
		rc = pending_room(cap, p, CAPTURE_EVENT_MAX);
		if (rc)
			break;
		if (!p->count) {
			p->first_ts = ev[i].ts_ns;
			last = ev[i].ts_ns;
			/* a new block: the calls open before it, then room for
			 * the rest of the events as pending_reserve() made */
			want = p->len + CAPTURE_STACK_BYTES + (n - i) * CAPTURE_EVENT_MAX;
			if (want > cap->block_max + CAPTURE_STACK_BYTES)
				want = cap->block_max + CAPTURE_STACK_BYTES;
			if ((rc = reserve(p, want)))
				break;
			p->len += put_stack(p->buf + p->len, p, p->first_ts);
		}
		if ((rc = track_stack(p, &ev[i])))
			break;
		out = p->buf + p->len;
		out += put_varint(out, (uint64_t)ev[i].node << 2 | ev[i].kind);
		out += put_varint(out, ev[i].ts_ns - last);
		p->len = (size_t)(out - p->buf);
		p->count++;
		last = ev[i].ts_ns;
		p->any = true;
	}
	p->last_ts = last;
	return wdone(cap, rc);
}

/* ---- memory events ----------------------------------------------------------- */

/* Schema 5 (docs/capture-format.md, "mem"): each event goes into the
 * columns of its thread's open block as it is appended; the times in ns
 * and in 10, 100 and 1000 us, as runs of events at one time.
 * flush_block() puts the columns together (mem5_enc_block() in
 * capture-memenc.c: the block flags
 * SPLIT, CLAIM, LIVE and PACK) with the times in the finest of those units
 * whose runs are long enough while only one thread has memory events (its
 * order is the order of the stream), in ns once there are more (a reader
 * merges the threads by time: their order must stay the one they had). */

void cygprof_capture_mem_threads(struct cygprof_capture *cap, uint32_t threads)
{
	if (cap && threads > cap->mem_may)
		cap->mem_may = threads;
}

int cygprof_capture_append_mem(struct cygprof_capture *cap, uint32_t thread_idx,
			       const struct cygprof_mem_event *ev, size_t n)
{
	struct pending *p;
	size_t i;
	int rc = check_appender(cap);

	if (rc)
		return rc;
	if (!n)
		return 0;
	if (!ev)
		return -EINVAL;
	/* one pass over the events (a second one for the times was 5% of
	 * the collector's samples on a malloc/free loop): the times in order
	 * here, the first after the thread's last in timed_check() */
	for (i = 0; i < n; i++)
		if (ev[i].op > CYGPROF_MEM_FREE || ev[i].fn >= CYGPROF_FN_COUNT ||
		    (ev[i].op == CYGPROF_MEM_FREE && (ev[i].size | ev[i].stack)) ||
		    (i && ev[i].ts_ns < ev[i - 1].ts_ns))
			return -EINVAL;
	rc = timed_check(cap, STREAM_MEM, thread_idx, ev, 1, sizeof(*ev),
			 offsetof(struct cygprof_mem_event, ts_ns), &p);
	if (rc)
		return rc;
	if (!p->m5) {
		p->m5 = mem5_enc_new();
		if (!p->m5)
			return -ENOMEM;
	}
	rc = mark_dirty(cap, p);
	if (rc)
		return rc;
	if (!p->any)
		cap->mem_threads++;
	for (i = 0; i < n;) {
		size_t k;

		if (!p->count)
			p->first_ts = ev[i].ts_ns;
		k = mem5_enc_append(p->m5, ev + i, n - i, 4 * CAPTURE_MEM_EVENT_MAX, &rc);
		if (k) {
			i += k;
			p->count += (uint32_t)k;
			p->last_ts = ev[i - 1].ts_ns;
			p->any = true;
		}
		if (i == n || rc)
			break;
		/* a full block is written and closed (the next one starts afresh) */
		rc = flush_block(cap, p, true);
		if (!rc)
			rc = mark_dirty(cap, p);
		if (rc)
			break;
	}
	return wdone(cap, rc);
}

/* ---- stack stash ------------------------------------------------------------- */

static void cbuf_varint(struct cbuf *b, uint64_t v)
{
	uint8_t *p = cbuf_grow(b, 10);

	if (p)
		b->len -= 10 - put_varint(p, v);
}

/* Schema 6: the open block of stack nodes into the stacks DB (under its
 * key again, until it is full: then the next block starts).  Nothing when
 * it has no new node. */
static int stacks_flush(struct cygprof_capture *cap)
{
	struct cbuf *b = &cap->scratch;
	uint8_t key[4];
	unsigned int c;
	int rc;

	if (!cap->stk_dirty)
		return 0;
	b->len = 0;
	for (c = 0; c < STK_STREAMS; c++)
		cbuf_varint(b, cap->stk_col[c].len);
	for (c = 0; c < STK_STREAMS; c++)
		cbuf_bytes(b, cap->stk_col[c].p, cap->stk_col[c].len);
	for (c = 0; c < STK_STREAMS; c++)
		if (cap->stk_col[c].oom)
			b->oom = true;
	if (b->oom) {
		b->oom = false;
		return -ENOMEM;
	}
	rc = packed_value(cap, b->p, b->len, CAPTURE_STACKS_ZSTD_LEVEL);
	if (rc)
		return rc;
	/* the header before the packed bytes */
	b->len = 0;
	cbuf_le32(b, cap->stk_first);
	cbuf_le32(b, cap->stk_count);
	cbuf_bytes(b, cap->zbuf.p, cap->zbuf.len);
	if (b->oom) {
		b->oom = false;
		return -ENOMEM;
	}
	put_be32(key, cap->stk_seq);
	rc = wput(cap, DB_STACKS, key, sizeof(key), b->p, b->len);
	if (rc)
		return rc;
	cap->stk_dirty = false;
	if (cap->stk_count >= CAPTURE_STACK_BLOCK_NODES) {
		cap->stk_seq++;
		cap->stk_first += cap->stk_count;
		cap->stk_count = 0;
		cap->stk_addr = 0;
		for (c = 0; c < STK_STREAMS; c++)
			cap->stk_col[c].len = 0;
	}
	return 0;
}

/* Node v (the next id) at the end of the open block. */
static void stacks_add(struct cygprof_capture *cap, const struct cygprof_stack_node *v)
{
	uint8_t kind = (uint8_t)v->kind;

	if (!cap->stk_count)
		cap->stk_first = v->id;
	cbuf_varint(&cap->stk_col[STK_PARENT], v->parent ? v->id - v->parent : 0);
	cbuf_varint(&cap->stk_col[STK_PROC], v->proc_idx);
	cbuf_bytes(&cap->stk_col[STK_KIND], &kind, 1);
	cbuf_varint(&cap->stk_col[STK_ADDR], zigzag(v->addr - cap->stk_addr));
	cap->stk_addr = v->addr;
	cap->stk_count++;
	cap->stk_dirty = true;
}

int cygprof_capture_put_stacks(struct cygprof_capture *cap, const struct cygprof_stack_node *v,
			       size_t n)
{
	struct cbuf *b = &cap->scratch;
	uint8_t key[12];
	uint32_t next;
	size_t i, klen;
	int rc = check_writer(cap);

	if (rc)
		return rc;
	if (!n)
		return 0;
	if (!v || n > UINT32_MAX - cap->nstacks)
		return -EINVAL;
	/* validate everything first: a rejected call stores nothing */
	for (i = 0, next = cap->nstacks + 1; i < n; i++, next++)
		if (v[i].id != next || v[i].parent >= v[i].id || v[i].kind > CYGPROF_FRAME_IP)
			return -EINVAL;
	if (cap->schema >= CAPTURE_STACK_BLOCKS_SCHEMA) {
		/* in blocks, written at commit (or now, outside a batch) */
		for (i = 0; i < n && !rc; i++) {
			stacks_add(cap, &v[i]);
			if (cap->stk_count >= CAPTURE_STACK_BLOCK_NODES)
				rc = stacks_flush(cap);
		}
		if (!rc && !cap->batch)
			rc = stacks_flush(cap);
	} else {
		/* an older capture reopened (cygprof_capture_open_rw()): a node
		 * a value */
		for (i = 0; i < n && !rc; i++) {
			klen = record_encode(&layout_stack, &v[i], key, b);
			rc = b->oom ? -ENOMEM : wput(cap, DB_STACKS, key, klen, b->p, b->len);
		}
		b->oom = false;
	}
	trim_buffers(cap);
	if (!rc)
		cap->nstacks += (uint32_t)n;
	return wdone(cap, rc);
}

int capture_flush_stacks(struct cygprof_capture *cap)
{
	if (cap->stream || cap->rdonly || !cap->stk_dirty)
		return 0;
	return wdone(cap, stacks_flush(cap));
}

/* ---- counters ----------------------------------------------------------------- */

int cygprof_capture_put_counter(struct cygprof_capture *cap, const struct cygprof_counter *c)
{
	size_t len;
	int rc = check_writer(cap);

	if (rc)
		return rc;
	if (!c || c->id != cap->ncounters || c->unit > CYGPROF_UNIT_COUNT || c->flags || !c->name)
		return -EINVAL;
	len = strlen(c->name);
	if (!len || len > CAPTURE_COUNTER_NAME_MAX)
		return -EINVAL;
	rc = put_record(cap, DB_COUNTERS, &layout_counter, c);
	if (!rc)
		cap->ncounters++;
	return rc;
}

/* Samples are buffered per counter in a pending block like the events of a
 * thread, and written at commit: the block of a counter sampled every few
 * ms grows over many commits (rewritten in place) before it is closed. */
int cygprof_capture_append_samples(struct cygprof_capture *cap, uint32_t counter_id,
				   const struct cygprof_sample *s, size_t n)
{
	struct pending *p;
	size_t i;
	uint8_t *out;
	int rc = check_appender(cap);

	if (rc)
		return rc;
	if (counter_id >= cap->ncounters || (n && !s))
		return -EINVAL;
	if (!n)
		return 0;
	rc = timed_begin(cap, STREAM_SAMPLES, counter_id, s, n, sizeof(*s),
			 offsetof(struct cygprof_sample, t_ns), CAPTURE_SAMPLE_MAX, &p);
	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		rc = pending_next(cap, p, CAPTURE_SAMPLE_MAX, s[i].t_ns);
		if (rc)
			break;
		out = p->buf + p->len;
		out += put_varint(out, s[i].t_ns - p->last_ts);
		out += put_varint(out, zigzag((uint64_t)s[i].value - p->last_addr));
		p->len = (size_t)(out - p->buf);
		p->count++;
		p->last_ts = s[i].t_ns;
		p->last_addr = (uint64_t)s[i].value;
		p->any = true;
	}
	return wdone(cap, rc);
}

/* ---- perf samples and off-CPU intervals ------------------------------------- */

/* The varints of one record (the first a time delta from last) and its
 * time; returns how many. */
typedef unsigned (*rec_fields_fn)(const void *rec, uint64_t last, uint64_t *f, uint64_t *ts);

static unsigned psample_fields(const void *rec, uint64_t last, uint64_t *f, uint64_t *ts)
{
	const struct cygprof_psample *s = rec;

	*ts = s->t_ns;
	f[0] = zigzag(s->t_ns - last);
	f[1] = s->weight_ns;
	f[2] = s->rr_ticks + 1; /* UINT64_MAX: 0 */
	f[3] = ((uint64_t)s->thread_idx + 1) & UINT32_MAX;
	f[4] = s->pid;
	f[5] = s->tid;
	f[6] = s->stack;
	f[7] = s->flags;
	return 8;
}

static unsigned offcpu_fields(const void *rec, uint64_t last, uint64_t *f, uint64_t *ts)
{
	const struct cygprof_offcpu *o = rec;

	*ts = o->start_ns;
	f[0] = zigzag(o->start_ns - last);
	f[1] = o->end_ns - o->start_ns;
	f[2] = ((uint64_t)o->thread_idx + 1) & UINT32_MAX;
	f[3] = o->tid;
	f[4] = o->stack;
	f[5] = o->flags;
	return 6;
}

/* Append n checked records of elsize bytes to a one-stream DB. */
static int append_stream(struct cygprof_capture *cap, unsigned int stream, size_t max,
			 const void *recs, size_t n, size_t elsize, rec_fields_fn fields)
{
	struct pending *p;
	uint64_t f[8], ts;
	unsigned int j, nf;
	size_t i;
	uint8_t *out;
	int rc;

	if (!n)
		return 0;
	p = pending_get(cap, stream, CAPTURE_ONE_STREAM);
	if (!p)
		return -ENOMEM;
	rc = pending_reserve(cap, p, n, max);
	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		const void *r = (const uint8_t *)recs + i * elsize;

		fields(r, 0, f, &ts);
		rc = pending_next(cap, p, max, ts);
		if (rc)
			break;
		nf = fields(r, p->last_ts, f, &ts);
		out = p->buf + p->len;
		for (j = 0; j < nf; j++)
			out += put_varint(out, f[j]);
		p->len = (size_t)(out - p->buf);
		p->count++;
		p->last_ts = ts;
		p->any = true;
	}
	return wdone(cap, rc);
}

/* Both are one stream each (key CAPTURE_ONE_STREAM), buffered like a
 * counter's samples.  Calls may go back in time (the collector drains one
 * ring per CPU): a record's time is a ZigZag delta from the previous one in
 * its block, and the reader sorts. */
int cygprof_capture_append_psamples(struct cygprof_capture *cap,
				    const struct cygprof_psample *s, size_t n)
{
	size_t i;
	int rc = check_writer(cap);

	if (rc)
		return rc;
	if (n && !s)
		return -EINVAL;
	/* validate everything first: a rejected call appends nothing */
	for (i = 0; i < n; i++)
		if (s[i].pad || (i && s[i].t_ns < s[i - 1].t_ns))
			return -EINVAL;
	return append_stream(cap, STREAM_PSAMPLES, CAPTURE_PSAMPLE_MAX, s, n, sizeof(*s),
			     psample_fields);
}

int cygprof_capture_append_offcpu(struct cygprof_capture *cap, const struct cygprof_offcpu *o,
				  size_t n)
{
	size_t i;
	int rc = check_writer(cap);

	if (rc)
		return rc;
	if (n && !o)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if ((o[i].flags & ~(uint32_t)CYGPROF_OFFCPU_WAIT) || o[i].end_ns < o[i].start_ns ||
		    (i && o[i].start_ns < o[i - 1].start_ns))
			return -EINVAL;
	return append_stream(cap, STREAM_OFFCPU, CAPTURE_OFFCPU_MAX, o, n, sizeof(*o),
			     offcpu_fields);
}

/* ---- values as a stream capture hands them out ---------------------------------- */

/* The DBs of event blocks. */
static bool is_block_db(unsigned int db)
{
	return db == DB_TIMELINE || db == DB_MEM || db == DB_SAMPLES || db == DB_PSAMPLES ||
	       db == DB_OFFCPU;
}

/* Where the stream (db, id) of put_value is in cap->vstreams (*found), or
 * would be inserted. */
static size_t vstream_find(const struct cygprof_capture *cap, uint32_t db, uint32_t id,
			   bool *found)
{
	size_t lo = 0, hi = cap->nvstreams, mid;
	const struct vstream *v;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		v = &cap->vstreams[mid];
		if (v->db < db || (v->db == db && v->id < id))
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < cap->nvstreams && cap->vstreams[lo].db == db && cap->vstreams[lo].id == id;
	return lo;
}

/* Whether a checked value of db at key may follow what was put before, as
 * the reader reads records across values: the next stack node and counter
 * id; the blocks of a stream dense from 0, the last one put again or the
 * next one started, times not going back from the block before (the perf
 * samples and off-CPU streams are sorted by the reader: any time); memory
 * stack ids among the nodes put; samples of a defined counter.  Room for
 * one more stream is made, so that put_value_done() cannot fail. */
static int put_value_order(struct cygprof_capture *cap, unsigned int db, const uint8_t *key,
			   size_t klen, const struct value_facts *f)
{
	const struct vstream *v;
	uint64_t before;
	uint32_t seq;
	char what[96];
	size_t at;
	bool found;

	capture_describe_in(cap, db, key, klen, what, sizeof(what));
	switch (db) {
	case DB_STACKS:
		if (cap->schema < CAPTURE_STACK_BLOCKS_SCHEMA) {
			if (get_be32(key) != cap->nstacks + 1)
				return capture_damage(cap, "%s: out of sequence (%u nodes put)",
						      what, cap->nstacks);
			return 0;
		}
		/* blocks: the last one put again (with more nodes), or the next */
		seq = get_be32(key);
		if (cap->vstk_seq != UINT32_MAX && seq == cap->vstk_seq) {
			if (f->stk_first != cap->vstk_first || f->stk_count < cap->vstk_count)
				return capture_damage(cap, "%s: not the block put before, with more "
						      "nodes", what);
			return 0;
		}
		if (seq != cap->vstk_seq + 1) /* UINT32_MAX + 1: block 0 */
			return capture_damage(cap, "%s: out of sequence (block %u expected)", what,
					      cap->vstk_seq + 1);
		if (f->stk_first != cap->nstacks + 1)
			return capture_damage(cap, "%s: first node %u, %u expected", what,
					      f->stk_first, cap->nstacks + 1);
		return 0;
	case DB_COUNTERS:
		if (get_be32(key) != cap->ncounters)
			return capture_damage(cap, "%s: out of sequence (%u counters put)", what,
					      cap->ncounters);
		return 0;
	case DB_TIMELINE:
	case DB_MEM:
	case DB_SAMPLES:
	case DB_PSAMPLES:
	case DB_OFFCPU:
		break;
	default:
		return 0;
	}
	seq = get_be32(key + 4);
	if (db == DB_SAMPLES && get_be32(key) >= cap->ncounters)
		return capture_damage(cap, "%s: no such counter", what);
	if (db == DB_MEM && f->max_stack > cap->nstacks)
		return capture_damage(cap, "%s: stack %llu not put", what,
				      (unsigned long long)f->max_stack);
	at = vstream_find(cap, db, get_be32(key), &found);
	v = found ? &cap->vstreams[at] : NULL;
	if (v && seq == v->seq)
		before = v->before_ts; /* the last block, put again */
	else if (v ? v->seq != UINT32_MAX && seq == v->seq + 1 : !seq)
		before = v ? v->last_ts : 0;
	else
		return capture_damage(cap, "%s: out of sequence (block %u %s)", what,
				      v ? v->seq : 0, v ? "put last" : "expected");
	if (db != DB_PSAMPLES && db != DB_OFFCPU && f->first_ts < before)
		return capture_damage(cap, "%s: time goes back", what);
	if (cap->nvstreams == cap->cvstreams) {
		size_t n = cap->cvstreams ? cap->cvstreams * 2 : 16;
		struct vstream *nv = realloc(cap->vstreams, n * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		cap->vstreams = nv;
		cap->cvstreams = n;
	}
	return 0;
}

/* A value put: the sequences move on. */
static void put_value_done(struct cygprof_capture *cap, unsigned int db, const uint8_t *key,
			   const struct value_facts *f)
{
	struct vstream *v;
	uint32_t seq;
	size_t at;
	bool found;

	if (db == DB_STACKS && cap->schema >= CAPTURE_STACK_BLOCKS_SCHEMA) {
		cap->vstk_seq = get_be32(key);
		cap->vstk_first = f->stk_first;
		cap->vstk_count = f->stk_count;
		cap->nstacks = f->stk_first - 1 + f->stk_count;
	} else if (db == DB_STACKS)
		cap->nstacks++;
	else if (db == DB_COUNTERS)
		cap->ncounters++;
	if (!is_block_db(db))
		return;
	seq = get_be32(key + 4);
	at = vstream_find(cap, db, get_be32(key), &found);
	v = &cap->vstreams[at];
	if (!found) {
		/* put_value_order() made room */
		memmove(v + 1, v, (cap->nvstreams - at) * sizeof(*v));
		cap->nvstreams++;
		*v = (struct vstream){ .db = db, .id = get_be32(key) };
	} else if (seq != v->seq) {
		v->before_ts = v->last_ts; /* the next block started */
	}
	v->seq = seq;
	v->last_ts = f->last_ts;
}

/* A checked value of db as the LMDB writer packs it, into cap->zbuf: an
 * event block stored (its zstd frame not smaller than its events: what a
 * stream capture puts) compressed, a tree or call sites raw packed; the
 * same bytes when the LMDB writer would not shrink them either.  0, else 1
 * when the value is stored as it is (packed already, or cap is a stream
 * capture, which packs nothing), or an error (-ENOMEM). */
static int pack_value(struct cygprof_capture *cap, unsigned int db, const uint8_t *v,
		      size_t vlen)
{
	struct cbuf *b = &cap->scratch;
	size_t raw, n;
	int rc;

	if (cap->stream)
		return 1;
	if (db == DB_TREES || db == DB_SITES)
		return vlen >= 4 && get_le32(v) == vlen - 4
			       ? packed_rows(cap, v + 4, vlen - 4)
			       : 1;
	if (db == DB_STACKS && cap->schema >= CAPTURE_STACK_BLOCKS_SCHEMA) {
		/* checked: a header, then a packed value; raw, it is compressed */
		const uint8_t *pv = v + CAPTURE_STACK_BLOCK_HDR;
		size_t pn = vlen - CAPTURE_STACK_BLOCK_HDR;

		if (pn < 4 || get_le32(pv) != pn - 4)
			return 1;
		rc = packed_value(cap, pv + 4, pn - 4, CAPTURE_STACKS_ZSTD_LEVEL);
		if (rc)
			return rc;
		/* the header before the packed bytes */
		b->len = 0;
		cbuf_bytes(b, v, CAPTURE_STACK_BLOCK_HDR);
		cbuf_bytes(b, cap->zbuf.p, cap->zbuf.len);
		if (b->oom) {
			b->oom = false;
			return -ENOMEM;
		}
		cap->zbuf.len = 0;
		cbuf_bytes(&cap->zbuf, b->p, b->len);
		if (cap->zbuf.oom) {
			cap->zbuf.oom = false;
			return -ENOMEM;
		}
		return 0;
	}
	if (!is_block_db(db))
		return 1;
	raw = get_le32(v + 12); /* checked: a block's header and zstd frame */
	if (vlen - CAPTURE_ZBLOCK_HDR < raw)
		return 1;
	b->len = 0;
	if (!cbuf_grow(b, raw ? raw : 1) || (!cap->zd && !(cap->zd = ZSTD_createDCtx()))) {
		b->oom = false;
		return -ENOMEM;
	}
	n = ZSTD_decompressDCtx(cap->zd, b->p, raw, v + CAPTURE_ZBLOCK_HDR,
				vlen - CAPTURE_ZBLOCK_HDR);
	if (ZSTD_isError(n) || n != raw)
		return CYGPROF_E_CORRUPT;
	return block_value(cap, get_le32(v), get_le64(v + 4), b->p, raw,
			   db == DB_MEM ? CAPTURE_MEM5_ZSTD_LEVEL : CAPTURE_ZSTD_LEVEL);
}

int cygprof_capture_put_value(struct cygprof_capture *cap, unsigned int db, const void *key,
			      size_t klen, const void *value, size_t vlen)
{
	MDB_val k = { .mv_size = klen, .mv_data = (void *)key };
	MDB_val v = { .mv_size = vlen, .mv_data = (void *)value };
	struct value_facts f;
	int rc = check_writer(cap);

	capture_detail_clear();
	if (rc)
		return rc;
	if (db >= DB_COUNT || (klen && !key) || (vlen && !value))
		return -EINVAL;
	if (cap->reopened)
		return -EPERM;
	if (db == DB_META && own_meta_key(key, klen))
		return -EPERM;
	rc = capture_check_value(cap, db, &k, &v, &f);
	if (!rc)
		rc = put_value_order(cap, db, key, klen, &f);
	if (!rc) {
		rc = pack_value(cap, db, value, vlen);
		if (rc == 1)
			rc = wput(cap, db, key, klen, value, vlen);
		else if (!rc)
			rc = wput(cap, db, key, klen, cap->zbuf.p, cap->zbuf.len);
		rc = wdone(cap, rc);
		trim_buffers(cap);
	}
	if (!rc)
		put_value_done(cap, db, key, &f);
	return rc;
}
