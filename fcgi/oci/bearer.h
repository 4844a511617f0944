/* oci_bearer: larder's token endpoint, GET /v2/token, the realm of its
 * Bearer challenges (fcgi/oci/access.h; distribution's
 * docs/spec/auth/token.md).
 *
 * With Basic credentials (a larder token as the password, any user name)
 * the answer is that same token: what it may do is what the token may do,
 * checked at each request, so the scope asked for is not read and no
 * right is ever widened. Without credentials the answer is an anonymous
 * token (common/oci/auth.h), good for OCI_ANON_TTL seconds, that means
 * "no credentials": pulls of registries with read = anonymous. The
 * answer is
 *     {"token": T, "access_token": T, "expires_in": S, "issued_at": ISO}
 * with Cache-Control: no-store; no refresh token is ever given.
 *
 * Anonymous tokens are signed with HMAC-SHA256 under a key of
 * OCI_ANON_KEY_LEN random bytes in DATA/bearer.key (mode 0600), made by
 * the first worker that needs it. Deleting the file and restarting larder
 * voids every anonymous token handed out.
 */
#ifndef LARDER_OCI_BEARER_H
#define LARDER_OCI_BEARER_H

#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* The path of the token endpoint, under the mount. */
#define OCI_BEARER_PATH "/v2/token"
/* What a larder token handed back is said to live at most, seconds
 * (clients ask again after it; the token's own expiry is checked at each
 * request). */
#define OCI_BEARER_TTL 3600

/* Answers GET (and HEAD) /v2/token; any other method is 405. */
void oci_bearer_serve(struct worker *w, struct req *r);

/* Points *key at the anonymous tokens' key (OCI_ANON_KEY_LEN bytes, kept
 * for the life of the process), reading DATA/bearer.key or making it.
 * Returns 0, or an errno (logged) when it can be neither read nor made. */
int oci_bearer_key(struct worker *w, const unsigned char **key);

#endif
