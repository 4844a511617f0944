/* db_sql: what the db modules (db.c: the connection, the schema, every
 * statement's text; db_page.c: pages, files, garbage; db_flight.c:
 * flights, outcomes, upstreams; db_oci.c: registries' refs, blobs and
 * tokens; db_blob.c: the blob inventory; db_hosted.c: uploaded files;
 * db_token.c: upload and read tokens) share. Not for use outside
 * storage/db/: everyone else goes through db.h. */
#ifndef LARDER_DB_SQL_H
#define LARDER_DB_SQL_H

#include <limits.h>
#include <stddef.h>
#include <time.h>

#include <sqlite3.h>

#include "storage/db/db.h"

/* Every statement, prepared once when the database is opened (their text
 * is in db.c). */
enum db_stmt {
	S_PAGE_GET,
	S_PAGE_PUT,
	S_PAGE_TOUCH,
	S_PAGE_UNVALIDATE,
	S_PAGE_ALL,
	S_PAGE_DELETE,
	S_PAGE_COUNT_PREFIX,
	S_PAGE_PREFETCH_USED,
	S_PAGE_PREFETCH_UNUSED,
	S_CHECK,
	S_FILE_PUT,
	S_FILE_GET,
	S_FILE_SET_META,
	S_FILE_SET_PROV,
	S_FILE_SET_DENIED,
	S_FILE_DELETE,
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
	S_REFS,
	S_OCI_REF_GET,
	S_OCI_REF_PUT,
	S_OCI_REF_TOUCH,
	S_OCI_BLOB_PUT,
	S_OCI_BLOB_GET,
	S_OCI_BLOB_KNOWN,
	S_OCI_TOKEN_GET,
	S_OCI_TOKEN_PUT,
	S_OCI_TOKEN_DELETE,
	S_OCI_UPLOAD_PUT,
	S_OCI_UPLOAD_GET,
	S_OCI_UPLOAD_SIZE,
	S_OCI_UPLOAD_DELETE,
	S_OCI_UPLOAD_EXPIRED,
	S_OCI_TAGS,
	S_OCI_REFERS,
	S_OCI_REF_DELETE,
	S_OCI_REF_DELETE_SHA,
	S_OCI_BLOB_DELETE,
	S_OCI_REPO_KNOWN,
	S_OCI_TAGS_OF,
	S_SEARCH_NAME,
	S_SEARCH_META,
	S_SEARCH_META_FILE,
	S_SEARCH_TAG,
	S_SEARCH_QUERY,
	S_SEARCH_DROP,
	S_BLOB_ADD,
	S_BLOB_DELETE,
	S_BLOB_TOTALS,
	S_BLOB_FOLD,
	S_HOSTED_PUT,
	S_HOSTED_GET,
	S_HOSTED_PROJECT,
	S_HOSTED_PROJECTS,
	S_HOSTED_YANK,
	S_HOSTED_DELETE,
	S_HOSTED_ALL,
	S_HOSTED_HAS,
	S_TOKEN_PUT,
	S_TOKEN_GET,
	S_TOKEN_REVOKE,
	S_TOKEN_ALL,
	S_SEEN_GET,
	S_SEEN_OK,
	S_SEEN_FAILED,
	S_STATE_GET,
	S_STATE_PUT,
	S_BEGIN,
	S_COMMIT,
	S_ROLLBACK,
	S_COUNT
};

/* The columns db_hosted.c reads a hosted row from, in this order (the
 * table's own, less idx). */
#define HOSTED_COLUMNS                                                       \
	"project, version, filename, sha256, size, meta_sha,"                \
	" requires_python, uploaded_at, yanked, yanked_reason"

/* The columns db_token.c reads a token row from: the table's own. */
#define TOKEN_COLUMNS                                                        \
	"id, idx, actions, projects, salt, hash, created, expires, revoked,"  \
	" note"

struct db {
	sqlite3 *conn;
	sqlite3_stmt *st[S_COUNT];
	char path[PATH_MAX];
	struct timespec busy_since; /* when the current wait for a lock began */
};

/* Logs what failed with SQLite's message; returns EIO. */
int db_fail(struct db *db, const char *what);

/* Resets statement s for its next use and returns it. */
sqlite3_stmt *db_stmt(struct db *db, enum db_stmt s);

/* Copies text column col into out ("" for NULL), truncating to len. */
void db_text(sqlite3_stmt *st, int col, char *out, size_t len);

/* Runs a statement that returns no rows: 0 or EIO. */
int db_run(struct db *db, sqlite3_stmt *st, const char *what);

/* Steps a query expected to return at most one row: 0 at the row (reset
 * the statement after reading it), ENOENT, or EIO. */
int db_row(struct db *db, sqlite3_stmt *st, const char *what);

/* Makes room for element n of the array all (elements of size bytes, *cap
 * of them now), doubling it from first. Returns the array, moved or not,
 * or NULL when out of memory (all is then as it was). For the functions
 * that read every row before calling back. */
void *db_grow(void *all, size_t *cap, size_t n, size_t size, size_t first);

#define BIND_TEXT(st, i, s) sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC)

#endif
