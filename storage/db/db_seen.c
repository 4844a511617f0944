/* db_seen: what was last seen of each upstream host (the status page's
 * columns), and small named values (the scrub's cursor and counts). */
#include "config.h"

#include <errno.h>

#include "storage/db/db_sql.h"

int db_seen_get(struct db *db, const char *host, struct db_seen *s)
{
	sqlite3_stmt *st = db_stmt(db, S_SEEN_GET);
	int err;

	BIND_TEXT(st, 1, host);
	err = db_row(db, st, "seen get");
	if (err)
		return err;
	s->ok_at = sqlite3_column_int64(st, 0);
	s->failed_at = sqlite3_column_int64(st, 1);
	s->last_failed = sqlite3_column_int(st, 2) != 0;
	db_text(st, 3, s->reason, sizeof(s->reason));
	sqlite3_reset(st);
	return 0;
}

int db_seen_ok(struct db *db, const char *host, long long now)
{
	sqlite3_stmt *st = db_stmt(db, S_SEEN_OK);

	BIND_TEXT(st, 1, host);
	sqlite3_bind_int64(st, 2, now);
	return db_run(db, st, "seen ok");
}

int db_seen_failed(struct db *db, const char *host, long long now,
                   const char *reason)
{
	sqlite3_stmt *st = db_stmt(db, S_SEEN_FAILED);

	BIND_TEXT(st, 1, host);
	sqlite3_bind_int64(st, 2, now);
	BIND_TEXT(st, 3, reason);
	return db_run(db, st, "seen failed");
}

int db_state_get(struct db *db, const char *key, char *out, size_t len)
{
	sqlite3_stmt *st = db_stmt(db, S_STATE_GET);
	int err;

	BIND_TEXT(st, 1, key);
	err = db_row(db, st, "state get");
	if (err)
		return err;
	db_text(st, 0, out, len);
	sqlite3_reset(st);
	return 0;
}

int db_state_put(struct db *db, const char *key, const char *value)
{
	sqlite3_stmt *st = db_stmt(db, S_STATE_PUT);

	BIND_TEXT(st, 1, key);
	BIND_TEXT(st, 2, value);
	return db_run(db, st, "state put");
}
