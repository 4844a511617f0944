/* db_search: the full-text index of what larder holds (docs/search.md):
 * the projects of cache and hosted indexes, with the summary and keywords
 * of their metadata, and the repositories of registries, with their tags.
 * Filled where pages, metadata, uploads and manifests are stored; read by
 * /+search (fcgi/admin/search.c). */
#ifndef LARDER_DB_SEARCH_H
#define LARDER_DB_SEARCH_H

#include <stddef.h>

#include "storage/db/db.h"

/* The four writes below run inside the change they index (a page, an
 * upload, a manifest). One that fails is logged and returns 0: the index
 * is a convenience, and `larder search reindex` mends it. It returns EIO
 * only when SQLite rolled back the transaction it ran in (SQLITE_FULL,
 * IOERR, NOMEM), and the caller must then fail the change. */

/* Notes project of index (a cache or hosted one) by its name, when the
 * index does not know it yet. Returns 0 or EIO, as above. */
int db_search_name(struct db *db, const char *index, const char *project);

/* Sets the summary and keywords of project of index (adding the project
 * when new). Returns 0 or EIO, as above. */
int db_search_meta(struct db *db, const char *index, const char *project,
		   const char *summary, const char *keywords);

/* As db_search_meta() for every index and project whose page lists the
 * file whose sha256 is file_sha256 and vouches for its metadata (the
 * metadata just stored, meta_sha256): the page gives that hash (or none)
 * and it is not provisional. Returns 0 or EIO, as above. */
int db_search_meta_file(struct db *db, const char *file_sha256,
			const char *meta_sha256, const char *summary,
			const char *keywords);

/* Notes repository name of registry, and tag among its tags when tag is
 * not "" (a digest is no tag). Returns 0 or EIO, as above. */
int db_search_tag(struct db *db, const char *registry, const char *name,
		  const char *tag);

struct db_search_hit {
	char kind[8];       /* "pypi" or "oci" */
	char scope[128];    /* the index or registry */
	char name[256];     /* the project or repository */
	char summary[512];  /* cut at a UTF-8 boundary */
	char keywords[512];
	char tags[2048];
};

/* A search: FTS5 queries made by common/search.h. */
struct db_search_q {
	const char *match;      /* the words, anywhere */
	const char *name_match; /* the words, in a name */
	const char *exact[2];   /* names found first, as they are */
	const char *indexes;    /* what may be shown: each name between */
	const char *registries; /* '\n's ("\nmain\nhosted\n") */
	long offset;
};

/* Runs the search q over the rows of the indexes and registries it names,
 * keeping those still held, best first (the exact names, then matches in
 * a name, then the rest, each shortest name first; of the matches, the
 * first few hundred in index order: db_search_sql.h): up to max hits from
 * the offset-th into hits (the caller's). *n is how many. Returns 0;
 * EINVAL when SQLite refused a query, with its reason in err; or EIO
 * (logged). */
int db_search_query(struct db *db, const struct db_search_q *q,
		    struct db_search_hit *hits, size_t max, size_t *n,
		    char *err, size_t errlen);

/* Indexes what the store holds by name (and each image's tags), then
 * drops the rows of what it no longer holds: *dropped is how many.
 * Returns 0 or EIO. */
int db_search_names(struct db *db, long *dropped);

/* Calls fn for each project of a cache or hosted index that has a
 * metadata blob, with the index, the project and the newest such blob's
 * sha256 (a hosted project's last upload; for a cache, any file its page
 * lists). Read whole before the first call, so fn may write. Returns 0,
 * ENOMEM or EIO. */
int db_search_meta_each(struct db *db,
			void (*fn)(const char *index, const char *project,
				   const char *meta_sha, void *ctx),
			void *ctx);

#endif
