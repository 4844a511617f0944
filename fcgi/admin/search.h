/* search: /+search, the projects and images larder holds found by their
 * words (docs/search.md; the index is storage/db/db_search.h, the query
 * text common/search.h). */
#ifndef LARDER_ADMIN_SEARCH_H
#define LARDER_ADMIN_SEARCH_H

#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* The most results one answer lists. */
#define SEARCH_MAX_HITS 50

/* Answers GET /+search?q=WORDS[&index=NAME][&registry=NAME][&format=json]
 * as HTML, or as JSON when format=json or Accept names application/json.
 * Only indexes and registries r may read are searched: one that needs a
 * token is left out for a request without one that covers it, and named
 * in index= or registry= it is a 401 or 403 as its pages would be. 400
 * with a one-line reason for a bad query string, words that are not
 * UTF-8 or too many; 404 for an index or registry that is not
 * configured. */
void search_serve(struct worker *w, struct req *r);

#endif
