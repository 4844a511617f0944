/* fetch: HTTP requests to upstreams (libcurl), for pages and files.
 *
 * One easy handle per process, made on first use (after fork) and kept, so
 * connections to an upstream are reused across requests. Redirects are
 * followed by hand, and only to hosts the index trusts. Transient failures
 * (connection refused or reset, timeouts, 5xx, 429) are retried with
 * backoff; an interrupted file download resumes with a Range request, so
 * the bytes already written (and already streamed to clients) are the ones
 * the hash covers.
 */
#ifndef LARDER_FETCH_H
#define LARDER_FETCH_H

#include <stddef.h>

#include "common/buf.h"

struct fetch_opts {
	long connect_timeout;     /* seconds */
	long first_byte_timeout;  /* seconds from connect to the answer */
	long idle_timeout;        /* seconds without a byte */
	long retries;             /* extra tries after a transient failure */
	size_t max_body;          /* pages: larger is E2BIG */
	const char *trust_base;   /* redirects may go to this URL's host... */
	const char *trusted;      /* ...or these space-separated hosts; with
	                             trust_base NULL any http(s) host */
};

struct fetch_page {
	long status;            /* HTTP status */
	struct buf body;        /* initialised by fetch_page(); caller frees */
	char etag[256];
	char last_modified[64];
	char content_type[128];
	long max_age;           /* from Cache-Control, -1 when absent */
	int no_store;           /* Cache-Control no-store / no-cache */
	long retry_after;       /* seconds, -1 when absent */
	char url[2048];         /* the URL that answered (after redirects) */
};

/* GETs a page with the given Accept and, when not NULL/"", If-None-Match
 * and If-Modified-Since. Returns 0 when an HTTP response arrived (any
 * status but a transient one that kept failing; r->status says which),
 * else an errno (ETIMEDOUT, ECONNREFUSED, E2BIG over max_body, EPERM for a
 * redirect to an untrusted host, EIO) with a one-line reason in err.
 * r->body is the caller's to buf_free() in every case. */
int fetch_page(const struct fetch_opts *o, const char *url,
	       const char *accept, const char *etag,
	       const char *last_modified, struct fetch_page *r, char *err,
	       size_t errlen);

/* Called once the total size of a file download is known. */
typedef void fetch_size_fn(long long size, void *ctx);

/* GETs url into fd (empty, at offset 0), hashing as it goes; the hex
 * digest goes to sha256. Returns 0 after a complete download, else an
 * errno with a reason in err: EPROTO for an HTTP error status, EIO for a
 * short or broken body, EPERM for an untrusted redirect, ETIMEDOUT,
 * ECONNREFUSED, ENOSPC or another write error (after which fd is
 * truncated to nothing, so that a full disk gets its space back even while
 * others hold the file open). */
int fetch_file(const struct fetch_opts *o, const char *url, int fd,
	       fetch_size_fn *on_size, void *ctx, char sha256[65], char *err,
	       size_t errlen);

#endif
