/* pyapi: the JSON API, /{index}/pypi/{project}/json and
 * /{index}/pypi/{project}/{version}/json, as pypi.org serves it
 * (common/pypi/pyjson.h has the document).
 *
 * A document is built from the project's page (a cache, hosted or virtual
 * index's, as pages_get() finds it) and the release's core metadata
 * (metadata_ensure()), stored as a blob and served like a page: ETag, 304,
 * X-Accel-Redirect, Expires when the page goes stale. It is kept in a page
 * row of index "{index}/+json" (no configured index has a '+' in its
 * name) under "{project}[/{version}]/json {base}", whose etag is the page
 * rendering it was built from: it is current for as long as the page is.
 * File URLs in it are absolute, as clients of this API expect, made from
 * the request's scheme, Host and mount (req_url()); {base} in the key
 * keeps the bytes right for each name larder is reached under.
 */
#ifndef LARDER_PYAPI_H
#define LARDER_PYAPI_H

#include "common/http/route.h"
#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* Answers a ROUTE_JSON request. */
void pyapi_serve(struct worker *w, struct req *r, const struct route *rt);

#endif
