/* fsck: checks the store against itself and the database.
 *
 * Every blob must hash to its name and sit at blobs/sha256/ab/cd/<hex>,
 * and a page rendering's gzip'd copy <hex>.gz beside it inflate to it;
 * every page row must point at renderings that exist; every blob must be
 * named by something (a page rendering, a listed file or its metadata, or
 * a rendering a refresh replaced, which the collector deletes after
 * gc_grace); every flight claim must be held by a live owner; no temp file
 * may be left unlocked; every inventory row (db_blob) must name a blob
 * in the store; every file uploaded to a hosted index, and its
 * metadata, must be in the store (it is the only copy: a loss is reported,
 * never repaired); the SQLite database must pass quick_check. With
 * repair, bad blobs are moved to DATA/quarantine/, dangling page rows are
 * dropped (the page is fetched again), unreferenced blobs are deleted,
 * dead claims, orphaned temp files and inventory rows without their blob
 * are removed (deleted blobs take their inventory rows along).
 */
#ifndef LARDER_FSCK_H
#define LARDER_FSCK_H

#include <stdio.h>

#include "storage/db/db.h"

struct fsck_report {
	long blobs;          /* blobs looked at */
	long copies;         /* gzip'd copies of pages looked at (a bad one
	                        counts in bad_blobs, one without its blob in
	                        unreferenced) */
	long bad_blobs;      /* hash differs from name, or misplaced */
	long pages;
	long dangling_pages; /* rendering missing from the store */
	long unreferenced;   /* blobs nothing names */
	long dead_flights;   /* claims nobody holds */
	long stray_temps;    /* unlocked temp files */
	long lost_rows;      /* inventory rows whose blob is gone */
	long lost_uploads;   /* hosted files (or their metadata) whose blob
	                        is gone: the only copy; not repairable */
	long repaired;
	int db_bad;          /* quick_check failed */
};

/* Checks data_dir (and repairs when repair is set), writing one line per
 * finding to out. A blob nothing names counts only when it is older than
 * grace seconds (a page being stored names its renderings a moment after
 * writing them). Returns 0 when the check ran (r says what it found), or
 * an errno when it could not. */
int fsck_run(struct db *db, const char *data_dir, int repair, long grace,
	     FILE *out, struct fsck_report *r);

/* Returns 1 when r found nothing wrong. */
int fsck_clean(const struct fsck_report *r);

/* Returns 1 when r, a run with repair, repaired everything it found
 * (nothing is left that it could not: no lost upload, a sound
 * database). */
int fsck_all_repaired(const struct fsck_report *r);

/* Where the scrub is and what it did, all runs told (in the database). */
struct fsck_scrub_state {
	char cursor[200];      /* "ab/cd/NAME": the last file looked at; ""
	                          for a pass to start */
	long long blobs;       /* files looked at */
	long long bytes;       /* bytes read */
	long long quarantined; /* bad blobs moved to DATA/quarantine/ */
	long long passes;      /* passes over the whole store finished */
	long long last_run;    /* unix time of the last run's end; 0: never */
};

/* Reads the scrub's state into s (zero when it never ran). Returns 0 or
 * EIO. */
int fsck_scrub_read(struct db *db, struct fsck_scrub_state *s);

/* Scrubs a slice of the store: goes on from the last run's cursor, in
 * the order of the blobs' names, hashing each blob (and inflating each
 * page's gzip'd copy) until budget_s seconds or max_bytes bytes are spent
 * (0: no limit; at least one file is looked at), and moves each bad blob
 * to DATA/quarantine/ with its inventory row dropped, so that the next
 * request for it fetches it again (a bad gzip'd copy is deleted: it is
 * made again). At the end of the store the pass is done and the next run
 * starts over. One line per finding to out, then a summary; s is the
 * state saved (cursor and counts). Returns 0 when the scrub ran (r says
 * what it found), or an errno. */
int fsck_scrub(struct db *db, const char *data_dir, long budget_s,
	       long long max_bytes, FILE *out, struct fsck_report *r,
	       struct fsck_scrub_state *s);

#endif
