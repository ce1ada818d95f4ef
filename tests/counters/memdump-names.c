/* SPDX-License-Identifier: MIT */
/*
 * memdump-names.c - the memory-dump API's names and totals at their edges,
 * for counters-memdump-names (tests/counters/counters.py).
 *
 * Reports, one line each on stdout as "LABEL rc=RC errno=ERRNO" (errno 0
 * when the call succeeded; it is cleared before every call):
 *   utf8      total "Größe" = 777              taken
 *   max       total "Max" = UINT64_MAX         taken
 *   long47    total of a 47-byte name = 47     taken (the longest name)
 *   long48    total of a 48-byte name          refused, EINVAL
 *   empty     total ""                         refused, EINVAL
 *   newline   total "a\nb"                     refused, EINVAL
 *   tab-delta delta "a\tb" += 5                refused, EINVAL
 *   esc       total "a\x1bb"                   refused, EINVAL
 *   c1        total "a\u0085b"                 refused, EINVAL (a C1 control)
 *   badutf8   total "a\xff"                    refused, EINVAL
 *   overlong  total "\xc0\xae"                 refused, EINVAL
 *   null      total NULL                       refused, EINVAL
 * then "needs-empty N" (cygprof_memdump_needs_report("") is 0).  The same
 * with or without cygprof.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cygprof/memdump.h>

static void show(const char *label, int rc)
{
	printf("%s rc=%d errno=%d\n", label, rc, rc ? errno : 0);
}

#define TOTAL(label, name, v)                                                                     \
	do {                                                                                      \
		errno = 0;                                                                        \
		show(label, cygprof_memdump_report_byte_total(name, v));                          \
	} while (0)

int main(void)
{
	char n47[48], n48[49];

	memset(n47, 'n', 47);
	n47[47] = 0;
	memset(n48, 'm', 48);
	n48[48] = 0;
	TOTAL("utf8", "Größe", 777);
	TOTAL("max", "Max", UINT64_MAX);
	TOTAL("long47", n47, 47);
	TOTAL("long48", n48, 48);
	TOTAL("empty", "", 1);
	TOTAL("newline", "a\nb", 1);
	errno = 0;
	show("tab-delta", cygprof_memdump_report_byte_delta("a\tb", 5));
	TOTAL("esc", "a\x1b" "b", 1);
	TOTAL("c1", "a\xc2\x85" "b", 1);
	TOTAL("badutf8", "a\xff", 1);
	TOTAL("overlong", "\xc0\xae", 1);
	TOTAL("null", NULL, 1);
	printf("needs-empty %d\n", cygprof_memdump_needs_report(""));
	printf("EINVAL=%d\n", EINVAL);
	return 0;
}
