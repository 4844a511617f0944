/* db: the one SQLite database in the data directory (DATA/larder.db).
 *
 * Opened after fork, one connection per process, WAL, a busy handler that
 * retries a taken lock every 200 us to 2 ms for up to 30 s, short
 * transactions, statements prepared once for the life of the process.
 * Tables:
 *   pages    freshness and the transformed renderings of each cached page
 *   files    every (index, sha256, filename) an upstream page listed, with
 *            the upstream URL it may be fetched from
 *   flights  single-flight claims: who is fetching a key, into which file
 *   outcomes how the last fetch of a key ended: the blob it committed, or
 *            why it failed, for the requesters that followed it
 *   oci_refs   what a registry's tag, manifest digest, tag list or
 *              referrers list names, with its freshness
 *   oci_blobs  every blob a registry's repository was seen to hold
 *   oci_tokens bearer tokens per (registry, scope), shared by all workers
 *   blobs    the inventory of the blob store: every blob's size and when
 *            it was last used (as of the last collector run), for the
 *            disk budget (storage/gc.h)
 *   hosted   every file uploaded to a hosted index, with what its page
 *            lists of it
 *   tokens   upload and read tokens: what each may do, and a salted hash
 *            of its secret (never the secret)
 */
#ifndef LARDER_DB_H
#define LARDER_DB_H

#include <stddef.h>

#include "common/buf.h"
#include "common/pypi/policy.h"

/* How long a statement waits for another connection's write lock before
 * it fails with SQLITE_BUSY (ms), and the longest sleep between two tries
 * (us): a waiter learns the lock is free at most that long after it is. */
#define DB_BUSY_MS 30000
#define DB_BUSY_STEP_US 2000

struct db;

struct db_page {
	int status;               /* 200, or 404 for a remembered miss */
	char etag[256];           /* upstream's, "" when none */
	char last_modified[64];   /* upstream's, "" when none */
	long long fetched_at;     /* unix seconds of the last fetch or 304 */
	long ttl;                 /* seconds fresh after fetched_at */
	char json_sha[65];        /* blob of the JSON rendering */
	char html_sha[65];        /* blob of the HTML rendering */
	long held;                /* files the renderings leave out for
	                             being too new (min_release_age) */
	char project_status[16];  /* PEP 792: "" (active), "archived",
	                             "quarantined", "deprecated" */
	long long prefetched_at;  /* unix seconds a prefetch fetched it, no
	                             client having asked since; 0: none */
};

struct db_file {
	char url[2048];           /* upstream URL */
	long long size;           /* -1 unknown */
	int has_meta;             /* a .metadata sibling was advertised */
	char meta_sha[65];        /* its sha256, "" when not given */
	char project[256];        /* normalised name of the project whose
	                             page listed it, "" when not recorded */
	long long upload_time;    /* unix seconds as the page said, -1 */
	char provenance[2048];    /* PEP 740: the upstream URL of its
	                             .provenance, "" when none was listed */
	char prov_sha[65];        /* sha256 of the provenance last fetched
	                             from it, "" before (db_file_put keeps it
	                             while the URL stays the same) */
	int meta_prov;            /* meta_sha names metadata larder read
	                             from unverified bytes (range reads of
	                             the upstream file): provisional */
	char denied[384];         /* why a [policy] denies it, as the page
	                             was rendered (or a request under a
	                             license= rule decided since); ""
	                             allowed (policy.h) */
	int yanked;               /* the page said it was yanked */
};

struct db_flight {
	char tmp[4096];           /* the temp file being filled */
	long pid;                 /* the owner */
	long long started;        /* unix seconds */
	long long size;           /* expected size, -1 until known */
	char sha256[65];          /* verified hash of the bytes, "" before */
};

/* Opens (creating if needed) DATA/larder.db and prepares every statement.
 * Returns 0 or an errno (EIO for SQLite errors, logged); *out is the
 * caller's to db_close(). */
int db_open(const char *data_dir, struct db **out);

/* Opens DATA/larder.db only if it exists (for commands that inspect a
 * store and must not make one). Returns 0, ENOENT, or as db_open(). */
int db_open_existing(const char *data_dir, struct db **out);

/* Finalises the statements and closes the connection. NULL is fine. */
void db_close(struct db *db);

/* Reads the page row of (index, project); project "" is the project list.
 * Returns 0, ENOENT, or EIO. */
int db_page_get(struct db *db, const char *index, const char *project,
		struct db_page *p);

/* Writes the page row. Returns 0 or EIO. */
int db_page_put(struct db *db, const char *index, const char *project,
		const struct db_page *p);

/* Renews a page after a 304: fetched_at and ttl. Returns 0 or EIO. */
int db_page_touch(struct db *db, const char *index, const char *project,
		  long long fetched_at, long ttl);

/* Forgets a page's validators (ETag, Last-Modified), so that its next
 * refresh fetches the body and renders it again, not a 304: for a page
 * that would now render otherwise (a metadata hash learnt). Returns 0 or
 * EIO. */
int db_page_unvalidate(struct db *db, const char *index, const char *project);

/* Calls fn for every page row (after reading them all: fn may change the
 * table). Returns 0, ENOMEM, or EIO. */
int db_page_each(struct db *db,
		 void (*fn)(const char *index, const char *project,
			    const struct db_page *p, void *ctx),
		 void *ctx);

/* Counts the page rows of index whose project starts with prefix into
 * *n. Returns 0 or EIO. */
int db_page_count_prefix(struct db *db, const char *index, const char *prefix,
			 long *n);

/* A client asked for the page of (index, project): clears the mark a
 * prefetch left on it. Returns 0 when this call cleared it (so counts the
 * prefetch as used, once, whichever process asks first), ENOENT when
 * there was none, or EIO. */
int db_page_prefetch_used(struct db *db, const char *index,
			  const char *project);

/* Counts into *n the pages a prefetch fetched before unix time before that
 * no client has asked for since. Returns 0 or EIO. */
int db_page_prefetch_unused(struct db *db, long long before, long *n);

/* Forgets a page; the next request fetches it again. Returns 0 or EIO. */
int db_page_delete(struct db *db, const char *index, const char *project);

/* Runs SQLite's quick_check. Returns 0 when the database is sound, EIO
 * with the first complaint in msg otherwise. */
int db_check(struct db *db, char *msg, size_t len);

/* Starts and ends a write transaction (BEGIN IMMEDIATE). Return 0 or EIO;
 * db_rollback never fails. */
int db_begin(struct db *db);
int db_commit(struct db *db);
void db_rollback(struct db *db);

/* Between two write transactions of a long run of them: sleeps past a
 * waiting writer's longest step (DB_BUSY_STEP_US), so a worker waiting for
 * the lock takes it, instead of meeting the next transaction of the run
 * again and again (a run of batches taken back to back holds the lock,
 * for a poller, as long as one transaction for the whole run). */
void db_pause(void);

/* Records that index listed (sha256, filename) as f says. Call inside
 * db_begin()/db_commit() when adding many. Returns 0 or EIO. */
int db_file_put(struct db *db, const char *index, const char *sha256,
		const char *filename, const struct db_file *f);

/* Sets why a policy denies the listed file ("" allowed), as a request
 * decided it (fcgi/pypi/license.h). Returns 0 or EIO. */
int db_file_set_denied(struct db *db, const char *index, const char *sha256,
		       const char *filename, const char *denied);

/* Looks up a listed file. Returns 0, ENOENT, or EIO. */
int db_file_get(struct db *db, const char *index, const char *sha256,
		const char *filename, struct db_file *f);

/* Records that the provenance of the file sha256 fetched from url (as
 * the rows listing it say) is the blob prov_sha. Returns 0 or EIO. */
int db_file_set_prov(struct db *db, const char *sha256, const char *url,
		     const char *prov_sha);

/* Forgets that index listed (sha256, filename). Returns 0 or EIO. */
int db_file_delete(struct db *db, const char *index, const char *sha256,
		   const char *filename);

/* Sets the metadata hash of every row for the file sha256 where it was
 * unknown (the sibling was advertised without one) or provisional: the
 * hash of metadata read from verified bytes. Returns 0 or EIO. */
int db_file_set_meta(struct db *db, const char *sha256, const char *meta_sha);

/* As db_file_set_meta(), or, when provisional, records meta_sha as
 * provisional where the hash was unknown (never over a verified one).
 * Returns 0 or EIO. */
int db_file_set_meta_as(struct db *db, const char *sha256,
			const char *meta_sha, int provisional);

/* Inserts the claim on key. Returns 0, EEXIST when a claim stands, or EIO. */
int db_flight_insert(struct db *db, const char *key, const char *tmp,
		     long pid, long long started, long long size);

/* Reads the claim on key. Returns 0, ENOENT, or EIO. */
int db_flight_get(struct db *db, const char *key, struct db_flight *f);

/* Deletes the claim on key if it still names tmp. Returns 0 or EIO. */
int db_flight_delete(struct db *db, const char *key, const char *tmp);

/* Calls fn(key, row, ctx) for every claim, after reading them all (fn may
 * change the table). Returns 0, ENOMEM, or EIO. */
int db_flight_each(struct db *db,
		   void (*fn)(const char *key, const struct db_flight *row,
			      void *ctx),
		   void *ctx);

/* Records the expected size on the claim naming tmp. Returns 0 or EIO. */
int db_flight_set(struct db *db, const char *key, const char *tmp,
		  long long size);

/* Records the verified hash on the claim naming tmp. Returns 0 or EIO. */
int db_flight_set_sha(struct db *db, const char *key, const char *tmp,
		      const char *sha256);

/* Records how the last fetch of key ended, and when (now): sha256 of the
 * committed blob (success) or "" and a one-line reason (failure). Returns
 * 0 or EIO. */
int db_outcome_put(struct db *db, const char *key, const char *sha256,
		   const char *reason);

/* Reads the last outcome of key into sha256 (65 bytes, "" on failure),
 * reason and, when at is not NULL, its time in unix seconds. Returns 0,
 * ENOENT, or EIO. */
int db_outcome_get(struct db *db, const char *key, char sha256[65],
		   char *reason, size_t len, long long *at);

/* The path of the database file (DATA/larder.db); the db's to keep. */
const char *db_file(const struct db *db);

/* Reads what is remembered of an upstream host ("scheme://host:port")
 * that failed: until when (unix seconds) and why. Returns 0, ENOENT, or
 * EIO. */
int db_upstream_get(struct db *db, const char *host, long long *until,
		    char *reason, size_t len);

/* Remembers that host failed, until the given time. Returns 0 or EIO. */
int db_upstream_put(struct db *db, const char *host, long long until,
		    const char *reason);

/* Forgets host's failure. Returns 0 or EIO. */
int db_upstream_delete(struct db *db, const char *host);

/* What was last seen of an upstream host, for the status page. */
struct db_seen {
	long long ok_at;     /* its last answer, unix seconds; 0: none */
	long long failed_at; /* its last failure; 0: none */
	int last_failed;     /* whether the last attempt failed */
	char reason[512];    /* what the last failure was */
};

/* Reads what was seen of host. Returns 0, ENOENT or EIO. */
int db_seen_get(struct db *db, const char *host, struct db_seen *s);

/* Notes that host answered at now. Returns 0 or EIO. */
int db_seen_ok(struct db *db, const char *host, long long now);

/* Notes that an attempt at host failed at now, and why. Returns 0 or
 * EIO. */
int db_seen_failed(struct db *db, const char *host, long long now,
                   const char *reason);

/* Reads the named value key into out (len bytes). Returns 0, ENOENT or
 * EIO. */
int db_state_get(struct db *db, const char *key, char *out, size_t len);

/* Sets the named value key. Returns 0 or EIO. */
int db_state_put(struct db *db, const char *key, const char *value);

/* Notes that the blob sha256 (a page rendering, a tag list or a referrers
 * list) is no longer wanted since
 * the given time. Returns 0 or EIO. */
int db_garbage_add(struct db *db, const char *sha256, long long since);

/* Lists up to max blobs noted as garbage before the given time into sha;
 * *n says how many. Returns 0 or EIO. */
int db_garbage_due(struct db *db, long long before, char (*sha)[65],
		   size_t max, size_t *n);

/* Drops the garbage note of sha256. Returns 0 or EIO. */
int db_garbage_delete(struct db *db, const char *sha256);

/* Drops the garbage note of sha256 and says whether there was one: 0,
 * ENOENT when there was none (someone took it, or never made it), or EIO.
 * In a transaction, the one that takes the note decides the blob's fate:
 * the collector deleting it, or an upload of the same bytes keeping it. */
int db_garbage_take(struct db *db, const char *sha256);

/* Counts the rows that name sha256 as a body of theirs: page renderings,
 * registry refs and hosted files (what a replaced one may still be).
 * Returns 0 or EIO. */
int db_refs(struct db *db, const char *sha256, long *count);

/* Calls fn for each of the n blobs in sha that nothing names: no page
 * rendering, no listed file or metadata, no garbage note (what a refresh
 * replaced and the collector will delete). Returns 0, ENOMEM, or EIO. */
int db_unreferenced(struct db *db, char (*sha)[65], size_t n,
		    void (*fn)(const char *sha256, void *ctx), void *ctx);

/* A registry reference: a tag, a manifest digest, a tag list or a
 * referrers list (ref as the caller spells them), and the stored body it
 * names. */
struct db_oci_ref {
	int status;               /* 200, or 404 for a remembered miss */
	char sha256[65];          /* blob of the body (a manifest's digest) */
	char media_type[128];     /* its Content-Type */
	char etag[256];           /* upstream's, "" when none */
	long long fetched_at;     /* unix seconds of the last fetch or HEAD */
	long ttl;                 /* seconds fresh after fetched_at */
};

/* Reads the row of (registry, name, ref). Returns 0, ENOENT, or EIO. */
int db_oci_ref_get(struct db *db, const char *registry, const char *name,
		   const char *ref, struct db_oci_ref *r);

/* Writes the row. Returns 0 or EIO. */
int db_oci_ref_put(struct db *db, const char *registry, const char *name,
		   const char *ref, const struct db_oci_ref *r);

/* Renews a row after a revalidation. Returns 0 or EIO. */
int db_oci_ref_touch(struct db *db, const char *registry, const char *name,
		     const char *ref, long long fetched_at, long ttl);

/* Records that the repository holds blob sha256 of size bytes (-1
 * unknown). Returns 0 or EIO. */
int db_oci_blob_put(struct db *db, const char *registry, const char *name,
		    const char *sha256, long long size);

/* Reads the size of blob sha256 as recorded for (registry, name): another
 * repository's manifest says nothing of this one's. Returns 0, ENOENT, or
 * EIO. */
int db_oci_blob_get(struct db *db, const char *registry, const char *name,
		    const char *sha256, long long *size);

/* Whether some repository of registry was seen to hold blob sha256 (the
 * store holds other blobs too: uploads, pages, other registries'). Returns
 * 0 (it was), ENOENT, or EIO. */
int db_oci_blob_known(struct db *db, const char *registry,
		      const char *sha256);

/* A hosted registry's blob upload session. */
struct db_oci_upload {
	char id[33];              /* hex, the URL's session id */
	char registry[101];
	char name[256];           /* the repository inside the registry */
	char tmp[4096];           /* its temp file, absolute */
	long long size;           /* bytes received so far */
	long long touched;        /* unix seconds of its last request */
};

/* Stores a new session. Returns 0 or EIO. */
int db_oci_upload_put(struct db *db, const struct db_oci_upload *u);

/* Reads session id. Returns 0, ENOENT, or EIO. */
int db_oci_upload_get(struct db *db, const char *id, struct db_oci_upload *u);

/* Records that session id holds size bytes as of now. Returns 0, ENOENT
 * when the session is gone (expired meanwhile), or EIO. */
int db_oci_upload_size(struct db *db, const char *id, long long size,
                       long long now);

/* Forgets session id. Returns 0 or EIO. */
int db_oci_upload_delete(struct db *db, const char *id);

/* Reads up to max sessions untouched since before into u, oldest first
 * and after the session after (a previous batch's last; NULL: from the
 * start); *n says how many. Returns 0 or EIO. */
int db_oci_upload_expired(struct db *db, long long before,
                          const struct db_oci_upload *after,
                          struct db_oci_upload *u, size_t max, size_t *n);

/* Appends to out the JSON array of a hosted repository's tags, sorted
 * (["a","b"]). Returns 0, ENOMEM, or EIO. */
int db_oci_tags(struct db *db, const char *registry, const char *name,
                struct buf *out);

/* Calls fn with each tag of (registry, name) whose row points at the
 * manifest sha256 (hex), until fn returns non-zero. Returns 0 or EIO. */
int db_oci_tags_of(struct db *db, const char *registry, const char *name,
                   const char *sha256,
                   int (*fn)(const char *tag, void *ctx), void *ctx);

/* Calls fn with the manifest digest (hex), media type and artifact type
 * of every reference row of (registry, name) whose ref starts with
 * prefix, in ref order, after reading them all. Returns 0, ENOMEM, or
 * EIO. */
int db_oci_refers(struct db *db, const char *registry, const char *name,
                  const char *prefix,
                  void (*fn)(const char *sha256, const char *media_type,
                             const char *artifact_type, void *ctx),
                  void *ctx);

/* Deletes from (registry, name): ref (a tag; ref NULL: every row that
 * names manifest sha256, its digest, tags and referrer rows), or, with
 * blob set, the blob sha256. Returns 0, ENOENT when there was none, or
 * EIO. */
int db_oci_delete(struct db *db, const char *registry, const char *name,
                  const char *ref, const char *sha256, int blob);

/* Returns 0 when registry holds anything under repository name (a ref
 * row), ENOENT when not, or EIO. */
int db_oci_repo_known(struct db *db, const char *registry, const char *name);

/* Reads the token for (registry, scope) and when it expires. Returns 0,
 * ENOENT, or EIO. */
int db_oci_token_get(struct db *db, const char *registry, const char *scope,
		     char *value, size_t len, long long *expires_at);

/* Writes a token. Returns 0 or EIO. */
int db_oci_token_put(struct db *db, const char *registry, const char *scope,
		     const char *value, long long expires_at);

/* Forgets a token (upstream refused it). Returns 0 or EIO. */
int db_oci_token_delete(struct db *db, const char *registry,
			const char *scope);

/* Records that the store holds blob sha256 of size bytes, used now; a
 * blob already recorded keeps its row, but for a larger size (a page
 * rendering whose .gz copy came later). Returns 0 or EIO. */
int db_blob_add(struct db *db, const char *sha256, long long size);

/* Forgets blob sha256 (it was deleted). Returns 0 or EIO. */
int db_blob_delete(struct db *db, const char *sha256);

/* Whether the inventory has a row for blob sha256: 0, ENOENT, or EIO. */
int db_blob_has(struct db *db, const char *sha256);

/* Sums the inventory: bytes and number of blobs. Returns 0 or EIO. */
int db_blob_totals(struct db *db, long long *bytes, long *count);

/* One row of the inventory. */
struct db_blob {
	char sha256[65];
	long long size;
	long long used_at;        /* unix seconds */
};

/* Records blob sha256 of size bytes, last used at used_at, unless it is
 * recorded already (a store made before the inventory). Returns 0 or
 * EIO. */
int db_blob_add_at(struct db *db, const char *sha256, long long size,
		   long long used_at);

/* Moves used_at up to at for every blob whose sha256 starts with prefix
 * (16 hex digits, from storage/lru.h). Returns 0 or EIO. */
int db_blob_fold(struct db *db, const char *prefix, long long at);

/* Lists up to max blobs last used before the given time, least recently
 * used first, starting after (after_at, after_sha) ("" for the start).
 * *n says how many. Returns 0 or EIO. */
int db_blob_oldest(struct db *db, long long before, long long after_at,
		   const char *after_sha, struct db_blob *rows, size_t max,
		   size_t *n);

/* Forgets blob sha256 for eviction, inside the write transaction the
 * caller holds, unless something must keep it: a registry ref names it,
 * or it renders a page that is fresh at now or being refreshed. The page
 * rows it renders go with it (the page is fetched again), and its garbage
 * note; the page's other rendering becomes garbage, due gc_grace after
 * now. With dry_run the checks run and nothing changes. Returns 0 (the
 * caller unlinks the blob before it commits: storage/gc.c), EBUSY when it
 * must stay, or EIO. */
int db_blob_evict(struct db *db, const char *sha256, long long now,
		  int dry_run);

/* Calls fn for every inventory row, after reading them all (fn may change
 * the table). Returns 0, ENOMEM, or EIO. */
int db_blob_each(struct db *db,
		 void (*fn)(const char *sha256, long long size, void *ctx),
		 void *ctx);

/* A file uploaded to a hosted index. */
struct db_hosted {
	char project[201];        /* normalised name (PEP 503) */
	char version[128];        /* as the metadata gives it */
	char filename[256];
	char sha256[65];
	long long size;
	char meta_sha[65];        /* blob of its core metadata, "" none */
	char requires_python[256]; /* "" when none */
	long long uploaded_at;    /* unix seconds */
	int yanked;               /* PEP 592 */
	char yanked_reason[256];
};

/* Writes the row of h->filename in index (a new upload, or one that
 * replaces it on a volatile index). Returns 0 or EIO. */
int db_hosted_put(struct db *db, const char *index, const struct db_hosted *h);

/* Reads the row of filename in index. Returns 0, ENOENT, or EIO. */
int db_hosted_get(struct db *db, const char *index, const char *filename,
		  struct db_hosted *h);

/* Reads every file of project in index, oldest upload first, into *rows
 * (malloc'd, the caller frees; NULL when *n is 0). Returns 0, ENOMEM, or
 * EIO. */
int db_hosted_project(struct db *db, const char *index, const char *project,
		      struct db_hosted **rows, size_t *n);

/* Whether index holds a file of project. Returns 0 (it does), ENOENT, or
 * EIO. */
int db_hosted_has(struct db *db, const char *index, const char *project);

/* Calls fn for each project index holds a file of, by name, after reading
 * them all. Returns 0, ENOMEM, or EIO. */
int db_hosted_projects(struct db *db, const char *index,
		       void (*fn)(const char *project, void *ctx), void *ctx);

/* Yanks (yanked 1, with reason) or unyanks (0) every file of project's
 * version in index; *changed says how many rows there were. Returns 0 or
 * EIO. */
int db_hosted_yank(struct db *db, const char *index, const char *project,
		   const char *version, int yanked, const char *reason,
		   long *changed);

/* Forgets the file filename of index. Returns 0 or EIO. */
int db_hosted_delete(struct db *db, const char *index, const char *filename);

/* Calls fn for every file of every hosted index, after reading them all.
 * Returns 0, ENOMEM, or EIO. */
int db_hosted_each(struct db *db,
		   void (*fn)(const char *index, const struct db_hosted *h,
			      void *ctx),
		   void *ctx);

/* An upload or read token, as stored: the secret itself never is. */
struct db_token {
	char id[33];              /* the token's public part, hex */
	char index[101];          /* the index it is for */
	char actions[64];         /* comma-separated: upload, yank, delete,
	                             read */
	char projects[512];       /* space-separated globs of normalised
	                             names; "*" for all */
	char salt[33];            /* hex */
	char hash[65];            /* hex SHA-256 of salt and secret */
	long long created;        /* unix seconds */
	long long expires;        /* unix seconds, 0 never */
	int revoked;
	char note[256];
};

/* Stores a new token. Returns 0, EEXIST when its id is taken, or EIO. */
int db_token_put(struct db *db, const struct db_token *t);

/* Reads the token with that id. Returns 0, ENOENT, or EIO. */
int db_token_get(struct db *db, const char *id, struct db_token *t);

/* Marks the token revoked. Returns 0, ENOENT when there is none, or EIO. */
int db_token_revoke(struct db *db, const char *id);

/* Calls fn for every token, oldest first, after reading them all. Returns
 * 0, ENOMEM, or EIO. */
int db_token_each(struct db *db,
		  void (*fn)(const struct db_token *t, void *ctx), void *ctx);

/* OSV advisories (db_policy.c). Replaces advisory id's ranges with the n
 * of v, range i of project[i] (normalised). Returns 0 or EIO; run it in a
 * transaction for many. */
int db_osv_replace(struct db *db, const char *id,
                   const struct policy_vuln *v, const char *const *project,
                   size_t n);

/* Reads the ranges of every advisory for project into *out, a malloc'd
 * array of *n (the caller's to free; NULL and 0 for none). Returns 0,
 * ENOMEM or EIO. */
int db_osv_get(struct db *db, const char *project, struct policy_vuln **out,
               size_t *n);

/* The number of advisories held, or -1 when the table cannot be read. */
long long db_osv_count(struct db *db);

/* Makes every page of project stale, so that it is rendered again (by
 * the advisories as they are now) at its next request. Returns 0 or
 * EIO. */
int db_policy_expire(struct db *db, const char *project);

/* Calls fn for each file row of project in index, by file name, with
 * its sha256 and why a policy denied it ("" allowed). Returns 0 or EIO. */
int db_policy_files(struct db *db, const char *index, const char *project,
                    void (*fn)(const char *sha256, const char *filename,
                               const char *denied, void *ctx),
                    void *ctx);

/* Calls fn for at most limit files a policy denied, by index and name,
 * and sets *total to how many there are. Returns 0 or EIO. */
int db_policy_denied(struct db *db, int limit,
                     void (*fn)(const char *index, const char *filename,
                                const char *denied, void *ctx),
                     void *ctx, long long *total);

#endif
