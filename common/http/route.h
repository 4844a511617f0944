/* route: turns a request path into what it asks for. I/O-free.
 *
 * URL space (DESIGN.md):
 *   /+health
 *   /metrics, /+stats, /+status           metrics: Prometheus, JSON, HTML
 *   /{index}/simple/                      project list
 *   /{index}/simple/{project}/            project page
 *   /{index}/files/{sha256}/{filename}    a file
 *   /{index}/files/{sha256}/{filename}.metadata   its PEP 658 metadata
 *   /{index}/files/{sha256}/{filename}.provenance its PEP 740 provenance
 *   /{index}/pypi/{project}/json          the JSON API, as on pypi.org
 *   /{index}/pypi/{project}/{version}/json
 *   GET /, /{index}/                      landing pages (HTML)
 *   GET /+api                             the indexes and registries (JSON)
 *   GET /+search?q=                       search (HTML or JSON)
 *   POST /{index}/                        an upload (legacy API)
 *   POST /{index}/+yank/{project}/{version}, .../+unyank/...
 *   DELETE /{index}/+release/{project}/{version}[/{filename}]
 * where {index} is a configured index name, which may itself contain '/'
 * ("root/pypi"); the longest configured name that matches wins.
 */
#ifndef LARDER_ROUTE_H
#define LARDER_ROUTE_H

#include <stddef.h>

#include "common/conf/conf.h"
#include "common/names.h"

#define ROUTE_MAX_PATH 2048

enum route_kind {
	ROUTE_ERROR,          /* status and reason say why */
	ROUTE_REDIRECT,       /* 301 to location (a path, no query) */
	ROUTE_HEALTH,
	ROUTE_METRICS,        /* GET /metrics: Prometheus text */
	ROUTE_STATS,          /* GET /+stats: the same as JSON */
	ROUTE_STATUS,         /* GET /+status: the status page */
	ROUTE_SIMPLE_LIST,
	ROUTE_SIMPLE_PROJECT,
	ROUTE_FILE,
	ROUTE_UPLOAD,         /* POST /{index}/ */
	ROUTE_YANK,           /* POST /{index}/+yank/{project}/{version} */
	ROUTE_UNYANK,         /* POST /{index}/+unyank/{project}/{version} */
	ROUTE_REMOVE,         /* DELETE /{index}/+release/{project}/{version}
	                         with filename "" for the whole release */
	ROUTE_JSON,           /* GET /{index}/pypi/{project}[/{version}]/json,
	                         version "" for the project's */
	ROUTE_API,            /* GET /+api */
	ROUTE_SEARCH,         /* GET /+search (?q=...) */
	ROUTE_HOME,           /* GET / */
	ROUTE_INDEX_HOME,     /* GET /{index}/ */
};

/* The longest version a route takes. */
#define ROUTE_MAX_VERSION 127

struct route {
	enum route_kind kind;
	int status;                 /* ROUTE_ERROR: 400, 404 or 405 */
	const char *reason;         /* ROUTE_ERROR: one line, static */
	int index;                  /* position in conf.index, or -1 */
	char project[NAMES_MAX_PROJECT + 1];   /* normalised */
	char sha256[65];
	char filename[NAMES_MAX_FILENAME + 1]; /* without the suffix of a
	                                          sibling */
	int metadata;               /* 1 for the .metadata sibling */
	int provenance;             /* 1 for the .provenance sibling */
	char location[ROUTE_MAX_PATH];         /* ROUTE_REDIRECT */
	char version[ROUTE_MAX_VERSION + 1];   /* yank, unyank, remove, json */
	const char *allow;          /* the methods the path takes: for a 405's
	                               Allow header */
};

/* Works out the path larder was asked for, relative to where it is mounted,
 * from the CGI variables (any may be NULL): PATH_INFO when the server split
 * the URL (then SCRIPT_NAME is the mount), else REQUEST_URI without its
 * query, percent-decoded, minus SCRIPT_NAME when it is a prefix. The mount
 * (no trailing '/') goes to mount. Decoding rejects %00, a decoded '/' or
 * '\\', bytes below 0x20 or 0x7f, and invalid escapes.
 * Returns 0, or EINVAL (bad encoding) or ENAMETOOLONG. */
int route_request_path(const char *script_name, const char *path_info,
		       const char *request_uri, char *path, size_t pathlen,
		       char *mount, size_t mountlen);

/* Routes a decoded path (from route_request_path) for method ("GET",
 * "HEAD", ...). Any "." or ".." segment, empty segment inside a name,
 * bad sha256 or unsafe file name is a 400 or 404; unknown index 404; a
 * method the path does not take (GET and HEAD for reads, POST for uploads,
 * yanks and unyanks, DELETE for removals; an index's root takes GET, HEAD
 * and POST) 405, with allow set. A project name that is not normalised,
 * or a directory path without its trailing '/', is a ROUTE_REDIRECT to the
 * canonical path. Always returns with r filled in. */
void route_parse(const struct conf *c, const char *method, const char *path,
		 struct route *r);

#endif
