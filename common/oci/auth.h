/* oci_auth: the registry token protocol's two texts, read. I/O-free.
 *
 * A registry that wants a token answers 401 with
 *     WWW-Authenticate: Bearer realm="https://auth.example/token",
 *                       service="registry.example",scope="repository:a/b:pull"
 * and the client asks the realm (GET realm?service=..&scope=..) for a token,
 * which comes back as JSON: {"token": "...", "expires_in": 300, ...}
 * ("access_token" is the OAuth 2 spelling; either may come).
 */
#ifndef LARDER_OCI_AUTH_H
#define LARDER_OCI_AUTH_H

#include <stddef.h>

#define OCI_AUTH_MAX_PARAM 1024
/* Tokens can be long JWTs; Docker Hub's are about 1.5 KB. */
#define OCI_AUTH_MAX_TOKEN 8192
/* What a token lives when the answer does not say (the spec's 60 s). */
#define OCI_AUTH_DEFAULT_TTL 60

struct oci_challenge {
	char realm[OCI_AUTH_MAX_PARAM];
	char service[OCI_AUTH_MAX_PARAM];
	char scope[OCI_AUTH_MAX_PARAM];   /* "" when the registry gave none */
};

/* Reads a WWW-Authenticate value: a Bearer challenge (scheme case
 * ignored, parameters quoted or not, in any order, unknown ones skipped)
 * whose realm is an http or https URL (whether plain http is to be trusted
 * is the caller's to say). Returns 0, ENOENT when it is no Bearer
 * challenge (Basic, say), EINVAL when it is a bad one. */
int oci_challenge_parse(const char *value, struct oci_challenge *c);

struct oci_token {
	char token[OCI_AUTH_MAX_TOKEN];
	long expires_in;                  /* seconds */
};

/* Reads a token server's JSON answer of len bytes. Returns 0, or EINVAL
 * with a reason in err (not JSON, no token, a token with bytes a header
 * cannot carry, or longer than OCI_AUTH_MAX_TOKEN). */
int oci_token_parse(const char *data, size_t len, struct oci_token *t,
		    char *err, size_t errlen);

#endif
