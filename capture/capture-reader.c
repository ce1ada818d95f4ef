/* SPDX-License-Identifier: MIT */
/* capture-reader.c - opening a capture and decoding its records.
 *
 * Every decoder checks lengths and returns CYGPROF_E_CORRUPT rather than
 * reading out of bounds.  Trailing bytes after the known fields of a value
 * are ignored (they belong to newer optional fields).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture-private.h"

#define LMDB_MAGIC 0xBEEFC0DEu
#define EV_CHUNK 1024

/* Look at the LMDB meta page before LMDB maps anything: a file that is not
 * LMDB at all is NOTCAPTURE, one too short for its two meta pages CORRUPT.
 * The layout is LMDB's native MDB_meta after a 16-byte page header. */
static int precheck(const char *path, struct stat *st)
{
	uint8_t hdr[64];
	uint32_t magic, psize;
	size_t psize_off = 16 + 4 + 4 + sizeof(void *) + sizeof(size_t);
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (S_ISDIR(st->st_mode)) {
		close(fd);
		return -EISDIR;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return CYGPROF_E_NOTCAPTURE;
	}
	do
		n = pread(fd, hdr, sizeof(hdr), 0);
	while (n < 0 && errno == EINTR);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	if ((size_t)n < psize_off + 4)
		return CYGPROF_E_NOTCAPTURE;
	/* native byte order, as LMDB writes it */
	memcpy(&magic, hdr + 16, sizeof(magic));
	memcpy(&psize, hdr + psize_off, sizeof(psize));
	if (magic != LMDB_MAGIC)
		return CYGPROF_E_NOTCAPTURE;
	if (psize < 256 || psize > 65536 || (psize & (psize - 1)))
		return CYGPROF_E_CORRUPT;
	if ((uint64_t)st->st_size < 2 * (uint64_t)psize)
		return CYGPROF_E_CORRUPT;
	return 0;
}

static int check_schema(struct cygprof_capture *cap, MDB_txn *txn)
{
	MDB_val k = { .mv_size = 5, .mv_data = "magic" }, v;
	uint64_t schema = 0;
	size_t i;
	int rc;

	rc = mdb_get(txn, cap->dbi[DB_META], &k, &v);
	if (rc == MDB_NOTFOUND)
		return CYGPROF_E_NOTCAPTURE;
	if (rc)
		return capture_err(rc);
	if (v.mv_size != strlen(CAPTURE_MAGIC) || memcmp(v.mv_data, CAPTURE_MAGIC, v.mv_size))
		return CYGPROF_E_NOTCAPTURE;
	k = (MDB_val){ .mv_size = 6, .mv_data = "schema" };
	rc = mdb_get(txn, cap->dbi[DB_META], &k, &v);
	if (rc)
		return rc == MDB_NOTFOUND ? CYGPROF_E_CORRUPT : capture_err(rc);
	if (!v.mv_size || v.mv_size > 9)
		return CYGPROF_E_CORRUPT;
	for (i = 0; i < v.mv_size; i++) {
		uint8_t c = ((const uint8_t *)v.mv_data)[i];

		if (c < '0' || c > '9')
			return CYGPROF_E_CORRUPT;
		schema = schema * 10 + (c - '0');
	}
	if (!schema)
		return CYGPROF_E_CORRUPT;
	if (schema > CYGPROF_CAPTURE_SCHEMA)
		return CYGPROF_E_VERSION;
	return 0;
}

static int open_dbs(struct cygprof_capture *cap)
{
	MDB_txn *txn;
	int rc, i;

	rc = mdb_txn_begin(cap->env, NULL, MDB_RDONLY, &txn);
	if (rc)
		return capture_err(rc);
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
		rc = mdb_dbi_open(txn, capture_db_names[i], 0, &cap->dbi[i]);
		if (rc == MDB_NOTFOUND && i >= DB_FIRST_OPTIONAL) {
			/* written before this DB existed: reads as empty */
			cap->missing[i] = true;
			rc = 0;
			continue;
		}
		if (rc) {
			rc = rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE ? CYGPROF_E_CORRUPT
									  : capture_err(rc);
			goto out;
		}
	}
	/* committing keeps the handles for later transactions */
	return capture_err(mdb_txn_commit(txn));
out:
	mdb_txn_abort(txn);
	return rc;
}

int cygprof_capture_open(const char *path, struct cygprof_capture **out)
{
	struct cygprof_capture *cap;
	MDB_envinfo info;
	struct stat st;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!path || !*path)
		return -EINVAL;
	rc = precheck(path, &st);
	if (rc)
		return rc;
	cap = calloc(1, sizeof(*cap));
	if (!cap)
		return -ENOMEM;
	cap->rdonly = true;
	cap->path = strdup(path);
	if (!cap->path) {
		free(cap);
		return -ENOMEM;
	}
	rc = capture_env_open(cap, MDB_RDONLY);
	if (rc)
		goto fail;
	/* every page LMDB may reach must be in the file: past EOF of the map
	 * is SIGBUS, so check before any data page is touched */
	rc = mdb_env_info(cap->env, &info);
	if (rc) {
		rc = capture_err(rc);
		goto fail;
	}
	if (((uint64_t)info.me_last_pgno + 1) * cap->psize > (uint64_t)st.st_size) {
		rc = CYGPROF_E_CORRUPT;
		goto fail;
	}
	rc = open_dbs(cap);
	if (rc)
		goto fail;
	*out = cap;
	return 0;
fail:
	capture_free(cap);
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
	struct cygprof_proc *p = elem;
	struct crd r;

	if (k->mv_size != 4)
		return CYGPROF_E_CORRUPT;
	p->idx = get_be32(k->mv_data);
	crd_init(&r, v);
	p->pid = crd_le32(&r);
	p->ppid = crd_le32(&r);
	p->parent_idx = crd_le32(&r);
	p->start_ns = crd_le64(&r);
	p->end_ns = crd_le64(&r);
	p->end_kind = crd_le32(&r);
	p->end_code = (int32_t)crd_le32(&r);
	p->command = crd_str(&r);
	p->exe = crd_str(&r);
	return crd_status(&r);
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

static int decode_thread(const MDB_val *k, const MDB_val *v, void *elem)
{
	struct cygprof_thread *t = elem;
	const uint8_t *name;
	struct crd r;

	if (k->mv_size != 4)
		return CYGPROF_E_CORRUPT;
	t->idx = get_be32(k->mv_data);
	crd_init(&r, v);
	t->proc_idx = crd_le32(&r);
	t->tid = crd_le32(&r);
	t->flags = crd_le32(&r);
	t->start_ns = crd_le64(&r);
	t->end_ns = crd_le64(&r);
	t->calls = crd_le64(&r);
	t->events = crd_le64(&r);
	t->lost = crd_le64(&r);
	t->waits = crd_le64(&r);
	t->wait_ns = crd_le64(&r);
	t->unpaired = crd_le64(&r);
	t->unwound = crd_le64(&r);
	name = crd_take(&r, sizeof(t->name));
	if (name) {
		memcpy(t->name, name, sizeof(t->name));
		t->name[sizeof(t->name) - 1] = 0;
	}
	return crd_status(&r);
}

int cygprof_capture_get_threads(struct cygprof_capture *cap, struct cygprof_thread **threads,
				size_t *n)
{
	if (!cap || !threads || !n)
		return -EINVAL;
	return load(cap, DB_THREADS, NULL, 0, sizeof(**threads), decode_thread, NULL,
		    (void **)threads, n);
}

static int decode_object(const MDB_val *k, const MDB_val *v, void *elem)
{
	struct cygprof_object *o = elem;
	const uint8_t *id;
	struct crd r;

	if (k->mv_size != 4)
		return CYGPROF_E_CORRUPT;
	o->idx = get_be32(k->mv_data);
	crd_init(&r, v);
	o->proc_idx = crd_le32(&r);
	o->start = crd_le64(&r);
	o->end = crd_le64(&r);
	o->bias = crd_le64(&r);
	o->build_id_len = crd_le32(&r);
	id = crd_take(&r, sizeof(o->build_id));
	if (o->build_id_len > sizeof(o->build_id))
		return CYGPROF_E_CORRUPT;
	if (id)
		memcpy(o->build_id, id, sizeof(o->build_id));
	o->path = crd_str(&r);
	return crd_status(&r);
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
	struct cygprof_symbol *s = elem;
	struct crd r;

	if (k->mv_size != 12)
		return CYGPROF_E_CORRUPT;
	s->proc_idx = get_be32(k->mv_data);
	s->addr = get_be64((const uint8_t *)k->mv_data + 4);
	crd_init(&r, v);
	s->object_idx = crd_le32(&r);
	s->size = crd_le64(&r);
	s->name = crd_str(&r);
	return crd_status(&r);
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

int cygprof_capture_get_tree(struct cygprof_capture *cap, uint32_t thread_idx,
			     struct cygprof_node **nodes, size_t *n)
{
	struct cygprof_node *a = NULL;
	const uint8_t *p;
	uint8_t key[4];
	uint32_t count, size, i;
	MDB_txn *txn;
	MDB_val k = { .mv_size = sizeof(key), .mv_data = key }, v;
	int rc;

	if (!cap || !nodes || !n)
		return -EINVAL;
	*nodes = NULL;
	*n = 0;
	put_be32(key, thread_idx);
	rc = capture_rbegin(cap, &txn);
	if (rc)
		return rc;
	rc = mdb_get(txn, cap->dbi[DB_TREES], &k, &v);
	if (rc) {
		/* no tree stored: an empty tree */
		rc = rc == MDB_NOTFOUND ? 0 : capture_err(rc);
		goto out;
	}
	rc = CYGPROF_E_CORRUPT;
	if (v.mv_size < CAPTURE_TREE_HDR)
		goto out;
	p = v.mv_data;
	count = get_le32(p);
	size = get_le32(p + 4);
	if (size < CAPTURE_NODE_SIZE ||
	    (uint64_t)count * size > (uint64_t)v.mv_size - CAPTURE_TREE_HDR)
		goto out;
	rc = 0;
	if (!count)
		goto out;
	a = malloc((size_t)count * sizeof(*a));
	if (!a) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0, p += CAPTURE_TREE_HDR; i < count; i++, p += size) {
		a[i].parent = get_le32(p);
		a[i].flags = get_le32(p + 4);
		a[i].fn = get_le64(p + 8);
		a[i].site = get_le64(p + 16);
		a[i].calls = get_le64(p + 24);
		a[i].total_ns = get_le64(p + 32);
		if (a[i].parent != CYGPROF_NONE && a[i].parent >= i) {
			rc = CYGPROF_E_CORRUPT;
			free(a);
			a = NULL;
			goto out;
		}
	}
	*nodes = a;
	*n = count;
out:
	capture_rend(cap, txn);
	return rc;
}

/* ---- call sites ------------------------------------------------------------- */

int cygprof_capture_get_sites(struct cygprof_capture *cap, uint32_t thread_idx,
			      struct cygprof_callsite **out, size_t *n)
{
	struct cygprof_callsite *a = NULL;
	const uint8_t *p;
	uint8_t key[4];
	uint32_t count, size, i;
	MDB_txn *txn;
	MDB_val k = { .mv_size = sizeof(key), .mv_data = key }, v;
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
	put_be32(key, thread_idx);
	rc = capture_rbegin(cap, &txn);
	if (rc)
		return rc;
	rc = mdb_get(txn, cap->dbi[DB_SITES], &k, &v);
	if (rc) {
		rc = rc == MDB_NOTFOUND ? 0 : capture_err(rc);
		goto out;
	}
	rc = CYGPROF_E_CORRUPT;
	if (v.mv_size < 8)
		goto out;
	p = v.mv_data;
	count = get_le32(p);
	size = get_le32(p + 4);
	if (size < 32 || (uint64_t)count * size > (uint64_t)v.mv_size - 8)
		goto out;
	rc = 0;
	if (!count)
		goto out;
	a = malloc((size_t)count * sizeof(*a));
	if (!a) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0, p += 8; i < count; i++, p += size) {
		a[i].node = get_le32(p);
		a[i].flags = get_le32(p + 4);
		a[i].site = get_le64(p + 8);
		a[i].calls = get_le64(p + 16);
		a[i].total_ns = get_le64(p + 24);
	}
	*out = a;
	*n = count;
out:
	capture_rend(cap, txn);
	return rc;
}

/* ---- timeline ------------------------------------------------------------- */

static int decode_block(const MDB_val *v, struct cygprof_event *buf, size_t *nbuf,
			cygprof_event_fn fn, void *data)
{
	const uint8_t *p = v->mv_data;
	size_t len = v->mv_size, off = CAPTURE_BLOCK_HDR, nb = *nbuf;
	uint64_t a, d, ts;
	uint32_t count, i;
	int rc;

	if (len < CAPTURE_BLOCK_HDR)
		return CYGPROF_E_CORRUPT;
	count = get_le32(p);
	ts = get_le64(p + 4);
	/* each event takes at least two bytes */
	if (count > (len - CAPTURE_BLOCK_HDR) / 2)
		return CYGPROF_E_CORRUPT;
	for (i = 0; i < count; i++) {
		if (!get_varint(p, len, &off, &a) || !get_varint(p, len, &off, &d))
			return CYGPROF_E_CORRUPT;
		if (a >> 2 > UINT32_MAX || ts + d < ts)
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
	*nbuf = nb;
	return 0;
}

int cygprof_capture_foreach_event(struct cygprof_capture *cap, uint32_t thread_idx,
				  cygprof_event_fn fn, void *data)
{
	struct cygprof_event *buf;
	MDB_cursor *cur = NULL;
	MDB_cursor_op op = MDB_SET_RANGE;
	MDB_txn *txn;
	MDB_val k, v;
	uint8_t key[8];
	size_t nbuf = 0;
	int rc;

	if (!cap || !fn)
		return -EINVAL;
	if (!cap->rdonly) {
		rc = capture_flush_thread(cap, STREAM_TIMELINE, thread_idx);
		if (rc)
			return rc;
	}
	buf = malloc(EV_CHUNK * sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	rc = capture_rbegin(cap, &txn);
	if (rc) {
		free(buf);
		return rc;
	}
	rc = capture_err(mdb_cursor_open(txn, cap->dbi[DB_TIMELINE], &cur));
	put_be32(key, thread_idx);
	put_be32(key + 4, 0);
	k.mv_size = sizeof(key);
	k.mv_data = key;
	for (; !rc; op = MDB_NEXT) {
		rc = mdb_cursor_get(cur, &k, &v, op);
		if (rc == MDB_NOTFOUND) {
			rc = 0;
			break;
		}
		if (rc) {
			rc = capture_err(rc);
			break;
		}
		if (k.mv_size != 8) {
			rc = CYGPROF_E_CORRUPT;
			break;
		}
		if (get_be32(k.mv_data) != thread_idx)
			break;
		rc = decode_block(&v, buf, &nbuf, fn, data);
	}
	if (!rc && nbuf)
		rc = fn(buf, nbuf, data);
	if (cur)
		mdb_cursor_close(cur);
	capture_rend(cap, txn);
	free(buf);
	return rc;
}

/* ---- memory events ------------------------------------------------------------ */

/* A cursor holds a copy of one block and decodes it event by event.  It
 * opens a read transaction (or uses the writer's open one) only while it
 * fetches the next block, so any number of cursors can be open at once on
 * one handle, and a writer can still grow its map in between. */
struct cygprof_mem_cursor {
	struct cygprof_capture *cap;
	uint32_t thread;
	uint32_t next_seq;  /* key of the next block to fetch */
	bool end;           /* no more blocks */
	int err;            /* sticky error */
	uint8_t *buf;       /* the current block */
	size_t len, cap_len;
	size_t off;         /* next event in buf */
	uint32_t left;      /* events left in buf */
	uint64_t ts, addr;  /* of the previous event */
	uint64_t block_ts;  /* first_ts of the current block */
	bool any;           /* a block was read: ts is valid across blocks */
};

int cygprof_mem_cursor_open(struct cygprof_capture *cap, uint32_t thread_idx,
			    struct cygprof_mem_cursor **cur)
{
	struct cygprof_mem_cursor *c;
	int rc;

	if (!cur)
		return -EINVAL;
	*cur = NULL;
	if (!cap)
		return -EINVAL;
	if (!cap->rdonly) {
		rc = capture_flush_thread(cap, STREAM_MEM, thread_idx);
		if (rc)
			return rc;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cap = cap;
	c->thread = thread_idx;
	c->end = cap->missing[DB_MEM];
	*cur = c;
	return 0;
}

void cygprof_mem_cursor_close(struct cygprof_mem_cursor *cur)
{
	if (!cur)
		return;
	free(cur->buf);
	free(cur);
}

/* Check a block of the thread: 1 when k is the key of another thread's
 * block, else 0 with *count its event count, or CYGPROF_E_CORRUPT. */
static int mem_block_hdr(uint32_t thread, const MDB_val *k, const MDB_val *v, uint32_t *count)
{
	if (k->mv_size != 8)
		return CYGPROF_E_CORRUPT;
	if (get_be32(k->mv_data) != thread)
		return 1;
	if (v->mv_size < CAPTURE_BLOCK_HDR || v->mv_size > CAPTURE_BLOCK_LIMIT)
		return CYGPROF_E_CORRUPT;
	*count = get_le32(v->mv_data);
	if (*count > (v->mv_size - CAPTURE_BLOCK_HDR) / CAPTURE_MEM_EVENT_MIN)
		return CYGPROF_E_CORRUPT;
	return 0;
}

/* Copy the thread's next non-empty block into c->buf; c->end at the end. */
static int mem_fetch(struct cygprof_mem_cursor *c)
{
	struct cygprof_capture *cap = c->cap;
	MDB_cursor *mc = NULL;
	MDB_txn *txn;
	MDB_val k, v;
	MDB_cursor_op op = MDB_SET_RANGE;
	uint8_t key[8], *buf;
	uint32_t count, seq;
	size_t n;
	int rc;

	rc = capture_rbegin(cap, &txn);
	if (rc)
		return rc;
	rc = capture_err(mdb_cursor_open(txn, cap->dbi[DB_MEM], &mc));
	put_be32(key, c->thread);
	put_be32(key + 4, c->next_seq);
	k.mv_size = sizeof(key);
	k.mv_data = key;
	for (; !rc; op = MDB_NEXT) {
		rc = mdb_cursor_get(mc, &k, &v, op);
		if (rc == MDB_NOTFOUND) {
			c->end = true;
			rc = 0;
			break;
		}
		if (rc) {
			rc = capture_err(rc);
			break;
		}
		rc = mem_block_hdr(c->thread, &k, &v, &count);
		if (rc == 1) {
			/* the next thread's blocks */
			c->end = true;
			rc = 0;
			break;
		}
		if (rc)
			break;
		seq = get_be32((const uint8_t *)k.mv_data + 4);
		if (seq == UINT32_MAX)
			c->end = true; /* the last possible key: nothing after it */
		else
			c->next_seq = seq + 1;
		if (!count) {
			if (c->end)
				break;
			continue;
		}
		if (v.mv_size > c->cap_len) {
			n = c->cap_len ? c->cap_len : 65536;
			while (n < v.mv_size)
				n *= 2;
			buf = realloc(c->buf, n);
			if (!buf) {
				rc = -ENOMEM;
				break;
			}
			c->buf = buf;
			c->cap_len = n;
		}
		memcpy(c->buf, v.mv_data, v.mv_size);
		c->len = v.mv_size;
		c->off = CAPTURE_BLOCK_HDR;
		c->left = count;
		c->block_ts = get_le64(c->buf + 4);
		/* blocks continue each other in time */
		if (c->any && c->block_ts < c->ts) {
			rc = CYGPROF_E_CORRUPT;
			c->left = 0;
			break;
		}
		c->ts = c->block_ts;
		c->addr = 0;
		c->end = false;
		break;
	}
	if (mc)
		mdb_cursor_close(mc);
	capture_rend(cap, txn);
	return rc;
}

int cygprof_mem_cursor_next(struct cygprof_mem_cursor *cur, struct cygprof_mem_event *ev)
{
	uint64_t hdr, dts, d, size = 0, stack = 0;
	const uint8_t *p;
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
	p = cur->buf;
	if (!get_varint(p, cur->len, &cur->off, &hdr) ||
	    !get_varint(p, cur->len, &cur->off, &dts) ||
	    !get_varint(p, cur->len, &cur->off, &d))
		goto corrupt;
	if (hdr >> (MEM_HDR_FLAGS_SHIFT + 16) ||
	    (hdr >> MEM_HDR_FN_SHIFT & MEM_HDR_FN_MASK) >= CYGPROF_FN_COUNT ||
	    cur->ts + dts < cur->ts)
		goto corrupt;
	if (!(hdr & MEM_HDR_OP) &&
	    (!get_varint(p, cur->len, &cur->off, &size) ||
	     !get_varint(p, cur->len, &cur->off, &stack) || stack > UINT32_MAX))
		goto corrupt;
	d = unzigzag(d);
	if (hdr & MEM_HDR_SCALED)
		d <<= 4;
	cur->ts += dts;
	cur->addr += d;
	cur->any = true;
	cur->left--;
	ev->ts_ns = cur->ts;
	ev->addr = cur->addr;
	ev->size = size;
	ev->stack = (uint32_t)stack;
	ev->op = (uint8_t)(hdr & MEM_HDR_OP);
	ev->fn = (uint8_t)(hdr >> MEM_HDR_FN_SHIFT & MEM_HDR_FN_MASK);
	ev->flags = (uint16_t)(hdr >> MEM_HDR_FLAGS_SHIFT);
	return 1;
corrupt:
	cur->err = CYGPROF_E_CORRUPT;
	return cur->err;
}

int cygprof_capture_mem_count(struct cygprof_capture *cap, uint32_t thread_idx, uint64_t *n)
{
	MDB_cursor *mc = NULL;
	MDB_cursor_op op = MDB_SET_RANGE;
	MDB_txn *txn;
	MDB_val k, v;
	uint8_t key[8];
	uint32_t count;
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
	rc = capture_rbegin(cap, &txn);
	if (rc)
		return rc;
	rc = capture_err(mdb_cursor_open(txn, cap->dbi[DB_MEM], &mc));
	put_be32(key, thread_idx);
	put_be32(key + 4, 0);
	k.mv_size = sizeof(key);
	k.mv_data = key;
	for (; !rc; op = MDB_NEXT) {
		rc = mdb_cursor_get(mc, &k, &v, op);
		if (rc == MDB_NOTFOUND) {
			rc = 0;
			break;
		}
		if (rc) {
			rc = capture_err(rc);
			break;
		}
		rc = mem_block_hdr(thread_idx, &k, &v, &count);
		if (rc == 1) {
			rc = 0; /* the next thread's blocks */
			break;
		}
		if (!rc)
			total += count;
	}
	if (mc)
		mdb_cursor_close(mc);
	capture_rend(cap, txn);
	if (!rc)
		*n = total;
	return rc;
}

/* ---- stack stash ------------------------------------------------------------- */

static int decode_stack(const MDB_val *k, const MDB_val *v, void *elem)
{
	struct cygprof_stack_node *s = elem;
	const uint8_t *p = v->mv_data;

	if (k->mv_size != 4 || v->mv_size < CAPTURE_STACK_SIZE)
		return CYGPROF_E_CORRUPT;
	s->id = get_be32(k->mv_data);
	s->parent = get_le32(p);
	s->proc_idx = get_le32(p + 4);
	s->kind = get_le32(p + 8);
	s->addr = get_le64(p + 12);
	if (s->parent >= s->id || s->kind > CYGPROF_FRAME_RA)
		return CYGPROF_E_CORRUPT;
	return 0;
}

int cygprof_capture_get_stacks(struct cygprof_capture *cap, struct cygprof_stack_node **v,
			       size_t *n)
{
	size_t i;
	int rc;

	if (!cap || !v || !n)
		return -EINVAL;
	rc = load(cap, DB_STACKS, NULL, 0, sizeof(**v), decode_stack, NULL, (void **)v, n);
	if (rc)
		return rc;
	/* dense ids: with parent < id, every parent is in the array before
	 * its children */
	for (i = 0; i < *n; i++) {
		if ((*v)[i].id != i + 1) {
			free(*v);
			*v = NULL;
			*n = 0;
			return CYGPROF_E_CORRUPT;
		}
	}
	return 0;
}
