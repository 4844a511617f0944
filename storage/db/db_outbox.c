/* db_outbox: webhook events, written with the change they report and
 * delivered later (db_outbox.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/isotime.h"
#include "common/json.h"
#include "storage/db/db_outbox.h"
#include "storage/db/db_sql.h"

#define COLUMNS                                                              \
	"id, hook, event, idx, project, version, uuid, created, next_at,"    \
	" done_at, attempts, state, status, error"

/* Prepares text into *st. Returns 0 or EIO (logged). */
static int prepare(struct db *db, const char *text, sqlite3_stmt **st)
{
	*st = NULL;
	if (sqlite3_prepare_v2(db->conn, text, -1, st, NULL) != SQLITE_OK)
		return db_fail(db, "outbox prepare");
	return 0;
}

/* Runs a statement that returns no rows and finalizes it. */
static int run(struct db *db, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(db, what);

	sqlite3_finalize(st);
	return rc;
}

/* Appends ,"key":"value" (value as a JSON string). */
static int put_field(struct buf *b, const char *key, const char *value)
{
	int err = buf_addf(b, ",\"%s\":", key);

	return err ? err : json_put_string(b, value);
}

int db_outbox_add(struct db *db, const char *hook, const char *event,
                  const char *idx, const char *project, const char *version,
                  const char *data, long long now)
{
	char uuid[33] = "", at[ISOTIME_LEN];
	sqlite3_stmt *st = NULL;
	struct buf b;
	int err;

	buf_init(&b, 1 << 20);
	err = prepare(db, "SELECT lower(hex(randomblob(16)))", &st);
	if (err)
		goto out;
	if (sqlite3_step(st) != SQLITE_ROW) {
		err = db_fail(db, "outbox uuid");
		goto out;
	}
	db_text(st, 0, uuid, sizeof(uuid));
	sqlite3_finalize(st);
	st = NULL;
	isotime_format(now, at);
	err = buf_addf(&b, "{\"id\":\"%s\"", uuid);
	err = err ? err : put_field(&b, "event", event);
	err = err ? err : put_field(&b, "webhook", hook);
	err = err ? err : put_field(&b, "index", idx);
	err = err ? err : put_field(&b, "project", project);
	err = err ? err : put_field(&b, "version", version ? version : "");
	err = err ? err : put_field(&b, "created", at);
	err = err ? err : buf_addf(&b, ",\"data\":%s}",
	                           data && *data ? data : "{}");
	if (err)
		goto out;
	err = prepare(db, "INSERT INTO outbox (hook, event, idx, project,"
	                  " version, uuid, body, created, attempts, next_at,"
	                  " state, done_at, status, error)"
	                  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, ?8, 0,"
	                  " 0, 0, '')", &st);
	if (err)
		goto out;
	BIND_TEXT(st, 1, hook);
	BIND_TEXT(st, 2, event);
	BIND_TEXT(st, 3, idx);
	BIND_TEXT(st, 4, project);
	BIND_TEXT(st, 5, version ? version : "");
	BIND_TEXT(st, 6, uuid);
	sqlite3_bind_text(st, 7, b.data, (int)b.len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, now);
	err = run(db, st, "outbox add");
	st = NULL;
out:
	sqlite3_finalize(st);
	buf_free(&b);
	return err;
}

/* Reads the COLUMNS of st's row into r, and the body from column 14 when
 * with_body. Returns 0 or ENOMEM. */
static int read_row(sqlite3_stmt *st, struct db_outbox *r, int with_body)
{
	const unsigned char *body;

	memset(r, 0, sizeof(*r));
	r->id = sqlite3_column_int64(st, 0);
	db_text(st, 1, r->hook, sizeof(r->hook));
	db_text(st, 2, r->event, sizeof(r->event));
	db_text(st, 3, r->idx, sizeof(r->idx));
	db_text(st, 4, r->project, sizeof(r->project));
	db_text(st, 5, r->version, sizeof(r->version));
	db_text(st, 6, r->uuid, sizeof(r->uuid));
	r->created = sqlite3_column_int64(st, 7);
	r->next_at = sqlite3_column_int64(st, 8);
	r->done_at = sqlite3_column_int64(st, 9);
	r->attempts = (long)sqlite3_column_int64(st, 10);
	r->state = sqlite3_column_int(st, 11);
	r->status = sqlite3_column_int(st, 12);
	db_text(st, 13, r->error, sizeof(r->error));
	if (!with_body)
		return 0;
	body = sqlite3_column_text(st, 14);
	r->body = strdup(body ? (const char *)body : "{}");
	return r->body ? 0 : ENOMEM;
}

/* Reads up to max rows of st into *rows. Finalizes st. */
static int read_rows(struct db *db, sqlite3_stmt *st, size_t max,
                     int with_body, struct db_outbox **rows, size_t *n)
{
	struct db_outbox *all = NULL, *grown;
	size_t cap = 0;
	int rc, err = 0;

	*rows = NULL;
	*n = 0;
	while (*n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		grown = db_grow(all, &cap, *n, sizeof(*all), 8);
		if (!grown) {
			err = ENOMEM;
			break;
		}
		all = grown;
		err = read_row(st, &all[*n], with_body);
		if (err)
			break;
		(*n)++;
	}
	if (!err && *n < max && rc != SQLITE_DONE)
		err = db_fail(db, "outbox read");
	sqlite3_finalize(st);
	if (err) {
		db_outbox_free(all, *n);
		*n = 0;
		return err;
	}
	*rows = all;
	return 0;
}

int db_outbox_due(struct db *db, long long now, size_t max,
                  struct db_outbox **rows, size_t *n)
{
	sqlite3_stmt *st;
	int err = prepare(
	    db,
	    "SELECT " COLUMNS ", body FROM outbox o WHERE state = 0"
	    " AND id = (SELECT min(id) FROM outbox i WHERE i.state = 0"
	    "  AND i.hook = o.hook AND i.idx = o.idx)"
	    " AND next_at <= ?1 ORDER BY id",
	    &st);

	*rows = NULL;
	*n = 0;
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, now);
	return read_rows(db, st, max, 1, rows, n);
}

int db_outbox_last(struct db *db, struct db_outbox **rows, size_t *n)
{
	sqlite3_stmt *st;
	int err = prepare(db, "SELECT " COLUMNS ", body FROM outbox"
			      " WHERE id = ?1 AND state = 0", &st);

	*rows = NULL;
	*n = 0;
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, sqlite3_last_insert_rowid(db->conn));
	return read_rows(db, st, 1, 1, rows, n);
}

int db_outbox_tried(struct db *db, long long id, int state, long attempts,
                    long long next_at, long long now, int status,
                    const char *error)
{
	sqlite3_stmt *st;
	int err = prepare(db,
	                  "UPDATE outbox SET state = ?2, attempts = ?3,"
	                  " next_at = ?4, done_at = ?5, status = ?6,"
	                  " error = ?7 WHERE id = ?1",
	                  &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int(st, 2, state);
	sqlite3_bind_int64(st, 3, attempts);
	sqlite3_bind_int64(st, 4, next_at);
	sqlite3_bind_int64(st, 5, now);
	sqlite3_bind_int(st, 6, status);
	BIND_TEXT(st, 7, error);
	return run(db, st, "outbox tried");
}

int db_outbox_recent(struct db *db, size_t max, struct db_outbox **rows,
                     size_t *n)
{
	sqlite3_stmt *st;
	int err = prepare(db,
	                  "SELECT " COLUMNS " FROM outbox WHERE attempts > 0"
	                  " ORDER BY done_at DESC, id DESC LIMIT ?1",
	                  &st);

	*rows = NULL;
	*n = 0;
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, (long long)max);
	return read_rows(db, st, max, 0, rows, n);
}

int db_outbox_counts(struct db *db, long *pending, long *failed)
{
	sqlite3_stmt *st;
	int err = prepare(db,
	                  "SELECT coalesce(sum(state = 0), 0),"
	                  " coalesce(sum(state = 2), 0) FROM outbox",
	                  &st);

	*pending = *failed = 0;
	if (err)
		return err;
	if (sqlite3_step(st) == SQLITE_ROW) {
		*pending = (long)sqlite3_column_int64(st, 0);
		*failed = (long)sqlite3_column_int64(st, 1);
	} else {
		err = db_fail(db, "outbox counts");
	}
	sqlite3_finalize(st);
	return err;
}

int db_outbox_prune(struct db *db, long long before)
{
	sqlite3_stmt *st;
	int err = prepare(db,
	                  "DELETE FROM outbox WHERE state != 0 AND"
	                  " done_at < ?1",
	                  &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, before);
	return run(db, st, "outbox prune");
}

void db_outbox_free(struct db_outbox *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(rows[i].body);
	free(rows);
}
