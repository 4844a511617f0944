/* fetch: HTTP requests to upstreams (libcurl), for pages and files.
 *
 * One easy handle per process, made on first use (after fork) and kept for
 * the life of the process: its connections to every upstream host stay
 * open between requests (keep-alive), with TLS sessions reused and HTTP/2
 * where the upstream offers it, so a miss costs no new connection once a
 * worker has talked to that host. Redirects are followed by hand, and only
 * to hosts the index trusts. Transient failures (connection refused or
 * reset, timeouts, 5xx, 429) are retried with backoff; an interrupted file
 * download resumes with a Range request, so the bytes already written (and
 * already streamed to clients) are the ones the hash covers.
 */
#ifndef LARDER_FETCH_H
#define LARDER_FETCH_H

#include <stddef.h>

#include "common/buf.h"

/* The longest URL fetched, redirects included (a CDN's presigned URL with
 * a session token runs to a few KiB). */
#define FETCH_URL_MAX 8192

struct fetch_opts {
	long connect_timeout;     /* seconds */
	long first_byte_timeout;  /* seconds from connect to the answer */
	long idle_timeout;        /* seconds without a byte */
	long retries;             /* extra tries after a transient failure */
	size_t max_body;          /* pages: larger is E2BIG */
	const char *trust_base;   /* redirects may go to this URL's host... */
	const char *trusted;      /* ...or these space-separated hosts
	                             (url_host_trusted); with trust_base NULL,
	                             nowhere: every redirect is refused */
	const char *auth;         /* NULL, or an Authorization value ("Bearer
	                             T") sent to trust_base's origin only: never
	                             to a host a redirect leads to (a CDN's
	                             signed URL fails with one) */
};

/* The longest a healthy fetch with options o may go without writing a
 * byte: every try's connect and first-byte timeouts, the idle timeout,
 * and the backoff between tries. Whoever follows a fetch waits this long
 * before calling it stalled. */
long fetch_max_silence(const struct fetch_opts *o);

/* Whether a fetch that failed with err says its host is unwell (cannot be
 * resolved or reached, or connected but never answered), rather than
 * something about the one thing fetched (an error status, a bad body:
 * a CDN can fail one object and serve the rest). */
int fetch_unwell(int err);

/* In a child of fork(): forgets the parent's handle without touching its
 * connections (they are the parent's), so the next fetch makes a new one. */
void fetch_forget(void);

struct fetch_page {
	long status;            /* HTTP status */
	struct buf body;        /* initialised by fetch_page(); caller frees */
	char etag[256];
	char last_modified[64];
	char content_type[128];
	long max_age;           /* from Cache-Control, else Expires - Date;
	                           -1 when absent */
	int no_store;           /* Cache-Control no-store / no-cache */
	long retry_after;       /* seconds, -1 when absent */
	char url[FETCH_URL_MAX]; /* the URL that answered (after redirects) */
	char digest[80];        /* Docker-Content-Digest, "" when absent */
	char authenticate[512]; /* WWW-Authenticate, "" when absent */
	char link[1024];        /* Link, "" when absent */
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

/* As fetch_page(), with HEAD: the headers only (r->body stays empty). */
int fetch_page_head(const struct fetch_opts *o, const char *url,
		    const char *accept, struct fetch_page *r, char *err,
		    size_t errlen);

/* What a file download tells its caller as it goes. */
struct fetch_hooks {
	/* once the total size is known (from the upstream's answer) */
	void (*size)(long long size, void *ctx);
	/* after each piece is written to the file: bytes in it so far */
	void (*progress)(long long written, void *ctx);
	void *ctx;
};

/* GETs url into fd (empty, at offset 0), hashing as it goes; the hex
 * digest goes to sha256. size is what the file must be (-1 unknown): a
 * byte past it, or a Content-Length that disagrees, is refused at once.
 * hooks may be NULL. Returns 0 after a complete
 * download, else an errno with a reason in err: ENODATA when upstream
 * answered 404 or 410, EACCES for 401 or 403, EPROTO for another HTTP
 * error status, EIO for a short or broken body, EPERM for an untrusted redirect,
 * EREMOTEIO for a 5xx or 429 that outlasted the retries, ETIMEDOUT,
 * ECONNREFUSED, EHOSTUNREACH, ENOSPC or another write error
 * (after which fd is truncated to nothing, so that a full disk gets its
 * space back even while others hold the file open). */
int fetch_file(const struct fetch_opts *o, const char *url, long long size,
	       int fd, const struct fetch_hooks *hooks, char sha256[65],
	       char *err, size_t errlen);

/* HEADs url (following trusted redirects, retrying transient failures)
 * for the size of what a GET would send. Returns 0 with *size (-1 when
 * upstream did not say), or an errno with a reason in err as fetch_file
 * (ENODATA, EACCES, EPROTO for error statuses). */
int fetch_head(const struct fetch_opts *o, const char *url, long long *size,
	       char *err, size_t errlen);

#endif
