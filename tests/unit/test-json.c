/* SPDX-License-Identifier: MIT */
/* test-json.c - unit tests of common/json.h: json_str()'s escapes and its
 * UTF-8 repair (one U+FFFD per maximal subpart), null, numbers, changes. */
#include <math.h>

#include "check.h"
#include "json.h"

/* What fn writes for s, in a static buffer. */
static const char *out_of(void (*fn)(FILE *, const char *), const char *s)
{
	static char buf[4096];
	FILE *f = fmemopen(buf, sizeof buf, "w");

	if (!f)
		return "(fmemopen failed)";
	fn(f, s);
	fclose(f);
	return buf;
}

#define STR(s) out_of(json_str, (s))

static void test_plain_and_escapes(void)
{
	CHECK_EQ_STR(STR("main"), "\"main\"");
	CHECK_EQ_STR(STR(""), "\"\"");
	CHECK_EQ_STR(STR(NULL), "\"\"");
	CHECK_EQ_STR(STR("a\"b\\c"), "\"a\\\"b\\\\c\"");
	CHECK_EQ_STR(STR("\n\t\r\b\f"), "\"\\n\\t\\r\\b\\f\"");
	CHECK_EQ_STR(STR("\x01\x1f\x7f"), "\"\\u0001\\u001f\\u007f\"");
	CHECK_EQ_STR(STR("a/b c"), "\"a/b c\"");
}

static void test_valid_utf8(void)
{
	/* 2, 3 and 4 bytes, and the ends of each range, are kept as they are */
	CHECK_EQ_STR(STR("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
	CHECK_EQ_STR(STR("\xc2\x80\xdf\xbf"), "\"\xc2\x80\xdf\xbf\"");
	CHECK_EQ_STR(STR("\xe0\xa0\x80\xef\xbf\xbf"), "\"\xe0\xa0\x80\xef\xbf\xbf\"");
	CHECK_EQ_STR(STR("\xed\x9f\xbf\xee\x80\x80"), "\"\xed\x9f\xbf\xee\x80\x80\"");
	CHECK_EQ_STR(STR("\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"), "\"\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\"");
	CHECK_EQ_STR(STR("\xf0\x9f\x98\x80!"), "\"\xf0\x9f\x98\x80!\"");
}

static void test_invalid_utf8(void)
{
	/* a lone continuation byte, and each of a run of them */
	CHECK_EQ_STR(STR("a\x80z"), "\"a\\ufffdz\"");
	CHECK_EQ_STR(STR("\x80\xbf"), "\"\\ufffd\\ufffd\"");
	/* bytes that never start a sequence: overlong leads, past U+10FFFF */
	CHECK_EQ_STR(STR("\xc0\xaf"), "\"\\ufffd\\ufffd\"");
	CHECK_EQ_STR(STR("\xc1\xbf"), "\"\\ufffd\\ufffd\"");
	CHECK_EQ_STR(STR("\xf5\x80\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	CHECK_EQ_STR(STR("\xff"), "\"\\ufffd\"");
	/* overlong 3 and 4 bytes: the second byte is out of range, so the
	 * lead alone is one subpart and each continuation another */
	CHECK_EQ_STR(STR("\xe0\x80\xaf"), "\"\\ufffd\\ufffd\\ufffd\"");
	CHECK_EQ_STR(STR("\xf0\x8f\xbf\xbf"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	/* surrogates U+D800..U+DFFF, and past U+10FFFF after F4 */
	CHECK_EQ_STR(STR("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
	CHECK_EQ_STR(STR("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	/* a sequence cut short: its valid start is one subpart, one U+FFFD */
	CHECK_EQ_STR(STR("\xe2\x82z"), "\"\\ufffdz\"");
	CHECK_EQ_STR(STR("\xf0\x9f\x98z"), "\"\\ufffdz\"");
	CHECK_EQ_STR(STR("\xf0\x9f\x98"), "\"\\ufffd\"");
	CHECK_EQ_STR(STR("\xc3"), "\"\\ufffd\"");
	/* a cut sequence followed by a valid one */
	CHECK_EQ_STR(STR("\xe2\x82\xc3\xa9"), "\"\\ufffd\xc3\xa9\"");
	/* a cut sequence followed by a character to escape */
	CHECK_EQ_STR(STR("\xe2\"\n"), "\"\\ufffd\\\"\\n\"");
}

static void test_null_and_numbers(void)
{
	static char buf[256];
	FILE *f;

	CHECK_EQ_STR(out_of(json_str_null, NULL), "null");
	CHECK_EQ_STR(out_of(json_str_null, "x"), "\"x\"");
	f = fmemopen(buf, sizeof buf, "w");
	json_real(f, 0.5);
	fputc(' ', f);
	json_real(f, NAN);
	fputc(' ', f);
	json_real(f, -1.0 / 3);
	fputc(' ', f);
	json_real(f, 1234567.0);
	fclose(f);
	CHECK_EQ_STR(buf, "0.5 null -0.333333 1.23457e+06");
	f = fmemopen(buf, sizeof buf, "w");
	json_change(f, "calls", 4, 6, 2, 0.5);
	json_change(f, "self_ns", 0, 7, 7, NAN);
	json_change(f, "total_ns", 9, 0, -9, -1.0);
	fclose(f);
	CHECK_EQ_STR(buf, ", \"calls\": {\"old\": 4, \"new\": 6, \"delta\": 2, \"relative\": 0.5}"
			  ", \"self_ns\": {\"old\": 0, \"new\": 7, \"delta\": 7, \"relative\": null}"
			  ", \"total_ns\": {\"old\": 9, \"new\": 0, \"delta\": -9, \"relative\": -1}");
}

int main(void)
{
	RUN_TEST(test_plain_and_escapes);
	RUN_TEST(test_valid_utf8);
	RUN_TEST(test_invalid_utf8);
	RUN_TEST(test_null_and_numbers);
	CHECK_DONE();
}
