/* SPDX-License-Identifier: MIT */
/* diff-print.h - the rows of a comparison of two captures (analysis/diff.h)
 * as `cygprof diff` and `cygprof memory --diff` print them: text rows of
 * right-aligned cells, each the OLD or NEW value, the change or the
 * relative change of one of the row's values, then what the row is about;
 * or JSON objects, one per row, with what it is about, its status and
 * every value's change (json_change()).  The commands say which cells and
 * values, and print their own headers. */
#ifndef CYGPROF_DIFF_PRINT_H
#define CYGPROF_DIFF_PRINT_H

#include <stddef.h>

#include "diff.h"

/* What a text cell shows of one of a row's values. */
enum diff_cell {
	DIFF_CELL_OLD,    /* OLD's value */
	DIFF_CELL_NEW,    /* NEW's value */
	DIFF_CELL_CHANGE, /* NEW - OLD: "+5", "-5", "0" */
	DIFF_CELL_REL,    /* (NEW - OLD) / OLD: "+12.5%", "0.0%", "new" */
};

struct diff_col {
	const char *sep;     /* printed before the cell */
	int width;           /* right-aligned in at least this many characters */
	unsigned value;      /* which value of the row */
	enum diff_cell cell;
	int ns;              /* the value is a duration: fmt_dur(), and its
			      * change signed and aligned ("     +1.000 ms") */
};

struct diff_table {
	const struct diff_col *cols; /* the text cells, in order */
	size_t ncols;
	const char *const *names;    /* JSON: the name of each value, NULL to
				      * leave one out */
	size_t nvalues;
	/* What the row is about: after the cells and two spaces (text), or
	 * the JSON fields before "status" (json set). */
	void (*label)(const struct diff_row *r, int json, void *arg);
	/* Whether a row is shown and counted (NULL: every row). */
	int (*shown)(const struct diff_row *r, void *arg);
	size_t top; /* at most this many rows shown (0: all) */
	void *arg;
};

/** A change of a duration, signed, right-aligned in 11 characters:
 * "     +1.000 ms" (fmt_dur()'s unit and digits). */
const char *diff_print_sdur(char *buf, size_t len, int64_t d);

/** The number of rows shown by t, per status (c[DIFF_SAME]...). */
void diff_print_count(const struct diff_table *t, const struct diff_row *rows, size_t n,
		      size_t c[4]);
/** "# WHAT: N unchanged, N changed, N added, N removed" (no line end). */
void diff_print_counts(const char *what, const size_t c[4]);
/** The text rows (a status of added or removed said after the label);
 * returns how many were printed. */
size_t diff_print_rows(const struct diff_table *t, const struct diff_row *rows, size_t n);

/** "  \"WHAT\": [{...}, ...]" (no separator after). */
void diff_print_json_rows(const char *what, const struct diff_table *t,
			  const struct diff_row *rows, size_t n);
/** "  \"summary\": {\"same\": N, \"changed\": N, \"added\": N, \"removed\": N},\n". */
void diff_print_json_summary(const size_t c[4]);
/** "  \"WHAT\": {\"file\": FILE, \"command\": COMMAND" (the caller adds its
 * figures and the closing brace). */
void diff_print_json_side(const char *what, const char *file, const char *command);

#endif
