/* oci_access: who may pull from, push to and delete in a registry, by
 * larder's tokens (common/http/token.h; a registry's token has
 * TOKEN_REGISTRY_PREFIX and the registry's name as its index).
 *
 * The registry token protocol (distribution's docs/spec/auth/token.md): a
 * refusal for want of credentials is 401 UNAUTHORIZED with
 *     WWW-Authenticate: Bearer realm="BASE/v2/token",service="larder",
 *                       scope="repository:NAME:ACTIONS"
 * and the client asks the token endpoint (fcgi/oci/bearer.h) for a token:
 * with Basic credentials (any user name, "__token__" by convention, the
 * larder token as the password) it gets that token back; with none, an
 * anonymous token that carries no rights. It then sends "Authorization:
 * Bearer TOKEN". Basic credentials sent here directly still count, as
 * they always have. A token that may not do what is asked gets 403
 * DENIED. Secrets are compared in constant time and never logged.
 */
#ifndef LARDER_OCI_ACCESS_H
#define LARDER_OCI_ACCESS_H

#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* Whether r may do action (TOKEN_PULL, TOKEN_PUSH or TOKEN_DELETE) on
 * repository repo (the name inside the registry) of registry ri. A pull
 * of a registry with read = anonymous needs nothing. Returns 0 when
 * allowed; otherwise it has answered r (401, 403, or 500 when the tokens
 * cannot be read) and returns EACCES. */
int oci_access_allow(struct worker *w, struct req *r, int ri,
                     const char *repo, unsigned action);

/* As oci_access_allow(), but answers nothing: 0 or EACCES. */
int oci_access_may(struct worker *w, struct req *r, int ri,
                   const char *repo, unsigned action);

/* For the API base (/v2/): 0 when r carries a valid token (a larder
 * token, or an anonymous one), or no credentials where no registry is
 * hosted or has read = token; else it has answered 401 and returns
 * EACCES. Clients learn from this answer how to get a token at all, and
 * docker login checks the token it got here. */
int oci_access_base(struct worker *w, struct req *r);

/* For the token endpoint: reads r's credentials. No credentials (or a
 * good anonymous token): 0 with *anonymous set. A good larder token: 0
 * with *anonymous 0, the token's text in text (TOKEN_TEXT_LEN + 1 bytes;
 * the caller wipes it) and *expires its expiry (0: never). Else it has
 * answered r (401 with a Basic challenge, as the endpoint takes Basic
 * credentials, or 500) and returns EACCES. */
int oci_access_login(struct worker *w, struct req *r, int *anonymous,
                     char *text, long long *expires);

#endif
