/* virtual: the pages and files of a virtual index, merged from its layers
 * as its policy says (docs/hosting.md).
 *
 * The layers are flattened depth-first into leaves (cache and hosted
 * indexes; a virtual layer contributes its own leaves, each leaf once).
 * The outer index's policy and protected_names pick the leaves a project
 * may come from; each of them answers its page as it would alone (a cache
 * leaf fetches or revalidates through the single-flight gate). One leaf
 * with the page: its row is the answer, at no cost. Several: their JSON
 * renderings are merged (common/pypi/simple_merge.h) and stored as the virtual
 * index's own page row, whose etag names the sources ("v:" and a sha256 of
 * the leaves' renderings), so the next request with the same sources is a
 * lookup, not a merge.
 */
#ifndef LARDER_VIRTUAL_H
#define LARDER_VIRTUAL_H

#include <stddef.h>

#include "fcgi/server/worker.h"
#include "storage/db/db.h"

/* Finds the page of project ("" the project list) of the virtual index at
 * position idx, as pages_get() does (same returns, *p and *cache); may_skip
 * as for a cache index: the caller could answer without it. A leaf that
 * fails while another has the page is left out (with a warning) and the
 * answer is stale at once (fetched_at now, ttl 0: no cache keeps it); when every allowed leaf fails the first error
 * is returned with its reason in err. */
int virtual_get(struct worker *w, int idx, const char *project, int may_skip,
		struct db_page *p, const char **cache, char *err,
		size_t errlen);

/* Finds the listing of (sha256, filename) among the leaves of the virtual
 * index idx that its policy lets serve the file's project (the file name
 * says which: a file of a protected name, or of a project a hosted leaf
 * has under private-first, never comes from a cache leaf). Returns the
 * position of that leaf, with its listing in *f, or -1. */
int virtual_find_file(struct worker *w, int idx, const char *sha256,
		      const char *filename, struct db_file *f);

/* Forgets the virtual index idx's own merged page of project when one of
 * its renderings is missing from the store (the next request merges
 * again). */
void virtual_forget_missing(struct worker *w, int idx, const char *project);

#endif
