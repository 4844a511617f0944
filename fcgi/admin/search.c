#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/http/form.h"
#include "common/json.h"
#include "common/names.h"
#include "common/search.h"
#include "fcgi/access/auth.h"
#include "fcgi/admin/out.h"
#include "fcgi/admin/search.h"
#include "fcgi/oci/access.h"
#include "storage/db/db_search.h"

/* The most bytes of an answer. */
#define MAX_ANSWER (1 << 20)

/* The scopes one search covers: each name between '\n's, as
 * db_search_query() takes them. */
struct scopes {
	char indexes[CONF_MAX_INDEXES * 130 + 2];
	char registries[CONF_MAX_REGISTRIES * 130 + 2];
};

static void scope_add(char *list, size_t len, const char *name)
{
	size_t n = strlen(list);

	if (!n && len > 1) {
		list[0] = '\n';
		list[1] = '\0';
		n = 1;
	}
	snprintf(list + n, len - n, "%s\n", name);
}

/* Adds index i (a cache or hosted one; a virtual one's layers) to s when
 * r may read it. Named (asked for with index=): a refusal is answered,
 * and returns EACCES. */
static int add_index(struct worker *w, struct req *r, struct scopes *s,
		     size_t i, int named)
{
	const struct conf_index *ix = &w->conf->index[i];

	if (ix->type == CONF_INDEX_VIRTUAL) {
		if (named && auth_read_token(w, (int)i) &&
		    auth_allow(w, r, (int)i, (int)i, TOKEN_READ, ""))
			return EACCES;
		for (size_t k = 0; k < ix->nlayers; k++)
			if (add_index(w, r, s, ix->layer[k], 0))
				return EACCES;
		return 0;
	}
	/* the project list's rule: any read token of the index may */
	if (auth_read_token(w, (int)i)) {
		if (named && auth_allow(w, r, (int)i, (int)i, TOKEN_READ, ""))
			return EACCES;
		if (!named && auth_may(w, r, (int)i, TOKEN_READ, ""))
			return 0;
	}
	scope_add(s->indexes, sizeof(s->indexes), ix->name);
	return 0;
}

/* As add_index(), for registry i. */
static int add_registry(struct worker *w, struct req *r, struct scopes *s,
			size_t i, int named)
{
	const struct conf_registry *rg = &w->conf->registry[i];

	if (rg->type == CONF_REGISTRY_VIRTUAL) {
		if (named && rg->read == CONF_READ_TOKEN &&
		    oci_access_allow(w, r, (int)i, NULL, TOKEN_PULL))
			return EACCES;
		for (size_t k = 0; k < rg->nlayers; k++)
			if (add_registry(w, r, s, rg->layer[k], 0))
				return EACCES;
		return 0;
	}
	if (rg->read == CONF_READ_TOKEN) {
		if (named && oci_access_allow(w, r, (int)i, NULL, TOKEN_PULL))
			return EACCES;
		if (!named && oci_access_may(w, r, (int)i, NULL, TOKEN_PULL))
			return 0;
	}
	scope_add(s->registries, sizeof(s->registries), rg->name);
	return 0;
}

/* Drops from hits (*n of them) the names r's token may not read in a
 * scope that takes a token: a token limited to some projects or
 * repositories (--projects, --repositories) sees only those, as when it
 * asks for one. The scopes themselves were checked (add_index(),
 * add_registry()); this is the per-name rule. */
static void drop_unreadable(struct worker *w, struct req *r,
			    struct db_search_hit *hits, size_t *n)
{
	const struct conf *c = w->conf;
	size_t kept = 0;

	for (size_t i = 0; i < *n; i++) {
		const struct db_search_hit *h = &hits[i];
		int oci = strcmp(h->kind, "oci") == 0, ok = 1, k;

		if (oci) {
			k = conf_registry_find(c, h->scope, strlen(h->scope));
			if (k < 0 || (c->registry[k].read == CONF_READ_TOKEN &&
				      oci_access_may(w, r, k, h->name,
						     TOKEN_PULL)))
				ok = 0;
		} else {
			k = conf_index_find(c, h->scope);
			if (k < 0 || (auth_read_token(w, k) &&
				      auth_may(w, r, k, TOKEN_READ, h->name)))
				ok = 0;
		}
		if (ok && kept != i)
			hits[kept] = hits[i];
		kept += ok;
	}
	*n = kept;
}

/* Runs the words (common/search.h) over the scopes s: what the user
 * typed q, trimmed and lowercased, and PEP 503 normalised, are the exact
 * names. Returns as db_search_query(). */
static int query(struct worker *w, const struct scopes *s, const char *q,
		 const char *words, struct db_search_hit *hits, size_t *n,
		 char *err, size_t errlen)
{
	const struct conf *c = w->conf;
	char lower[SEARCH_MAX_QUERY + 1], norm[NAMES_MAX_PROJECT + 1];
	struct db_search_q dq = {.indexes = s->indexes,
				 .registries = s->registries};
	struct buf match, name_match;
	size_t shown = 0, all = 0, len;
	int rc;

	/* the scopes go into the match too when some are left out, so
	 * that the bounded candidates are all of them */
	for (const char *p = s->indexes; *p; p++)
		shown += *p == '\n';
	for (const char *p = s->registries; *p; p++)
		shown += *p == '\n';
	shown -= (s->indexes[0] != '\0') + (s->registries[0] != '\0');
	for (size_t i = 0; i < c->nindex; i++)
		all += c->index[i].type != CONF_INDEX_VIRTUAL;
	for (size_t i = 0; i < c->nregistry; i++)
		all += c->registry[i].type != CONF_REGISTRY_VIRTUAL;
	buf_init(&match, sizeof(s->indexes) * 3 + SEARCH_MAX_MATCH + 64);
	buf_init(&name_match, SEARCH_MAX_MATCH + 64);
	rc = buf_addf(&match, "(%s)", words) ||
	     buf_addf(&name_match, "%s", words);
	if (!rc && shown < all) {
		char scopes[sizeof(s->indexes) + sizeof(s->registries)];
		char filter[sizeof(scopes) * 2 + 64];

		snprintf(scopes, sizeof(scopes), "%s%s", s->indexes,
			 s->registries);
		rc = search_scopes(scopes, filter, sizeof(filter)) ||
		     buf_addf(&match, " AND %s", filter);
	}
	if (rc) {
		snprintf(err, errlen, "query too long");
		rc = EINVAL;
		goto done;
	}
	len = strspn(q, " \t");
	snprintf(lower, sizeof(lower), "%s", q + len);
	len = strlen(lower);
	while (len && (lower[len - 1] == ' ' || lower[len - 1] == '\t'))
		lower[--len] = '\0';
	for (char *p = lower; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	if (names_normalize(lower, norm, sizeof(norm)))
		snprintf(norm, sizeof(norm), "%s", lower);
	dq.match = buf_str(&match);
	dq.name_match = buf_str(&name_match);
	dq.exact[0] = lower;
	dq.exact[1] = norm;
	rc = db_search_query(w->db, &dq, hits, SEARCH_MAX_HITS, n, err, errlen);
done:
	buf_free(&match);
	buf_free(&name_match);
	return rc;
}

static int wants_json(struct req *r, const char *format)
{
	const char *accept = req_env(r, "HTTP_ACCEPT");

	if (*format)
		return strcmp(format, "json") == 0;
	return accept && strstr(accept, "application/json") &&
	       !strstr(accept, "text/html");
}

static void json_answer(struct out *o, const char *q,
			const struct db_search_hit *hits, size_t n)
{
	out_add(o, "{\"query\": ");
	out_jstr(o, q);
	out_add(o, ", \"results\": [");
	for (size_t i = 0; i < n; i++) {
		const struct db_search_hit *h = &hits[i];
		int oci = strcmp(h->kind, "oci") == 0;

		out_add(o, i ? ", {\"kind\": " : "{\"kind\": ");
		out_jstr(o, oci ? "image" : "project");
		out_add(o, oci ? ", \"registry\": " : ", \"index\": ");
		out_jstr(o, h->scope);
		out_add(o, ", \"name\": ");
		out_jstr(o, h->name);
		if (oci) {
			char *tags = h->tags[0] ? strdup(h->tags) : NULL;
			char *save = NULL, *t;
			int first = 1;

			out_add(o, ", \"tags\": [");
			for (t = tags ? strtok_r(tags, " ", &save) : NULL; t;
			     t = strtok_r(NULL, " ", &save)) {
				out_add(o, first ? "" : ", ");
				out_jstr(o, t);
				first = 0;
			}
			out_add(o, "]}");
			free(tags);
		} else {
			out_add(o, ", \"summary\": ");
			out_jstr(o, h->summary);
			out_add(o, ", \"keywords\": ");
			out_jstr(o, h->keywords);
			out_add(o, "}");
		}
	}
	out_add(o, "]}\n");
}

static void html_answer(struct out *o, const char *q, const char *index,
			const char *registry, const struct db_search_hit *hits,
			size_t n)
{
	out_add(o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset="
	       "\"utf-8\">\n<title>search</title>\n<style>body{font-family:"
	       "sans-serif;max-width:60em;margin:1em auto;padding:0 1em}"
	       "td,th{text-align:left;padding:.2em .8em .2em 0}</style>\n"
	       "</head>\n<body>\n<h1>search</h1>\n<form method=\"get\" "
	       "action=\"+search\"><input type=\"search\" name=\"q\" "
	       "value=\"");
	out_html(o, q);
	out_add(o, "\" autofocus> ");
	if (*index) {
		out_add(o, "<input type=\"hidden\" name=\"index\" value=\"");
		out_html(o, index);
		out_add(o, "\">");
	}
	if (*registry) {
		out_add(o, "<input type=\"hidden\" name=\"registry\" value=\"");
		out_html(o, registry);
		out_add(o, "\">");
	}
	out_add(o, "<button>search</button></form>\n");
	if (*q && !n)
		out_add(o, "<p>Nothing found.</p>\n");
	if (n)
		out_add(o, "<table>\n<tr><th>name</th><th>where</th><th>what"
		       "</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		const struct db_search_hit *h = &hits[i];
		int oci = strcmp(h->kind, "oci") == 0;

		out_add(o, "<tr><td>");
		if (!oci) {
			out_add(o, "<a href=\"");
			out_html(o, h->scope);
			out_add(o, "/simple/");
			out_html(o, h->name);
			out_add(o, "/\">");
			out_html(o, h->name);
			out_add(o, "</a>");
		} else {
			out_html(o, h->name);
		}
		out_add(o, oci ? "</td><td>registry " : "</td><td>index ");
		out_html(o, h->scope);
		out_add(o, "</td><td>");
		out_html(o, oci ? h->tags : h->summary);
		out_add(o, "</td></tr>\n");
	}
	if (n)
		out_add(o, "</table>\n");
	out_add(o, "<p><a href=\"./\">all indexes</a> &middot; larder "
	       PACKAGE_VERSION "</p>\n</body>\n</html>\n");
}

void search_serve(struct worker *w, struct req *r)
{
	const struct conf *c = w->conf;
	const char *qs = r->query;
	char q[SEARCH_MAX_QUERY + 1], index[128], registry[128], format[16];
	char words[SEARCH_MAX_MATCH], err[256];
	struct db_search_hit *hits = NULL;
	struct scopes *s = NULL;
	struct out o = {.err = 0};
	size_t n = 0;
	int rc, json;

	buf_init(&o.b, MAX_ANSWER);
	if (form_value(qs, strlen(qs), "q", q, sizeof(q)) < 0) {
		req_error(r, 400, strlen(qs) > SEARCH_MAX_QUERY ?
			  "query too long or badly encoded" :
			  "query badly encoded");
		goto done;
	}
	if (form_value(qs, strlen(qs), "index", index, sizeof(index)) < 0 ||
	    form_value(qs, strlen(qs), "registry", registry,
		       sizeof(registry)) < 0 ||
	    form_value(qs, strlen(qs), "format", format, sizeof(format)) < 0) {
		req_error(r, 400, "bad query string");
		goto done;
	}
	if (form_value(qs, strlen(qs), "q", q, sizeof(q)) == 0)
		q[0] = '\0';
	if (form_value(qs, strlen(qs), "index", index, sizeof(index)) == 0)
		index[0] = '\0';
	if (form_value(qs, strlen(qs), "registry", registry,
		       sizeof(registry)) == 0)
		registry[0] = '\0';
	if (form_value(qs, strlen(qs), "format", format, sizeof(format)) == 0)
		format[0] = '\0';
	if (*format && strcmp(format, "json") && strcmp(format, "html")) {
		req_error(r, 400, "format is json or html");
		goto done;
	}
	json = wants_json(r, format);
	if (search_match(q, words, sizeof(words), err, sizeof(err))) {
		req_error(r, 400, err);
		goto done;
	}
	s = calloc(1, sizeof(*s));
	hits = calloc(SEARCH_MAX_HITS, sizeof(*hits));
	if (!s || !hits) {
		req_error(r, 500, "out of memory");
		goto done;
	}
	if (*index || *registry) {
		int i = *index ? conf_index_find(c, index) : 0;
		int g = *registry ? conf_registry_find(c, registry,
						       strlen(registry)) : 0;

		if (i < 0 || g < 0) {
			req_error(r, 404, i < 0 ? "no such index" :
				  "no such registry");
			goto done;
		}
		if ((*index && add_index(w, r, s, (size_t)i, 1)) ||
		    (*registry && add_registry(w, r, s, (size_t)g, 1)))
			goto done; /* answered */
	} else {
		for (size_t i = 0; i < c->nindex; i++)
			if (c->index[i].type != CONF_INDEX_VIRTUAL)
				add_index(w, r, s, i, 0);
		for (size_t i = 0; i < c->nregistry; i++)
			if (c->registry[i].type != CONF_REGISTRY_VIRTUAL)
				add_registry(w, r, s, i, 0);
	}
	if (*words && (s->indexes[0] || s->registries[0])) {
		rc = query(w, s, q, words, hits, &n, err, sizeof(err));
		if (rc == EINVAL) {
			char why[300];

			snprintf(why, sizeof(why), "bad query: %.250s", err);
			req_error(r, 400, why);
			goto done;
		}
		if (rc) {
			req_error(r, 500, "cannot read the search index");
			goto done;
		}
		drop_unreadable(w, r, hits, &n);
	}
	if (json)
		json_answer(&o, q, hits, n);
	else
		html_answer(&o, q, index, registry, hits, n);
	if (o.err) {
		req_error(r, 500, "answer too long");
		goto done;
	}
	/* what a token may see is not for a shared cache */
	req_header(r, "Cache-Control", req_env(r, "HTTP_AUTHORIZATION") ?
		   "private, no-cache" : "no-cache");
	req_header(r, "Vary", "Accept, Authorization");
	req_reply(r, 200, json ? "application/json" : "text/html; charset=utf-8",
		  o.b.data, o.b.len);
done:
	buf_free(&o.b);
	free(hits);
	free(s);
}
