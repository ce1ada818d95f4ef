/* SPDX-License-Identifier: MIT */
/* mountinfo.c - the files of a process in another mount namespace (a
 * container, a flatpak) as the host reaches them: through /proc/PID/root
 * while it runs, and through its mount table matched with the host's
 * (same device, same root within it), which names host directories that
 * outlive the process.  libdwfl knows neither. */
#include "debuginfo-private.h"

#include "array.h"
#include "readfile.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One line of a mountinfo file: device, root of the mount within the file
 * system, mount point (owned, octal escapes decoded). */
struct mnt_line {
	unsigned major, minor;
	char *root, *dir;
};

/* Field i (0-based, space-separated) of line [p, end), decoded: "\040" is
 * a space, as the kernel writes it.  NULL when missing or out of memory. */
static char *field(const char *p, const char *end, int i, int *nomem)
{
	const char *s;
	char *out, *o;

	for (; i > 0; i--) {
		while (p < end && *p != ' ')
			p++;
		while (p < end && *p == ' ')
			p++;
	}
	s = p;
	while (p < end && *p != ' ')
		p++;
	if (p == s)
		return NULL;
	out = malloc((size_t)(p - s) + 1);
	if (!out) {
		*nomem = 1;
		return NULL;
	}
	for (o = out; s < p; s++) {
		if (*s == '\\' && p - s >= 4 && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
	return out;
}

/* "id parent major:minor root mountpoint options ... - fstype source ...".
 * Returns 1 with l filled, 0 for a line to skip, -ENOMEM. */
static int parse_line(const char *p, const char *end, struct mnt_line *l)
{
	char *dev;
	int nomem = 0;

	memset(l, 0, sizeof(*l));
	dev = field(p, end, 2, &nomem);
	l->root = field(p, end, 3, &nomem);
	l->dir = field(p, end, 4, &nomem);
	if (dev && l->root && l->dir && l->root[0] == '/' && l->dir[0] == '/' &&
	    sscanf(dev, "%u:%u", &l->major, &l->minor) == 2) {
		free(dev);
		return 1;
	}
	free(dev);
	free(l->root);
	free(l->dir);
	return nomem ? -ENOMEM : 0;
}

/* Parse every line of text into *v, *n.  Returns 0 or -ENOMEM. */
static int parse_all(const char *text, size_t len, struct mnt_line **v, size_t *n)
{
	const char *p = text, *end = text + len;
	size_t cap = 0;

	*v = NULL;
	*n = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		struct mnt_line l;
		int r = parse_line(p, eol, &l);

		if (r < 0)
			return r;
		if (r) {
			if (ARRAY_GROW(*v, cap, *n + 1)) {
				free(l.root);
				free(l.dir);
				return -ENOMEM;
			}
			(*v)[(*n)++] = l;
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

static void free_lines(struct mnt_line *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].root);
		free(v[i].dir);
	}
	free(v);
}

/* The length of prefix when it is a path prefix of path ("/a" of "/a" and
 * "/a/b", not of "/ab"; "/" of everything), else -1. */
static long path_prefix(const char *prefix, const char *path)
{
	size_t n = strlen(prefix);

	if (n == 1 && prefix[0] == '/')
		return 0;
	if (strncmp(prefix, path, n) || (path[n] && path[n] != '/'))
		return -1;
	return (long)n;
}

/* dir + rest, where rest is "" or starts with '/' ("/" + "/x" is "/x",
 * "/d" + "/" is "/d"). */
static char *join_rest(const char *dir, const char *rest)
{
	size_t n = strlen(dir), r;
	char *s;

	if (!strcmp(rest, "/"))
		rest = "";
	r = strlen(rest);
	if (n == 1 && dir[0] == '/' && r)
		n = 0;
	s = malloc(n + r + 1);
	if (s) {
		memcpy(s, dir, n);
		memcpy(s + n, rest, r + 1);
	}
	return s;
}

int sym_mounts_parse(const char *proc, size_t proc_len, const char *host, size_t host_len,
		     struct sym_mounts *out)
{
	struct mnt_line *pv = NULL, *hv = NULL;
	size_t pn = 0, hn = 0;
	int err;

	memset(out, 0, sizeof(*out));
	err = parse_all(proc, proc_len, &pv, &pn);
	if (!err)
		err = parse_all(host, host_len, &hv, &hn);
	if (!err && pn && !(out->v = calloc(pn, sizeof(*out->v))))
		err = -ENOMEM;
	for (size_t i = 0; i < pn && !err; i++) {
		const struct mnt_line *m = &pv[i];
		const struct mnt_line *best = NULL;
		long best_len = -1;

		/* The host mount of the same device whose root is the longest
		 * prefix of this mount's root shows its files. */
		for (size_t k = 0; k < hn; k++) {
			long l;

			if (hv[k].major != m->major || hv[k].minor != m->minor)
				continue;
			l = path_prefix(hv[k].root, m->root);
			if (l > best_len) {
				best = &hv[k];
				best_len = l;
			}
		}
		out->v[i].dir = strdup(m->dir);
		if (!out->v[i].dir) {
			err = -ENOMEM;
			break;
		}
		out->n++;
		if (best && !(out->v[i].host = join_rest(best->dir, m->root + best_len)))
			err = -ENOMEM;
	}
	free_lines(pv, pn);
	free_lines(hv, hn);
	if (err)
		sym_mounts_release(out);
	return err;
}

char *sym_mounts_path(const struct sym_mounts *m, const char *path)
{
	const struct sym_mount *in = NULL;
	long in_len = -1;
	char *s;

	/* The innermost mount: the longest mount point; the last one among
	 * mounts over the same point. */
	for (size_t i = 0; i < m->n; i++) {
		long l = path_prefix(m->v[i].dir, path);

		if (l >= 0 && l >= in_len) {
			in = &m->v[i];
			in_len = l;
		}
	}
	if (!in || !in->host) {
		errno = ENOENT;
		return NULL;
	}
	s = join_rest(in->host, path + in_len);
	if (!s)
		errno = ENOMEM;
	return s;
}

void sym_mounts_release(struct sym_mounts *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].dir);
		free(m->v[i].host);
	}
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

/* ---- a process's roots --------------------------------------------------- */

static int add_root(struct debuginfo *d, char *prefix, struct sym_mounts *mounts)
{
	struct dbg_root *v = realloc(d->roots, (d->nroots + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	d->roots = v;
	memset(&v[d->nroots], 0, sizeof(v[0]));
	v[d->nroots].prefix = prefix;
	if (mounts)
		v[d->nroots].mounts = *mounts;
	d->nroots++;
	return 0;
}

int debuginfo_add_proc(struct debuginfo *d, pid_t pid)
{
	char path[64], ns[PATH_MAX], self_ns[PATH_MAX];
	char *ptext = NULL, *htext = NULL, *prefix;
	size_t plen = 0, hlen = 0;
	struct sym_mounts m = {0};
	ssize_t n, sn;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	n = readlink(path, ns, sizeof(ns) - 1);
	if (n < 0)
		return -errno;
	sn = readlink("/proc/self/ns/mnt", self_ns, sizeof(self_ns) - 1);
	if (sn == n && !memcmp(ns, self_ns, (size_t)n))
		return 0; /* our own namespace: paths are ours */
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	prefix = strdup(path);
	if (!prefix)
		return -ENOMEM;
	err = add_root(d, prefix, NULL);
	if (err) {
		free(prefix);
		return err;
	}
	/* Without the mount tables the root above is all there is. */
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
	if (read_file(path, &ptext, &plen) || read_file("/proc/self/mountinfo", &htext, &hlen))
		goto out;
	err = sym_mounts_parse(ptext, plen, htext, hlen, &m);
	if (!err && m.n) {
		err = add_root(d, NULL, &m);
		if (err)
			sym_mounts_release(&m);
	}
out:
	free(ptext);
	free(htext);
	return err;
}
