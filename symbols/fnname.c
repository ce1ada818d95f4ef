/* SPDX-License-Identifier: MIT */
/* fnname.c - a function's name as a capture stores it (see fnname.h). */
#define _GNU_SOURCE
#include "fnname.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols.h"

#define HEX_PREFIX "0x"
#define PLACEHOLDER_SEP "+0x"
#define DELETED " [deleted]"

static const char *file_name(const char *path)
{
	const char *base = strrchr(path, '/');

	return base ? base + 1 : path;
}

char *sym_fn_name(const char *raw, const char *path, uint64_t off, int gone, uint64_t addr)
{
	char *s = NULL;
	int n;

	if (raw)
		return sym_demangle(raw);
	if (path)
		n = asprintf(&s, "%s" PLACEHOLDER_SEP "%llx%s", file_name(path),
			     (unsigned long long)off, gone ? DELETED : "");
	else
		n = asprintf(&s, HEX_PREFIX "%llx", (unsigned long long)addr);
	return n < 0 ? NULL : s;
}

int sym_fn_unnamed(const char *name, const char *path)
{
	const char *base;
	size_t n;

	if (!name || !name[0] || !strncmp(name, HEX_PREFIX, strlen(HEX_PREFIX)))
		return 1;
	if (!path)
		return 0;
	base = file_name(path);
	n = strlen(base);
	return !strncmp(name, base, n) && !strncmp(name + n, PLACEHOLDER_SEP, strlen(PLACEHOLDER_SEP));
}
