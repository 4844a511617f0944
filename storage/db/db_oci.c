/* db_oci: the rows a registry cache keeps (db.h). */
#include "config.h"

#include <errno.h>

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

	BIND_TEXT(st, 1, registry);
	BIND_TEXT(st, 2, name);
	BIND_TEXT(st, 3, ref);
	sqlite3_bind_int(st, 4, r->status);
	BIND_TEXT(st, 5, r->sha256);
	BIND_TEXT(st, 6, r->media_type);
	BIND_TEXT(st, 7, r->etag);
	sqlite3_bind_int64(st, 8, r->fetched_at);
	sqlite3_bind_int64(st, 9, r->ttl);
	return db_run(db, st, "oci ref put");
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
