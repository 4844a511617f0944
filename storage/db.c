#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/log.h"
#include "storage/db.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* The schema this build reads and writes (PRAGMA user_version). */
#define SCHEMA_VERSION 1

/* Every table as this version has it. Run under one write lock taken up
 * front: a deferred transaction that reads the schema and then wants to
 * write can fail at once with "locked" when another worker created it
 * meanwhile, busy handler or not. */
static const char schema[] =
	"CREATE TABLE IF NOT EXISTS pages ("
	"  idx TEXT NOT NULL, project TEXT NOT NULL, status INTEGER NOT NULL,"
	"  etag TEXT NOT NULL, last_modified TEXT NOT NULL,"
	"  fetched_at INTEGER NOT NULL, ttl INTEGER NOT NULL,"
	"  json_sha TEXT NOT NULL, html_sha TEXT NOT NULL,"
	"  PRIMARY KEY (idx, project));"
	"CREATE TABLE IF NOT EXISTS files ("
	"  idx TEXT NOT NULL, sha256 TEXT NOT NULL, filename TEXT NOT NULL,"
	"  url TEXT NOT NULL, size INTEGER NOT NULL, has_meta INTEGER NOT NULL,"
	"  meta_sha TEXT NOT NULL,"
	"  PRIMARY KEY (idx, sha256, filename));"
	"CREATE INDEX IF NOT EXISTS files_sha ON files (sha256);"
	"CREATE TABLE IF NOT EXISTS flights ("
	"  key TEXT PRIMARY KEY, tmp TEXT NOT NULL, pid INTEGER NOT NULL,"
	"  started INTEGER NOT NULL, size INTEGER NOT NULL,"
	"  sha256 TEXT NOT NULL DEFAULT '');"
	"CREATE TABLE IF NOT EXISTS outcomes ("
	"  key TEXT PRIMARY KEY, sha256 TEXT NOT NULL, reason TEXT NOT NULL,"
	"  at INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE IF NOT EXISTS upstreams ("
	"  host TEXT PRIMARY KEY, until INTEGER NOT NULL, reason TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS garbage ("
	"  sha256 TEXT PRIMARY KEY, since INTEGER NOT NULL);";

/* What a database made before user_version was kept (version 0) lacks. */
static const char from_v0[] =
	"ALTER TABLE flights ADD COLUMN sha256 TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE outcomes ADD COLUMN at INTEGER NOT NULL DEFAULT 0;";

enum stmt {
	S_PAGE_GET,
	S_PAGE_PUT,
	S_PAGE_TOUCH,
	S_PAGE_ALL,
	S_PAGE_DELETE,
	S_CHECK,
	S_FILE_PUT,
	S_FILE_GET,
	S_FILE_SET_META,
	S_FLIGHT_INSERT,
	S_FLIGHT_GET,
	S_FLIGHT_DELETE,
	S_FLIGHT_ALL,
	S_FLIGHT_SET,
	S_FLIGHT_SET_SHA,
	S_OUTCOME_PUT,
	S_OUTCOME_GET,
	S_UPSTREAM_GET,
	S_UPSTREAM_PUT,
	S_UPSTREAM_DELETE,
	S_GARBAGE_ADD,
	S_GARBAGE_DUE,
	S_GARBAGE_DELETE,
	S_PAGE_REFS,
	S_BEGIN,
	S_COMMIT,
	S_ROLLBACK,
	S_COUNT
};

static const char *const sql[S_COUNT] = {
	[S_PAGE_GET] = "SELECT status, etag, last_modified, fetched_at, ttl,"
		       " json_sha, html_sha FROM pages"
		       " WHERE idx = ?1 AND project = ?2",
	[S_PAGE_PUT] = "INSERT OR REPLACE INTO pages VALUES"
		       " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[S_PAGE_TOUCH] = "UPDATE pages SET fetched_at = ?3, ttl = ?4"
			 " WHERE idx = ?1 AND project = ?2",
	[S_PAGE_ALL] = "SELECT idx, project, status, etag, last_modified,"
		       " fetched_at, ttl, json_sha, html_sha FROM pages",
	[S_PAGE_DELETE] = "DELETE FROM pages WHERE idx = ?1 AND project = ?2",
	[S_CHECK] = "PRAGMA quick_check",
	[S_FILE_PUT] = "INSERT OR REPLACE INTO files VALUES"
		       " (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[S_FILE_GET] = "SELECT url, size, has_meta, meta_sha FROM files"
		       " WHERE idx = ?1 AND sha256 = ?2 AND filename = ?3",
	[S_FILE_SET_META] = "UPDATE files SET meta_sha = ?2"
			    " WHERE sha256 = ?1 AND meta_sha = ''",
	[S_FLIGHT_INSERT] = "INSERT OR IGNORE INTO flights"
			    " (key, tmp, pid, started, size)"
			    " VALUES (?1, ?2, ?3, ?4, ?5)",
	[S_FLIGHT_GET] = "SELECT tmp, pid, started, size, sha256 FROM flights"
			 " WHERE key = ?1",
	[S_FLIGHT_ALL] = "SELECT key, tmp, pid, started, size, sha256"
			 " FROM flights",
	[S_FLIGHT_DELETE] = "DELETE FROM flights WHERE key = ?1 AND tmp = ?2",
	[S_FLIGHT_SET] = "UPDATE flights SET size = ?3"
			 " WHERE key = ?1 AND tmp = ?2",
	[S_FLIGHT_SET_SHA] = "UPDATE flights SET sha256 = ?3"
			     " WHERE key = ?1 AND tmp = ?2",
	[S_OUTCOME_PUT] = "INSERT OR REPLACE INTO outcomes (key, sha256, reason,"
			  " at) VALUES (?1, ?2, ?3, ?4)",
	[S_OUTCOME_GET] = "SELECT sha256, reason, at FROM outcomes"
			  " WHERE key = ?1",
	[S_UPSTREAM_GET] = "SELECT until, reason FROM upstreams WHERE host = ?1",
	[S_UPSTREAM_PUT] = "INSERT OR REPLACE INTO upstreams VALUES (?1, ?2, ?3)",
	[S_UPSTREAM_DELETE] = "DELETE FROM upstreams WHERE host = ?1",
	[S_GARBAGE_ADD] = "INSERT OR REPLACE INTO garbage VALUES (?1, ?2)",
	[S_GARBAGE_DUE] = "SELECT sha256 FROM garbage WHERE since < ?1 LIMIT ?2",
	[S_GARBAGE_DELETE] = "DELETE FROM garbage WHERE sha256 = ?1",
	[S_PAGE_REFS] = "SELECT count(*) FROM pages"
			" WHERE json_sha = ?1 OR html_sha = ?1",
	[S_BEGIN] = "BEGIN IMMEDIATE",
	[S_COMMIT] = "COMMIT",
	[S_ROLLBACK] = "ROLLBACK",
};

struct db {
	sqlite3 *conn;
	sqlite3_stmt *st[S_COUNT];
	char path[PATH_MAX];
};

static int fail(struct db *db, const char *what)
{
	log_error(0, db->path, "%s: %s", what, sqlite3_errmsg(db->conn));
	return EIO;
}

/* Runs TEXT, retrying for up to ten seconds while SQLite answers "busy" or
 * "locked" without having waited for us. Returns 0 or EIO (logged). */
static int exec_retry(struct db *db, const char *text, const char *what);

/* Reads one integer a PRAGMA answers (-1 on error). */
static long long pragma_int(struct db *db, const char *text)
{
	sqlite3_stmt *st;
	long long v = -1;

	if (sqlite3_prepare_v2(db->conn, text, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Whether the database already has a table called name. */
static int has_table(struct db *db, const char *name)
{
	sqlite3_stmt *st;
	int found = 0;

	if (sqlite3_prepare_v2(db->conn, "SELECT 1 FROM sqlite_master WHERE "
			       "type = 'table' AND name = ?1", -1, &st,
			       NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

/* Brings the schema to SCHEMA_VERSION. The version is read first, without
 * a lock, so an open of a current database (every CGI request, every
 * worker) never queues behind a writer; only creating or migrating takes
 * the write lock. Returns 0 or EIO. */
static int schema_up(struct db *db)
{
	time_t deadline = time(NULL) + 10;
	long long v;
	int err;

	if (pragma_int(db, "PRAGMA user_version") == SCHEMA_VERSION)
		return 0;
	for (;;) {
		err = exec_retry(db, "BEGIN IMMEDIATE", "schema lock");
		if (err)
			return err;
		v = pragma_int(db, "PRAGMA user_version");
		if (v == SCHEMA_VERSION) /* someone else did it meanwhile */
			return exec_retry(db, "COMMIT", "schema");
		if (v > SCHEMA_VERSION) {
			sqlite3_exec(db->conn, "ROLLBACK", NULL, NULL, NULL);
			log_error(0, db->path, "made by a newer larder (schema %lld, "
				  "this one knows %d)", v, SCHEMA_VERSION);
			return EIO;
		}
		if (v == 0 && has_table(db, "flights") &&
		    sqlite3_exec(db->conn, from_v0, NULL, NULL, NULL) != SQLITE_OK)
			break;
		if (sqlite3_exec(db->conn, schema, NULL, NULL, NULL) != SQLITE_OK ||
		    sqlite3_exec(db->conn, "PRAGMA user_version = "
				 STRINGIFY(SCHEMA_VERSION), NULL, NULL,
				 NULL) != SQLITE_OK)
			break;
		if (sqlite3_exec(db->conn, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
			return 0;
		if (time(NULL) >= deadline)
			break;
		sqlite3_exec(db->conn, "ROLLBACK", NULL, NULL, NULL);
	}
	log_error(0, db->path, "schema: %s", sqlite3_errmsg(db->conn));
	sqlite3_exec(db->conn, "ROLLBACK", NULL, NULL, NULL);
	return EIO;
}

/* WAL, set once for the file; reading the mode takes no lock. Switching
 * can answer SQLITE_BUSY without calling the busy handler (another
 * connection holds it in rollback mode for a moment): exec_retry. */
static int journal_wal(struct db *db)
{
	sqlite3_stmt *st;
	int wal = 0;

	if (sqlite3_prepare_v2(db->conn, "PRAGMA journal_mode", -1, &st,
			       NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW) {
			const unsigned char *m = sqlite3_column_text(st, 0);

			wal = m && strcmp((const char *)m, "wal") == 0;
		}
		sqlite3_finalize(st);
	}
	if (wal)
		return 0;
	return exec_retry(db, "PRAGMA journal_mode=WAL;", "journal mode");
}
static int exec_retry(struct db *db, const char *text, const char *what)
{
	time_t deadline = time(NULL) + 10;
	char *msg = NULL;
	int rc;

	for (;;) {
		rc = sqlite3_exec(db->conn, text, NULL, NULL, &msg);
		if (rc == SQLITE_OK)
			return 0;
		if (sqlite3_get_autocommit(db->conn) == 0)
			sqlite3_exec(db->conn, "ROLLBACK", NULL, NULL, NULL);
		if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
			break;
		if (time(NULL) >= deadline)
			break;
		sqlite3_free(msg);
		msg = NULL;
		usleep(10000);
	}
	log_error(0, db->path, "%s: %s", what, msg ? msg : sqlite3_errstr(rc));
	sqlite3_free(msg);
	return EIO;
}

static int open_db(const char *data_dir, int create, struct db **out)
{
	struct db *db;
	int err = EIO;

	*out = NULL;
	db = calloc(1, sizeof(*db));
	if (!db)
		return ENOMEM;
	if (snprintf(db->path, sizeof(db->path), "%s/larder.db", data_dir) >=
	    (int)sizeof(db->path)) {
		err = ENAMETOOLONG;
		goto fail;
	}
	if (!create && access(db->path, F_OK) < 0) {
		err = errno;
		goto fail;
	}
	if (sqlite3_open_v2(db->path, &db->conn,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
				    (create ? SQLITE_OPEN_CREATE : 0),
			    NULL) != SQLITE_OK) {
		fail(db, "open");
		goto fail;
	}
	/* Writers queue behind each other; a client never sees "locked". */
	sqlite3_busy_timeout(db->conn, 30000);
	if (journal_wal(db) != 0 ||
	    exec_retry(db, "PRAGMA synchronous=NORMAL", "synchronous") != 0 ||
	    schema_up(db) != 0)
		goto fail;
	for (int i = 0; i < S_COUNT; i++) {
		if (sqlite3_prepare_v3(db->conn, sql[i], -1,
				       SQLITE_PREPARE_PERSISTENT, &db->st[i],
				       NULL) != SQLITE_OK) {
			fail(db, sql[i]);
			goto fail;
		}
	}
	*out = db;
	return 0;
fail:
	db_close(db);
	return err;
}

int db_open(const char *data_dir, struct db **out)
{
	return open_db(data_dir, 1, out);
}

int db_open_existing(const char *data_dir, struct db **out)
{
	return open_db(data_dir, 0, out);
}

void db_close(struct db *db)
{
	if (!db)
		return;
	for (int i = 0; i < S_COUNT; i++)
		sqlite3_finalize(db->st[i]);
	sqlite3_close(db->conn);
	free(db);
}

/* Resets a statement for its next use and returns it. */
static sqlite3_stmt *stmt(struct db *db, enum stmt s)
{
	sqlite3_reset(db->st[s]);
	sqlite3_clear_bindings(db->st[s]);
	return db->st[s];
}

static void text(sqlite3_stmt *st, int col, char *out, size_t len)
{
	const unsigned char *t = sqlite3_column_text(st, col);

	snprintf(out, len, "%s", t ? (const char *)t : "");
}

/* Runs a statement that returns no rows. */
static int run(struct db *db, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return fail(db, what);
	return 0;
}

/* Steps a query expected to return at most one row. */
static int row(struct db *db, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 0;
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return ENOENT;
	return fail(db, what);
}

#define BIND_TEXT(st, i, s) sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC)

int db_page_get(struct db *db, const char *index, const char *project,
		struct db_page *p)
{
	sqlite3_stmt *st = stmt(db, S_PAGE_GET);
	int err;

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	err = row(db, st, "page get");
	if (err)
		return err;
	p->status = sqlite3_column_int(st, 0);
	text(st, 1, p->etag, sizeof(p->etag));
	text(st, 2, p->last_modified, sizeof(p->last_modified));
	p->fetched_at = sqlite3_column_int64(st, 3);
	p->ttl = (long)sqlite3_column_int64(st, 4);
	text(st, 5, p->json_sha, sizeof(p->json_sha));
	text(st, 6, p->html_sha, sizeof(p->html_sha));
	sqlite3_reset(st);
	return 0;
}

int db_page_put(struct db *db, const char *index, const char *project,
		const struct db_page *p)
{
	sqlite3_stmt *st = stmt(db, S_PAGE_PUT);

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	sqlite3_bind_int(st, 3, p->status);
	BIND_TEXT(st, 4, p->etag);
	BIND_TEXT(st, 5, p->last_modified);
	sqlite3_bind_int64(st, 6, p->fetched_at);
	sqlite3_bind_int64(st, 7, p->ttl);
	BIND_TEXT(st, 8, p->json_sha);
	BIND_TEXT(st, 9, p->html_sha);
	return run(db, st, "page put");
}

int db_page_touch(struct db *db, const char *index, const char *project,
		  long long fetched_at, long ttl)
{
	sqlite3_stmt *st = stmt(db, S_PAGE_TOUCH);

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	sqlite3_bind_int64(st, 3, fetched_at);
	sqlite3_bind_int64(st, 4, ttl);
	return run(db, st, "page touch");
}

struct page_row {
	char *index, *project;
	struct db_page p;
};

int db_page_each(struct db *db,
		 void (*fn)(const char *index, const char *project,
			    const struct db_page *p, void *ctx),
		 void *ctx)
{
	sqlite3_stmt *st = stmt(db, S_PAGE_ALL);
	struct page_row *rows = NULL, *grown, *pr;
	size_t n = 0;
	int rc, err = 0;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		grown = realloc(rows, (n + 1) * sizeof(*rows));
		if (!grown) {
			err = ENOMEM;
			break;
		}
		rows = grown;
		pr = &rows[n++];
		memset(pr, 0, sizeof(*pr));
		pr->index = strdup((const char *)sqlite3_column_text(st, 0));
		pr->project = strdup((const char *)sqlite3_column_text(st, 1));
		pr->p.status = sqlite3_column_int(st, 2);
		text(st, 3, pr->p.etag, sizeof(pr->p.etag));
		text(st, 4, pr->p.last_modified, sizeof(pr->p.last_modified));
		pr->p.fetched_at = sqlite3_column_int64(st, 5);
		pr->p.ttl = (long)sqlite3_column_int64(st, 6);
		text(st, 7, pr->p.json_sha, sizeof(pr->p.json_sha));
		text(st, 8, pr->p.html_sha, sizeof(pr->p.html_sha));
		if (!pr->index || !pr->project) {
			err = ENOMEM;
			break;
		}
	}
	if (!err && rc != SQLITE_DONE)
		err = fail(db, "page list");
	sqlite3_reset(st);
	for (size_t i = 0; i < n; i++) {
		if (!err)
			fn(rows[i].index, rows[i].project, &rows[i].p, ctx);
		free(rows[i].index);
		free(rows[i].project);
	}
	free(rows);
	return err;
}

int db_page_delete(struct db *db, const char *index, const char *project)
{
	sqlite3_stmt *st = stmt(db, S_PAGE_DELETE);

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	return run(db, st, "page delete");
}

int db_check(struct db *db, char *msg, size_t len)
{
	sqlite3_stmt *st = stmt(db, S_CHECK);
	int err = 0;

	snprintf(msg, len, "ok");
	if (sqlite3_step(st) == SQLITE_ROW) {
		text(st, 0, msg, len);
		if (strcmp(msg, "ok") != 0)
			err = EIO;
	} else {
		snprintf(msg, len, "%s", sqlite3_errmsg(db->conn));
		err = EIO;
	}
	sqlite3_reset(st);
	return err;
}

int db_begin(struct db *db)
{
	return run(db, stmt(db, S_BEGIN), "begin");
}

int db_commit(struct db *db)
{
	return run(db, stmt(db, S_COMMIT), "commit");
}

void db_rollback(struct db *db)
{
	if (!sqlite3_get_autocommit(db->conn))
		run(db, stmt(db, S_ROLLBACK), "rollback");
}

int db_file_put(struct db *db, const char *index, const char *sha256,
		const char *filename, const char *url, long long size,
		int has_meta, const char *meta_sha)
{
	sqlite3_stmt *st = stmt(db, S_FILE_PUT);

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, sha256);
	BIND_TEXT(st, 3, filename);
	BIND_TEXT(st, 4, url);
	sqlite3_bind_int64(st, 5, size);
	sqlite3_bind_int(st, 6, has_meta);
	BIND_TEXT(st, 7, meta_sha ? meta_sha : "");
	return run(db, st, "file put");
}

int db_file_get(struct db *db, const char *index, const char *sha256,
		const char *filename, struct db_file *f)
{
	sqlite3_stmt *st = stmt(db, S_FILE_GET);
	int err;

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, sha256);
	BIND_TEXT(st, 3, filename);
	err = row(db, st, "file get");
	if (err)
		return err;
	text(st, 0, f->url, sizeof(f->url));
	f->size = sqlite3_column_int64(st, 1);
	f->has_meta = sqlite3_column_int(st, 2);
	text(st, 3, f->meta_sha, sizeof(f->meta_sha));
	sqlite3_reset(st);
	return 0;
}

int db_file_set_meta(struct db *db, const char *sha256, const char *meta_sha)
{
	sqlite3_stmt *st = stmt(db, S_FILE_SET_META);

	BIND_TEXT(st, 1, sha256);
	BIND_TEXT(st, 2, meta_sha);
	return run(db, st, "file set meta");
}

int db_flight_insert(struct db *db, const char *key, const char *tmp,
		     long pid, long long started, long long size)
{
	sqlite3_stmt *st = stmt(db, S_FLIGHT_INSERT);
	int err;

	BIND_TEXT(st, 1, key);
	BIND_TEXT(st, 2, tmp);
	sqlite3_bind_int64(st, 3, pid);
	sqlite3_bind_int64(st, 4, started);
	sqlite3_bind_int64(st, 5, size);
	err = run(db, st, "flight insert");
	if (err)
		return err;
	return sqlite3_changes(db->conn) == 1 ? 0 : EEXIST;
}

/* Reads a flights row from the columns tmp, pid, started, size, sha256
 * starting at col. */
static void flight_row(sqlite3_stmt *st, int col, struct db_flight *f)
{
	text(st, col, f->tmp, sizeof(f->tmp));
	f->pid = (long)sqlite3_column_int64(st, col + 1);
	f->started = sqlite3_column_int64(st, col + 2);
	f->size = sqlite3_column_int64(st, col + 3);
	text(st, col + 4, f->sha256, sizeof(f->sha256));
}

int db_flight_get(struct db *db, const char *key, struct db_flight *f)
{
	sqlite3_stmt *st = stmt(db, S_FLIGHT_GET);
	int err;

	BIND_TEXT(st, 1, key);
	err = row(db, st, "flight get");
	if (err)
		return err;
	flight_row(st, 0, f);
	sqlite3_reset(st);
	return 0;
}

int db_flight_delete(struct db *db, const char *key, const char *tmp)
{
	sqlite3_stmt *st = stmt(db, S_FLIGHT_DELETE);

	BIND_TEXT(st, 1, key);
	BIND_TEXT(st, 2, tmp);
	return run(db, st, "flight delete");
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
	sqlite3_stmt *st = stmt(db, S_FLIGHT_ALL);
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
		err = fail(db, "flight list");
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
	sqlite3_stmt *st = stmt(db, S_FLIGHT_SET);

	BIND_TEXT(st, 1, key);
	BIND_TEXT(st, 2, tmp);
	sqlite3_bind_int64(st, 3, size);
	return run(db, st, "flight set");
}

int db_flight_set_sha(struct db *db, const char *key, const char *tmp,
		      const char *sha256)
{
	sqlite3_stmt *st = stmt(db, S_FLIGHT_SET_SHA);

	BIND_TEXT(st, 1, key);
	BIND_TEXT(st, 2, tmp);
	BIND_TEXT(st, 3, sha256);
	return run(db, st, "flight set sha256");
}

int db_outcome_put(struct db *db, const char *key, const char *sha256,
		   const char *reason)
{
	sqlite3_stmt *st = stmt(db, S_OUTCOME_PUT);

	BIND_TEXT(st, 1, key);
	BIND_TEXT(st, 2, sha256 ? sha256 : "");
	BIND_TEXT(st, 3, reason ? reason : "");
	sqlite3_bind_int64(st, 4, (long long)time(NULL));
	return run(db, st, "outcome put");
}

int db_outcome_get(struct db *db, const char *key, char sha256[65],
		   char *reason, size_t len, long long *at)
{
	sqlite3_stmt *st = stmt(db, S_OUTCOME_GET);
	int err;

	BIND_TEXT(st, 1, key);
	err = row(db, st, "outcome get");
	if (err)
		return err;
	text(st, 0, sha256, 65);
	text(st, 1, reason, len);
	if (at)
		*at = sqlite3_column_int64(st, 2);
	sqlite3_reset(st);
	return 0;
}

int db_upstream_get(struct db *db, const char *host, long long *until,
		    char *reason, size_t len)
{
	sqlite3_stmt *st = stmt(db, S_UPSTREAM_GET);
	int err;

	BIND_TEXT(st, 1, host);
	err = row(db, st, "upstream get");
	if (err)
		return err;
	*until = sqlite3_column_int64(st, 0);
	text(st, 1, reason, len);
	sqlite3_reset(st);
	return 0;
}

int db_upstream_put(struct db *db, const char *host, long long until,
		    const char *reason)
{
	sqlite3_stmt *st = stmt(db, S_UPSTREAM_PUT);

	BIND_TEXT(st, 1, host);
	sqlite3_bind_int64(st, 2, until);
	BIND_TEXT(st, 3, reason);
	return run(db, st, "upstream put");
}

int db_upstream_delete(struct db *db, const char *host)
{
	sqlite3_stmt *st = stmt(db, S_UPSTREAM_DELETE);

	BIND_TEXT(st, 1, host);
	return run(db, st, "upstream delete");
}

int db_garbage_add(struct db *db, const char *sha256, long long since)
{
	sqlite3_stmt *st = stmt(db, S_GARBAGE_ADD);

	BIND_TEXT(st, 1, sha256);
	sqlite3_bind_int64(st, 2, since);
	return run(db, st, "garbage add");
}

int db_garbage_due(struct db *db, long long before, char (*sha)[65],
		   size_t max, size_t *n)
{
	sqlite3_stmt *st = stmt(db, S_GARBAGE_DUE);
	int rc;

	*n = 0;
	sqlite3_bind_int64(st, 1, before);
	sqlite3_bind_int64(st, 2, (long long)max);
	while (*n < max && (rc = sqlite3_step(st)) == SQLITE_ROW)
		text(st, 0, sha[(*n)++], 65);
	sqlite3_reset(st);
	return 0;
}

int db_garbage_delete(struct db *db, const char *sha256)
{
	sqlite3_stmt *st = stmt(db, S_GARBAGE_DELETE);

	BIND_TEXT(st, 1, sha256);
	return run(db, st, "garbage delete");
}

int db_page_refs(struct db *db, const char *sha256, long *count)
{
	sqlite3_stmt *st = stmt(db, S_PAGE_REFS);
	int err;

	BIND_TEXT(st, 1, sha256);
	err = row(db, st, "page refs");
	if (err)
		return err;
	*count = (long)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return 0;
}

int db_unreferenced(struct db *db, char (*sha)[65], size_t n,
		    void (*fn)(const char *sha256, void *ctx), void *ctx)
{
	static const char anti[] =
		"SELECT sha256 FROM fsck_blobs"
		" WHERE sha256 NOT IN (SELECT json_sha FROM pages)"
		" AND sha256 NOT IN (SELECT html_sha FROM pages)"
		" AND sha256 NOT IN (SELECT sha256 FROM files)"
		" AND sha256 NOT IN (SELECT meta_sha FROM files)"
		" AND sha256 NOT IN (SELECT sha256 FROM garbage)";
	sqlite3_stmt *ins = NULL, *sel = NULL;
	int err = EIO, rc;

	if (sqlite3_exec(db->conn, "CREATE TEMP TABLE IF NOT EXISTS fsck_blobs"
			 " (sha256 TEXT PRIMARY KEY); DELETE FROM fsck_blobs",
			 NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db->conn, "INSERT OR IGNORE INTO fsck_blobs"
			       " VALUES (?1)", -1, &ins, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db->conn, anti, -1, &sel, NULL) != SQLITE_OK)
		goto out;
	for (size_t i = 0; i < n; i++) {
		BIND_TEXT(ins, 1, sha[i]);
		rc = sqlite3_step(ins);
		sqlite3_reset(ins);
		if (rc != SQLITE_DONE)
			goto out;
	}
	while ((rc = sqlite3_step(sel)) == SQLITE_ROW)
		fn((const char *)sqlite3_column_text(sel, 0), ctx);
	if (rc == SQLITE_DONE)
		err = 0;
out:
	if (err)
		fail(db, "unreferenced blobs");
	sqlite3_finalize(ins);
	sqlite3_finalize(sel);
	sqlite3_exec(db->conn, "DROP TABLE IF EXISTS fsck_blobs", NULL, NULL,
		     NULL);
	return err;
}
