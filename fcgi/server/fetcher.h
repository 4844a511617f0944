/* fetcher: answers a request for a file the store does not have yet.
 *
 * The first requester claims the fetch (storage/flight.h) and runs it in
 * its own process (storage/fill.h), on the worker's kept upstream
 * connections, handing the bytes to its client as they arrive without
 * letting a slow client hold up the download; it finishes the fetch even
 * when its client goes away. Every other requester, in any process, reads
 * the growing temp file (storage/tail.h). Nobody's client gets the last
 * byte before the bytes are verified, and the response only starts once
 * the upstream has answered, so an upstream that fails at once is a 502
 * with its reason. A CGI process, which the web server may kill once its
 * client is gone, forks (no exec: the config and options are this
 * process's) and lets the child own the fetch while it follows.
 */
#ifndef LARDER_FETCHER_H
#define LARDER_FETCHER_H

#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

struct fetcher_want {
	const char *key;          /* flight key (flight_key) */
	const struct fetch_opts *opts; /* how to fetch it: timeouts, the
	                             hosts redirects may go to, credentials */
	const char *url;          /* upstream URL, from a page we cached or a
	                             registry's own */
	const char *expect;       /* sha256 the bytes must have, "" if none */
	long long size;           /* expected size, -1 unknown */
	const char *content_type;
	const char *meta_of;      /* for a .metadata without a promised hash:
	                             the file whose metadata hash to record,
	                             as provisional (served without ETag,
	                             short-lived, X-Larder-Metadata:
	                             provisional) */
	/* when not NULL: called by the process that fetched the blob, with
	 * its database, once the blob is in the store (what the caller
	 * records of it must not depend on a client that may be gone) */
	void (*stored)(struct db *db, const char *sha256, long long size,
	               void *ctx);
	void *ctx;
};

/* Serves a missing blob to r by starting or following its fetch.
 * Returns 0 when a response was sent (complete, or aborted mid-body when
 * the fetch failed); EEXIST when the blob turned out to be in the store
 * and the caller should serve it (*sha256 names it); or an errno with a
 * one-line reason in err when nothing was sent. */
int fetcher_serve(struct worker *w, struct req *r,
		  const struct fetcher_want *want, char sha256[65], char *err,
		  size_t errlen);

#endif
