/* pypi: the PyPI read path: simple pages and files. */
#ifndef LARDER_PYPI_H
#define LARDER_PYPI_H

#include "common/http/route.h"
#include "fcgi/server/fetcher.h"
#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"
#include "storage/flight.h"

/* Answers /{index}/simple/ and /{index}/simple/{project}/. */
void pypi_simple(struct worker *w, struct req *r, const struct route *rt);

/* Answers /{index}/files/{sha256}/{filename}[.metadata|.provenance]: a
 * file of a project its page says is quarantined is a 403. */
void pypi_file(struct worker *w, struct req *r, const struct route *rt);

/* Finds the listing of (sha256, filename) in index idx, or among the
 * leaves of a virtual index that its policy lets serve it. Returns the
 * position of the cache or hosted index that listed it, or -1. */
int pypi_find_file(struct worker *w, int idx, const char *sha,
		   const char *filename, struct db_file *f);

/* Whether the index at position idx may not contact its upstream
 * (offline = yes, its own or [larder]'s); if so, says why in err. */
int pypi_offline(const struct worker *w, int idx, char *err, size_t errlen);

/* The kind of pypi_file_want(): 0 the file, 1 its .metadata, or its PEP
 * 740 provenance. */
#define PYPI_PROVENANCE 2

/* What fetching the file (sha256, listed as f by the cache index at
 * position from), its .metadata (metadata 1) or its provenance
 * (PYPI_PROVENANCE, from f->provenance) takes: want, pointing into the
 * caller's o, key, url and sha (the blob's hash when known). Returns 1
 * when the store has the blob already. */
int pypi_file_want(struct worker *w, int from, const struct db_file *f,
		   const char *sha256, int metadata,
		   struct fetcher_want *want, struct fetch_opts *o,
		   char key[FLIGHT_KEY_MAX + 1], char url[2100], char sha[65]);

#endif
