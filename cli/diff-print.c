/* SPDX-License-Identifier: MIT */
/* diff-print.c - the rows of a comparison printed as text and as JSON
 * (diff-print.h), for cygprof diff and cygprof memory --diff. */
#include "diff-print.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "json.h"

static int shown(const struct diff_table *t, const struct diff_row *r)
{
	return !t->shown || t->shown(r, t->arg);
}

void diff_print_count(const struct diff_table *t, const struct diff_row *rows, size_t n,
		      size_t c[4])
{
	size_t i;

	memset(c, 0, 4 * sizeof(*c));
	for (i = 0; i < n; i++)
		if (shown(t, &rows[i]))
			c[rows[i].status]++;
}

void diff_print_counts(const char *what, const size_t c[4])
{
	printf("# %s: %zu unchanged, %zu changed, %zu added, %zu removed", what, c[DIFF_SAME],
	       c[DIFF_CHANGED], c[DIFF_ADDED], c[DIFF_REMOVED]);
}

const char *diff_print_sdur(char *buf, size_t len, int64_t d)
{
	char b[32];
	uint64_t m = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
	const char *s = fmt_dur(b, sizeof(b), m);

	while (*s == ' ')
		s++;
	snprintf(buf, len, "%*s%c%s", (int)(10 - strlen(s)), "", d < 0 ? '-' : d > 0 ? '+' : ' ', s);
	return buf;
}

static const char *cell(char *buf, size_t len, const struct diff_row *r, const struct diff_col *c)
{
	unsigned k = c->value;
	double rel;

	switch (c->cell) {
	case DIFF_CELL_OLD:
	case DIFF_CELL_NEW: {
		uint64_t v = c->cell == DIFF_CELL_OLD ? r->ov[k] : r->nv[k];

		if (c->ns)
			return fmt_dur(buf, len, v);
		snprintf(buf, len, "%" PRIu64, v);
		return buf;
	}
	case DIFF_CELL_CHANGE:
		if (c->ns)
			return diff_print_sdur(buf, len, r->delta[k]);
		if (r->delta[k])
			snprintf(buf, len, "%+" PRId64, r->delta[k]);
		else
			snprintf(buf, len, "0");
		return buf;
	case DIFF_CELL_REL:
		rel = diff_rel(r->ov[k], r->nv[k]);
		if (r->ov[k] == r->nv[k])
			snprintf(buf, len, "0.0%%");
		else if (isnan(rel))
			snprintf(buf, len, "new");
		else
			snprintf(buf, len, "%+.1f%%", rel * 100.0);
		return buf;
	}
	return "";
}

size_t diff_print_rows(const struct diff_table *t, const struct diff_row *rows, size_t n)
{
	size_t i, j, m = 0;

	for (i = 0; i < n && (!t->top || m < t->top); i++) {
		const struct diff_row *r = &rows[i];

		if (!shown(t, r))
			continue;
		for (j = 0; j < t->ncols; j++) {
			char b[48];

			printf("%s%*s", t->cols[j].sep, t->cols[j].width, cell(b, sizeof b, r, &t->cols[j]));
		}
		printf("  ");
		t->label(r, 0, t->arg);
		if (r->status == DIFF_ADDED || r->status == DIFF_REMOVED)
			printf("  (%s)", diff_status_str(r->status));
		printf("\n");
		m++;
	}
	return m;
}

void diff_print_json_rows(const char *what, const struct diff_table *t,
			  const struct diff_row *rows, size_t n)
{
	size_t i, k, m = 0;

	printf("  \"%s\": [", what);
	for (i = 0; i < n && (!t->top || m < t->top); i++) {
		const struct diff_row *r = &rows[i];

		if (!shown(t, r))
			continue;
		printf("%s\n    {", m++ ? "," : "");
		t->label(r, 1, t->arg);
		printf(", \"status\": \"%s\"", diff_status_str(r->status));
		for (k = 0; k < t->nvalues; k++)
			if (t->names[k])
				json_change(stdout, t->names[k], r->ov[k], r->nv[k], r->delta[k],
					    diff_rel(r->ov[k], r->nv[k]));
		printf("}");
	}
	printf("%s]", m ? "\n  " : "");
}

void diff_print_json_summary(const size_t c[4])
{
	printf("  \"summary\": {\"same\": %zu, \"changed\": %zu, \"added\": %zu, \"removed\": %zu},\n",
	       c[DIFF_SAME], c[DIFF_CHANGED], c[DIFF_ADDED], c[DIFF_REMOVED]);
}

void diff_print_json_side(const char *what, const char *file, const char *command)
{
	printf("  \"%s\": {\"file\": ", what);
	json_str(stdout, file);
	printf(", \"command\": ");
	json_str_null(stdout, command);
}
