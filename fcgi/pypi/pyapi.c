#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/conf/keys.h"
#include "common/log.h"
#include "common/pypi/pyjson.h"
#include "fcgi/pypi/metadata.h"
#include "fcgi/pypi/pages.h"
#include "fcgi/pypi/proc.h"
#include "fcgi/pypi/pyapi.h"
#include "fcgi/server/send.h"
#include "storage/blob.h"
#include "storage/lru.h"

/* The most bytes of core metadata read into "info". */
#define MAX_METADATA (8L << 20)
/* The most base URLs (scheme, Host, mount) a document is kept for: any
 * further one is built and answered, not stored, so that clients making
 * up Host values cannot fill the store. */
#define MAX_BASES 4

/* pypi.org's answer for what it does not have. */
static void not_found(struct req *r)
{
	static const char body[] = "{\"message\": \"Not Found\"}\n";

	req_header(r, "Cache-Control", "no-store");
	req_reply(r, 404, "application/json", body, sizeof(body) - 1);
}

/* What a build needs and makes. */
struct build {
	struct worker *w;
	const struct route *rt;
	const struct db_page *page;   /* the project page it is built from */
	const char *version;          /* normal form, NULL: the latest */
	const char *base;             /* scheme://host[:port]{mount} */
	char sha[65];                 /* the document's blob */
	int unstored;                 /* keep it in doc, not the store */
	struct buf doc;               /* then: the document */
	int status;                   /* on failure: 404 or 502 */
	char err[1024];
};

/* Reads the core metadata of page file fi into meta, when it can be had. A
 * failure to fetch it fails the build: a document without its "info" is
 * not to be kept as if it were whole. */
static int read_metadata(struct build *b, const struct simple_page *p,
			 long fi, struct buf *meta)
{
	const struct simple_file *f;
	char sha[65];
	int rc;

	if (fi < 0)
		return 0;
	f = &p->files[fi];
	rc = metadata_ensure(b->w, b->rt->index, f->sha256, f->filename, sha,
			     b->err, sizeof(b->err));
	if (rc == ENOENT)
		return 0;
	if (!rc)
		rc = blob_read(b->w->conf->data_dir, sha, meta);
	if (rc == ENOENT || rc == EFBIG) {
		/* gone again, or too big to show: an info of the page's */
		buf_free(meta);
		return 0;
	}
	if (rc && !*b->err)
		snprintf(b->err, sizeof(b->err), "%s: reading its metadata: "
			 "%s", f->filename, strerror(rc));
	return rc;
}

/* Stores the document doc under (ix, key), replacing old (when have). */
static int store(struct build *b, const char *ix, const char *key,
		 const struct buf *doc, const struct db_page *old, int have)
{
	struct worker *w = b->w;
	struct db_page row = {.status = 200};
	long long size = 0; /* its bytes in the store, the .gz copy too */
	int rc;

	worker_make_room(w, w->db, (long long)doc->len);
	rc = blob_put_page(w->conf->data_dir, doc->data, doc->len, b->sha,
			   &size);
	if (rc) {
		snprintf(b->err, sizeof(b->err), "storing the document: %s",
			 strerror(rc));
		return rc;
	}
	snprintf(row.etag, sizeof(row.etag), "%s", b->page->json_sha);
	row.fetched_at = b->page->fetched_at;
	row.ttl = b->page->ttl;
	/* one rendering: the HTML slot names it too, as fsck and the
	 * collector look at both */
	memcpy(row.json_sha, b->sha, sizeof(row.json_sha));
	memcpy(row.html_sha, b->sha, sizeof(row.html_sha));
	rc = db_begin(w->db);
	/* still there under the lock the collectors unlink under (put
	 * again if one took it meanwhile), and used now: pages.h */
	if (!rc)
		rc = blob_keep_page(w->conf->data_dir, doc->data, doc->len,
				    b->sha, &size);
	if (!rc) {
		lru_touch(b->sha);
		rc = db_blob_add(w->db, b->sha, size);
	}
	if (!rc)
		rc = db_page_put(w->db, ix, key, &row);
	if (!rc && have)
		rc = pages_note_replaced(w, old, &row, (long long)time(NULL));
	if (!rc)
		rc = db_commit(w->db);
	if (rc) {
		db_rollback(w->db);
		snprintf(b->err, sizeof(b->err), "storing the document: "
			 "database error");
		return rc;
	}
	lru_added(size);
	return 0;
}

/* Builds the document from the page, into b->sha, and stores it. */
static int build(struct build *b, const char *ix, const char *key,
		 const struct db_page *old, int have)
{
	const struct conf *c = b->w->conf;
	const char *index = c->index[b->rt->index].name;
	const char *project = b->rt->project;
	char base_url[ROUTE_MAX_PATH + 64];
	char files_url[ROUTE_MAX_PATH * 2], project_url[ROUTE_MAX_PATH * 2];
	char api_url[ROUTE_MAX_PATH * 2];
	struct simple_opts so = {.base_url = base_url};
	struct pyjson_opts o = {.files_url = files_url,
				.project_url = project_url,
				.api_url = api_url,
				.all_releases = !b->version};
	struct simple_page p;
	struct pyjson j;
	struct buf page, meta, doc;
	long rel;
	int rc;

	/* the rendering links its files relative to the page */
	snprintf(base_url, sizeof(base_url), "http://larder.invalid/%s/simple/"
		 "%s/", index, project);
	snprintf(files_url, sizeof(files_url), "%s/%s/files/", b->base, index);
	snprintf(project_url, sizeof(project_url), "%s/%s/simple/%s/",
		 b->base, index, project);
	snprintf(api_url, sizeof(api_url), "%s/%s/pypi/%s/", b->base, index,
		 project);
	buf_init(&page, (size_t)c->max_page_size * 2);
	buf_init(&meta, MAX_METADATA);
	buf_init(&doc, (size_t)c->max_page_size * 4 + MAX_METADATA);
	memset(&p, 0, sizeof(p));
	memset(&j, 0, sizeof(j));
	b->status = 502;
	rc = blob_read(c->data_dir, b->page->json_sha, &page);
	if (rc) {
		snprintf(b->err, sizeof(b->err), "%s: reading its page: %s",
			 project, strerror(rc));
		goto out;
	}
	rc = simple_parse_json(page.data, page.len, &so, 0, &p, b->err,
			       sizeof(b->err));
	if (!rc)
		rc = pyjson_group(&p, project, &j);
	if (rc)
		goto out;
	rel = pyjson_pick(&j, b->version);
	if (rel < 0) {
		b->status = 404;
		snprintf(b->err, sizeof(b->err), "no such release");
		rc = ENOENT;
		goto out;
	}
	rc = read_metadata(b, &p, pyjson_meta_file(&p, &j, rel), &meta);
	if (rc)
		goto out;
	o.metadata = meta.data;
	o.metalen = meta.len;
	rc = pyjson_render(&p, project, &j, rel, &o, &doc);
	if (rc) {
		snprintf(b->err, sizeof(b->err), "%s: rendering the document: "
			 "%s", project, strerror(rc));
		goto out;
	}
	if (b->unstored) {
		b->doc = doc;
		buf_init(&doc, 0);
	} else {
		rc = store(b, ix, key, &doc, old, have);
	}
out:
	if (rc && b->status == 502)
		log_warn(rc, project, "JSON API: %s", b->err);
	pyjson_free(&j);
	simple_page_free(&p);
	buf_free(&page);
	buf_free(&meta);
	buf_free(&doc);
	return rc;
}

void pyapi_serve(struct worker *w, struct req *r, const struct route *rt)
{
	const struct conf *c = w->conf;
	const char *index = c->index[rt->index].name;
	struct send_opts o = {.content_type = "application/json", .gzip = 1};
	struct build b = {.w = w, .rt = rt};
	char version[DISTNAME_VERSION_MAX], ix[CONF_MAX_NAME + 8];
	char key[ROUTE_MAX_PATH * 3], prefix[ROUTE_MAX_PATH + 200];
	struct db_page page, row;
	struct buf base;
	int rc, have, retried = 0;

	if (*rt->version &&
	    distname_version_canon(rt->version, version, sizeof(version))) {
		not_found(r);
		return;
	}
	b.version = *rt->version ? version : NULL;
	buf_init(&base, ROUTE_MAX_PATH + 300);
	if (req_url(r, c->trust_forwarded, "", &base)) {
		buf_free(&base);
		req_error(r, 414, "URL too long");
		return;
	}
	b.base = buf_str(&base);
	snprintf(ix, sizeof(ix), "%s/+json", index);
	snprintf(prefix, sizeof(prefix), "%s%s%s/json ", rt->project,
		 b.version ? "/" : "", b.version ? b.version : "");
	snprintf(key, sizeof(key), "%s%s", prefix, b.base);
again:
	/* no prefetch and no refresh after the answer here: the document
	 * is built from the page as pages_get() has it now */
	pypi_proc()->hint.index = -1;
	pypi_proc()->revalidate.index = -1;
	pypi_proc()->revalidate.can_defer = 0;
	rc = pages_get(w, rt->index, rt->project, &page, &r->cache, b.err,
		       sizeof(b.err));
	pypi_proc()->hint.index = -1;
	pypi_proc()->revalidate.index = -1;
	if (rc == ENOENT) {
		not_found(r);
		goto out;
	}
	if (rc) {
		req_error(r, rc == ENETDOWN ? 503 : 502, b.err);
		goto out;
	}
	b.page = &page;
	have = db_page_get(w->db, ix, key, &row) == 0;
	if (have && row.status == 200 && strcmp(row.etag, page.json_sha) == 0 &&
	    send_stored(w, row.json_sha)) {
		memcpy(b.sha, row.json_sha, sizeof(b.sha));
	} else {
		long bases = 0;

		/* the rows of this document for other bases than this one */
		b.unstored = !have &&
			     db_page_count_prefix(w->db, ix, prefix, &bases) ==
				     0 &&
			     bases >= MAX_BASES;
		rc = build(&b, ix, key, &row, have);
		if (rc == ENOENT) {
			not_found(r);
			goto out;
		}
		if (rc) {
			/* an offline index without the metadata: 503 */
			req_error(r, rc == ENETDOWN ? 503 : 502, b.err);
			goto out;
		}
		r->cache = "MISS";
	}
	/* what the cooldown left out of the page is left out here too */
	if (page.held > 0)
		req_header(r, "X-Larder-Held-Back", "%ld", page.held);
	o.expires = page.fetched_at + page.ttl;
	if (o.expires <= time(NULL))
		o.expires = 1; /* stale: a date in the past */
	o.whole = r->cache && strcmp(r->cache, "STALE") == 0;
	if (b.unstored) {
		req_header(r, "Cache-Control", "no-store");
		req_reply(r, 200, "application/json", b.doc.data, b.doc.len);
		buf_free(&b.doc);
		goto out;
	}
	rc = send_blob(w, r, b.sha, &o);
	if (rc == ENOENT && !retried) {
		/* evicted between the look and the open: build it again */
		db_page_delete(w->db, ix, key);
		retried = 1;
		goto again;
	}
	if (rc)
		req_error(r, 500, "the stored document is missing");
out:
	buf_free(&base);
}
