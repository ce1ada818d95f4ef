/* SPDX-License-Identifier: MIT */
/* srcline.h - source file and line of a runtime address, from the DWARF of
 * the object that contains it (libdw/libdwfl), opened by path as stored in
 * the capture and placed at its load bias.  Objects that no longer exist
 * or have no line information give no answer; nothing here prints or exits. */
#ifndef CYGPROF_SRCLINE_H
#define CYGPROF_SRCLINE_H

#include <stdint.h>

struct srcline;

struct srcline *srcline_new(void);
void srcline_free(struct srcline *s);

/** File and line of runtime address addr in the object numbered obj (any
 * key unique to the object: the capture's object index), read from path and
 * placed at bias (runtime address - ELF virtual address).  Each object is
 * opened once.
 * @param[out] file borrowed until srcline_free().
 * Returns 0, -ENOENT when unknown (no file, no DWARF, no line), -ENOMEM. */
int srcline_lookup(struct srcline *s, uint32_t obj, const char *path, uint64_t bias,
		   uint64_t addr, const char **file, uint32_t *line);

#endif
