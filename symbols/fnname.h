/* SPDX-License-Identifier: MIT */
/* fnname.h - a function's name as a capture stores it, the one spelling:
 * the demangled symbol; for an address no symbol covers, a placeholder
 * naming its object and the offset in it ("libfoo.so+0x1234", with
 * " [deleted]" when the file was gone); "0x..." outside every object.
 *
 * The collector names functions through it (collector/names.c: the
 * capture's symbols and cygprof top's snapshots), and the read side
 * recognises the placeholders through it and spells an address it cannot
 * name the same way (analysis/view-symbols.c: a name that names nothing is
 * asked of the debug-file search).  Nothing else builds these names. */
#ifndef SYM_FNNAME_H
#define SYM_FNNAME_H

#include <stdint.h>

/** The name of the function at runtime address addr as a capture stores it:
 * raw demangled when a symbol covers it (raw not NULL); else, when addr is
 * in a mapped object (path not NULL, the object's file), the placeholder
 * "<file name>+0x<off>" (off: the ELF address when the object could be
 * read, else the offset in the file), " [deleted]" added when gone (the
 * file was deleted or replaced); else "0x<addr>".  Owned: free(); NULL
 * when out of memory. */
char *sym_fn_name(const char *raw, const char *path, uint64_t off, int gone, uint64_t addr);

/** Whether name, stored for an address of the object whose file is path
 * (NULL: none known), names nothing: empty, "0x...", or path's placeholder. */
int sym_fn_unnamed(const char *name, const char *path);

#endif
