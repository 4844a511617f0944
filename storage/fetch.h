/* fetch: HTTP requests to upstreams (libcurl), for pages and files.
 *
 * One easy handle per process, made on first use (after fork) and kept, so
 * connections to an upstream are reused across requests.
 */
#ifndef LARDER_FETCH_H
#define LARDER_FETCH_H

#include <stddef.h>

#include "common/buf.h"

struct fetch_opts {
	long connect_timeout;   /* seconds */
	long idle_timeout;      /* seconds without a byte */
	size_t max_body;        /* pages: larger is E2BIG */
};

struct fetch_page {
	long status;            /* HTTP status */
	struct buf body;        /* initialised by fetch_page(); caller frees */
	char etag[256];
	char last_modified[64];
	char content_type[128];
	long max_age;           /* from Cache-Control, -1 when absent */
	int no_store;           /* Cache-Control no-store / no-cache */
	char url[2048];         /* effective URL (after redirects) */
};

/* GETs a page with the given Accept and, when not NULL/"", If-None-Match
 * and If-Modified-Since. Returns 0 when an HTTP response arrived (any
 * status; r->status says which), else an errno (ETIMEDOUT, ECONNREFUSED,
 * E2BIG over max_body, EIO) with a one-line reason in err. r->body is the
 * caller's to buf_free() in every case. */
int fetch_page(const struct fetch_opts *o, const char *url,
	       const char *accept, const char *etag,
	       const char *last_modified, struct fetch_page *r, char *err,
	       size_t errlen);

/* Called once the size of a file download is known (from Content-Length). */
typedef void fetch_size_fn(long long size, void *ctx);

/* GETs url into fd, hashing as it goes; the hex digest goes to sha256.
 * Returns 0 after a complete 200 response, else an errno with a reason in
 * err: EPROTO for an HTTP error status, EIO for a short or broken body,
 * ETIMEDOUT, ECONNREFUSED, ENOSPC or another write error. */
int fetch_file(const struct fetch_opts *o, const char *url, int fd,
	       fetch_size_fn *on_size, void *ctx, char sha256[65], char *err,
	       size_t errlen);

#endif
