/* SPDX-License-Identifier: MIT */
/* check.h - tiny TAP test helpers: typed checks that print both operands. */
#ifndef CYGPROF_CHECK_H
#define CYGPROF_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failed;
static int check_count;

#define CHECK_FAIL_(fmt, ...)                                                                      \
	do {                                                                                       \
		fprintf(stdout, "# %s:%d: " fmt "\n", __FILE__, __LINE__, __VA_ARGS__);            \
		check_failed++;                                                                    \
	} while (0)

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			CHECK_FAIL_("CHECK(%s) failed", #cond);                                    \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
	do {                                                                                       \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                   \
		if (a_ != b_)                                                                      \
			CHECK_FAIL_("%s == %s: %" PRIu64 " != %" PRIu64, #a, #b, a_, b_);          \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
	do {                                                                                       \
		long long a_ = (long long)(a), b_ = (long long)(b);                                \
		if (a_ != b_)                                                                      \
			CHECK_FAIL_("%s == %s: %lld != %lld", #a, #b, a_, b_);                     \
	} while (0)

#define CHECK_EQ_STR(a, b)                                                                         \
	do {                                                                                       \
		const char *a_ = (a), *b_ = (b);                                                   \
		if (!a_ || !b_ || strcmp(a_, b_))                                                  \
			CHECK_FAIL_("%s == %s: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)",      \
				    b_ ? b_ : "(null)");                                           \
	} while (0)

/* Run one test function and print its TAP line. */
#define RUN_TEST(fn)                                                                               \
	do {                                                                                       \
		int before_ = check_failed;                                                        \
		fn();                                                                              \
		check_count++;                                                                     \
		printf("%s %d - %s\n", check_failed == before_ ? "ok" : "not ok", check_count,     \
		       #fn);                                                                       \
	} while (0)

#define CHECK_DONE()                                                                               \
	do {                                                                                       \
		printf("1..%d\n", check_count);                                                    \
		return check_failed ? 1 : 0;                                                       \
	} while (0)

#endif
