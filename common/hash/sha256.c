#include "config.h"

#include <errno.h>

#include <openssl/evp.h>

#include "common/hash/sha256.h"
#include "common/hex.h"

int sha256_init(struct sha256 *h)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	h->ctx = NULL;
	if (!ctx)
		return ENOMEM;
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(ctx);
		return ENOMEM;
	}
	h->ctx = ctx;
	return 0;
}

void sha256_update(struct sha256 *h, const void *p, size_t n)
{
	if (h->ctx && n)
		EVP_DigestUpdate(h->ctx, p, n);
}

void sha256_final(struct sha256 *h, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	hex[0] = '\0';
	if (!h->ctx)
		return;
	EVP_DigestFinal_ex(h->ctx, md, &n);
	hex_encode(md, n < 32 ? n : 32, hex);
	sha256_abort(h);
}

void sha256_abort(struct sha256 *h)
{
	EVP_MD_CTX_free(h->ctx);
	h->ctx = NULL;
}

int sha256_hex(const void *p, size_t n, char hex[65])
{
	struct sha256 h;
	int err = sha256_init(&h);

	if (err)
		return err;
	sha256_update(&h, p, n);
	sha256_final(&h, hex);
	return 0;
}
