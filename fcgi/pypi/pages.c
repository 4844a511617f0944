#include "config.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/isotime.h"
#include "common/log.h"
#include "common/pypi/cooldown.h"
#include "common/pypi/html.h"
#include "common/pypi/policy.h"
#include "common/pypi/simple.h"
#include "fcgi/pypi/copies.h"
#include "fcgi/pypi/events.h"
#include "fcgi/pypi/hosted.h"
#include "fcgi/pypi/license.h"
#include "fcgi/pypi/metadata.h"
#include "fcgi/pypi/pages.h"
#include "fcgi/pypi/proc.h"
#include "fcgi/pypi/quarantine.h"
#include "fcgi/pypi/virtual.h"
#include "storage/blob.h"
#include "storage/db/db_search.h"
#include "storage/flight.h"
#include "storage/gc.h"
#include "storage/health.h"
#include "storage/lru.h"
#include "storage/stats.h"

/* What larder asks an upstream for: JSON when it can, HTML otherwise. */
static const char upstream_accept[] =
	"application/vnd.pypi.simple.v1+json, "
	"application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1";

/* How long a requester that could answer without it (a stale copy, or a
 * virtual index's other layers) waits on another process's refresh. */
#define STALE_WAIT_MS 1000
/* Pages bigger than this give their memory back to the system after
 * parsing. */
#define TRIM_OVER (1 << 20)

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

/* Reads a cached page's row with its freshness as the config says now:
 * fetched_at + min(its stored ttl, cache_ttl), so a reload that lowers
 * cache_ttl shortens the pages already held too (a stored ttl from
 * upstream's max-age or a cooldown may be shorter still). Returns what
 * db_page_get() does. */
static int page_read(const struct worker *w, const char *index,
		     const char *project, struct db_page *p)
{
	int rc = db_page_get(w->db, index, project, p);

	if (!rc && p->status == 200 && p->ttl > w->conf->cache_ttl)
		p->ttl = w->conf->cache_ttl;
	return rc;
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

int pages_note_replaced(struct worker *w, const struct db_page *old,
			const struct db_page *p, long long now)
{
	int rc = 0;

	if (*old->json_sha && strcmp(old->json_sha, p->json_sha) != 0 &&
	    strcmp(old->json_sha, p->html_sha) != 0)
		rc = db_garbage_add(w->db, old->json_sha, now);
	if (!rc && *old->html_sha && strcmp(old->html_sha, p->html_sha) != 0 &&
	    strcmp(old->html_sha, p->json_sha) != 0)
		rc = db_garbage_add(w->db, old->html_sha, now);
	return rc;
}

int pages_keep_renderings(struct worker *w, const struct buf *json,
			  const struct buf *html, const struct db_page *p,
			  long long *js, long long *hs)
{
	const char *data_dir = w->conf->data_dir;
	int rc;

	rc = blob_keep_page(data_dir, json->data, json->len, p->json_sha, js);
	if (!rc)
		rc = blob_keep_page(data_dir, html->data, html->len,
				    p->html_sha, hs);
	if (rc)
		return rc;
	/* a use now: eviction, which reads the table under this lock,
	 * spares them for gc_grace after the commit, while the request that
	 * made them hands one out (a page of ttl 0 is stale at once) */
	lru_touch(p->json_sha);
	lru_touch(p->html_sha);
	return 0;
}

/* Fills h with file f of cache index ix. Returns 0, or -1 (h untouched)
 * when its name does not fit. */
static int hint_set(struct worker *w, const struct conf_index *ix,
		    const struct simple_file *f, struct pypi_hint *h)
{
	if (strlen(f->filename) >= sizeof(h->filename))
		return -1;
	h->index = (int)(ix - w->conf->index);
	memcpy(h->sha256, f->sha256, sizeof(h->sha256));
	snprintf(h->filename, sizeof(h->filename), "%s", f->filename);
	return 0;
}

/* Notes the file whose metadata an installer reading this page likely
 * asks for next: pypi.c fetches it once the page is answered. */
static void hint_likely(struct worker *w, const struct conf_index *ix,
			const struct simple_page *page)
{
	int i = simple_likely_metadata(page);

	if (i >= 0)
		hint_set(w, ix, &page->files[i], &pypi_proc()->hint);
}

/* Notes the wheel an installer reading this prefetched page likely
 * downloads next, for prefetch_run() to fetch after the pages: one that
 * fits prefetch_wheel_size, on an index with no policy (a license rule
 * would read what is fetched). */
static void note_likely_wheel(struct worker *w, const struct conf_index *ix,
			      const struct simple_page *page)
{
	struct pypi_wheels *l = &pypi_proc()->wheels;
	const struct simple_file *f;
	int i;

	if (w->conf->prefetch_wheel_size <= 0 || l->n >= PYPI_MAX_DEPS ||
	    (ix->policies && *ix->policies))
		return;
	i = simple_likely_wheel(page);
	if (i < 0)
		return;
	f = &page->files[i];
	if (f->size >= 0 && f->size <= w->conf->prefetch_wheel_size &&
	    hint_set(w, ix, f, &l->f[l->n]) == 0)
		l->n++;
}

/* Moves the files of page that ix's policies deny into denied, with
 * their reasons (policy_split()); the advisories and the licenses are
 * read only when a policy looks at them. Counts the denials. Returns 0,
 * ENOMEM or EIO. */
static int policy_apply(struct worker *w, const struct conf_index *ix,
			const char *project, struct simple_page *page,
			struct simple_page *denied, char ***reasons)
{
	struct policy_vuln *vulns = NULL;
	struct policy *pols = NULL;
	size_t npols = 0, nvulns = 0, nfiles = page->nfiles;
	char **licenses = NULL;
	int rc;

	memset(denied, 0, sizeof(*denied));
	*reasons = NULL;
	if (!*project || !ix->policies || !*ix->policies)
		return 0;
	rc = policy_of(w->conf, ix, &pols, &npols);
	if (!rc && policy_wants_vulns(pols, npols))
		rc = db_osv_get(w->db, project, &vulns, &nvulns);
	if (!rc && policy_wants_license(pols, npols) &&
	    !(licenses = license_of_page(w, (int)(ix - w->conf->index),
					 page)))
		rc = ENOMEM;
	if (!rc)
		rc = policy_split(pols, npols, project, vulns, nvulns,
				  (const char *const *)licenses, page, denied,
				  reasons);
	if (!rc && denied->nfiles)
		stats_add(STATS_POLICY_DENIED, (long long)denied->nfiles);
	license_free(licenses, nfiles);
	free(vulns);
	free(pols);
	return rc;
}

/* Parses and renders an upstream 200, stores both renderings and the file
 * list, and writes the page row; the renderings it replaces (old, when
 * have) become garbage. */
static int store_page(struct worker *w, const struct conf_index *ix,
		      const char *project, const struct fetch_page *f,
		      long long now, struct db_page *p, int have, char *err,
		      size_t errlen)
{
	struct simple_opts o = {.base_url = f->url,
				.trusted = ix->trusted_hosts};
	struct simple_page page, held, denied;
	struct cooldown cd;
	char **reasons = NULL;
	long long mature = -1;
	struct buf json, html;
	long long js = 0, hs = 0; /* their bytes in the store, .gz too */
	struct db_page old = *p;
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
	memset(&held, 0, sizeof(held));
	memset(&denied, 0, sizeof(denied));
	/* an upstream's "200 OK" error page is HTML too, and reads as a page
	 * listing nothing: one with no link, no "Links for" title and no
	 * PEP 792 status is not taken to replace a project's page */
	if (!rc && !is_list && !strstr(f->content_type, "json") &&
	    !page.nfiles && !page.dropped && !page.name && !page.status[0]) {
		snprintf(err, errlen, "%s: not a simple index page (no links and "
			 "no title)", f->url);
		simple_page_free(&page);
		rc = EPROTO;
	}
	if (rc)
		goto out;
	/* with no previous copy *p is the caller's uninitialised row: the
	 * fields this does not set (project_status) must not be garbage */
	if (!have)
		memset(p, 0, sizeof(*p));
	if (page.dropped)
		log_warn(0, f->url, "left out %zu entries (unsafe, untrusted "
			 "host or no sha256)", page.dropped);
	/* the policies and the cooldown run here, once per upstream page, so
	 * a warm page costs nothing more */
	rc = policy_apply(w, ix, project, &page, &denied, &reasons);
	if (rc) {
		snprintf(err, errlen, "%s: the policies: %s", f->url,
			 strerror(rc));
		goto free_page;
	}
	if (denied.nfiles)
		log_info("%s: denied %zu of %zu files by policy (%s)", f->url,
			 denied.nfiles, denied.nfiles + page.nfiles,
			 ix->policies);
	/* the row keeps the upstream's own status (a file of a project the
	 * upstream quarantined is refused as such); the page may say more */
	quarantine_note(&page, p);
	if (policy_mark_project(&page, &denied, reasons) < 0) {
		snprintf(err, errlen, "%s: out of memory", f->url);
		rc = ENOMEM;
		goto free_page;
	}
	cooldown_of(w->conf, ix, &cd);
	rc = cooldown_split(&cd, project, &page, now, &held, &mature);
	if (rc) {
		snprintf(err, errlen, "%s: out of memory", f->url);
		goto free_page;
	}
	if (held.nfiles)
		log_info("%s: held back %zu of %zu files (%s)%s", f->url,
			 held.nfiles, held.nfiles + page.nfiles,
			 cd.min_age ? "min_release_age" : "exclude_newer",
			 !strstr(f->content_type, "json") ?
				 ": an HTML page gives no upload times, so "
				 "none is listed" : "");
	if (!is_list)
		metadata_advertise(w, ix, &page);
	/* PEP 691 names the page by its normalised name; an HTML page may
	 * not say it (no <title>) or spell it otherwise */
	if (!is_list && simple_name_set(&page, project) == ENOMEM)
		rc = ENOMEM;
	if (!rc)
		rc = simple_render_json(&page, &json);
	if (!rc)
		rc = simple_render_html(&page, &html);
	if (!rc)
		worker_make_room(w, w->db, (long long)(json.len + html.len));
	if (!rc)
		rc = copies_put_rendering(w, &json, p->json_sha, &js);
	if (!rc)
		rc = copies_put_rendering(w, &html, p->html_sha, &hs);
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
	p->held = (long)(held.nfiles + denied.nfiles);
	/* a held file matures though the upstream page stays the same: the
	 * page goes stale then, and refresh() fetches it whole */
	if (mature >= 0 && mature - now < p->ttl)
		p->ttl = mature - now > 0 ? (long)(mature - now) : 1;
	/* a prefetch's page is marked until a client asks for it; any other
	 * fetch clears the mark (a refresh by a client is no use of it) */
	p->prefetched_at = pypi_proc()->prefetching ? now : 0;
	rc = db_begin(w->db);
	if (!rc)
		rc = pages_keep_renderings(w, &json, &html, p, &js, &hs);
	if (!rc)
		rc = db_blob_add(w->db, p->json_sha, js);
	if (!rc)
		rc = db_blob_add(w->db, p->html_sha, hs);
	/* a page the index had before: the versions it never listed */
	if (!rc && !is_list && have && old.status == 200)
		rc = events_new_releases(w, ix, project, &page, &held);
	/* the held files too: a request for one is refused with the
	 * reason (pypi_file), not told that no page lists it */
	for (size_t i = 0; !rc && i < page.nfiles + held.nfiles +
				       denied.nfiles; i++) {
		size_t d = i - page.nfiles - held.nfiles;
		const struct simple_file *sf = i < page.nfiles ?
			&page.files[i] : i < page.nfiles + held.nfiles ?
			&held.files[i - page.nfiles] : &denied.files[d];
		struct db_file row = {.size = sf->size,
				      .has_meta = sf->core_metadata &&
						  !sf->made_metadata,
				      .upload_time = -1,
				      .yanked = sf->yanked};

		if (sf->upload_time &&
		    isotime_parse(sf->upload_time, strlen(sf->upload_time),
				  &row.upload_time))
			row.upload_time = -1;
		if (i >= page.nfiles + held.nfiles) {
			snprintf(row.denied, sizeof(row.denied), "%s",
				 reasons[d]);
			rc = events_denied(w, ix, project, sf, row.denied);
		}
		snprintf(row.url, sizeof(row.url), "%s", sf->url);
		snprintf(row.meta_sha, sizeof(row.meta_sha), "%s",
			 sf->meta_sha256);
		snprintf(row.project, sizeof(row.project), "%s", project);
		if (sf->provenance &&
		    strlen(sf->provenance) < sizeof(row.provenance))
			snprintf(row.provenance, sizeof(row.provenance), "%s",
				 sf->provenance);
		if (!rc)
			rc = db_file_put(w->db, ix->name, sf->sha256,
					 sf->filename, &row);
	}
	if (!rc)
		rc = db_page_put(w->db, ix->name, project, p);
	if (!rc && p->status == 200) /* found by /+search from now on */
		rc = db_search_name(w->db, ix->name, project);
	if (!rc && have)
		rc = pages_note_replaced(w, &old, p, now);
	if (!rc)
		rc = db_commit(w->db);
	if (!rc)
		lru_added(js + hs);
	if (rc) {
		db_rollback(w->db);
		snprintf(err, errlen, "%s: database error", f->url);
	} else {
		copies_note(w, p->json_sha);
		copies_note(w, p->html_sha);
		if (pypi_proc()->prefetching)
			pypi_proc()->prefetched++;
		/* a prefetched page hints at nothing: one level deep; its
		 * likely wheel is fetched after it, when asked for */
		if (!is_list && w->conf->prefetch_metadata && !w->cgi &&
		    !pypi_proc()->prefetching)
			hint_likely(w, ix, &page);
		if (!is_list && pypi_proc()->prefetching)
			note_likely_wheel(w, ix, &page);
	}
free_page:
	simple_page_free(&page);
	simple_page_free(&held);
	policy_reasons_free(reasons, denied.nfiles);
	simple_page_free(&denied);
out:
	buf_free(&json);
	buf_free(&html);
	/* a big page grew the heap: give it back */
	if (f->body.len > TRIM_OVER)
		malloc_trim(0);
	return rc;
}

/* Whether the last refresh of key failed less than error_ttl ago; its
 * reason goes to why. */
static int failed_recently(struct worker *w, const char *key, char *why,
			   size_t len)
{
	char sha[65];
	long long at;

	return w->conf->error_ttl > 0 &&
	       db_outcome_get(w->db, key, sha, why, len, &at) == 0 && !*sha &&
	       time(NULL) < at + w->conf->error_ttl;
}

/* Fetches (or revalidates) one cache index's page while owning its flight
 * key. have says whether *p held a previous copy. A failure is remembered
 * for error_ttl: its host's when the host is unwell, else the page's. */
static int refresh(struct worker *w, const struct conf_index *ix,
		   const char *project, const char *key, struct db_page *p,
		   int have, const char **cache, char *err, size_t errlen)
{
	const struct conf *c = w->conf;
	struct fetch_opts o;
	struct fetch_page f;
	char url[2048], sha[65], why[64];
	time_t now = time(NULL);
	struct cooldown cd;
	int cond, rc;

	worker_fetch_opts(c, conf_index_find(c, ix->name), &o);
	upstream_url(ix, project, url, sizeof(url));
	memset(&f, 0, sizeof(f));
	/* under a cooldown the rendering depends on the time (a held file
	 * matures) and on the settings, not only on the upstream page: a 304
	 * would keep the old one, so the page is fetched whole */
	/* and so under a policy (the rules or the advisories may have
	 * changed), or when the rendering held back files (a cooldown or a
	 * policy since taken off) */
	cooldown_of(c, ix, &cd);
	cond = have && p->status == 200 && !cooldown_active(&cd) &&
	       !(ix->policies && *ix->policies) && p->held == 0;
	rc = fetch_page(&o, url, upstream_accept, cond ? p->etag : NULL,
			cond ? p->last_modified : NULL, &f, err, errlen);
	health_note(w->db, url, rc, c->error_ttl, err);
	if (rc)
		goto failed;
	if (f.status == 304 && have && p->status == 200) {
		p->fetched_at = now;
		p->ttl = page_ttl(w, &f);
		rc = db_page_touch(w->db, ix->name, project, p->fetched_at,
				   p->ttl);
		*cache = "REVALIDATED";
		goto done;
	}
	if (f.status == 404 || f.status == 410) {
		int prefetching = pypi_proc()->prefetching;
		struct db_page neg = {.status = 404, .fetched_at = now,
				      .ttl = c->negative_ttl,
				      .prefetched_at = prefetching ? now : 0};

		rc = db_page_put(w->db, ix->name, project, &neg);
		if (!rc && prefetching)
			pypi_proc()->prefetched++;
		*p = neg;
		*cache = "MISS";
		goto done;
	}
	if (f.status != 200) {
		snprintf(err, errlen, "%s: upstream answered %ld", url,
			 f.status);
		rc = EPROTO;
		goto failed;
	}
	rc = store_page(w, ix, project, &f, now, p, have, err, errlen);
	if (rc)
		goto failed;
	*cache = "MISS";
	gc_collect_replaced(w->db, w->conf->data_dir,
			    w->conf->gc_grace);
done:
	/* a success after a remembered failure ends it */
	if (!rc && db_outcome_get(w->db, key, sha, why, sizeof(why), NULL) ==
			   0 && !*sha)
		db_outcome_put(w->db, key, "ok", "");
	buf_free(&f.body);
	return rc;
failed:
	log_warn(0, url, "%s", err);
	/* a host that cannot be reached is remembered as such (health.c),
	 * and tried again by one request at a time: not each of its pages
	 * for error_ttl after it is back */
	if (!fetch_unwell(rc))
		db_outcome_put(w->db, key, "", err);
	if (have && stale_ok(w, p, now)) {
		*cache = "STALE";
		rc = 0;
	}
	buf_free(&f.body);
	return rc;
}

/* Whether the page row changed since we looked at it (seen, or nothing
 * when !had): some other process refreshed it in the meantime. */
static int renewed(int had, const struct db_page *seen,
		   const struct db_page *p)
{
	return !had || p->fetched_at != seen->fetched_at ||
	       p->status != seen->status;
}

/* A cache index that is offline: its row, whatever its age, or a 503
 * (ENETDOWN) for a page it does not have. Nothing is asked of anyone. */
static int offline_get(struct worker *w, const struct conf_index *ix,
		       const char *project, struct db_page *p,
		       const char **cache, char *err, size_t errlen)
{
	if (page_read(w, ix->name, project, p) != 0) {
		snprintf(err, errlen, "index %s is offline (offline = yes) "
			 "and has no copy of %s", ix->name,
			 *project ? project : "the project list");
		return ENETDOWN;
	}
	*cache = fresh(p, time(NULL)) ? "HIT" : "STALE";
	return p->status == 200 ? 0 : ENOENT;
}

/* Makes one cache index's page usable, through the single-flight gate.
 *
 * A requester that waited on another process's refresh takes what that
 * refresh left (renewed, or stale when upstream failed) instead of asking
 * upstream again: a burst on a stale page costs one upstream request even
 * when the refreshed page is stale again by the time the waiters look (a
 * TTL of a second or less, or no-store). A failure is remembered for
 * error_ttl: meanwhile requesters answer from a stale copy at once, or
 * fail at once with the reason. One that could answer without this page
 * (a stale copy; or may_skip, a virtual index's later layers) waits on
 * another's refresh for STALE_WAIT_MS at most. */
static int cache_get(struct worker *w, const struct conf_index *ix,
		     const char *project, int may_skip, struct db_page *p,
		     const char **cache, char *err, size_t errlen)
{
	const struct conf *c = w->conf;
	char key[FLIGHT_KEY_MAX + 1], url[2048], why[1024];
	struct fetch_opts o;
	struct flight f;
	struct db_page seen;
	int have, had = 0, waited = 0, owner, rc;
	long max_ms, swr;

	if (flight_key(key, "page:%s:%s", ix->name, project)) {
		snprintf(err, errlen, "%s: name too long", ix->name);
		return ENAMETOOLONG;
	}
	if (conf_inherit(ix->offline, c->offline) > 0)
		return offline_get(w, ix, project, p, cache, err, errlen);
	/* only where the caller refreshes after its answer (pypi_simple),
	 * and never in CGI, whose process may be killed once it answered */
	swr = pypi_proc()->revalidate.can_defer && !w->cgi ?
		      conf_inherit(ix->stale_while_revalidate,
				   c->stale_while_revalidate) :
		      0;
	upstream_url(ix, project, url, sizeof(url));
	memset(&seen, 0, sizeof(seen));
	for (int round = 0; round < 3; round++) {
		have = page_read(w, ix->name, project, p) == 0;
		if (have && fresh(p, time(NULL))) {
			*cache = round ? "MISS" : "HIT";
			return p->status == 200 ? 0 : ENOENT;
		}
		if (round == 0 && have && p->status == 200 && swr > 0 &&
		    time(NULL) < p->fetched_at + p->ttl + swr) {
			/* answered now; one process refreshes it after */
			struct pypi_revalidate *rv = &pypi_proc()->revalidate;

			if (rv->index < 0) {
				rv->index = (int)(ix - c->index);
				snprintf(rv->project, sizeof(rv->project), "%s",
					 project);
			}
			*cache = "STALE";
			return 0;
		}
		if (have && waited && renewed(had, &seen, p)) {
			*cache = "MISS";
			return p->status == 200 ? 0 : ENOENT;
		}
		if (failed_recently(w, key, why, sizeof(why)) ||
		    health_down(w->db, url, w->conf->error_ttl, why,
				sizeof(why))) {
			if (have && stale_ok(w, p, time(NULL))) {
				*cache = "STALE";
				return 0;
			}
			snprintf(err, errlen, "%s", why);
			return EREMOTEIO;
		}
		if (have && waited && stale_ok(w, p, time(NULL))) {
			*cache = "STALE";
			return 0;
		}
		had = have;
		if (have)
			seen = *p;
		rc = flight_claim(w->db, c->data_dir, key, -1, &owner, &f);
		if (rc) {
			snprintf(err, errlen, "%s: cannot claim fetch: %s", key,
				 strerror(rc));
			return rc;
		}
		if (!owner) {
			worker_fetch_opts(c, conf_index_find(c, ix->name), &o);
			max_ms = (have && stale_ok(w, p, time(NULL))) ||
					 may_skip ?
				 STALE_WAIT_MS :
				 fetch_max_silence(&o) * 1000;
			worker_shed(w);
			waited = 1;
			if (flight_wait(w->db, &f, max_ms) || have)
				continue;
			snprintf(err, errlen, "%s: still being fetched", key);
			return ETIMEDOUT;
		}
		/* Someone may have finished just before we claimed. */
		have = page_read(w, ix->name, project, p) == 0;
		if (have && (fresh(p, time(NULL)) || renewed(had, &seen, p))) {
			*cache = "HIT";
			rc = 0;
		} else {
			worker_shed(w);
			rc = refresh(w, ix, project, key, p, have, cache, err,
				     errlen);
		}
		flight_drop(w->db, &f);
		if (rc)
			return rc;
		return p->status == 200 ? 0 : ENOENT;
	}
	/* The page keeps coming back stale: serve what there is. */
	if (page_read(w, ix->name, project, p) == 0 &&
	    stale_ok(w, p, time(NULL))) {
		*cache = "STALE";
		return 0;
	}
	snprintf(err, errlen, "%s: page not refreshed", ix->name);
	return EAGAIN;
}

void pages_revalidate(struct worker *w)
{
	struct pypi_revalidate *rv = &pypi_proc()->revalidate;
	const struct conf_index *ix;
	char key[FLIGHT_KEY_MAX + 1], err[1024], why[1024];
	const char *cache;
	struct flight f;
	struct db_page p;
	int owner, have;

	if (rv->index < 0)
		return;
	ix = &w->conf->index[rv->index];
	rv->index = -1;
	if (flight_key(key, "page:%s:%s", ix->name, rv->project) ||
	    failed_recently(w, key, why, sizeof(why)))
		return;
	/* another process refreshing it is the one refresh the burst
	 * costs: nobody waits for it here */
	if (flight_claim(w->db, w->conf->data_dir, key, -1, &owner, &f) ||
	    !owner)
		return;
	have = page_read(w, ix->name, rv->project, &p) == 0;
	if (!have || !fresh(&p, time(NULL))) {
		worker_shed(w);
		if (refresh(w, ix, rv->project, key, &p, have, &cache, err,
			    sizeof(err)))
			log_warn(0, ix->name, "%s: refreshing after a stale "
				 "answer: %s", *rv->project ? rv->project :
				 "project list", err);
	}
	flight_drop(w->db, &f);
}

/* A hosted index's page: its own row, rendered by every upload, yank and
 * removal (fcgi/pypi/hosted.c), always fresh; it never fetches. */
static int hosted_get(struct worker *w, const struct conf_index *ix,
		      const char *project, struct db_page *p,
		      const char **cache)
{
	char err[1024];

	if (db_page_get(w->db, ix->name, project, p) || p->status != 200) {
		/* its row went (fsck --repair) while its files are there:
		 * render it again; a project it does not have costs one
		 * read */
		if (*project && db_hosted_has(w->db, ix->name, project))
			return ENOENT;
		if (hosted_render(w, (int)(ix - w->conf->index), project, err,
				  sizeof(err)) ||
		    db_page_get(w->db, ix->name, project, p) ||
		    p->status != 200)
			return ENOENT;
	}
	/* rendered on every change, so always current here; to clients and
	 * the web server's page cache (and so to a virtual index's merge) it
	 * is fresh for the second it is sent in: an upload shows at once,
	 * and a burst still costs larder one answer a second */
	p->fetched_at = (long long)time(NULL);
	p->ttl = HOSTED_FRESH;
	*cache = "HIT";
	return 0;
}

int pages_get_leaf(struct worker *w, int idx, const char *project,
		   int may_skip, struct db_page *p, const char **cache,
		   char *err, size_t errlen)
{
	const struct conf_index *ix = &w->conf->index[idx];
	int rc;

	if (ix->type == CONF_INDEX_CACHE) {
		p->prefetched_at = 0;
		rc = cache_get(w, ix, project, may_skip, p, cache, err,
			       errlen);
		/* a client's first request for a page a prefetch fetched
		 * (whichever process gets it): the prefetch was of use */
		if ((rc == 0 || rc == ENOENT) && p->prefetched_at &&
		    !pypi_proc()->prefetching &&
		    db_page_prefetch_used(w->db, ix->name, project) == 0)
			stats_add(STATS_PREFETCH_USED, 1);
		return rc;
	}
	if (ix->type == CONF_INDEX_HOSTED)
		return hosted_get(w, ix, project, p, cache);
	snprintf(err, errlen, "%s: not a cache or hosted index", ix->name);
	return EINVAL;
}

int pages_get(struct worker *w, int idx, const char *project,
	      struct db_page *p, const char **cache, char *err,
	      size_t errlen)
{
	if (w->conf->index[idx].type == CONF_INDEX_VIRTUAL)
		return virtual_get(w, idx, project, 0, p, cache, err, errlen);
	return pages_get_leaf(w, idx, project, 0, p, cache, err, errlen);
}

enum pages_want pages_wanted(struct worker *w, int idx, const char *project)
{
	const struct conf_index *ix = &w->conf->index[idx];
	enum pages_want want = PAGES_OFFLINE, one;
	struct db_page p;

	switch (ix->type) {
	case CONF_INDEX_CACHE:
		if (conf_inherit(ix->offline, w->conf->offline) > 0)
			return PAGES_OFFLINE;
		return page_read(w, ix->name, project, &p) == 0 &&
		       fresh(&p, time(NULL)) ? PAGES_FRESH : PAGES_WANTED;
	case CONF_INDEX_VIRTUAL:
		for (size_t i = 0; i < ix->nlayers; i++) {
			one = pages_wanted(w, (int)ix->layer[i], project);
			if (one == PAGES_WANTED)
				return PAGES_WANTED;
			if (one == PAGES_FRESH)
				want = PAGES_FRESH;
		}
		return want;
	default:
		return PAGES_FRESH; /* rendered here, never fetched */
	}
}

void pages_forget_missing(struct worker *w, int idx, const char *project)
{
	const struct conf_index *ix = &w->conf->index[idx];
	struct db_page p;

	if (ix->type == CONF_INDEX_VIRTUAL) {
		virtual_forget_missing(w, idx, project);
		for (size_t i = 0; i < ix->nlayers; i++)
			pages_forget_missing(w, (int)ix->layer[i], project);
		return;
	}
	if (db_page_get(w->db, ix->name, project, &p) != 0 ||
	    p.status != 200 || (blob_exists(w->conf->data_dir, p.json_sha) &&
				blob_exists(w->conf->data_dir, p.html_sha)))
		return;
	if (ix->type == CONF_INDEX_HOSTED) {
		char err[1024];

		/* never fetched: its rows are the truth, render it again */
		log_warn(0, ix->name, "%s: a rendering is missing from the "
			 "store: rendering the page again", project);
		if (hosted_render(w, idx, project, err, sizeof(err)))
			log_error(0, ix->name, "%s", err);
		return;
	}
	log_warn(0, ix->name, "%s: a rendering is missing from the "
		 "store: fetching the page again", project);
	db_page_delete(w->db, ix->name, project);
}
