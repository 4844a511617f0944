/* db_blob: the inventory of the blob store (db.h), which the disk budget
 * (storage/gc.c) sums and evicts from. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "storage/db/db_sql.h"

int db_blob_add(struct db *db, const char *sha256, long long size)
{
	sqlite3_stmt *st = db_stmt(db, S_BLOB_ADD);

	BIND_TEXT(st, 1, sha256);
	sqlite3_bind_int64(st, 2, size);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL));
	return db_run(db, st, "blob add");
}

int db_blob_delete(struct db *db, const char *sha256)
{
	sqlite3_stmt *st = db_stmt(db, S_BLOB_DELETE);

	BIND_TEXT(st, 1, sha256);
	return db_run(db, st, "blob delete");
}

int db_blob_totals(struct db *db, long long *bytes, long *count)
{
	sqlite3_stmt *st = db_stmt(db, S_BLOB_TOTALS);
	int err;

	err = db_row(db, st, "blob totals");
	if (err)
		return err == ENOENT ? db_fail(db, "blob totals") : err;
	*bytes = sqlite3_column_int64(st, 0);
	*count = (long)sqlite3_column_int64(st, 1);
	sqlite3_reset(st);
	return 0;
}

int db_blob_add_at(struct db *db, const char *sha256, long long size,
                   long long used_at)
{
	sqlite3_stmt *st = db_stmt(db, S_BLOB_ADD);

	BIND_TEXT(st, 1, sha256);
	sqlite3_bind_int64(st, 2, size);
	sqlite3_bind_int64(st, 3, used_at);
	return db_run(db, st, "blob add");
}

/* Prepares text on the connection (for the collector's rare statements,
 * which need not live as long as the process). Returns 0 or EIO. */
static int prepare(struct db *db, const char *text, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(db->conn, text, -1, st, NULL) != SQLITE_OK) {
		*st = NULL;
		return db_fail(db, text);
	}
	return 0;
}

int db_blob_has(struct db *db, const char *sha256)
{
	sqlite3_stmt *st;
	int err = prepare(db, "SELECT 1 FROM blobs WHERE sha256 = ?1", &st),
	    rc;

	if (err)
		return err;
	BIND_TEXT(st, 1, sha256);
	rc = sqlite3_step(st);
	err = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? ENOENT :
	      db_fail(db, "blob row");
	sqlite3_finalize(st);
	return err;
}

int db_blob_fold(struct db *db, const char *prefix, long long at)
{
	/* prepared once: a run folds every slot touched since the last */
	sqlite3_stmt *st = db_stmt(db, S_BLOB_FOLD);

	BIND_TEXT(st, 1, prefix);
	sqlite3_bind_int64(st, 2, at);
	return db_run(db, st, "blob fold");
}

int db_blob_oldest(struct db *db, long long before, long long after_at,
                   const char *after_sha, struct db_blob *rows, size_t max,
                   size_t *n)
{
	static const char text[] =
	    "SELECT sha256, size, used_at FROM blobs WHERE used_at < ?1"
	    " AND (used_at > ?2 OR (used_at = ?2 AND sha256 > ?3))"
	    " ORDER BY used_at, sha256 LIMIT ?4";
	sqlite3_stmt *st;
	int err = prepare(db, text, &st), rc;

	*n = 0;
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, before);
	sqlite3_bind_int64(st, 2, after_at);
	BIND_TEXT(st, 3, after_sha);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)max);
	while (*n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		db_text(st, 0, rows[*n].sha256, sizeof(rows[*n].sha256));
		rows[*n].size = sqlite3_column_int64(st, 1);
		rows[*n].used_at = sqlite3_column_int64(st, 2);
		(*n)++;
	}
	if (*n < max && rc != SQLITE_DONE)
		err = db_fail(db, "oldest blobs");
	sqlite3_finalize(st);
	return err;
}

/* Steps a count(*) query st; returns the count, or -1 on error. */
static long long count_of(sqlite3_stmt *st)
{
	long long n = -1;

	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	return n;
}

int db_blob_evict(struct db *db, const char *sha256, long long now, int dry_run)
{
	/* a body a registry ref names; an uploaded file or its metadata
	 * (the only copy there is); a rendering of a fresh page, of a
	 * hosted index's page (rendered from its rows, never fetched), or
	 * of a page whose refresh is under way (it may renew the row as it
	 * is) */
	static const char kept[] =
	    "SELECT (SELECT count(*) FROM oci_refs WHERE sha256 = ?1)"
	    " + (SELECT count(*) FROM hosted WHERE sha256 = ?1)"
	    " + (SELECT count(*) FROM hosted WHERE meta_sha = ?1)"
	    " + (SELECT count(*) FROM pages"
	    "    WHERE (json_sha = ?1 OR html_sha = ?1)"
	    "    AND (fetched_at + ttl > ?2 OR EXISTS (SELECT 1 FROM flights"
	    "         WHERE key = 'page:' || idx || ':' || project)"
	    "         OR EXISTS (SELECT 1 FROM hosted"
	    "         WHERE hosted.idx = pages.idx)))";
	static const char *const drop[] = {
	    /* the page's other rendering: garbage for the replaced-rendering
	     * collector (gc_collect_replaced), due gc_grace from now
	     * like any other, so that a request which read the page row
	     * before it went can still hand that rendering out */
	    "INSERT OR IGNORE INTO garbage"
	    " SELECT json_sha, ?2 FROM pages"
	    "  WHERE html_sha = ?1 AND json_sha != ?1 AND json_sha != ''"
	    " UNION SELECT html_sha, ?2 FROM pages"
	    "  WHERE json_sha = ?1 AND html_sha != ?1 AND html_sha != ''",
	    "DELETE FROM pages WHERE json_sha = ?1 OR html_sha = ?1",
	    "DELETE FROM garbage WHERE sha256 = ?1",
	    "DELETE FROM blobs WHERE sha256 = ?1",
	};
	sqlite3_stmt *st = NULL;
	long long n;
	int err;

	err = prepare(db, kept, &st);
	if (err)
		return err;
	BIND_TEXT(st, 1, sha256);
	sqlite3_bind_int64(st, 2, now);
	n = count_of(st);
	sqlite3_finalize(st);
	st = NULL;
	if (n < 0)
		return db_fail(db, "blob evict");
	if (n > 0 || dry_run)
		return n > 0 ? EBUSY : 0;
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]) && !err; i++) {
		err = prepare(db, drop[i], &st);
		if (err)
			break;
		BIND_TEXT(st, 1, sha256);
		if (i == 0)
			sqlite3_bind_int64(st, 2, now);
		err = db_run(db, st, "blob evict");
		sqlite3_finalize(st);
		st = NULL;
	}
	return err;
}

int db_blob_each(struct db *db,
                 void (*fn)(const char *sha256, long long size, void *ctx),
                 void *ctx)
{
	sqlite3_stmt *st;
	struct db_blob *all = NULL, *grown;
	size_t n = 0, cap = 0;
	int err = prepare(db, "SELECT sha256, size, used_at FROM blobs", &st),
	    rc;

	if (err)
		return err;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		grown = db_grow(all, &cap, n, sizeof(*all), 1024);
		if (!grown) {
			err = ENOMEM;
			break;
		}
		all = grown;
		db_text(st, 0, all[n].sha256, sizeof(all[n].sha256));
		all[n].size = sqlite3_column_int64(st, 1);
		all[n].used_at = sqlite3_column_int64(st, 2);
		n++;
	}
	if (!err && rc != SQLITE_DONE)
		err = db_fail(db, "blob list");
	sqlite3_finalize(st);
	for (size_t i = 0; i < n && !err; i++)
		fn(all[i].sha256, all[i].size, ctx);
	free(all);
	return err;
}
