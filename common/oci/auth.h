/* oci_auth: the registry token protocol's two texts, read. I/O-free.
 *
 * A registry that wants a token answers 401 with
 *     WWW-Authenticate: Bearer realm="https://auth.example/token",
 *                       service="registry.example",scope="repository:a/b:pull"
 * and the client asks the realm (GET realm?service=..&scope=..) for a token,
 * which comes back as JSON: {"token": "...", "expires_in": 300, ...}
 * ("access_token" is the OAuth 2 spelling; either may come).
 *
 * larder speaks the protocol's other side too, for its own registries:
 * its 401s carry a Bearer challenge whose realm is its token endpoint
 * (/v2/token, fcgi/oci/bearer.h), and that endpoint hands an anonymous
 * client a short-lived anonymous token, "la_" + 16 hex digits of its
 * expiry (Unix seconds) + "_" + 64 hex digits of HMAC-SHA256 over
 * "larder-anonymous:" and those 16 digits, under a key only larder has.
 * An anonymous token carries no rights: it says only "no credentials",
 * which is what dockerd, as a mirror client, needs to say.
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

/* The service larder names in its challenges. */
#define OCI_AUTH_SERVICE "larder"
/* An anonymous token: "la_" + expiry + "_" + HMAC. */
#define OCI_ANON_PREFIX "la_"
#define OCI_ANON_TEXT_LEN (3 + 16 + 1 + 64)
/* What an anonymous token lives, seconds. */
#define OCI_ANON_TTL 300
/* The HMAC key's length, bytes. */
#define OCI_ANON_KEY_LEN 32

/* Writes the repository name a /v2/ API path is about to out (len
 * bytes): "a/b" of "/v2/a/b/manifests/1", "/v2/a/b/blobs/uploads/ID",
 * "/v2/a/b/tags/list" or "/v2/a/b/referrers/DIGEST". Returns 0, ENOENT
 * when the path names no repository (/v2/, /v2/token), EINVAL when the
 * name holds a byte no OCI name has, ENAMETOOLONG when out is too small. */
int oci_auth_path_name(const char *path, char *out, size_t len);

/* Writes larder's Bearer challenge to out (len bytes):
 *     Bearer realm="REALM",service="larder"
 * followed by ,scope="repository:NAME:ACTIONS" when name is not NULL.
 * realm must be an http(s) URL, name an OCI name and actions a list such
 * as "pull,push", none holding '"' or '\'. Returns 0, EINVAL for a
 * realm, name or actions that cannot go in the header, or ENAMETOOLONG. */
int oci_auth_challenge(const char *realm, const char *name,
		       const char *actions, char *out, size_t len);

/* Writes an anonymous token that expires at expires (Unix seconds), signed
 * with key (keylen bytes), to out. Returns 0, or EINVAL for a negative
 * expiry or an empty key, ENOMEM when the HMAC cannot be made. */
int oci_anon_token_make(const unsigned char *key, size_t keylen,
			long long expires, char out[OCI_ANON_TEXT_LEN + 1]);

/* Checks text as an anonymous token under key (keylen bytes) at time now
 * (the signature compared in constant time). Returns 0 when it is good,
 * ENOENT when text is no anonymous token at all (it does not start with
 * "la_"), EINVAL when it is malformed or its signature is wrong,
 * ETIMEDOUT when it has expired. */
int oci_anon_token_check(const char *text, const unsigned char *key,
			 size_t keylen, long long now);

/* Returns 1 when the Authorization value is "Bearer la_..." (scheme in
 * any case, blanks around), with the token copied to out ("la_" alone
 * when it is longer than any anonymous token, so that it fails
 * oci_anon_token_check()); else 0 (NULL, another scheme, another token). */
int oci_anon_bearer(const char *value, char out[OCI_ANON_TEXT_LEN + 1]);

#endif
