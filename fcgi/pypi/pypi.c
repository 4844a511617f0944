#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/http/accept.h"
#include "common/log.h"
#include "common/pypi/cooldown.h"
#include "common/pypi/policy.h"
#include "fcgi/access/auth.h"
#include "fcgi/pypi/copies.h"
#include "fcgi/pypi/hosted.h"
#include "fcgi/pypi/license.h"
#include "fcgi/pypi/listing.h"
#include "fcgi/pypi/metadata.h"
#include "fcgi/pypi/pages.h"
#include "fcgi/pypi/prefetch.h"
#include "fcgi/pypi/proc.h"
#include "fcgi/pypi/pypi.h"
#include "fcgi/pypi/quarantine.h"
#include "fcgi/pypi/ranges.h"
#include "fcgi/pypi/virtual.h"
#include "fcgi/server/fetcher.h"
#include "fcgi/server/send.h"
#include "storage/blob.h"
#include "storage/flight.h"
#include "storage/stats.h"

/* PyPI's per-process state (fcgi/pypi/proc.h): one request at a time. */
static struct pypi_proc proc = {
	.hint.index = -1, .revalidate.index = -1, .deps.index = -1};

struct pypi_proc *pypi_proc(void)
{
	return &proc;
}

static void prefetch(struct worker *w);

/* Finds a PEP 691 ?format= in the query, decoded into out. */
static int query_format(const char *q, char *out, size_t len)
{
	const char *p = q;
	size_t n = 0;

	while (p && *p) {
		if (strncmp(p, "format=", 7) == 0) {
			p += 7;
			while (*p && *p != '&' && n + 1 < len) {
				if (*p == '%' && p[1] && p[2]) {
					char hex[3] = {p[1], p[2], 0};

					out[n++] = (char)strtol(hex, NULL, 16);
					p += 3;
				} else {
					out[n++] = *p == '+' ? ' ' : *p;
					p++;
				}
			}
			out[n] = '\0';
			return 1;
		}
		p = strchr(p, '&');
		if (p)
			p++;
	}
	return 0;
}

void pypi_simple(struct worker *w, struct req *r, const struct route *rt)
{
	const char *project = rt->kind == ROUTE_SIMPLE_LIST ? "" : rt->project;
	struct send_opts o = {.vary_accept = 1, .gzip = 1};
	enum accept_format fmt;
	struct db_page p;
	char err[1024] = "";
	char format[128];
	int rc, retried = 0;

	if (query_format(r->query, format, sizeof(format)))
		fmt = accept_from_format(format);
	else
		fmt = accept_choose(req_env(r, "HTTP_ACCEPT"));
	if (fmt == ACCEPT_NONE) {
		req_header(r, "Vary", "Accept");
		req_error(r, 406, "ask for application/vnd.pypi.simple.v1+json "
			  "or text/html");
		return;
	}
	/* the most requested projects are on the anonymous status page:
	 * not the names of an index that takes a token to read */
	if (*project && !auth_read_token(w, rt->index))
		stats_top_add(STATS_TOP_PROJECTS, project);
	pypi_proc()->copies.n = 0; /* (one an earlier request left) */
again:
	pypi_proc()->hint.index = -1;
	pypi_proc()->revalidate.index = -1;
	pypi_proc()->revalidate.can_defer = 1;
	pypi_proc()->copies.can_defer = 1;
	rc = pages_get(w, rt->index, project, &p, &r->cache, err,
		       sizeof(err));
	pypi_proc()->revalidate.can_defer = 0;
	pypi_proc()->copies.can_defer = 0;
	if (rc == ENOENT) {
		req_header(r, "Vary", "Accept");
		req_error(r, 404, *project ? "no such project" :
			  "no project list");
		return;
	}
	if (rc) {
		req_error(r, rc == ENETDOWN ? 503 : 502, err);
		return;
	}
	/* what the cooldown left out (fcgi/pypi/pages.c), so a client that misses
	 * a release can tell why */
	if (p.held > 0)
		req_header(r, "X-Larder-Held-Back", "%ld", p.held);
	/* Fresh until the page goes stale here, as an Expires (the client's
	 * freshness is Expires - Date, and Date is when it is sent): exact for
	 * a client and for a cache in the web server (conf/nginx.conf keeps
	 * fresh pages), however long that cache has held it. */
	o.expires = p.fetched_at + p.ttl;
	if (o.expires <= time(NULL))
		o.expires = 1; /* stale: a date in the past */
	o.inline_body = o.front_cache = req_env_on(r, "LARDER_PAGE_CACHE");
	o.whole = r->cache && strcmp(r->cache, "STALE") == 0;
	o.content_type = accept_content_type(fmt);
	rc = send_blob(w, r, fmt == ACCEPT_JSON ? p.json_sha : p.html_sha, &o);
	if (rc == ENOENT && !retried) {
		/* a rendering gone from the store: fetch the page again */
		pages_forget_missing(w, rt->index, project);
		retried = 1;
		goto again;
	}
	if (rc) {
		req_error(r, 500, "cached page is missing from the store");
	} else if (pypi_proc()->hint.index >= 0 ||
		   pypi_proc()->revalidate.index >= 0 ||
		   pypi_proc()->copies.n) {
		/* the page is answered: the client reads it while the
		 * metadata it likely wants next comes, while the page's
		 * gzip'd copies are made, or while the stale page it got is
		 * refreshed (stale_while_revalidate) */
		req_end(r, 0);
		prefetch(w);
		copies_make(w);
		pages_revalidate(w);
	}
	pypi_proc()->hint.index = -1;
	pypi_proc()->revalidate.index = -1;
	pypi_proc()->copies.n = 0;
}

int pypi_offline(const struct worker *w, int idx, char *err, size_t errlen)
{
	const struct conf_index *ix = &w->conf->index[idx];

	if (ix->type != CONF_INDEX_CACHE ||
	    conf_inherit(ix->offline, w->conf->offline) <= 0)
		return 0;
	snprintf(err, errlen, "index %s is offline (offline = yes) and does "
		 "not have it", ix->name);
	return 1;
}

int pypi_find_file(struct worker *w, int idx, const char *sha,
		   const char *filename, struct db_file *f)
{
	const struct conf_index *ix = &w->conf->index[idx];

	if (ix->type == CONF_INDEX_VIRTUAL)
		return virtual_find_file(w, idx, sha, filename, f);
	return db_file_get(w->db, ix->name, sha, filename, f) ? -1 : idx;
}

/* The sha256 of no bytes at all. */
static const char empty_sha[] =
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/* Answers a HEAD for a file the store does not have from what the page
 * said of it, or from an upstream HEAD when it said no size: nothing is
 * downloaded. */
static void head_uncached(struct req *r, const struct fetcher_want *want)
{
	long long size = want->size;
	char err[1024];

	if (size < 0) {
		if (fetch_head(want->opts, want->url, &size, err,
			       sizeof(err))) {
			req_error(r, 502, err);
			return;
		}
	}
	r->cache = "MISS";
	req_header(r, "Content-Type", "%s", want->content_type);
	if (size >= 0)
		req_header(r, "Content-Length", "%lld", size);
	if (*want->expect) {
		req_header(r, "ETag", "\"%s\"", want->expect);
		req_header(r, "Cache-Control", "%s", send_immutable(r));
	}
	req_start(r, 200);
}

struct prov_ctx {
	const char *file_sha;  /* the file whose provenance it is */
	const char *url;       /* where it came from */
};

/* Records, in the process that fetched it, which blob a file's
 * provenance turned out to be: the next request is served from the store
 * (db_file_put keeps it while the page lists the same URL). */
static void provenance_stored(struct db *db, const char *sha256,
			      long long size, void *ctx)
{
	const struct prov_ctx *pc = ctx;

	(void)size;
	db_file_set_prov(db, pc->file_sha, pc->url, sha256);
}

int pypi_file_want(struct worker *w, int from, const struct db_file *f,
		     const char *sha256, int metadata,
		   struct fetcher_want *want, struct fetch_opts *o,
		   char key[FLIGHT_KEY_MAX + 1], char url[2100], char sha[65])
{
	memset(want, 0, sizeof(*want));
	want->content_type = metadata == PYPI_PROVENANCE ? "application/json" :
			     metadata ? "text/plain; charset=utf-8" :
					"application/octet-stream";
	worker_fetch_opts(w->conf, from, o);
	want->opts = o;
	want->size = -1;
	if (metadata == PYPI_PROVENANCE) {
		/* content-addressed once fetched; what it hashes to is not
		 * known before (no page gives it), and it may change
		 * upstream, so nothing is expected of the bytes */
		snprintf(sha, 65, "%s", f->prov_sha);
		flight_key(key, "prov:%s", sha256);
		snprintf(url, 2100, "%s", f->provenance);
		want->key = key;
		want->url = url;
		want->expect = "";
		return *sha && send_stored(w, sha);
	}
	if (metadata) {
		/* a provisional hash is nobody's promise */
		snprintf(sha, 65, "%s", f->meta_prov ? "" : f->meta_sha);
		flight_key(key, "meta:%s", sha256);
		snprintf(url, 2100, "%s.metadata", f->url);
		if (!*sha)
			want->meta_of = sha256;
	} else {
		snprintf(sha, 65, "%s", sha256);
		flight_key(key, "blob:%s", sha256);
		snprintf(url, 2100, "%s", f->url);
		/* a size of 0 or less on a page is not to be believed (it
		 * would make the headers a complete-looking answer): unknown,
		 * unless the file is the empty one */
		if (f->size > 0)
			want->size = f->size;
	}
	want->key = key;
	want->url = url;
	want->expect = sha;
	if (strcmp(sha, empty_sha) == 0 &&
	    !blob_exists(w->conf->data_dir, sha) &&
	    blob_put(w->conf->data_dir, "", 0, sha) == 0)
		db_blob_add(w->db, sha, 0);
	return *sha && send_stored(w, sha);
}

/* Fetches the metadata the last page refresh hinted at (the process's
 * hint), with no client waiting: a request for it meanwhile follows this
 * fetch. */
static void prefetch(struct worker *w)
{
	const struct pypi_hint *h = &pypi_proc()->hint;
	char sha[65], err[1024] = "";
	int rc;

	if (h->index < 0)
		return;
	rc = metadata_ensure(w, h->index, h->sha256, h->filename, sha, err,
			     sizeof(err));
	if (rc && rc != ENOENT)
		log_warn(rc, h->filename, "prefetch: %s", err);
}

/* Whether index idx is hosted or a virtual index with a hosted index
 * among its layers (depth: how many more virtual levels to look into). */
static int with_hosted(const struct conf *c, size_t idx, int depth)
{
	const struct conf_index *ix = &c->index[idx];

	if (ix->type == CONF_INDEX_HOSTED)
		return 1;
	if (ix->type != CONF_INDEX_VIRTUAL || depth <= 0)
		return ix->type == CONF_INDEX_VIRTUAL; /* (too deep: yes) */
	for (size_t i = 0; i < ix->nlayers; i++)
		if (with_hosted(c, ix->layer[i], depth - 1))
			return 1;
	return 0;
}

/* The last unix second nginx's page cache may keep a small file of index
 * idx that cache leaf from lists (f), or 0: not at all. While the page
 * that listed it is fresh, as nginx keeps that page: what is decided when
 * a page is rendered again (a policy, a quarantine, a cooldown shortening
 * the page's ttl) shows for the file then too. A file of, or under, a
 * hosted index for the second it is sent in, as its pages: a removal, or
 * an upload that shadows it (private-first), shows at once, and a burst
 * still costs larder one answer a second. */
static long long front_until(struct worker *w, int idx, int from,
			     const struct db_file *f)
{
	const struct conf *c = w->conf;
	long long now = (long long)time(NULL), until;
	struct db_page p;
	long ttl;

	if (with_hosted(c, (size_t)idx, 8) ||
	    c->index[from].type != CONF_INDEX_CACHE)
		return now + HOSTED_FRESH - 1;
	if (!*f->project ||
	    db_page_get(w->db, c->index[from].name, f->project, &p) ||
	    p.status != 200)
		return 0;
	/* (a reload that lowers cache_ttl shortens a stored ttl: pages.c) */
	ttl = p.ttl > c->cache_ttl ? c->cache_ttl : p.ttl;
	until = p.fetched_at + ttl - 1;
	return until >= now ? until : 0;
}

/* Answers r, the request for a file (or its .metadata or provenance). */
static void file_answer(struct worker *w, struct req *r,
			const struct route *rt)
{
	struct send_opts o = {.cache_control = SEND_IMMUTABLE};
	struct fetcher_want want;
	struct metadata_page pg;
	struct fetch_opts fo;
	struct db_file f;
	char key[FLIGHT_KEY_MAX + 1], url[2100], sha[65], err[1024] = "";
	struct prov_ctx pc;
	size_t mark;
	struct cooldown cd;
	const char *held_by = NULL;
	time_t now = time(NULL);
	enum license_fetch fetch;
	int rc, from, stored, kind, denied;

	from = pypi_find_file(w, rt->index, rt->sha256, rt->filename, &f);
	if (from < 0) {
		/* listed by a page another node fetched (fcgi/pypi/listing.h) */
		rc = listing_fetch(w, rt->index, rt->sha256, rt->filename, &f,
				   &from, err, sizeof(err));
		if (rc == ENOENT) {
			req_error(r, 404, "no page of this index lists that file");
			return;
		}
		if (rc) {
			req_error(r, 502, err);
			return;
		}
	}
	if (quarantine_refused(w, from, &f)) {
		req_error(r, 403, "project is quarantined upstream (PEP 792)");
		return;
	}
	kind = rt->provenance ? PYPI_PROVENANCE : rt->metadata;
	if (w->conf->index[from].type == CONF_INDEX_CACHE) {
		/* by the row's upload time, at request time: a file stored
		 * before a cooldown was set, or a page rendered before, is
		 * held back all the same (answered below) */
		cooldown_of(w->conf, &w->conf->index[from], &cd);
		held_by = cooldown_holds(&cd, f.project, f.upload_time, now,
					 NULL);
	}
	/* what the policies decided when the page was rendered
	 * (fcgi/pypi/pages.c), while that policy is still the index's; or,
	 * under a license= rule, decided again now, as larder may know the
	 * file's license only since (its metadata stored after the page, or
	 * fetched now, unless nothing would be fetched for this request):
	 * the row takes the new decision and the project's pages are
	 * rendered again */
	fetch = r->head || held_by || pypi_offline(w, from, err, sizeof(err)) ?
		LICENSE_LOCAL : kind == 0 ? LICENSE_FETCH_FILE :
		LICENSE_FETCH_META;
	denied = license_judge(w, from, rt->sha256, rt->filename, &f, fetch,
			       err, sizeof(err));
	if (denied >= 0 && denied != (*f.denied != '\0')) {
		rc = db_file_set_denied(w->db, w->conf->index[from].name,
					rt->sha256, rt->filename,
					denied ? err : "");
		if (!rc)
			rc = db_policy_expire(w->db, f.project);
		if (rc)
			log_warn(rc, f.project, "its pages not made stale");
	} else if (denied < 0) {
		denied = *f.denied &&
			 policy_reason_current(f.denied,
					       w->conf->index[from].policies);
		snprintf(err, sizeof(err), "%s", f.denied);
	}
	if (denied) {
		stats_add(STATS_POLICY_REFUSED, 1);
		req_error(r, 403, err);
		return;
	}
	*err = '\0';
	if (rt->provenance && !*f.provenance) {
		req_error(r, 404, "upstream lists no provenance for it");
		return;
	}
	if (rt->metadata && !f.has_meta &&
	    !(*f.meta_sha && !f.meta_prov && send_stored(w, f.meta_sha))) {
		/* larder makes it */
		metadata_serve(w, r, from, &f, rt->sha256, rt->filename);
		return;
	}
	if (held_by) {
		cooldown_reason(&cd, held_by, f.upload_time, now, err,
				sizeof(err));
		req_error(r, 403, err);
		return;
	}
	if (rt->metadata && !rt->provenance &&
	    metadata_serve_listed(w, r, from, &f, rt->sha256, rt->filename))
		return;
	stored = pypi_file_want(w, from, &f, rt->sha256, kind, &want, &fo,
			   key, url, sha);
	pg.index = w->conf->index[from].name;
	pg.project = f.project;
	if (kind == 0)
		metadata_watch(w, &want, rt->filename, &pg);
	if (kind == PYPI_PROVENANCE) {
		pc.file_sha = rt->sha256;
		pc.url = f.provenance;
		want.stored = provenance_stored;
		want.ctx = &pc;
		/* larder's URL stays when upstream's provenance changes */
		o.cache_control = NULL;
	}
	o.content_type = want.content_type;
	/* behind nginx's page cache (conf/nginx.conf), a small file or
	 * .metadata is kept there as pages are: content-addressed, its
	 * bytes never change. Not a provenance, which may. */
	if (req_env_on(r, "LARDER_PAGE_CACHE") && kind != PYPI_PROVENANCE) {
		o.front_small = 1;
		o.front_until = front_until(w, rt->index, from, &f);
	}
	/* a file's size as its page said, unless the page said none */
	o.have_size = kind == 0 && f.size > 0;
	o.size = f.size;
	if (stored) {
		mark = req_header_mark(r);
		r->cache = "HIT";
		rc = send_blob(w, r, sha, &o);
		if (rc != ENOENT) {
			if (rc)
				req_error(r, 500, "cannot read the stored file");
			return;
		}
		/* evicted between the look and the open: a miss after all */
		req_header_rewind(r, mark);
		r->cache = NULL;
	}
	if (w->conf->index[from].type == CONF_INDEX_HOSTED) {
		/* uploaded, so never to be fetched (its url is "") */
		req_error(r, 404, "file is missing from the store");
		return;
	}
	if (pypi_offline(w, from, err, sizeof(err))) {
		req_error(r, 503, err);
		return;
	}
	if (r->head) {
		head_uncached(r, &want);
		return;
	}
	if (kind == 0 &&
	    ranges_serve_cold(w, r, from, &f, rt->sha256, &want))
		return;
	rc = fetcher_serve(w, r, &want, sha, err, sizeof(err));
	if (rc == EEXIST) {
		r->cache = "HIT";
		/* another request's fetch of a .metadata no page vouched for
		 * ended meanwhile: what it stored is provisional */
		if (want.meta_of)
			metadata_send_provisional(w, r, sha);
		else if (send_blob(w, r, sha, &o))
			req_error(r, 500, "cannot read the stored file");
		return;
	}
	if (rc == EAGAIN)
		req_error(r, 503, err);
	else if (rc)
		req_error(r, 502, err);
}

void pypi_file(struct worker *w, struct req *r, const struct route *rt)
{
	int may_prefetch = !rt->provenance && w->conf->prefetch_max > 0 &&
			   !w->cgi;

	/* a prefetch may follow the answer: a fetch that ends it early must
	 * not keep the connection, or the web server's next request (a warm
	 * one, as likely as not) would wait behind the prefetch */
	r->no_keep = may_prefetch;
	file_answer(w, r, rt);
	if (!may_prefetch)
		return;
	/* what the installer reads next: its dependencies' pages, fetched
	 * once this answer is out (fcgi/pypi/prefetch.h) */
	prefetch_note(w, r, rt->index, rt->sha256, rt->filename,
		      rt->metadata);
	if (pypi_proc()->deps.index < 0)
		return;
	req_end(r, 0);
	prefetch_run(w);
}
