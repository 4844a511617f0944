#include "config.h"

#include <errno.h>

#include "common/log.h"
#include "storage/db/db_sql.h"
#include "storage/db/db_stats.h"

int db_flight_count(struct db *db, long *n)
{
	sqlite3_stmt *st = NULL;
	int rc = EIO;

	*n = 0;
	if (sqlite3_prepare_v2(db->conn, "SELECT count(*) FROM flights", -1,
	                       &st, NULL) != SQLITE_OK)
		goto out;
	if (sqlite3_step(st) == SQLITE_ROW) {
		*n = (long)sqlite3_column_int64(st, 0);
		rc = 0;
	}
out:
	if (rc)
		log_error(0, db->path, "flight count: %s",
		          sqlite3_errmsg(db->conn));
	sqlite3_finalize(st);
	return rc;
}

int db_upstream_each(struct db *db,
                     int (*fn)(const char *host, long long until,
                               const char *reason, void *ctx),
                     void *ctx)
{
	sqlite3_stmt *st = NULL;
	int rc = EIO, step;

	if (sqlite3_prepare_v2(db->conn,
	                       "SELECT host, until, reason FROM "
	                       "upstreams ORDER BY host",
	                       -1, &st, NULL) != SQLITE_OK)
		goto out;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *host = (const char *)sqlite3_column_text(st, 0);
		const char *why = (const char *)sqlite3_column_text(st, 2);

		if (fn(host ? host : "", sqlite3_column_int64(st, 1),
		       why ? why : "", ctx))
			break;
	}
	if (step == SQLITE_ROW || step == SQLITE_DONE)
		rc = 0;
out:
	if (rc)
		log_error(0, db->path, "upstream list: %s",
		          sqlite3_errmsg(db->conn));
	sqlite3_finalize(st);
	return rc;
}
