/* prefetch: the pages of a wheel's dependencies, fetched once its metadata
 * is answered, before the installer asks for them.
 *
 * When a .metadata of a cache (or virtual) index is answered, or a wheel
 * is fetched and verified, its Requires-Dist names the projects the
 * installer reads next (coremeta_requires(): 16 at most, none whose
 * marker names an extra). Once the answer is out, each page that is not
 * fresh here is fetched through pages_get() as a client's request would
 * (so a client asking for it meanwhile joins that one fetch), taking one
 * of prefetch_max slots shared by every worker of the data directory (a
 * lock on DATA/prefetch/slot-K, which dies with its process): no slot
 * free, no prefetch. Pages only, never a file; one level deep (a page a
 * prefetch fetched prefetches nothing); nothing for an offline index, and
 * nothing in CGI mode. A prefetched page is marked in its row until a
 * client asks for it (counted then as used).
 */
#ifndef LARDER_PREFETCH_H
#define LARDER_PREFETCH_H

#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* After r, a request for the .metadata of (sha256, filename) as listed by
 * the index at position idx (the route's), or for that wheel itself, was
 * answered: notes in the process's deps (fcgi/pypi/proc.h), for
 * prefetch_run(), the projects its
 * metadata requires whose pages are not fresh here (pages_wanted(); a
 * fresh one is counted as skipped). A wheel counts only when r fetched it
 * (a MISS: stored and verified now). Reads the stored metadata and page
 * rows; asks no one. The deps' index is -1 when there is nothing to
 * fetch, so that the caller need not let the connection go. */
void prefetch_note(struct worker *w, const struct req *r, int idx,
		   const char *sha256, const char *filename, int metadata);

/* Once the answer is out: fetches the pages the process's deps name that
 * are not fresh here, each in a free slot, and clears the deps. */
void prefetch_run(struct worker *w);

#endif
