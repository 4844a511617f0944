/* listing: a file that no page this node fetched lists.
 *
 * Behind a load balancer that hashes on the path (docs/scaling.md), the
 * page of a project and the files it lists land on different nodes: the
 * node a file request reaches may never have fetched the page that lists
 * it. Such a node fetches that page itself, through the normal path
 * (pages_get(), single-flighted), and looks again; only what the page
 * really lists is then served.
 */
#ifndef LARDER_LISTING_H
#define LARDER_LISTING_H

#include <stddef.h>

#include "fcgi/server/worker.h"
#include "storage/db/db.h"

/* A page this node holds that does not list a file a client names is
 * revalidated when it was fetched at least this many seconds ago (the
 * file may be newer than it: a release another node has seen already),
 * so a stream of requests for files no page lists costs upstream one
 * conditional request per project in this time at most. */
#define LISTING_RECHECK 10

/* For a file (sha256, filename) that pypi_find_file() found no listing of
 * in the index at position idx: fetches the page of the project its name
 * says (token_file_project(), the project a read token was checked
 * against), and looks again. On 0, *f is the listing and *from the
 * position of the cache or hosted index that holds it, as
 * pypi_find_file() returns. Returns ENOENT when the name says no project
 * or that page (now, or as held here and fetched less than
 * LISTING_RECHECK ago) does not list the file, or the index is offline
 * and has no copy of the page; or another errno with a one-line reason in
 * err when the page could not be had. */
int listing_fetch(struct worker *w, int idx, const char *sha256,
		  const char *filename, struct db_file *f, int *from,
		  char *err, size_t errlen);

#endif
