/* SPDX-License-Identifier: MIT */
/* textesc.c - names from the traced program as one line of text
 * (textesc.h). */
#include "textesc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "utf8.h"

/* The escape of the byte sequence at s into out (room for 8 bytes): its
 * length, with *used the bytes of s it stands for; 0 when the sequence is
 * printed as it is (then *used is its length). */
static size_t esc_one(const unsigned char *s, char out[8], size_t *used)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char c = s[0];
	int valid;
	size_t n;

	*used = 1;
	if (c == '\\' || c == '\n' || c == '\t' || c == '\r') {
		out[0] = '\\';
		out[1] = c == '\\' ? '\\' : c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
		return 2;
	}
	if (c < 0x20 || c == 0x7f) {
		memcpy(out, "\\x", 2);
		out[2] = hex[c >> 4];
		out[3] = hex[c & 15];
		return 4;
	}
	if (c < 0x80)
		return 0;
	n = utf8_seq_len(s, &valid);
	if (valid && !(c == 0xc2 && s[1] < 0xa0)) {
		*used = n;
		return 0;
	}
	if (valid) { /* a C1 control: both bytes */
		*used = 2;
		memcpy(out, "\\xc2\\x", 6);
		out[6] = hex[s[1] >> 4];
		out[7] = hex[s[1] & 15];
		return 8;
	}
	memcpy(out, "\\x", 2); /* one byte at a time: the next may start a valid one */
	out[2] = hex[c >> 4];
	out[3] = hex[c & 15];
	return 4;
}

size_t text_esc_buf(char *buf, size_t len, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	size_t total = 0;

	while (*s) {
		char e[8];
		size_t used, n = esc_one(s, e, &used);
		const char *src = n ? e : (const char *)s;

		if (!n)
			n = used;
		for (size_t i = 0; i < n; i++, total++)
			if (total + 1 < len)
				buf[total] = src[i];
		s += used;
	}
	if (len)
		buf[total < len ? total : len - 1] = 0;
	return total;
}

/* The escaped copies made so far, by the hash of the original. */
static struct {
	struct hmap by_hash;   /* hash_str(original) -> index + 1 */
	struct {
		char *orig, *esc;
	} *v;
	size_t n, cap;
} g_esc;

static int needs_esc(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		char e[8];
		size_t used;

		if (esc_one(s, e, &used))
			return 1;
		s += used;
	}
	return 0;
}

const char *text_esc(const char *s)
{
	uint64_t h, *slot;
	size_t len;
	char *orig, *esc;
	int added;

	if (!s)
		return "";
	if (!needs_esc(s))
		return s;
	h = hash_str(s);
	slot = hmap_ref(&g_esc.by_hash, h, &added);
	if (!slot)
		return "?";
	if (!added && !strcmp(g_esc.v[*slot - 1].orig, s))
		return g_esc.v[*slot - 1].esc;
	/* new, or another string of the same hash: the slot points at the
	 * newest copy (the older one stays valid) */
	if (g_esc.n == g_esc.cap) {
		size_t cap = g_esc.cap ? 2 * g_esc.cap : 16;
		void *v = realloc(g_esc.v, cap * sizeof(*g_esc.v));

		if (!v)
			goto nomem;
		g_esc.v = v;
		g_esc.cap = cap;
	}
	len = text_esc_buf(NULL, 0, s);
	orig = strdup(s);
	esc = malloc(len + 1);
	if (!orig || !esc) {
		free(orig);
		free(esc);
		goto nomem;
	}
	text_esc_buf(esc, len + 1, s);
	g_esc.v[g_esc.n].orig = orig;
	g_esc.v[g_esc.n].esc = esc;
	*slot = ++g_esc.n;
	return esc;
nomem:
	if (added)
		hmap_del(&g_esc.by_hash, h);
	return "?";
}
