/* worker: what every handler is given. One single-threaded process
 * answering requests, as a FastCGI worker or a CGI program; everything it
 * shares with other workers goes through the data directory. Handlers
 * include this header, never the loops that call them (fcgi/server/loop.h). */
#ifndef LARDER_WORKER_H
#define LARDER_WORKER_H

#include "common/conf/conf.h"
#include "fcgi/server/conn.h"
#include "storage/db/db.h"
#include "storage/fetch.h"

struct worker {
	const struct conf *conf;
	struct db *db;          /* opened in this process, after fork */
	int cgi;
	struct conn *conns;     /* FastCGI: the connections this worker holds */
	struct conn *current;   /* the one whose request is being answered */
};

/* Sets up w for this process: data directory layout and the database.
 * Returns 0 or an errno (logged). */
int worker_open(struct worker *w, const struct conf *c, int cgi);

/* Releases what worker_open() made (not the connections). */
void worker_close(struct worker *w);

/* Fills o from the config, for fetches on behalf of the cache index at
 * position idx: redirects only to its upstream's and trusted hosts; with
 * idx -1 (no index), no redirects at all. */
void worker_fetch_opts(const struct conf *c, int idx, struct fetch_opts *o);

/* Before something that may take long (an upstream fetch, following
 * another process's download): lets go (conn_shut) of the kept
 * connections that wait for their next request, so that the web server
 * sends it to a worker that is free; one a request is already coming on
 * is kept (its request waits), since closing it would reset it. */
void worker_shed(struct worker *w);

/* Runs the sweep of what dead owners left (storage/flight.h) when it is
 * due. */
void worker_sweep(struct worker *w);

/* Once a response is done: when this process committed a blob and the
 * store is over max_size or under min_free, runs the collector
 * (storage/gc.h) on db, unless another process runs it. */
void worker_collect(struct worker *w, struct db *db);

/* A blob of size bytes, in hand, is about to be stored: when it would take
 * the store over max_size, runs the collector here (not waiting for
 * another one) on db to evict room for it too. Called once the client has the
 * bytes (a file: after its response ended) or, for a page rendering, a
 * few ms before the page is answered, and only when it crosses the
 * limit; so the store stays within it instead of passing it by a blob. */
void worker_make_room(struct worker *w, struct db *db, long long size);

#endif
