#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/hash/sha256.h"
#include "common/json.h"
#include "common/log.h"
#include "common/oci/manifest.h"
#include "common/oci/tags.h"
#include "fcgi/oci/refs.h"
#include "storage/blob.h"
#include "storage/flight.h"
#include "storage/gc.h"
#include "storage/health.h"
#include "storage/lru.h"

#define FOREVER (10L * 365 * 86400) /* a by-digest row's ttl */
/* How long a requester with a stale copy waits on another's refresh. */
#define STALE_WAIT_MS 1000
/* Pages of an upstream's tag list larder follows. */
#define TAG_PAGES_MAX 200

static const char empty_index[] =
    "{\"schemaVersion\":2,\"mediaType\":"
    "\"application/vnd.oci.image.index.v1+json\",\"manifests\":[]}";

/* The errno for an upstream answer that is an error status. */
static int status_rc(long status, const char *url, char *err, size_t errlen)
{
	snprintf(err, errlen, "%.400s: upstream answered %ld", url, status);
	if (status == 404 || status == 410)
		return ENOENT;
	if (status == 401 || status == 403)
		return EACCES;
	if (status == 429)
		return EBUSY;
	return EREMOTEIO;
}

static int fresh(const struct db_oci_ref *row, time_t now)
{
	return now < row->fetched_at + row->ttl;
}

static int stale_ok(const struct conf_registry *reg,
                    const struct db_oci_ref *row, time_t now)
{
	return row->status == 200 &&
	       now < row->fetched_at + row->ttl + reg->max_stale;
}

/* The media type to store for a manifest: the upstream's Content-Type
 * when it names one, else what the body says it is. */
static void manifest_type(const struct fetch_page *f, char *out, size_t len)
{
	struct oci_manifest m;
	char why[128];

	if (oci_media_of(f->content_type) != OCI_MEDIA_UNKNOWN ||
	    (*f->content_type && !strstr(f->content_type, "json") &&
	     !strstr(f->content_type, "text/plain"))) {
		snprintf(out, len, "%s", f->content_type);
		out[strcspn(out, ";")] = '\0';
		return;
	}
	if (oci_manifest_parse(f->body.data, f->body.len, NULL, &m, why,
	                       sizeof(why)) == 0) {
		snprintf(out, len, "%s", oci_media_name(m.media));
		oci_manifest_free(&m);
		return;
	}
	snprintf(out, len, "%s",
	         *f->content_type ? f->content_type : OCI_JSON_TYPE);
}

/* Records the blobs an image manifest lists with their sizes (inside the
 * caller's transaction): a blob fetch then knows how long it must be, and
 * a HEAD of a blob not yet fetched needs no upstream. */
static int note_blobs(struct worker *w, const struct conf_registry *reg,
                      const struct oci_up *up, const char *body, size_t len,
                      const char *media_type)
{
	struct oci_manifest m;
	char why[128];
	int rc = 0;

	if (oci_manifest_parse(body, len, media_type, &m, why, sizeof(why)))
		return 0; /* not one larder reads: stored all the same */
	if (!m.is_index && !strncmp(m.config.digest, "sha256:", 7))
		rc = db_oci_blob_put(w->db, reg->name, up->name,
		                     m.config.digest + 7, m.config.size);
	for (size_t i = 0; !rc && !m.is_index && i < m.n; i++)
		if (!strncmp(m.desc[i].digest, "sha256:", 7))
			rc = db_oci_blob_put(w->db, reg->name, up->name,
			                     m.desc[i].digest + 7,
			                     m.desc[i].size);
	oci_manifest_free(&m);
	return rc;
}

/* Stores an upstream 200's body as the row for q; what *row held (when
 * have) is replaced. A tag list or referrers list it replaces becomes
 * garbage (a replaced manifest stays, by its digest). */
static int store(struct worker *w, const struct conf_registry *reg,
                 const struct oci_up *up, const struct oci_ref_want *q,
                 const struct fetch_page *f, const char *body, size_t len,
                 struct db_oci_ref *row, int have, char *err, size_t errlen)
{
	struct db_oci_ref digest_row;
	char sha[65], old[65] = "";
	const char *rname = reg->name, *name = up->name;
	int rc;

	sha256_hex(body, len, sha);
	if (*q->expect && strcmp(sha, q->expect) != 0) {
		snprintf(err, errlen, "%.400s: the manifest's sha256 is %s",
		         q->url, sha);
		return EBADMSG;
	}
	if (q->manifest && !strncmp(f->digest, "sha256:", 7) &&
	    strcmp(f->digest + 7, sha) != 0) {
		snprintf(err, errlen,
		         "%.400s: Docker-Content-Digest %.80s is not "
		         "the body's sha256:%s",
		         q->url, f->digest, sha);
		return EBADMSG;
	}
	rc = blob_put(w->conf->data_dir, body, len, sha);
	if (rc) {
		snprintf(err, errlen, "%.400s: storing: %s", q->url,
		         strerror(rc));
		return rc;
	}
	if (have && row->status == 200 && !q->manifest)
		memcpy(old, row->sha256, sizeof(old));
	memset(row, 0, sizeof(*row));
	row->status = 200;
	snprintf(row->sha256, sizeof(row->sha256), "%s", sha);
	if (q->media_type)
		snprintf(row->media_type, sizeof(row->media_type), "%s",
		         q->media_type);
	else
		manifest_type(f, row->media_type, sizeof(row->media_type));
	snprintf(row->etag, sizeof(row->etag), "%s", f->etag);
	row->fetched_at = time(NULL);
	row->ttl = q->immutable ? FOREVER : reg->cache_ttl;
	rc = db_begin(w->db);
	/* still there under the lock the collectors unlink under (put
	 * again if one took it since): storage/blob.h */
	if (!rc)
		rc = blob_keep(w->conf->data_dir, body, len, sha);
	if (!rc)
		rc = db_blob_add(w->db, sha, (long long)len);
	if (!rc)
		rc = db_oci_ref_put(w->db, rname, name, q->ref, row);
	if (!rc && q->manifest)
		rc = note_blobs(w, reg, up, body, len, row->media_type);
	if (!rc && q->manifest && !q->immutable) {
		char ref[80];

		/* the same bytes by their digest, for the pull that follows */
		digest_row = *row;
		digest_row.ttl = FOREVER;
		snprintf(ref, sizeof(ref), "sha256:%s", sha);
		rc = db_oci_ref_put(w->db, rname, name, ref, &digest_row);
	}
	if (!rc && *old && strcmp(old, sha) != 0)
		rc = db_garbage_add(w->db, old, row->fetched_at);
	if (!rc)
		rc = db_commit(w->db);
	if (rc) {
		db_rollback(w->db);
		snprintf(err, errlen, "%.400s: database error", q->url);
		return rc;
	}
	lru_added((long long)len);
	gc_collect_replaced(w->db, w->conf->data_dir,
			    w->conf->gc_grace);
	return 0;
}

/* Reads a whole tag list from the upstream's first page f and the pages
 * its Link headers lead to, into out: sorted, as one page. *pages says
 * how many there were. */
static int gather_tags(struct worker *w, struct oci_up *up,
                       const struct oci_ref_want *q, const struct fetch_page *f,
                       struct buf *out, int *pages, char *err, size_t errlen)
{
	struct oci_tags t = {0};
	char query[1024], url[3500], link[sizeof(f->link)], last[OCI_MAX_TAG + 1];
	struct fetch_page next;
	int rc, more;

	*pages = 1;

	rc = oci_tags_add(&t, f->body.data ? f->body.data : "", f->body.len,
	                  err, errlen);
	snprintf(link, sizeof(link), "%s", f->link);
	while (!rc && (more = oci_link_next(link, query, sizeof(query))) != ENOENT) {
		if (more) {
			snprintf(err, errlen, "%.400s: a Link larder cannot "
			         "follow: %.200s", q->url, link);
			rc = EBADMSG;
			break;
		}
		if (++*pages > TAG_PAGES_MAX) {
			snprintf(err, errlen, "%.400s: more than %d pages",
			         q->url, TAG_PAGES_MAX);
			rc = EFBIG;
			break;
		}
		snprintf(url, sizeof(url), "%s?%s", q->url, query);
		rc = oci_up_page(w, up, url, q->accept, NULL, 0, &next, err,
		                 errlen);
		if (!rc && next.status != 200)
			rc = status_rc(next.status, url, err, errlen);
		if (!rc)
			rc = oci_tags_add(&t, next.body.data ? next.body.data : "",
			                  next.body.len, err, errlen);
		snprintf(link, sizeof(link), "%s", next.link);
		buf_free(&next.body);
	}
	if (rc == EINVAL)
		rc = EBADMSG;
	oci_tags_sort(&t);
	if (!rc && !*t.name)
		snprintf(t.name, sizeof(t.name), "%.*s", OCI_MAX_NAME, up->name);
	if (!rc)
		rc = oci_tags_render(&t, NULL, -1, out, last);
	oci_tags_free(&t);
	return rc;
}

/* Remembers for error_ttl that the refresh of key failed with rc: the
 * requests meanwhile get the same answer (a 429 stays a 429) at once. */
static void remember_failure(struct worker *w, const char *key, int rc,
                             const char *err)
{
	char reason[1100];

	snprintf(reason, sizeof(reason), "%d %s", rc, err);
	db_outcome_put(w->db, key, "", reason);
}

/* Ends a remembered failure of key after a refresh that worked. */
static void forget_failure(struct worker *w, const char *key)
{
	char sha[65], why[8];

	if (db_outcome_get(w->db, key, sha, why, sizeof(why), NULL) == 0 &&
	    !*sha)
		db_outcome_put(w->db, key, "ok", "");
}

/* Whether a HEAD's answer f says the tag still names row's manifest: by
 * its digest, else (a registry that sends none) by its ETag. */
static int same_manifest(const struct fetch_page *f,
                         const struct db_oci_ref *row)
{
	if (*f->digest)
		return !strncmp(f->digest, "sha256:", 7) &&
		       !strcmp(f->digest + 7, row->sha256);
	return *f->etag && !strcmp(f->etag, row->etag);
}

/* Whether body (len bytes) is one JSON object and nothing else, as every
 * manifest, index and referrers list is: an upstream's 200 error page,
 * or a body cut, padded or spoilt on the way, is not stored as one (it
 * would be served under a digest of its own). Returns 0, or EBADMSG with
 * the reason in err. */
static int json_object_check(const struct oci_ref_want *q, const char *body,
                             size_t len, const struct fetch_page *f,
                             char *err, size_t errlen)
{
	struct json_reader r;
	int ok;

	json_init(&r, body, len, OCI_MAX_MANIFEST);
	ok = json_value(&r) == JSON_OBJECT && json_skip(&r) == 0 &&
	     json_end(&r) == 0;
	if (!ok)
		snprintf(err, errlen, "%.400s: not a JSON document (%.60s): %s",
		         q->url, *f->content_type ? f->content_type : "no type",
		         r.err[0] ? r.err : "not an object");
	json_free(&r);
	return ok ? 0 : EBADMSG;
}

/* Fetches (or revalidates) q's row while owning its claim. */
static int fetch_row(struct worker *w, const struct conf_registry *reg,
                     struct oci_up *up, const struct oci_ref_want *q,
                     const char *key, struct db_oci_ref *row, int have,
                     const char **cache, char *err, size_t errlen)
{
	const char *rname = reg->name, *name = up->name;
	int was_ok = have && row->status == 200;
	time_t now = time(NULL);
	struct fetch_page f;
	int rc;

	memset(&f, 0, sizeof(f));
	if (was_ok && q->head_check) {
		rc = oci_up_page(w, up, q->url, q->accept, NULL, 1, &f, err,
		                 errlen);
		if (!rc && f.status == 200 && same_manifest(&f, row)) {
			row->fetched_at = now;
			row->ttl = reg->cache_ttl;
			rc = db_oci_ref_touch(w->db, rname, name, q->ref, now,
			                      row->ttl);
			*cache = "REVALIDATED";
			goto done;
		}
		buf_free(&f.body);
		if (!rc && f.status != 200 && f.status != 404 &&
		    f.status != 405)
			rc = status_rc(f.status, q->url, err, errlen);
		if (rc)
			goto failed;
	}
	rc = oci_up_page(w, up, q->url, q->accept,
	                 was_ok && !q->head_check ? row->etag : NULL, 0, &f,
	                 err, errlen);
	if (rc)
		goto failed;
	if (f.status == 304 && was_ok) {
		row->fetched_at = now;
		row->ttl = reg->cache_ttl;
		rc =
		    db_oci_ref_touch(w->db, rname, name, q->ref, now, row->ttl);
		*cache = "REVALIDATED";
		goto done;
	}
	if ((f.status == 404 || f.status == 405) && *q->fallback) {
		/* no referrers API: the tag schema, else nothing refers */
		buf_free(&f.body);
		rc = oci_up_page(w, up, q->fallback, OCI_INDEX_TYPE, NULL, 0,
		                 &f, err, errlen);
		if (rc)
			goto failed;
		if (f.status == 404) {
			f.status = 200;
			buf_reset(&f.body);
			buf_add(&f.body, empty_index, sizeof(empty_index) - 1);
		}
	}
	if (f.status == 404 || f.status == 410) {
		struct db_oci_ref neg = {.status = 404,
		                         .fetched_at = now,
		                         .ttl = w->conf->negative_ttl};

		rc = db_oci_ref_put(w->db, rname, name, q->ref, &neg);
		*row = neg;
		*cache = "MISS";
		goto done;
	}
	if (f.status != 200) {
		rc = status_rc(f.status, q->url, err, errlen);
		goto failed;
	}
	if (q->tag_list) {
		struct buf all;

		buf_init(&all, 64 << 20);
		int pages;

		rc = gather_tags(w, up, q, &f, &all, &pages, err, errlen);
		/* one page's ETag says nothing of the others */
		if (pages > 1)
			f.etag[0] = '\0';
		if (!rc)
			rc = store(w, reg, up, q, &f, all.data, all.len, row,
			           have, err, errlen);
		buf_free(&all);
	} else if (q->artifact_type && *q->artifact_type) {
		/* an upstream without the filter, or the tag schema's index */
		struct buf kept;

		buf_init(&kept, 2 * OCI_MAX_MANIFEST);
		rc = oci_referrers_filter(f.body.data ? f.body.data : "",
		                          f.body.len, q->artifact_type, &kept,
		                          err, errlen);
		if (!rc)
			rc = store(w, reg, up, q, &f, kept.data, kept.len, row,
			           have, err, errlen);
		buf_free(&kept);
	} else {
		rc = json_object_check(q, f.body.data ? f.body.data : "",
		                       f.body.len, &f, err, errlen);
		if (!rc)
			rc = store(w, reg, up, q, &f,
			           f.body.data ? f.body.data : "", f.body.len,
			           row, have, err, errlen);
	}
	if (rc)
		goto failed;
	*cache = "MISS";
done:
	if (!rc)
		forget_failure(w, key);
	health_ok(w->db, q->url);
	buf_free(&f.body);
	return rc;
failed:
	log_warn(0, q->url, "%s", err);
	/* a host that cannot be reached is remembered as such (health.c),
	 * and tried again by one request at a time: not each of its tags
	 * for error_ttl after it is back */
	if (!fetch_unwell(rc))
		remember_failure(w, key, rc, err);
	health_note(w->db, q->url, rc, w->conf->error_ttl, err);
	buf_free(&f.body);
	if (have && stale_ok(reg, row, now)) {
		*cache = "STALE";
		return 0;
	}
	return rc == ENOENT ? EREMOTEIO : rc;
}

/* fetch_row(), without retries while a stale copy can answer: a
 * client that can have the stale tag at once does not wait out the
 * backoff of an upstream that is down or busy (the next refresh tries
 * again). */
static int refresh(struct worker *w, const struct conf_registry *reg,
                   struct oci_up *up, const struct oci_ref_want *q,
                   const char *key, struct db_oci_ref *row, int have,
                   const char **cache, char *err, size_t errlen)
{
	long retries = up->o.retries;
	int rc;

	if (have && stale_ok(reg, row, time(NULL)))
		up->o.retries = 0;
	rc = fetch_row(w, reg, up, q, key, row, have, cache, err, errlen);
	up->o.retries = retries;
	return rc;
}

/* Whether the last refresh of key failed less than error_ttl ago: its
 * errno goes to *rc, its reason to why. */
static int failed_recently(struct worker *w, const char *key, int *rc,
                           char *why, size_t len)
{
	char sha[65], reason[1100];
	long long at;
	int n = 0;

	if (w->conf->error_ttl <= 0 ||
	    db_outcome_get(w->db, key, sha, reason, sizeof(reason), &at) ||
	    *sha || time(NULL) >= at + w->conf->error_ttl)
		return 0;
	if (sscanf(reason, "%d %n", rc, &n) != 1 || n == 0)
		*rc = EREMOTEIO;
	snprintf(why, len, "%s", reason + n);
	return 1;
}

int oci_ref_get(struct worker *w, const struct conf_registry *reg,
                struct oci_up *up, const struct oci_ref_want *q,
                struct db_oci_ref *row, const char **cache, char *err,
                size_t errlen)
{
	const char *rname = reg->name, *name = up->name;
	char key[FLIGHT_KEY_MAX + 1], why[1024];
	struct db_oci_ref seen;
	struct flight f;
	int have, had = 0, waited = 0, owner, rc;
	time_t now;

	if (flight_key(key, "oci:%s:%s:%s", rname, name, q->ref)) {
		/* a long name: its hash is as good a key */
		char joined[OCI_MAX_NAME + 600], hex[65];

		snprintf(joined, sizeof(joined), "%s:%s:%s", rname, name,
		         q->ref);
		sha256_hex(joined, strlen(joined), hex);
		flight_key(key, "oci:%s", hex);
	}
	if (oci_up_offline(w, reg)) {
		/* what is held, whatever its age; nothing is asked */
		if (db_oci_ref_get(w->db, rname, name, q->ref, row) == 0 &&
		    row->status == 200 &&
		    blob_exists(w->conf->data_dir, row->sha256)) {
			*cache = fresh(row, time(NULL)) ? "HIT" : "STALE";
			return 0;
		}
		snprintf(err, errlen, "registry %s is offline (offline = yes) "
		         "and has no copy of %s:%s", rname, name, q->ref);
		return ENETDOWN;
	}
	memset(&seen, 0, sizeof(seen));
	for (int round = 0; round < 3; round++) {
		now = time(NULL);
		have = db_oci_ref_get(w->db, rname, name, q->ref, row) == 0 &&
		       (row->status != 200 ||
		        blob_exists(w->conf->data_dir, row->sha256));
		if (have &&
		    (fresh(row, now) || (q->immutable && row->status == 200))) {
			*cache = round ? "MISS" : "HIT";
			return row->status == 200 ? 0 : ENOENT;
		}
		if (have && waited &&
		    (!had || row->fetched_at != seen.fetched_at)) {
			*cache = "MISS";
			return row->status == 200 ? 0 : ENOENT;
		}
		rc = 0;
		if (failed_recently(w, key, &rc, why, sizeof(why)) ||
		    health_down(w->db, q->url, w->conf->error_ttl, why,
		                sizeof(why)) ||
		    (have && waited && stale_ok(reg, row, now))) {
			if (have && stale_ok(reg, row, now)) {
				*cache = "STALE";
				return 0;
			}
			snprintf(err, errlen, "%s", why);
			return rc && rc != ENOENT ? rc : EREMOTEIO;
		}
		had = have;
		if (have)
			seen = *row;
		rc =
		    flight_claim(w->db, w->conf->data_dir, key, -1, &owner, &f);
		if (rc) {
			snprintf(err, errlen, "%.400s: cannot claim: %s", key,
			         strerror(rc));
			return rc;
		}
		if (!owner) {
			worker_shed(w);
			waited = 1;
			if (flight_wait(w->db, &f,
			                have && stale_ok(reg, row, now)
			                    ? STALE_WAIT_MS
			                    : fetch_max_silence(&up->o) *
			                          1000) ||
			    have)
				continue;
			snprintf(err, errlen, "%.400s: still being fetched",
			         key);
			return ETIMEDOUT;
		}
		have = db_oci_ref_get(w->db, rname, name, q->ref, row) == 0 &&
		       (row->status != 200 ||
		        blob_exists(w->conf->data_dir, row->sha256));
		if (have && (fresh(row, time(NULL)) ||
		             (had && row->fetched_at != seen.fetched_at))) {
			*cache = "HIT";
			rc = 0;
		} else {
			worker_shed(w);
			rc = refresh(w, reg, up, q, key, row, have, cache, err,
			             errlen);
		}
		flight_drop(w->db, &f);
		if (rc)
			return rc;
		return row->status == 200 ? 0 : ENOENT;
	}
	if (db_oci_ref_get(w->db, rname, name, q->ref, row) == 0 &&
	    stale_ok(reg, row, time(NULL)) &&
	    blob_exists(w->conf->data_dir, row->sha256)) {
		*cache = "STALE";
		return 0;
	}
	snprintf(err, errlen, "%.400s: not refreshed", key);
	return EAGAIN;
}
