/* SPDX-License-Identifier: MIT */
/* utf8.h - where one UTF-8 sequence ends, for the two writers of names:
 * JSON (json.c) and text (textesc.c). */
#ifndef CYGPROF_UTF8_H
#define CYGPROF_UTF8_H

#include <stddef.h>

/* The UTF-8 sequence at s (RFC 3629, table 3-7 of the Unicode standard):
 * its length with *valid = 1, or with *valid = 0 the length of the longest
 * start of a sequence there (at least 1 byte), which is then replaced by
 * one U+FFFD by json_str() ("maximal subparts", as Python, browsers and
 * ICU do). */
static inline size_t utf8_seq_len(const unsigned char *s, int *valid)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	*valid = 0;
	if (c < 0x80) {
		*valid = 1;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 1; /* a continuation byte, 0xc0/0xc1 (overlong) or past U+10FFFF */
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* past U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 1;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return i; /* also stops at the terminating NUL */
	*valid = 1;
	return n;
}

#endif
