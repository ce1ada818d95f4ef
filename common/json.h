/* SPDX-License-Identifier: MIT */
/* json.h - the pieces of JSON every writer of cygprof uses, to any FILE:
 * string literals that are valid UTF-8 whatever the bytes, the real
 * numbers that may be undefined, and the change of a value between two
 * captures.  Nothing here reads a capture, prints an error or exits;
 * write errors are the stream's (ferror()). */
#ifndef CYGPROF_JSON_H
#define CYGPROF_JSON_H

#include <stdint.h>
#include <stdio.h>

/* A JSON string literal (quotes included) of s (NULL prints ""): always
 * valid UTF-8 and valid JSON.  '"', '\\' and control characters (U+0000 to
 * U+001F, U+007F) are escaped; bytes that do not form valid UTF-8 (RFC
 * 3629: no overlong forms, no surrogates, nothing past U+10FFFF) are
 * replaced by U+FFFD, written "\ufffd": one for each maximal subpart of an
 * ill-formed sequence, as Python, browsers and ICU decode.  Names, paths
 * and command lines come from the traced program and the file system,
 * where any byte but NUL is allowed. */
void json_str(FILE *f, const char *s);

/* json_str() of s, or null when s is NULL. */
void json_str_null(FILE *f, const char *s);

/* A real number as "%.6g", or null when it is NaN (undefined, such as a
 * change relative to 0). */
void json_real(FILE *f, double v);

/* One value compared across two captures (diff, memory --diff):
 * `, "KEY": {"old": O, "new": N, "delta": D, "relative": R}`, R = rel
 * (json_real(): diff_rel() of analysis/diff.h, null when old is 0). */
void json_change(FILE *f, const char *key, uint64_t old, uint64_t new, int64_t delta,
		 double rel);

#endif
