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

#include "storage/db.h"

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

#endif
