/* sha256: streaming SHA-256 (OpenSSL libcrypto) with hex output. */
#ifndef LARDER_SHA256_H
#define LARDER_SHA256_H

#include <stddef.h>

struct sha256 {
	void *ctx; /* EVP_MD_CTX */
};

/* Starts a digest. Returns 0 or ENOMEM. */
int sha256_init(struct sha256 *h);

/* Feeds n bytes. */
void sha256_update(struct sha256 *h, const void *p, size_t n);

/* Finishes, writes 64 lowercase hex digits and a NUL to hex, and frees the
 * context. */
void sha256_final(struct sha256 *h, char hex[65]);

/* Frees an unfinished digest (safe after sha256_final too). */
void sha256_abort(struct sha256 *h);

/* Hashes a buffer in one call. Returns 0 or ENOMEM. */
int sha256_hex(const void *p, size_t n, char hex[65]);

#endif
