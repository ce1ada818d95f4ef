/* SPDX-License-Identifier: MIT */
/* diff.h - the comparison of two captures: entries (a function, a call path,
 * an allocation stack) of OLD and NEW matched by key, their values' changes,
 * and the order they are shown in.
 *
 * Pure: it works on entries the caller made from each capture (cygprof diff:
 * functions keyed by name and object, paths by their functions from the
 * root; cygprof memory --diff OLD NEW: functions and stacks keyed by
 * names), so it is unit-testable without a capture.
 *
 * Definitions:
 *   key        what matches an entry of OLD with one of NEW (exact bytes);
 *              diff_merge() first sums the entries of one side that share
 *              a key (a function in two threads, a stack reached by two
 *              return addresses).
 *   delta      new - old of each value (an absent side counts 0).
 *   relative   delta / old (diff_rel(): NaN when old is 0).
 *   status     DIFF_ADDED only in NEW, DIFF_REMOVED only in OLD,
 *              DIFF_SAME in both with every value equal, else DIFF_CHANGED.
 *   order      diff_sort(): by the absolute delta of one value, largest
 *              first, then by name, object and key; or by name, object, key.
 *
 * Error convention: negative errno; nothing here prints or exits.
 */
#ifndef CYGPROF_DIFF_H
#define CYGPROF_DIFF_H

#include <stddef.h>
#include <stdint.h>

#define DIFF_MAX_VALUES 6
#define DIFF_BY_NAME (-1)

/* One function, path or stack of one capture.  The strings are the
 * caller's (borrowed): they must outlive the rows. */
struct diff_entry {
	const char *key;    /* what matches OLD with NEW */
	const char *name;   /* what is shown */
	const char *object; /* shown beside the name (may be NULL) */
	uint64_t v[DIFF_MAX_VALUES];
};

enum diff_status { DIFF_SAME, DIFF_CHANGED, DIFF_ADDED, DIFF_REMOVED };

/* One entry of OLD, NEW or both. */
struct diff_row {
	const struct diff_entry *old, *new; /* NULL on the side where it is absent */
	uint64_t ov[DIFF_MAX_VALUES], nv[DIFF_MAX_VALUES]; /* 0 when absent */
	int64_t delta[DIFF_MAX_VALUES];                    /* nv - ov (saturated) */
	enum diff_status status;
};

/** Sort e by key and sum the values of entries that share a key (the
 * first one's name and object stay) into one; *n becomes the number left. */
void diff_merge(struct diff_entry *e, size_t *n, size_t nvalues);

/** Match old with new by key (each side's keys unique: diff_merge() them
 * first) and compute the deltas of the first nvalues values.
 * @param[out] rows owned: free(); one per key of either side, in key order.
 * Returns 0, -EINVAL (nvalues out of range), -ENOMEM. */
int diff_match(const struct diff_entry *old, size_t nold, const struct diff_entry *new,
	       size_t nnew, size_t nvalues, struct diff_row **rows, size_t *nrows);

/** Order rows by the absolute delta of value by (largest first; ties by
 * name, object, key), or with DIFF_BY_NAME by name, object, key. */
void diff_sort(struct diff_row *rows, size_t n, int by);

/** The relative change new/old - 1 (0.5 is +50%); NaN when old is 0. */
double diff_rel(uint64_t old, uint64_t new);

/** The row's name and object (from NEW when present, else OLD). */
const char *diff_row_name(const struct diff_row *r);
const char *diff_row_object(const struct diff_row *r);

/** "same", "changed", "added", "removed". */
const char *diff_status_str(enum diff_status s);

#endif
