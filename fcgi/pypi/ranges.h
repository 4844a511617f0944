/* ranges: what larder knows of an upstream's Range support, and a Range
 * on a file the store does not have (pip's lazy wheels and uv ask for
 * tails of wheels so): answered 206 from the bytes of the fetch under way
 * when they are in its temp file, else relayed as a small range GET
 * (storage/fetch_range.h), never with a 200 or a second whole download.
 * An upstream that ignores Range is remembered for a day (the outcomes
 * table, key "norange:<origin>"); for it, and for a range too long to
 * relay, the whole file is fetched into the store once, as an install
 * would, and the range served from there. Relayed bytes (and those of a
 * download not yet verified) go out with Cache-Control: no-store and no
 * ETag: nobody has verified them. A range that covers the whole file is
 * the whole file: fetched, verified and stored before any of it goes out.
 */
#ifndef LARDER_RANGES_H
#define LARDER_RANGES_H

#include "fcgi/server/fetcher.h"
#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"
#include "storage/db/db.h"

/* Whether the host of url is remembered to ignore Range. */
int ranges_ignored(struct worker *w, const char *url);

/* Remembers, for a day, that the host of url ignores Range (reason: how
 * that showed). */
void ranges_ignore(struct worker *w, const char *url, const char *reason);

/* Answers r when it carries a single Range header for the file (sha256,
 * listed as f by the cache index at position from, fetched as want says)
 * that the store lacks: a 206, or a 416 for a range past its end. Returns
 * 1 when r was answered, 0 when r has no range to honour (the caller
 * serves the whole file). */
int ranges_serve_cold(struct worker *w, struct req *r, int from,
		      const struct db_file *f, const char *sha256,
		      const struct fetcher_want *want);

#endif
