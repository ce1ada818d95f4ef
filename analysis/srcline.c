/* SPDX-License-Identifier: MIT */
/* srcline.c - addr -> file:line through libdwfl, one Dwfl per object. */
#include "srcline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <elfutils/libdwfl.h>

struct srcline_obj {
	uint32_t key;
	int tried;
	Dwfl *dwfl;
	Dwfl_Module *mod;
};

struct srcline {
	struct srcline_obj *v;
	size_t n, cap;
};

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct srcline *srcline_new(void)
{
	return calloc(1, sizeof(struct srcline));
}

void srcline_free(struct srcline *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++)
		if (s->v[i].dwfl)
			dwfl_end(s->v[i].dwfl);
	free(s->v);
	free(s);
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
	return o;
}

static void open_obj(struct srcline_obj *o, const char *path, uint64_t bias)
{
	o->tried = 1;
	if (!path || path[0] != '/')
		return;
	o->dwfl = dwfl_begin(&offline_callbacks);
	if (!o->dwfl)
		return;
	dwfl_report_begin(o->dwfl);
	/* ET_DYN: placed at bias (add_p_vaddr); ET_EXEC: at its own addresses */
	o->mod = dwfl_report_elf(o->dwfl, path, path, -1, bias, true);
	dwfl_report_end(o->dwfl, NULL, NULL);
	if (!o->mod) {
		dwfl_end(o->dwfl);
		o->dwfl = NULL;
	}
}

int srcline_lookup(struct srcline *s, uint32_t obj, const char *path, uint64_t bias,
		   uint64_t addr, const char **file, uint32_t *line)
{
	struct srcline_obj *o = get_obj(s, obj);
	Dwfl_Line *l;
	const char *f;
	int lineno = 0;

	*file = NULL;
	*line = 0;
	if (!o)
		return -ENOMEM;
	if (!o->tried)
		open_obj(o, path, bias);
	if (!o->mod)
		return -ENOENT;
	l = dwfl_module_getsrc(o->mod, addr);
	if (!l)
		return -ENOENT;
	f = dwfl_lineinfo(l, NULL, &lineno, NULL, NULL, NULL);
	if (!f || lineno <= 0)
		return -ENOENT;
	*file = f;
	*line = (uint32_t)lineno;
	return 0;
}
