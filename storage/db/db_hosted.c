/* db_hosted: the files uploaded to hosted indexes (db.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/db/db_sql.h"

/* Reads a row of HOSTED_COLUMNS at st's current step into h. */
static void read_row(sqlite3_stmt *st, struct db_hosted *h)
{
	db_text(st, 0, h->project, sizeof(h->project));
	db_text(st, 1, h->version, sizeof(h->version));
	db_text(st, 2, h->filename, sizeof(h->filename));
	db_text(st, 3, h->sha256, sizeof(h->sha256));
	h->size = sqlite3_column_int64(st, 4);
	db_text(st, 5, h->meta_sha, sizeof(h->meta_sha));
	db_text(st, 6, h->requires_python, sizeof(h->requires_python));
	h->uploaded_at = sqlite3_column_int64(st, 7);
	h->yanked = sqlite3_column_int(st, 8);
	db_text(st, 9, h->yanked_reason, sizeof(h->yanked_reason));
}

int db_hosted_put(struct db *db, const char *index, const struct db_hosted *h)
{
	sqlite3_stmt *st = db_stmt(db, S_HOSTED_PUT);

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, h->project);
	BIND_TEXT(st, 3, h->version);
	BIND_TEXT(st, 4, h->filename);
	BIND_TEXT(st, 5, h->sha256);
	sqlite3_bind_int64(st, 6, h->size);
	BIND_TEXT(st, 7, h->meta_sha);
	BIND_TEXT(st, 8, h->requires_python);
	sqlite3_bind_int64(st, 9, h->uploaded_at);
	sqlite3_bind_int(st, 10, h->yanked);
	BIND_TEXT(st, 11, h->yanked_reason);
	return db_run(db, st, "hosted put");
}

int db_hosted_get(struct db *db, const char *index, const char *filename,
                  struct db_hosted *h)
{
	sqlite3_stmt *st = db_stmt(db, S_HOSTED_GET);
	int err;

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, filename);
	err = db_row(db, st, "hosted get");
	if (err)
		return err;
	read_row(st, h);
	sqlite3_reset(st);
	return 0;
}

int db_hosted_project(struct db *db, const char *index, const char *project,
                      struct db_hosted **rows, size_t *n)
{
	sqlite3_stmt *st = db_stmt(db, S_HOSTED_PROJECT);
	struct db_hosted *all = NULL, *grown;
	size_t cap = 0;
	int err = 0, rc;

	*rows = NULL;
	*n = 0;
	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		grown = db_grow(all, &cap, *n, sizeof(*all), 16);
		if (!grown) {
			err = ENOMEM;
			break;
		}
		all = grown;
		read_row(st, &all[(*n)++]);
	}
	if (!err && rc != SQLITE_DONE)
		err = db_fail(db, "hosted project");
	sqlite3_reset(st);
	if (err) {
		free(all);
		*n = 0;
		return err;
	}
	*rows = all;
	return 0;
}

int db_hosted_has(struct db *db, const char *index, const char *project)
{
	sqlite3_stmt *st = db_stmt(db, S_HOSTED_HAS);
	int err;

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	err = db_row(db, st, "hosted has");
	if (!err)
		sqlite3_reset(st);
	return err;
}

int db_hosted_projects(struct db *db, const char *index,
                       void (*fn)(const char *project, void *ctx), void *ctx)
{
	sqlite3_stmt *st = db_stmt(db, S_HOSTED_PROJECTS);
	char **names = NULL, **grown;
	size_t n = 0, cap = 0;
	int err = 0, rc;

	BIND_TEXT(st, 1, index);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const unsigned char *name = sqlite3_column_text(st, 0);

		grown = db_grow(names, &cap, n, sizeof(*names), 64);
		if (!grown) {
			err = ENOMEM;
			break;
		}
		names = grown;
		names[n] = strdup(name ? (const char *)name : "");
		if (!names[n]) {
			err = ENOMEM;
			break;
		}
		n++;
	}
	if (!err && rc != SQLITE_DONE)
		err = db_fail(db, "hosted projects");
	sqlite3_reset(st);
	for (size_t i = 0; i < n; i++) {
		if (!err)
			fn(names[i], ctx);
		free(names[i]);
	}
	free(names);
	return err;
}

int db_hosted_yank(struct db *db, const char *index, const char *project,
                   const char *version, int yanked, const char *reason,
                   long *changed)
{
	sqlite3_stmt *st = db_stmt(db, S_HOSTED_YANK);
	int err;

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	BIND_TEXT(st, 3, version);
	sqlite3_bind_int(st, 4, yanked);
	BIND_TEXT(st, 5, yanked ? reason : "");
	err = db_run(db, st, "hosted yank");
	*changed = err ? 0 : (long)sqlite3_changes(db->conn);
	return err;
}

int db_hosted_delete(struct db *db, const char *index, const char *filename)
{
	sqlite3_stmt *st = db_stmt(db, S_HOSTED_DELETE);

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, filename);
	return db_run(db, st, "hosted delete");
}

int db_hosted_each(struct db *db,
		   void (*fn)(const char *index, const struct db_hosted *h,
			      void *ctx),
		   void *ctx)
{
	sqlite3_stmt *st = db_stmt(db, S_HOSTED_ALL);
	struct row {
		char index[101];
		struct db_hosted h;
	} *all = NULL, *grown;
	size_t n = 0, cap = 0;
	int err = 0, rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		grown = db_grow(all, &cap, n, sizeof(*all), 64);
		if (!grown) {
			err = ENOMEM;
			break;
		}
		all = grown;
		read_row(st, &all[n].h);
		db_text(st, 10, all[n].index, sizeof(all[n].index));
		n++;
	}
	if (!err && rc != SQLITE_DONE)
		err = db_fail(db, "hosted each");
	sqlite3_reset(st);
	for (size_t i = 0; !err && i < n; i++)
		fn(all[i].index, &all[i].h, ctx);
	free(all);
	return err;
}
