/* hmac: HMAC-SHA256 (RFC 2104) on top of sha256, with hex output. I/O-free
 * (the digest itself is libcrypto's, through sha256.c). */
#ifndef LARDER_HMAC_H
#define LARDER_HMAC_H

#include <stddef.h>

#include "common/hash/sha256.h"

struct hmac {
	struct sha256 inner;
	unsigned char okey[64]; /* the key (hashed when longer than 64
	                           bytes) XOR opad */
};

/* Starts an HMAC-SHA256 with the klen bytes of key (any length, 0 too).
 * Returns 0 or ENOMEM. */
int hmac_init(struct hmac *h, const void *key, size_t klen);

/* Feeds n bytes of the message. */
void hmac_update(struct hmac *h, const void *p, size_t n);

/* Finishes: writes 64 lowercase hex digits and a NUL to hex, and frees
 * what hmac_init took. Returns 0 or ENOMEM (hex is then ""). */
int hmac_final(struct hmac *h, char hex[65]);

/* Frees an unfinished HMAC (safe after hmac_final too). */
void hmac_abort(struct hmac *h);

/* HMAC-SHA256 of the n bytes at p under key, in one call. Returns 0 or
 * ENOMEM. */
int hmac_sha256_hex(const void *key, size_t klen, const void *p, size_t n,
                    char hex[65]);

/* Compares two NUL-terminated strings in time that depends only on their
 * lengths (for a signature a peer sent). Returns 1 when equal, else 0. */
int hmac_equal(const char *a, const char *b);

#endif
