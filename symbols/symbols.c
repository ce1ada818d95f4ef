// SPDX-License-Identifier: MIT
/* symbols.c - ELF symbol tables and build-ids (libelf). */
#include "symbols.h"
#include "symtab.h"

#include "array.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* From libstdc++ (cxxabi.h is C++ only). */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define BUILD_ID_MAX 64

struct elf_load {
	uint64_t offset, vaddr, filesz, memsz;
	uint32_t flags;
};

struct sym_elf {
	int is_dyn;
	int full;  /* the symbols came from .symtab (not only .dynsym) */
	struct sym_table syms;
	struct elf_load *loads;
	size_t nloads;
	uint8_t build_id[BUILD_ID_MAX];
	size_t build_id_len;
};

/* ------------------------------------------------------ symbol table */

static int bind_rank(uint8_t bind)
{
	switch (bind) {
	case STB_GLOBAL:
	case STB_GNU_UNIQUE:
		return 0;
	case STB_WEAK:
		return 1;
	default:
		return 2;
	}
}

/* Sort by address; among aliases the preferred name comes first. */
static int sym_cmp(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;
	size_t lx, ly;
	int rx, ry;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	rx = bind_rank(x->bind);
	ry = bind_rank(y->bind);
	if (rx != ry)
		return rx - ry;
	if ((x->name[0] == '_') != (y->name[0] == '_'))
		return x->name[0] == '_' ? 1 : -1;
	lx = strlen(x->name);
	ly = strlen(y->name);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Is section index ndx executable (SHF_EXECINSTR)? */
static bool section_is_exec(Elf *elf, size_t ndx)
{
	Elf_Scn *scn;
	GElf_Shdr shdr;

	if (ndx == SHN_UNDEF || (ndx >= SHN_LORESERVE && ndx <= SHN_HIRESERVE))
		return false;
	scn = elf_getscn(elf, ndx);
	return scn && gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_EXECINSTR);
}

bool sym_is_function(Elf *elf, const GElf_Sym *sym, size_t shndx)
{
	int type = GELF_ST_TYPE(sym->st_info);

	if (shndx == SHN_UNDEF || !sym->st_value)
		return false;
	if (type == STT_NOTYPE)
		return sym->st_size && section_is_exec(elf, shndx);
	return type == STT_FUNC || type == STT_GNU_IFUNC;
}

int sym_table_add(struct sym_table *t, uint64_t value, uint64_t size, uint8_t bind,
		  const char *name)
{
	if (ARRAY_GROW(t->v, t->cap, t->n + 1))
		return -ENOMEM;
	t->v[t->n].name = strdup(name);
	if (!t->v[t->n].name)
		return -ENOMEM;
	t->v[t->n].value = value;
	t->v[t->n].size = size;
	t->v[t->n].bind = bind;
	t->n++;
	return 0;
}

void sym_table_finish(struct sym_table *t)
{
	size_t out = 0;
	uint64_t max_end = 0;

	if (!t->n)
		return;
	qsort(t->v, t->n, sizeof(*t->v), sym_cmp);
	for (size_t i = 0; i < t->n; i++) {
		struct sym_entry *s = &t->v[i];

		if (out && t->v[out - 1].value == s->value) {
			/* Alias: keep the preferred name, the largest size. */
			if (s->size > t->v[out - 1].size)
				t->v[out - 1].size = s->size;
			free(s->name);
			continue;
		}
		t->v[out++] = *s;
	}
	t->n = out;
	for (size_t i = 0; i < t->n; i++) {
		struct sym_entry *s = &t->v[i];
		uint64_t end = s->value + s->size;

		if (end > max_end)
			max_end = end;
		s->max_end = max_end;
	}
}

const char *sym_table_lookup(const struct sym_table *t, uint64_t addr, uint64_t *start,
			     uint64_t *size)
{
	size_t lo = 0, hi = t->n;

	/* Find the last symbol with value <= addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].value <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0;) {
		const struct sym_entry *s = &t->v[i];

		if (s->max_end <= addr && s->value != addr)
			break; /* nothing at or before i reaches addr */
		if (s->size ? addr - s->value < s->size : addr == s->value) {
			if (start)
				*start = s->value;
			if (size)
				*size = s->size;
			return s->name;
		}
	}
	return NULL;
}

void sym_table_release(struct sym_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].name);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* ----------------------------------------------------------------- ELF */

/* Append the function symbols of symbol table section scn to e->syms. */
static int read_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr, struct sym_elf *e)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !shdr->sh_entsize)
		return 0;
	n = shdr->sh_size / shdr->sh_entsize;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		int ret;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		if (!sym_is_function(elf, &sym, sym.st_shndx))
			continue;
		name = elf_strptr(elf, shdr->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		ret = sym_table_add(&e->syms, sym.st_value, sym.st_size, GELF_ST_BIND(sym.st_info),
				    name);
		if (ret)
			return ret;
	}
	return 0;
}

/* .symtab when it has functions, else .dynsym; sorted and deduplicated. */
static int read_symbols(Elf *elf, struct sym_elf *e)
{
	static const GElf_Word kinds[] = { SHT_SYMTAB, SHT_DYNSYM };

	for (size_t k = 0; k < 2 && !e->syms.n; k++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr shdr;
			int ret;

			if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != kinds[k])
				continue;
			ret = read_symtab(elf, scn, &shdr, e);
			if (ret)
				return ret;
		}
		if (e->syms.n && kinds[k] == SHT_SYMTAB)
			e->full = 1;
	}
	sym_table_finish(&e->syms);
	return 0;
}

/* Look for NT_GNU_BUILD_ID in a note data block. */
static bool scan_notes(Elf_Data *data, struct sym_elf *e)
{
	size_t off = 0, name_off, desc_off, next;
	GElf_Nhdr nhdr;

	while (off < data->d_size &&
	       (next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == sizeof(ELF_NOTE_GNU) &&
		    !memcmp((const char *)data->d_buf + name_off, ELF_NOTE_GNU,
			    sizeof(ELF_NOTE_GNU)) &&
		    nhdr.n_descsz > 0) {
			size_t len = nhdr.n_descsz;

			if (len > BUILD_ID_MAX)
				len = BUILD_ID_MAX;
			memcpy(e->build_id, (const char *)data->d_buf + desc_off, len);
			e->build_id_len = len;
			return true;
		}
		off = next;
	}
	return false;
}

static void read_build_id(Elf *elf, struct sym_elf *e)
{
	Elf_Scn *scn = NULL;
	size_t phnum;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (data && scan_notes(data, e))
			return;
	}
	/* No section headers (or no note section): try PT_NOTE segments. */
	if (elf_getphdrnum(elf, &phnum))
		return;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		Elf_Data *data;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		data = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
					    ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (data && scan_notes(data, e))
			return;
	}
}

static int read_loads(Elf *elf, struct sym_elf *e)
{
	size_t phnum;

	if (elf_getphdrnum(elf, &phnum) || !phnum)
		return 0;
	e->loads = calloc(phnum, sizeof(*e->loads));
	if (!e->loads)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		e->loads[e->nloads++] = (struct elf_load){
			.offset = ph.p_offset,
			.vaddr = ph.p_vaddr,
			.filesz = ph.p_filesz,
			.memsz = ph.p_memsz,
			.flags = ph.p_flags,
		};
	}
	return 0;
}

int sym_open_regular(const char *path, uint64_t max_size, uint64_t *size)
{
	struct stat st;
	int fd;

	/* Look before opening: opening a device can have effects of its own
	 * (a tape rewinds), and a FIFO without a writer blocks. */
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOTSUP;
	/* O_NONBLOCK: the file may have been replaced by a FIFO meanwhile. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOTSUP;
	}
	if ((uint64_t)st.st_size > max_size) {
		close(fd);
		return -EFBIG;
	}
	if (size)
		*size = (uint64_t)st.st_size;
	return fd;
}

int sym_elf_open(const char *path, struct sym_elf **out)
{
	struct sym_elf *e;
	GElf_Ehdr ehdr;
	Elf *elf;
	int fd, ret;

	if (!path || !out)
		return -EINVAL;
	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	fd = sym_open_regular(path, SYM_ELF_MAX_SIZE, NULL);
	if (fd < 0)
		return fd;
	/* Read, not mapped: a file truncated while it is read must not turn
	 * into SIGBUS in the collector. */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		close(fd);
		return -ENOEXEC;
	}
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr)) {
		elf_end(elf);
		close(fd);
		return -ENOEXEC;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		elf_end(elf);
		close(fd);
		return -ENOMEM;
	}
	e->is_dyn = ehdr.e_type == ET_DYN;
	ret = read_loads(elf, e);
	if (!ret)
		ret = read_symbols(elf, e);
	if (!ret)
		read_build_id(elf, e);
	/* Everything needed was copied: release the file right away. */
	elf_end(elf);
	close(fd);
	if (ret) {
		sym_elf_close(e);
		return ret;
	}
	*out = e;
	return 0;
}

int sym_elf_has_symtab(const struct sym_elf *e)
{
	return e && e->full;
}

void sym_elf_adopt_symbols(struct sym_elf *e, struct sym_elf *from)
{
	if (!e || !from || !from->syms.n)
		return;
	sym_table_release(&e->syms);
	e->syms = from->syms;
	e->full = from->full;
	memset(&from->syms, 0, sizeof(from->syms));
}

void sym_elf_close(struct sym_elf *e)
{
	if (!e)
		return;
	sym_table_release(&e->syms);
	free(e->loads);
	free(e);
}

size_t sym_elf_build_id(const struct sym_elf *e, uint8_t *buf, size_t cap)
{
	if (!e)
		return 0;
	if (buf && cap)
		memcpy(buf, e->build_id, cap < e->build_id_len ? cap : e->build_id_len);
	return e->build_id_len;
}

int sym_elf_is_dyn(const struct sym_elf *e)
{
	return e && e->is_dyn;
}

static uint64_t page_size(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	return ps > 0 ? (uint64_t)ps : 4096;
}

int sym_elf_bias(const struct sym_elf *e, const struct procmap *map, uint64_t *bias)
{
	const uint64_t mask = ~(page_size() - 1);
	const struct elf_load *best = NULL;
	int best_score = -1;

	if (!e || !map || !bias)
		return -EINVAL;
	for (size_t i = 0; i < e->nloads; i++) {
		const struct elf_load *l = &e->loads[i];
		int score = 0;

		if (map->offset < (l->offset & mask) ||
		    map->offset >= l->offset + (l->filesz ? l->filesz : 1))
			continue;
		/* Segments packed into one file page can both contain the
		 * offset: prefer the one whose exec bit and start match. */
		if (!!(l->flags & PF_X) == !!map->exec)
			score += 2;
		if ((l->offset & mask) == map->offset)
			score += 1;
		if (score > best_score) {
			best = l;
			best_score = score;
		}
	}
	if (!best)
		return -ENOENT;
	/* File offset map->offset is at runtime address map->start and at
	 * virtual address p_vaddr - p_offset + map->offset. */
	*bias = map->start - (best->vaddr - best->offset + map->offset);
	return 0;
}

const char *sym_elf_lookup(const struct sym_elf *e, uint64_t vaddr, uint64_t *start,
			   uint64_t *size)
{
	if (!e)
		return NULL;
	return sym_table_lookup(&e->syms, vaddr, start, size);
}

char *sym_demangle(const char *name)
{
	char *res;
	int status = 0;

	if (!name)
		return NULL;
	if (strncmp(name, "_Z", 2))
		return strdup(name);
	res = __cxa_demangle(name, NULL, NULL, &status);
	if (res && !status)
		return res;
	free(res);
	return strdup(name);
}
