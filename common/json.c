/* SPDX-License-Identifier: MIT */
/* json.c - JSON string literals that are valid UTF-8 whatever the bytes,
 * undefined numbers as null, and changes between captures (json.h). */
#include "json.h"

#include <inttypes.h>
#include <math.h>

#include "utf8.h"

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
		n = utf8_seq_len(s, &valid);
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
