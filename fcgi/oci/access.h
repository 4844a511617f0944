/* oci_access: who may pull from, push to and delete in a registry, by
 * larder's tokens (common/http/token.h; a registry's token has
 * TOKEN_REGISTRY_PREFIX and the registry's name as its index).
 *
 * Clients log in with HTTP Basic: any user name ("__token__" by
 * convention), the token as the password. A refusal is answered in the
 * OCI spec's JSON: 401 UNAUTHORIZED with WWW-Authenticate: Basic
 * realm="larder" (docker, podman and skopeo then send their stored
 * credentials), or 403 DENIED. Secrets are compared in constant time and
 * never logged.
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

/* For the API base (/v2/): 0 when r carries a valid token of any
 * registry, or no credentials where no registry is hosted or has read =
 * token; else it has answered 401 and returns EACCES. Clients learn from
 * this answer whether to send credentials at all, and docker login checks
 * the ones it is given here. */
int oci_access_base(struct worker *w, struct req *r);

#endif
