/* SPDX-License-Identifier: MIT */
/* test-format.c - unit tests of common/format.h: each style of byte
 * counts at the edges of its units, and durations. */
#include "check.h"
#include "format.h"
#include "textesc.h"

static const char *b(uint64_t v, enum fmt_bytes_style s)
{
	static char buf[8][32];
	static int k;

	k = (k + 1) % 8;
	return fmt_bytes(buf[k], sizeof buf[k], v, s);
}

static const char *r(double v)
{
	static char buf[32];

	return fmt_bytes_real(buf, sizeof buf, v);
}

static void test_iec(void)
{
	CHECK_EQ_STR(b(0, FMT_BYTES_IEC), "0 B");
	CHECK_EQ_STR(b(1023, FMT_BYTES_IEC), "1023 B");
	CHECK_EQ_STR(b(1024, FMT_BYTES_IEC), "1.0 KiB");
	CHECK_EQ_STR(b(1536, FMT_BYTES_IEC), "1.5 KiB");
	CHECK_EQ_STR(b(21079532, FMT_BYTES_IEC), "20.1 MiB");
	CHECK_EQ_STR(b(4752633887ULL, FMT_BYTES_IEC), "4.4 GiB");
	CHECK_EQ_STR(b(3ULL << 40, FMT_BYTES_IEC), "3.0 TiB");
	CHECK_EQ_STR(b(5ULL << 50, FMT_BYTES_IEC), "5120.0 TiB"); /* TiB is the largest */
	CHECK_EQ_STR(b(UINT64_MAX, FMT_BYTES_IEC), "16777216.0 TiB");
}

static void test_iec_real(void)
{
	CHECK_EQ_STR(r(512), "512 B");
	CHECK_EQ_STR(r(-512), "-512 B");
	CHECK_EQ_STR(r(512.5), "512 B"); /* "%.0f": to even */
	CHECK_EQ_STR(r(513.5), "514 B");
	CHECK_EQ_STR(r(-1536), "-1.5 KiB");
	CHECK_EQ_STR(r(1048576), "1.0 MiB");
	CHECK_EQ_STR(r(-0.25), "-0 B");
}

static void test_iec10(void)
{
	CHECK_EQ_STR(b(0, FMT_BYTES_IEC10), "0 B");
	CHECK_EQ_STR(b(10239, FMT_BYTES_IEC10), "10239 B");
	CHECK_EQ_STR(b(10240, FMT_BYTES_IEC10), "10.0 KiB");
	CHECK_EQ_STR(b((10ULL << 20) - 1, FMT_BYTES_IEC10), "10240.0 KiB");
	CHECK_EQ_STR(b(10ULL << 20, FMT_BYTES_IEC10), "10.0 MiB");
	CHECK_EQ_STR(b(10ULL << 30, FMT_BYTES_IEC10), "10.0 GiB");
	CHECK_EQ_STR(b(1ULL << 50, FMT_BYTES_IEC10), "1048576.0 GiB");
}

static void test_kb10(void)
{
	CHECK_EQ_STR(b(0, FMT_BYTES_KB10), "0 bytes");
	CHECK_EQ_STR(b(10239, FMT_BYTES_KB10), "10239 bytes");
	CHECK_EQ_STR(b(10240, FMT_BYTES_KB10), "10.0 KB");
	CHECK_EQ_STR(b(15 << 20, FMT_BYTES_KB10), "15.0 MB");
	CHECK_EQ_STR(b(10ULL << 30, FMT_BYTES_KB10), "10240.0 MB");
}

static void test_exact(void)
{
	CHECK_EQ_STR(b(0, FMT_BYTES_EXACT), "0");
	CHECK_EQ_STR(b(1000, FMT_BYTES_EXACT), "1000");
	CHECK_EQ_STR(b(1025, FMT_BYTES_EXACT), "1025");
	CHECK_EQ_STR(b(128, FMT_BYTES_EXACT), "128");
	CHECK_EQ_STR(b(4096, FMT_BYTES_EXACT), "4K");
	CHECK_EQ_STR(b(1536ULL << 10, FMT_BYTES_EXACT), "1536K");
	CHECK_EQ_STR(b(64ULL << 20, FMT_BYTES_EXACT), "64M");
	CHECK_EQ_STR(b(16ULL << 30, FMT_BYTES_EXACT), "16G");
	CHECK_EQ_STR(b(1ULL << 60, FMT_BYTES_EXACT), "1E");
	CHECK_EQ_STR(b(UINT64_MAX, FMT_BYTES_EXACT), "18446744073709551615");
}

static void test_dur(void)
{
	char buf[32];

	CHECK_EQ_STR(fmt_dur(buf, sizeof buf, 0), "  0.000 us");
	CHECK_EQ_STR(fmt_dur(buf, sizeof buf, 1234), "  1.234 us");
	CHECK_EQ_STR(fmt_dur(buf, sizeof buf, 999999), "999.999 us");
	CHECK_EQ_STR(fmt_dur(buf, sizeof buf, 1000000), "  1.000 ms");
	CHECK_EQ_STR(fmt_dur(buf, sizeof buf, 5678000), "  5.678 ms");
	CHECK_EQ_STR(fmt_dur(buf, sizeof buf, 1000000000), "  1.000  s");
	CHECK_EQ_STR(fmt_dur(buf, sizeof buf, 1234567890123ULL), "1234.568  s");
}

static void test_text_esc(void)
{
	char buf[8];
	const char *clean = "main", *e;

	CHECK(text_esc(clean) == clean); /* nothing to escape: the string itself */
	CHECK_EQ_STR(text_esc(NULL), "");
	CHECK_EQ_STR(text_esc("Größe"), "Größe");
	CHECK_EQ_STR(text_esc("\xf0\x9f\x90\x98 ok"), "\xf0\x9f\x90\x98 ok");
	CHECK_EQ_STR(text_esc("a\nb\tc\rd"), "a\\nb\\tc\\rd");
	CHECK_EQ_STR(text_esc("esc\x1b[31m"), "esc\\x1b[31m");
	CHECK_EQ_STR(text_esc("\x01\x7f"), "\\x01\\x7f");
	CHECK_EQ_STR(text_esc("back\\slash"), "back\\\\slash");
	CHECK_EQ_STR(text_esc("c1\xc2\x9b."), "c1\\xc2\\x9b."); /* CSI */
	CHECK_EQ_STR(text_esc("\xc2\xa0"), "\xc2\xa0");               /* NBSP: printed */
	CHECK_EQ_STR(text_esc("bad\xff\xfe"), "bad\\xff\\xfe");
	CHECK_EQ_STR(text_esc("\xc0\xae"), "\\xc0\\xae");       /* overlong */
	CHECK_EQ_STR(text_esc("\xed\xa0\x80"), "\\xed\\xa0\\x80"); /* a surrogate */
	CHECK_EQ_STR(text_esc("cut\xe2\x82"), "cut\\xe2\\x82");
	CHECK_EQ_STR(text_esc("\xe2\x82z"), "\\xe2\\x82z");
	/* one copy per distinct string */
	e = text_esc("a\nb\tc\rd");
	CHECK(e == text_esc("a\nb\tc\rd"));
	CHECK_EQ_INT(text_esc_buf(buf, sizeof buf, "x\ny\tz"), 7);
	CHECK_EQ_STR(buf, "x\\ny\\tz");
	CHECK_EQ_INT(text_esc_buf(buf, 4, "x\ny"), 4);
	CHECK_EQ_STR(buf, "x\\n");
}

int main(void)
{
	RUN_TEST(test_iec);
	RUN_TEST(test_iec_real);
	RUN_TEST(test_iec10);
	RUN_TEST(test_kb10);
	RUN_TEST(test_exact);
	RUN_TEST(test_dur);
	RUN_TEST(test_text_esc);
	CHECK_DONE();
}
