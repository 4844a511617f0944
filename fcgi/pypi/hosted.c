/* hosted: uploaded files, their pages, yanks and removals (hosted.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/dist/distname.h"
#include "common/http/form.h"
#include "common/json.h"
#include "common/log.h"
#include "common/pypi/simple.h"
#include "fcgi/access/auth.h"
#include "fcgi/pypi/hosted.h"
#include "fcgi/pypi/pages.h"
#include "storage/blob.h"
#include "storage/lru.h"
#include "storage/search_note.h"
#include "storage/webhook.h"

/* The most a rendering of a hosted page may take. */
#define MAX_RENDERING (64L << 20)

/* Collects the project list: ctx is a struct list. */
struct list {
	struct simple_page *page;
	int err;
};

static void add_project(const char *project, void *ctx)
{
	struct list *l = ctx;
	struct simple_page *page = l->page;
	char **grown;

	if (l->err)
		return;
	grown = realloc(page->projects,
			(page->nprojects + 1) * sizeof(*page->projects));
	if (!grown) {
		l->err = ENOMEM;
		return;
	}
	page->projects = grown;
	page->projects[page->nprojects] = strdup(project);
	if (page->projects[page->nprojects])
		page->nprojects++;
	else
		l->err = ENOMEM;
}

/* ISO 8601 as PyPI writes upload times. */
static char *iso_time(long long t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	char s[40];

	if (!gmtime_r(&tt, &tm))
		return strdup("1970-01-01T00:00:00.000000Z");
	strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S.000000Z", &tm);
	return strdup(s);
}

/* Fills f from row h. Returns 0 or ENOMEM. */
static int file_of(const struct db_hosted *h, struct simple_file *f)
{
	memset(f, 0, sizeof(*f));
	f->filename = strdup(h->filename);
	f->url = strdup("");
	memcpy(f->sha256, h->sha256, sizeof(f->sha256));
	if (*h->requires_python)
		f->requires_python = strdup(h->requires_python);
	f->yanked = h->yanked;
	if (h->yanked)
		f->yanked_reason = strdup(h->yanked_reason);
	f->core_metadata = *h->meta_sha != '\0';
	memcpy(f->meta_sha256, h->meta_sha, sizeof(f->meta_sha256));
	f->size = h->size;
	f->upload_time = iso_time(h->uploaded_at);
	if (!f->filename || !f->url || !f->upload_time ||
	    (*h->requires_python && !f->requires_python) ||
	    (h->yanked && !f->yanked_reason))
		return ENOMEM;
	return simple_hash_add(f, "sha256", 6, h->sha256, 64);
}

/* Fills page with project's files (project "" : the project list). Sets
 * *none when the project has no file left. Returns 0, ENOMEM, or EIO. */
static int page_of(struct worker *w, const char *index, const char *project,
		   struct simple_page *page, int *none)
{
	struct db_hosted *rows = NULL;
	size_t n = 0;
	int rc;

	memset(page, 0, sizeof(*page));
	/* 1.4: what 1.2 to 1.4 add is optional, and a hosted project is
	 * active; a merge with a 1.4 upstream page keeps its status */
	snprintf(page->api_version, sizeof(page->api_version), "1.4");
	*none = 0;
	if (!*project) {
		struct list l = {page, 0};

		page->is_list = 1;
		rc = db_hosted_projects(w->db, index, add_project, &l);
		return rc ? rc : l.err;
	}
	rc = db_hosted_project(w->db, index, project, &rows, &n);
	if (rc)
		return rc;
	*none = n == 0;
	page->name = strdup(project);
	page->files = calloc(n ? n : 1, sizeof(*page->files));
	page->versions = calloc(n ? n : 1, sizeof(*page->versions));
	if (!page->name || !page->files || !page->versions)
		rc = ENOMEM;
	for (size_t i = 0; !rc && i < n; i++) {
		size_t v = 0;

		rc = file_of(&rows[i], &page->files[i]);
		page->nfiles++;
		while (v < page->nversions &&
		       strcmp(page->versions[v], rows[i].version) != 0)
			v++;
		if (!rc && v == page->nversions) {
			page->versions[v] = strdup(rows[i].version);
			if (page->versions[v])
				page->nversions++;
			else
				rc = ENOMEM;
		}
	}
	free(rows);
	return rc;
}

/* Renders the page of project (or the list) of hosted index ix from its
 * rows and writes the page row; the caller holds a write transaction. A
 * project left with no files loses its page. Returns 0 or an errno. */
static int render(struct worker *w, const struct conf_index *ix,
		  const char *project, long long now)
{
	const char *data_dir = w->conf->data_dir;
	struct simple_page page;
	struct db_page old, p = {0};
	struct buf json, html;
	long long js = 0, hs = 0; /* their bytes in the store, .gz too */
	int have, none, rc;

	have = db_page_get(w->db, ix->name, project, &old) == 0;
	buf_init(&json, MAX_RENDERING);
	buf_init(&html, MAX_RENDERING);
	rc = page_of(w, ix->name, project, &page, &none);
	if (!rc && none) {
		if (have)
			rc = db_page_delete(w->db, ix->name, project);
		if (!rc && have)
			rc = pages_note_replaced(w, &old, &p, now);
		goto out;
	}
	if (!rc)
		rc = simple_render_json(&page, &json);
	if (!rc)
		rc = simple_render_html(&page, &html);
	if (!rc)
		rc = blob_put_page(data_dir, json.data, json.len, p.json_sha,
				   &js);
	if (!rc)
		rc = blob_put_page(data_dir, html.data, html.len, p.html_sha,
				   &hs);
	if (!rc)
		rc = db_blob_add(w->db, p.json_sha, js);
	if (!rc)
		rc = db_blob_add(w->db, p.html_sha, hs);
	if (rc)
		goto out;
	p.status = 200;
	p.fetched_at = now;
	p.ttl = 0; /* its freshness is pages.c's (HOSTED_FRESH) */
	rc = db_page_put(w->db, ix->name, project, &p);
	if (!rc && have)
		rc = pages_note_replaced(w, &old, &p, now);
	if (!rc)
		lru_added(js + hs);
out:
	simple_page_free(&page);
	buf_free(&json);
	buf_free(&html);
	return rc;
}

/* Renders project's page and the project list, and commits. On error the
 * transaction is rolled back and err says why. */
static int render_commit(struct worker *w, const struct conf_index *ix,
			 const char *project, long long now, char *err,
			 size_t errlen)
{
	int rc = render(w, ix, project, now);

	if (!rc && *project)
		rc = render(w, ix, "", now);
	if (!rc)
		rc = db_commit(w->db);
	if (rc) {
		db_rollback(w->db);
		snprintf(err, errlen, "%s: rendering the page of %s: %s",
			 ix->name, *project ? project : "the project list",
			 strerror(rc));
	}
	return rc;
}

int hosted_render(struct worker *w, int idx, const char *project, char *err,
		  size_t errlen)
{
	const struct conf_index *ix = &w->conf->index[idx];
	int rc = db_begin(w->db);

	if (rc) {
		snprintf(err, errlen, "%s: database busy", ix->name);
		return rc;
	}
	return render_commit(w, ix, project, (long long)time(NULL), err,
			     errlen);
}

/* The size of blob sha256 in the store, or -1. */
static long long blob_size(const char *data_dir, const char *sha256)
{
	char path[4096];
	struct stat st;

	if (blob_path(data_dir, sha256, path, sizeof(path)) ||
	    stat(path, &st) < 0)
		return -1;
	return (long long)st.st_size;
}

/* Notes that a removed or replaced file's blobs may go, unless something
 * else names them when the collector comes (db_refs). */
static int forget_file(struct worker *w, const char *index,
		       const struct db_hosted *h, long long now)
{
	int rc = db_file_delete(w->db, index, h->sha256, h->filename);

	if (!rc)
		rc = db_garbage_add(w->db, h->sha256, now);
	if (!rc && *h->meta_sha)
		rc = db_garbage_add(w->db, h->meta_sha, now);
	return rc;
}

int hosted_conflicts(struct worker *w, int idx, const char *filename,
		     const char *sha256, char *err, size_t errlen)
{
	const struct conf_index *ix = &w->conf->index[idx];
	struct db_hosted old;

	if (ix->is_volatile ||
	    db_hosted_get(w->db, ix->name, filename, &old) != 0 ||
	    strcmp(old.sha256, sha256) == 0)
		return 0;
	snprintf(err, errlen, "%s exists already, with other contents (files "
		 "of %s cannot be replaced)", filename, ix->name);
	return 1;
}

/* Under the write lock, which the collectors unlink under: makes sure
 * h's file and metadata are in the store, storing them again from b when
 * a collector took them since they were stored (bytes that another file,
 * evictable, had too). *meta_size is the metadata's. Returns 0 or an
 * errno, with the reason in err. */
static int keep_bytes(struct worker *w, const struct db_hosted *h,
		      const struct hosted_bytes *b, long long *meta_size,
		      char *err, size_t errlen)
{
	const char *data_dir = w->conf->data_dir;
	int rc = blob_put_fd(data_dir, b->fd, h->sha256);

	if (!rc && *h->meta_sha)
		rc = b->meta ? blob_keep(data_dir, b->meta, b->meta_len,
					 h->meta_sha) :
			       (blob_exists(data_dir, h->meta_sha) ? 0 : EIO);
	*meta_size = *h->meta_sha ? blob_size(data_dir, h->meta_sha) : 0;
	if (!rc && *meta_size < 0)
		rc = EIO;
	if (rc)
		snprintf(err, errlen, "%s: storing its bytes: %s", h->filename,
			 strerror(rc));
	return rc;
}

/* Queues a webhook event about file h of index (upload, remove), in the
 * caller's transaction. Returns 0 or an errno. */
static int hook_file(struct worker *w, const char *index, const char *event,
		     const struct db_hosted *h)
{
	struct buf data;
	int rc;

	if (!webhook_wanted(w->conf, event))
		return 0;
	buf_init(&data, 1 << 16);
	rc = buf_adds(&data, "{\"filename\":");
	rc = rc ? rc : json_put_string(&data, h->filename);
	rc = rc ? rc : buf_addf(&data, ",\"sha256\":\"%s\",\"size\":%lld}",
				h->sha256, h->size);
	rc = rc ? rc : webhook_enqueue(w->db, w->conf, event, 0, index,
				       h->project, h->version, data.data);
	buf_free(&data);
	return rc;
}

/* Queues a yank event (yanked 0: unyanked), likewise. */
static int hook_yank(struct worker *w, const char *index, const char *project,
		     const char *version, int yanked, const char *reason)
{
	struct buf data;
	int rc;

	if (!webhook_wanted(w->conf, "yank"))
		return 0;
	buf_init(&data, 1 << 16);
	rc = buf_addf(&data, "{\"yanked\":%s,\"reason\":",
		      yanked ? "true" : "false");
	rc = rc ? rc : json_put_string(&data, reason ? reason : "");
	rc = rc ? rc : buf_adds(&data, "}");
	rc = rc ? rc : webhook_enqueue(w->db, w->conf, "yank", 0, index,
				       project, version, data.data);
	buf_free(&data);
	return rc;
}

int hosted_publish(struct worker *w, int idx, const struct db_hosted *h,
		   const struct hosted_bytes *b, int *changed, char *err,
		   size_t errlen)
{
	const struct conf_index *ix = &w->conf->index[idx];
	long long now = (long long)time(NULL), meta_size = 0;
	struct db_hosted old, row = *h;
	struct db_file file = {.url = ""};
	int rc;

	*changed = 0;
	rc = db_begin(w->db);
	if (rc) {
		snprintf(err, errlen, "%s: database busy", ix->name);
		return rc;
	}
	if (hosted_conflicts(w, idx, h->filename, h->sha256, err, errlen)) {
		db_rollback(w->db);
		return EEXIST;
	}
	rc = db_hosted_get(w->db, ix->name, h->filename, &old);
	if (rc == 0 && strcmp(old.sha256, h->sha256) == 0) {
		db_rollback(w->db); /* the same file again: nothing to do */
		return 0;
	}
	/* under the lock the collectors unlink under: there now, they stay
	 * (storage/gc.h) */
	if (keep_bytes(w, h, b, &meta_size, err, errlen)) {
		db_rollback(w->db);
		return EIO;
	}
	if (rc == 0)
		rc = forget_file(w, ix->name, &old, now);
	else if (rc == ENOENT)
		rc = 0;
	row.uploaded_at = now;
	file.size = h->size;
	file.has_meta = *h->meta_sha != '\0';
	file.upload_time = now;
	snprintf(file.meta_sha, sizeof(file.meta_sha), "%s", h->meta_sha);
	snprintf(file.project, sizeof(file.project), "%s", h->project);
	if (!rc)
		rc = db_hosted_put(w->db, ix->name, &row);
	if (!rc) /* its summary and keywords, for /+search */
		rc = search_note_meta(w->db, w->conf->data_dir, ix->name,
				      h->project, h->meta_sha);
	if (!rc)
		rc = db_file_put(w->db, ix->name, h->sha256, h->filename,
				 &file);
	if (!rc)
		rc = db_blob_add(w->db, h->sha256, h->size);
	if (!rc && *h->meta_sha)
		rc = db_blob_add(w->db, h->meta_sha, meta_size);
	if (!rc)
		rc = hook_file(w, ix->name, "upload", h);
	if (rc) {
		db_rollback(w->db);
		snprintf(err, errlen, "%s: database error", ix->name);
		return rc;
	}
	rc = render_commit(w, ix, h->project, now, err, errlen);
	if (!rc) {
		*changed = 1;
		log_info("%s: published %s (%lld bytes)", ix->name,
			 h->filename, h->size);
	}
	return rc;
}

/* The PEP 440 normal form of a release's version, as uploads store it.
 * Returns 0, or EINVAL with the reason in err. */
static int release_version(const char *version, char *out, size_t len,
			   char *err, size_t errlen)
{
	if (distname_version_canon(version, out, len) == 0)
		return 0;
	snprintf(err, errlen, "%.100s is not a version", version);
	return EINVAL;
}

int hosted_yank(struct worker *w, int idx, const char *project,
		const char *version, int yanked, const char *reason, char *err,
		size_t errlen)
{
	const struct conf_index *ix = &w->conf->index[idx];
	char canon[128];
	long changed = 0;
	int rc;

	if (!json_utf8_valid(reason)) {
		snprintf(err, errlen, "the reason is not UTF-8");
		return EINVAL;
	}
	if (release_version(version, canon, sizeof(canon), err, errlen))
		return EINVAL;
	rc = db_begin(w->db);
	if (rc) {
		snprintf(err, errlen, "%s: database busy", ix->name);
		return rc;
	}
	rc = db_hosted_yank(w->db, ix->name, project, canon, yanked, reason,
			    &changed);
	if (!rc && changed)
		rc = hook_yank(w, ix->name, project, canon, yanked, reason);
	if (!rc && changed == 0) {
		db_rollback(w->db);
		snprintf(err, errlen, "%s has no release %s %s", ix->name,
			 project, version);
		return ENOENT;
	}
	if (rc) {
		db_rollback(w->db);
		snprintf(err, errlen, "%s: database error", ix->name);
		return rc;
	}
	return render_commit(w, ix, project, (long long)time(NULL), err,
			     errlen);
}

int hosted_remove(struct worker *w, int idx, const char *project,
		  const char *version, const char *filename, char *err,
		  size_t errlen)
{
	const struct conf_index *ix = &w->conf->index[idx];
	long long now = (long long)time(NULL);
	struct db_hosted *rows = NULL;
	size_t n = 0, removed = 0;
	char canon[128];
	int rc;

	if (release_version(version, canon, sizeof(canon), err, errlen))
		return EINVAL;
	rc = db_begin(w->db);
	if (rc) {
		snprintf(err, errlen, "%s: database busy", ix->name);
		return rc;
	}
	rc = db_hosted_project(w->db, ix->name, project, &rows, &n);
	for (size_t i = 0; !rc && i < n; i++) {
		if (strcmp(rows[i].version, canon) != 0 ||
		    (*filename && strcmp(rows[i].filename, filename) != 0))
			continue;
		rc = db_hosted_delete(w->db, ix->name, rows[i].filename);
		if (!rc)
			rc = forget_file(w, ix->name, &rows[i], now);
		if (!rc)
			rc = hook_file(w, ix->name, "remove", &rows[i]);
		removed++;
	}
	free(rows);
	if (!rc && removed == 0) {
		db_rollback(w->db);
		snprintf(err, errlen, "%s has no %s%s%s %s", ix->name,
			 *filename ? filename : "release ",
			 *filename ? " in " : "", project, version);
		return ENOENT;
	}
	if (rc) {
		db_rollback(w->db);
		snprintf(err, errlen, "%s: database error", ix->name);
		return rc;
	}
	rc = render_commit(w, ix, project, now, err, errlen);
	if (!rc)
		log_info("%s: removed %zu file(s) of %s %s", ix->name, removed,
			 project, version);
	return rc;
}

int hosted_target(const struct conf *c, int idx)
{
	const struct conf_index *ix = &c->index[idx];
	int t;

	if (ix->type == CONF_INDEX_HOSTED)
		return idx;
	if (ix->type != CONF_INDEX_VIRTUAL)
		return -1;
	for (size_t i = 0; i < ix->nlayers; i++) {
		t = hosted_target(c, (int)ix->layer[i]);
		if (t >= 0)
			return t;
	}
	return -1;
}

/* The reason a yank gives: reason= in the query, or in a form body. */
static int yank_reason(struct req *r, char *out, size_t len)
{
	const char *type = req_env(r, "CONTENT_TYPE");
	char body[4096];
	size_t n = 0;
	ssize_t got;
	int found;

	*out = '\0';
	found = form_value(r->query, strlen(r->query), "reason", out, len);
	if (found)
		return found < 0 ? -1 : 0;
	if (!type || strncmp(type, "application/x-www-form-urlencoded", 33))
		return 0;
	while (n < sizeof(body)) {
		got = req_read_body(r, body + n, sizeof(body) - n);
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	return form_value(body, n, "reason", out, len) < 0 ? -1 : 0;
}

void hosted_serve(struct worker *w, struct req *r, const struct route *rt)
{
	int target = hosted_target(w->conf, rt->index);
	unsigned action = rt->kind == ROUTE_REMOVE ? TOKEN_DELETE : TOKEN_YANK;
	char reason[256], err[1024];
	int rc;

	if (target < 0) {
		req_header(r, "Allow", "%s", "");
		req_error(r, 405, "not a hosted index: nothing to yank or "
			  "remove here");
		return;
	}
	if (auth_allow(w, r, rt->index, target, action, rt->project))
		return;
	if (rt->kind == ROUTE_REMOVE && !w->conf->index[target].is_volatile) {
		req_header(r, "Allow", "%s", "");
		req_error(r, 405, "files of this index cannot be removed (it "
			  "is not volatile): yank the release instead");
		return;
	}
	if (rt->kind == ROUTE_REMOVE) {
		rc = hosted_remove(w, target, rt->project, rt->version,
				   rt->filename, err, sizeof(err));
	} else if (yank_reason(r, reason, sizeof(reason))) {
		req_error(r, 400, "bad reason (form-encoded, at most 255 "
			  "bytes)");
		return;
	} else {
		rc = hosted_yank(w, target, rt->project, rt->version,
				 rt->kind == ROUTE_YANK, reason, err,
				 sizeof(err));
	}
	if (rc == ENOENT)
		req_error(r, 404, err);
	else if (rc == EINVAL)
		req_error(r, 400, err);
	else if (rc)
		req_error(r, 500, err);
	else
		req_reply(r, 200, "text/plain; charset=utf-8", "OK\n", 3);
}
