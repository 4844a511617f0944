#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/log.h"
#include "storage/db/db.h"
#include "storage/db/db_search_sql.h"
#include "storage/db/db_sql.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* The schema this build reads and writes (PRAGMA user_version). */
#define SCHEMA_VERSION 12

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
	"  held INTEGER NOT NULL DEFAULT 0,"
	"  project_status TEXT NOT NULL DEFAULT '',"
	"  prefetched_at INTEGER NOT NULL DEFAULT 0,"
	"  PRIMARY KEY (idx, project));"
	"CREATE TABLE IF NOT EXISTS files ("
	"  idx TEXT NOT NULL, sha256 TEXT NOT NULL, filename TEXT NOT NULL,"
	"  url TEXT NOT NULL, size INTEGER NOT NULL, has_meta INTEGER NOT NULL,"
	"  meta_sha TEXT NOT NULL,"
	"  project TEXT NOT NULL DEFAULT '',"
	"  upload_time INTEGER NOT NULL DEFAULT -1,"
	"  provenance TEXT NOT NULL DEFAULT '',"
	"  prov_sha TEXT NOT NULL DEFAULT '',"
	"  meta_prov INTEGER NOT NULL DEFAULT 0,"
	"  denied TEXT NOT NULL DEFAULT '',"
	"  yanked INTEGER NOT NULL DEFAULT 0,"
	"  PRIMARY KEY (idx, sha256, filename));"
	"CREATE INDEX IF NOT EXISTS files_sha ON files (sha256);"
	/* what a policy denied, for the status page (schema 11) */
	"CREATE INDEX IF NOT EXISTS files_denied ON files (idx)"
	"  WHERE denied != '';"
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
	"  sha256 TEXT PRIMARY KEY, since INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS oci_refs ("
	"  registry TEXT NOT NULL, name TEXT NOT NULL, ref TEXT NOT NULL,"
	"  status INTEGER NOT NULL, sha256 TEXT NOT NULL,"
	"  media_type TEXT NOT NULL, etag TEXT NOT NULL,"
	"  fetched_at INTEGER NOT NULL, ttl INTEGER NOT NULL,"
	"  PRIMARY KEY (registry, name, ref));"
	"CREATE INDEX IF NOT EXISTS oci_refs_sha ON oci_refs (sha256);"
	"CREATE TABLE IF NOT EXISTS oci_blobs ("
	"  registry TEXT NOT NULL, name TEXT NOT NULL, sha256 TEXT NOT NULL,"
	"  size INTEGER NOT NULL,"
	"  PRIMARY KEY (registry, name, sha256));"
	"CREATE INDEX IF NOT EXISTS oci_blobs_sha ON oci_blobs (sha256);"
	/* a hosted registry's blob upload sessions: the temp file in DATA/tmp
	 * holds the bytes so far (schema 10) */
	"CREATE TABLE IF NOT EXISTS oci_uploads ("
	"  id TEXT PRIMARY KEY, registry TEXT NOT NULL, name TEXT NOT NULL,"
	"  tmp TEXT NOT NULL, size INTEGER NOT NULL,"
	"  touched INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS oci_tokens ("
	"  registry TEXT NOT NULL, scope TEXT NOT NULL, value TEXT NOT NULL,"
	"  expires_at INTEGER NOT NULL,"
	"  PRIMARY KEY (registry, scope));"
	SEARCH_SCHEMA
	"CREATE TABLE IF NOT EXISTS blobs ("
	"  sha256 TEXT PRIMARY KEY, size INTEGER NOT NULL,"
	"  used_at INTEGER NOT NULL);"
	"CREATE INDEX IF NOT EXISTS blobs_used ON blobs (used_at);"
	"CREATE TABLE IF NOT EXISTS hosted ("
	"  idx TEXT NOT NULL, project TEXT NOT NULL, version TEXT NOT NULL,"
	"  filename TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL,"
	"  meta_sha TEXT NOT NULL, requires_python TEXT NOT NULL,"
	"  uploaded_at INTEGER NOT NULL, yanked INTEGER NOT NULL,"
	"  yanked_reason TEXT NOT NULL,"
	"  PRIMARY KEY (idx, filename));"
	"CREATE INDEX IF NOT EXISTS hosted_project ON hosted (idx, project);"
	"CREATE INDEX IF NOT EXISTS hosted_sha ON hosted (sha256);"
	"CREATE INDEX IF NOT EXISTS hosted_meta ON hosted (meta_sha);"
	"CREATE TABLE IF NOT EXISTS tokens ("
	"  id TEXT PRIMARY KEY, idx TEXT NOT NULL, actions TEXT NOT NULL,"
	"  projects TEXT NOT NULL, salt TEXT NOT NULL, hash TEXT NOT NULL,"
	"  created INTEGER NOT NULL, expires INTEGER NOT NULL,"
	"  revoked INTEGER NOT NULL, note TEXT NOT NULL);"
	/* OSV advisories' affected ranges, as larder policy import-osv
	 * loaded them (schema 11; docs/policy.md) */
	"CREATE TABLE IF NOT EXISTS osv ("
	"  id TEXT NOT NULL, project TEXT NOT NULL, introduced TEXT NOT NULL,"
	"  fixed TEXT NOT NULL, last_affected TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS osv_project ON osv (project);"
	"CREATE INDEX IF NOT EXISTS osv_id ON osv (id);"
	/* what the status page says of an upstream host, past the breaker's
	 * memory (upstreams): its last answer, its last failure */
	"CREATE TABLE IF NOT EXISTS upstream_seen ("
	"  host TEXT PRIMARY KEY, ok_at INTEGER NOT NULL,"
	"  failed_at INTEGER NOT NULL, last_failed INTEGER NOT NULL,"
	"  reason TEXT NOT NULL);"
	/* webhook events, one row per receiver, written with the change
	 * they report and delivered in id order per (hook, idx):
	 * db_outbox.c; state 0 pending, 1 delivered, 2 given up */
	"CREATE TABLE IF NOT EXISTS outbox ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT, hook TEXT NOT NULL,"
	"  event TEXT NOT NULL, idx TEXT NOT NULL, project TEXT NOT NULL,"
	"  version TEXT NOT NULL, uuid TEXT NOT NULL, body TEXT NOT NULL,"
	"  created INTEGER NOT NULL, attempts INTEGER NOT NULL,"
	"  next_at INTEGER NOT NULL, state INTEGER NOT NULL,"
	"  done_at INTEGER NOT NULL, status INTEGER NOT NULL,"
	"  error TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS outbox_queue ON outbox (state, hook, idx, id);"
	/* small named values: the scrub's cursor and counts */
	"CREATE TABLE IF NOT EXISTS state ("
	"  key TEXT PRIMARY KEY, value TEXT NOT NULL);";

/* What a database made before user_version was kept (version 0) lacks. */
static const char from_v0[] =
	"ALTER TABLE flights ADD COLUMN sha256 TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE outcomes ADD COLUMN at INTEGER NOT NULL DEFAULT 0;";

/* The columns schemas 5 to 12 added to tables that were there before,
 * each added where it is missing, then what fills it in (or NULL). A store
 * from before meta_prov recorded metadata larder made from unverified
 * bytes (range reads, an upstream .metadata no page vouched for) as if
 * verified: every metadata hash it holds is provisional until the wheel
 * is verified or a page gives the hash again. */
static const struct {
	const char *table, *column, *decl, *then;
} added_cols[] = {
	{"pages", "held", "INTEGER NOT NULL DEFAULT 0", NULL},
	{"pages", "project_status", "TEXT NOT NULL DEFAULT ''", NULL},
	{"pages", "prefetched_at", "INTEGER NOT NULL DEFAULT 0", NULL},
	{"files", "project", "TEXT NOT NULL DEFAULT ''", NULL},
	{"files", "upload_time", "INTEGER NOT NULL DEFAULT -1", NULL},
	{"files", "provenance", "TEXT NOT NULL DEFAULT ''", NULL},
	{"files", "prov_sha", "TEXT NOT NULL DEFAULT ''", NULL},
	{"files", "meta_prov", "INTEGER NOT NULL DEFAULT 0",
	 "UPDATE files SET meta_prov = 1 WHERE meta_sha != ''"},
	{"files", "denied", "TEXT NOT NULL DEFAULT ''", NULL},
	/* what a request decides again under a license= rule (schema 12) */
	{"files", "yanked", "INTEGER NOT NULL DEFAULT 0", NULL},
};

static const char *const sql[S_COUNT] = {
	[S_PAGE_GET] = "SELECT status, etag, last_modified, fetched_at, ttl,"
		       " json_sha, html_sha, held, project_status,"
		       " prefetched_at FROM pages"
		       " WHERE idx = ?1 AND project = ?2",
	/* by name: a migrated table has its columns in the order they were
	 * added */
	[S_PAGE_PUT] = "INSERT OR REPLACE INTO pages (idx, project, status,"
		       " etag, last_modified, fetched_at, ttl, json_sha,"
		       " html_sha, held, project_status, prefetched_at) VALUES"
		       " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
	[S_PAGE_UNVALIDATE] = "UPDATE pages SET etag = '', last_modified = ''"
			      " WHERE idx = ?1 AND project = ?2",
	[S_PAGE_TOUCH] = "UPDATE pages SET fetched_at = ?3, ttl = ?4"
			 " WHERE idx = ?1 AND project = ?2",
	[S_PAGE_ALL] = "SELECT idx, project, status, etag, last_modified,"
		       " fetched_at, ttl, json_sha, html_sha, held,"
		       " project_status, prefetched_at FROM pages",
	[S_PAGE_DELETE] = "DELETE FROM pages WHERE idx = ?1 AND project = ?2",
	[S_PAGE_COUNT_PREFIX] = "SELECT count(*) FROM pages WHERE idx = ?1"
				" AND substr(project, 1, length(?2)) = ?2",
	[S_PAGE_PREFETCH_USED] = "UPDATE pages SET prefetched_at = 0"
				 " WHERE idx = ?1 AND project = ?2"
				 " AND prefetched_at != 0",
	[S_PAGE_PREFETCH_UNUSED] = "SELECT count(*) FROM pages"
				   " WHERE prefetched_at != 0"
				   " AND prefetched_at < ?1",
	[S_CHECK] = "PRAGMA quick_check",
	/* a metadata hash learnt after the fact (db_file_set_meta) stays
	 * while the page still says the same of the metadata, and so does
	 * the hash of a provenance fetched from a URL the page still lists;
	 * a hash the page gives is never provisional */
	[S_FILE_PUT] = "INSERT INTO files VALUES"
		       " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, '', 0, ?11,"
		       " ?12)"
		       " ON CONFLICT (idx, sha256, filename) DO UPDATE SET"
		       " url = excluded.url, size = excluded.size,"
		       " meta_sha = CASE WHEN excluded.meta_sha != '' THEN"
		       " excluded.meta_sha WHEN excluded.has_meta = has_meta"
		       " THEN meta_sha ELSE '' END,"
		       " meta_prov = CASE WHEN excluded.meta_sha = ''"
		       " AND excluded.has_meta = has_meta"
		       " THEN meta_prov ELSE 0 END,"
		       " has_meta = excluded.has_meta,"
		       " project = excluded.project,"
		       " upload_time = excluded.upload_time,"
		       " prov_sha = CASE WHEN excluded.provenance = provenance"
		       " THEN prov_sha ELSE '' END,"
		       " provenance = excluded.provenance,"
		       " denied = excluded.denied, yanked = excluded.yanked",
	[S_FILE_GET] = "SELECT url, size, has_meta, meta_sha, project,"
		       " upload_time, provenance, prov_sha, meta_prov, denied,"
		       " yanked FROM files"
		       " WHERE idx = ?1 AND sha256 = ?2 AND filename = ?3",
	/* a verified hash (?3 = 0) replaces a provisional one; a
	 * provisional one only fills a gap */
	[S_FILE_SET_META] = "UPDATE files SET meta_sha = ?2,"
			    " meta_prov = ?3"
			    " WHERE sha256 = ?1 AND (meta_sha = ''"
			    " OR (?3 = 0 AND meta_prov = 1))",
	[S_FILE_SET_PROV] = "UPDATE files SET prov_sha = ?3"
			    " WHERE sha256 = ?1 AND provenance = ?2",
	[S_FILE_SET_DENIED] = "UPDATE files SET denied = ?4"
			      " WHERE idx = ?1 AND sha256 = ?2"
			      " AND filename = ?3",
	[S_FILE_DELETE] = "DELETE FROM files"
			  " WHERE idx = ?1 AND sha256 = ?2 AND filename = ?3",
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
	[S_REFS] = "SELECT (SELECT count(*) FROM pages"
		   " WHERE json_sha = ?1 OR html_sha = ?1)"
		   " + (SELECT count(*) FROM oci_refs WHERE sha256 = ?1)"
		   " + (SELECT count(*) FROM hosted WHERE sha256 = ?1)"
		   " + (SELECT count(*) FROM hosted WHERE meta_sha = ?1)",
	[S_OCI_REF_GET] = "SELECT status, sha256, media_type, etag,"
			  " fetched_at, ttl FROM oci_refs"
			  " WHERE registry = ?1 AND name = ?2 AND ref = ?3",
	[S_OCI_REF_PUT] = "INSERT OR REPLACE INTO oci_refs VALUES"
			  " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[S_OCI_REF_TOUCH] = "UPDATE oci_refs SET fetched_at = ?4, ttl = ?5"
			    " WHERE registry = ?1 AND name = ?2 AND ref = ?3",
	[S_OCI_BLOB_PUT] = "INSERT OR REPLACE INTO oci_blobs VALUES"
			   " (?1, ?2, ?3, ?4)",
	[S_OCI_BLOB_GET] = "SELECT size FROM oci_blobs WHERE registry = ?1"
			   " AND name = ?2 AND sha256 = ?3",
	[S_OCI_BLOB_KNOWN] = "SELECT 1 FROM oci_blobs WHERE sha256 = ?2"
			     " AND registry = ?1 LIMIT 1",
	[S_OCI_TOKEN_GET] = "SELECT value, expires_at FROM oci_tokens"
			    " WHERE registry = ?1 AND scope = ?2",
	[S_OCI_TOKEN_PUT] = "INSERT OR REPLACE INTO oci_tokens VALUES"
			    " (?1, ?2, ?3, ?4)",
	[S_OCI_TOKEN_DELETE] = "DELETE FROM oci_tokens"
			       " WHERE registry = ?1 AND scope = ?2",
	[S_OCI_UPLOAD_PUT] = "INSERT INTO oci_uploads VALUES"
			     " (?1, ?2, ?3, ?4, ?5, ?6)",
	[S_OCI_UPLOAD_GET] = "SELECT registry, name, tmp, size, touched"
			     " FROM oci_uploads WHERE id = ?1",
	[S_OCI_UPLOAD_SIZE] = "UPDATE oci_uploads SET size = ?2, touched = ?3"
			      " WHERE id = ?1",
	[S_OCI_UPLOAD_DELETE] = "DELETE FROM oci_uploads WHERE id = ?1",
	/* oldest first, from after the last row a batch read: rows a
	 * caller keeps do not hold the next batch back */
	[S_OCI_UPLOAD_EXPIRED] = "SELECT id, registry, name, tmp, size,"
				 " touched FROM oci_uploads"
				 " WHERE touched < ?1 AND (touched, id) > (?2, ?3)"
				 " ORDER BY touched, id LIMIT ?4",
	/* a hosted repository's tags: what is neither a digest nor a list */
	[S_OCI_TAGS] = "SELECT ref FROM oci_refs WHERE registry = ?1"
		       " AND name = ?2 AND status = 200 AND ref NOT LIKE '%:%'"
		       " AND ref NOT LIKE '/%' ORDER BY ref",
	/* the tags of a repository that point at one manifest (a policy's
	 * word on a manifest by digest) */
	[S_OCI_TAGS_OF] = "SELECT ref FROM oci_refs WHERE sha256 = ?3"
			  " AND registry = ?1 AND name = ?2 AND status = 200"
			  " AND ref NOT LIKE '%:%' AND ref NOT LIKE '/%'",
	/* a hosted repository's referrers of one subject: the rows
	 * "/refers/<subject>/<digest>" */
	[S_OCI_REFERS] = "SELECT sha256, media_type, etag FROM oci_refs"
			 " WHERE registry = ?1 AND name = ?2"
			 " AND substr(ref, 1, length(?3)) = ?3 ORDER BY ref",
	[S_OCI_REF_DELETE] = "DELETE FROM oci_refs WHERE registry = ?1"
			     " AND name = ?2 AND ref = ?3",
	/* a manifest, every tag that names it, and its place among its
	 * subject's referrers */
	[S_OCI_REF_DELETE_SHA] = "DELETE FROM oci_refs WHERE registry = ?1"
				 " AND name = ?2 AND sha256 = ?3"
				 " AND ref NOT LIKE '/blob/%'",
	[S_OCI_BLOB_DELETE] = "DELETE FROM oci_blobs WHERE registry = ?1"
			      " AND name = ?2 AND sha256 = ?3",
	SEARCH_STATEMENTS
	[S_OCI_REPO_KNOWN] = "SELECT 1 FROM oci_refs WHERE registry = ?1"
			     " AND name = ?2 AND status = 200 LIMIT 1",
	/* a row's size only grows: a page's .gz copy made after its blob
	 * was recorded (storage/blob.h) is counted from then on */
	[S_BLOB_ADD] = "INSERT INTO blobs VALUES (?1, ?2, ?3)"
		       " ON CONFLICT (sha256) DO UPDATE SET size = excluded.size"
		       " WHERE excluded.size > blobs.size",
	[S_BLOB_DELETE] = "DELETE FROM blobs WHERE sha256 = ?1",
	[S_BLOB_TOTALS] = "SELECT coalesce(sum(size), 0), count(*) FROM blobs",
	[S_BLOB_FOLD] = "UPDATE blobs SET used_at = ?2 WHERE sha256 >= ?1"
			" AND sha256 < ?1 || 'g' AND used_at < ?2",
	[S_HOSTED_PUT] = "INSERT OR REPLACE INTO hosted VALUES"
			 " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
	[S_HOSTED_GET] = "SELECT " HOSTED_COLUMNS " FROM hosted"
			 " WHERE idx = ?1 AND filename = ?2",
	[S_HOSTED_PROJECT] = "SELECT " HOSTED_COLUMNS " FROM hosted"
			     " WHERE idx = ?1 AND project = ?2"
			     " ORDER BY uploaded_at, filename",
	[S_HOSTED_PROJECTS] = "SELECT DISTINCT project FROM hosted"
			      " WHERE idx = ?1 ORDER BY project",
	[S_HOSTED_YANK] = "UPDATE hosted SET yanked = ?4, yanked_reason = ?5"
			  " WHERE idx = ?1 AND project = ?2 AND version = ?3",
	[S_HOSTED_DELETE] = "DELETE FROM hosted WHERE idx = ?1 AND filename = ?2",
	[S_HOSTED_ALL] = "SELECT " HOSTED_COLUMNS ", idx FROM hosted",
	[S_HOSTED_HAS] = "SELECT 1 FROM hosted WHERE idx = ?1 AND project = ?2"
			 " LIMIT 1",
	[S_TOKEN_PUT] = "INSERT INTO tokens VALUES"
			" (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
	[S_TOKEN_GET] = "SELECT " TOKEN_COLUMNS " FROM tokens WHERE id = ?1",
	[S_TOKEN_REVOKE] = "UPDATE tokens SET revoked = 1 WHERE id = ?1",
	[S_TOKEN_ALL] = "SELECT " TOKEN_COLUMNS " FROM tokens ORDER BY created",
	[S_SEEN_GET] = "SELECT ok_at, failed_at, last_failed, reason"
		       " FROM upstream_seen WHERE host = ?1",
	[S_SEEN_OK] = "INSERT INTO upstream_seen VALUES (?1, ?2, 0, 0, '')"
		      " ON CONFLICT (host) DO UPDATE SET ok_at = ?2,"
		      " last_failed = 0",
	[S_SEEN_FAILED] = "INSERT INTO upstream_seen VALUES (?1, 0, ?2, 1, ?3)"
			  " ON CONFLICT (host) DO UPDATE SET failed_at = ?2,"
			  " last_failed = 1, reason = ?3",
	[S_STATE_GET] = "SELECT value FROM state WHERE key = ?1",
	[S_STATE_PUT] = "INSERT OR REPLACE INTO state VALUES (?1, ?2)",
	[S_BEGIN] = "BEGIN IMMEDIATE",
	[S_COMMIT] = "COMMIT",
	[S_ROLLBACK] = "ROLLBACK",
};

void *db_grow(void *all, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t want;
	void *grown;

	if (n < *cap)
		return all;
	want = *cap ? *cap * 2 : first;
	grown = realloc(all, want * size);
	if (grown)
		*cap = want;
	return grown;
}

int db_fail(struct db *db, const char *what)
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

static int has_column(struct db *db, const char *table, const char *name)
{
	sqlite3_stmt *st;
	int found = 0;

	if (sqlite3_prepare_v2(db->conn, "SELECT 1 FROM pragma_table_info(?1)"
			       " WHERE name = ?2", -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

/* Adds the columns of added_cols that an older store's tables lack. Returns
 * 0, or 1 when SQLite refused one. */
static int add_columns(struct db *db)
{
	char alter[256];

	for (size_t i = 0; i < sizeof(added_cols) / sizeof(added_cols[0]);
	     i++) {
		if (!has_table(db, added_cols[i].table) ||
		    has_column(db, added_cols[i].table, added_cols[i].column))
			continue;
		snprintf(alter, sizeof(alter), "ALTER TABLE %s ADD COLUMN %s %s",
			 added_cols[i].table, added_cols[i].column,
			 added_cols[i].decl);
		if (sqlite3_exec(db->conn, alter, NULL, NULL, NULL) != SQLITE_OK)
			return 1;
		if (added_cols[i].then &&
		    sqlite3_exec(db->conn, added_cols[i].then, NULL, NULL,
				 NULL) != SQLITE_OK)
			return 1;
	}
	return 0;
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
		if (v < 11 && add_columns(db))
			break;
		if (sqlite3_exec(db->conn, schema, NULL, NULL, NULL) != SQLITE_OK ||
		    (v < 11 && sqlite3_exec(db->conn, SEARCH_FROM_STORE, NULL,
					    NULL, NULL) != SQLITE_OK) ||
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

/* SQLite's busy handler: whether to try a taken lock again (1) or give up
 * with SQLITE_BUSY (0, after DB_BUSY_MS). SQLite's own (sqlite3_busy_timeout)
 * sleeps 1, 2, 5, 10, 15, 20, 25, 25... ms between tries, so a writer that
 * meets the lock of a ~1 ms transaction sleeps 10 to 60 ms, long after it
 * was released; this one tries again after 200 us, doubling to at most
 * DB_BUSY_STEP_US, so a waiter is at most that late. A try is one
 * non-blocking fcntl lock on the -shm file: cheap. */
static int busy_wait(void *arg, int count)
{
	struct db *db = arg;
	struct timespec now;
	long long us = 200LL << (count < 4 ? count : 4);

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (count == 0)
		db->busy_since = now;
	else if ((now.tv_sec - db->busy_since.tv_sec) * 1000LL +
			 (now.tv_nsec - db->busy_since.tv_nsec) / 1000000 >=
		 DB_BUSY_MS)
		return 0;
	if (us > DB_BUSY_STEP_US)
		us = DB_BUSY_STEP_US;
	usleep((useconds_t)us);
	return 1;
}

/* Makes the database and its -wal and -shm files larder's alone (0600),
 * before SQLite opens it: they hold registry tokens. A new database is
 * made 0600 here, and SQLite gives the -wal and -shm it makes the
 * database's mode; a store made by an older larder (0644) is put right.
 * Only modes are changed, by path, never through a descriptor (closing one
 * would drop this process's POSIX locks on the file). Returns 0 or an
 * errno. */
static int db_private(const char *path, int create)
{
	static const char *const ext[] = {"", "-wal", "-shm"};
	char p[PATH_MAX + 8];
	struct stat st;
	int fd;

	if (create) {
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			  0600);
		if (fd >= 0)
			close(fd); /* new and empty: nobody holds a lock on it */
		else if (errno != EEXIST)
			return errno;
	}
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", path, ext[i]);
		if (lstat(p, &st) < 0 || !S_ISREG(st.st_mode) ||
		    !(st.st_mode & 077) || st.st_uid != geteuid())
			continue;
		if (chmod(p, st.st_mode & 0700) < 0)
			log_warn(errno, p, "making it private (0600)");
	}
	return 0;
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
	err = db_private(db->path, create);
	if (err) {
		log_error(err, db->path, "create");
		goto fail;
	}
	err = EIO;
	if (sqlite3_open_v2(db->path, &db->conn,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
				    (create ? SQLITE_OPEN_CREATE : 0),
			    NULL) != SQLITE_OK) {
		db_fail(db, "open");
		goto fail;
	}
	/* Writers queue behind each other; a client never sees "locked". */
	sqlite3_busy_handler(db->conn, busy_wait, db);
	if (journal_wal(db) != 0 ||
	    exec_retry(db, "PRAGMA synchronous=NORMAL", "synchronous") != 0 ||
	    schema_up(db) != 0)
		goto fail;
	for (int i = 0; i < S_COUNT; i++) {
		if (sqlite3_prepare_v3(db->conn, sql[i], -1,
				       SQLITE_PREPARE_PERSISTENT, &db->st[i],
				       NULL) != SQLITE_OK) {
			db_fail(db, sql[i]);
			goto fail;
		}
	}
	*out = db;
	return 0;
fail:
	db_close(db);
	return err;
}

const char *db_file(const struct db *db)
{
	return db->path;
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

sqlite3_stmt *db_stmt(struct db *db, enum db_stmt s)
{
	sqlite3_reset(db->st[s]);
	sqlite3_clear_bindings(db->st[s]);
	return db->st[s];
}

void db_text(sqlite3_stmt *st, int col, char *out, size_t len)
{
	const unsigned char *t = sqlite3_column_text(st, col);

	snprintf(out, len, "%s", t ? (const char *)t : "");
}

int db_run(struct db *db, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return db_fail(db, what);
	return 0;
}

int db_row(struct db *db, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 0;
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return ENOENT;
	return db_fail(db, what);
}

int db_check(struct db *db, char *msg, size_t len)
{
	sqlite3_stmt *st = db_stmt(db, S_CHECK);
	int err = 0;

	snprintf(msg, len, "ok");
	if (sqlite3_step(st) == SQLITE_ROW) {
		db_text(st, 0, msg, len);
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
	return db_run(db, db_stmt(db, S_BEGIN), "begin");
}

int db_commit(struct db *db)
{
	return db_run(db, db_stmt(db, S_COMMIT), "commit");
}

void db_pause(void)
{
	usleep(2 * DB_BUSY_STEP_US);
}

void db_rollback(struct db *db)
{
	if (!sqlite3_get_autocommit(db->conn))
		db_run(db, db_stmt(db, S_ROLLBACK), "rollback");
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
		" AND sha256 NOT IN (SELECT prov_sha FROM files)"
		" AND sha256 NOT IN (SELECT sha256 FROM garbage)"
		" AND sha256 NOT IN (SELECT sha256 FROM oci_refs)"
		" AND sha256 NOT IN (SELECT sha256 FROM oci_blobs)"
		" AND sha256 NOT IN (SELECT sha256 FROM hosted)"
		" AND sha256 NOT IN (SELECT meta_sha FROM hosted)";
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
		db_fail(db, "unreferenced blobs");
	sqlite3_finalize(ins);
	sqlite3_finalize(sel);
	sqlite3_exec(db->conn, "DROP TABLE IF EXISTS fsck_blobs", NULL, NULL,
		     NULL);
	return err;
}
