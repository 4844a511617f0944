/* oci_refs: what a registry's names point at, cached: manifests by tag
 * and by digest, tag lists, referrers lists.
 *
 * Each is a row (storage/db/db.h, oci_refs) naming a blob that holds the
 * body byte for byte. A row by digest never goes stale; the others are
 * fresh for the registry's cache_ttl, then refreshed through the same
 * single-flight gate as pages (fcgi/pypi/pages.c): a burst costs the upstream
 * one request, a tag is revalidated with a HEAD that compares only the
 * digest, and a stale row is served for max_stale past its freshness
 * while the upstream fails.
 */
#ifndef LARDER_OCI_REFS_H
#define LARDER_OCI_REFS_H

#include "fcgi/oci/up.h"
#include "fcgi/server/worker.h"
#include "storage/db/db.h"

#define OCI_JSON_TYPE  "application/json"
#define OCI_INDEX_TYPE "application/vnd.oci.image.index.v1+json"

/* What to fetch for a row, and how. */
struct oci_ref_want {
	const char *ref;     /* the row's key: a tag, a digest,
	                        "/tags/list?..." or "/referrers/..." */
	char url[2400];      /* upstream */
	char fallback[2400]; /* referrers: the tag schema's URL, or "";
	                        when neither has it, an empty index */
	const char *accept;
	const char *expect;     /* hex the body must hash to, "" none */
	int immutable;          /* by digest: never revalidated */
	int head_check;         /* a tag: revalidated by HEAD and digest */
	int manifest;           /* the body is a manifest: checked against
	                           Docker-Content-Digest, its blobs noted */
	const char *media_type; /* stored Content-Type; NULL: upstream's */
	const char *artifact_type; /* referrers: keep only these ("" all) */
	int tag_list;             /* the body is a tag list: its pages are
	                             followed and kept as one, sorted */
};

/* Makes q's row for repository up of registry reg usable; *cache says how
 * (HIT, MISS, REVALIDATED, STALE). Returns 0 (row holds a 200 whose body
 * is in the store), ENOENT (the upstream has no such thing), or an errno
 * with a reason in err: EACCES (the upstream refused larder), EBUSY (it
 * said 429), EBADMSG (it sent other bytes than the digest names),
 * ETIMEDOUT, or another. */
int oci_ref_get(struct worker *w, const struct conf_registry *reg,
                struct oci_up *up, const struct oci_ref_want *q,
                struct db_oci_ref *row, const char **cache, char *err,
                size_t errlen);

#endif
