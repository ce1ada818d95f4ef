/* SPDX-License-Identifier: MIT */
/* latency.c - the runtime's latency histograms (cyg-shm.h, struct
 * cyg_node_lat) onto the capture's latency records: per capture-tree node,
 * the buckets of the raw nodes folded into it, the calls still open when
 * the thread's tree was stored (closed at its end, as their time is), the
 * least and greatest call, in ns.
 *
 * What the program wrote is checked like the rest of a node: a histogram
 * that counts more calls than its node made is damage and left out; a
 * bucket that wrapped (u32: 2^32 calls of one path and duration) is put
 * back from the node's u64 call count, into its fullest bucket, the only
 * one that can have wrapped (the others' sum is under 2^32 too, or the
 * calls would be more). */
#include <errno.h>
#include <string.h>

#include "array.h"
#include "collector-private.h"

void collector_lat_reset(struct cthread *ct)
{
	ct->nlat = 0;
}

void collector_lat_node(struct cthread *ct, uint32_t idx, uint32_t gid)
{
	if (ARRAY_GROW(ct->lat, ct->caplat, ct->nlat + 1))
		return; /* out of memory: that node has no histogram */
	ct->lat[ct->nlat++] = (struct latref){idx, gid, 0};
}

void collector_lat_open(struct cthread *ct, uint32_t idx, uint64_t ticks)
{
	if (ARRAY_GROW(ct->lat, ct->caplat, ct->nlat + 1))
		return;
	ct->lat[ct->nlat++] = (struct latref){idx, 0, ticks + 1};
}

static int latref_cmp(const void *a, const void *b)
{
	const struct latref *x = a, *y = b;

	if (x->idx != y->idx)
		return x->idx < y->idx ? -1 : 1;
	return (x->gid > y->gid) - (x->gid < y->gid);
}

/* One raw node's histogram added to h (max, min in ticks): 0, or -1 when it
 * cannot be true (left out, counted as damage by the caller). */
static int add_raw(const struct collector *c, uint32_t gid, uint64_t max_ticks, uint64_t *h,
		   uint64_t *mn, uint64_t *mx)
{
	const struct cyg_node *n = shm_node(c, gid);
	const struct cyg_node_lat *l = CYG_NODE_LAT(n);
	const struct cyg_node_ext *e = CYG_NODE_EXT(n);
	uint32_t v[CYG_LAT_BUCKETS];
	uint64_t sum = 0, hi, nmin;
	unsigned i, top = 0;

	/* the buckets before the calls: a call is counted on entry, its
	 * bucket on exit, so the calls read after are never fewer */
	for (i = 0; i < CYG_LAT_BUCKETS; i++) {
		v[i] = RD(l->n[i]);
		sum += v[i];
		if (v[i] > v[top])
			top = i;
	}
	hi = RD(e->lat_max);
	nmin = RD(e->lat_nmin);
	uint64_t calls = RD(n->calls);
	if (!sum)
		return 0;
	if (sum > calls || !nmin || ~nmin > hi || hi > max_ticks)
		return -1;
	for (i = 0; i < CYG_LAT_BUCKETS; i++)
		h[i] += v[i];
	/* 2^32 calls more than the buckets say: the fullest one wrapped */
	h[top] += (calls - sum) >> 32 << 32;
	if (~nmin < *mn)
		*mn = ~nmin;
	if (hi > *mx)
		*mx = hi;
	return 0;
}

int collector_put_latency(struct collector *c, struct cthread *ct, uint64_t max_ticks,
			  uint64_t *damaged)
{
	struct cygprof_latency rec = {ct->idx, CYG_LAT_SUB, 0};
	struct cygprof_lat_row *rows = NULL;
	size_t nrows = 0, caprows = 0, i, j;
	uint64_t h[CYG_LAT_BUCKETS];
	const unsigned sh = CYG_LAT_SHIFT;
	int err = 0;

	rec.unit_ns = ticks_to_ns(c, 1ULL << sh);
	if (ct->nlat) /* qsort takes no NULL, even for nothing */
		qsort(ct->lat, ct->nlat, sizeof *ct->lat, latref_cmp);
	for (i = 0; i < ct->nlat; i = j) {
		uint32_t idx = ct->lat[i].idx;
		uint64_t mn = UINT64_MAX, mx = 0, total = 0;

		memset(h, 0, sizeof h);
		for (j = i; j < ct->nlat && ct->lat[j].idx == idx; j++) {
			const struct latref *r = &ct->lat[j];
			if (r->open) { /* a call open at the end: its time so far */
				uint64_t dt = r->open - 1;
				h[cyg_lat_idx(dt)]++;
				if (dt < mn)
					mn = dt;
				if (dt > mx)
					mx = dt;
			} else if (add_raw(c, r->gid, max_ticks, h, &mn, &mx)) {
				(*damaged)++;
			}
		}
		unsigned nb = 0;
		for (unsigned b = 0; b < CYG_LAT_BUCKETS; b++)
			if (h[b]) {
				total += h[b];
				nb++;
			}
		if (!total || idx >= ct->n)
			continue;
		if (ARRAY_GROW(rows, caprows, nrows + nb + 1)) {
			err = -ENOMEM;
			break;
		}
		rows[nrows++] = (struct cygprof_lat_row){idx, CYGPROF_LAT_RANGE, ticks_to_ns(c, mn),
							 ticks_to_ns(c, mx), total};
		for (unsigned b = 0; b < CYG_LAT_BUCKETS; b++) {
			if (!h[b])
				continue;
			uint64_t lo = ticks_to_ns(c, cyg_lat_lo(b) << sh);
			uint64_t hi = ticks_to_ns(c, cyg_lat_lo(b + 1) << sh);
			if (b == CYG_LAT_BUCKETS - 1 && hi <= ticks_to_ns(c, mx))
				hi = ticks_to_ns(c, mx) + 1; /* the last one takes the rest */
			rows[nrows++] = (struct cygprof_lat_row){idx, CYGPROF_LAT_BUCKET, lo, hi, h[b]};
		}
	}
	if (!err)
		err = cygprof_capture_put_latency(c->cap, &rec, rows, nrows);
	free(rows);
	return err;
}
