/* pages: cached simple pages, kept fresh from upstream.
 *
 * A page is fresh for min(cache_ttl, upstream max-age) after it was
 * fetched (an upstream's Expires - Date when it sends no max-age, as
 * another larder does); then it is revalidated (If-None-Match /
 * If-Modified-Since, a 304 renews it); when upstream fails it is served
 * stale for up to max_stale. An upstream 404 is remembered for
 * negative_ttl. Refreshes go through a single-flight gate, so a burst for
 * one stale page costs one upstream request. Renderings are stored as
 * blobs, so a warm page is a lookup.
 */
#ifndef LARDER_PAGES_H
#define LARDER_PAGES_H

#include <stddef.h>

#include "common/buf.h"
#include "fcgi/server/worker.h"
#include "storage/db/db.h"

/* Finds the page of project ("" for the project list) in the index at
 * position idx: a cache index's, fetched or revalidated as needed; a
 * hosted index's own; a virtual index's, merged from its layers as its
 * policy says (fcgi/pypi/virtual.h). On 0, *p is the page (status 200; its
 * fetched_at + ttl is when it goes stale) and *cache is "HIT", "MISS",
 * "STALE" or "REVALIDATED". Returns ENOENT when no (allowed) layer has
 * it, or another errno with a one-line reason in err when upstream failed
 * (now, or within error_ttl: EREMOTEIO) and no stale copy may be served. */
int pages_get(struct worker *w, int idx, const char *project,
	      struct db_page *p, const char **cache, char *err,
	      size_t errlen);

/* As pages_get(), for a cache or hosted index only (EINVAL otherwise):
 * what a virtual index asks each of its leaves. may_skip says the caller
 * could answer without this page (another leaf may have it), so it waits
 * on another process's refresh a second at most. */
int pages_get_leaf(struct worker *w, int idx, const char *project,
		   int may_skip, struct db_page *p, const char **cache,
		   char *err, size_t errlen);

/* Notes the renderings of old that p does not use as garbage, for
 * gc_collect_replaced() (inside the caller's transaction). Returns 0 or EIO. */
int pages_note_replaced(struct worker *w, const struct db_page *old,
			const struct db_page *p, long long now);

/* Inside the write transaction that is to name them (the page row),
 * makes sure the renderings json and html of p, put before it took the
 * lock, are still in the store: a collector that deleted one in between
 * (it decides and unlinks under the same lock) has it put again
 * (blob_keep_page; *js and *hs are updated then). Records their use now.
 * Returns 0 or an errno. */
int pages_keep_renderings(struct worker *w, const struct buf *json,
			  const struct buf *html, const struct db_page *p,
			  long long *js, long long *hs);

/* Makes the gzip'd copies of the renderings that page fetches stored
 * while the process's copies.can_defer was set (fcgi/pypi/proc.h): called
 * once the answer is out, so a cold page is not held by deflating and
 * syncing them; that answer went out plain. A copy goes into the store
 * and into its blob's size under the collectors' lock, made from the
 * stored blob held to its name (blob_gz_prepare). Clears the list. */
void pages_make_copies(struct worker *w);

/* Whether blob sha256 is a rendering whose copy pages_make_copies() is to
 * make: its answer is not one for the web server's cache to keep for a
 * client that takes gzip. */
int pages_copy_pending(const char *sha256);

/* What a prefetch of a page would do (pages_wanted()). */
enum pages_want {
	PAGES_FRESH,   /* nothing: it is fresh here (or a hosted index's) */
	PAGES_OFFLINE, /* nothing: every cache index it would come from is
	                  offline */
	PAGES_WANTED,  /* fetch it: some cache index it may come from has no
	                  fresh copy */
};

/* Whether the page of project in the index at position idx is worth
 * fetching ahead of a client: for a virtual index, whether any of its
 * layers' is (its policy decides, when it is fetched, which are asked).
 * Asks no one. */
enum pages_want pages_wanted(struct worker *w, int idx, const char *project);

/* Forgets the page of project in idx and its layers whose renderings are
 * missing from the store, so that the next pages_get() fetches (a cache
 * index) or merges (a virtual one) it again: a missing rendering is a
 * miss, never a 500. */
void pages_forget_missing(struct worker *w, int idx, const char *project);

/* Refreshes the page that pages_get() answered stale within
 * stale_while_revalidate (the process's revalidate, fcgi/pypi/proc.h),
 * once that answer is out: unless another process is refreshing it
 * already, or did. Clears it. */
void pages_revalidate(struct worker *w);

#endif
