#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/hash/sha256.h"
#include "common/log.h"
#include "common/names.h"
#include "common/pypi/simple.h"
#include "common/pypi/simple_merge.h"
#include "fcgi/pypi/pages.h"
#include "fcgi/pypi/quarantine.h"
#include "fcgi/pypi/virtual.h"
#include "storage/blob.h"
#include "storage/gc.h"
#include "storage/lru.h"

/* What the stored renderings' relative links are resolved against when
 * they are parsed again: any host does, they are rewritten the same way
 * on the way out. */
#define RENDERING_BASE "http://larder.invalid/index/simple/project/"

/* A leaf that has the page. */
struct source {
	int idx;
	struct db_page row;
	const char *cache;
};

/* Writes the leaves of index idx, depth-first, each once, to leaf (room
 * for CONF_MAX_INDEXES); *n counts them. */
static void flatten(const struct conf *c, int idx, int *leaf, size_t *n)
{
	const struct conf_index *ix = &c->index[idx];

	if (ix->type != CONF_INDEX_VIRTUAL) {
		for (size_t i = 0; i < *n; i++)
			if (leaf[i] == idx)
				return;
		if (*n < CONF_MAX_INDEXES)
			leaf[(*n)++] = idx;
		return;
	}
	for (size_t i = 0; i < ix->nlayers; i++)
		flatten(c, (int)ix->layer[i], leaf, n);
}

/* Whether some hosted leaf has files of project: its files, not its page
 * row (which fsck --repair may drop for a moment). A database error
 * counts as yes: private-first fails closed, never to the cache. */
static int hosted_has(struct worker *w, const int *leaf, size_t n,
		      const char *project)
{
	const struct conf *c = w->conf;

	for (size_t i = 0; i < n; i++)
		if (c->index[leaf[i]].type == CONF_INDEX_HOSTED &&
		    db_hosted_has(w->db, c->index[leaf[i]].name, project) !=
			    ENOENT)
			return 1;
	return 0;
}

/* Whether any of the n leaves is a hosted index. */
static int any_hosted(const struct conf *c, const int *leaf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (c->index[leaf[i]].type == CONF_INDEX_HOSTED)
			return 1;
	return 0;
}

/* Whether the virtual index ix may serve project ("" the list) from its
 * cache leaves at all. */
static int cache_allowed(struct worker *w, const struct conf_index *ix,
			 const int *leaf, size_t n, const char *project)
{
	if (ix->policy == CONF_POLICY_NO_FALLBACK)
		return 0;
	if (!*project)
		return 1;
	if (names_globs_match(ix->protected_names, project))
		return 0;
	return ix->policy != CONF_POLICY_PRIVATE_FIRST ||
	       !hosted_has(w, leaf, n, project);
}

/* How bad a leaf's answer was, for the merged answer's *cache. */
static int rank(const char *cache)
{
	static const char *const order[] = {"HIT", "REVALIDATED", "MISS",
					    "STALE"};

	for (int i = 3; i > 0; i--)
		if (cache && strcmp(cache, order[i]) == 0)
			return i;
	return 0;
}

/* The name of the merged page: "v:" and a sha256 of its sources, and of
 * the names filtered out of the cache leaves' lists. */
static void sources_key(const struct conf *c, const struct source *s,
			size_t n, const char *filter, char *out, size_t len)
{
	struct sha256 h;
	char hex[65];

	if (sha256_init(&h)) {
		*out = '\0'; /* matches no row: merge every time */
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const char *name = c->index[s[i].idx].name;

		sha256_update(&h, name, strlen(name) + 1);
		sha256_update(&h, s[i].row.json_sha, 65);
		sha256_update(&h, s[i].row.html_sha, 65);
	}
	if (filter)
		sha256_update(&h, filter, strlen(filter) + 1);
	sha256_final(&h, hex);
	snprintf(out, len, "v:%s", hex);
}

/* Parses the stored JSON rendering of source s into page. Returns 0, or
 * an errno with the reason in err (ENOENT: the rendering is gone). */
static int load(struct worker *w, const struct source *s, int is_list,
		struct simple_page *page, char *err, size_t errlen)
{
	const char *name = w->conf->index[s->idx].name;
	struct simple_opts o = {.base_url = RENDERING_BASE};
	size_t max = (size_t)w->conf->max_page_size * 2 + 1024;
	struct buf b;
	int rc;

	buf_init(&b, max);
	rc = blob_read(w->conf->data_dir, s->row.json_sha, &b);
	if (rc) {
		snprintf(err, errlen, "%s: reading the page's rendering: %s",
			 name, strerror(rc));
		goto out;
	}
	rc = simple_parse_json(b.data ? b.data : "", b.len, &o, is_list, page,
			       err, errlen);
	if (rc)
		log_warn(0, name, "its stored rendering does not parse: %s",
			 err);
out:
	buf_free(&b);
	return rc;
}

/* Merges the sources' renderings, stores both renderings of the merge and
 * writes the row p (old, when not NULL, is the row it replaces). filter:
 * globs of names taken out of the cache leaves' project lists. Returns 0 or an
 * errno with the reason in err; ENOENT when a source's rendering is gone
 * (*gone says which source). */
static int merge_store(struct worker *w, const struct conf_index *ix,
		       const char *project, const struct source *s, size_t n,
		       const char *filter, const struct db_page *old,
		       struct db_page *p, size_t *gone, char *err,
		       size_t errlen)
{
	const struct conf *c = w->conf;
	struct simple_page pages[CONF_MAX_INDEXES], merged;
	struct buf json, html;
	long long js = 0, hs = 0; /* their bytes in the store, .gz too */
	size_t loaded = 0;
	long long now = (long long)time(NULL);
	int is_list = !*project, rc = 0;

	memset(&merged, 0, sizeof(merged));
	buf_init(&json, (size_t)c->max_page_size * 2 * n + 1024);
	buf_init(&html, (size_t)c->max_page_size * 2 * n + 1024);
	for (; loaded < n; loaded++) {
		rc = load(w, &s[loaded], is_list, &pages[loaded], err, errlen);
		if (rc) {
			*gone = loaded;
			goto out;
		}
		if (filter &&
		    c->index[s[loaded].idx].type == CONF_INDEX_CACHE)
			simple_merge_drop(&pages[loaded], filter);
	}
	rc = simple_merge(pages, n, &merged);
	if (!rc) {
		quarantine_note(&merged, p);
		rc = simple_render_json(&merged, &json);
	}
	if (!rc)
		rc = simple_render_html(&merged, &html);
	if (!rc)
		worker_make_room(w, w->db, (long long)(json.len + html.len));
	if (!rc)
		rc = blob_put_page(c->data_dir, json.data, json.len, p->json_sha,
				   &js);
	if (!rc)
		rc = blob_put_page(c->data_dir, html.data, html.len, p->html_sha,
				   &hs);
	if (rc) {
		snprintf(err, errlen, "%s: merging the page of %s: %s",
			 ix->name, *project ? project : "the project list",
			 strerror(rc));
		goto out;
	}
	rc = db_begin(w->db);
	if (!rc)
		rc = pages_keep_renderings(w, &json, &html, p, &js, &hs);
	if (!rc)
		rc = db_blob_add(w->db, p->json_sha, js);
	if (!rc)
		rc = db_blob_add(w->db, p->html_sha, hs);
	if (!rc)
		rc = db_page_put(w->db, ix->name, project, p);
	if (!rc && old)
		rc = pages_note_replaced(w, old, p, now);
	if (!rc)
		rc = db_commit(w->db);
	if (rc) {
		db_rollback(w->db);
		snprintf(err, errlen, "%s: database error", ix->name);
		goto out;
	}
	lru_added(js + hs);
out:
	for (size_t i = 0; i < loaded; i++)
		simple_page_free(&pages[i]);
	simple_page_free(&merged);
	buf_free(&json);
	buf_free(&html);
	return rc;
}

/* Drops idx's own merged row of project, which a single source now
 * answers for: its renderings become garbage. */
static void drop_merged(struct worker *w, const struct conf_index *ix,
			const char *project)
{
	struct db_page old, none;

	if (db_page_get(w->db, ix->name, project, &old))
		return;
	memset(&none, 0, sizeof(none));
	if (db_begin(w->db))
		return;
	if (db_page_delete(w->db, ix->name, project) ||
	    (old.status == 200 &&
	     pages_note_replaced(w, &old, &none, (long long)time(NULL))) ||
	    db_commit(w->db))
		db_rollback(w->db);
}

/* Asks every allowed leaf for its page: the ones that have it go to s
 * (*n), the first failure to first (its reason in err). */
static void gather(struct worker *w, const int *leaf, size_t nleaf,
		   int with_cache, const char *project, int may_skip,
		   struct source *s, size_t *n, int *first, char *err,
		   size_t errlen)
{
	const struct conf *c = w->conf;
	char why[1024];
	size_t allowed = 0;
	int rc;

	for (size_t i = 0; i < nleaf; i++)
		allowed += with_cache ||
			   c->index[leaf[i]].type != CONF_INDEX_CACHE;
	*n = 0;
	*first = 0;
	for (size_t i = 0; i < nleaf; i++) {
		if (!with_cache && c->index[leaf[i]].type == CONF_INDEX_CACHE)
			continue;
		*why = '\0';
		rc = pages_get_leaf(w, leaf[i], project,
				    may_skip || allowed > 1, &s[*n].row,
				    &s[*n].cache, why, sizeof(why));
		if (rc == 0) {
			s[(*n)++].idx = leaf[i];
		} else if (rc != ENOENT && !*first) {
			*first = rc;
			snprintf(err, errlen, "%s", why);
		}
	}
}

int virtual_get(struct worker *w, int idx, const char *project, int may_skip,
		struct db_page *p, const char **cache, char *err,
		size_t errlen)
{
	const struct conf *c = w->conf;
	const struct conf_index *ix = &c->index[idx];
	struct source s[CONF_MAX_INDEXES];
	struct db_page old;
	const char *filter = NULL;
	char key[sizeof(p->etag)], why[1024];
	int leaf[CONF_MAX_INDEXES], first, have, worst = 0, rc;
	size_t nleaf = 0, n, soonest = 0, gone = 0;

	flatten(c, idx, leaf, &nleaf);
	for (int attempt = 0;; attempt++) {
		gather(w, leaf, nleaf,
		       cache_allowed(w, ix, leaf, nleaf, project), project,
		       may_skip, s, &n, &first, err, errlen);
		if (n == 0)
			return first ? first : ENOENT;
		if (first)
			log_warn(0, ix->name, "%s: serving what the other "
				 "layers have: %s",
				 *project ? project : "project list", err);
		filter = NULL;
		for (size_t i = 0; !*project && i < n; i++)
			if (*ix->protected_names &&
			    c->index[s[i].idx].type == CONF_INDEX_CACHE)
				filter = ix->protected_names;
		if (n == 1 && !filter) {
			*p = s[0].row;
			*cache = s[0].cache;
			/* a merge left from when more leaves had it goes; with
			 * one leaf there never was one (the default root/pypi:
			 * no lookup more on its warm path) */
			if (nleaf > 1)
				drop_merged(w, ix, project);
			goto partial;
		}
		soonest = 0;
		worst = 0;
		for (size_t i = 0; i < n; i++) {
			if (s[i].row.fetched_at + s[i].row.ttl <
			    s[soonest].row.fetched_at + s[soonest].row.ttl)
				soonest = i;
			if (rank(s[i].cache) > worst)
				worst = rank(s[i].cache);
		}
		sources_key(c, s, n, filter, key, sizeof(key));
		have = db_page_get(w->db, ix->name, project, &old) == 0;
		if (have && old.status == 200 && *key &&
		    strcmp(old.etag, key) == 0) {
			*p = old;
			break;
		}
		memset(p, 0, sizeof(*p));
		p->status = 200;
		snprintf(p->etag, sizeof(p->etag), "%s", key);
		p->fetched_at = s[soonest].row.fetched_at;
		p->ttl = s[soonest].row.ttl;
		rc = merge_store(w, ix, project, s, n, filter,
				 have ? &old : NULL, p, &gone, why,
				 sizeof(why));
		if (rc == ENOENT && attempt == 0) {
			/* a leaf's rendering went from the store: it fetches
			 * (or renders) its page again */
			pages_forget_missing(w, s[gone].idx, project);
			continue;
		}
		if (rc) {
			snprintf(err, errlen, "%s", why);
			/* still gone after a second look: not a 404 */
			return rc == ENOENT ? EIO : rc;
		}
		gc_collect_replaced(w->db, w->conf->data_dir,
				    w->conf->gc_grace);
		break;
	}
	/* fresh as long as its soonest-expiring source; at once stale when
	 * a leaf is missing from it */
	p->fetched_at = s[soonest].row.fetched_at;
	p->ttl = s[soonest].row.ttl;
	/* what the cache leaves' cooldowns left out, for the header */
	p->held = 0;
	for (size_t i = 0; i < n; i++)
		p->held += s[i].row.held;
	*cache = worst == 3 ? "STALE" : worst == 2 ? "MISS" :
		 worst == 1 ? "REVALIDATED" : "HIT";
partial:
	if (first) {
		p->fetched_at = (long long)time(NULL);
		p->ttl = 0;
	}
	return 0;
}

int virtual_find_file(struct worker *w, int idx, const char *sha256,
		      const char *filename, struct db_file *f)
{
	char names[SIMPLE_MERGE_MAX_NAMES][NAMES_MAX_PROJECT + 1];
	const struct conf *c = w->conf;
	const struct conf_index *ix = &c->index[idx];
	int leaf[CONF_MAX_INDEXES], with_cache = 1;
	size_t nleaf = 0, nnames;

	flatten(c, idx, leaf, &nleaf);
	/* the file may be of any project its name can be read as: cache
	 * leaves only when the policy lets each of them come from one */
	nnames = simple_merge_names(filename, names, SIMPLE_MERGE_MAX_NAMES);
	if (ix->policy == CONF_POLICY_NO_FALLBACK)
		with_cache = 0;
	/* a name that reads as no project, or as more than could be
	 * checked, cannot be cleared: no cache leaf then (fail closed) */
	if ((nnames == 0 || nnames == SIMPLE_MERGE_MAX_NAMES) &&
	    (*ix->protected_names ||
	     (ix->policy == CONF_POLICY_PRIVATE_FIRST &&
	      any_hosted(c, leaf, nleaf))))
		with_cache = 0;
	for (size_t i = 0; with_cache && i < nnames; i++)
		with_cache = cache_allowed(w, ix, leaf, nleaf, names[i]);
	for (size_t i = 0; i < nleaf; i++) {
		if (!with_cache && c->index[leaf[i]].type == CONF_INDEX_CACHE)
			continue;
		if (db_file_get(w->db, c->index[leaf[i]].name, sha256, filename,
				f) == 0)
			return leaf[i];
	}
	return -1;
}

void virtual_forget_missing(struct worker *w, int idx, const char *project)
{
	const struct conf_index *ix = &w->conf->index[idx];
	struct db_page p;

	if (db_page_get(w->db, ix->name, project, &p) == 0 &&
	    p.status == 200 && (!blob_exists(w->conf->data_dir, p.json_sha) ||
				!blob_exists(w->conf->data_dir, p.html_sha))) {
		log_warn(0, ix->name, "%s: a merged rendering is missing from "
			 "the store: merging again", project);
		db_page_delete(w->db, ix->name, project);
	}
}
