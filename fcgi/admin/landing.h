/* landing: what larder serves and how to point clients at it, made from
 * the config at request time (a few hundred bytes per index, no I/O):
 *   GET /+api      the indexes and registries as JSON
 *   GET /          an HTML page listing them
 *   GET /{index}/  an HTML page with copy-paste client configuration
 * URLs are absolute, from the request's scheme, Host and mount. An index
 * that takes a token to read is listed like any other: its configuration
 * is no secret, what it holds is (and none of that is shown here).
 * Upstream URLs are shown without any user:password in them.
 */
#ifndef LARDER_LANDING_H
#define LARDER_LANDING_H

#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

void landing_api(struct worker *w, struct req *r);
void landing_home(struct worker *w, struct req *r);
void landing_index(struct worker *w, struct req *r, int idx);

#endif
