/* SPDX-License-Identifier: MIT */
/* json.c - JSON string literals that are valid UTF-8 whatever the bytes,
 * undefined numbers as null, and changes between captures (json.h). */
#include "json.h"

#include <inttypes.h>
#include <math.h>

/* The UTF-8 sequence at s (RFC 3629, table 3-7 of the Unicode standard):
 * its length with *valid = 1, or with *valid = 0 the length of the longest
 * start of a sequence there (at least 1 byte), which is then replaced by
 * one U+FFFD ("maximal subparts", as Python, browsers and ICU do). */
static size_t utf8_len(const unsigned char *s, int *valid)
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

void json_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (s && *s) {
		unsigned char c = *s;
		size_t n;
		int valid;

		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc(c, f);
			s++;
			continue;
		}
		if (c < 0x20 || c == 0x7f) {
			switch (c) {
			case '\n': fputs("\\n", f); break;
			case '\t': fputs("\\t", f); break;
			case '\r': fputs("\\r", f); break;
			case '\b': fputs("\\b", f); break;
			case '\f': fputs("\\f", f); break;
			default: fprintf(f, "\\u%04x", c); break;
			}
			s++;
			continue;
		}
		n = utf8_len(s, &valid);
		if (valid)
			fwrite(s, 1, n, f);
		else
			fputs("\\ufffd", f);
		s += n;
	}
	fputc('"', f);
}

void json_str_null(FILE *f, const char *s)
{
	if (s)
		json_str(f, s);
	else
		fputs("null", f);
}

void json_real(FILE *f, double v)
{
	if (isnan(v))
		fputs("null", f);
	else
		fprintf(f, "%.6g", v);
}

void json_change(FILE *f, const char *key, uint64_t old, uint64_t new, int64_t delta,
		 double rel)
{
	fprintf(f, ", \"%s\": {\"old\": %" PRIu64 ", \"new\": %" PRIu64 ", \"delta\": %" PRId64
		", \"relative\": ", key, old, new, delta);
	json_real(f, rel);
	fputc('}', f);
}
