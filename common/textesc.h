/* SPDX-License-Identifier: MIT */
/* textesc.h - names from the traced program as text: one line each,
 * whatever their bytes.  Every text output of cygprof (the commands'
 * tables, trees, timelines and headers) prints a string that comes from
 * the program or the file system (command lines, arguments, thread,
 * function, counter and memdump names, object and source paths) through
 * text_esc(); JSON goes through json_str() (json.h) instead.
 *
 * The escapes, as `ls -b` and C write them (docs: cygprof(1), "NAMES IN
 * TEXT OUTPUT"):
 *   newline, tab, carriage return   \n  \t  \r
 *   a backslash                     \\
 *   any other control byte           \xHH (U+0000 to U+001F, U+007F: ESC
 *                                    is \x1b)
 *   a C1 control (U+0080 to U+009F)  its two bytes, \xc2\xHH
 *   a byte that is not part of valid UTF-8 (RFC 3629: overlong forms,
 *   surrogates, past U+10FFFF, a sequence cut short)   \xHH
 * Everything else (printable ASCII, valid UTF-8: "Größe") is printed as
 * it is. */
#ifndef CYGPROF_TEXTESC_H
#define CYGPROF_TEXTESC_H

#include <stdio.h>

/* s as it is printed in text: s itself when it needs no escape (NULL
 * gives ""), else its escaped form, static: kept until the process ends
 * (one copy per distinct string, so a name printed a million times costs
 * one).  Never NULL: out of memory, a string needing escapes gives "?".
 * Not thread-safe: the commands print from one thread. */
const char *text_esc(const char *s);

/* The escaped form of s into buf (len bytes, cut there but always
 * terminated); the length of the whole escaped form, as snprintf(). */
size_t text_esc_buf(char *buf, size_t len, const char *s);

#endif
