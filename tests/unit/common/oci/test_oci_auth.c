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

int main(void)
{
	RUN(challenges);
	RUN(challenge_too_long);
	RUN(tokens);
	return t_done();
}
