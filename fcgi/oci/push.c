#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "common/hash/sha256.h"
#include "common/hex.h"
#include "common/http/token.h"
#include "common/json.h"
#include "common/oci/manifest.h"
#include "fcgi/oci/access.h"
#include "fcgi/oci/gate.h"
#include "fcgi/oci/oci.h"
#include "fcgi/oci/push.h"
#include "fcgi/oci/refs.h"
#include "fcgi/server/send.h"
#include "storage/blob.h"
#include "storage/db/db.h"
#include "storage/webhook.h"

/* A stored manifest is fresh this long: forever, as far as a row goes. */
#define HOSTED_TTL (100L * 365 * 86400)

/* One push request. */
struct push {
	struct worker *w;
	struct req *r;
	int ri;
	int url_ri;                     /* the registry the URL names (a
	                                   virtual one's tokens) */
	const struct conf_registry *reg;
	const char *repo;               /* the name inside the registry */
	struct oci_push_route rt;
};

/* The registry of a name, as the pull side picks it (fcgi/oci/oci.c): its
 * first component when a registry has that name and more follows, else
 * the default registry; *rest is the name inside it. */
static int pick(const struct conf *c, const char *name, const char **rest)
{
	const char *slash = strchr(name, '/');
	int ri = slash ? conf_registry_find(c, name, (size_t)(slash - name))
	               : -1;

	if (ri >= 0) {
		*rest = slash + 1;
		return ri;
	}
	*rest = name;
	return conf_registry_default(c);
}

int oci_virtual_pick(struct worker *w, int ri, const char *repo, int push)
{
	const struct conf_registry *v = &w->conf->registry[ri];
	int hosted = -1, cache = -1;

	if (v->type != CONF_REGISTRY_VIRTUAL)
		return ri;
	for (size_t i = 0; i < v->nlayers; i++) {
		int l = (int)v->layer[i];
		const struct conf_registry *reg = &w->conf->registry[l];

		if (reg->type == CONF_REGISTRY_HOSTED) {
			if (hosted < 0)
				hosted = l;
			if (!push &&
			    db_oci_repo_known(w->db, reg->name, repo) == 0)
				return l;
		} else if (reg->type == CONF_REGISTRY_CACHE && cache < 0) {
			cache = l;
		}
	}
	return push || cache < 0 ? hosted : cache;
}

/* Adds the Location of a session and its Range ("0-LAST"). */
static void session_headers(struct push *p, const char *id, long long size)
{
	req_header(p->r, "Location", "%s/v2/%s/blobs/uploads/%s", p->r->mount,
	           p->rt.name, id);
	req_header(p->r, "Docker-Upload-UUID", "%s", id);
	req_header(p->r, "Range", "0-%lld", size > 0 ? size - 1 : 0);
}

/* Answers 201 for blob hex, now in the repository. */
static void blob_created(struct push *p, const char *hex)
{
	req_header(p->r, "Location", "%s/v2/%s/blobs/sha256:%s", p->r->mount,
	           p->rt.name, hex);
	req_header(p->r, "Docker-Content-Digest", "sha256:%s", hex);
	req_header(p->r, "Content-Length", "0");
	req_start(p->r, 201);
}

/* Appends the request body to fd from offset off; no more than max bytes
 * may the file hold, nor, when want >= 0, other than want body bytes come.
 * *got says how many came. Returns 0, EFBIG (over max), ERANGE (more or
 * fewer than want), EPIPE (the client went away) or EIO. */
static int take_body(struct req *r, int fd, long long off, long long max,
                     long long want, long long *got)
{
	char buf[1 << 16];
	ssize_t n, wr;

	*got = 0;
	for (;;) {
		n = req_read_body(r, buf, sizeof(buf));
		if (n < 0)
			return EPIPE;
		if (n == 0)
			break;
		if (off + *got + n > max)
			return EFBIG;
		if (want >= 0 && *got + n > want)
			return ERANGE;
		for (ssize_t o = 0; o < n; o += wr) {
			wr = pwrite(fd, buf + o, (size_t)(n - o),
			            off + *got + o);
			if (wr <= 0)
				return EIO;
		}
		*got += n;
	}
	return want >= 0 && *got != want ? ERANGE : 0;
}

/* Answers a take_body() failure. */
static void body_failed(struct req *r, int rc, long long max)
{
	char why[128];

	switch (rc) {
	case EFBIG:
		snprintf(why, sizeof(why),
		         "blob over the registry's max_upload_size (%lld "
		         "bytes)", max);
		oci_fail(r, 413, "SIZE_INVALID", why);
		break;
	case ERANGE:
		oci_fail(r, 400, "SIZE_INVALID",
		     "the body is not as long as Content-Range or "
		     "Content-Length says");
		break;
	case EPIPE:
		oci_fail(r, 400, "BLOB_UPLOAD_INVALID", "the body was cut short");
		break;
	default:
		oci_fail(r, 500, "UNKNOWN", "cannot write the upload");
		break;
	}
}

/* Reads the digest query parameter into hex: sha256 only. Returns 0,
 * ENOENT when absent, or EINVAL (answered). */
static int digest_param(struct push *p, char hex[65])
{
	char d[OCI_MAX_DIGEST + 1];
	int rc = oci_query_value(p->r->query, "digest", d, sizeof(d));

	if (rc == ENOENT)
		return ENOENT;
	if (rc || oci_digest_check(d, strlen(d)) ||
	    strncmp(d, "sha256:", 7) != 0) {
		oci_fail(p->r, 400, "DIGEST_INVALID",
		     rc || oci_digest_check(d, strlen(d)) == EINVAL
		         ? "invalid digest"
		         : "only sha256 digests are stored");
		return EINVAL;
	}
	memcpy(hex, d + 7, 65);
	return 0;
}

/* Records that the repository holds blob hex of n bytes: its oci_blobs
 * row (what pulls and manifests look at) and a ref row "/blob/<digest>"
 * (a registry ref names it: the collector never evicts it, as it would a
 * cached blob, since a pushed one is the only copy). Returns 0 or EIO. */
static int hold_blob(struct push *p, const char *hex, long long n)
{
	struct db_oci_ref row;
	char ref[OCI_MAX_DIGEST + 8];

	memset(&row, 0, sizeof(row));
	row.status = 200;
	snprintf(row.sha256, sizeof(row.sha256), "%s", hex);
	snprintf(row.media_type, sizeof(row.media_type),
	         "application/octet-stream");
	row.fetched_at = (long long)time(NULL);
	row.ttl = HOSTED_TTL;
	snprintf(ref, sizeof(ref), "/blob/sha256:%s", hex);
	if (db_oci_ref_put(p->w->db, p->reg->name, p->repo, ref, &row) ||
	    db_oci_blob_put(p->w->db, p->reg->name, p->repo, hex, n))
		return EIO;
	return 0;
}

/* Stores the n bytes of fd as blob hex of the repository. Returns 0, or
 * EINVAL (answered DIGEST_INVALID) or EIO (answered). */
static int commit_fd(struct push *p, int fd, long long n, const char *hex)
{
	/* the client's digest is a claim: held to it even when the store
	 * has the blob (another repository's, or a private index's) */
	int rc = blob_put_fd_claimed(p->w->conf->data_dir, fd, hex);

	if (rc == EINVAL) {
		oci_fail(p->r, 400, "DIGEST_INVALID",
		     "the content does not match the digest");
		return EINVAL;
	}
	if (rc || hold_blob(p, hex, n)) {
		oci_fail(p->r, 500, "UNKNOWN", "cannot store the blob");
		return EIO;
	}
	return 0;
}

/* Forgets session u when no request is writing it (its temp file's flock,
 * which a writer holds) and it is still untouched since before: the row
 * and the temp file. Returns 1 when it went. */
static int expire_one(struct db *db, const struct db_oci_upload *u,
                      long long before)
{
	struct db_oci_upload now;
	int fd = open(u->tmp, O_RDWR | O_CLOEXEC), gone = 0;

	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
		close(fd); /* being written: it is not idle */
		return 0;
	}
	/* read again under the lock: a writer may have finished meanwhile */
	if (db_oci_upload_get(db, u->id, &now) == 0 && now.touched < before &&
	    db_oci_upload_delete(db, u->id) == 0) {
		unlink(u->tmp);
		gone = 1;
	}
	if (fd >= 0)
		close(fd);
	return gone;
}

long oci_push_expire(const struct conf *c, struct db *db)
{
	struct db_oci_upload old[16], last;
	long long now = (long long)time(NULL);
	long ttl = 3600, gone = 0;
	int have_last = 0;
	size_t n = 0;

	for (size_t i = 0; i < c->nregistry; i++)
		if (c->registry[i].type == CONF_REGISTRY_HOSTED &&
		    c->registry[i].upload_ttl > 0 &&
		    c->registry[i].upload_ttl < ttl)
			ttl = c->registry[i].upload_ttl;
	/* the rows older than the shortest ttl, oldest first, a batch at a
	 * time from after the last one seen, each held to its own
	 * registry's (a registry no longer hosted: the shortest) */
	for (int round = 0; round < 64; round++) {
		if (db_oci_upload_expired(db, now - ttl,
		                          have_last ? &last : NULL, old, 16,
		                          &n) || !n)
			break;
		for (size_t i = 0; i < n; i++) {
			int ri = conf_registry_find(c, old[i].registry,
			                            strlen(old[i].registry));
			long t = ri >= 0 &&
			                 c->registry[ri].type ==
			                     CONF_REGISTRY_HOSTED &&
			                 c->registry[ri].upload_ttl > 0
			             ? c->registry[ri].upload_ttl
			             : ttl;

			if (old[i].touched < now - t)
				gone += expire_one(db, &old[i], now - t);
		}
		last = old[n - 1];
		have_last = 1;
		if (n < 16)
			break;
	}
	return gone;
}

/* Starts a session: an empty temp file and its row. Answers 202. */
static void start_session(struct push *p)
{
	struct db_oci_upload u;
	unsigned char rnd[OCI_UPLOAD_ID_HEX / 2];
	int fd;

	oci_push_expire(p->w->conf, p->w->db);
	memset(&u, 0, sizeof(u));
	if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
		oci_fail(p->r, 500, "UNKNOWN", "no random bytes");
		return;
	}
	hex_encode(rnd, sizeof(rnd), u.id);
	snprintf(u.registry, sizeof(u.registry), "%s", p->reg->name);
	snprintf(u.name, sizeof(u.name), "%s", p->repo);
	snprintf(u.tmp, sizeof(u.tmp), "%s/tmp/oci-upload-%s",
	         p->w->conf->data_dir, u.id);
	u.touched = (long long)time(NULL);
	fd = open(u.tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd < 0) {
		oci_fail(p->r, 500, "UNKNOWN", "cannot make the upload's file");
		return;
	}
	close(fd);
	if (db_oci_upload_put(p->w->db, &u)) {
		unlink(u.tmp);
		oci_fail(p->r, 500, "UNKNOWN", "cannot record the upload");
		return;
	}
	session_headers(p, u.id, 0);
	req_header(p->r, "Content-Length", "0");
	req_start(p->r, 202);
}

/* POST .../blobs/uploads/: a mount, a whole blob, or a new session. */
static void start(struct push *p)
{
	char from[OCI_MAX_NAME + 1], mount[OCI_MAX_DIGEST + 1], hex[65];
	char tmp[4096];
	const char *from_repo;
	long long size, got;
	int rc, fd;

	if (oci_query_value(p->r->query, "mount", mount, sizeof(mount)) ==
	        0 &&
	    oci_query_value(p->r->query, "from", from, sizeof(from)) == 0 &&
	    oci_name_valid(from, strlen(from)) &&
	    strncmp(mount, "sha256:", 7) == 0 &&
	    oci_digest_check(mount, strlen(mount)) == 0 &&
	    pick(p->w->conf, from, &from_repo) == p->url_ri &&
	    oci_access_may(p->w, p->r, p->url_ri, from_repo, TOKEN_PULL) ==
	        0 &&
	    db_oci_blob_get(p->w->db, p->reg->name, from_repo, mount + 7,
	                    &size) == 0 &&
	    send_stored(p->w, mount + 7)) {
		if (hold_blob(p, mount + 7, size)) {
			oci_fail(p->r, 500, "UNKNOWN", "cannot record the blob");
			return;
		}
		blob_created(p, mount + 7);
		return;
	}
	rc = digest_param(p, hex);
	if (rc == EINVAL)
		return;
	if (rc == ENOENT) {
		start_session(p);
		return;
	}
	/* the whole blob in one request */
	rc = blob_tmp(p->w->conf->data_dir, tmp, sizeof(tmp), &fd);
	if (rc) {
		oci_fail(p->r, 500, "UNKNOWN", "cannot make a temp file");
		return;
	}
	rc = take_body(p->r, fd, 0, p->reg->max_upload_size, -1, &got);
	if (rc)
		body_failed(p->r, rc, p->reg->max_upload_size);
	else if (!commit_fd(p, fd, got, hex))
		blob_created(p, hex);
	close(fd);
	unlink(tmp);
}

/* PATCH, PUT, GET and DELETE of a session. */
static void session(struct push *p)
{
	const char *method = p->r->method, *cr;
	struct db_oci_upload u;
	long long from = 0, to = 0, want = -1, got = 0;
	char hex[65];
	int rc, fd, finish = !strcmp(method, "PUT");

	rc = db_oci_upload_get(p->w->db, p->rt.ref, &u);
	if (rc == 0 && (strcmp(u.registry, p->reg->name) ||
	                strcmp(u.name, p->repo)))
		rc = ENOENT; /* another repository's: not this one's to use */
	if (rc == 0 &&
	    u.touched < (long long)time(NULL) - p->reg->upload_ttl)
		rc = ENOENT;
	if (rc) {
		oci_fail(p->r, rc == ENOENT ? 404 : 500,
		     rc == ENOENT ? "BLOB_UPLOAD_UNKNOWN" : "UNKNOWN",
		     rc == ENOENT ? "no such upload session"
		                  : "cannot read the upload");
		return;
	}
	if (!strcmp(method, "GET")) {
		session_headers(p, u.id, u.size);
		req_header(p->r, "Content-Length", "0");
		req_start(p->r, 204);
		return;
	}
	if (!strcmp(method, "DELETE")) {
		if (db_oci_upload_delete(p->w->db, u.id)) {
			oci_fail(p->r, 500, "UNKNOWN", "cannot forget the upload");
			return;
		}
		unlink(u.tmp);
		req_header(p->r, "Content-Length", "0");
		req_start(p->r, 204);
		return;
	}
	if (finish && digest_param(p, hex)) {
		if (!p->r->started)
			oci_fail(p->r, 400, "DIGEST_INVALID",
			     "PUT needs ?digest=");
		return;
	}
	fd = open(u.tmp, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		oci_fail(p->r, 404, "BLOB_UPLOAD_UNKNOWN",
		     "the upload's file is gone");
		return;
	}
	/* one request at a time writes a session; the row as it is now */
	if (flock(fd, LOCK_EX | LOCK_NB) ||
	    db_oci_upload_get(p->w->db, p->rt.ref, &u)) {
		close(fd);
		oci_fail(p->r, 416, "BLOB_UPLOAD_INVALID",
		     "another request is writing this upload");
		return;
	}
	cr = req_env(p->r, "HTTP_CONTENT_RANGE");
	if (cr && *cr) {
		if (oci_content_range(cr, &from, &to)) {
			close(fd);
			oci_fail(p->r, 400, "BLOB_UPLOAD_INVALID",
			     "Content-Range must be FROM-TO");
			return;
		}
		if (from != u.size) {
			close(fd);
			session_headers(p, u.id, u.size);
			oci_fail(p->r, 416, "BLOB_UPLOAD_INVALID",
			     "the chunk does not start where the upload "
			     "ends");
			return;
		}
		want = to - from + 1;
	}
	/* what a failed request left past the recorded size goes */
	if (ftruncate(fd, u.size)) {
		close(fd);
		oci_fail(p->r, 500, "UNKNOWN", "cannot write the upload");
		return;
	}
	rc = take_body(p->r, fd, u.size, p->reg->max_upload_size, want, &got);
	if (rc) {
		if (ftruncate(fd, u.size)) {
			/* the recorded size stands; the next request cuts */
		}
		close(fd);
		body_failed(p->r, rc, p->reg->max_upload_size);
		return;
	}
	if (!finish) {
		/* recorded before the lock goes: the next request starts
		 * from the new size */
		rc = db_oci_upload_size(p->w->db, u.id, u.size + got,
		                        (long long)time(NULL));
		close(fd);
		if (rc == ENOENT) {
			oci_fail(p->r, 404, "BLOB_UPLOAD_UNKNOWN",
			         "the upload session expired");
			return;
		}
		if (rc) {
			oci_fail(p->r, 500, "UNKNOWN", "cannot record the upload");
			return;
		}
		session_headers(p, u.id, u.size + got);
		req_header(p->r, "Content-Length", "0");
		req_start(p->r, 202);
		return;
	}
	rc = commit_fd(p, fd, u.size + got, hex);
	if (rc) {
		/* the session stays as it was before this request */
		if (ftruncate(fd, u.size)) {
		}
		close(fd);
		return;
	}
	close(fd);
	db_oci_upload_delete(p->w->db, u.id);
	unlink(u.tmp);
	blob_created(p, hex);
}

/* Whether the repository holds what descriptor d names: a blob, or for
 * an index's child a manifest. */
static int holds(struct push *p, const struct oci_descriptor *d, int child)
{
	struct db_oci_ref row;
	long long size;

	if (strncmp(d->digest, "sha256:", 7) != 0)
		return 0;
	if (child)
		return db_oci_ref_get(p->w->db, p->reg->name, p->repo,
		                      d->digest, &row) == 0 &&
		       row.status == 200;
	return db_oci_blob_get(p->w->db, p->reg->name, p->repo, d->digest + 7,
	                       &size) == 0;
}

/* Queues a push event for the manifest digest (sha256:HEX) just stored
 * under the request's reference, in the caller's transaction. Returns 0
 * or an errno. */
static int hook_push(struct push *p, const char *digest, const char *media)
{
	struct buf data;
	int rc;

	if (!webhook_wanted(p->w->conf, "push"))
		return 0;
	buf_init(&data, 1 << 16);
	rc = buf_addf(&data, "{\"digest\":\"%s\",\"tag\":", digest);
	rc = rc ? rc : json_put_string(&data, p->rt.by_digest ? "" : p->rt.ref);
	rc = rc ? rc : buf_adds(&data, ",\"media_type\":");
	rc = rc ? rc : json_put_string(&data, media);
	rc = rc ? rc : buf_adds(&data, "}");
	rc = rc ? rc : webhook_enqueue(p->w->db, p->w->conf, "push", 1,
	                               p->reg->name, p->repo,
	                               p->rt.by_digest ? digest : p->rt.ref,
	                               data.data);
	buf_free(&data);
	return rc;
}

/* PUT .../manifests/<ref>. */
static void manifest_put(struct push *p)
{
	const char *ctype = req_env(p->r, "CONTENT_TYPE");
	long long max = p->reg->max_upload_size < OCI_MAX_MANIFEST
	                    ? p->reg->max_upload_size
	                    : OCI_MAX_MANIFEST;
	char err[512], sha[65], why[700], subject[OCI_MAX_DIGEST + 1] = "";
	char atype[OCI_MAX_MEDIA_TYPE + 1], refers[2 * OCI_MAX_DIGEST + 16];
	struct oci_manifest m;
	struct db_oci_ref row;
	struct buf body;
	char chunk[1 << 14];
	ssize_t n;
	int rc;

	/* a name or tag a policy denies: refused before its body is read,
	 * nothing stored */
	if (oci_gate_manifest(p->w, p->r, p->url_ri, p->ri, p->repo,
	                      p->rt.ref))
		return;
	buf_init(&body, (size_t)max);
	for (;;) {
		n = req_read_body(p->r, chunk, sizeof(chunk));
		if (n <= 0)
			break;
		if ((long long)body.len + n > max) {
			n = -2;
			break;
		}
		if (buf_add(&body, chunk, (size_t)n)) {
			n = -3;
			break;
		}
	}
	if (n < 0) {
		buf_free(&body);
		if (n == -2)
			oci_fail(p->r, 413, "SIZE_INVALID",
			     "manifest over the size limit");
		else
			oci_fail(p->r, 400, "MANIFEST_INVALID",
			     "the body was cut short");
		return;
	}
	rc = oci_manifest_parse(body.data, body.len, ctype, &m, err,
	                        sizeof(err));
	if (rc) {
		buf_free(&body);
		snprintf(why, sizeof(why), "invalid manifest: %s",
		         rc == EFBIG ? "too big" : err);
		oci_fail(p->r, rc == EFBIG ? 413 : 400,
		     rc == EFBIG ? "SIZE_INVALID" : "MANIFEST_INVALID", why);
		return;
	}
	if (ctype && *ctype && oci_media_of(ctype) != m.media) {
		oci_manifest_free(&m);
		buf_free(&body);
		oci_fail(p->r, 400, "MANIFEST_INVALID",
		     "Content-Type does not match the manifest's mediaType");
		return;
	}
	rc = 0;
	if (!m.is_index && *m.config.digest && !holds(p, &m.config, 0))
		rc = -1;
	for (size_t i = 0; !rc && i < m.n; i++)
		if (!holds(p, &m.desc[i], m.is_index))
			rc = -1;
	if (rc) {
		oci_manifest_free(&m);
		buf_free(&body);
		oci_fail(p->r, 400, "MANIFEST_BLOB_UNKNOWN",
		     "the manifest names a blob or manifest the repository "
		     "does not hold");
		return;
	}
	memset(&row, 0, sizeof(row));
	snprintf(row.media_type, sizeof(row.media_type), "%s",
	         oci_media_name(m.media));
	/* what the referrers API lists it as: its artifactType, else its
	 * config's media type */
	snprintf(atype, sizeof(atype), "%s",
	         *m.artifact_type ? m.artifact_type : m.config.media_type);
	if (strncmp(m.subject.digest, "sha256:", 7) == 0)
		snprintf(subject, sizeof(subject), "%s", m.subject.digest);
	oci_manifest_free(&m);
	if (sha256_hex(body.data, body.len, sha) ||
	    (p->rt.by_digest && strcmp(p->rt.ref + 7, sha) != 0)) {
		buf_free(&body);
		oci_fail(p->r, 400, "DIGEST_INVALID",
		     "the manifest does not match the digest");
		return;
	}
	rc = blob_put(p->w->conf->data_dir, body.data, body.len, sha);
	buf_free(&body);
	row.status = 200;
	snprintf(row.sha256, sizeof(row.sha256), "%s", sha);
	row.fetched_at = (long long)time(NULL);
	row.ttl = HOSTED_TTL;
	snprintf(why, sizeof(why), "sha256:%s", sha);
	/* the refs and the webhook event in one transaction */
	if (rc || db_begin(p->w->db) ||
	    db_oci_ref_put(p->w->db, p->reg->name, p->repo, why, &row) ||
	    (!p->rt.by_digest &&
	     db_oci_ref_put(p->w->db, p->reg->name, p->repo, p->rt.ref, &row)) ||
	    hook_push(p, why, row.media_type)) {
		db_rollback(p->w->db);
		oci_fail(p->r, 500, "UNKNOWN", "cannot store the manifest");
		return;
	}
	if (*subject) {
		/* a row per referrer: the referrers API lists them */
		struct db_oci_ref ref = row;

		snprintf(ref.etag, sizeof(ref.etag), "%s", atype);
		snprintf(refers, sizeof(refers), "/refers/%s/sha256:%s",
		         subject, sha);
		if (db_oci_ref_put(p->w->db, p->reg->name, p->repo, refers,
		                   &ref)) {
			db_rollback(p->w->db);
			oci_fail(p->r, 500, "UNKNOWN", "cannot store the manifest");
			return;
		}
		req_header(p->r, "OCI-Subject", "%s", subject);
	}
	if (db_commit(p->w->db)) {
		db_rollback(p->w->db);
		oci_fail(p->r, 500, "UNKNOWN", "cannot store the manifest");
		return;
	}
	req_header(p->r, "Location", "%s/v2/%s/manifests/sha256:%s",
	           p->r->mount, p->rt.name, sha);
	req_header(p->r, "Docker-Content-Digest", "sha256:%s", sha);
	req_header(p->r, "Content-Length", "0");
	req_start(p->r, 201);
}

/* DELETE of a manifest by digest (with its tags), a tag, or a blob. What
 * nothing names any more is left for the collector. */
static void delete(struct push *p)
{
	int blob = p->rt.kind == OCI_PUSH_DELETE_BLOB, rc;

	if (p->rt.by_digest && strncmp(p->rt.ref, "sha256:", 7) != 0) {
		oci_fail(p->r, 404, blob ? "BLOB_UNKNOWN" : "MANIFEST_UNKNOWN",
		     "unknown to the registry");
		return;
	}
	rc = db_oci_delete(p->w->db, p->reg->name, p->repo,
	                   p->rt.by_digest ? NULL : p->rt.ref,
	                   p->rt.by_digest ? p->rt.ref + 7 : NULL, blob);
	if (!rc && blob) {
		char ref[OCI_MAX_DIGEST + 8];

		snprintf(ref, sizeof(ref), "/blob/%s", p->rt.ref);
		db_oci_delete(p->w->db, p->reg->name, p->repo, ref, NULL, 0);
	}
	if (rc == ENOENT) {
		oci_fail(p->r, 404, blob ? "BLOB_UNKNOWN" : "MANIFEST_UNKNOWN",
		     "unknown to the registry");
		return;
	}
	if (rc) {
		oci_fail(p->r, 500, "UNKNOWN", "cannot delete");
		return;
	}
	req_header(p->r, "Content-Length", "0");
	req_start(p->r, 202);
}

void oci_push_serve(struct worker *w, struct req *r)
{
	struct push p;
	int url_ri;

	memset(&p, 0, sizeof(p));
	p.w = w;
	p.r = r;
	oci_push_route_parse(r->method, r->path, &p.rt);
	/* a cache registry takes no pushes, however they are spelled */
	if (p.rt.kind == OCI_PUSH_ERROR && p.rt.name[0]) {
		p.ri = pick(w->conf, p.rt.name, &p.repo);
		if (p.ri >= 0 &&
		    w->conf->registry[p.ri].type == CONF_REGISTRY_CACHE) {
			req_header(r, "Allow", "GET, HEAD");
			oci_fail(r, 405, "UNSUPPORTED",
			     "this registry is a read-only cache");
			return;
		}
	}
	if (p.rt.kind == OCI_PUSH_ERROR) {
		if (p.rt.status == 405)
			req_header(r, "Allow", "GET, HEAD, POST, PUT, PATCH, "
			                       "DELETE");
		oci_fail(r, p.rt.status, p.rt.code, p.rt.reason);
		return;
	}
	p.ri = pick(w->conf, p.rt.name, &p.repo);
	if (p.ri < 0) {
		oci_fail(r, 404, "NAME_UNKNOWN", "no registry serves that name");
		return;
	}
	/* a token for the registry the URL names; the work in the layer
	 * that takes pushes */
	url_ri = p.ri;
	p.ri = oci_virtual_pick(w, p.ri, p.repo, 1);
	if (p.ri < 0) {
		oci_fail(r, 405, "UNSUPPORTED",
		     "this virtual registry has no hosted layer");
		return;
	}
	p.reg = &w->conf->registry[p.ri];
	if (p.reg->type != CONF_REGISTRY_HOSTED) {
		req_header(r, "Allow", "GET, HEAD");
		oci_fail(r, 405, "UNSUPPORTED",
		     "this registry is a read-only cache");
		return;
	}
	if (p.rt.kind == OCI_PUSH_DELETE_MANIFEST ||
	    p.rt.kind == OCI_PUSH_DELETE_BLOB) {
		if (!p.reg->allow_delete) {
			oci_fail(r, 405, "UNSUPPORTED",
			     "deletes are off for this registry (delete = "
			     "no)");
			return;
		}
		if (oci_access_allow(w, r, url_ri, p.repo, TOKEN_DELETE))
			return;
		delete(&p);
		return;
	}
	if (oci_access_allow(w, r, url_ri, p.repo, TOKEN_PUSH))
		return;
	p.url_ri = url_ri;
	switch (p.rt.kind) {
	case OCI_PUSH_START:
		start(&p);
		break;
	case OCI_PUSH_SESSION:
		session(&p);
		break;
	case OCI_PUSH_MANIFEST:
		manifest_put(&p);
		break;
	default:
		oci_fail(r, 405, "UNSUPPORTED", "no such endpoint");
		break;
	}
}
