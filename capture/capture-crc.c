/* SPDX-License-Identifier: MIT */
/* capture-crc.c - CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum that seals every value of a schema 2 capture.
 *
 * With SSE4.2 the crc32 instruction does 8 bytes per step; elsewhere a
 * slice-by-8 table does the same.  Both give the standard check value
 * 0xE3069283 for "123456789" (see the unit test).
 */
#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "capture-private.h"

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static bool have_sse42;

__attribute__((constructor)) static void crc_init(void)
{
	uint32_t c;
	int i, j, k;

	for (i = 0; i < 256; i++) {
		c = (uint32_t)i;
		for (j = 0; j < 8; j++)
			c = c & 1 ? c >> 1 ^ POLY : c >> 1;
		table[0][i] = c;
	}
	for (i = 0; i < 256; i++) {
		c = table[0][i];
		for (k = 1; k < 8; k++) {
			c = table[0][c & 0xff] ^ c >> 8;
			table[k][i] = c;
		}
	}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	__builtin_cpu_init();
	have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t crc_table(uint32_t c, const uint8_t *p, size_t n)
{
	uint64_t w;

	while (n && ((uintptr_t)p & 7)) {
		c = table[0][(c ^ *p++) & 0xff] ^ c >> 8;
		n--;
	}
	while (n >= 8) {
		memcpy(&w, p, 8);
		w = le64toh(w) ^ c;
		c = table[7][w & 0xff] ^ table[6][w >> 8 & 0xff] ^ table[5][w >> 16 & 0xff] ^
		    table[4][w >> 24 & 0xff] ^ table[3][w >> 32 & 0xff] ^
		    table[2][w >> 40 & 0xff] ^ table[1][w >> 48 & 0xff] ^ table[0][w >> 56];
		p += 8;
		n -= 8;
	}
	while (n--)
		c = table[0][(c ^ *p++) & 0xff] ^ c >> 8;
	return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>

__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t c, const uint8_t *p,
							   size_t n)
{
	uint64_t c64, w;

	while (n && ((uintptr_t)p & 7)) {
		c = _mm_crc32_u8(c, *p++);
		n--;
	}
	c64 = c;
	while (n >= 8) {
		memcpy(&w, p, 8);
		c64 = _mm_crc32_u64(c64, w);
		p += 8;
		n -= 8;
	}
	c = (uint32_t)c64;
	while (n--)
		c = _mm_crc32_u8(c, *p++);
	return c;
}
#endif

uint32_t capture_crc32c_update(uint32_t crc, const void *data, size_t n)
{
	const uint8_t *p = data;
	uint32_t c = ~crc;

	if (!n)
		return crc;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (have_sse42)
		return ~crc_sse42(c, p, n);
#endif
	return ~crc_table(c, p, n);
}

uint32_t capture_value_crc(unsigned int db, const void *key, size_t klen, const void *val,
			   size_t vlen)
{
	const char *name = capture_db_names[db];
	uint8_t kl[4];
	uint32_t c;

	put_le32(kl, (uint32_t)klen);
	c = capture_crc32c_update(0, name, strlen(name));
	c = capture_crc32c_update(c, kl, sizeof(kl));
	c = capture_crc32c_update(c, key, klen);
	return capture_crc32c_update(c, val, vlen);
}

uint32_t capture_key_digest(uint32_t d, const void *key, size_t klen)
{
	uint8_t kl[4];

	put_le32(kl, (uint32_t)klen);
	d = capture_crc32c_update(d, kl, sizeof(kl));
	return capture_crc32c_update(d, key, klen);
}
