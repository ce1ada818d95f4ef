/* SPDX-License-Identifier: MIT */
/* diff-latency.c - cygprof diff --latency: each function's p50, p99 and max
 * in OLD and NEW (the latency histograms, report-latency.c), the functions
 * whose p99 moved most first.  Functions are matched by the profiles' keys
 * (object and name, as the rest of diff). */
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diff-latency.h"
#include "format.h"
#include "json.h"
#include "latency.h"
#include "report-latency.h"
#include "textesc.h"

struct lrow {
	const char *key, *name;
	const struct lat_stats *o, *n; /* NULL: none on that side */
	double rel;                    /* p99 new / old - 1 (NAN: a side without) */
};

static int by_move(const void *a, const void *b)
{
	const struct lrow *x = a, *y = b;
	double u = isnan(x->rel) ? -1 : fabs(x->rel), w = isnan(y->rel) ? -1 : fabs(y->rel);

	if (u != w)
		return u > w ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* index of key in the sorted keys of p's functions (sorted: their
 * indices), -1 when absent */
static long find(const struct profile *p, const uint32_t *sorted, const char *key)
{
	size_t lo = 0, hi = p->nfns;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(p->fns[sorted[mid]].name, key);
		if (!c)
			return sorted[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static const struct profile *cmp_p;

static int by_fn_name(const void *a, const void *b)
{
	return strcmp(cmp_p->fns[*(const uint32_t *)a].name, cmp_p->fns[*(const uint32_t *)b].name);
}

static void dur(char *b, size_t len, double ns)
{
	fmt_dur(b, len, (uint64_t)(ns + 0.5));
}

void diff_latency(const struct diff_latency_side *old, const struct diff_latency_side *new,
		  const char *pattern, int json)
{
	struct lat_stats *os = report_latency_fns(old->v, old->p, old->file);
	struct lat_stats *ns = report_latency_fns(new->v, new->p, new->file);
	size_t i, n = 0;

	if (!os || !ns) {
		if (json)
			printf(",\n  \"latency\": null");
		else
			printf("\n# latency: %s has no latency data (recorded before cygprof kept "
			       "latency histograms, or with --time=sampled)\n",
			       !os ? old->file : new->file);
		free(os);
		free(ns);
		return;
	}
	uint32_t *sorted = malloc((new->p->nfns + 1) * sizeof *sorted);
	struct lrow *rows = malloc((old->p->nfns + new->p->nfns + 1) * sizeof *rows);
	if (!sorted || !rows)
		cli_die(1, "diff: out of memory");
	for (i = 0; i < new->p->nfns; i++)
		sorted[i] = (uint32_t)i;
	cmp_p = new->p;
	qsort(sorted, new->p->nfns, sizeof *sorted, by_fn_name);
	unsigned char *seen = calloc(new->p->nfns + 1, 1);
	if (!seen)
		cli_die(1, "diff: out of memory");
	for (i = 0; i < old->p->nfns; i++) {
		const char *key = old->p->fns[i].name;
		long j = find(new->p, sorted, key);
		const struct lat_stats *a = os[i].count ? &os[i] : NULL;
		const struct lat_stats *b = j >= 0 && ns[j].count ? &ns[j] : NULL;
		if (j >= 0)
			seen[j] = 1;
		if (!a && !b)
			continue;
		rows[n++] = (struct lrow){key, profile_key_name(key), a, b,
					  a && b && a->p99 > 0 ? b->p99 / a->p99 - 1 : NAN};
	}
	for (i = 0; i < new->p->nfns; i++)
		if (!seen[i] && ns[i].count)
			rows[n++] = (struct lrow){new->p->fns[i].name,
						  profile_key_name(new->p->fns[i].name), NULL, &ns[i],
						  NAN};
	qsort(rows, n, sizeof *rows, by_move);
	if (json) {
		size_t k = 0;
		printf(",\n  \"latency\": [");
		for (i = 0; i < n; i++) {
			const struct lrow *r = &rows[i];
			if (pattern && !fnmatch(pattern, r->name, 0) == 0)
				continue;
			printf("%s\n    {\"name\": ", k++ ? "," : "");
			json_str(stdout, r->name);
			if (r->o)
				printf(", \"old\": {\"calls\": %" PRIu64 ", \"p50_ns\": %.0f, \"p99_ns\": "
				       "%.0f, \"max_ns\": %.0f}",
				       r->o->count, r->o->p50, r->o->p99, r->o->max);
			else
				printf(", \"old\": null");
			if (r->n)
				printf(", \"new\": {\"calls\": %" PRIu64 ", \"p50_ns\": %.0f, \"p99_ns\": "
				       "%.0f, \"max_ns\": %.0f}",
				       r->n->count, r->n->p50, r->n->p99, r->n->max);
			else
				printf(", \"new\": null");
			if (isnan(r->rel))
				printf(", \"p99_change\": null}");
			else
				printf(", \"p99_change\": %.4f}", r->rel);
		}
		printf("%s]", k ? "\n  " : "");
	} else {
		printf("\n# latency per function (histograms), the p99 that moved most first\n");
		printf("#   p50 OLD    p50 NEW    p99 OLD    p99 NEW   p99 change    max NEW  "
		       "function\n");
		for (i = 0; i < n; i++) {
			const struct lrow *r = &rows[i];
			char b[5][32], ch[32];
			if (pattern && !fnmatch(pattern, r->name, 0) == 0)
				continue;
			strcpy(b[0], "         -");
			strcpy(b[1], b[0]);
			strcpy(b[2], b[0]);
			strcpy(b[3], b[0]);
			strcpy(b[4], b[0]);
			if (r->o) {
				dur(b[0], 32, r->o->p50);
				dur(b[2], 32, r->o->p99);
			}
			if (r->n) {
				dur(b[1], 32, r->n->p50);
				dur(b[3], 32, r->n->p99);
				dur(b[4], 32, r->n->max);
			}
			if (isnan(r->rel))
				snprintf(ch, sizeof ch, "%12s", r->o ? "removed" : "added");
			else
				snprintf(ch, sizeof ch, "%+11.1f%%", r->rel * 100);
			printf("%s %s %s %s %s %s  %s\n", b[0], b[1], b[2], b[3], ch, b[4],
			       text_esc(r->name));
		}
	}
	free(seen);
	free(sorted);
	free(rows);
	free(os);
	free(ns);
}
