#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/oci/auth.h"
#include "tests/unit/t.h"

T(challenges)
{
	struct oci_challenge c;

	CHECK_INT(oci_challenge_parse("Bearer realm=\"https://auth.docker.io/token\","
				      "service=\"registry.docker.io\","
				      "scope=\"repository:library/alpine:pull\"", &c), 0);
	CHECK_STR(c.realm, "https://auth.docker.io/token");
	CHECK_STR(c.service, "registry.docker.io");
	CHECK_STR(c.scope, "repository:library/alpine:pull");

	/* any order, any case, spaces, unknown and unquoted parameters */
	CHECK_INT(oci_challenge_parse("  bearer  error=\"insufficient_scope\" , "
				      "scope=\"repository:a:pull repository:b:pull\" ,"
				      "REALM=http://127.0.0.1:5001/auth ,service=x", &c), 0);
	CHECK_STR(c.realm, "http://127.0.0.1:5001/auth");
	CHECK_STR(c.service, "x");
	CHECK_STR(c.scope, "repository:a:pull repository:b:pull");

	CHECK_INT(oci_challenge_parse("Bearer realm=\"https://a/t\\\"x\"", &c), 0);
	CHECK_STR(c.realm, "https://a/t\"x");
	CHECK_STR(c.scope, "");

	CHECK_INT(oci_challenge_parse("Basic realm=\"registry\"", &c), ENOENT);
	CHECK_INT(oci_challenge_parse("BearerX realm=\"https://a\"", &c), ENOENT);
	CHECK_INT(oci_challenge_parse("", &c), ENOENT);
	CHECK_INT(oci_challenge_parse(NULL, &c), ENOENT);
	CHECK_INT(oci_challenge_parse("Bearer", &c), EINVAL);
	CHECK_INT(oci_challenge_parse("Bearer service=\"x\"", &c), EINVAL);
	CHECK_INT(oci_challenge_parse("Bearer realm=\"ftp://a\"", &c), EINVAL);
	CHECK_INT(oci_challenge_parse("Bearer realm=\"https://a", &c), EINVAL);
	CHECK_INT(oci_challenge_parse("Bearer realm=\"https://a\" service", &c), EINVAL);
	CHECK_INT(oci_challenge_parse("Bearer realm=\"https://a\"; x=y", &c), EINVAL);
	CHECK_INT(oci_challenge_parse("Bearer realm=\"https://a\r\nX: y\"", &c), EINVAL);
	CHECK_INT(oci_challenge_parse("Bearer realm=", &c), EINVAL);
}

T(challenge_too_long)
{
	char v[OCI_AUTH_MAX_PARAM + 64];
	struct oci_challenge c;

	strcpy(v, "Bearer realm=\"https://");
	memset(v + strlen(v), 'a', OCI_AUTH_MAX_PARAM);
	strcpy(v + strlen("Bearer realm=\"https://") + OCI_AUTH_MAX_PARAM, "\"");
	CHECK_INT(oci_challenge_parse(v, &c), EINVAL);
}

static int token(const char *s, struct oci_token *t, char *err)
{
	return oci_token_parse(s, strlen(s), t, err, 200);
}

T(tokens)
{
	struct oci_token t;
	char err[200];

	CHECK_INT(token("{\"token\":\"abc.def.ghi\",\"access_token\":\"abc.def.ghi\","
			"\"expires_in\":300,\"issued_at\":\"2026-12-01T00:00:00Z\"}",
			&t, err), 0);
	CHECK_STR(t.token, "abc.def.ghi");
	CHECK_INT(t.expires_in, 300);

	CHECK_INT(token("{\"access_token\":\"x\",\"extra\":{\"a\":[1,2]}}", &t, err), 0);
	CHECK_STR(t.token, "x");
	CHECK_INT(t.expires_in, OCI_AUTH_DEFAULT_TTL);

	CHECK_INT(token("{\"token\":\"x\",\"expires_in\":99999999}", &t, err), 0);
	CHECK_INT(t.expires_in, 86400);
	CHECK_INT(token("{\"token\":\"x\",\"expires_in\":-5}", &t, err), 0);
	CHECK_INT(t.expires_in, OCI_AUTH_DEFAULT_TTL);

	CHECK_INT(token("{}", &t, err), EINVAL);
	CHECK_CONTAINS(err, "no token");
	CHECK_INT(token("{\"token\":\"\"}", &t, err), EINVAL);
	CHECK_INT(token("{\"token\":\"a b\"}", &t, err), EINVAL);
	CHECK_CONTAINS(err, "header");
	CHECK_INT(token("{\"token\":\"a\\r\\nX: y\"}", &t, err), EINVAL);
	CHECK_INT(token("[\"token\"]", &t, err), EINVAL);
	CHECK_INT(token("{\"token\":\"x\"", &t, err), EINVAL);
	CHECK_INT(token("{\"token\":\"x\"} {}", &t, err), EINVAL);
	CHECK_INT(token("", &t, err), EINVAL);
}

T(path_names)
{
	char n[64];

	CHECK_INT(oci_auth_path_name("/v2/a/b/manifests/1", n, sizeof(n)), 0);
	CHECK_STR(n, "a/b");
	CHECK_INT(oci_auth_path_name("/v2/priv/team/app/blobs/uploads/0a1b",
				     n, sizeof(n)), 0);
	CHECK_STR(n, "priv/team/app");
	CHECK_INT(oci_auth_path_name("/v2/x/tags/list", n, sizeof(n)), 0);
	CHECK_STR(n, "x");
	CHECK_INT(oci_auth_path_name("/v2/x/referrers/sha256:00", n,
				     sizeof(n)), 0);
	CHECK_STR(n, "x");
	/* a name with a marker's word as a component: the last marker */
	CHECK_INT(oci_auth_path_name("/v2/a/blobs/b/manifests/latest", n,
				     sizeof(n)), 0);
	CHECK_STR(n, "a/blobs/b");
	CHECK_INT(oci_auth_path_name("/v2/manifests/manifests/1", n,
				     sizeof(n)), 0);
	CHECK_STR(n, "manifests");

	CHECK_INT(oci_auth_path_name("/v2/", n, sizeof(n)), ENOENT);
	CHECK_INT(oci_auth_path_name("/v2/token", n, sizeof(n)), ENOENT);
	CHECK_INT(oci_auth_path_name("/v2//manifests/1", n, sizeof(n)), ENOENT);
	CHECK_INT(oci_auth_path_name("/simple/a/manifests/1", n, sizeof(n)),
		  ENOENT);
	CHECK_INT(oci_auth_path_name("/v2/a\"b/manifests/1", n, sizeof(n)),
		  EINVAL);
	CHECK_INT(oci_auth_path_name("/v2/A/manifests/1", n, sizeof(n)),
		  EINVAL);
	CHECK_INT(oci_auth_path_name("/v2/abcdef/manifests/1", n, 6),
		  ENAMETOOLONG);
	CHECK_INT(oci_auth_path_name("/v2/abcdef/manifests/1", n, 7), 0);
}

T(our_challenges)
{
	struct oci_challenge c;
	char v[256];

	CHECK_INT(oci_auth_challenge("http://h:81/v2/token", NULL, NULL, v,
				     sizeof(v)), 0);
	CHECK_STR(v, "Bearer realm=\"http://h:81/v2/token\",service=\"larder\"");
	CHECK_INT(oci_auth_challenge("https://h/v2/token", "a/b", "pull,push",
				     v, sizeof(v)), 0);
	CHECK_STR(v, "Bearer realm=\"https://h/v2/token\",service=\"larder\","
		  "scope=\"repository:a/b:pull,push\"");
	/* what larder says, its own reader (and so docker's) takes */
	CHECK_INT(oci_challenge_parse(v, &c), 0);
	CHECK_STR(c.realm, "https://h/v2/token");
	CHECK_STR(c.service, "larder");
	CHECK_STR(c.scope, "repository:a/b:pull,push");

	CHECK_INT(oci_auth_challenge("ftp://h/t", NULL, NULL, v, sizeof(v)),
		  EINVAL);
	CHECK_INT(oci_auth_challenge("http://h\"x/t", NULL, NULL, v,
				     sizeof(v)), EINVAL);
	CHECK_INT(oci_auth_challenge("http://h/t", "a\\b", "pull", v,
				     sizeof(v)), EINVAL);
	CHECK_INT(oci_auth_challenge("http://h/t", "a b", "pull", v,
				     sizeof(v)), EINVAL);
	CHECK_INT(oci_auth_challenge("http://h/t", "a", "", v, sizeof(v)),
		  EINVAL);
	CHECK_INT(oci_auth_challenge("http://h/t", "a", "pull", v, 20),
		  ENAMETOOLONG);
}

T(anonymous_tokens)
{
	static const unsigned char key[OCI_ANON_KEY_LEN] = {1, 2, 3};
	static const unsigned char other[OCI_ANON_KEY_LEN] = {1, 2, 4};
	char t[OCI_ANON_TEXT_LEN + 1], bad[OCI_ANON_TEXT_LEN + 1];

	CHECK_INT(oci_anon_token_make(key, sizeof(key), 1000, t), 0);
	CHECK_INT((int)strlen(t), OCI_ANON_TEXT_LEN);
	CHECK_INT(strncmp(t, "la_00000000000003e8_", 20), 0);
	CHECK_INT(oci_anon_token_check(t, key, sizeof(key), 999), 0);
	/* expiry honoured */
	CHECK_INT(oci_anon_token_check(t, key, sizeof(key), 1000), ETIMEDOUT);
	CHECK_INT(oci_anon_token_check(t, key, sizeof(key), 5000), ETIMEDOUT);
	/* another key's, a later expiry written over the signed one */
	CHECK_INT(oci_anon_token_check(t, other, sizeof(other), 999), EINVAL);
	memcpy(bad, t, sizeof(bad));
	bad[18] = '9';
	CHECK_INT(oci_anon_token_check(bad, key, sizeof(key), 999), EINVAL);
	memcpy(bad, t, sizeof(bad));
	bad[OCI_ANON_TEXT_LEN - 1] = bad[OCI_ANON_TEXT_LEN - 1] == '0' ? '1' : '0';
	CHECK_INT(oci_anon_token_check(bad, key, sizeof(key), 999), EINVAL);
	memcpy(bad, t, sizeof(bad));
	bad[25] = 'A';
	CHECK_INT(oci_anon_token_check(bad, key, sizeof(key), 999), EINVAL);
	bad[OCI_ANON_TEXT_LEN - 1] = '\0';
	CHECK_INT(oci_anon_token_check(bad, key, sizeof(key), 999), EINVAL);
	CHECK_INT(oci_anon_token_check("la_", key, sizeof(key), 999), EINVAL);
	/* larder's own registry tokens are not anonymous ones */
	CHECK_INT(oci_anon_token_check("lt_0123456789abcdef_00", key,
				       sizeof(key), 999), ENOENT);
	CHECK_INT(oci_anon_token_check("", key, sizeof(key), 999), ENOENT);
	/* read off an Authorization header */
	CHECK_INT(oci_anon_bearer("Bearer la_x", bad), 1);
	CHECK_STR(bad, "la_x");
	CHECK_INT(oci_anon_bearer("  bearer \tla_y  ", bad), 1);
	CHECK_STR(bad, "la_y");
	CHECK_INT(oci_anon_bearer("Bearer la_0123456789abcdef_"
				  "0123456789abcdef0123456789abcdef"
				  "0123456789abcdef0123456789abcdef0", bad), 1);
	CHECK_STR(bad, "la_");
	CHECK_INT(oci_anon_bearer("Bearer lt_x", bad), 0);
	CHECK_INT(oci_anon_bearer("Basic la_x", bad), 0);
	CHECK_INT(oci_anon_bearer("Bearerla_x", bad), 0);
	CHECK_INT(oci_anon_bearer(NULL, bad), 0);
	CHECK_INT(oci_anon_token_make(key, 0, 1000, t), EINVAL);
	CHECK_INT(oci_anon_token_make(key, sizeof(key), -1, t), EINVAL);
}

int main(void)
{
	RUN(path_names);
	RUN(our_challenges);
	RUN(anonymous_tokens);
	RUN(challenges);
	RUN(challenge_too_long);
	RUN(tokens);
	return t_done();
}
