/* fetcher: fills the store from upstream, one detached process per miss,
 * and streams the growing temp file to every requester.
 *
 * The requester that claims a key (storage/flight.h) double-forks and execs
 * `larder _fetch`, handing it the locked temp file as fd 3. The fetcher
 * lives in its own session, so it finishes the download when the request,
 * the worker, or the CGI process is gone. It hashes what it writes and
 * publishes the blob only when the hash is the one the page promised; it
 * records the outcome and deletes its claim before it exits, which lets go
 * of the lock. Every requester, the first included, tails the temp file,
 * and holds back the last byte until the blob is committed, so a client
 * never receives a complete-looking wrong file.
 */
#ifndef LARDER_FETCHER_H
#define LARDER_FETCHER_H

#include "fcgi/req.h"
#include "fcgi/worker.h"

struct fetcher_want {
	const char *key;          /* flight key, e.g. "blob:<sha256>" */
	const char *index;        /* the cache index whose page listed it */
	const char *url;          /* upstream URL, from a page we cached */
	const char *expect;       /* sha256 the bytes must have, "" if none */
	long long size;           /* expected size, -1 unknown */
	const char *content_type;
};

/* Serves a missing blob to r by starting or following its fetch.
 * Returns 0 when a response was sent (complete, or aborted mid-body when
 * the fetch failed); EEXIST when the blob turned out to be in the store
 * and the caller should serve it (*sha256 names it); or an errno with a
 * one-line reason in err when nothing was sent. */
int fetcher_serve(struct worker *w, struct req *r,
		  const struct fetcher_want *want, char sha256[65], char *err,
		  size_t errlen);

/* `larder _fetch KEY INDEX URL EXPECT TMP SIZE`, with the locked temp file on
 * fd 3. Returns an exit status. */
int fetcher_main(const struct conf *c, int argc, char **argv);

#endif
