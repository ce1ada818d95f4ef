/* SPDX-License-Identifier: MIT */
/* symbols.h - ELF symbol tables and build-ids (collector side, libelf); the
 * process maps they are read for are common/procmaps.h's.
 *
 * Used by the collector at the end of recording to turn the runtime
 * addresses found in call trees into function names, objects and build-ids,
 * which it stores in the capture so reports work without the binaries.
 */
#ifndef SYM_SYMBOLS_H
#define SYM_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "procmaps.h"

/* An ELF object's symbol table (.symtab, else .dynsym), sorted by address. */
struct sym_elf;

/* The largest object file opened (files named by a traced program's maps
 * are not trusted to be reasonable). */
#define SYM_ELF_MAX_SIZE (4ULL << 30)

/** Open path for reading only if it is a regular file of at most max_size
 * bytes: never blocks (a FIFO put in place of a library) and never opens a
 * device.  Returns the fd (close-on-exec) and its size, or -errno
 * (-ENOTSUP: not a regular file, -EFBIG: too big). */
int sym_open_regular(const char *path, uint64_t max_size, uint64_t *size);

/** Open path with libelf and read its function symbols, PT_LOAD segments and
 * GNU build-id.  Only a regular file of at most SYM_ELF_MAX_SIZE bytes
 * is opened (see sym_open_regular()); it is read, not mapped.  Returns
 * 0, -errno, -ENOTSUP (not a regular file), -EFBIG, or -ENOEXEC when the
 * file is not ELF. */
int sym_elf_open(const char *path, struct sym_elf **out);
void sym_elf_close(struct sym_elf *e);

/** The GNU build-id note; returns its length (0 when there is none) and
 * copies up to cap bytes into buf. */
size_t sym_elf_build_id(const struct sym_elf *e, uint8_t *buf, size_t cap);

/** 1 for ET_DYN (PIE or shared object), 0 for ET_EXEC. */
int sym_elf_is_dyn(const struct sym_elf *e);

/** Load bias of this object in a process, from one of its mappings: the
 * value to subtract from a runtime address to get an ELF virtual address.
 * Uses the PT_LOAD segment containing file offset map->offset. */
int sym_elf_bias(const struct sym_elf *e, const struct procmap *map, uint64_t *bias);

/** Find the function symbol containing ELF virtual address vaddr.
 * @param[out] start,size of the symbol (may be NULL).
 * @return the raw (mangled) name, borrowed until sym_elf_close(); NULL
 *         when no symbol covers vaddr. */
const char *sym_elf_lookup(const struct sym_elf *e, uint64_t vaddr, uint64_t *start,
			       uint64_t *size);

/** 1 when the symbols came from .symtab: the object was not stripped. */
int sym_elf_has_symtab(const struct sym_elf *e);

/** Replace e's symbols by from's (a separate debug file of the same object,
 * whose .symtab names the static functions a stripped object lacks); from
 * keeps its segments and build-id and has no symbols left. */
void sym_elf_adopt_symbols(struct sym_elf *e, struct sym_elf *from);

/** Demangle a C++ name (Itanium ABI) the way c++filt prints it; a copy of
 * name when it is not mangled.  Returns an owned string: free() it. */
char *sym_demangle(const char *name);

#endif
