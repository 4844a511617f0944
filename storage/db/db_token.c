/* db_token: upload and read tokens (db.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/db/db_sql.h"

/* Reads a row of TOKEN_COLUMNS at st's current step into t. */
static void read_row(sqlite3_stmt *st, struct db_token *t)
{
	db_text(st, 0, t->id, sizeof(t->id));
	db_text(st, 1, t->index, sizeof(t->index));
	db_text(st, 2, t->actions, sizeof(t->actions));
	db_text(st, 3, t->projects, sizeof(t->projects));
	db_text(st, 4, t->salt, sizeof(t->salt));
	db_text(st, 5, t->hash, sizeof(t->hash));
	t->created = sqlite3_column_int64(st, 6);
	t->expires = sqlite3_column_int64(st, 7);
	t->revoked = sqlite3_column_int(st, 8);
	db_text(st, 9, t->note, sizeof(t->note));
}

int db_token_put(struct db *db, const struct db_token *t)
{
	sqlite3_stmt *st = db_stmt(db, S_TOKEN_PUT);
	int rc;

	BIND_TEXT(st, 1, t->id);
	BIND_TEXT(st, 2, t->index);
	BIND_TEXT(st, 3, t->actions);
	BIND_TEXT(st, 4, t->projects);
	BIND_TEXT(st, 5, t->salt);
	BIND_TEXT(st, 6, t->hash);
	sqlite3_bind_int64(st, 7, t->created);
	sqlite3_bind_int64(st, 8, t->expires);
	sqlite3_bind_int(st, 9, t->revoked);
	BIND_TEXT(st, 10, t->note);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return 0;
	/* the primary key: the id is taken */
	if (sqlite3_extended_errcode(db->conn) == SQLITE_CONSTRAINT_PRIMARYKEY)
		return EEXIST;
	return db_fail(db, "token put");
}

int db_token_get(struct db *db, const char *id, struct db_token *t)
{
	sqlite3_stmt *st = db_stmt(db, S_TOKEN_GET);
	int err;

	BIND_TEXT(st, 1, id);
	err = db_row(db, st, "token get");
	if (err)
		return err;
	read_row(st, t);
	sqlite3_reset(st);
	return 0;
}

int db_token_revoke(struct db *db, const char *id)
{
	sqlite3_stmt *st = db_stmt(db, S_TOKEN_REVOKE);
	int err;

	BIND_TEXT(st, 1, id);
	err = db_run(db, st, "token revoke");
	if (err)
		return err;
	return sqlite3_changes(db->conn) ? 0 : ENOENT;
}

int db_token_each(struct db *db,
                  void (*fn)(const struct db_token *t, void *ctx), void *ctx)
{
	sqlite3_stmt *st = db_stmt(db, S_TOKEN_ALL);
	struct db_token *all = NULL, *grown;
	size_t n = 0, cap = 0;
	int err = 0, rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		grown = db_grow(all, &cap, n, sizeof(*all), 16);
		if (!grown) {
			err = ENOMEM;
			break;
		}
		all = grown;
		read_row(st, &all[n++]);
	}
	if (!err && rc != SQLITE_DONE)
		err = db_fail(db, "token all");
	sqlite3_reset(st);
	for (size_t i = 0; !err && i < n; i++)
		fn(&all[i], ctx);
	free(all);
	return err;
}
