/* SPDX-License-Identifier: MIT */
/* capture-common.c - pieces shared by the capture writer and reader: error
 * codes, environment setup, read transactions, close, symbol lookup. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "capture-private.h"

const char *const capture_db_names[DB_COUNT] = {
	[DB_META] = "meta",	    [DB_PROCS] = "procs",     [DB_THREADS] = "threads",
	[DB_TREES] = "trees",	    [DB_TIMELINE] = "timeline", [DB_OBJECTS] = "objects",
	[DB_SYMBOLS] = "symbols", [DB_MEM] = "mem",	      [DB_STACKS] = "stacks",
	[DB_SITES] = "sites",
};

const char *cygprof_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case CYGPROF_E_NOTCAPTURE:
		return "not a cygprof capture";
	case CYGPROF_E_CORRUPT:
		return "truncated or damaged capture";
	case CYGPROF_E_VERSION:
		return "capture written by a newer cygprof (unknown schema)";
	case CYGPROF_E_NOTFOUND:
		return "no such record";
	case CYGPROF_E_NOTXN:
		return "no batch in progress";
	case CYGPROF_E_RDONLY:
		return "capture opened read-only";
	case CYGPROF_E_FULL:
		return "disk full";
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

static int env_try(struct cygprof_capture *cap, unsigned int flags, size_t mapsize)
{
	int rc;

	rc = mdb_env_create(&cap->env);
	if (rc) {
		cap->env = NULL;
		return rc;
	}
	if (mapsize)
		rc = mdb_env_set_mapsize(cap->env, mapsize);
	if (!rc)
		rc = mdb_env_set_maxdbs(cap->env, CAPTURE_MAXDBS);
	if (!rc)
		rc = mdb_env_open(cap->env, cap->path, flags | MDB_NOSUBDIR | MDB_NOTLS, 0644);
	if (rc) {
		mdb_env_close(cap->env);
		cap->env = NULL;
	}
	return rc;
}

int capture_env_open(struct cygprof_capture *cap, unsigned int flags)
{
	MDB_stat st;
	int rc;

	for (;;) {
		rc = env_try(cap, flags, cap->rdonly ? 0 : cap->mapsize);
		if (rc == ENOMEM && !cap->rdonly && cap->mapsize > ((size_t)16 << 20)) {
			cap->mapsize /= 2;
			continue;
		}
		if ((rc == EACCES || rc == EROFS || rc == EPERM) && cap->rdonly &&
		    !(flags & MDB_NOLOCK)) {
			/* no lock file possible: read without locking */
			flags |= MDB_NOLOCK;
			continue;
		}
		break;
	}
	if (rc)
		return capture_err(rc);
	rc = mdb_env_stat(cap->env, &st);
	if (rc)
		return capture_err(rc);
	cap->psize = st.ms_psize;
	cap->maxkey = (size_t)mdb_env_get_maxkeysize(cap->env);
	return 0;
}

int capture_rbegin(struct cygprof_capture *cap, MDB_txn **txn)
{
	int rc, tries;

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
			if (cap->pend[s][i])
				free(cap->pend[s][i]->buf);
			free(cap->pend[s][i]);
		}
		free(cap->pend[s]);
	}
	free(cap->dirty);
	free(cap->log.ent);
	free(cap->log.data);
	free(cap->scratch.p);
	free(cap->path);
	free(cap);
}

int cygprof_capture_close(struct cygprof_capture *cap)
{
	int rc = 0;

	if (!cap)
		return 0;
	if (!cap->rdonly && cap->env)
		rc = capture_writer_finish(cap);
	capture_free(cap);
	return rc;
}

uint64_t cygprof_capture_file_size(struct cygprof_capture *cap)
{
	struct stat st;

	if (!cap || stat(cap->path, &st))
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
