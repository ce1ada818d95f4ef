/* SPDX-License-Identifier: MIT */
/* srcline.h - source file and line of a runtime address, where its function
 * is defined and the functions inlined there, from the DWARF of the object
 * that contains it (libdwfl, libdw), found through debuginfo.h: the object
 * as stored in the capture, or a separate debug file by build-id or
 * debuglink, even when the object itself is gone.  Addresses are placed at
 * the object's load bias.  Objects without line information give no
 * answer; nothing here exits (warnings go through the debuginfo context).
 * Not thread-safe. */
#ifndef SYM_SRCLINE_H
#define SYM_SRCLINE_H

#include <stddef.h>
#include <stdint.h>

#include "cygprof/cygprof-capture.h"
#include "debuginfo.h"

struct srcline;

/** di: the debug-file search (borrowed, must outlive the srcline; its
 * objects' DWARF is shared by every srcline on it); NULL makes one of its
 * own with the directories of CYGPROF_DEBUG_DIRS.  Owned: srcline_free(). */
struct srcline *srcline_new(struct debuginfo *di);
void srcline_free(struct srcline *s);

/** File and line of runtime address addr in object o (keyed by o->idx:
 * each object is opened once).  File names are absolute when DWARF allows
 * (joined to the compilation directory) and lexically normalized.
 * @param[out] file borrowed until srcline_free().
 * Returns 0, -ENOENT when unknown (no file, no DWARF, no line), -ENOMEM. */
int srcline_lookup(struct srcline *s, const struct cygprof_object *o, uint64_t addr,
		   const char **file, uint32_t *line);

/** Where the function entered at runtime address addr is defined: its
 * DW_AT_decl_file/decl_line (through abstract origins), else the line of
 * its entry address.  Same returns as srcline_lookup(). */
int srcline_function(struct srcline *s, const struct cygprof_object *o, uint64_t addr,
		     const char **file, uint32_t *line);

/** The lines of the function entered at runtime address addr: the file
 * and line where it is defined (DW_AT_decl_file, DW_AT_decl_line) and the
 * last line of that file its code (DW_AT_low_pc..high_pc and its other
 * ranges) maps to, before the next function defined in the file (code
 * inlined from elsewhere in the file is not its own).
 * @param[out] file borrowed until srcline_free().
 * Returns 0, -ENOENT when unknown (no DWARF, no declaration), -ENOMEM. */
int srcline_function_lines(struct srcline *s, const struct cygprof_object *o, uint64_t addr,
			   const char **file, uint32_t *first, uint32_t *last);

/** The function inlined at runtime address addr (the innermost inlined
 * call there), by its DWARF name, and the line of that call in its caller
 * (0 when unknown).
 * @param[out] name borrowed until srcline_free().
 * Returns 0, -ENOENT when addr is not in inlined code (or no DWARF). */
int srcline_inlined(struct srcline *s, const struct cygprof_object *o, uint64_t addr,
		    const char **name, uint32_t *call_line);

/* One frame at an address: a function inlined there, or the function the
 * address is in. */
struct srcline_frame {
	const char *name;         /* DW_AT_name (unqualified in C++); may be NULL */
	const char *linkage_name; /* DW_AT_linkage_name (mangled), NULL when none */
	const char *file;         /* absolute, normalized; NULL when unknown */
	uint32_t line;            /* 0 when unknown */
};

/** The frames at runtime address addr, innermost first: each function
 * inlined there, then the function containing them all.  The first frame
 * is at the line of addr, each next one at the call of the frame before
 * it (DW_AT_call_file, DW_AT_call_line).
 * @param[out] v up to cap frames; strings borrowed until srcline_free().
 * @param[out] n the number of frames (more than cap when v was too short).
 * Returns 0, -ENOENT when addr is in no function of the DWARF (or no
 * DWARF), -ENOMEM. */
int srcline_frames(struct srcline *s, const struct cygprof_object *o, uint64_t addr,
		   struct srcline_frame *v, size_t cap, size_t *n);

/** Normalize a path lexically in place ("a/./b" -> "a/b", "a/x/../b" -> "a/b"). */
void srcline_normalize(char *path);

#endif
