/* oci_up: talking to an upstream registry on behalf of one repository:
 * its URLs, the fetch options (timeouts, the hosts blob redirects may go
 * to, the bearer token), and the token dance.
 *
 * A registry that wants a token says so with a 401 and a Bearer challenge
 * (realm, service). The token for (registry, "repository:NAME:pull") is
 * fetched once, by whichever worker needs it first while the others wait
 * on its flock, and kept in the database until it expires, for every
 * worker. What the registry wants (a challenge, or nothing) is remembered
 * per registry too, so a blob fetch, which cannot redo a 401 halfway,
 * starts with a token in hand.
 */
#ifndef LARDER_OCI_UP_H
#define LARDER_OCI_UP_H

#include "common/oci_auth.h"
#include "common/oci_ref.h"
#include "fcgi/worker.h"
#include "storage/fetch.h"

/* The longest manifest accepted (the cap; Docker Hub's too). */
#define OCI_UP_MAX_MANIFEST (4 << 20)

struct oci_up {
	const struct conf_registry *reg;
	char name[OCI_MAX_NAME + 16];       /* the upstream's name ("library/"
	                                       added where the registry wants it) */
	char scope[OCI_MAX_NAME + 32];      /* "repository:NAME:pull" */
	char auth[OCI_AUTH_MAX_TOKEN + 16]; /* "Bearer T", or "" */
	struct fetch_opts o;                /* o.auth points into auth */
};

/* Sets u up for repository name (as the client named it, without the
 * registry's prefix) of registry position ri, with the token the database
 * holds for it, if any. Returns 0, or ENAMETOOLONG. */
int oci_up_open(struct worker *w, int ri, const char *name, struct oci_up *u);

/* Writes the upstream URL "<upstream>v2/<name>/<what>" to out. Returns 0
 * or ENAMETOOLONG. */
int oci_up_url(const struct oci_up *u, const char *what, char *out, size_t len);

/* GETs (head: HEADs) url with the token, if any; on a 401 with a Bearer
 * challenge gets a token and asks once more. Returns what fetch_page()
 * does (r->status 401 when the registry still refuses). r->body is the
 * caller's to buf_free() in every case. */
int oci_up_page(struct worker *w, struct oci_up *u, const char *url,
                const char *accept, const char *etag, int head,
                struct fetch_page *r, char *err, size_t errlen);

/* Before a blob fetch: makes sure u carries a token when the registry
 * wants one; when nobody knows yet whether it does, a HEAD of url (a
 * HEAD costs no pull) finds out. forget drops the token held first (the
 * upstream refused it). Returns 0, or an errno with a reason in err
 * (EACCES: the registry or its token service refused). */
int oci_up_ready(struct worker *w, struct oci_up *u, const char *url,
                 int forget, char *err, size_t errlen);

#endif
