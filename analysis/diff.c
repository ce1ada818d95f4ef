/* SPDX-License-Identifier: MIT */
/* diff.c - two captures' entries matched by key, their changes and order
 * (see diff.h). */
#include "diff.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_key(const void *pa, const void *pb)
{
	const struct diff_entry *a = pa, *b = pb;

	return strcmp(a->key, b->key);
}

void diff_merge(struct diff_entry *e, size_t *n, size_t nvalues)
{
	size_t i, out = 0, k;

	if (!*n)
		return;
	if (nvalues > DIFF_MAX_VALUES)
		nvalues = DIFF_MAX_VALUES;
	/* entries of equal keys are summed into one (their names are equal
	 * by construction) */
	qsort(e, *n, sizeof(*e), cmp_key);
	for (i = 1; i < *n; i++) {
		if (!strcmp(e[i].key, e[out].key)) {
			for (k = 0; k < nvalues; k++) {
				uint64_t s = e[out].v[k] + e[i].v[k];

				e[out].v[k] = s < e[out].v[k] ? UINT64_MAX : s;
			}
		} else {
			e[++out] = e[i];
		}
	}
	*n = out + 1;
}

static int64_t delta(uint64_t o, uint64_t n)
{
	if (n >= o)
		return n - o > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(n - o);
	return o - n > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)(o - n);
}

static void fill(struct diff_row *r, const struct diff_entry *o, const struct diff_entry *n,
		 size_t nvalues)
{
	size_t k;
	int same = 1;

	memset(r, 0, sizeof(*r));
	r->old = o;
	r->new = n;
	for (k = 0; k < nvalues; k++) {
		r->ov[k] = o ? o->v[k] : 0;
		r->nv[k] = n ? n->v[k] : 0;
		r->delta[k] = delta(r->ov[k], r->nv[k]);
		if (r->ov[k] != r->nv[k])
			same = 0;
	}
	r->status = !o ? DIFF_ADDED : !n ? DIFF_REMOVED : same ? DIFF_SAME : DIFF_CHANGED;
}

static int cmp_pkey(const void *pa, const void *pb)
{
	const struct diff_entry *const *a = pa, *const *b = pb;

	return strcmp((*a)->key, (*b)->key);
}

int diff_match(const struct diff_entry *old, size_t nold, const struct diff_entry *new,
	       size_t nnew, size_t nvalues, struct diff_row **rows, size_t *nrows)
{
	const struct diff_entry **os, **ns;
	struct diff_row *r;
	size_t i, j, k = 0;

	*rows = NULL;
	*nrows = 0;
	if (nvalues > DIFF_MAX_VALUES)
		return -EINVAL;
	r = malloc((nold + nnew + 1) * sizeof(*r));
	os = malloc((nold + 1) * sizeof(*os));
	ns = malloc((nnew + 1) * sizeof(*ns));
	if (!r || !os || !ns) {
		free(r);
		free(os);
		free(ns);
		return -ENOMEM;
	}
	/* sort pointers, so that the callers' arrays keep their order */
	for (i = 0; i < nold; i++)
		os[i] = &old[i];
	for (j = 0; j < nnew; j++)
		ns[j] = &new[j];
	qsort(os, nold, sizeof(*os), cmp_pkey);
	qsort(ns, nnew, sizeof(*ns), cmp_pkey);
	i = j = 0;
	while (i < nold || j < nnew) {
		int c = i == nold ? 1 : j == nnew ? -1 : strcmp(os[i]->key, ns[j]->key);

		if (c < 0)
			fill(&r[k++], os[i++], NULL, nvalues);
		else if (c > 0)
			fill(&r[k++], NULL, ns[j++], nvalues);
		else
			fill(&r[k++], os[i++], ns[j++], nvalues);
	}
	free(os);
	free(ns);
	*rows = r;
	*nrows = k;
	return 0;
}

const char *diff_row_name(const struct diff_row *r)
{
	const struct diff_entry *e = r->new ? r->new : r->old;

	return e && e->name ? e->name : "";
}

const char *diff_row_object(const struct diff_row *r)
{
	const struct diff_entry *e = r->new ? r->new : r->old;

	return e ? e->object : NULL;
}

static int sort_by;

static uint64_t mag(int64_t d)
{
	return d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
}

static int cmp_names(const struct diff_row *a, const struct diff_row *b)
{
	const char *oa = diff_row_object(a), *ob = diff_row_object(b);
	const struct diff_entry *ea = a->new ? a->new : a->old, *eb = b->new ? b->new : b->old;
	int c = strcmp(diff_row_name(a), diff_row_name(b));

	if (c)
		return c;
	c = strcmp(oa ? oa : "", ob ? ob : "");
	if (c)
		return c;
	return strcmp(ea->key, eb->key);
}

static int cmp_rows(const void *pa, const void *pb)
{
	const struct diff_row *a = pa, *b = pb;

	if (sort_by >= 0) {
		uint64_t ma = mag(a->delta[sort_by]), mb = mag(b->delta[sort_by]);

		if (ma != mb)
			return ma > mb ? -1 : 1;
	}
	return cmp_names(a, b);
}

void diff_sort(struct diff_row *rows, size_t n, int by)
{
	sort_by = by >= 0 && by < DIFF_MAX_VALUES ? by : DIFF_BY_NAME;
	qsort(rows, n, sizeof(*rows), cmp_rows);
}

double diff_rel(uint64_t old, uint64_t new)
{
	if (!old)
		return NAN;
	return ((double)new - (double)old) / (double)old;
}

const char *diff_status_str(enum diff_status s)
{
	switch (s) {
	case DIFF_SAME:
		return "same";
	case DIFF_CHANGED:
		return "changed";
	case DIFF_ADDED:
		return "added";
	case DIFF_REMOVED:
		return "removed";
	}
	return "?";
}
