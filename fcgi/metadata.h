/* metadata: the PEP 658 core metadata of a file an index lists, made
 * available in the store without a client waiting on it: what a JSON API
 * page's "info" is read from, and what a prefetch warms.
 */
#ifndef LARDER_METADATA_H
#define LARDER_METADATA_H

#include <stddef.h>

#include "fcgi/worker.h"

/* Makes the core metadata of the file (sha256, filename), as listed by the
 * index at position idx (any type: a virtual index's policy picks the
 * leaf), available in the store, fetching it through the single-flight
 * gate as a client's request for the .metadata would. Sends nothing to
 * any client. Returns 0 with meta_sha naming the stored blob; ENOENT
 * when no page of the index lists the file or no metadata can be had for
 * it; or another errno with a one-line reason in err. */
int metadata_ensure(struct worker *w, int idx, const char *sha256,
		    const char *filename, char meta_sha[65], char *err,
		    size_t errlen);

#endif
