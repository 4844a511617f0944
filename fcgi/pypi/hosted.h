/* hosted: the files uploaded to a hosted index, and its pages.
 *
 * A hosted index's pages are rows of the pages table like a cache index's,
 * rendered again, in the transaction that changes the files, on every
 * upload, yank, unyank and removal: so a warm hosted page costs what a
 * warm cache page does. The rows are always current; to the outside they
 * are fresh for HOSTED_FRESH, and never evicted (storage/db/db_blob.c). Its files are listed in the
 * files table with no upstream URL: the store holds the only copy, which
 * eviction never takes (storage/db/db_blob.c).
 */
#ifndef LARDER_HOSTED_H
#define LARDER_HOSTED_H

#include <stddef.h>

#include "common/http/route.h"
#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"
#include "storage/db/db.h"

/* How long a client or the web server may keep a hosted page without
 * asking again (seconds): an upload is visible everywhere after that. */
#define HOSTED_FRESH 1

/* Renders the page of project ("" for the project list) of the hosted
 * index at position idx from its rows again, and the project list with
 * it, in a transaction of its own: for a page whose rendering or row went
 * missing. Returns 0, or
 * an errno with a one-line reason in err. */
int hosted_render(struct worker *w, int idx, const char *project, char *err,
		  size_t errlen);

/* Whether filename is in the hosted index at position idx already, with
 * other bytes than sha256, on an index that is not volatile (where it
 * cannot be replaced): then the reason is in err. */
int hosted_conflicts(struct worker *w, int idx, const char *filename,
		     const char *sha256, char *err, size_t errlen);

/* The bytes of an upload, stored before its publish: hosted_publish
 * stores them again when a collector took them in between. */
struct hosted_bytes {
	int fd;           /* open on the file's bytes (h->sha256) */
	const void *meta; /* its core metadata (h->meta_sha), or NULL */
	size_t meta_len;
};

/* Publishes h, whose file (and core metadata, when h->meta_sha is set) is
 * in the store already, in the hosted index at position idx: its row, its
 * listing, and its project's page and the project list rendered again, in
 * one transaction, which first makes sure the bytes are still in the
 * store (from b: a collector decides and unlinks under the same lock, so
 * they stay). The same file name with the same bytes changes nothing
 * (*changed 0); with other bytes it replaces the file on a volatile index
 * and is EEXIST on any other. Returns 0, EEXIST, or an errno, with a
 * one-line reason in err. */
int hosted_publish(struct worker *w, int idx, const struct db_hosted *h,
		   const struct hosted_bytes *b, int *changed, char *err,
		   size_t errlen);

/* Yanks (yanked 1, with reason, which may be "") or unyanks every file of
 * project's version in the hosted index at position idx. Returns 0, ENOENT
 * when there is no such release, or an errno, with a reason in err. */
int hosted_yank(struct worker *w, int idx, const char *project,
		const char *version, int yanked, const char *reason, char *err,
		size_t errlen);

/* Removes a file (filename) or, with filename "", every file of project's
 * version from the hosted index at position idx. Returns 0, ENOENT, or an
 * errno, with a reason in err. The blobs become garbage, collected after
 * gc_grace unless something else names them. */
int hosted_remove(struct worker *w, int idx, const char *project,
		  const char *version, const char *filename, char *err,
		  size_t errlen);

/* The hosted index an upload or release change addressed to the index at
 * position idx acts on: idx itself when it is hosted, the first hosted
 * layer (depth-first) of a virtual one, else -1. */
int hosted_target(const struct conf *c, int idx);

/* Answers POST .../+yank/..., .../+unyank/... and DELETE .../+release/...
 * (routes ROUTE_YANK, ROUTE_UNYANK, ROUTE_REMOVE) for a token holder. */
void hosted_serve(struct worker *w, struct req *r, const struct route *rt);

#endif
