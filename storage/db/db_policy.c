/* db_policy: what the policies read and leave (db.h): OSV advisories'
 * affected ranges, as larder policy import-osv loads them and a page's
 * policy decision reads them, and the files a policy denied. Its
 * statements are prepared at each use, not kept: an import, a page fetch,
 * a command and the status page are rare, and a warm request never reads
 * any of this. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/db/db_sql.h"

/* Prepares sql on db; NULL (logged) when SQLite refuses it. */
static sqlite3_stmt *prepare(struct db *db, const char *sql)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db->conn, sql, -1, &st, NULL) != SQLITE_OK) {
		db_fail(db, "osv prepare");
		return NULL;
	}
	return st;
}

int db_osv_replace(struct db *db, const char *id,
                   const struct policy_vuln *v, const char *const *project,
                   size_t n)
{
	sqlite3_stmt *del = prepare(db, "DELETE FROM osv WHERE id = ?1");
	sqlite3_stmt *ins = prepare(db, "INSERT INTO osv VALUES"
	                                " (?1, ?2, ?3, ?4, ?5)");
	int rc = del && ins ? 0 : EIO;

	if (!rc) {
		BIND_TEXT(del, 1, id);
		rc = db_run(db, del, "osv delete");
	}
	for (size_t i = 0; !rc && i < n; i++) {
		sqlite3_reset(ins);
		BIND_TEXT(ins, 1, id);
		BIND_TEXT(ins, 2, project[i]);
		BIND_TEXT(ins, 3, v[i].introduced);
		BIND_TEXT(ins, 4, v[i].fixed);
		BIND_TEXT(ins, 5, v[i].last_affected);
		rc = db_run(db, ins, "osv insert");
	}
	sqlite3_finalize(del);
	sqlite3_finalize(ins);
	return rc;
}

int db_osv_get(struct db *db, const char *project, struct policy_vuln **out,
               size_t *n)
{
	sqlite3_stmt *st = prepare(db, "SELECT id, introduced, fixed,"
	                               " last_affected FROM osv"
	                               " WHERE project = ?1 ORDER BY id");
	struct policy_vuln *all = NULL, *grown;
	size_t cap = 0, k = 0;
	int rc = st ? 0 : EIO, step;

	*out = NULL;
	*n = 0;
	if (rc)
		return rc;
	BIND_TEXT(st, 1, project);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		grown = db_grow(all, &cap, k, sizeof(*all), 8);
		if (!grown) {
			rc = ENOMEM;
			break;
		}
		all = grown;
		db_text(st, 0, all[k].id, sizeof(all[k].id));
		db_text(st, 1, all[k].introduced, sizeof(all[k].introduced));
		db_text(st, 2, all[k].fixed, sizeof(all[k].fixed));
		db_text(st, 3, all[k].last_affected,
		        sizeof(all[k].last_affected));
		k++;
	}
	if (!rc && step != SQLITE_DONE)
		rc = db_fail(db, "osv get");
	sqlite3_finalize(st);
	if (rc) {
		free(all);
		return rc;
	}
	*out = all;
	*n = k;
	return 0;
}

long long db_osv_count(struct db *db)
{
	sqlite3_stmt *st = prepare(db, "SELECT count(DISTINCT id) FROM osv");
	long long n = -1;

	if (st && sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

int db_policy_files(struct db *db, const char *index, const char *project,
                    void (*fn)(const char *sha256, const char *filename,
                               const char *denied, void *ctx),
                    void *ctx)
{
	sqlite3_stmt *st = prepare(db, "SELECT sha256, filename, denied"
	                               " FROM files"
	                               " WHERE idx = ?1 AND project = ?2"
	                               " ORDER BY filename");
	int step;

	if (!st)
		return EIO;
	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	while ((step = sqlite3_step(st)) == SQLITE_ROW)
		fn((const char *)sqlite3_column_text(st, 0),
		   (const char *)sqlite3_column_text(st, 1),
		   (const char *)sqlite3_column_text(st, 2), ctx);
	sqlite3_finalize(st);
	return step == SQLITE_DONE ? 0 : db_fail(db, "policy files");
}

int db_policy_denied(struct db *db, int limit,
                     void (*fn)(const char *index, const char *filename,
                                const char *denied, void *ctx),
                     void *ctx, long long *total)
{
	sqlite3_stmt *st = prepare(db, "SELECT idx, filename, denied"
	                               " FROM files WHERE denied != ''"
	                               " ORDER BY idx, filename LIMIT ?1");
	sqlite3_stmt *cnt = prepare(db, "SELECT count(*) FROM files"
	                                " WHERE denied != ''");
	int step = SQLITE_ERROR;

	*total = 0;
	if (st && cnt) {
		sqlite3_bind_int(st, 1, limit);
		while ((step = sqlite3_step(st)) == SQLITE_ROW)
			fn((const char *)sqlite3_column_text(st, 0),
			   (const char *)sqlite3_column_text(st, 1),
			   (const char *)sqlite3_column_text(st, 2), ctx);
		if (step == SQLITE_DONE && sqlite3_step(cnt) == SQLITE_ROW)
			*total = sqlite3_column_int64(cnt, 0);
		else
			step = SQLITE_ERROR;
	}
	sqlite3_finalize(st);
	sqlite3_finalize(cnt);
	return step == SQLITE_DONE ? 0 : db_fail(db, "policy denied");
}

int db_policy_expire(struct db *db, const char *project)
{
	sqlite3_stmt *st = prepare(db, "UPDATE pages SET ttl = 0"
	                               " WHERE project = ?1 AND status = 200");
	int rc;

	if (!st)
		return EIO;
	BIND_TEXT(st, 1, project);
	rc = db_run(db, st, "policy expire");
	sqlite3_finalize(st);
	return rc;
}
