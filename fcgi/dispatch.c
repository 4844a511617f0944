#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/http/route.h"
#include "fcgi/access/auth.h"
#include "fcgi/admin/landing.h"
#include "fcgi/admin/search.h"
#include "fcgi/admin/status.h"
#include "fcgi/dispatch.h"
#include "fcgi/oci/oci.h"
#include "fcgi/pypi/hosted.h"
#include "fcgi/pypi/pyapi.h"
#include "fcgi/pypi/pypi.h"
#include "fcgi/pypi/upload.h"
#include "storage/health.h"
#include "storage/stats.h"

static void redirect(struct worker *w, struct req *r, const char *location)
{
	struct buf url;
	const char *body = "moved\n";

	/* what fits in the web server's header buffer (nginx's
	 * fastcgi_buffer_size is 4 KiB): past that, a clear 414 */
	buf_init(&url, 3072);
	if (req_url(r, w->conf->trust_forwarded, location, &url) ||
	    (*r->query && buf_addf(&url, "?%s", r->query))) {
		buf_free(&url);
		req_error(r, 414, "URL too long");
		return;
	}
	req_header(r, "Location", "%s", buf_str(&url));
	buf_free(&url);
	req_reply(r, 301, "text/plain; charset=utf-8", body, strlen(body));
}

/* Counts r in the metrics once it is answered (storage/stats.h). */
static void count(const struct req *r)
{
	enum stats_outcome o = STATS_NONE;

	if (r->status >= 400 || r->aborted)
		o = STATS_ERROR;
	else if (!r->cache)
		o = STATS_NONE;
	else if (strcmp(r->cache, "HIT") == 0)
		o = STATS_HIT;
	else if (strcmp(r->cache, "MISS") == 0)
		o = STATS_MISS;
	else if (strcmp(r->cache, "STALE") == 0)
		o = STATS_STALE;
	else if (strcmp(r->cache, "REVALIDATED") == 0)
		o = STATS_REVALIDATED;
	stats_request((enum stats_kind)r->stat_kind, o);
	/* what a miss sends came from upstream as it was sent */
	if (o == STATS_HIT || o == STATS_STALE || o == STATS_REVALIDATED)
		stats_add(STATS_SERVED_BYTES, (uint64_t)r->bytes);
}

/* For a page or file of an index that needs a token to read: whether r
 * may read it (else it is answered, and nothing is fetched for it). A
 * file is of the project whose page listed it; one no page lists (or
 * listed before schema 5 kept the project) is of the project its name
 * says, or of the file name itself when it says none, which only a token
 * for every project reads. Returns 1 when refused. */
static int read_refused(struct worker *w, struct req *r,
			const struct route *rt)
{
	char project[NAMES_MAX_FILENAME + 1];
	struct db_file f;

	if (rt->kind == ROUTE_SIMPLE_LIST)
		project[0] = '\0';
	else if (rt->kind == ROUTE_SIMPLE_PROJECT || rt->kind == ROUTE_JSON)
		snprintf(project, sizeof(project), "%s", rt->project);
	else if (pypi_find_file(w, rt->index, rt->sha256, rt->filename,
				&f) >= 0 && *f.project)
		snprintf(project, sizeof(project), "%s", f.project);
	else if (token_file_project(rt->filename, project, sizeof(project)))
		snprintf(project, sizeof(project), "%s", rt->filename);
	if (auth_allow(w, r, rt->index, rt->index, TOKEN_READ, project))
		return 1;
	r->private_index = 1;
	return 0;
}

static void route(struct worker *w, struct req *r)
{
	static const char health[] = "ok larder " PACKAGE_VERSION "\n";
	struct route rt;

	if (!*r->path) {
		req_error(r, 400, "bad path encoding");
		return;
	}
	if (!strncmp(r->path, "/v2", 3) && (!r->path[3] || r->path[3] == '/')) {
		oci_serve(w, r);
		return;
	}
	route_parse(w->conf, r->method, r->path, &rt);
	switch (rt.kind) {
	case ROUTE_ERROR:
		if (rt.status == 405)
			req_header(r, "Allow", "%s",
				   rt.allow ? rt.allow : "GET, HEAD");
		req_error(r, rt.status, rt.reason);
		break;
	case ROUTE_REDIRECT:
		redirect(w, r, rt.location);
		break;
	case ROUTE_HEALTH:
		req_header(r, "Cache-Control", "no-store");
		req_reply(r, 200, "text/plain; charset=utf-8", health,
			  sizeof(health) - 1);
		break;
	case ROUTE_METRICS:
		status_metrics(w, r);
		break;
	case ROUTE_STATS:
		status_json(w, r);
		break;
	case ROUTE_STATUS:
		status_page(w, r);
		break;
	case ROUTE_SIMPLE_LIST:
	case ROUTE_SIMPLE_PROJECT:
		r->stat_kind = STATS_PAGE;
		if (auth_read_token(w, rt.index) && read_refused(w, r, &rt))
			break;
		pypi_simple(w, r, &rt);
		break;
	case ROUTE_FILE:
		r->stat_kind = rt.metadata ? STATS_METADATA : STATS_FILE;
		if (auth_read_token(w, rt.index) && read_refused(w, r, &rt))
			break;
		pypi_file(w, r, &rt);
		break;
	case ROUTE_JSON:
		r->stat_kind = STATS_PAGE;
		if (auth_read_token(w, rt.index) && read_refused(w, r, &rt))
			break;
		pyapi_serve(w, r, &rt);
		break;
	case ROUTE_API:
		landing_api(w, r);
		break;
	case ROUTE_SEARCH:
		search_serve(w, r);
		break;
	case ROUTE_HOME:
		landing_home(w, r);
		break;
	case ROUTE_INDEX_HOME:
		landing_index(w, r, rt.index);
		break;
	case ROUTE_UPLOAD:
		upload_serve(w, r, &rt);
		break;
	case ROUTE_YANK:
	case ROUTE_UNYANK:
	case ROUTE_REMOVE:
		hosted_serve(w, r, &rt);
		break;
	}
}

/* Puts the first bytes of the path r was sent, undecoded, in r->path for
 * the log line ("..." when cut, a control byte as '?'). */
static void path_head(struct req *r)
{
	const char *u = req_env(r, "REQUEST_URI");
	size_t n = 0;

	if (!u)
		u = req_env(r, "PATH_INFO");
	for (; u && u[n] && u[n] != '?' && n < 200; n++)
		r->path[n] = (unsigned char)u[n] < 0x20 ? '?' : u[n];
	r->path[n] = '\0';
	if (u && u[n] && u[n] != '?')
		memcpy(r->path + n, "...", 4);
}

void dispatch(struct worker *w, struct req *r, int init_err)
{
	r->stat_kind = STATS_OTHER;
	if (init_err) {
		path_head(r);
		req_error(r, init_err == ENAMETOOLONG ? 414 : 400,
			  init_err == ENAMETOOLONG ? "path too long" :
			  r->bad_request ? r->bad_request :
			  "bad path encoding");
	} else {
		route(w, r);
	}
	health_release(); /* a probe of a failing host ends with its request */
	count(r);
	req_log(r);
}
