/* SPDX-License-Identifier: MIT */
/* procmaps.c - the one parser of /proc/PID/maps (procmaps.h). */
#include "procmaps.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "readfile.h"

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return c - 'A' + 10;
}

/* Parse hex digits at *p (bounded by end); 0 on success. */
static int parse_hex(const char **p, const char *end, uint64_t *val)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0;

	while (s < end && is_hex(*s)) {
		if (n++ >= 16)
			return -1;
		v = v << 4 | (uint64_t)hex_val(*s++);
	}
	if (!n)
		return -1;
	*p = s;
	*val = v;
	return 0;
}

static void skip_spaces(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
}

/* Skip one whitespace-delimited field; 0 when it was not empty. */
static int skip_field(const char **p, const char *end)
{
	const char *s = *p;

	while (s < end && *s != ' ' && *s != '\t')
		s++;
	if (s == *p)
		return -1;
	*p = s;
	return 0;
}

#define DELETED_MARK " (deleted)"

/* Parse one line [p, end) (without '\n').  Returns 1 and fills m (path
 * malloc'd) for a file-backed mapping, 0 to skip, -ENOMEM. */
static int parse_maps_line(const char *p, const char *end, struct procmap *m)
{
	uint64_t start, stop, offset;
	const char *perms;
	size_t plen;

	if (parse_hex(&p, end, &start) || p >= end || *p++ != '-' || parse_hex(&p, end, &stop))
		return 0;
	skip_spaces(&p, end);
	perms = p;
	if (skip_field(&p, end) || p - perms < 3)
		return 0;
	skip_spaces(&p, end);
	if (parse_hex(&p, end, &offset))
		return 0;
	skip_spaces(&p, end);
	if (skip_field(&p, end)) /* dev */
		return 0;
	skip_spaces(&p, end);
	if (skip_field(&p, end)) /* inode */
		return 0;
	skip_spaces(&p, end);
	if (p >= end || *p != '/')
		return 0;
	/* The path runs to the end of the line and may contain spaces. */
	while (end > p && (end[-1] == '\r' || end[-1] == ' '))
		end--;
	/* The kernel marks a file unlinked since it was mapped. */
	m->deleted = 0;
	if ((size_t)(end - p) > sizeof(DELETED_MARK) - 1 &&
	    !memcmp(end - (sizeof(DELETED_MARK) - 1), DELETED_MARK, sizeof(DELETED_MARK) - 1)) {
		end -= sizeof(DELETED_MARK) - 1;
		m->deleted = 1;
	}
	plen = (size_t)(end - p);
	m->path = malloc(plen + 1);
	if (!m->path)
		return -ENOMEM;
	/* The kernel writes a newline of the path as "\012" (seq_path()'s
	 * escape; nothing else is escaped): the path as the file system has
	 * it, which readlink() and open() take. */
	for (size_t i = 0, o = 0;; i++) {
		if (i == plen) {
			m->path[o] = '\0';
			break;
		}
		if (p[i] == '\\' && plen - i >= 4 && !memcmp(p + i, "\\012", 4)) {
			m->path[o++] = '\n';
			i += 3;
		} else {
			m->path[o++] = p[i];
		}
	}
	m->start = start;
	m->end = stop;
	m->offset = offset;
	m->exec = perms[2] == 'x';
	return 1;
}

int procmaps_parse(const char *text, size_t len, struct procmaps *out)
{
	const char *p = text, *end = text + len;
	struct procmaps maps = { 0 };
	size_t cap = 0;

	if (!out || (!text && len))
		return -EINVAL;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		struct procmap m;
		int ret;

		if (ARRAY_GROW(maps.v, cap, maps.n + 1)) {
			procmaps_release(&maps);
			return -ENOMEM;
		}
		/* A trailing line without '\n' (e.g. a truncated read) is
		 * parsed like the others; if it is cut too short it simply
		 * fails to parse and is skipped. */
		ret = parse_maps_line(p, eol, &m);
		if (ret < 0) {
			procmaps_release(&maps);
			return ret;
		}
		if (ret)
			maps.v[maps.n++] = m;
		p = nl ? nl + 1 : end;
	}
	*out = maps;
	return 0;
}

void procmaps_release(struct procmaps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

int procmaps_read(int pid, struct procmaps *out)
{
	char path[64], *text;
	size_t len;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	err = read_file(path, &text, &len);
	if (err)
		return err;
	err = procmaps_parse(text, len, out);
	free(text);
	return err;
}

const char *procmap_kernel_path(const struct procmap *m, char *buf, size_t len)
{
	if (!m->deleted)
		return m->path;
	snprintf(buf, len, "%s" DELETED_MARK, m->path);
	return buf;
}
