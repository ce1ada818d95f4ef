/* SPDX-License-Identifier: MIT */
/* symtab.h - a sorted table of function symbols, internal to symbols/: one
 * rule for which symbols name code and which alias names an address, fed
 * from libelf by the collector's reader (symbols.c) and from libdwfl by the
 * report-time one (modules.c), so both name a function alike. */
#ifndef SYM_SYMTAB_H
#define SYM_SYMTAB_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sym_entry {
	uint64_t value, size;
	/* Highest value + size over this symbol and all before it: lets a
	 * lookup walk back over symbols nested in / overlapping others. */
	uint64_t max_end;
	char *name;
	uint8_t bind;
};

/* Zeroed = empty; add, then finish once, then look up. */
struct sym_table {
	struct sym_entry *v;
	size_t n, cap;
};

/** Whether symbol sym of elf (in section shndx, SHN_XINDEX resolved) names
 * code: a function (STT_FUNC, STT_GNU_IFUNC) or a sized STT_NOTYPE symbol
 * in an executable section; defined and not at address 0. */
bool sym_is_function(Elf *elf, const GElf_Sym *sym, size_t shndx);

/** Append a symbol (name copied).  Returns 0 or -ENOMEM. */
int sym_table_add(struct sym_table *t, uint64_t value, uint64_t size, uint8_t bind,
		  const char *name);
/** Sort by address and merge aliases: one entry per address, named by the
 * preferred alias (global before weak before local, then without a leading
 * underscore, then the shortest, then the first by strcmp), with the
 * largest size. */
void sym_table_finish(struct sym_table *t);
/** The symbol covering addr (a sizeless one only at its own address).
 * @return its raw name, borrowed until sym_table_release(); NULL if none. */
const char *sym_table_lookup(const struct sym_table *t, uint64_t addr, uint64_t *start,
			     uint64_t *size);
void sym_table_release(struct sym_table *t);

#endif
