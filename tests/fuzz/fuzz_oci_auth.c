/* libFuzzer target: Bearer challenges and token answers. The input is
 * tried as both. Whatever comes in, a challenge read has an http(s) realm
 * and a token read has bytes a header can carry. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/oci/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct oci_challenge c;
	static struct oci_token t;
	char *s = strndup((const char *)d, n), err[200];
	const char *p;

	if (!s)
		return 0;
	if (oci_challenge_parse(s, &c) == 0 &&
	    strncmp(c.realm, "https://", 8) && strncmp(c.realm, "http://", 7))
		abort();
	if (oci_token_parse((const char *)d, n, &t, err, sizeof(err)) == 0) {
		if (!*t.token || t.expires_in <= 0 || t.expires_in > 86400)
			abort();
		for (p = t.token; *p; p++)
			if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
				abort();
	}
	free(s);
	return 0;
}
