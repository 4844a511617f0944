/* oci_up: talking to an upstream registry on behalf of one repository:
 * its URLs, the fetch options (timeouts, the hosts blob redirects may go
 * to, the bearer token), and the token dance.
 *
 * A registry that wants a token says so with a 401 and a Bearer challenge
 * (realm, service). The token for (registry, "repository:NAME:pull") is
 * fetched once, by whichever worker claims it first (a single-flight
 * claim on "token:REGISTRY:SCOPE", storage/flight.h, which dies with its
 * process) while the others wait for it, no longer than a healthy token
 * fetch takes, and kept in the database until it expires, for every
 * worker. Claims on different scopes do not wait on each other. A token
 * the registry refused is never taken again, but not deleted either:
 * another worker may have stored a newer one in its place. What the
 * registry wants (a challenge, or nothing) is remembered per registry
 * too, so a blob fetch, which cannot redo a 401 halfway, starts with a
 * token in hand.
 *
 * Credentials (username, password_file) go to the token service as Basic
 * auth, never to a plain http realm unless the upstream itself is plain
 * http. Neither a password nor a token is ever logged.
 */
#ifndef LARDER_OCI_UP_H
#define LARDER_OCI_UP_H

#include "common/oci/auth.h"
#include "common/oci/ref.h"
#include "fcgi/server/worker.h"
#include "storage/fetch.h"

/* The longest manifest accepted (the cap; Docker Hub's too). */
#define OCI_UP_MAX_MANIFEST (4 << 20)

/* The longest Authorization value (with its NUL) o.auth may carry:
 * "Bearer " and a token of up to OCI_AUTH_MAX_TOKEN - 1 bytes, or a Basic
 * value. fetch_page() and fetch_file() must send it whole. */
#define OCI_UP_AUTH_MAX (OCI_AUTH_MAX_TOKEN + 16)

struct oci_up {
	const struct conf_registry *reg;
	char name[OCI_MAX_NAME + 16];  /* the upstream's name ("library/"
	                                  added where the registry wants it) */
	char scope[OCI_MAX_NAME + 32]; /* "repository:NAME:pull" */
	char auth[OCI_UP_AUTH_MAX];    /* "Bearer T", "Basic ..", or "" */
	struct fetch_opts o;           /* o.auth points into auth */
};

/* Sets u up for repository name (as the client named it, without the
 * registry's prefix) of registry position ri, with the token the database
 * holds for it, if any. Returns 0, or ENAMETOOLONG. */
int oci_up_open(struct worker *w, int ri, const char *name, struct oci_up *u);

/* Whether registry reg is offline (offline = yes, its own or [larder]'s):
 * nothing may be asked of its upstream. oci_up_page() and oci_up_ready()
 * then fail with ENETDOWN. */
int oci_up_offline(const struct worker *w, const struct conf_registry *reg);

/* Writes the upstream URL "<upstream>v2/<name>/<what>" to out. Returns 0
 * or ENAMETOOLONG. */
int oci_up_url(const struct oci_up *u, const char *what, char *out, size_t len);

/* GETs (head: HEADs) url with the token, if any; on a 401 with a Bearer
 * challenge gets a token (one other than the one just refused) and asks
 * once more. Returns
 *   0 with r->status whatever the registry answered last: 401 when it
 *     refused (the token service refused, 401 or 403; the registry
 *     refused a fresh token; it wants credentials none are configured
 *     for, or they would go to a plain http realm), with the reason in
 *     err (and logged) when a login was refused;
 *   an errno with the reason in err when the upstream failed: what
 *     fetch_page() returns (ETIMEDOUT, ECONNREFUSED, EIO, E2BIG...) for
 *     the registry, or the token service failed (ETIMEDOUT, ECONNREFUSED,
 *     EREMOTEIO for a 5xx, EPROTO for another status, an answer without
 *     a token or a challenge that cannot be read), the password_file is
 *     unusable (EINVAL), or another worker's fetch of the token is still
 *     going after a healthy fetch's time (ETIMEDOUT).
 * So rc != 0 is an upstream failure (ETIMEDOUT a 504, else a 502; a stale
 * copy may answer) and rc == 0 with status 401 is UNAUTHORIZED. r->body
 * is the caller's to buf_free() in every case. */
int oci_up_page(struct worker *w, struct oci_up *u, const char *url,
                const char *accept, const char *etag, int head,
                struct fetch_page *r, char *err, size_t errlen);

/* Before a blob fetch: makes sure u carries a token when the registry
 * wants one; when nobody knows yet whether it does, a HEAD of url (a
 * HEAD costs no pull) finds out. forget: the upstream refused what u
 * carries; a HEAD with it asks the registry again, and on its 401 the
 * token held counts as refused (another worker's newer one is taken, or
 * a new one fetched; nothing is deleted). Returns 0, EACCES with a
 * reason in err when the registry or its token service refused (as
 * oci_up_page()'s status 401), or another errno with a reason in err for
 * an upstream failure, as oci_up_page(). */
int oci_up_ready(struct worker *w, struct oci_up *u, const char *url,
                 int forget, char *err, size_t errlen);

#endif
