/* SPDX-License-Identifier: MIT */
/* srcline.c - addr -> file:line, function definitions and inlined frames,
 * on the libdwfl module of each object (modules.c): the compile unit by
 * dwfl_module_addrdie(), its line table and scopes through libdw. */
#include "srcline.h"
#include "debuginfo-private.h"
#include "array.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

struct cu_range {
	Dwarf_Addr lo, hi;
	Dwarf_Die cu;
};

/* A file name as DWARF gives it (pointer stable while the module is open)
 * and its absolute, normalized form. */
struct fname {
	const char *raw;
	char *norm;
};

/* What srcline keeps per libdwfl module (shared by the capture objects of
 * one file: the same library in several processes). */
struct sl_mod {
	Dwfl_Module *mod;
	/* Compile units by their address ranges, built only when
	 * .debug_aranges does not cover an address (clang emits none). */
	bool indexed;
	struct cu_range *r;
	size_t nr;
	Dwarf_Addr dwbias;
	struct fname *names;
	size_t nnames;
	/* the functions of each compile unit asked about (cu_fns_of()) */
	struct cu_fns *cfs;
	size_t ncfs, last_cf;
};

/* One address range of a function's code (DW_TAG_subprogram), by DWARF
 * address; its own lines, [first, last] in its decl file, made on demand. */
struct fn_range {
	Dwarf_Addr lo, hi;
	Dwarf_Die die;
	uint32_t first, last; /* 0: not computed yet */
	const char *decl;     /* DW_AT_decl_file (cu_fns.decls), NULL: none */
	int decl_line;
};

/* The functions of one compile unit, sorted by lo.  Walking the unit's DIEs
 * once for all of them, rather than dwarf_getscopes() per address: on a
 * 250k-line amalgamation (one unit) that walk is the whole cost. */
struct cu_fns {
	Dwarf_Off cu_off;
	struct fn_range *r;
	size_t n;
	int decls; /* the ranges' decl and decl_line are read */
};

struct sl_obj {
	uint32_t key;      /* cygprof_object.idx */
	struct sl_mod *m;  /* NULL: no debug information */
};

struct srcline {
	struct sl_obj *v;
	size_t n, last;
	struct sl_mod **mods;
	size_t nmods;
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
	if (!s)
		return;
	for (size_t i = 0; i < s->nmods; i++) {
		struct sl_mod *m = s->mods[i];

		free(m->r);
		for (size_t j = 0; j < m->ncfs; j++)
			free(m->cfs[j].r);
		free(m->cfs);
		for (size_t j = 0; j < m->nnames; j++)
			free(m->names[j].norm);
		free(m->names);
		free(m);
	}
	free(s->mods);
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

/* The srcline state of module mod (NULL: none), made on first use. */
static struct sl_mod *mod_state(struct srcline *s, Dwfl_Module *mod)
{
	struct sl_mod **v, *m;

	for (size_t i = 0; i < s->nmods; i++)
		if (s->mods[i]->mod == mod)
			return s->mods[i];
	v = realloc(s->mods, (s->nmods + 1) * sizeof(*v));
	if (!v)
		return NULL;
	s->mods = v;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->mod = mod;
	s->mods[s->nmods++] = m;
	return m;
}

/* The module of capture object co (each object is looked up once).
 * Returns NULL with *err 0 when it has no debug information. */
static struct sl_mod *obj_for(struct srcline *s, const struct cygprof_object *co, int *err)
{
	Dwfl_Module *mod;
	struct sl_obj *v;

	*err = 0;
	if (s->n && s->v[s->last].key == co->idx)
		return s->v[s->last].m;
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].key == co->idx) {
			s->last = i;
			return s->v[i].m;
		}
	v = realloc(s->v, (s->n + 1) * sizeof(*v));
	if (!v) {
		*err = -ENOMEM;
		return NULL;
	}
	s->v = v;
	*err = dbg_module(s->di, co->path, co->build_id, co->build_id_len, &mod);
	if (*err)
		return NULL;
	v[s->n].key = co->idx;
	v[s->n].m = NULL;
	if (mod && !(v[s->n].m = mod_state(s, mod))) {
		*err = -ENOMEM;
		return NULL;
	}
	s->last = s->n++;
	return v[s->last].m;
}

static int cmp_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Address ranges of every compile unit, from their DIEs. */
static void index_cus(struct sl_mod *m)
{
	Dwarf *dw = dwfl_module_getdwarf(m->mod, &m->dwbias);
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Die cudie;
	uint8_t unit_type;
	Dwarf_Half version;
	size_t cap = 0;

	m->indexed = true;
	while (dw && !dwarf_get_units(dw, cu, &next, &version, &unit_type, &cudie, NULL)) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		cu = next;
		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial)
			continue;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if (ARRAY_GROW(m->r, cap, m->nr + 1))
				goto out; /* a partial index still answers */
			m->r[m->nr++] = (struct cu_range){lo, hi, cudie};
		}
	}
out:
	if (m->nr)
		qsort(m->r, m->nr, sizeof(*m->r), cmp_range);
}

/* The compile unit covering module address va, and the bias of its DWARF
 * addresses (DWARF address = va - *bias). */
static Dwarf_Die *cu_at(struct sl_mod *m, Dwarf_Addr va, Dwarf_Addr *bias)
{
	Dwarf_Die *cu = dwfl_module_addrdie(m->mod, va, bias);
	Dwarf_Addr a;
	size_t lo = 0, hi, k;

	if (cu)
		return cu;
	if (!m->indexed)
		index_cus(m);
	a = va - m->dwbias;
	hi = m->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->r[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: first range starting above a; look back over overlapping ones */
	for (k = 0; k < 64 && lo > 0; k++, lo--)
		if (m->r[lo - 1].lo <= a && a < m->r[lo - 1].hi) {
			*bias = m->dwbias;
			return &m->r[lo - 1].cu;
		}
	return NULL;
}

/* The normalized, absolute form of a DWARF file name of a CU. */
static const char *name_of(struct sl_mod *m, Dwarf_Die *cu, const char *raw)
{
	const char *dir = NULL;
	struct fname *t;
	Dwarf_Attribute at;
	size_t len;
	char *n;

	for (size_t i = 0; i < m->nnames; i++)
		if (m->names[i].raw == raw)
			return m->names[i].norm;
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
	t = realloc(m->names, (m->nnames + 1) * sizeof(*t));
	if (!t) {
		free(n);
		return NULL;
	}
	m->names = t;
	t[m->nnames].raw = raw;
	t[m->nnames].norm = n;
	m->nnames++;
	return n;
}

static int line_at(struct sl_mod *m, Dwarf_Die *cu, Dwarf_Addr dwaddr, const char **file,
		   uint32_t *line)
{
	Dwarf_Line *l = dwarf_getsrc_die(cu, dwaddr);
	const char *f;
	int lineno = 0;

	if (!l)
		return -ENOENT;
	f = dwarf_linesrc(l, NULL, NULL);
	if (!f || dwarf_lineno(l, &lineno) || lineno <= 0)
		return -ENOENT;
	*file = name_of(m, cu, f);
	if (!*file)
		return -ENOMEM;
	*line = (uint32_t)lineno;
	return 0;
}

/* The module, compile unit and DWARF address of runtime address addr of
 * co.  Returns 0, -ENOENT, -ENOMEM. */
static int locate(struct srcline *s, const struct cygprof_object *co, uint64_t addr,
		  struct sl_mod **m, Dwarf_Die **cu, Dwarf_Addr *dwaddr)
{
	Dwarf_Addr va = addr - co->bias, bias = 0;
	int err;

	*m = obj_for(s, co, &err);
	if (!*m)
		return err ? err : -ENOENT;
	*cu = cu_at(*m, va, &bias);
	if (!*cu)
		return -ENOENT;
	*dwaddr = va - bias;
	return 0;
}

int srcline_lookup(struct srcline *s, const struct cygprof_object *co, uint64_t addr,
		   const char **file, uint32_t *line)
{
	struct sl_mod *m;
	Dwarf_Die *cu;
	Dwarf_Addr a;
	int err;

	*file = NULL;
	*line = 0;
	err = locate(s, co, addr, &m, &cu, &a);
	return err ? err : line_at(m, cu, a, file, line);
}

/* The scopes at DWARF address a, innermost first, as the code nests them:
 * inlined calls, then the function they were inlined into, up to the
 * compile unit.  (dwarf_getscopes() continues an inlined call with the
 * scopes of the inlined function's own definition instead; the DIE's
 * parents give its caller.)  Returns the count (*scopes malloc'd) or <= 0. */
static int scopes_at(Dwarf_Die *cu, Dwarf_Addr a, Dwarf_Die **scopes)
{
	Dwarf_Die *v = NULL;
	int n = dwarf_getscopes(cu, a, &v);

	*scopes = NULL;
	if (n <= 0) {
		free(v);
		return n;
	}
	n = dwarf_getscopes_die(&v[0], scopes);
	free(v);
	return n;
}

/* DW_AT_name of a scope, through its abstract origin. */
static const char *scope_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

int srcline_inlined(struct srcline *s, const struct cygprof_object *co, uint64_t addr,
		    const char **name, uint32_t *call_line)
{
	struct sl_mod *m;
	Dwarf_Die *scopes = NULL, *cu;
	Dwarf_Addr a;
	int err, n, i, rc = -ENOENT;

	*name = NULL;
	*call_line = 0;
	err = locate(s, co, addr, &m, &cu, &a);
	if (err)
		return err;
	n = scopes_at(cu, a, &scopes);
	for (i = 0; i < n; i++) {
		Dwarf_Attribute attr;
		const char *nm;

		if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram)
			break; /* reached the function itself: not inlined */
		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		nm = scope_name(&scopes[i]);
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

/* The file of an inlined call (DW_AT_call_file of scope), or NULL. */
static const char *call_file(struct sl_mod *m, Dwarf_Die *cu, Dwarf_Die *scope)
{
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	Dwarf_Word idx;
	size_t nfiles;
	const char *raw;

	if (dwarf_formudata(dwarf_attr(scope, DW_AT_call_file, &attr), &idx) ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) || idx >= nfiles)
		return NULL;
	raw = dwarf_filesrc(files, idx, NULL, NULL);
	return raw ? name_of(m, cu, raw) : NULL;
}

int srcline_frames(struct srcline *s, const struct cygprof_object *co, uint64_t addr,
		   struct srcline_frame *v, size_t cap, size_t *n)
{
	struct sl_mod *m;
	Dwarf_Die *scopes = NULL, *cu;
	Dwarf_Addr a;
	const char *file = NULL;
	uint32_t line = 0;
	size_t k = 0;
	int err, ns;

	*n = 0;
	err = locate(s, co, addr, &m, &cu, &a);
	if (err)
		return err;
	err = line_at(m, cu, a, &file, &line);
	if (err == -ENOMEM)
		return err;
	ns = scopes_at(cu, a, &scopes);
	for (int i = 0; i < ns; i++) {
		int tag = dwarf_tag(&scopes[i]);
		Dwarf_Attribute attr;
		Dwarf_Word cl = 0;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		if (k < cap) {
			v[k].name = scope_name(&scopes[i]);
			v[k].linkage_name = dwarf_formstring(
				dwarf_attr_integrate(&scopes[i], DW_AT_linkage_name, &attr));
			v[k].file = file;
			v[k].line = line;
		}
		k++;
		if (tag == DW_TAG_subprogram)
			break;
		/* the caller's frame is at the call of this inlined one */
		file = call_file(m, cu, &scopes[i]);
		line = !dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &cl)
			       ? (uint32_t)cl
			       : 0;
	}
	free(scopes);
	*n = k;
	return k ? 0 : -ENOENT;
}

/* ---- the functions of a compile unit ------------------------------------- */

struct fn_walk {
	struct fn_range *r;
	size_t n, cap;
	int err;
};

/* Every DW_TAG_subprogram with code under die, nested ones included (a
 * nested function, a function in a namespace or class). */
static void walk_fns(Dwarf_Die *die, struct fn_walk *w, int depth)
{
	Dwarf_Die c;

	if (depth > 32 || dwarf_child(die, &c) != 0)
		return;
	do {
		int tag = dwarf_tag(&c);

		if (tag == DW_TAG_subprogram) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;

			while ((off = dwarf_ranges(&c, off, &base, &lo, &hi)) > 0) {
				if (hi <= lo)
					continue;
				if (ARRAY_GROW(w->r, w->cap, w->n + 1)) {
					w->err = -ENOMEM;
					return;
				}
				w->r[w->n++] = (struct fn_range){lo, hi, c, 0, 0, NULL, 0};
			}
		}
		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_lexical_block:
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_module:
			if (dwarf_haschildren(&c))
				walk_fns(&c, w, depth + 1);
			break;
		}
	} while (!w->err && dwarf_siblingof(&c, &c) == 0);
}

static int cmp_fn_range(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi > y->hi ? -1 : x->hi < y->hi;
}

/* The functions of compile unit cu, indexed on first use.  NULL: -ENOMEM. */
static struct cu_fns *cu_fns_of(struct sl_mod *m, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	struct fn_walk w = {0};
	struct cu_fns *t;

	if (m->ncfs && m->cfs[m->last_cf].cu_off == off)
		return &m->cfs[m->last_cf];
	for (size_t i = 0; i < m->ncfs; i++)
		if (m->cfs[i].cu_off == off) {
			m->last_cf = i;
			return &m->cfs[i];
		}
	walk_fns(cu, &w, 0);
	if (w.err) {
		free(w.r);
		return NULL;
	}
	t = realloc(m->cfs, (m->ncfs + 1) * sizeof(*t));
	if (!t) {
		free(w.r);
		return NULL;
	}
	m->cfs = t;
	if (w.n)
		qsort(w.r, w.n, sizeof(*w.r), cmp_fn_range);
	t[m->ncfs] = (struct cu_fns){off, w.r, w.n, 0};
	m->last_cf = m->ncfs++;
	return &t[m->last_cf];
}

/* The innermost function whose code holds DWARF address a, or NULL. */
static struct fn_range *fn_at(struct cu_fns *cf, Dwarf_Addr a)
{
	struct fn_range *best = NULL;
	size_t lo = 0, hi = cf->n, k;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cf->r[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: the first range starting above a; an enclosing (outer) range
	 * starts earlier, the innermost is the shortest holding a */
	for (k = 0; k < 64 && lo > 0; k++, lo--) {
		struct fn_range *r = &cf->r[lo - 1];

		if (r->lo <= a && a < r->hi && (!best || r->hi - r->lo < best->hi - best->lo))
			best = r;
	}
	return best;
}

int srcline_function(struct srcline *s, const struct cygprof_object *co, uint64_t addr,
		     const char **file, uint32_t *line)
{
	struct sl_mod *m;
	struct cu_fns *cf;
	struct fn_range *r;
	Dwarf_Die *cu;
	Dwarf_Addr a;
	const char *f;
	int err, lineno = 0;

	*file = NULL;
	*line = 0;
	err = locate(s, co, addr, &m, &cu, &a);
	if (err)
		return err;
	cf = cu_fns_of(m, cu);
	if (!cf)
		return -ENOMEM;
	r = fn_at(cf, a);
	if (r) {
		f = dwarf_decl_file(&r->die);
		if (f && !dwarf_decl_line(&r->die, &lineno) && lineno > 0) {
			*file = name_of(m, cu, f);
			if (!*file)
				return -ENOMEM;
			*line = (uint32_t)lineno;
			return 0;
		}
	}
	return line_at(m, cu, a, file, line);
}

/* The index of the first line-table row at or above DWARF address a. */
static size_t first_row(Dwarf_Lines *lines, size_t n, Dwarf_Addr a)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		Dwarf_Addr x = 0;

		dwarf_lineaddr(dwarf_onesrcline(lines, mid), &x);
		if (x < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* [first, last] of function r: its decl line, and the last line in its decl
 * file that its code maps to, before the next function defined in that
 * file. */
static void fn_lines(struct cu_fns *cf, Dwarf_Die *cu, struct fn_range *r, const char *decl)
{
	Dwarf_Off off = dwarf_dieoffset(&r->die);
	Dwarf_Lines *lines;
	size_t nlines = 0, i, k;
	uint32_t bound = UINT32_MAX, last;
	int first = 0;

	if (dwarf_decl_line(&r->die, &first) || first <= 0)
		return;
	last = (uint32_t)first;
	if (!cf->decls) { /* once per unit, not per function asked */
		for (i = 0; i < cf->n; i++) {
			cf->r[i].decl = dwarf_decl_file(&cf->r[i].die);
			if (!cf->r[i].decl || dwarf_decl_line(&cf->r[i].die, &cf->r[i].decl_line))
				cf->r[i].decl = NULL;
		}
		cf->decls = 1;
	}
	/* the next definition in the same file bounds this one */
	for (i = 0; i < cf->n; i++) {
		const struct fn_range *o = &cf->r[i];

		if (o->decl && o->decl_line > first && (uint32_t)o->decl_line < bound &&
		    dwarf_dieoffset((Dwarf_Die *)&o->die) != off && !strcmp(o->decl, decl))
			bound = (uint32_t)o->decl_line;
	}
	if (dwarf_getsrclines(cu, &lines, &nlines))
		nlines = 0;
	/* every range of the function (hot and cold parts) */
	for (k = 0; k < cf->n; k++) {
		if (dwarf_dieoffset(&cf->r[k].die) != off)
			continue;
		for (i = first_row(lines, nlines, cf->r[k].lo); i < nlines; i++) {
			Dwarf_Line *l = dwarf_onesrcline(lines, i);
			Dwarf_Addr x = 0;
			const char *f;
			int n = 0;

			if (dwarf_lineaddr(l, &x) || x >= cf->r[k].hi)
				break;
			f = dwarf_linesrc(l, NULL, NULL);
			if (!f || dwarf_lineno(l, &n) || n < first || (uint32_t)n >= bound ||
			    (uint32_t)n <= last || strcmp(f, decl))
				continue;
			last = (uint32_t)n;
		}
	}
	for (k = 0; k < cf->n; k++)
		if (dwarf_dieoffset(&cf->r[k].die) == off) {
			cf->r[k].first = (uint32_t)first;
			cf->r[k].last = last;
		}
}

int srcline_function_lines(struct srcline *s, const struct cygprof_object *co, uint64_t addr,
			   const char **file, uint32_t *first, uint32_t *last)
{
	struct sl_mod *m;
	struct cu_fns *cf;
	struct fn_range *r;
	Dwarf_Die *cu;
	Dwarf_Addr a;
	const char *f;
	int err;

	*file = NULL;
	*first = *last = 0;
	err = locate(s, co, addr, &m, &cu, &a);
	if (err)
		return err;
	cf = cu_fns_of(m, cu);
	if (!cf)
		return -ENOMEM;
	r = fn_at(cf, a);
	if (!r || !(f = dwarf_decl_file(&r->die)))
		return -ENOENT;
	if (!r->first)
		fn_lines(cf, cu, r, f);
	if (!r->first)
		return -ENOENT;
	*file = name_of(m, cu, f);
	if (!*file)
		return -ENOMEM;
	*first = r->first;
	*last = r->last;
	return 0;
}
