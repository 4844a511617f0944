/* db_blob: the inventory of the blob store (db.h), which the disk budget
 * (storage/gc.c) sums and evicts from. */
#include "config.h"

#include <errno.h>
#include <time.h>

#include "storage/db_sql.h"

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
