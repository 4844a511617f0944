/* worker: one single-threaded process answering requests, as a FastCGI
 * worker (its own accept loop) or a CGI program (one request). Everything
 * it shares with other workers goes through the data directory. */
#ifndef LARDER_WORKER_H
#define LARDER_WORKER_H

#include "common/conf.h"
#include "fcgi/req.h"
#include "storage/db.h"
#include "storage/fetch.h"

struct worker {
	const struct conf *conf;
	struct db *db;          /* opened in this process, after fork */
	struct fetch_opts fetch;
	int cgi;
};

/* Sets up w for this process: data directory layout and the database.
 * Returns 0 or an errno (logged). */
int worker_open(struct worker *w, const struct conf *c, int cgi);

/* Fills o from the config, for fetches on behalf of the cache index at
 * position idx (redirects only to its upstream's and trusted hosts), or
 * of no index when idx is -1. */
void worker_fetch_opts(const struct conf *c, int idx, struct fetch_opts *o);

/* Releases what worker_open() made. */
void worker_close(struct worker *w);

/* Answers one request. */
void worker_handle(struct worker *w, struct req *r);

/* Runs the FastCGI accept loop on listen_fd until max_requests (0: no
 * limit), SIGTERM, or an accept error. Returns an exit status. Only a
 * worker whose socket outlives it (`larder serve' keeps it) may recycle
 * itself: one spawned by a web server owns its socket, and exiting would
 * reset the connections queued on it. */
int worker_fcgi(const struct conf *c, int listen_fd, long max_requests);

/* Answers the one CGI request in the environment. Returns an exit status. */
int worker_cgi(const struct conf *c);

#endif
