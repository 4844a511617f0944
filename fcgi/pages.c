#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/html.h"
#include "common/log.h"
#include "common/simple.h"
#include "fcgi/pages.h"
#include "storage/blob.h"
#include "storage/flight.h"

/* What larder asks an upstream for: JSON when it can, HTML otherwise. */
static const char upstream_accept[] =
	"application/vnd.pypi.simple.v1+json, "
	"application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1";

/* The longest a requester waits on another process's page fetch. */
#define PAGE_WAIT_MAX_MS (10 * 60 * 1000)

static int fresh(const struct db_page *p, time_t now)
{
	return now < p->fetched_at + p->ttl;
}

static int stale_ok(const struct worker *w, const struct db_page *p,
		    time_t now)
{
	return p->status == 200 &&
	       now < p->fetched_at + p->ttl + w->conf->max_stale;
}

static long page_ttl(const struct worker *w, const struct fetch_page *f)
{
	long ttl = w->conf->cache_ttl;

	if (f->no_store)
		return 0;
	if (f->max_age >= 0 && f->max_age < ttl)
		ttl = f->max_age;
	return ttl;
}

static void upstream_url(const struct conf_index *ix, const char *project,
			 char *out, size_t len)
{
	snprintf(out, len, "%s%s%s", ix->upstream, project, *project ? "/" : "");
}

/* Parses and renders an upstream 200, stores both renderings and the file
 * list, and writes the page row. */
static int store_page(struct worker *w, const struct conf_index *ix,
		      const char *project, const struct fetch_page *f,
		      long long now, struct db_page *p, char *err,
		      size_t errlen)
{
	struct simple_opts o = {.base_url = f->url,
				.trusted = ix->trusted_hosts};
	struct simple_page page;
	struct buf json, html;
	const char *data_dir = w->conf->data_dir;
	int is_list = !*project;
	int rc;

	buf_init(&json, (size_t)w->conf->max_page_size * 2);
	buf_init(&html, (size_t)w->conf->max_page_size * 2);
	if (strstr(f->content_type, "json")) {
		rc = simple_parse_json(f->body.data, f->body.len, &o, is_list,
				       &page, err, errlen);
	} else if (!*f->content_type || strstr(f->content_type, "html")) {
		rc = html_parse_simple(f->body.data, f->body.len, &o, is_list,
				       &page, err, errlen);
	} else {
		/* the HTML parser takes any bytes: don't let a stray
		 * text/plain or image replace a good page with an empty one */
		snprintf(err, errlen, "%s: not a simple index page (%.60s)",
			 f->url, f->content_type);
		rc = EPROTO;
	}
	if (rc)
		goto out;
	if (page.dropped)
		log_warn(0, f->url, "left out %zu entries (unsafe, untrusted "
			 "host or no sha256)", page.dropped);
	rc = simple_render_json(&page, &json);
	if (!rc)
		rc = simple_render_html(&page, &html);
	if (!rc)
		rc = blob_put(data_dir, json.data, json.len, p->json_sha);
	if (!rc)
		rc = blob_put(data_dir, html.data, html.len, p->html_sha);
	if (rc) {
		snprintf(err, errlen, "%s: storing the page: %s", f->url,
			 strerror(rc));
		goto free_page;
	}
	p->status = 200;
	snprintf(p->etag, sizeof(p->etag), "%s", f->etag);
	snprintf(p->last_modified, sizeof(p->last_modified), "%s",
		 f->last_modified);
	p->fetched_at = now;
	p->ttl = page_ttl(w, f);
	rc = db_begin(w->db);
	for (size_t i = 0; !rc && i < page.nfiles; i++) {
		const struct simple_file *sf = &page.files[i];

		rc = db_file_put(w->db, ix->name, sf->sha256, sf->filename,
				 sf->url, sf->size, sf->core_metadata,
				 sf->meta_sha256);
	}
	if (!rc)
		rc = db_page_put(w->db, ix->name, project, p);
	if (!rc)
		rc = db_commit(w->db);
	if (rc) {
		db_rollback(w->db);
		snprintf(err, errlen, "%s: database error", f->url);
	}
free_page:
	simple_page_free(&page);
out:
	buf_free(&json);
	buf_free(&html);
	return rc;
}

/* Fetches (or revalidates) one cache index's page while owning its flight.
 * *have says whether *p held a previous copy. */
static int refresh(struct worker *w, const struct conf_index *ix,
		   const char *project, struct db_page *p, int have,
		   const char **cache, char *err, size_t errlen)
{
	struct fetch_opts o;
	struct fetch_page f;
	char url[2048];
	time_t now = time(NULL);
	int rc;

	worker_fetch_opts(w->conf, conf_index_find(w->conf, ix->name), &o);
	upstream_url(ix, project, url, sizeof(url));
	rc = fetch_page(&o, url, upstream_accept,
			have && p->status == 200 ? p->etag : NULL,
			have && p->status == 200 ? p->last_modified : NULL, &f,
			err, errlen);
	if (rc)
		goto failed;
	if (f.status == 304 && have && p->status == 200) {
		p->fetched_at = now;
		p->ttl = page_ttl(w, &f);
		rc = db_page_touch(w->db, ix->name, project, p->fetched_at,
				   p->ttl);
		*cache = "REVALIDATED";
		goto out;
	}
	if (f.status == 404 || f.status == 410) {
		struct db_page neg = {.status = 404, .fetched_at = now,
				      .ttl = w->conf->negative_ttl};

		rc = db_page_put(w->db, ix->name, project, &neg);
		*p = neg;
		*cache = "MISS";
		goto out;
	}
	if (f.status != 200) {
		snprintf(err, errlen, "%s: upstream answered %ld", url,
			 f.status);
		rc = EPROTO;
		goto failed;
	}
	rc = store_page(w, ix, project, &f, now, p, err, errlen);
	if (rc)
		goto failed;
	*cache = "MISS";
	goto out;
failed:
	log_warn(0, url, "%s", err);
	if (have && stale_ok(w, p, now)) {
		*cache = "STALE";
		rc = 0;
	}
out:
	buf_free(&f.body);
	return rc;
}

/* Waits while another process refreshes the page (until its flight row
 * goes or its lock is let go). */
static void wait_flight(struct worker *w, struct flight *f)
{
	long waited = 0, step = 2;

	while (waited < PAGE_WAIT_MAX_MS && flight_pending(w->db, f) &&
	       flight_locked(f->tmp)) {
		usleep((useconds_t)step * 1000);
		waited += step;
		if (step < 50)
			step *= 2;
	}
}

/* Whether the page row changed since we looked at it (seen, or nothing
 * when !had): some other process refreshed it in the meantime. */
static int renewed(int had, const struct db_page *seen,
		   const struct db_page *p)
{
	return !had || p->fetched_at != seen->fetched_at ||
	       p->status != seen->status;
}

/* Makes one cache index's page usable, through the single-flight gate.
 *
 * A requester that waited on another process's refresh takes what that
 * refresh left (renewed, or stale when upstream failed) instead of asking
 * upstream again: a burst on a stale page costs one upstream request even
 * when the refreshed page is stale again by the time the waiters look
 * (a TTL of a second or less, or no-store). */
static int cache_get(struct worker *w, const struct conf_index *ix,
		     const char *project, struct db_page *p,
		     const char **cache, char *err, size_t errlen)
{
	struct flight f;
	struct db_page seen;
	char key[512];
	int have, had = 0, waited = 0, owner, rc;

	memset(&seen, 0, sizeof(seen));
	for (int round = 0; round < 3; round++) {
		have = db_page_get(w->db, ix->name, project, p) == 0;
		if (have && fresh(p, time(NULL))) {
			*cache = round ? "MISS" : "HIT";
			return p->status == 200 ? 0 : ENOENT;
		}
		if (have && waited) {
			if (renewed(had, &seen, p)) {
				*cache = "MISS";
				return p->status == 200 ? 0 : ENOENT;
			}
			if (stale_ok(w, p, time(NULL))) {
				*cache = "STALE";
				return 0;
			}
		}
		had = have;
		if (have)
			seen = *p;
		snprintf(key, sizeof(key), "page:%s:%s", ix->name, project);
		rc = flight_claim(w->db, w->conf->data_dir, key, -1, &owner,
				  &f);
		if (rc) {
			snprintf(err, errlen, "%s: cannot claim fetch: %s", key,
				 strerror(rc));
			return rc;
		}
		if (!owner) {
			wait_flight(w, &f);
			waited = 1;
			continue;
		}
		/* Someone may have finished just before we claimed. */
		have = db_page_get(w->db, ix->name, project, p) == 0;
		if (have && (fresh(p, time(NULL)) || renewed(had, &seen, p))) {
			*cache = "HIT";
			rc = 0;
		} else {
			rc = refresh(w, ix, project, p, have, cache, err,
				     errlen);
		}
		flight_done(w->db, &f);
		unlink(f.tmp);
		close(f.fd);
		if (rc)
			return rc;
		return p->status == 200 ? 0 : ENOENT;
	}
	/* The page keeps coming back stale: serve what there is. */
	if (db_page_get(w->db, ix->name, project, p) == 0 &&
	    stale_ok(w, p, time(NULL))) {
		*cache = "STALE";
		return 0;
	}
	snprintf(err, errlen, "%s: page not refreshed", ix->name);
	return EAGAIN;
}

int pages_get(struct worker *w, int idx, const char *project,
	      struct db_page *p, const char **cache, char *err,
	      size_t errlen)
{
	const struct conf_index *ix = &w->conf->index[idx];
	int rc = ENOENT, first_err = 0;

	if (ix->type == CONF_INDEX_CACHE)
		return cache_get(w, ix, project, p, cache, err, errlen);
	for (size_t i = 0; i < ix->nlayers; i++) {
		rc = pages_get(w, (int)ix->layer[i], project, p, cache, err,
			       errlen);
		if (rc == 0)
			return 0;
		if (rc != ENOENT && !first_err)
			first_err = rc;
	}
	return first_err ? first_err : ENOENT;
}
