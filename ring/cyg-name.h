/* SPDX-License-Identifier: MIT */
/* cyg-name.h - which subsystem names the memdump protocol carries: the
 * rule libcygprof-memdump applies before a name enters a slot, and the
 * collector applies to every slot it reads (a name the library would have
 * refused can only come from a program that wrote into the mapping past
 * the API).  One definition for both sides, header-only: the library links
 * nothing of ours.
 *
 * A name is 1 to CYG_MEMDUMP_NAME - 1 bytes of valid UTF-8 (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF) holding no control
 * character (U+0000 to U+001F, U+007F to U+009F), so that it prints on
 * one line in every output. */
#ifndef CYG_NAME_H
#define CYG_NAME_H

#include <stddef.h>

/* The length of the valid, non-control UTF-8 sequence at s, else 0. */
static inline size_t cyg_name_seq(const unsigned char *s)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (c < 0x80)
		return c >= 0x20 && c != 0x7f;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xc2)
		lo = 0xa0; /* U+0080 to U+009F: the C1 controls */
	else if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* past U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0; /* also stops at the terminating NUL */
	return n;
}

/* Non-zero when the NUL-terminated name, of which at most max bytes are
 * read (the terminator included), is a name the protocol carries in an
 * array of max bytes. */
static inline int cyg_name_ok(const char *name, size_t max)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t i = 0, n;

	if (!s[0])
		return 0;
	while (i < max && s[i]) {
		/* a sequence never crosses the end: cyg_name_seq() stops at a
		 * NUL, and the array's NUL is checked below */
		for (n = 0; n < 4 && i + n < max && s[i + n]; n++)
			;
		if (n < 4 && i + n == max)
			return 0; /* no terminator within max bytes */
		n = cyg_name_seq(s + i);
		if (!n)
			return 0;
		i += n;
	}
	return i < max;
}

#endif
