/* cooldown: which files of a cache index's pages are held back for being
 * too new (min_release_age, exclude_newer, release_age_exempt), a defence
 * against a compromised release that is pulled within days of its upload.
 * Age is the upstream's upload time (PEP 700 upload-time), never when
 * larder saw the file; a file without one is held back (fail closed).
 * I/O-free: the caller gives the time. */
#ifndef LARDER_COOLDOWN_H
#define LARDER_COOLDOWN_H

#include <stddef.h>

#include "common/conf/conf.h"
#include "common/pypi/simple.h"

struct cooldown {
	long min_age;            /* seconds a file must be old; 0: none */
	long long exclude_newer; /* files uploaded after this (unix seconds)
	                            are held back; 0: none */
	const char *exempt;      /* normalised project globs never held back;
	                            "" none; points into the conf */
};

/* The cooldown of the index ix of c: its own keys, [larder]'s where it
 * sets none (conf_inherit). Hosted and virtual indexes get none: a hosted
 * index's files are its users' own, and a virtual index shows what its
 * cache layers let through. */
void cooldown_of(const struct conf *c, const struct conf_index *ix,
                 struct cooldown *cd);

/* Whether cd holds anything back at all. */
int cooldown_active(const struct cooldown *cd);

/* Whether cd holds back, at now, a file of project (normalised; "" when
 * unknown, which no exempt glob matches) uploaded at upload (unix seconds,
 * -1 unknown). Returns NULL when it does not, else the key that holds it
 * back ("exclude_newer" or "min_release_age"). *mature (may be NULL) is
 * when it stops being held back, or -1 for never (no upload time, or
 * after exclude_newer). */
const char *cooldown_holds(const struct cooldown *cd, const char *project,
                           long long upload, long long now,
                           long long *mature);

/* Writes the one-line reason a file held back by key (from
 * cooldown_holds()) is refused, e.g. "held back by min_release_age = 7d:
 * uploaded 2026-11-30T10:00:00Z, 2 days ago" or "held back by
 * min_release_age = 7d: the index gave no upload time". */
void cooldown_reason(const struct cooldown *cd, const char *key,
                     long long upload, long long now, char *out,
                     size_t len);

/* Moves the files of page (of project, normalised) that cd holds back at
 * now into held->files (held is zeroed first; free it with
 * simple_page_free()), keeping page's order, and drops from page's
 * api 1.1 versions those left with no file while some held file had it.
 * *next is the soonest a held file matures, or -1. Returns 0 or ENOMEM
 * (page then as it was, held empty). */
int cooldown_split(const struct cooldown *cd, const char *project,
                   struct simple_page *page, long long now,
                   struct simple_page *held, long long *next);

#endif
