/* license: what larder holds of a cached file's license, for the license=
 * rules of policies (common/pypi/policy.h, docs/policy.md "Licenses"):
 * read from metadata whose bytes were verified, never from a provisional
 * .metadata (made from range reads of an upstream file not yet checked). */
#ifndef LARDER_LICENSE_H
#define LARDER_LICENSE_H

#include <stddef.h>

#include "common/dist/coremeta.h"
#include "common/pypi/simple.h"
#include "fcgi/server/worker.h"
#include "storage/db/db.h"

/* Reads into out (len bytes; COREMETA_MAX_LICENSE holds any) the license
 * of the file (sha256, filename) that the index at position from lists,
 * as its stored metadata says (coremeta_license()): the .metadata named
 * by meta_sha (the page's, upstream-given; NULL or "": the files row's,
 * unless provisional), else the wheel's own METADATA when the wheel is
 * stored. Returns 1 when known, 0 when larder holds no such metadata or
 * it names no license. */
int license_of(struct worker *w, int from, const char *sha256,
               const char *filename, const char *meta_sha, char *out,
               size_t len);

/* The licenses of page's files (as the cache index at position from
 * lists them) that license_of() knows, by position, NULL where not known:
 * a malloc'd array of page->nfiles strings for license_free(), or NULL
 * when out of memory. */
char **license_of_page(struct worker *w, int from,
                       const struct simple_page *page);

/* Frees what license_of_page() made, of n files. */
void license_free(char **licenses, size_t n);

/* How far license_judge() may go to learn a license larder does not hold
 * yet. */
enum license_fetch {
	LICENSE_LOCAL,      /* only what is stored: a HEAD, an offline index,
	                       a file the cooldown holds */
	LICENSE_FETCH_META, /* the file's verified metadata, fetched */
	LICENSE_FETCH_FILE, /* that, else the whole wheel (a request for it) */
};

/* What the policies of the cache index at position from decide of the
 * file f (its row, of project f->project) now, its license included when
 * larder knows it: a page rendered before the file's metadata was stored
 * could not tell (for a file not stored yet, its metadata is fetched
 * first, as fetch allows). The first denial's reason goes into reason
 * (len bytes).
 * Returns 1 (denied), 0 (allowed), or -1 when the index has no license=
 * rule (nothing is looked at: the page's decision stands) or the
 * advisories could not be read. */
int license_judge(struct worker *w, int from, const char *sha256,
                  const char *filename, const struct db_file *f,
                  enum license_fetch fetch, char *reason, size_t len);

#endif
