/* blake2b: BLAKE2b (RFC 7693) with a digest of 1..64 bytes and an optional
 * key, streaming, with hex output. I/O-free, no library: OpenSSL 3.0's EVP
 * only makes the 64-byte digest, and PyPI's blake2_256_digest is BLAKE2b
 * with a 32-byte one. */
#ifndef LARDER_BLAKE2B_H
#define LARDER_BLAKE2B_H

#include <stddef.h>
#include <stdint.h>

#define BLAKE2B_BLOCK   128
#define BLAKE2B_MAX_OUT 64
#define BLAKE2B_MAX_KEY 64

struct blake2b {
	uint64_t h[8]; /* chained state */
	uint64_t t[2]; /* bytes compressed so far (128 bits) */
	unsigned char buf[BLAKE2B_BLOCK]; /* the block not yet compressed */
	size_t c;                         /* bytes in buf */
	size_t outlen;                    /* digest bytes, 1..64 */
};

/* Starts an unkeyed digest of outlen bytes. Returns 0, or EINVAL when
 * outlen is not 1..64. */
int blake2b_init(struct blake2b *s, size_t outlen);

/* Starts a keyed digest (MAC) of outlen bytes with keylen bytes of key
 * (the key is copied; keylen 0 is blake2b_init). Returns 0, or EINVAL when
 * outlen is not 1..64 or keylen over 64. */
int blake2b_init_key(struct blake2b *s, size_t outlen, const void *key,
                     size_t keylen);

/* Feeds n bytes, in any number of calls of any size. */
void blake2b_update(struct blake2b *s, const void *p, size_t n);

/* Finishes: writes s->outlen bytes to out. s must be started again before
 * further use. */
void blake2b_final(struct blake2b *s, unsigned char *out);

/* Finishes: writes 2 * s->outlen lowercase hex digits and a NUL to hex
 * (which holds at least 2 * BLAKE2B_MAX_OUT + 1 bytes to be safe). */
void blake2b_final_hex(struct blake2b *s, char *hex);

/* Hashes a buffer in one call into 2 * outlen hex digits and a NUL.
 * Returns 0 or EINVAL (outlen not 1..64). */
int blake2b_hex(const void *p, size_t n, size_t outlen, char *hex);

#endif
