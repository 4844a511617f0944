/* oci: the pull side of the OCI distribution API under /v2/, as a
 * pull-through cache of the configured registries.
 *
 * The first component of a name picks the registry ("/v2/hub/library/
 * alpine/..." is registry "hub"); names no registry claims go to the one
 * with default = yes. Manifests are stored byte for byte, named by the
 * sha256 of their bytes; a tag (and a tag list, a referrers list) is fresh
 * for the registry's cache_ttl, then revalidated (a HEAD for a tag: only
 * the digest is compared), and served stale for up to max_stale while the
 * upstream fails. Blobs go through the same claim, fill and store as
 * package files (fcgi/server/fetcher.h), verified against their digest.
 */
#ifndef LARDER_OCI_H
#define LARDER_OCI_H

#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* Answers a request whose path starts with "/v2". */
void oci_serve(struct worker *w, struct req *r);

/* Answers r with the spec's error body ({"errors": [{code, message}]}),
 * status and Cache-Control: no-store; a message naming an upstream URL is
 * shown without its credentials (url_redact). Once the response has
 * started, aborts it instead. */
void oci_fail(struct req *r, int status, const char *code,
              const char *message);

#endif
