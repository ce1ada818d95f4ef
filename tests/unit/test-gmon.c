/* SPDX-License-Identifier: MIT */
/* test-gmon.c - gprof-export/gmon-out.c: the histogram synthesised from
 * exact self times (rate, rounding, no overflow, bins inside functions),
 * the histogram of perf samples (one tick per sample in its pc's bin, the
 * range widened to the pcs, bins past 65535 in further records) and the
 * gmon.out bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "gmon-export.h"

/* Ticks credited to [addr, end) the way gprof does with whole bins. */
static uint64_t ticks_in(const struct gmon_hist *h, uint64_t addr, uint64_t end)
{
	uint64_t sum = 0, i;

	for (i = 0; i < h->nbins; i++) {
		uint64_t lo = h->low_pc + 2 * i;

		if (lo >= addr && lo + 2 <= end)
			sum += h->bins[i];
	}
	return sum;
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* Each function within one tick of its exact time; sum within half. */
static void check_hist(const struct gmon_fn *f, size_t n, const struct gmon_hist *h)
{
	uint64_t total = 0, got = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t end = i + 1 < n && f[i + 1].addr < f[i].end ? f[i + 1].addr : f[i].end;
		uint64_t t = ticks_in(h, f[i].addr, end);
		double exact = (double)f[i].self_ns * h->rate / 1e9;

		CHECK(absdiff(t, (uint64_t)(exact + 0.5)) <= 1);
		CHECK((double)t > exact - 1.0 && (double)t < exact + 1.0);
		total += f[i].self_ns;
		got += t;
	}
	CHECK_EQ_U64(got, h->ticks);
	CHECK((double)got >= (double)total * h->rate / 1e9 - 0.5 - 1e-6);
	CHECK((double)got <= (double)total * h->rate / 1e9 + 0.5 + 1e-6);
}

static void test_exact_ns(void)
{
	/* odd (unaligned, -O0 style) addresses, a gap, a small function */
	const struct gmon_fn f[] = {
		{0x1131, 0x1180, 12345}, {0x1180, 0x11c3, 1}, {0x11c3, 0x11cb, 0},
		{0x1200, 0x1290, 999999},
	};
	struct gmon_hist h;

	CHECK_EQ_INT(gmon_hist_build(f, 4, &h), 0);
	CHECK_EQ_U64(h.rate, 1000000000);
	CHECK_EQ_U64(h.low_pc, 0x1130);
	CHECK_EQ_U64(h.high_pc, 0x1290);
	CHECK_EQ_U64(h.nbins, (0x1290 - 0x1130) / 2);
	CHECK_EQ_U64(h.ticks, 12345 + 1 + 999999);
	check_hist(f, 4, &h);
	gmon_hist_free(&h);
}

static void test_rate_lowered(void)
{
	/* 3 s in 16 bytes (8 bins): at most 8 * 65535 ticks -> 100 kHz;
	 * 1 s in a 4 KB function */
	const struct gmon_fn f[] = {
		{0x400000, 0x400010, 3000000000ull},
		{0x400010, 0x401010, 1000000000ull},
		{0x401010, 0x401020, 33333},
	};
	struct gmon_hist h;
	uint32_t i;

	CHECK_EQ_INT(gmon_hist_build(f, 3, &h), 0);
	CHECK_EQ_U64(h.rate, 100000);
	for (i = 0; i < 8; i++)
		CHECK(h.bins[i] <= 65535 && h.bins[i] >= 37500);
	check_hist(f, 3, &h);
	gmon_hist_free(&h);
}

static void test_rounding_total(void)
{
	/* 10 functions of 0.6 tick each at the lowered rate: the total is
	 * 6 ticks, each function 0 or 1 */
	struct gmon_fn f[11];
	struct gmon_hist h;
	int i;

	for (i = 0; i < 10; i++) {
		f[i].addr = 0x2000 + 0x10 * (uint64_t)i;
		f[i].end = f[i].addr + 0x10;
		f[i].self_ns = 6;
	}
	/* a function that forces 100 MHz: 65535 * 8 ticks at 1e8 Hz = 5.24 ms */
	f[10].addr = 0x2000 + 0x10 * 10;
	f[10].end = f[10].addr + 0x10;
	f[10].self_ns = 5000000;
	CHECK_EQ_INT(gmon_hist_build(f, 11, &h), 0);
	CHECK_EQ_U64(h.rate, 100000000);
	CHECK_EQ_U64(h.ticks, 6 + 500000);
	check_hist(f, 11, &h);
	gmon_hist_free(&h);
}

static void test_write(void)
{
	const struct gmon_fn f[] = {{0x1000, 0x1004, 7}};
	const struct gmon_arc a[] = {{0x1001, 0x1000, 5}, {0x1003, 0x1000, 0x100000002ull}};
	char path[] = "/tmp/test-gmon-XXXXXX";
	unsigned char b[256];
	struct gmon_hist h;
	size_t len;
	FILE *fp;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	fp = fdopen(fd, "wb");
	CHECK(fp != NULL);
	if (!fp)
		return;
	CHECK_EQ_INT(gmon_hist_build(f, 1, &h), 0);
	CHECK_EQ_INT(gmon_write_file(fp, &h, a, 2), 0);
	CHECK_EQ_INT(fclose(fp), 0);
	fp = fopen(path, "rb");
	CHECK(fp != NULL);
	if (!fp)
		return;
	len = fread(b, 1, sizeof(b), fp);
	fclose(fp);
	unlink(path);
	/* header 20 + hist 1+40+2*2 + 3 arcs (one split) * 21 */
	CHECK_EQ_U64(len, 20 + 45 + 3 * 21);
	CHECK(!memcmp(b, "gmon\1\0\0\0", 8));
	CHECK_EQ_INT(b[20], 0);
	CHECK_EQ_U64(b[21] | b[22] << 8, 0x1000);
	CHECK_EQ_U64(b[29] | b[30] << 8, 0x1004);
	CHECK_EQ_U64(b[37], 2);                               /* bins */
	CHECK_EQ_U64(b[41] | b[42] << 8 | b[43] << 16 | (uint64_t)b[44] << 24, 1000000000);
	CHECK(!memcmp(b + 45, "seconds\0\0\0\0\0\0\0\0s", 16));
	CHECK_EQ_U64(b[61] + b[63], 7);
	CHECK_EQ_INT(b[65], 1);
	CHECK_EQ_U64(b[66], 0x01);
	CHECK_EQ_U64(b[67], 0x10);
	CHECK_EQ_U64(b[74] | b[75] << 8, 0x1000);
	CHECK_EQ_U64(b[82], 5);
	/* the big count: UINT32_MAX, then 3 */
	CHECK_EQ_INT(b[86], 1);
	CHECK_EQ_U64(b[103] & b[104] & b[105] & b[106], 0xff);
	CHECK_EQ_INT(b[107], 1);
	CHECK_EQ_U64(b[124], 3);
	gmon_hist_free(&h);
}

static void test_samples(void)
{
	/* a pc below the first function and one past the last: the range
	 * takes them in; an odd pc shares its bin with the byte before */
	const struct gmon_fn f[] = {{0x1010, 0x1020, 5}, {0x1020, 0x1030, 0}};
	const struct gmon_pc pc[] = {{0x1001, 2}, {0x1012, 3}, {0x1013, 4}, {0x1031, 1}};
	struct gmon_hist h;

	CHECK_EQ_INT(gmon_hist_build_samples(f, 2, pc, 4, 999, &h), 0);
	CHECK_EQ_U64(h.rate, 999);
	CHECK_EQ_U64(h.low_pc, 0x1000);
	CHECK_EQ_U64(h.high_pc, 0x1032);
	CHECK_EQ_U64(h.nbins, 0x19);
	CHECK_EQ_U64(h.ticks, 10);
	CHECK_EQ_U64(h.bins[0], 2);
	CHECK_EQ_U64(h.bins[9], 7);
	CHECK_EQ_U64(h.bins[0x18], 1);
	CHECK_EQ_U64(ticks_in(&h, 0x1010, 0x1020), 7);
	CHECK_EQ_U64(ticks_in(&h, 0x1020, 0x1030), 0);
	gmon_hist_free(&h);

	/* no function at all (an uninstrumented program), no rate */
	CHECK_EQ_INT(gmon_hist_build_samples(NULL, 0, pc + 1, 1, 0, &h), 0);
	CHECK_EQ_U64(h.rate, GMON_DEFAULT_RATE);
	CHECK_EQ_U64(h.low_pc, 0x1012);
	CHECK_EQ_U64(h.nbins, 1);
	CHECK_EQ_U64(h.bins[0], 3);
	gmon_hist_free(&h);

	/* nothing: no bins, no record */
	CHECK_EQ_INT(gmon_hist_build_samples(NULL, 0, NULL, 0, 100, &h), 0);
	CHECK_EQ_U64(h.nbins, 0);
	gmon_hist_free(&h);
}

/* A bin of 140000 samples: three records over the same range, which
 * gprof adds: 65535 + 65535 + 8930. */
static void test_samples_records(void)
{
	const struct gmon_pc pc[] = {{0x2000, 140000}, {0x2002, 7}};
	char path[] = "/tmp/test-gmon-XXXXXX";
	unsigned char b[512];
	struct gmon_hist h;
	uint64_t sum0 = 0, sum1 = 0;
	size_t len, r;
	FILE *fp;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	fp = fdopen(fd, "wb");
	CHECK(fp != NULL);
	if (!fp)
		return;
	CHECK_EQ_INT(gmon_hist_build_samples(NULL, 0, pc, 2, 1000, &h), 0);
	CHECK_EQ_U64(h.nbins, 2);
	CHECK_EQ_U64(h.ticks, 140007);
	CHECK_EQ_INT(gmon_write_file(fp, &h, NULL, 0), 0);
	CHECK_EQ_INT(fclose(fp), 0);
	fp = fopen(path, "rb");
	CHECK(fp != NULL);
	if (!fp)
		return;
	len = fread(b, 1, sizeof(b), fp);
	fclose(fp);
	unlink(path);
	CHECK_EQ_U64(len, 20 + 3 * (41 + 2 * 2));
	for (r = 0; r < 3 && len == 20 + 3 * 45; r++) {
		const unsigned char *p = b + 20 + r * 45;

		CHECK_EQ_INT(p[0], 0);
		CHECK_EQ_U64(p[1] | p[2] << 8, 0x2000);
		CHECK_EQ_U64(p[9] | p[10] << 8, 0x2004);
		CHECK_EQ_U64(p[17], 2);
		CHECK_EQ_U64(p[21] | p[22] << 8, 1000);
		sum0 += (uint64_t)(p[41] | p[42] << 8);
		sum1 += (uint64_t)(p[43] | p[44] << 8);
	}
	CHECK_EQ_U64(sum0, 140000);
	CHECK_EQ_U64(sum1, 7);
	gmon_hist_free(&h);
}

int main(void)
{
	RUN_TEST(test_exact_ns);
	RUN_TEST(test_rate_lowered);
	RUN_TEST(test_rounding_total);
	RUN_TEST(test_write);
	RUN_TEST(test_samples);
	RUN_TEST(test_samples_records);
	CHECK_DONE();
}
