/* pypi: the PyPI read path: simple pages and files. */
#ifndef LARDER_PYPI_H
#define LARDER_PYPI_H

#include "common/route.h"
#include "fcgi/req.h"
#include "fcgi/worker.h"

/* Answers /{index}/simple/ and /{index}/simple/{project}/. */
void pypi_simple(struct worker *w, struct req *r, const struct route *rt);

/* Answers /{index}/files/{sha256}/{filename}[.metadata]. */
void pypi_file(struct worker *w, struct req *r, const struct route *rt);

#endif
