/* db_page: the rows of cached pages, the files they list, and renderings
 * waiting to be deleted. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "storage/db/db.h"
#include "storage/db/db_sql.h"

int db_page_get(struct db *db, const char *index, const char *project,
		struct db_page *p)
{
	sqlite3_stmt *st = db_stmt(db, S_PAGE_GET);
	int err;

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	err = db_row(db, st, "page get");
	if (err)
		return err;
	p->status = sqlite3_column_int(st, 0);
	db_text(st, 1, p->etag, sizeof(p->etag));
	db_text(st, 2, p->last_modified, sizeof(p->last_modified));
	p->fetched_at = sqlite3_column_int64(st, 3);
	p->ttl = (long)sqlite3_column_int64(st, 4);
	db_text(st, 5, p->json_sha, sizeof(p->json_sha));
	db_text(st, 6, p->html_sha, sizeof(p->html_sha));
	p->held = (long)sqlite3_column_int64(st, 7);
	db_text(st, 8, p->project_status, sizeof(p->project_status));
	p->prefetched_at = sqlite3_column_int64(st, 9);
	sqlite3_reset(st);
	return 0;
}

int db_page_put(struct db *db, const char *index, const char *project,
		const struct db_page *p)
{
	sqlite3_stmt *st = db_stmt(db, S_PAGE_PUT);

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	sqlite3_bind_int(st, 3, p->status);
	BIND_TEXT(st, 4, p->etag);
	BIND_TEXT(st, 5, p->last_modified);
	sqlite3_bind_int64(st, 6, p->fetched_at);
	sqlite3_bind_int64(st, 7, p->ttl);
	BIND_TEXT(st, 8, p->json_sha);
	BIND_TEXT(st, 9, p->html_sha);
	sqlite3_bind_int64(st, 10, p->held);
	BIND_TEXT(st, 11, p->project_status);
	sqlite3_bind_int64(st, 12, p->prefetched_at);
	return db_run(db, st, "page put");
}

int db_page_prefetch_used(struct db *db, const char *index,
			  const char *project)
{
	sqlite3_stmt *st = db_stmt(db, S_PAGE_PREFETCH_USED);
	int err;

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	err = db_run(db, st, "page prefetch used");
	if (err)
		return err;
	return sqlite3_changes(db->conn) > 0 ? 0 : ENOENT;
}

int db_page_prefetch_unused(struct db *db, long long before, long *n)
{
	sqlite3_stmt *st = db_stmt(db, S_PAGE_PREFETCH_UNUSED);
	int err;

	sqlite3_bind_int64(st, 1, before);
	err = db_row(db, st, "page prefetch unused");
	if (err)
		return err;
	*n = (long)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return 0;
}

int db_page_count_prefix(struct db *db, const char *index, const char *prefix,
			 long *n)
{
	sqlite3_stmt *st = db_stmt(db, S_PAGE_COUNT_PREFIX);
	int err;

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, prefix);
	err = db_row(db, st, "page count");
	if (err)
		return err;
	*n = (long)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return 0;
}

int db_page_touch(struct db *db, const char *index, const char *project,
		  long long fetched_at, long ttl)
{
	sqlite3_stmt *st = db_stmt(db, S_PAGE_TOUCH);

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	sqlite3_bind_int64(st, 3, fetched_at);
	sqlite3_bind_int64(st, 4, ttl);
	return db_run(db, st, "page touch");
}

int db_page_unvalidate(struct db *db, const char *index, const char *project)
{
	sqlite3_stmt *st = db_stmt(db, S_PAGE_UNVALIDATE);

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	return db_run(db, st, "page unvalidate");
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
	sqlite3_stmt *st = db_stmt(db, S_PAGE_ALL);
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
		db_text(st, 3, pr->p.etag, sizeof(pr->p.etag));
		db_text(st, 4, pr->p.last_modified, sizeof(pr->p.last_modified));
		pr->p.fetched_at = sqlite3_column_int64(st, 5);
		pr->p.ttl = (long)sqlite3_column_int64(st, 6);
		db_text(st, 7, pr->p.json_sha, sizeof(pr->p.json_sha));
		db_text(st, 8, pr->p.html_sha, sizeof(pr->p.html_sha));
		pr->p.held = (long)sqlite3_column_int64(st, 9);
		db_text(st, 10, pr->p.project_status,
			sizeof(pr->p.project_status));
		pr->p.prefetched_at = sqlite3_column_int64(st, 11);
		if (!pr->index || !pr->project) {
			err = ENOMEM;
			break;
		}
	}
	if (!err && rc != SQLITE_DONE)
		err = db_fail(db, "page list");
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
	sqlite3_stmt *st = db_stmt(db, S_PAGE_DELETE);

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, project);
	return db_run(db, st, "page delete");
}

/* Statement which on the files table, its row's key bound (?1 the
 * index, ?2 the sha256, ?3 the filename). */
static sqlite3_stmt *file_stmt(struct db *db, enum db_stmt which,
			       const char *index, const char *sha256,
			       const char *filename)
{
	sqlite3_stmt *st = db_stmt(db, which);

	BIND_TEXT(st, 1, index);
	BIND_TEXT(st, 2, sha256);
	BIND_TEXT(st, 3, filename);
	return st;
}

int db_file_put(struct db *db, const char *index, const char *sha256,
		const char *filename, const struct db_file *f)
{
	sqlite3_stmt *st = file_stmt(db, S_FILE_PUT, index, sha256,
				      filename);

	BIND_TEXT(st, 4, f->url);
	sqlite3_bind_int64(st, 5, f->size);
	sqlite3_bind_int(st, 6, f->has_meta);
	BIND_TEXT(st, 7, f->meta_sha);
	BIND_TEXT(st, 8, f->project);
	sqlite3_bind_int64(st, 9, f->upload_time);
	BIND_TEXT(st, 10, f->provenance);
	BIND_TEXT(st, 11, f->denied);
	sqlite3_bind_int(st, 12, f->yanked != 0);
	return db_run(db, st, "file put");
}

int db_file_get(struct db *db, const char *index, const char *sha256,
		const char *filename, struct db_file *f)
{
	sqlite3_stmt *st = file_stmt(db, S_FILE_GET, index, sha256,
				      filename);
	int err;

	err = db_row(db, st, "file get");
	if (err)
		return err;
	db_text(st, 0, f->url, sizeof(f->url));
	f->size = sqlite3_column_int64(st, 1);
	f->has_meta = sqlite3_column_int(st, 2);
	db_text(st, 3, f->meta_sha, sizeof(f->meta_sha));
	db_text(st, 4, f->project, sizeof(f->project));
	f->upload_time = sqlite3_column_int64(st, 5);
	db_text(st, 6, f->provenance, sizeof(f->provenance));
	db_text(st, 7, f->prov_sha, sizeof(f->prov_sha));
	f->meta_prov = sqlite3_column_int(st, 8);
	db_text(st, 9, f->denied, sizeof(f->denied));
	f->yanked = sqlite3_column_int(st, 10);
	sqlite3_reset(st);
	return 0;
}

int db_file_set_denied(struct db *db, const char *index, const char *sha256,
		       const char *filename, const char *denied)
{
	sqlite3_stmt *st = file_stmt(db, S_FILE_SET_DENIED, index, sha256,
				      filename);

	BIND_TEXT(st, 4, denied);
	return db_run(db, st, "file set denied");
}

int db_file_delete(struct db *db, const char *index, const char *sha256,
		   const char *filename)
{
	sqlite3_stmt *st = file_stmt(db, S_FILE_DELETE, index, sha256,
				      filename);

	return db_run(db, st, "file delete");
}

int db_file_set_meta(struct db *db, const char *sha256, const char *meta_sha)
{
	return db_file_set_meta_as(db, sha256, meta_sha, 0);
}

int db_file_set_meta_as(struct db *db, const char *sha256,
			const char *meta_sha, int provisional)
{
	sqlite3_stmt *st = db_stmt(db, S_FILE_SET_META);

	BIND_TEXT(st, 1, sha256);
	BIND_TEXT(st, 2, meta_sha);
	sqlite3_bind_int(st, 3, provisional != 0);
	return db_run(db, st, "file set meta");
}

int db_file_set_prov(struct db *db, const char *sha256, const char *url,
		     const char *prov_sha)
{
	sqlite3_stmt *st = db_stmt(db, S_FILE_SET_PROV);

	BIND_TEXT(st, 1, sha256);
	BIND_TEXT(st, 2, url);
	BIND_TEXT(st, 3, prov_sha);
	return db_run(db, st, "file set provenance");
}

int db_garbage_add(struct db *db, const char *sha256, long long since)
{
	sqlite3_stmt *st = db_stmt(db, S_GARBAGE_ADD);

	BIND_TEXT(st, 1, sha256);
	sqlite3_bind_int64(st, 2, since);
	return db_run(db, st, "garbage add");
}

int db_garbage_due(struct db *db, long long before, char (*sha)[65],
		   size_t max, size_t *n)
{
	sqlite3_stmt *st = db_stmt(db, S_GARBAGE_DUE);
	int rc;

	*n = 0;
	sqlite3_bind_int64(st, 1, before);
	sqlite3_bind_int64(st, 2, (long long)max);
	while (*n < max && (rc = sqlite3_step(st)) == SQLITE_ROW)
		db_text(st, 0, sha[(*n)++], 65);
	sqlite3_reset(st);
	return 0;
}

int db_garbage_delete(struct db *db, const char *sha256)
{
	sqlite3_stmt *st = db_stmt(db, S_GARBAGE_DELETE);

	BIND_TEXT(st, 1, sha256);
	return db_run(db, st, "garbage delete");
}

int db_garbage_take(struct db *db, const char *sha256)
{
	sqlite3_stmt *st = db_stmt(db, S_GARBAGE_DELETE);
	int err;

	BIND_TEXT(st, 1, sha256);
	err = db_run(db, st, "garbage take");
	if (err)
		return err;
	return sqlite3_changes(db->conn) > 0 ? 0 : ENOENT;
}

int db_refs(struct db *db, const char *sha256, long *count)
{
	sqlite3_stmt *st = db_stmt(db, S_REFS);
	int err;

	BIND_TEXT(st, 1, sha256);
	err = db_row(db, st, "page refs");
	if (err)
		return err;
	*count = (long)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return 0;
}
