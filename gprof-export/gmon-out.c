/* SPDX-License-Identifier: MIT */
/* gmon-out.c - the histogram synthesised from exact self times or made of
 * perf samples, and the gmon.out byte layout glibc writes (header, tag 0
 * histogram, tag 1 arcs). */
#include "gmon-export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GMON_BIN_BYTES 2 /* one 16-bit counter per 2 bytes of text */
#define GMON_BIN_MAX 65535u
#define GMON_MAX_RATE 1000000000u

void gmon_hist_free(struct gmon_hist *h)
{
	if (!h)
		return;
	free(h->bins);
	free(h->counts);
	memset(h, 0, sizeof(*h));
}

/* The bins [first, first + nb) lying wholly inside fns[i] (its end clipped
 * at the next function).  A function too small for a whole bin gets the
 * bin holding its entry, shared with its neighbour. */
static void fn_bins(const struct gmon_fn *fns, size_t n, size_t i, uint64_t low,
		    uint64_t *first, uint64_t *nb)
{
	uint64_t a = fns[i].addr, e = fns[i].end;
	uint64_t f, l;

	if (i + 1 < n && (e <= a || e > fns[i + 1].addr))
		e = fns[i + 1].addr;
	if (e <= a)
		e = a + GMON_BIN_BYTES;
	f = (a - low + GMON_BIN_BYTES - 1) / GMON_BIN_BYTES;
	l = (e - low) / GMON_BIN_BYTES;
	if (l > f) {
		*first = f;
		*nb = l - f;
	} else {
		*first = (a - low) / GMON_BIN_BYTES;
		*nb = 1;
	}
}

/* The largest 1, 2 or 5 x 10^k not above limit (at least 1). */
static uint32_t nice_rate(unsigned __int128 limit)
{
	static const uint32_t steps[] = {1, 2, 5};
	uint32_t best = 1;
	uint64_t p;
	size_t k;

	for (p = 1; p <= GMON_MAX_RATE; p *= 10)
		for (k = 0; k < 3; k++)
			if ((unsigned __int128)p * steps[k] <= limit &&
			    p * steps[k] <= GMON_MAX_RATE)
				best = (uint32_t)(p * steps[k]);
	return best;
}

struct rem {
	uint64_t r;
	size_t i;
};

static int cmp_rem(const void *pa, const void *pb)
{
	const struct rem *a = pa, *b = pb;

	if (a->r != b->r)
		return a->r < b->r ? 1 : -1;
	return a->i < b->i ? -1 : a->i > b->i;
}

int gmon_hist_build(const struct gmon_fn *fns, size_t n, struct gmon_hist *h)
{
	unsigned __int128 limit = GMON_MAX_RATE, total = 0;
	uint64_t low, high, *ticks = NULL, *first = NULL, *nb = NULL, sum = 0, target;
	struct rem *rem = NULL;
	size_t i;
	int err = -ENOMEM;

	memset(h, 0, sizeof(*h));
	h->rate = GMON_MAX_RATE;
	if (!n)
		return 0;
	low = fns[0].addr & ~(uint64_t)(GMON_BIN_BYTES - 1);
	high = 0;
	for (i = 0; i < n; i++) {
		uint64_t e = fns[i].end > fns[i].addr ? fns[i].end : fns[i].addr + 1;

		if (e > high)
			high = e;
	}
	high = (high + GMON_BIN_BYTES - 1) & ~(uint64_t)(GMON_BIN_BYTES - 1);
	if ((high - low) / GMON_BIN_BYTES > UINT32_MAX)
		return -E2BIG;
	h->low_pc = low;
	h->high_pc = high;
	h->nbins = (uint32_t)((high - low) / GMON_BIN_BYTES);
	h->bins = calloc(h->nbins, sizeof(*h->bins));
	ticks = calloc(n, sizeof(*ticks));
	first = calloc(n, sizeof(*first));
	nb = calloc(n, sizeof(*nb));
	rem = calloc(n, sizeof(*rem));
	if (!h->bins || !ticks || !first || !nb || !rem)
		goto out;

	/* the rate: every function's ticks (rounded up) fit its bins */
	for (i = 0; i < n; i++) {
		fn_bins(fns, n, i, low, &first[i], &nb[i]);
		total += fns[i].self_ns;
		if (fns[i].self_ns) {
			unsigned __int128 l = (unsigned __int128)nb[i] * GMON_BIN_MAX *
					      1000000000u / fns[i].self_ns;

			if (l < limit)
				limit = l;
		}
	}
	h->rate = nice_rate(limit);

	/* largest remainder: each function floor or ceil of its exact
	 * ticks, the sum the rounded exact total */
	for (i = 0; i < n; i++) {
		unsigned __int128 x = (unsigned __int128)fns[i].self_ns * h->rate;

		ticks[i] = (uint64_t)(x / 1000000000u);
		rem[i].r = (uint64_t)(x % 1000000000u);
		rem[i].i = i;
		sum += ticks[i];
	}
	total = total * h->rate;
	target = (uint64_t)((total + 500000000u) / 1000000000u);
	if (n)
		qsort(rem, n, sizeof(*rem), cmp_rem);
	for (i = 0; i < n && sum < target; i++) {
		if (!rem[i].r)
			break;
		ticks[rem[i].i]++;
		sum++;
	}

	/* spread each function's ticks evenly over its bins */
	for (i = 0; i < n; i++) {
		uint64_t q = ticks[i] / nb[i], r = ticks[i] % nb[i], k;

		for (k = 0; k < nb[i] && first[i] + k < h->nbins; k++) {
			uint64_t v = h->bins[first[i] + k] + q + (k < r);

			h->bins[first[i] + k] = v > GMON_BIN_MAX ? GMON_BIN_MAX : (uint16_t)v;
		}
	}
	for (i = 0; i < h->nbins; i++)
		h->ticks += h->bins[i];
	err = 0;
out:
	if (err)
		gmon_hist_free(h);
	free(ticks);
	free(first);
	free(nb);
	free(rem);
	return err;
}

int gmon_hist_build_samples(const struct gmon_fn *fns, size_t n, const struct gmon_pc *pcs,
			    size_t npcs, uint32_t rate, struct gmon_hist *h)
{
	uint64_t low = UINT64_MAX, high = 0;
	size_t i;

	memset(h, 0, sizeof(*h));
	h->rate = rate ? rate : GMON_DEFAULT_RATE;
	if (n)
		low = fns[0].addr;
	if (npcs && pcs[0].pc < low)
		low = pcs[0].pc;
	for (i = 0; i < n; i++) {
		uint64_t e = fns[i].end > fns[i].addr ? fns[i].end : fns[i].addr + 1;

		if (e > high)
			high = e;
	}
	if (npcs && pcs[npcs - 1].pc + 1 > high)
		high = pcs[npcs - 1].pc + 1;
	if (!n && !npcs)
		return 0;
	low &= ~(uint64_t)(GMON_BIN_BYTES - 1);
	high = (high + GMON_BIN_BYTES - 1) & ~(uint64_t)(GMON_BIN_BYTES - 1);
	if ((high - low) / GMON_BIN_BYTES > UINT32_MAX)
		return -E2BIG;
	h->low_pc = low;
	h->high_pc = high;
	h->nbins = (uint32_t)((high - low) / GMON_BIN_BYTES);
	h->bins = calloc(h->nbins ? h->nbins : 1, sizeof(*h->bins));
	h->counts = calloc(h->nbins ? h->nbins : 1, sizeof(*h->counts));
	if (!h->bins || !h->counts) {
		gmon_hist_free(h);
		return -ENOMEM;
	}
	for (i = 0; i < npcs; i++)
		h->counts[(pcs[i].pc - low) / GMON_BIN_BYTES] += pcs[i].count;
	for (i = 0; i < h->nbins; i++) {
		h->bins[i] = h->counts[i] > GMON_BIN_MAX ? GMON_BIN_MAX : (uint16_t)h->counts[i];
		h->ticks += h->counts[i];
	}
	return 0;
}

int gmon_image_hist(const struct gmon_image *img, struct gmon_hist *h)
{
	if (img->sampled)
		return gmon_hist_build_samples(img->fns, img->nfns, img->pcs, img->npcs,
					       img->sample_rate, h);
	return gmon_hist_build(img->fns, img->nfns, h);
}

/* ---- the file --------------------------------------------------------------- */

static void le(unsigned char *p, uint64_t v, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

int gmon_write_file(FILE *f, const struct gmon_hist *h, const struct gmon_arc *arcs,
		    size_t narcs)
{
	unsigned char buf[64];
	size_t i;

	/* header: cookie, version 1, 12 spare bytes */
	memset(buf, 0, 20);
	memcpy(buf, "gmon", 4);
	le(buf + 4, 1, 4);
	fwrite(buf, 1, 20, f);

	/* with counts, as many records over the same range as the fullest
	 * bin needs: gprof adds their bins */
	if (h && h->nbins) {
		uint64_t max = 0, nrec = 1, r;

		for (i = 0; h->counts && i < h->nbins; i++)
			if (h->counts[i] > max)
				max = h->counts[i];
		if (max > GMON_BIN_MAX)
			nrec = (max + GMON_BIN_MAX - 1) / GMON_BIN_MAX;
		for (r = 0; r < nrec; r++) {
			memset(buf, 0, 41);
			buf[0] = 0; /* GMON_TAG_TIME_HIST */
			le(buf + 1, h->low_pc, 8);
			le(buf + 9, h->high_pc, 8);
			le(buf + 17, h->nbins, 4);
			le(buf + 21, h->rate, 4);
			memcpy(buf + 25, "seconds", 7); /* 15 bytes, NUL padded */
			buf[40] = 's';
			fwrite(buf, 1, 41, f);
			for (i = 0; i < h->nbins; i++) {
				uint64_t v = h->bins[i], done = r * GMON_BIN_MAX;

				if (h->counts)
					v = h->counts[i] <= done ? 0 : h->counts[i] - done;
				le(buf, v > GMON_BIN_MAX ? GMON_BIN_MAX : v, 2);
				fwrite(buf, 1, 2, f);
			}
		}
	}

	for (i = 0; i < narcs; i++) {
		uint64_t left = arcs[i].count;

		while (left) {
			uint32_t c = left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;

			buf[0] = 1; /* GMON_TAG_CG_ARC */
			le(buf + 1, arcs[i].from_pc, 8);
			le(buf + 9, arcs[i].self_pc, 8);
			le(buf + 17, c, 4);
			fwrite(buf, 1, 21, f);
			left -= c;
		}
	}

	return ferror(f) ? -EIO : 0;
}
