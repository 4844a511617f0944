/* db_search: the full-text index of projects and images (db_search.h;
 * the SQL is in db_search_sql.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "storage/db/db_search.h"
#include "storage/db/db_search_sql.h"
#include "storage/db/db_sql.h"

/* What a search write that ended in err means to its caller: nothing (the
 * failure is logged; the index is a convenience, and `larder search
 * reindex` mends it), unless SQLite rolled back the transaction it ran
 * in, as it may on SQLITE_FULL, IOERR or NOMEM: then EIO, or the
 * change's other statements would commit one by one. in_tx: whether a
 * transaction was open before the write. */
static int write_done(struct db *db, int in_tx, int err)
{
	return err && in_tx && sqlite3_get_autocommit(db->conn) ? EIO : 0;
}

int db_search_name(struct db *db, const char *index, const char *project)
{
	sqlite3_stmt *st = db_stmt(db, S_SEARCH_NAME);
	int in_tx = !sqlite3_get_autocommit(db->conn);

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	return write_done(db, in_tx, db_run(db, st, "search name"));
}

int db_search_meta(struct db *db, const char *index, const char *project,
		   const char *summary, const char *keywords)
{
	sqlite3_stmt *st = db_stmt(db, S_SEARCH_META);
	int in_tx = !sqlite3_get_autocommit(db->conn);

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	BIND_TEXT(st, 3, summary);
	BIND_TEXT(st, 4, keywords);
	return write_done(db, in_tx, db_run(db, st, "search meta"));
}

int db_search_meta_file(struct db *db, const char *file_sha256,
			const char *meta_sha256, const char *summary,
			const char *keywords)
{
	sqlite3_stmt *st = db_stmt(db, S_SEARCH_META_FILE);
	int in_tx = !sqlite3_get_autocommit(db->conn);

	BIND_TEXT(st, 1, file_sha256);
	BIND_TEXT(st, 2, summary);
	BIND_TEXT(st, 3, keywords);
	BIND_TEXT(st, 4, meta_sha256);
	return write_done(db, in_tx, db_run(db, st, "search meta file"));
}

int db_search_tag(struct db *db, const char *registry, const char *name,
		  const char *tag)
{
	sqlite3_stmt *st = db_stmt(db, S_SEARCH_TAG);
	int in_tx = !sqlite3_get_autocommit(db->conn);

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, name);
	BIND_TEXT(st, 3, tag);
	return write_done(db, in_tx, db_run(db, st, "search tag"));
}

/* Copies text column col into out, cut at a UTF-8 boundary. */
static void utf8_text(sqlite3_stmt *st, int col, char *out, size_t len)
{
	size_t n;

	db_text(st, col, out, len);
	n = strlen(out);
	if (n + 1 < len)
		return;
	/* cut: drop a sequence the cut left incomplete */
	while (n > 0 && ((unsigned char)out[n - 1] & 0xc0) == 0x80)
		n--;
	if (n > 0 && (unsigned char)out[n - 1] >= 0xc0)
		n--;
	out[n] = '\0';
}

int db_search_query(struct db *db, const struct db_search_q *q,
		    struct db_search_hit *hits, size_t max, size_t *n,
		    char *err, size_t errlen)
{
	sqlite3_stmt *st = db_stmt(db, S_SEARCH_QUERY);
	int rc;

	*n = 0;
	if (err && errlen)
		err[0] = '\0';
	BIND_TEXT(st, 1, q->match);
	BIND_TEXT(st, 2, q->indexes);
	BIND_TEXT(st, 3, q->registries);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)max);
	sqlite3_bind_int64(st, 5, q->offset);
	BIND_TEXT(st, 6, q->exact[0]);
	BIND_TEXT(st, 7, q->exact[1]);
	BIND_TEXT(st, 8, q->name_match);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < max) {
		struct db_search_hit *h = &hits[(*n)++];

		db_text(st, 0, h->kind, sizeof(h->kind));
		db_text(st, 1, h->scope, sizeof(h->scope));
		db_text(st, 2, h->name, sizeof(h->name));
		utf8_text(st, 3, h->summary, sizeof(h->summary));
		utf8_text(st, 4, h->keywords, sizeof(h->keywords));
		utf8_text(st, 5, h->tags, sizeof(h->tags));
	}
	if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
		sqlite3_reset(st);
		return 0;
	}
	/* the query's own fault (common/search.h leaves none, but a
	 * tokenizer may still refuse what it cannot read): the caller's
	 * 400, not an outage */
	if (rc == SQLITE_ERROR) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db->conn));
		sqlite3_reset(st);
		*n = 0;
		return EINVAL;
	}
	rc = db_fail(db, "search query");
	sqlite3_reset(st);
	*n = 0;
	return rc;
}

int db_search_names(struct db *db, long *dropped)
{
	sqlite3_stmt *st = db_stmt(db, S_SEARCH_DROP);
	int err;

	*dropped = 0;
	if (sqlite3_exec(db->conn, SEARCH_FROM_STORE, NULL, NULL, NULL) !=
	    SQLITE_OK)
		return db_fail(db, "search names");
	err = db_run(db, st, "search drop");
	if (!err)
		*dropped = (long)sqlite3_changes(db->conn);
	return err;
}

int db_search_meta_each(struct db *db,
			void (*fn)(const char *index, const char *project,
				   const char *meta_sha, void *ctx),
			void *ctx)
{
	/* SQLite takes the bare columns of the row max() picks */
	static const char text[] =
		"SELECT idx, project, meta_sha, max(uploaded_at) FROM hosted"
		" WHERE meta_sha != '' GROUP BY idx, project"
		" UNION ALL SELECT idx, project, meta_sha, max(upload_time)"
		" FROM files WHERE meta_sha != '' AND meta_prov = 0"
		" AND project != '' GROUP BY idx, project";
	struct row {
		char index[128], project[256], sha[65];
	} *all = NULL, *grown;
	size_t n = 0, cap = 0;
	sqlite3_stmt *st;
	int err = 0, rc;

	if (sqlite3_prepare_v2(db->conn, text, -1, &st, NULL) != SQLITE_OK)
		return db_fail(db, "search meta each");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		grown = db_grow(all, &cap, n, sizeof(*all), 64);
		if (!grown) {
			err = ENOMEM;
			break;
		}
		all = grown;
		db_text(st, 0, all[n].index, sizeof(all[n].index));
		db_text(st, 1, all[n].project, sizeof(all[n].project));
		db_text(st, 2, all[n].sha, sizeof(all[n].sha));
		n++;
	}
	if (!err && rc != SQLITE_DONE)
		err = db_fail(db, "search meta each");
	sqlite3_finalize(st);
	for (size_t i = 0; !err && i < n; i++)
		fn(all[i].index, all[i].project, all[i].sha, ctx);
	free(all);
	return err;
}
