#include "config.h"

#include <string.h>

#include "common/hash/hmac.h"
#include "tests/unit/t.h"

/* n copies of byte b in buf (at most 200). */
static const unsigned char *fill(unsigned char *buf, int b, size_t n)
{
	memset(buf, b, n);
	return buf;
}

/* RFC 4231 section 4: the HMAC-SHA256 values of test cases 1 to 7 (case 5
 * is truncated to 128 bits in the RFC, so only its prefix is checked). */
T(rfc4231)
{
	unsigned char k[200], m[200];
	unsigned char k4[25];
	char hex[65];

	CHECK_INT(hmac_sha256_hex(fill(k, 0x0b, 20), 20, "Hi There", 8, hex),
	          0);
	CHECK_STR(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9"
	               "376c2e32cff7");
	CHECK_INT(hmac_sha256_hex("Jefe", 4, "what do ya want for nothing?",
	                          28, hex), 0);
	CHECK_STR(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec"
	               "58b964ec3843");
	CHECK_INT(hmac_sha256_hex(fill(k, 0xaa, 20), 20, fill(m, 0xdd, 50), 50,
	                          hex), 0);
	CHECK_STR(hex, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d963"
	               "5514ced565fe");
	for (size_t i = 0; i < sizeof(k4); i++)
		k4[i] = (unsigned char)(i + 1);
	CHECK_INT(hmac_sha256_hex(k4, sizeof(k4), fill(m, 0xcd, 50), 50, hex),
	          0);
	CHECK_STR(hex, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e"
	               "3ff46729665b");
	CHECK_INT(hmac_sha256_hex(fill(k, 0x0c, 20), 20,
	                          "Test With Truncation", 20, hex), 0);
	CHECK(!strncmp(hex, "a3b6167473100ee06e0c796c2955552b", 32));
	/* a key longer than the block is hashed first */
	CHECK_INT(hmac_sha256_hex(fill(k, 0xaa, 131), 131,
	                          "Test Using Larger Than Block-Size Key - "
	                          "Hash Key First", 54, hex), 0);
	CHECK_STR(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546"
	               "040f0ee37f54");
	{
		const char *msg = "This is a test using a larger than "
		                  "block-size key and a larger than block-size "
		                  "data. The key needs to be hashed before being "
		                  "used by the HMAC algorithm.";

		CHECK_INT(hmac_sha256_hex(fill(k, 0xaa, 131), 131, msg,
		                          strlen(msg), hex), 0);
		CHECK_STR(hex, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f071393"
		               "8a7f51535c3a35e2");
	}
}

/* Fed in pieces, the same as in one call; a 64-byte key is used as it is. */
T(streamed_and_block_key)
{
	unsigned char k[64];
	struct hmac h;
	char one[65], parts[65];
	const char *msg = "1700000000.{\"event\":\"upload\"}";

	memset(k, 'k', sizeof(k));
	CHECK_INT(hmac_sha256_hex(k, 64, msg, strlen(msg), one), 0);
	CHECK_INT(hmac_init(&h, k, 64), 0);
	hmac_update(&h, msg, 11);
	hmac_update(&h, msg + 11, strlen(msg) - 11);
	CHECK_INT(hmac_final(&h, parts), 0);
	CHECK_STR(parts, one);
	/* Python: hmac.new(b"k"*64, msg, "sha256").hexdigest() */
	CHECK_STR(one, "fecd4f56d12e47e1470513e7fb2eb3d9176d21a641e28a52be09a3f29e3cec72");
	CHECK_INT(hmac_sha256_hex("", 0, "", 0, one), 0);
	CHECK_STR(one, "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c7"
	               "12144292c5ad");
}

T(equal)
{
	CHECK(hmac_equal("abc", "abc"));
	CHECK(!hmac_equal("abc", "abd"));
	CHECK(!hmac_equal("abc", "ab"));
	CHECK(hmac_equal("", ""));
}

int main(void)
{
	RUN(rfc4231);
	RUN(streamed_and_block_key);
	RUN(equal);
	return t_done();
}
