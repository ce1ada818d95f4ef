/* SPDX-License-Identifier: MIT */
/* names.c - the ELF objects of the traced processes and the names of their
 * functions, for the filters (-F, -N), the capture's symbols and cygprof
 * top's snapshots (spelt by symbols/fnname.h): objects are opened once
 * (through /proc/PID/root for another mount namespace, through
 * /proc/PID/map_files for a deleted file) and cached. */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "collector-private.h"
#include "fnname.h"

/* A stripped object: a separate debug file (by build-id, debuglink,
 * --debug-dir, debuginfod) names its static functions. */
static void adopt_debug(struct collector *c, struct cproc *cp, const char *file,
			struct sym_elf *e)
{
	if (e && !sym_elf_has_symtab(e) && c->dbg) {
		uint8_t bid[64];
		size_t blen = sym_elf_build_id(e, bid, sizeof bid);
		char *dfile = NULL;
		struct sym_elf *d = NULL;
		struct debuginfo *dbg = c->dbg, *own = NULL;
		if (blen > sizeof bid)
			blen = sizeof bid;
		if (cp && cp->ns && (own = debuginfo_new())) {
			/* a container's own debug directory first */
			char dir[64];
			snprintf(dir, sizeof dir, "/proc/%u/root/usr/lib/debug", cp->pid);
			debuginfo_add_dir(own, dir);
			for (size_t k = 0; k < c->o->n_debug_dirs; k++)
				debuginfo_add_dir(own, c->o->debug_dirs[k]);
			debuginfo_add_env(own);
			dbg = own;
		}
		if (!debuginfo_find(dbg, file, bid, blen, &dfile) && strcmp(dfile, file) &&
		    !sym_elf_open(dfile, &d) && sym_elf_has_symtab(d))
			sym_elf_adopt_symbols(e, d);
		sym_elf_close(d);
		debuginfo_free(own);
		free(dfile);
	}
}

/* The ELF object at path as process cp sees it (cached: opened once, its
 * symbols read into memory, so it serves after the process is gone).
 * live: the process runs; if its file is gone from path (deleted, or
 * replaced by something that is not a regular file), its mapping is opened
 * through /proc/PID/map_files (root only).  Failures while the process
 * lives are not cached: the end tries again. */
static struct sym_elf *elf_open(struct collector *c, struct cproc *cp,
				    const struct procmap *m, int live, int *gone)
{
	char key[4096 + 64], file[4096 + 64];
	const char *path = m->path;
	size_t i;
	int err;

	snprintf(key, sizeof key, "%s%s%s", cp && cp->ns ? cp->ns : "", cp && cp->ns ? ":" : "",
		 path);
	struct elfcache *known = NULL;
	for (i = 0; i < c->nelfs; i++)
		if (!strcmp(c->elfs[i].path, key)) {
			known = &c->elfs[i];
			break;
		}
	/* A failure is tried again while the process lives (its mapping may
	 * still be opened); anything else is final. */
	if (known && (known->elf || !live)) {
		if (gone)
			*gone = m->deleted || known->err == -ENOENT || known->err == -ENOTSUP;
		return known->elf;
	}
	struct sym_elf *e = NULL;
	if (cp && cp->ns)
		snprintf(file, sizeof file, "/proc/%u/root%s", cp->pid, path);
	else
		snprintf(file, sizeof file, "%s", path);
	const char *opened = file;
	err = m->deleted ? -ENOENT : sym_elf_open(file, &e);
	if (err && cp && cp->ns && !live) {
		/* gone already: the path as we see it is the best guess */
		err = sym_elf_open(path, &e);
		opened = path;
	}
	if ((err == -ENOENT || err == -ENOTSUP) && live && cp) {
		/* The file was deleted or replaced while the process runs: its
		 * mapping still names the object (root may open it). */
		snprintf(file, sizeof file, "/proc/%u/map_files/%llx-%llx", cp->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		if (!sym_elf_open(file, &e)) {
			err = 0;
			opened = file;
		}
	}
	if (gone)
		*gone = m->deleted || err == -ENOENT || err == -ENOTSUP;
	if (err && live)
		return NULL;
	if (known) {
		known->elf = e;
		known->err = err;
		adopt_debug(c, cp, opened, e);
		return e;
	}
	struct elfcache *v = realloc(c->elfs, (c->nelfs + 1) * sizeof *v);
	if (!v) {
		sym_elf_close(e);
		return NULL;
	}
	c->elfs = v;
	v[c->nelfs].path = strdup(key);
	if (!v[c->nelfs].path) {
		sym_elf_close(e);
		return NULL;
	}
	v[c->nelfs].elf = e;
	v[c->nelfs].err = err;
	c->nelfs++;
	adopt_debug(c, cp, opened, e);
	return e;
}

struct sym_elf *collector_elf(struct collector *c, struct cproc *cp,
				  const struct procmap *m, int *gone)
{
	return elf_open(c, cp, m, 0, gone);
}

static char *mnt_ns(pid_t pid)
{
	char link[64], buf[128];
	ssize_t n;

	snprintf(link, sizeof link, "/proc/%d/ns/mnt", (int)pid);
	n = readlink(link, buf, sizeof buf - 1);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return strdup(buf);
}

void collector_prime_procs(struct collector *c)
{
	size_t i;

	if (!c->own_ns)
		c->own_ns = mnt_ns(getpid());
	for (i = 0; i < c->nprocs; i++) {
		struct cproc *cp = c->procs[i];
		struct cyg_proc *p = C_AT(c, cp->off);
		if (cp->reaped || RD(p->state) != CYG_P_RUNNING)
			continue;
		collector_proc_maps(c, cp);
		if (cp->primed_len == cp->maps_len)
			continue;
		if (!cp->primed_len && cp->pid) {
			char *ns = mnt_ns((pid_t)cp->pid);
			if (ns && c->own_ns && strcmp(ns, c->own_ns))
				cp->ns = ns;
			else
				free(ns);
		}
		cp->primed_len = cp->maps_len;
		for (size_t k = 0; k < cp->maps.n; k++)
			if (cp->maps.v[k].exec)
				elf_open(c, cp, &cp->maps.v[k], 1, NULL);
		__atomic_store_n(&p->primed, 1, __ATOMIC_RELEASE);
	}
}

/* The raw (mangled) name of the function at runtime address addr. */
const char *collector_fn_name(struct collector *c, struct cproc *cp, uint64_t addr, uint64_t *start,
			      uint64_t *size, struct procmap **mapp, struct sym_elf **elfp)
{
	size_t i;

	if (!cp)
		return NULL;
	for (i = 0; i < cp->maps.n; i++) {
		struct procmap *m = &cp->maps.v[i];
		uint64_t bias, s, z;
		if (addr < m->start || addr >= m->end)
			continue;
		struct sym_elf *e = collector_elf(c, cp, m, NULL);
		if (mapp)
			*mapp = m;
		if (elfp)
			*elfp = e;
		if (!e || sym_elf_bias(e, m, &bias))
			return NULL;
		const char *name = sym_elf_lookup(e, addr - bias, &s, &z);
		if (name) {
			if (start)
				*start = s + bias;
			if (size)
				*size = z;
		}
		return name;
	}
	return NULL;
}

char *collector_fn_label(struct collector *c, struct cproc *cp, const char *raw,
			 struct procmap *m, uint64_t addr)
{
	uint64_t bias, off = 0;
	int gone = 0;

	if (!raw && m) {
		/* the ELF address when the object could be read, else the
		 * offset in the file */
		struct sym_elf *e = collector_elf(c, cp, m, &gone);
		if (e && !sym_elf_bias(e, m, &bias))
			off = addr - bias;
		else
			off = addr - m->start + m->offset;
	}
	return sym_fn_name(raw, m ? m->path : NULL, off, gone, addr);
}

/* Whether pattern pat names raw (dem: raw demangled, or NULL). */
static int name_match1(const char *pat, const char *raw, char *dem)
{
	char *paren;
	int hit;

	if (!fnmatch(pat, raw, 0))
		return 1;
	if (!dem)
		return 0;
	/* match "ns::f" against "ns::f(int)" too */
	if (!fnmatch(pat, dem, 0))
		return 1;
	paren = strchr(dem, '(');
	if (!paren)
		return 0;
	*paren = 0;
	hit = !fnmatch(pat, dem, 0);
	*paren = '(';
	return hit;
}

int collector_name_matches(const char **pats, size_t n, const char *raw, unsigned char *hits)
{
	size_t i;
	char *dem;
	int hit = 0;

	if (!raw)
		return 0;
	dem = sym_demangle(raw);
	/* with hits, every pattern is tried: each one that names a function is
	 * marked, for record's warning about those that named none */
	for (i = 0; i < n && (!hit || hits); i++) {
		if (hits && hit && hits[i])
			continue;
		if (name_match1(pats[i], raw, dem)) {
			hit = 1;
			if (hits)
				hits[i] = 1;
		}
	}
	free(dem);
	return hit;
}
