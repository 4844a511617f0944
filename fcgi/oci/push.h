/* oci_push: the push side of the OCI distribution API (spec 1.1) for a
 * hosted registry ([registry] type = hosted), and the pull side of what
 * was pushed.
 *
 * Blob uploads stream to a temp file in DATA/tmp (bounded memory), named
 * by a session row (storage/db/db.h oci_uploads) that expires upload_ttl
 * after its last request; a blob is verified against its digest before it
 * is committed to the shared store, and recorded in oci_blobs for the
 * repository. Manifests are validated (common/oci/manifest.h), must name
 * only blobs and manifests the repository holds, and are stored by digest
 * with the tag moved in oci_refs. Every push needs a token with the push
 * action for the registry and repository (fcgi/oci/access.h).
 */
#ifndef LARDER_OCI_PUSH_H
#define LARDER_OCI_PUSH_H

#include "common/oci/ref.h"
#include "common/oci/upload.h"
#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"
#include "storage/db/db.h"

/* The layer of virtual registry ri that serves repository repo: for a
 * push, its first hosted layer; for a pull, the first hosted layer that
 * holds the repository (a pushed name shadows the upstream's), else its
 * first cache layer, else its first hosted one. Any other registry is
 * its own. Returns a position in conf->registry, or -1. */
int oci_virtual_pick(struct worker *w, int ri, const char *repo, int push);

/* Forgets the upload sessions untouched for their registry's upload_ttl
 * and removes their temp files (when a session opens, and in larder gc).
 * Returns how many went. */
long oci_push_expire(const struct conf *c, struct db *db);

/* Answers a request oci_push_claims() took. */
void oci_push_serve(struct worker *w, struct req *r);


#endif
