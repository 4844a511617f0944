/* BLAKE2b as RFC 7693 section 3 describes it: 12 rounds of the G mixing
 * function over a 16-word work vector, words little-endian. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/hash/blake2b.h"
#include "common/hex.h"

/* The SHA-512 initial hash values (RFC 7693 section 2.6). */
static const uint64_t iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
    0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
    0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

/* The message schedule (section 2.7); rounds 10 and 11 reuse rows 0, 1. */
static const unsigned char sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

static uint64_t rotr(uint64_t x, unsigned n)
{
	return (x >> n) | (x << (64 - n));
}

static uint64_t load64(const unsigned char *p)
{
	uint64_t x = 0;

	for (int i = 7; i >= 0; i--)
		x = (x << 8) | p[i];
	return x;
}

/* The mixing function G (section 3.1) of round r, step i, on words a, b,
 * c, d of the work vector v. A macro, and every round written out, so that
 * every index is a constant and v lives in registers: as a function that
 * the compiler keeps out of line this is most of an upload's CPU time. */
#define G(r, i, a, b, c, d)                                                  \
	do {                                                                 \
		v[a] = v[a] + v[b] + m[sigma[r][2 * (i)]];                   \
		v[d] = rotr(v[d] ^ v[a], 32);                                \
		v[c] = v[c] + v[d];                                          \
		v[b] = rotr(v[b] ^ v[c], 24);                                \
		v[a] = v[a] + v[b] + m[sigma[r][2 * (i) + 1]];               \
		v[d] = rotr(v[d] ^ v[a], 16);                                \
		v[c] = v[c] + v[d];                                          \
		v[b] = rotr(v[b] ^ v[c], 63);                                \
	} while (0)

#define ROUND(r)                                                             \
	do {                                                                 \
		G(r, 0, 0, 4, 8, 12);                                        \
		G(r, 1, 1, 5, 9, 13);                                        \
		G(r, 2, 2, 6, 10, 14);                                       \
		G(r, 3, 3, 7, 11, 15);                                       \
		G(r, 4, 0, 5, 10, 15);                                       \
		G(r, 5, 1, 6, 11, 12);                                       \
		G(r, 6, 2, 7, 8, 13);                                        \
		G(r, 7, 3, 4, 9, 14);                                        \
	} while (0)

/* The compression function F (section 3.2) over the block in s->buf. */
static void compress(struct blake2b *s, int last)
{
	uint64_t v[16], m[16];

	for (int i = 0; i < 16; i++)
		m[i] = load64(s->buf + 8 * i);
	for (int i = 0; i < 8; i++) {
		v[i] = s->h[i];
		v[i + 8] = iv[i];
	}
	v[12] ^= s->t[0];
	v[13] ^= s->t[1];
	if (last)
		v[14] = ~v[14];
	ROUND(0);
	ROUND(1);
	ROUND(2);
	ROUND(3);
	ROUND(4);
	ROUND(5);
	ROUND(6);
	ROUND(7);
	ROUND(8);
	ROUND(9);
	ROUND(10);
	ROUND(11);
	for (int i = 0; i < 8; i++)
		s->h[i] ^= v[i] ^ v[i + 8];
}

#undef ROUND
#undef G

/* Adds n to the 128-bit byte counter. */
static void count(struct blake2b *s, size_t n)
{
	s->t[0] += n;
	if (s->t[0] < n)
		s->t[1]++;
}

int blake2b_init_key(struct blake2b *s, size_t outlen, const void *key,
                     size_t keylen)
{
	if (outlen < 1 || outlen > BLAKE2B_MAX_OUT ||
	    keylen > BLAKE2B_MAX_KEY || (keylen && !key))
		return EINVAL;
	memset(s, 0, sizeof(*s));
	memcpy(s->h, iv, sizeof(s->h));
	/* parameter block: digest length, key length, fanout 1, depth 1 */
	s->h[0] ^= 0x01010000ULL ^ ((uint64_t)keylen << 8) ^ outlen;
	s->outlen = outlen;
	if (keylen) {
		/* the key, zero-padded, is the first block (section 3.3) */
		memcpy(s->buf, key, keylen);
		s->c = BLAKE2B_BLOCK;
	}
	return 0;
}

int blake2b_init(struct blake2b *s, size_t outlen)
{
	return blake2b_init_key(s, outlen, NULL, 0);
}

void blake2b_update(struct blake2b *s, const void *p, size_t n)
{
	const unsigned char *in = p;

	while (n > 0) {
		size_t take;

		/* a full block is compressed only once more input comes: the
		 * last block is compressed by blake2b_final, flagged */
		if (s->c == BLAKE2B_BLOCK) {
			count(s, BLAKE2B_BLOCK);
			compress(s, 0);
			s->c = 0;
		}
		take = BLAKE2B_BLOCK - s->c;
		if (take > n)
			take = n;
		memcpy(s->buf + s->c, in, take);
		s->c += take;
		in += take;
		n -= take;
	}
}

void blake2b_final(struct blake2b *s, unsigned char *out)
{
	count(s, s->c);
	memset(s->buf + s->c, 0, BLAKE2B_BLOCK - s->c);
	compress(s, 1);
	for (size_t i = 0; i < s->outlen; i++)
		out[i] = (unsigned char)(s->h[i / 8] >> (8 * (i % 8)));
	memset(s->buf, 0, sizeof(s->buf));
}

void blake2b_final_hex(struct blake2b *s, char *hex)
{
	unsigned char md[BLAKE2B_MAX_OUT];
	size_t n = s->outlen;

	blake2b_final(s, md);
	hex_encode(md, n, hex);
}

int blake2b_hex(const void *p, size_t n, size_t outlen, char *hex)
{
	struct blake2b s;
	int err = blake2b_init(&s, outlen);

	if (err)
		return err;
	blake2b_update(&s, p, n);
	blake2b_final_hex(&s, hex);
	return 0;
}
