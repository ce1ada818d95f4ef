/* SPDX-License-Identifier: MIT */
/* compact-tool.c - what tests/compact/compact.py needs beside cygprof:
 *
 *   compact-tool free-pages FILE   the pages on the LMDB free list of FILE
 *                                  (what `mdb_stat -f` counts), one number
 *   compact-tool copy IN OUT       OUT: a copy of the capture IN, reopened
 *                                  (cygprof_capture_open_rw()), sealed and
 *                                  compacted (cygprof_capture_compact());
 *                                  prints the bytes the compaction saved
 *
 * Exit 0, or 1 with one line on stderr. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <lmdb.h>

#include "cygprof/cygprof-capture.h"

static int free_pages(const char *path)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t n = 0;
	size_t c;
	int rc;

	rc = mdb_env_create(&env);
	if (!rc)
		rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK, 0600);
	if (!rc)
		rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
	if (!rc) {
		rc = mdb_cursor_open(txn, 0, &cur);
		for (int r = rc ? 1 : mdb_cursor_get(cur, &k, &v, MDB_FIRST); !r;
		     r = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			memcpy(&c, v.mv_data, sizeof c);
			n += c;
		}
		if (!rc)
			mdb_cursor_close(cur);
		mdb_txn_abort(txn);
	}
	mdb_env_close(env);
	if (rc) {
		fprintf(stderr, "compact-tool: %s: %s\n", path, mdb_strerror(rc));
		return 1;
	}
	printf("%" PRIu64 "\n", n);
	return 0;
}

static int copy(const char *in, const char *out)
{
	struct cygprof_capture *cap;
	char buf[65536];
	uint64_t saved = 0;
	ssize_t n;
	int fi, fo, rc;

	fi = open(in, O_RDONLY);
	fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fi < 0 || fo < 0) {
		fprintf(stderr, "compact-tool: %s: %s\n", fi < 0 ? in : out, strerror(errno));
		return 1;
	}
	while ((n = read(fi, buf, sizeof buf)) > 0)
		if (write(fo, buf, (size_t)n) != n) {
			fprintf(stderr, "compact-tool: %s: %s\n", out, strerror(errno));
			return 1;
		}
	close(fi);
	if (close(fo))
		return 1;
	rc = cygprof_capture_open_rw(out, &cap);
	if (!rc)
		rc = cygprof_capture_seal(cap);
	if (!rc)
		rc = cygprof_capture_compact(cap, &saved);
	if (cap) {
		int e = cygprof_capture_close(cap);

		if (!rc)
			rc = e;
	}
	if (rc) {
		fprintf(stderr, "compact-tool: %s: %s\n", out, cygprof_strerror(rc));
		return 1;
	}
	printf("%" PRIu64 "\n", saved);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "free-pages"))
		return free_pages(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "copy"))
		return copy(argv[2], argv[3]);
	fprintf(stderr, "usage: compact-tool free-pages FILE | copy IN OUT\n");
	return 2;
}
