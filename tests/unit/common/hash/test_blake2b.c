#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash/blake2b.h"
#include "tests/unit/t.h"

/* The test input: byte i is (7i + 3) mod 256. */
static unsigned char *pattern(size_t n)
{
	unsigned char *p = malloc(n ? n : 1);

	for (size_t i = 0; p && i < n; i++)
		p[i] = (unsigned char)(i * 7 + 3);
	return p;
}

/* Hashes n pattern bytes fed step bytes at a time (0: one call). */
static void hash_chunked(size_t n, size_t outlen, size_t step, char *hex)
{
	unsigned char *p = pattern(n);
	struct blake2b s;
	size_t off = 0;

	CHECK_INT(blake2b_init(&s, outlen), 0);
	if (!step)
		step = n ? n : 1;
	while (off < n) {
		size_t k = n - off < step ? n - off : step;

		blake2b_update(&s, p + off, k);
		off += k;
	}
	blake2b_final_hex(&s, hex);
	free(p);
}

/* RFC 7693 Appendix A: BLAKE2b-512("abc"). */
T(rfc7693_abc)
{
	unsigned char md[64];
	char hex[2 * BLAKE2B_MAX_OUT + 1];
	struct blake2b s;
	static const unsigned char want[64] = {
		0xba, 0x80, 0xa5, 0x3f, 0x98, 0x1c, 0x4d, 0x0d, 0x6a, 0x27,
		0x97, 0xb6, 0x9f, 0x12, 0xf6, 0xe9, 0x4c, 0x21, 0x2f, 0x14,
		0x68, 0x5a, 0xc4, 0xb7, 0x4b, 0x12, 0xbb, 0x6f, 0xdb, 0xff,
		0xa2, 0xd1, 0x7d, 0x87, 0xc5, 0x39, 0x2a, 0xab, 0x79, 0x2d,
		0xc2, 0x52, 0xd5, 0xde, 0x45, 0x33, 0xcc, 0x95, 0x18, 0xd3,
		0x8a, 0xa8, 0xdb, 0xf1, 0x92, 0x5a, 0xb9, 0x23, 0x86, 0xed,
		0xd4, 0x00, 0x99, 0x23,
	};

	CHECK_INT(blake2b_init(&s, 64), 0);
	blake2b_update(&s, "abc", 3);
	blake2b_final(&s, md);
	CHECK(memcmp(md, want, 64) == 0);
	CHECK_INT(blake2b_hex("abc", 3, 64, hex), 0);
	CHECK_STR(hex, "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb"
		       "6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1"
		       "925ab92386edd4009923");
}

/* 32-byte digests from Python's hashlib.blake2b(digest_size=32), around
 * the block boundaries and over a megabyte, fed in odd chunk sizes. */
T(digest_256_lengths)
{
	static const struct {
		size_t n;
		const char *hex;
	} cases[] = {
		{ 0, "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cd"
		     "f12fe3a8" },
		{ 1, "e88bd757ad5b9bedf372d8d3f0cf6c962a469db61a265f6418e1ffed"
		     "86da29ec" },
		{ 127, "c9ae3859964b35f04c54b36d33cf299d7290ee621005d28e51598a"
		       "943560aaaa" },
		{ 128, "f0501d06597880592bc49234eef100ec1ff349058d0e9d9b753504"
		       "e24af86dd6" },
		{ 129, "a34a4e1e03c541dfbf3099c4b6c143c022ced65c28bd7e8a10e0a0"
		       "98461aecf0" },
		{ 255, "f2d64a40e9412a3414161ff6250075225418fd7c271c1123e162e1"
		       "bca0de9f93" },
		{ 256, "d93ebb9c802f5630ab22516fd82b6c21bc8bd551d531349b715f04"
		       "6ed11ed871" },
		{ 257, "4ce481b24d387422d2bc2baa03d1afd55a1327939ff537c71eb9b3"
		       "8709268649" },
		{ 1000000, "d48a491f3fe3c69942b7153de924b9fadec07d645a09205472"
			   "d846c08e95e20f" },
	};
	static const size_t steps[] = { 0, 1, 3, 7, 127, 128, 129, 4099 };
	char hex[2 * BLAKE2B_MAX_OUT + 1];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (size_t j = 0; j < sizeof(steps) / sizeof(steps[0]); j++) {
			/* a megabyte one byte at a time is slow under ASan */
			if (cases[i].n > 100000 && steps[j] == 1)
				continue;
			hash_chunked(cases[i].n, 32, steps[j], hex);
			if (strcmp(hex, cases[i].hex) != 0)
				fprintf(stderr, "  n=%zu step=%zu\n",
					cases[i].n, steps[j]);
			CHECK_STR(hex, cases[i].hex);
		}
	}
}

/* Other digest sizes and keys, also from hashlib. */
T(digest_sizes_and_keys)
{
	char hex[2 * BLAKE2B_MAX_OUT + 1];
	unsigned char key[64], *p = pattern(200);
	struct blake2b s;

	CHECK_INT(blake2b_hex("abc", 3, 1, hex), 0);
	CHECK_STR(hex, "6b");

	CHECK_INT(blake2b_init_key(&s, 20, "larder-key", 10), 0);
	blake2b_update(&s, p, 77);
	blake2b_update(&s, p + 77, 123);
	blake2b_final_hex(&s, hex);
	CHECK_STR(hex, "aa6c98b8f2217f9f861d9da1b7600e53a1da96c6");

	/* a key and no message: the key block is the last block */
	for (int i = 0; i < 64; i++)
		key[i] = (unsigned char)i;
	CHECK_INT(blake2b_init_key(&s, 64, key, 64), 0);
	blake2b_final_hex(&s, hex);
	CHECK_STR(hex, "10ebb67700b1868efb4417987acf4690ae9d972fb7a590c2f02871"
		       "799aaa4786b5e996e8f0f4eb981fc214b005f42d2ff4233499391"
		       "653df7aefcbc13fc51568");
	free(p);
}

T(bad_parameters)
{
	struct blake2b s;
	char hex[2 * BLAKE2B_MAX_OUT + 1];

	CHECK_INT(blake2b_init(&s, 0), EINVAL);
	CHECK_INT(blake2b_init(&s, 65), EINVAL);
	CHECK_INT(blake2b_init_key(&s, 32, "k", 65), EINVAL);
	CHECK_INT(blake2b_init_key(&s, 32, NULL, 3), EINVAL);
	CHECK_INT(blake2b_hex("", 0, 100, hex), EINVAL);
}

int main(void)
{
	RUN(rfc7693_abc);
	RUN(digest_256_lengths);
	RUN(digest_sizes_and_keys);
	RUN(bad_parameters);
	return t_done();
}
