/* warm_pick: what `larder warm` reads on a PEP 691 JSON project page, and
 * which of its files a pinned requirement needs for a target. Does no
 * I/O (it sits in fcgi/ beside its one caller).
 */
#ifndef LARDER_WARM_PICK_H
#define LARDER_WARM_PICK_H

#include <stddef.h>

#include "common/dist/wheeltag.h"

struct warm_file {
	char *filename;            /* owned */
	char *url;                 /* owned, absolute */
	char sha256[65];           /* "" when the page gives none */
	char requires_python[128]; /* "" when the page gives none */
	int has_meta;              /* the page advertises core metadata */
	char meta_sha256[65];
};

struct warm_page {
	struct warm_file *v;
	size_t n;
};

/* Reads a PEP 691 JSON page (len bytes) fetched from page_url, file URLs
 * resolved against it. Returns 0, EINVAL with a reason in err, or ENOMEM;
 * p is the caller's to free with warm_page_free() in every case. */
int warm_page_parse(const char *data, size_t len, const char *page_url,
                    struct warm_page *p, char *err, size_t errlen);

void warm_page_free(struct warm_page *p);

/* How warm_pick fails. */
#define WARM_PICK_NO_VERSION (-1) /* no file of that version */
#define WARM_PICK_NO_HASH    (-2) /* none with a hash of the list */
#define WARM_PICK_NO_FIT     (-3) /* no wheel for t, and no sdist */
#define WARM_PICK_NO_PYTHON  (-4) /* Requires-Python excludes t, in all */

/* The file of project (normalised) at version that pip would install on
 * t: the best-ranked wheel, else an sdist; only files whose sha256 is one
 * of the nhashes hashes count when nhashes > 0, and only those whose
 * Requires-Python takes t's Python (X.Y.0; a specifier that does not
 * parse takes it). Returns its position in p, or a WARM_PICK_ code. */
long warm_pick(const struct warm_page *p, const char *project,
               const char *version, const char (*hashes)[65], size_t nhashes,
               const struct wheeltag_target *t);

#endif
