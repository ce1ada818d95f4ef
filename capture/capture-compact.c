/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* capture-compact.c - a sealed capture copied without its free pages
 * (cygprof_capture_compact()).
 *
 * An LMDB file never shrinks: the pages a later transaction frees (a tree
 * or an open event block written again at each checkpoint and commit) go
 * on its free list and stay in the file, so two recordings of one run
 * differed by half their size.  LMDB's compacting copy
 * (mdb_env_copyfd2(MDB_CP_COMPACT)) writes the live pages only, renumbered
 * tree by tree, into a new file next to the capture; its meta page is then
 * given the sealing transaction's id (the copy's is 1, and the seal's "txn"
 * must name the transaction a reader reads), the copy is opened and
 * checked as any reader checks a capture (structure, seal, checksums) and
 * renamed onto the capture.  The copy is an unnamed file (O_TMPFILE)
 * until it is whole and checked: a cygprof killed meanwhile leaves nothing.
 * Any failure (a full disk, an I/O error, a copy that does not read)
 * removes the copy: the capture stays as it was, whole and sealed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture-private.h"

/* Compacting pays when at least this part of the file's pages is free. */
#define COMPACT_FREE_SHARE 32
/* "0": no capture is compacted (cygprof checks it is 0 or 1: cli/env.c;
 * the library ignores any other value). */
#define COMPACT_ENV "CYGPROF_CAPTURE_COMPACT"

/* The pages of the capture's file and those it would not need (free, and
 * the free list's own). */
static int count_pages(struct cygprof_capture *cap, uint64_t *pages, uint64_t *unused)
{
	MDB_envinfo info;
	MDB_cursor *cur;
	MDB_stat st;
	MDB_txn *txn;
	MDB_val k, v;
	uint64_t free_pages = 0;
	int rc, r;

	rc = mdb_env_info(cap->env, &info);
	if (rc)
		return capture_err(rc);
	rc = mdb_txn_begin(cap->env, NULL, MDB_RDONLY, &txn);
	if (rc)
		return capture_err(rc);
	/* the free list is DB 0: each value an ID list, its count first */
	rc = mdb_stat(txn, 0, &st);
	if (!rc)
		rc = mdb_cursor_open(txn, 0, &cur);
	if (!rc) {
		for (r = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !r;
		     r = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			size_t n;

			if (v.mv_size < sizeof n)
				continue;
			memcpy(&n, v.mv_data, sizeof n);
			free_pages += n;
		}
		mdb_cursor_close(cur);
		if (r != MDB_NOTFOUND)
			rc = r;
	}
	mdb_txn_abort(txn);
	if (rc)
		return capture_err(rc);
	*pages = (uint64_t)info.me_last_pgno + 1;
	*unused = free_pages + st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages;
	/* and the pages past the last one (an aborted transaction's) */
	{
		struct stat fs;
		int fd;

		if (!mdb_env_get_fd(cap->env, &fd) && !fstat(fd, &fs) && cap->psize &&
		    (uint64_t)fs.st_size / cap->psize > *pages) {
			*unused += (uint64_t)fs.st_size / cap->psize - *pages;
			*pages = (uint64_t)fs.st_size / cap->psize;
		}
	}
	return 0;
}

/* Copy the live pages of cap into the new file fd, with the meta page of
 * the capture's last transaction. */
static int copy_compact(struct cygprof_capture *cap, int fd)
{
	MDB_envinfo info;
	int rc;

	rc = mdb_env_info(cap->env, &info);
	if (rc)
		return capture_err(rc);
	rc = mdb_env_copyfd2(cap->env, fd, MDB_CP_COMPACT);
	if (rc)
		return rc == ENOSPC || rc == EDQUOT ? CYGPROF_E_FULL
		       : rc == MDB_INCOMPATIBLE ? CYGPROF_E_CORRUPT /* a page leak: no copy */
					      : capture_err(rc);
	rc = capture_meta_set_txnid(fd, cap->psize, (uint64_t)info.me_last_txnid);
	if (rc == -ENOSPC || rc == -EDQUOT)
		rc = CYGPROF_E_FULL;
	if (!rc && capture_fsync_asked() && fsync(fd))
		rc = errno == ENOSPC || errno == EDQUOT ? CYGPROF_E_FULL : -errno;
	return rc;
}

/* The file the copy goes to: an unnamed one in the capture's directory
 * (O_TMPFILE: nothing is left however cygprof ends), *tmp NULL; where
 * that is not supported, a new ".NAME.XXXXXX" (*tmp its name). */
static int copy_file(struct cygprof_capture *cap, int *fd, char **tmp)
{
	const char *slash = strrchr(cap->path, '/');
	char *dir;
	int rc;

	*tmp = NULL;
	dir = slash ? strndup(cap->path, (size_t)(slash - cap->path) + 1) : strdup(".");
	if (!dir)
		return -ENOMEM;
	*fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	rc = errno;
	free(dir);
	if (*fd >= 0)
		return 0;
	if (rc == ENOSPC || rc == EDQUOT)
		return CYGPROF_E_FULL;
	rc = capture_make_temp(cap->path, tmp, fd);
	return rc == -ENOSPC || rc == -EDQUOT ? CYGPROF_E_FULL : rc;
}

/* The unnamed file fd given a new name next to the capture (*tmp). */
static int name_copy(struct cygprof_capture *cap, int fd, char **tmp)
{
	char from[64];
	int rc, tries;

	snprintf(from, sizeof from, "/proc/self/fd/%d", fd);
	for (tries = 0; tries < 16; tries++) {
		int nfd;

		/* a unique name (made, then taken away for the link) */
		rc = capture_make_temp(cap->path, tmp, &nfd);
		if (rc)
			return rc;
		close(nfd);
		unlink(*tmp);
		if (!linkat(AT_FDCWD, from, AT_FDCWD, *tmp, AT_SYMLINK_FOLLOW))
			return 0;
		rc = -errno;
		free(*tmp);
		*tmp = NULL;
		if (rc != -EEXIST)
			return rc == -ENOSPC || rc == -EDQUOT ? CYGPROF_E_FULL : rc;
	}
	return rc;
}

int cygprof_capture_compact(struct cygprof_capture *cap, uint64_t *saved)
{
	struct cygprof_capture *rd = NULL;
	uint64_t pages = 0, unused = 0;
	struct stat before, after;
	char *tmp = NULL, path[64];
	const char *file;
	int rc, fd = -1, envfd;

	if (saved)
		*saved = 0;
	if (cap && cap->stream)
		return 0; /* no file: its receiver compacts what it stores */
	if (!cap || cap->rdonly || !cap->env)
		return -EINVAL;
	/* sealed, nothing failed, nothing open */
	if (!cap->finished || cap->finish_rc || cap->stream_err || cap->txn)
		return -EINVAL;
	if (cap->compacted)
		return 0;
	{
		const char *e = getenv(COMPACT_ENV);

		if (e && !strcmp(e, "0"))
			return 0;
	}
	file = cap->published ? cap->path : cap->tmp_path;
	rc = count_pages(cap, &pages, &unused);
	if (rc)
		return rc;
	if (unused * COMPACT_FREE_SHARE < pages)
		return 0;
	/* the room held for a failed write's last transaction: none follows */
	if (cap->reserved) {
		close(cap->reserve_fd);
		cap->reserved = false;
	}
	if (mdb_env_get_fd(cap->env, &envfd) || fstat(envfd, &before))
		return -EIO;
	rc = copy_file(cap, &fd, &tmp);
	if (rc)
		return rc;
	if (fchmod(fd, before.st_mode & 07777))
		(void)0; /* the umask's mode will do */
	rc = copy_compact(cap, fd);
	/* the copy reads as a capture, sealed as this one was */
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if (!rc) {
		rc = cygprof_capture_open(tmp ? tmp : path, &rd);
		if (!rc && !rd->sealed)
			rc = CYGPROF_E_CORRUPT;
		cygprof_capture_close(rd);
	}
	if (!rc && fstat(fd, &after))
		rc = -errno;
	if (!rc && !tmp)
		rc = name_copy(cap, fd, &tmp);
	if (close(fd) && !rc)
		rc = errno == ENOSPC || errno == EDQUOT ? CYGPROF_E_FULL : -errno;
	if (!rc && rename(tmp, file))
		rc = -errno;
	if (rc) {
		if (tmp)
			unlink(tmp);
		free(tmp);
		return rc;
	}
	free(tmp);
	cap->compacted = true;
	if (saved && after.st_size < before.st_size)
		*saved = (uint64_t)(before.st_size - after.st_size);
	return 0;
}
