/* SPDX-License-Identifier: MIT */
/* sha256.h - SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104) for the token
 * handshake of `record --send` / `receive`. */
#ifndef CYGPROF_SHA256_H
#define CYGPROF_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t nbuf;
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *p, size_t n);
void sha256_final(struct sha256 *c, uint8_t out[32]);
void hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen, uint8_t out[32]);
/* 1 when equal; the time taken does not depend on where they differ. */
int ct_equal(const uint8_t *a, const uint8_t *b, size_t n);

#endif
