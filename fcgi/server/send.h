/* send: hands a stored blob to the client, the way the config says:
 * X-Accel-Redirect (nginx), X-Sendfile (lighttpd, Apache mod_xsendfile),
 * or streamed by larder itself with ETag, If-None-Match and single-range
 * Range support; a page's gzip'd copy to a client that accepts gzip. */
#ifndef LARDER_SEND_H
#define LARDER_SEND_H

#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* The Cache-Control of what a name can only ever mean one thing by: a
 * file by its hash, a manifest or blob by its digest. */
#define SEND_IMMUTABLE "public, max-age=31536000, immutable"
/* The same for an index that needs a token to read: kept by the client
 * alone, never by a shared cache. */
#define SEND_PRIVATE_IMMUTABLE "private, max-age=31536000, immutable"

/* The Cache-Control of a file of r's index: SEND_IMMUTABLE, or
 * SEND_PRIVATE_IMMUTABLE when r->private_index. */
const char *send_immutable(const struct req *r);

struct send_opts {
	const char *content_type;
	const char *cache_control;  /* NULL: none (on a private_index
	                               request: "private", and
	                               SEND_IMMUTABLE becomes
	                               SEND_PRIVATE_IMMUTABLE) */
	long long expires;          /* unix seconds for Expires, 0: none */
	int front_cache;            /* and X-Accel-Expires for nginx's cache,
	                               which keeps an answer through the
	                               second its expiry names (none: 0) */
	int vary_accept;            /* add Vary: Accept */
	int gzip;                   /* a page: its gzip'd copy (storage/
	                               blob.h) goes, Content-Encoding: gzip,
	                               to a client that accepts gzip, with
	                               ETag "<sha>-gz"; Vary names
	                               Accept-Encoding. With nginx, its
	                               gzip_static picks the copy. */
	int inline_body;            /* send the bytes, whatever sendfile says
	                               (the web server caches the answer) */
	int whole;                  /* never a 304: a cache in front that
	                               revalidates would keep its own copy's
	                               headers (a stale page goes out whole) */
	long long size;             /* the blob's size when the caller knows
	                               it (have_size), for the log and the
	                               metrics of a blob the web server sends */
	int have_size;
	int front_small;            /* a small immutable file (fcgi/pypi's
	                               files behind conf/nginx.conf's page
	                               cache): when larder sends its bytes
	                               itself (under 24 KiB with
	                               x-accel-redirect), a GET's whole answer
	                               says X-Accel-Expires front_until, so
	                               nginx keeps it; every other answer
	                               (a HEAD, a range, one that needed a
	                               token, a bigger file, front_until past)
	                               says X-Accel-Expires 0 */
	long long front_until;      /* the last unix second nginx may keep it
	                               (0: not at all) */
	int front_head;             /* with front_small or front_cache, a
	                               HEAD's answer is kept too: only where
	                               the web server keys a HEAD apart from
	                               a GET (a registry's blob or manifest
	                               by tag behind conf/nginx.conf, which
	                               says LARDER_HEAD_KEYED) */
	long long inline_under;     /* a HEAD, or a body of fewer bytes than
	                               this, is sent by larder itself: nginx
	                               closes its FastCGI connection after
	                               every X-Accel-Redirect, which costs a
	                               small answer more than its bytes do
	                               (0: the sendfile mode decides; with
	                               x-accel-redirect larder sends a HEAD
	                               and anything under 24 KiB itself
	                               whatever this says) */
};

/* Returns 1 when blob sha256 is in the store, else 0; marks it used first,
 * so that the collector (storage/gc.h), which looks at the use before it
 * evicts, spares a blob a request was just told exists. Call it rather
 * than blob_exists() before send_blob(). */
int send_stored(struct worker *w, const char *sha256);

/* Sends blob sha256 as the response to r. Returns 0 when a response was
 * sent, or an errno (ENOENT when the blob is missing) with nothing sent. */
int send_blob(struct worker *w, struct req *r, const char *sha256,
	      const struct send_opts *o);

/* Parses a single "bytes=a-b", "bytes=a-" or "bytes=-n" range against
 * size. Returns 1 with [*from, *to] set, 0 to ignore the header (absent,
 * malformed or multi-range), -1 when unsatisfiable (past the end, or
 * reversed: b < a). */
int send_parse_range(const char *h, long long size, long long *from,
		     long long *to);

#endif
