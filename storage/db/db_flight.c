/* db_flight: the rows of the single-flight protocol: who is fetching a key,
 * how its last fetch ended, which upstream hosts are failing. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "storage/db/db.h"
#include "storage/db/db_sql.h"

int db_flight_insert(struct db *db, const char *key, const char *tmp,
		     long pid, long long started, long long size)
{
	sqlite3_stmt *st = db_stmt(db, S_FLIGHT_INSERT);
	int err;

	BIND_TEXT(st, 1, key);
	BIND_TEXT(st, 2, tmp);
	sqlite3_bind_int64(st, 3, pid);
	sqlite3_bind_int64(st, 4, started);
	sqlite3_bind_int64(st, 5, size);
	err = db_run(db, st, "flight insert");
	if (err)
		return err;
	return sqlite3_changes(db->conn) == 1 ? 0 : EEXIST;
}

/* Reads a flights row from the columns tmp, pid, started, size, sha256
 * starting at col. */
static void flight_row(sqlite3_stmt *st, int col, struct db_flight *f)
{
	db_text(st, col, f->tmp, sizeof(f->tmp));
	f->pid = (long)sqlite3_column_int64(st, col + 1);
	f->started = sqlite3_column_int64(st, col + 2);
	f->size = sqlite3_column_int64(st, col + 3);
	db_text(st, col + 4, f->sha256, sizeof(f->sha256));
}

int db_flight_get(struct db *db, const char *key, struct db_flight *f)
{
	sqlite3_stmt *st = db_stmt(db, S_FLIGHT_GET);
	int err;

	BIND_TEXT(st, 1, key);
	err = db_row(db, st, "flight get");
	if (err)
		return err;
	flight_row(st, 0, f);
	sqlite3_reset(st);
	return 0;
}

int db_flight_delete(struct db *db, const char *key, const char *tmp)
{
	sqlite3_stmt *st = db_stmt(db, S_FLIGHT_DELETE);

	BIND_TEXT(st, 1, key);
	BIND_TEXT(st, 2, tmp);
	return db_run(db, st, "flight delete");
}

struct flight_entry {
	char *key;
	struct db_flight row;
};

int db_flight_each(struct db *db,
		   void (*fn)(const char *key, const struct db_flight *row,
			      void *ctx),
		   void *ctx)
{
	sqlite3_stmt *st = db_stmt(db, S_FLIGHT_ALL);
	struct flight_entry *rows = NULL, *grown;
	size_t n = 0;
	int rc, err = 0;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(st, 0);

		grown = realloc(rows, (n + 1) * sizeof(*rows));
		if (!grown) {
			err = ENOMEM;
			break;
		}
		rows = grown;
		rows[n].key = strdup(k ? k : "");
		flight_row(st, 1, &rows[n].row);
		if (!rows[n++].key) {
			err = ENOMEM;
			break;
		}
	}
	if (!err && rc != SQLITE_DONE)
		err = db_fail(db, "flight list");
	sqlite3_reset(st);
	for (size_t i = 0; i < n; i++) {
		if (!err)
			fn(rows[i].key, &rows[i].row, ctx);
		free(rows[i].key);
	}
	free(rows);
	return err;
}

int db_flight_set(struct db *db, const char *key, const char *tmp,
		  long long size)
{
	sqlite3_stmt *st = db_stmt(db, S_FLIGHT_SET);

	BIND_TEXT(st, 1, key);
	BIND_TEXT(st, 2, tmp);
	sqlite3_bind_int64(st, 3, size);
	return db_run(db, st, "flight set");
}

int db_flight_set_sha(struct db *db, const char *key, const char *tmp,
		      const char *sha256)
{
	sqlite3_stmt *st = db_stmt(db, S_FLIGHT_SET_SHA);

	BIND_TEXT(st, 1, key);
	BIND_TEXT(st, 2, tmp);
	BIND_TEXT(st, 3, sha256);
	return db_run(db, st, "flight set sha256");
}

int db_outcome_put(struct db *db, const char *key, const char *sha256,
		   const char *reason)
{
	sqlite3_stmt *st = db_stmt(db, S_OUTCOME_PUT);

	BIND_TEXT(st, 1, key);
	BIND_TEXT(st, 2, sha256 ? sha256 : "");
	BIND_TEXT(st, 3, reason ? reason : "");
	sqlite3_bind_int64(st, 4, (long long)time(NULL));
	return db_run(db, st, "outcome put");
}

int db_outcome_get(struct db *db, const char *key, char sha256[65],
		   char *reason, size_t len, long long *at)
{
	sqlite3_stmt *st = db_stmt(db, S_OUTCOME_GET);
	int err;

	BIND_TEXT(st, 1, key);
	err = db_row(db, st, "outcome get");
	if (err)
		return err;
	db_text(st, 0, sha256, 65);
	db_text(st, 1, reason, len);
	if (at)
		*at = sqlite3_column_int64(st, 2);
	sqlite3_reset(st);
	return 0;
}

int db_upstream_get(struct db *db, const char *host, long long *until,
		    char *reason, size_t len)
{
	sqlite3_stmt *st = db_stmt(db, S_UPSTREAM_GET);
	int err;

	BIND_TEXT(st, 1, host);
	err = db_row(db, st, "upstream get");
	if (err)
		return err;
	*until = sqlite3_column_int64(st, 0);
	db_text(st, 1, reason, len);
	sqlite3_reset(st);
	return 0;
}

int db_upstream_put(struct db *db, const char *host, long long until,
		    const char *reason)
{
	sqlite3_stmt *st = db_stmt(db, S_UPSTREAM_PUT);

	BIND_TEXT(st, 1, host);
	sqlite3_bind_int64(st, 2, until);
	BIND_TEXT(st, 3, reason);
	return db_run(db, st, "upstream put");
}

int db_upstream_delete(struct db *db, const char *host)
{
	sqlite3_stmt *st = db_stmt(db, S_UPSTREAM_DELETE);

	BIND_TEXT(st, 1, host);
	return db_run(db, st, "upstream delete");
}
