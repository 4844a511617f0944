/* libFuzzer target: Bearer challenges and token answers. The input is
 * tried as both, as an anonymous token and as a /v2/ path. Whatever comes
 * in, a challenge read has an http(s) realm, a token read has bytes a
 * header can carry, no input passes as an anonymous token but one made
 * with the key, and a path's name is one larder's challenge can carry. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/oci/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct oci_challenge c;
	static struct oci_token t;
	static const unsigned char key[OCI_ANON_KEY_LEN] = {7};
	char *s = strndup((const char *)d, n), err[200], name[256], v[600];
	char made[OCI_ANON_TEXT_LEN + 1];
	long long exp;
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
	if (oci_anon_token_check(s, key, sizeof(key), 0) == 0) {
		/* only a token made with the key passes */
		exp = 0;
		for (p = s + 3; p < s + 19; p++)
			exp = exp * 16 + (*p <= '9' ? *p - '0' : *p - 'a' + 10);
		if (oci_anon_token_make(key, sizeof(key), exp, made) ||
		    strcmp(made, s))
			abort();
	}
	if (oci_auth_path_name(s, name, sizeof(name)) == 0 &&
	    oci_auth_challenge("http://h/v2/token", name, "pull", v,
			       sizeof(v)) == EINVAL)
		abort();
	free(s);
	return 0;
}
