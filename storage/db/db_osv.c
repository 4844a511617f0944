/* db_osv: OSV advisories' affected ranges (db.h), as larder policy
 * import-osv loads them and a page's policy decision reads them. Its
 * statements are prepared at each use, not kept: an import and a page
 * fetch are rare, and a warm request never reads the table. */
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
