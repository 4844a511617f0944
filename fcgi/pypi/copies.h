/* copies: the gzip'd copies of a cold page's renderings, made once its
 * answer is out. A page fetch for a client stores both renderings alone
 * (copies_put_rendering), notes them (copies_note), answers plain, and
 * then copies_make() deflates and publishes the copies: deflating and
 * syncing them would hold the answer (a 2.5 MB page's two: 0.15 s of CPU
 * at level 9, and four fsyncs). The list lives in the process's
 * pypi_copies (fcgi/pypi/proc.h); only a caller that sets its can_defer
 * and runs copies_make() after the answer gets this, and CGI never. */
#ifndef LARDER_COPIES_H
#define LARDER_COPIES_H

#include "common/buf.h"
#include "fcgi/server/worker.h"

/* Stores rendering b under sha256: with its gzip'd copy (blob_put_page),
 * or alone when the copy is to be made after the answer. *size is what
 * it takes in the store, its copy's bytes included. Returns 0 or an
 * errno. */
int copies_put_rendering(struct worker *w, const struct buf *b,
			 char sha256[65], long long *size);

/* Notes rendering sha256, just stored without its copy, for
 * copies_make(). */
void copies_note(struct worker *w, const char *sha256);

/* Makes the gzip'd copies noted: each into the store and into its blob's
 * size under the collectors' lock, from the stored blob held to its name
 * (blob_gz_prepare). Clears the list. */
void copies_make(struct worker *w);

#endif
