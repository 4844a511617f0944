#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/hash/hmac.h"
#include "common/hex.h"

#define BLOCK 64 /* SHA-256's block size */

/* The 32 bytes of a digest from its 64 hex digits. */
static void unhex32(const char hex[65], unsigned char out[32])
{
	for (size_t i = 0; i < 32; i++)
		out[i] = (unsigned char)(hex_value(hex[2 * i]) << 4 |
		                         hex_value(hex[2 * i + 1]));
}

int hmac_init(struct hmac *h, const void *key, size_t klen)
{
	unsigned char k[BLOCK], ipad[BLOCK];
	char hex[65];
	int err;

	memset(k, 0, sizeof(k));
	h->inner.ctx = NULL;
	if (klen > BLOCK) {
		err = sha256_hex(key, klen, hex);
		if (err)
			return err;
		unhex32(hex, k);
	} else if (klen) {
		memcpy(k, key, klen);
	}
	for (size_t i = 0; i < BLOCK; i++) {
		ipad[i] = k[i] ^ 0x36;
		h->okey[i] = k[i] ^ 0x5c;
	}
	err = sha256_init(&h->inner);
	if (err)
		return err;
	sha256_update(&h->inner, ipad, BLOCK);
	return 0;
}

void hmac_update(struct hmac *h, const void *p, size_t n)
{
	sha256_update(&h->inner, p, n);
}

int hmac_final(struct hmac *h, char hex[65])
{
	struct sha256 outer;
	unsigned char inner[32];
	char ihex[65];
	int err;

	hex[0] = '\0';
	if (!h->inner.ctx)
		return ENOMEM;
	sha256_final(&h->inner, ihex);
	unhex32(ihex, inner);
	err = sha256_init(&outer);
	if (err)
		return err;
	sha256_update(&outer, h->okey, BLOCK);
	sha256_update(&outer, inner, sizeof(inner));
	sha256_final(&outer, hex);
	memset(h->okey, 0, sizeof(h->okey));
	return 0;
}

void hmac_abort(struct hmac *h)
{
	sha256_abort(&h->inner);
	memset(h->okey, 0, sizeof(h->okey));
}

int hmac_sha256_hex(const void *key, size_t klen, const void *p, size_t n,
                    char hex[65])
{
	struct hmac h;
	int err = hmac_init(&h, key, klen);

	hex[0] = '\0';
	if (err)
		return err;
	hmac_update(&h, p, n);
	return hmac_final(&h, hex);
}

int hmac_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}
