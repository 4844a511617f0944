/* gc: the disk budget. Keeps the blob store within max_size bytes and the
 * file system above min_free percent free by evicting blobs, least
 * recently used first.
 *
 * A run takes DATA/gc.lock (flock: one collector at a time across
 * processes; the lock dies with its process), folds the use table
 * (storage/lru.h) into blobs.used_at in one transaction, then, when the
 * inventory's bytes pass max_size or the free space (statvfs on the data
 * directory) is under min_free, evicts until it is "5% under":
 *   max_size: the inventory holds at most 95% of max_size (less the
 *             bytes of a blob on its way in, o->incoming);
 *   min_free: at least min_free + 5 percentage points of the file
 *             system's size is free to unprivileged users (f_bavail),
 *             counting the bytes of the evicted blobs as freed;
 * or until nothing evictable is left.
 *
 * Evictable: package files and their .metadata, image blobs, renderings
 * of pages that are no longer fresh (the page row goes with them, so the
 * page is fetched and rendered again), replaced renderings and blobs
 * nothing names. Never: renderings of fresh pages or of pages being
 * refreshed, bodies a registry ref names (manifests, tag and referrers
 * lists), anything used within grace seconds (by the table, re-read just
 * before each unlink), and temp files of fetches (they are not in blobs/).
 * Eviction decides, deletes the inventory row (and the page rows) and
 * unlinks the blob inside one write transaction: whatever names a blob
 * (a publish, a renderer) does so under that same lock, after finding the
 * file there, so a blob is never unlinked once something named it, nor
 * named once it is unlinked. Listings (files, oci_blobs) stay, so the next
 * request for the blob fetches it again.
 */
#ifndef LARDER_GC_H
#define LARDER_GC_H

#include <stdio.h>

#include "common/conf/conf.h"
#include "storage/db/db.h"

struct gc_opts {
	long long max_size; /* bytes; 0: no limit */
	long min_free;      /* percent of the file system; 0: off */
	long grace;         /* seconds since last use that protect a blob */
	int dry_run;        /* change nothing; list what would go */
	int wait;           /* wait for another collector (else EWOULDBLOCK) */
	FILE *list;         /* one line per evicted blob, or NULL */
	long long incoming; /* bytes about to be committed, to make room for */
};

/* What a run found and did: the figures for `larder gc' and counters. */
struct gc_report {
	long long bytes_before, bytes_after; /* the inventory's sum */
	long count_before, count_after;      /* blobs in it */
	long evicted;                        /* blobs evicted (or would be) */
	long long evicted_bytes;
	long kept;                         /* candidates that had to stay */
	int over_size;                     /* the run began over max_size */
	int low_free;                      /* the run began under min_free */
	long long fs_size, fs_free_before; /* bytes, statvfs */
};

/* Runs the collector once, as above; o->incoming asks for room for a
 * blob about to be committed (fcgi/server/worker.c worker_make_room). Returns 0 (r
 * says what it did), EWOULDBLOCK when another runs and o->wait is 0, or an
 * errno (logged). */
int gc_run(struct db *db, const char *data_dir, const struct gc_opts *o,
           struct gc_report *r);

/* Returns 1 when a run is due: the running total (storage/lru.h) is over
 * max_size or unknown, or less than min_free percent is free; cheap
 * enough for after every commit (one statvfs when min_free is set). */
int gc_due(const char *data_dir, long long max_size, long min_free);

/* For a process that may have committed a blob (lru_take_added): when a
 * run is due, runs the collector without waiting for another (o->wait is
 * ignored), again while it stays due, up to three times. total sums what
 * the runs evicted. Returns 0, EWOULDBLOCK when another collector ran (this
 * process looks again after its next commit or request), or an errno. */
int gc_after_commit(struct db *db, const char *data_dir,
                    const struct gc_opts *o, struct gc_report *total);

/* Brings the inventory in line with blobs/: adds rows for files it lacks
 * (a store from before it, used_at from the file's mtime) and drops rows
 * whose file is gone; with dry_run it only counts. The walk holds no
 * lock; the rows change in short write transactions (BATCH rows each),
 * each file looked at again under the lock. Returns 0 or an errno;
 * *added and *dropped say how many. */
int gc_reconcile(struct db *db, const char *data_dir, int dry_run, long *added,
                 long *dropped);

/* `larder gc': reconciles the inventory, then runs the collector with c's
 * max_size, min_free and gc_grace (waiting for one that runs), printing
 * what it did, or with dry_run what it would do, to out. Returns 0 or an
 * errno (logged). */
int gc_command(struct db *db, const struct conf *c, int dry_run, FILE *out);

/* Deletes the blobs that refreshes replaced more than grace seconds ago
 * (renderings of pages, tag and referrers lists: db_garbage_note), unless
 * something names them again; at most a batch per call, each decided and
 * unlinked under one write lock. */
void gc_collect_replaced(struct db *db, const char *data_dir, long grace);

#endif
