/* SPDX-License-Identifier: MIT */
/* test-calib.c - the calibration's statistics (cyg/cyg-calib-stats.h):
 * which rounds are outliers, and the mean and spread of the rest, on
 * rounds with known figures. */
#include "check.h"
#include "cyg-calib-stats.h"

#define CHECK_NEAR(a, b, eps)                                                                      \
	do {                                                                                       \
		double a_ = (a), b_ = (b), d_ = a_ > b_ ? a_ - b_ : b_ - a_;                       \
		if (!(d_ <= (eps)))                                                                \
			CHECK_FAIL_("%s = %.12g, expected %.12g (within %g)", #a, a_, b_,          \
				    (double)(eps));                                                \
	} while (0)

/* Eleven rounds, one of them preempted (5x the others): dropped; the
 * mean and the standard deviation are the other ten's. */
static void test_one_outlier(void)
{
	const double x[11] = {100, 101, 99, 100, 102, 98, 100, 500, 101, 99, 100};
	unsigned char keep[11];
	struct calib_summary s;

	CHECK_EQ_U64(calib_keep(x, 11, keep), 10);
	CHECK_EQ_INT(keep[7], 0);
	for (int i = 0; i < 11; i++)
		if (i != 7)
			CHECK_EQ_INT(keep[i], 1);
	s = calib_summarize(x, keep, 11);
	CHECK_EQ_U64(s.kept, 10);
	CHECK_NEAR(s.median, 100, 0);
	CHECK_NEAR(s.mean, 100, 1e-12); /* 1000 / 10 */
	/* squares: 0+1+1+0+4+4+0+1+1+0 = 12, over 9 */
	CHECK_NEAR(s.spread, 1.154700538379251, 1e-9); /* sqrt(12 / 9) */
}

/* Outliers on both sides, and a round just inside the threshold.  The
 * median is 200, the deviations' median 2 (MAD), so the threshold is
 * 3 * 1.4826 * 2 = 8.8956: 208 stays, 209 and 150 go. */
static void test_threshold(void)
{
	const double x[11] = {200, 202, 198, 201, 199, 208, 209, 150, 200, 203, 197};
	unsigned char keep[11];

	CHECK_EQ_U64(calib_keep(x, 11, keep), 9);
	CHECK_EQ_INT(keep[5], 1); /* 208: 8 from the median */
	CHECK_EQ_INT(keep[6], 0); /* 209: 9 */
	CHECK_EQ_INT(keep[7], 0); /* 150 */
	struct calib_summary s = calib_summarize(x, keep, 11);
	CHECK_EQ_U64(s.kept, 9);
	CHECK_NEAR(s.mean, (200 + 202 + 198 + 201 + 199 + 208 + 200 + 203 + 197) / 9.0, 1e-12);
}

/* Rounds equal to the tick (a MAD of 0): the threshold is 1% of the
 * median, so a round 0.5% off stays and one 2% off goes. */
static void test_mad_zero(void)
{
	const double x[7] = {1000, 1000, 1000, 1005, 1000, 1020, 1000};
	unsigned char keep[7];

	CHECK_EQ_U64(calib_keep(x, 7, keep), 6);
	CHECK_EQ_INT(keep[3], 1);
	CHECK_EQ_INT(keep[5], 0);
	struct calib_summary s = calib_summarize(x, keep, 7);
	CHECK_NEAR(s.mean, 6005 / 6.0, 1e-9);
	/* one deviation of 5 - 5/6, five of 5/6 */
	CHECK_NEAR(s.spread, 2.041241452319315, 1e-9);

	const double same[5] = {42, 42, 42, 42, 42};
	unsigned char k5[5];
	CHECK_EQ_U64(calib_keep(same, 5, k5), 5);
	s = calib_summarize(same, k5, 5);
	CHECK_NEAR(s.mean, 42, 0);
	CHECK_NEAR(s.spread, 0, 0);
}

/* Fewer than three rounds: none can be called an outlier; one round has
 * no spread. */
static void test_few(void)
{
	const double x[2] = {10, 1000};
	unsigned char keep[2];

	CHECK_EQ_U64(calib_keep(x, 2, keep), 2);
	struct calib_summary s = calib_summarize(x, keep, 2);
	CHECK_NEAR(s.mean, 505, 0);
	CHECK_NEAR(s.median, 505, 0);
	s = calib_summarize(x, keep, 1);
	CHECK_EQ_U64(s.kept, 1);
	CHECK_NEAR(s.spread, 0, 0);
	s = calib_summarize(x, keep, 0);
	CHECK_EQ_U64(s.kept, 0);
}

/* The square root without libm, as the runtime computes it. */
static void test_sqrt(void)
{
	CHECK_NEAR(calib_sqrt(4), 2, 1e-12);
	CHECK_NEAR(calib_sqrt(2), 1.414213562373095, 1e-12);
	CHECK_NEAR(calib_sqrt(0.25), 0.5, 1e-12);
	CHECK_NEAR(calib_sqrt(1e12), 1e6, 1e-6);
	CHECK_NEAR(calib_sqrt(0), 0, 0);
	CHECK_NEAR(calib_sqrt(-1), 0, 0);
}

int main(void)
{
	RUN_TEST(test_one_outlier);
	RUN_TEST(test_threshold);
	RUN_TEST(test_mad_zero);
	RUN_TEST(test_few);
	RUN_TEST(test_sqrt);
	CHECK_DONE();
}
