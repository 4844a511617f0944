#include "config.h"

#include <string.h>

#include "common/log.h"
#include "fcgi/server/worker.h"
#include "storage/blob.h"
#include "storage/flight.h"
#include "storage/gc.h"
#include "storage/lru.h"
#include "storage/stats.h"

/* How often some worker looks for what dead owners left behind. */
#define SWEEP_INTERVAL 600

int worker_open(struct worker *w, const struct conf *c, int cgi)
{
	int err;

	memset(w, 0, sizeof(*w));
	w->conf = c;
	w->cgi = cgi;
	err = blob_init(c->data_dir);
	if (!err) /* off when it fails: that is logged, and not fatal */
		stats_open(c->data_dir);
	if (!err)
		err = db_open(c->data_dir, &w->db);
	/* without the use table, eviction goes by the inventory's times */
	if (!err)
		lru_open(c->data_dir);
	if (!err)
		flight_sweep_due(w->db, c->data_dir, SWEEP_INTERVAL);
	return err;
}

void worker_close(struct worker *w)
{
	db_close(w->db);
	w->db = NULL;
	stats_close();
}

void worker_fetch_opts(const struct conf *c, int idx, struct fetch_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->connect_timeout = c->connect_timeout;
	o->first_byte_timeout = c->first_byte_timeout;
	o->idle_timeout = c->fetch_timeout;
	o->retries = c->fetch_retries;
	o->max_body = (size_t)c->max_page_size;
	if (idx >= 0 && c->index[idx].type == CONF_INDEX_CACHE) {
		o->trust_base = c->index[idx].upstream;
		o->trusted = c->index[idx].trusted_hosts;
	}
}

void worker_shed(struct worker *w)
{
	for (struct conn *c = w->conns; c; c = c->next) {
		/* a connection that has not sent its first request yet is
		 * not one the web server would retry on: it stays; so does
		 * one a request is coming on (closing it would reset it, and
		 * nginx cannot retry a streamed upload): it waits. The others
		 * get larder's FIN, and the worker's loop drains them. */
		if (c != w->current && c->state == CONN_IDLE && c->served &&
		    conn_pending(c) <= 0)
			conn_shut(c);
	}
}

void worker_sweep(struct worker *w)
{
	flight_sweep_due(w->db, w->conf->data_dir, SWEEP_INTERVAL);
}

void worker_collect(struct worker *w, struct db *db)
{
	const struct conf *c = w->conf;
	struct gc_opts o = {.max_size = c->max_size,
			    .min_free = c->min_free,
			    .grace = c->gc_grace};
	struct gc_report r;

	if (gc_after_commit(db, c->data_dir, &o, &r) == 0 && r.evicted)
		log_info("gc: evicted %ld blobs, %lld bytes; the store holds "
			 "%lld bytes in %ld blobs", r.evicted, r.evicted_bytes,
			 r.bytes_after, r.count_after);
}

void worker_make_room(struct worker *w, struct db *db, long long size)
{
	const struct conf *c = w->conf;
	struct gc_opts o = {.max_size = c->max_size,
			    .min_free = c->min_free,
			    .grace = c->gc_grace,
			    .incoming = size};
	struct gc_report r;

	if (c->max_size <= 0 || lru_bytes() < 0 ||
	    lru_bytes() + size <= c->max_size)
		return;
	if (gc_run(db, c->data_dir, &o, &r) == 0 && r.evicted)
		log_info("gc: evicted %ld blobs, %lld bytes, for %lld coming; "
			 "the store holds %lld bytes", r.evicted,
			 r.evicted_bytes, size, r.bytes_after);
}
