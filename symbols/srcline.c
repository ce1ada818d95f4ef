/* SPDX-License-Identifier: MIT */
/* srcline.c - addr -> file:line through libdw, one Dwarf per object, the
 * DWARF file located by debuginfo.c. */
#include "srcline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

struct cu_range {
	uint64_t lo, hi;
	Dwarf_Die cu;
};

/* A file name as DWARF gives it (pointer stable while the Dwarf is open)
 * and its absolute, normalized form. */
struct fname {
	const char *raw;
	char *norm;
};

struct srcline_obj {
	uint32_t key;
	int tried;
	int fd;
	Dwarf *dw;
	struct cu_range *r;
	size_t nr;
	struct fname *names;
	size_t nnames;
};

struct srcline {
	struct srcline_obj *v;
	size_t n, cap;
	struct debuginfo *di;
	int own_di;
};

struct srcline *srcline_new(struct debuginfo *di)
{
	struct srcline *s = calloc(1, sizeof(struct srcline));

	if (!s)
		return NULL;
	s->di = di;
	if (!di) {
		s->di = debuginfo_new();
		if (!s->di || debuginfo_add_env(s->di)) {
			debuginfo_free(s->di);
			free(s);
			return NULL;
		}
		s->own_di = 1;
	}
	return s;
}

void srcline_free(struct srcline *s)
{
	size_t i, j;

	if (!s)
		return;
	for (i = 0; i < s->n; i++) {
		struct srcline_obj *o = &s->v[i];

		if (o->dw)
			dwarf_end(o->dw);
		if (o->fd >= 0)
			close(o->fd);
		free(o->r);
		for (j = 0; j < o->nnames; j++)
			free(o->names[j].norm);
		free(o->names);
	}
	free(s->v);
	if (s->own_di)
		debuginfo_free(s->di);
	free(s);
}

void srcline_normalize(char *path)
{
	char *out = path, *p = path, *end = path + strlen(path);
	int abs = path[0] == '/';
	size_t keep = 0; /* leading ".." components of a relative path that stay */

	if (abs) {
		out++;
		p++;
	}
	while (p < end) {
		char *e = memchr(p, '/', (size_t)(end - p));
		size_t len = e ? (size_t)(e - p) : (size_t)(end - p);

		if (len == 0 || (len == 1 && p[0] == '.')) {
			/* skip */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			char *base = path + abs;
			size_t kept = keep * 3;

			if (out > base + kept) {
				/* drop the last component written */
				out--;
				while (out > base && out[-1] != '/')
					out--;
			} else if (!abs) {
				memmove(out, "../", 3);
				out += 3;
				keep++;
			}
		} else {
			memmove(out, p, len);
			out += len;
			*out++ = '/';
		}
		p += len + (e ? 1 : 0);
	}
	if (out > path + abs && out[-1] == '/')
		out--;
	if (out == path)
		*out++ = '.';
	*out = 0;
}

static struct srcline_obj *get_obj(struct srcline *s, uint32_t key)
{
	struct srcline_obj *o;
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].key == key)
			return &s->v[i];
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;

		o = realloc(s->v, cap * sizeof(*o));
		if (!o)
			return NULL;
		s->v = o;
		s->cap = cap;
	}
	o = &s->v[s->n++];
	memset(o, 0, sizeof(*o));
	o->key = key;
	o->fd = -1;
	return o;
}

static int cmp_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int add_range(struct srcline_obj *o, size_t *cap, uint64_t lo, uint64_t hi,
		     const Dwarf_Die *cu)
{
	if (hi <= lo)
		return 0;
	if (o->nr == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct cu_range *t = realloc(o->r, c * sizeof(*t));

		if (!t)
			return -ENOMEM;
		o->r = t;
		*cap = c;
	}
	o->r[o->nr].lo = lo;
	o->r[o->nr].hi = hi;
	o->r[o->nr].cu = *cu;
	o->nr++;
	return 0;
}

/* Address ranges of every compile unit (no reliance on .debug_aranges). */
static int index_cus(struct srcline_obj *o)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Die cudie;
	uint8_t unit_type;
	Dwarf_Half version;
	size_t cap = 0;

	while (!dwarf_get_units(o->dw, cu, &next, &version, &unit_type, &cudie, NULL)) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		cu = next;
		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial)
			continue;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0)
			if (add_range(o, &cap, lo, hi, &cudie))
				return -ENOMEM;
	}
	if (o->nr)
		qsort(o->r, o->nr, sizeof(*o->r), cmp_range);
	return 0;
}

static int open_obj(struct srcline *s, struct srcline_obj *o, const struct cygprof_object *co)
{
	char *file = NULL;
	int err;

	o->tried = 1;
	err = debuginfo_find(s->di, co->path, co->build_id, co->build_id_len, &file);
	if (err)
		return err == -ENOMEM ? err : 0;
	o->fd = open(file, O_RDONLY | O_CLOEXEC);
	free(file);
	if (o->fd < 0)
		return 0;
	o->dw = dwarf_begin(o->fd, DWARF_C_READ);
	if (!o->dw) {
		close(o->fd);
		o->fd = -1;
		return 0;
	}
	return index_cus(o);
}

static struct srcline_obj *obj_for(struct srcline *s, const struct cygprof_object *co, int *err)
{
	struct srcline_obj *o = get_obj(s, co->idx);

	*err = 0;
	if (!o) {
		*err = -ENOMEM;
		return NULL;
	}
	if (!o->tried)
		*err = open_obj(s, o, co);
	return o->dw ? o : NULL;
}

static Dwarf_Die *find_cu(struct srcline_obj *o, uint64_t a)
{
	size_t lo = 0, hi = o->nr, k;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->r[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: first range starting above a; look back over overlapping ones */
	for (k = 0; k < 64 && lo > 0; k++, lo--)
		if (o->r[lo - 1].lo <= a && a < o->r[lo - 1].hi)
			return &o->r[lo - 1].cu;
	return NULL;
}

/* The normalized, absolute form of a DWARF file name of a CU. */
static const char *name_of(struct srcline_obj *o, Dwarf_Die *cu, const char *raw)
{
	const char *dir = NULL;
	struct fname *t;
	Dwarf_Attribute at;
	size_t i, len;
	char *n;

	for (i = 0; i < o->nnames; i++)
		if (o->names[i].raw == raw)
			return o->names[i].norm;
	if (raw[0] != '/' && cu && dwarf_attr(cu, DW_AT_comp_dir, &at))
		dir = dwarf_formstring(&at);
	len = strlen(raw) + (dir ? strlen(dir) + 1 : 0) + 2;
	n = malloc(len);
	if (!n)
		return NULL;
	if (dir)
		snprintf(n, len, "%s/%s", dir, raw);
	else
		snprintf(n, len, "%s", raw);
	srcline_normalize(n);
	t = realloc(o->names, (o->nnames + 1) * sizeof(*t));
	if (!t) {
		free(n);
		return NULL;
	}
	o->names = t;
	t[o->nnames].raw = raw;
	t[o->nnames].norm = n;
	o->nnames++;
	return n;
}

static int line_at(struct srcline_obj *o, Dwarf_Die *cu, uint64_t va, const char **file,
		   uint32_t *line)
{
	Dwarf_Line *l = dwarf_getsrc_die(cu, va);
	const char *f;
	int lineno = 0;

	if (!l)
		return -ENOENT;
	f = dwarf_linesrc(l, NULL, NULL);
	if (!f || dwarf_lineno(l, &lineno) || lineno <= 0)
		return -ENOENT;
	*file = name_of(o, cu, f);
	if (!*file)
		return -ENOMEM;
	*line = (uint32_t)lineno;
	return 0;
}

int srcline_lookup(struct srcline *s, const struct cygprof_object *co, uint64_t addr,
		   const char **file, uint32_t *line)
{
	struct srcline_obj *o;
	Dwarf_Die *cu;
	uint64_t va = addr - co->bias;
	int err;

	*file = NULL;
	*line = 0;
	o = obj_for(s, co, &err);
	if (!o)
		return err ? err : -ENOENT;
	cu = find_cu(o, va);
	if (!cu)
		return -ENOENT;
	return line_at(o, cu, va, file, line);
}

int srcline_inlined(struct srcline *s, const struct cygprof_object *co, uint64_t addr,
		    const char **name, uint32_t *call_line)
{
	struct srcline_obj *o;
	Dwarf_Die *scopes = NULL, *cu;
	uint64_t va = addr - co->bias;
	int err, n, i, rc = -ENOENT;

	*name = NULL;
	*call_line = 0;
	o = obj_for(s, co, &err);
	if (!o)
		return err ? err : -ENOENT;
	cu = find_cu(o, va);
	if (!cu)
		return -ENOENT;
	n = dwarf_getscopes(cu, va, &scopes);
	for (i = 0; i < n; i++) {
		Dwarf_Attribute attr;
		const char *nm;

		if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram)
			break; /* reached the function itself: not inlined */
		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		nm = dwarf_formstring(dwarf_attr_integrate(&scopes[i], DW_AT_name, &attr));
		if (nm) {
			Dwarf_Word cl;
			*name = nm;
			if (!dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &cl))
				*call_line = (uint32_t)cl;
			rc = 0;
		}
		break;
	}
	free(scopes);
	return rc;
}

int srcline_function(struct srcline *s, const struct cygprof_object *co, uint64_t addr,
		     const char **file, uint32_t *line)
{
	struct srcline_obj *o;
	Dwarf_Die *scopes = NULL, *cu;
	uint64_t va = addr - co->bias;
	int err, n, i, lineno = 0;

	*file = NULL;
	*line = 0;
	o = obj_for(s, co, &err);
	if (!o)
		return err ? err : -ENOENT;
	cu = find_cu(o, va);
	if (!cu)
		return -ENOENT;
	n = dwarf_getscopes(cu, va, &scopes);
	for (i = 0; i < n; i++) {
		const char *f;

		if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
			continue;
		f = dwarf_decl_file(&scopes[i]);
		if (f && !dwarf_decl_line(&scopes[i], &lineno) && lineno > 0) {
			*file = name_of(o, cu, f);
			*line = (uint32_t)lineno;
		}
		break;
	}
	free(scopes);
	if (*file)
		return 0;
	return line_at(o, cu, va, file, line);
}
