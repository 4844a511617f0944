/* db_oci: the rows a registry cache keeps (db.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "storage/db/db_search.h"
#include "storage/db/db_sql.h"

int db_oci_ref_get(struct db *db, const char *registry, const char *name,
                   const char *ref, struct db_oci_ref *r)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_REF_GET);
	int err;

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, name);
	BIND_TEXT(st, 3, ref);
	err = db_row(db, st, "oci ref get");
	if (err)
		return err;
	r->status = sqlite3_column_int(st, 0);
	db_text(st, 1, r->sha256, sizeof(r->sha256));
	db_text(st, 2, r->media_type, sizeof(r->media_type));
	db_text(st, 3, r->etag, sizeof(r->etag));
	r->fetched_at = sqlite3_column_int64(st, 4);
	r->ttl = (long)sqlite3_column_int64(st, 5);
	sqlite3_reset(st);
	return 0;
}

int db_oci_ref_put(struct db *db, const char *registry, const char *name,
                   const char *ref, const struct db_oci_ref *r)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_REF_PUT);
	int err;

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, name);
	BIND_TEXT(st, 3, ref);
	sqlite3_bind_int(st, 4, r->status);
	BIND_TEXT(st, 5, r->sha256);
	BIND_TEXT(st, 6, r->media_type);
	BIND_TEXT(st, 7, r->etag);
	sqlite3_bind_int64(st, 8, r->fetched_at);
	sqlite3_bind_int64(st, 9, r->ttl);
	err = db_run(db, st, "oci ref put");
	/* a repository held is found by /+search, a tag (neither a digest
	 * nor a list row) by its name too; a miss there fails nothing but a
	 * transaction SQLite gave up */
	if (!err && r->status == 200)
		err = db_search_tag(db, registry, name,
				    strchr(ref, ':') || *ref == '/' ? "" : ref);
	return err;
}

int db_oci_ref_touch(struct db *db, const char *registry, const char *name,
                     const char *ref, long long fetched_at, long ttl)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_REF_TOUCH);

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, name);
	BIND_TEXT(st, 3, ref);
	sqlite3_bind_int64(st, 4, fetched_at);
	sqlite3_bind_int64(st, 5, ttl);
	return db_run(db, st, "oci ref touch");
}

int db_oci_blob_put(struct db *db, const char *registry, const char *name,
                    const char *sha256, long long size)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_BLOB_PUT);

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, name);
	BIND_TEXT(st, 3, sha256);
	sqlite3_bind_int64(st, 4, size);
	return db_run(db, st, "oci blob put");
}

int db_oci_blob_get(struct db *db, const char *registry, const char *name,
                    const char *sha256, long long *size)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_BLOB_GET);
	int err;

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, name);
	BIND_TEXT(st, 3, sha256);
	err = db_row(db, st, "oci blob get");
	if (err)
		return err;
	*size = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return 0;
}

int db_oci_blob_known(struct db *db, const char *registry,
                      const char *sha256)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_BLOB_KNOWN);
	int err;

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, sha256);
	err = db_row(db, st, "oci blob known");
	if (!err)
		sqlite3_reset(st);
	return err;
}

int db_oci_token_get(struct db *db, const char *registry, const char *scope,
                     char *value, size_t len, long long *expires_at)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_TOKEN_GET);
	int err;

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, scope);
	err = db_row(db, st, "oci token get");
	if (err)
		return err;
	db_text(st, 0, value, len);
	*expires_at = sqlite3_column_int64(st, 1);
	sqlite3_reset(st);
	return 0;
}

int db_oci_token_put(struct db *db, const char *registry, const char *scope,
                     const char *value, long long expires_at)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_TOKEN_PUT);

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, scope);
	BIND_TEXT(st, 3, value);
	sqlite3_bind_int64(st, 4, expires_at);
	return db_run(db, st, "oci token put");
}

int db_oci_token_delete(struct db *db, const char *registry, const char *scope)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_TOKEN_DELETE);

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, scope);
	return db_run(db, st, "oci token delete");
}

/* Reads a row of oci_uploads (id, registry, name, tmp, size, touched)
 * whose columns start at first. */
static void upload_row(sqlite3_stmt *st, int first, struct db_oci_upload *u)
{
	db_text(st, first, u->registry, sizeof(u->registry));
	db_text(st, first + 1, u->name, sizeof(u->name));
	db_text(st, first + 2, u->tmp, sizeof(u->tmp));
	u->size = sqlite3_column_int64(st, first + 3);
	u->touched = sqlite3_column_int64(st, first + 4);
}

int db_oci_upload_put(struct db *db, const struct db_oci_upload *u)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_UPLOAD_PUT);

	BIND_TEXT(st, 1, u->id);
	BIND_TEXT(st, 2, u->registry);
	BIND_TEXT(st, 3, u->name);
	BIND_TEXT(st, 4, u->tmp);
	sqlite3_bind_int64(st, 5, u->size);
	sqlite3_bind_int64(st, 6, u->touched);
	return db_run(db, st, "oci upload put");
}

int db_oci_upload_get(struct db *db, const char *id, struct db_oci_upload *u)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_UPLOAD_GET);
	int err;

	BIND_TEXT(st, 1, id);
	err = db_row(db, st, "oci upload get");
	if (err)
		return err;
	snprintf(u->id, sizeof(u->id), "%s", id);
	upload_row(st, 0, u);
	sqlite3_reset(st);
	return 0;
}

int db_oci_upload_size(struct db *db, const char *id, long long size,
                       long long now)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_UPLOAD_SIZE);

	BIND_TEXT(st, 1, id);
	sqlite3_bind_int64(st, 2, size);
	sqlite3_bind_int64(st, 3, now);
	if (db_run(db, st, "oci upload size"))
		return EIO;
	return sqlite3_changes(db->conn) ? 0 : ENOENT;
}

int db_oci_upload_delete(struct db *db, const char *id)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_UPLOAD_DELETE);

	BIND_TEXT(st, 1, id);
	return db_run(db, st, "oci upload delete");
}

int db_oci_upload_expired(struct db *db, long long before,
                          const struct db_oci_upload *after,
                          struct db_oci_upload *u, size_t max, size_t *n)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_UPLOAD_EXPIRED);
	int rc = SQLITE_DONE;

	*n = 0;
	sqlite3_bind_int64(st, 1, before);
	sqlite3_bind_int64(st, 2, after ? after->touched : -1);
	BIND_TEXT(st, 3, after ? after->id : "");
	sqlite3_bind_int64(st, 4, (sqlite3_int64)max);
	while (*n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		db_text(st, 0, u[*n].id, sizeof(u[*n].id));
		upload_row(st, 1, &u[*n]);
		(*n)++;
	}
	if (*n < max && rc != SQLITE_DONE) {
		sqlite3_reset(st);
		return db_fail(db, "oci upload expired");
	}
	sqlite3_reset(st);
	return 0;
}

int db_oci_tags(struct db *db, const char *registry, const char *name,
                struct buf *out)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_TAGS);
	int rc = SQLITE_DONE, err = 0, first = 1;

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, name);
	if (buf_adds(out, "["))
		err = ENOMEM;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if ((!first && buf_adds(out, ",")) ||
		    json_put_string(out,
		                    (const char *)sqlite3_column_text(st, 0)))
			err = ENOMEM;
		first = 0;
	}
	if (!err && rc != SQLITE_DONE)
		err = db_fail(db, "oci tags");
	sqlite3_reset(st);
	if (!err && buf_adds(out, "]"))
		err = ENOMEM;
	return err;
}

int db_oci_tags_of(struct db *db, const char *registry, const char *name,
                   const char *sha256,
                   int (*fn)(const char *tag, void *ctx), void *ctx)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_TAGS_OF);
	int rc = SQLITE_DONE, err = 0;

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, name);
	BIND_TEXT(st, 3, sha256);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (fn((const char *)sqlite3_column_text(st, 0), ctx))
			break;
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		err = db_fail(db, "oci tags of a manifest");
	sqlite3_reset(st);
	return err;
}

int db_oci_refers(struct db *db, const char *registry, const char *name,
                  const char *prefix,
                  void (*fn)(const char *sha256, const char *media_type,
                             const char *artifact_type, void *ctx),
                  void *ctx)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_REFERS);
	struct db_oci_ref *all = NULL, *grown;
	size_t n = 0, cap = 0;
	int err = 0, rc;

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, name);
	BIND_TEXT(st, 3, prefix);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		grown = db_grow(all, &cap, n, sizeof(*all), 16);
		if (!grown) {
			err = ENOMEM;
			break;
		}
		all = grown;
		db_text(st, 0, all[n].sha256, sizeof(all[n].sha256));
		db_text(st, 1, all[n].media_type, sizeof(all[n].media_type));
		db_text(st, 2, all[n].etag, sizeof(all[n].etag));
		n++;
	}
	if (!err && rc != SQLITE_DONE)
		err = db_fail(db, "oci refers");
	sqlite3_reset(st);
	for (size_t i = 0; !err && i < n; i++)
		fn(all[i].sha256, all[i].media_type, all[i].etag, ctx);
	free(all);
	return err;
}

int db_oci_delete(struct db *db, const char *registry, const char *name,
                  const char *ref, const char *sha256, int blob)
{
	sqlite3_stmt *st = db_stmt(db, blob  ? S_OCI_BLOB_DELETE
	                               : ref ? S_OCI_REF_DELETE
	                                     : S_OCI_REF_DELETE_SHA);
	int err;

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, name);
	BIND_TEXT(st, 3, ref && !blob ? ref : sha256);
	err = db_run(db, st, "oci delete");
	if (err)
		return err;
	return sqlite3_changes(db->conn) ? 0 : ENOENT;
}

int db_oci_repo_known(struct db *db, const char *registry, const char *name)
{
	sqlite3_stmt *st = db_stmt(db, S_OCI_REPO_KNOWN);
	int err;

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, name);
	err = db_row(db, st, "oci repo known");
	if (!err)
		sqlite3_reset(st);
	return err;
}
