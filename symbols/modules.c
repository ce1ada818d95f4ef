/* SPDX-License-Identifier: MIT */
/* modules.c - one libdwfl session per object file of a capture: the object
 * (or, when it is gone, its debug file) reported at bias 0, its separate
 * debug file and dwz file given to libdwfl by the search of debuginfo.c;
 * and the names of its addresses (sym_name_from_debug()). */
#include "debuginfo-private.h"
#include "symbols.h"
#include "symtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

struct dbg_module {
	struct debuginfo *d;
	char *path;                  /* as recorded; NULL when unknown */
	uint8_t rec_bid[DBG_BID_MAX]; /* as recorded (the key, with path) */
	size_t rec_bid_len;
	uint8_t bid[DBG_BID_MAX];    /* recorded, else the object file's */
	size_t bid_len;
	struct dbg_probe self;       /* the object file, when found */
	bool have_self;
	bool main_dwarf;             /* the reported file has DWARF itself */
	bool debug_given;            /* libdwfl has its separate debug file */
	bool debug_failed;           /* ... or there is none */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	bool syms_read;
	struct sym_table syms;
};

/* libdwfl asks for a separate debug file: first the object's (when the
 * reported file has no DWARF, or no symbol table), then, once DWARF is
 * loaded, its dwz file (.gnu_debugaltlink). */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file_name, const char *debuglink,
			  GElf_Word crc, char **debuginfo_file_name);

static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	return -1; /* every module is reported with its file */
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* A dwz file candidate (owned: taken or freed): 1 when it has DWARF and
 * build-id bid (*out takes it), 0 when not, -ENOMEM. */
static int try_alt(struct dbg_module *m, char *cand, const char *file, const void *bid,
		   size_t n, char **out)
{
	struct dbg_probe p;
	bool ok = false;

	if (!cand)
		return errno == ENOMEM ? -ENOMEM : 0;
	if (!dbg_probe_file(cand, &p)) {
		ok = p.dwarf && p.bid_len == n && !memcmp(p.bid, bid, n);
		if (!ok && p.bid_len)
			dbg_warn(m->d, "%s: build-id does not match %s, ignored", cand,
				 file ? file : "the object");
		dbg_probe_release(&p);
	}
	if (!ok) {
		free(cand);
		return 0;
	}
	*out = cand;
	return 1;
}

/* The dwz file of the DWARF libdwfl loaded from file (its
 * .gnu_debugaltlink): at the path it names (under each root, then as is;
 * a relative one next to file), else by its build-id.  Returns 0 with
 * *out owned, -ENOENT, -ENOMEM. */
static int find_alt(struct dbg_module *m, Dwfl_Module *mod, const char *file, char **out)
{
	const char *name, *slash;
	const void *bid;
	Dwarf_Addr bias;
	Dwarf *dw;
	ssize_t n;
	int r = 0;

	*out = NULL;
	/* libdwfl asks for the dwz file once the DWARF is loaded: this
	 * returns it without searching again. */
	dw = dwfl_module_getdwarf(mod, &bias);
	n = dw ? dwelf_dwarf_gnu_debugaltlink(dw, &name, &bid) : -1;
	if (n <= 0 || n > DBG_BID_MAX)
		return -ENOENT;
	if (name[0] == '/') {
		for (size_t i = 0; i <= m->d->nroots && !r; i++)
			r = try_alt(m, dbg_root_path(m->d, i, name), file, bid, (size_t)n, out);
	} else if (name[0] && file) {
		slash = strrchr(file, '/');
		size_t dl = slash ? (size_t)(slash - file) + 1 : 0;
		char *cand = malloc(dl + strlen(name) + 1);

		if (cand) {
			memcpy(cand, file, dl);
			strcpy(cand + dl, name);
		} else {
			errno = ENOMEM;
		}
		r = try_alt(m, cand, file, bid, (size_t)n, out);
	}
	if (r)
		return r < 0 ? r : 0;
	return dbg_search_build_id(m->d, file, bid, (size_t)n, out);
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file_name, const char *debuglink,
			  GElf_Word crc, char **debuginfo_file_name)
{
	struct dbg_module *m = *userdata;
	bool alt = m && (m->main_dwarf || m->debug_given);
	char *path = NULL;
	int fd, err;

	errno = 0; /* failures here are "not found", not system errors */
	if (!m || (!alt && m->debug_failed))
		return -1;
	if (alt) {
		err = find_alt(m, mod, file_name, &path);
	} else {
		struct dbg_target t = {m->path, m->bid, m->bid_len, m->have_self ? &m->self : NULL};

		err = dbg_search(m->d, &t, &path);
	}
	fd = err ? -1 : sym_open_regular(path, SYM_ELF_MAX_SIZE, NULL);
	if (fd < 0) {
		free(path);
		if (!alt)
			m->debug_failed = true;
		errno = 0;
		return -1;
	}
	if (!alt)
		m->debug_given = true;
	free(*debuginfo_file_name);
	*debuginfo_file_name = path;
	return fd;
}

/* Report the object, or the debug file found for it. */
static int module_open(struct dbg_module *m)
{
	struct dbg_target t = {m->path, m->bid, m->bid_len, NULL};
	struct dbg_probe p;
	char *file = NULL;
	void **slot;
	int fd, err;

	err = dbg_find_object(m->d, &t, &file, &m->self);
	if (err == -ENOMEM)
		return err;
	if (!err) {
		m->have_self = true;
		m->main_dwarf = m->self.dwarf;
		if (!m->bid_len && m->self.bid_len) {
			memcpy(m->bid, m->self.bid, m->self.bid_len);
			m->bid_len = m->self.bid_len;
		}
	} else {
		/* Gone: a debug file found by build-id (or name) stands in
		 * for it; its program headers give the same addresses. */
		err = dbg_search(m->d, &t, &file);
		if (err)
			return err == -ENOMEM ? err : 0;
		if (!dbg_probe_file(file, &p)) {
			m->main_dwarf = p.dwarf;
			dbg_probe_release(&p);
		}
	}
	m->dwfl = dwfl_begin(&callbacks);
	if (!m->dwfl) {
		free(file);
		return -ENOMEM;
	}
	fd = sym_open_regular(file, SYM_ELF_MAX_SIZE, NULL);
	if (fd >= 0) {
		dwfl_report_begin(m->dwfl);
		/* base 0, add_p_vaddr: module addresses are ELF addresses */
		m->mod = dwfl_report_elf(m->dwfl, m->path ? m->path : file, file, fd, 0, true);
		if (!m->mod)
			close(fd); /* libdwfl takes fd only on success */
		dwfl_report_end(m->dwfl, NULL, NULL);
	}
	free(file);
	if (m->mod && dwfl_module_info(m->mod, &slot, NULL, NULL, NULL, NULL, NULL, NULL))
		*slot = m;
	return 0;
}

static void module_free(struct dbg_module *m)
{
	if (m->dwfl)
		dwfl_end(m->dwfl);
	dbg_probe_release(&m->self);
	sym_table_release(&m->syms);
	free(m->path);
	free(m);
}

void dbg_modules_free(struct debuginfo *d)
{
	for (size_t i = 0; i < d->nmods; i++)
		module_free(d->mods[i]);
	free(d->mods);
	d->mods = NULL;
	d->nmods = 0;
}

static int module_get(struct debuginfo *d, const char *path, const uint8_t *bid, size_t bid_len,
		      struct dbg_module **out)
{
	struct dbg_module *m, **v;
	int err;

	*out = NULL;
	if (bid_len > DBG_BID_MAX)
		bid_len = 0; /* not a GNU build-id we could match */
	for (size_t i = 0; i < d->nmods; i++) {
		m = d->mods[i];
		if ((m->path && path ? !strcmp(m->path, path) : m->path == path) &&
		    m->rec_bid_len == bid_len && (!bid_len || !memcmp(m->rec_bid, bid, bid_len))) {
			*out = m;
			return 0;
		}
	}
	v = realloc(d->mods, (d->nmods + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	d->mods = v;
	m = calloc(1, sizeof(*m));
	if (!m || (path && !(m->path = strdup(path)))) {
		free(m);
		return -ENOMEM;
	}
	m->d = d;
	if (bid_len) {
		memcpy(m->rec_bid, bid, bid_len);
		memcpy(m->bid, bid, bid_len);
	}
	m->rec_bid_len = m->bid_len = bid_len;
	err = module_open(m);
	if (err) {
		module_free(m);
		return err;
	}
	d->mods[d->nmods++] = m;
	*out = m;
	return 0;
}

int dbg_module(struct debuginfo *d, const char *path, const uint8_t *bid, size_t bid_len,
	       Dwfl_Module **mod)
{
	struct dbg_module *m;
	int err = module_get(d, path, bid, bid_len, &m);

	*mod = err ? NULL : m->mod;
	return err;
}

/* ---- names ------------------------------------------------------------------ */

/* The function symbols of the module, from its symbol table or its debug
 * file's (libdwfl picks: .symtab of the object, of the debug file, the
 * MiniDebugInfo of .gnu_debugdata, then .dynsym), in the collector's
 * table. */
static int read_syms(struct dbg_module *m)
{
	int n = dwfl_module_getsymtab(m->mod);

	m->syms_read = true;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf;
		Dwarf_Addr bias;
		const char *name =
			dwfl_module_getsym_info(m->mod, i, &sym, &addr, &shndx, &elf, &bias);

		if (!name || !*name || !elf || !sym_is_function(elf, &sym, shndx))
			continue;
		if (sym_table_add(&m->syms, addr, sym.st_size, GELF_ST_BIND(sym.st_info), name))
			return -ENOMEM;
	}
	sym_table_finish(&m->syms);
	return 0;
}

int sym_name_from_debug(struct debuginfo *d, const char *obj_path, const uint8_t *bid,
			size_t bid_len, uint64_t bias, uint64_t addr, char **name, uint64_t *start,
			uint64_t *size)
{
	struct dbg_module *m;
	const char *raw;
	uint64_t s = 0, z = 0;
	int err;

	*name = NULL;
	err = module_get(d, obj_path, bid, bid_len, &m);
	if (err)
		return err;
	if (!m->mod)
		return -ENOENT;
	if (!m->syms_read && (err = read_syms(m))) {
		sym_table_release(&m->syms);
		return err;
	}
	raw = sym_table_lookup(&m->syms, addr - bias, &s, &z);
	if (!raw)
		return -ENOENT;
	*name = sym_demangle(raw);
	if (!*name)
		return -ENOMEM;
	if (start)
		*start = s + bias;
	if (size)
		*size = z;
	return 0;
}
