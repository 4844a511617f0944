/* copies: a cold page's gzip'd renderings, made after its answer
 * (copies.h). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "fcgi/pypi/copies.h"
#include "fcgi/pypi/proc.h"
#include "storage/blob.h"
#include "storage/db/db.h"
#include "storage/lru.h"

/* Renderings bigger than this give their memory back to the system once
 * their copies are made. */
#define COPIES_TRIM_OVER (1 << 20)

/* Whether the gzip'd copies of the renderings a page fetch stores wait
 * until the answer is out (the caller said it makes them then). */
static int copies_later(const struct worker *w)
{
	return pypi_proc()->copies.can_defer && !w->cgi;
}

/* copies_put_rendering (copies.h) */
int copies_put_rendering(struct worker *w, const struct buf *b,
			 char sha256[65], long long *size)
{
	const char *data_dir = w->conf->data_dir;
	long long gz;
	int rc;

	if (!copies_later(w))
		return blob_put_page(data_dir, b->data, b->len, sha256, size);
	rc = blob_put(data_dir, b->data, b->len, sha256);
	gz = rc ? -1 : blob_gz_size(data_dir, sha256);
	*size = (long long)b->len + (gz > 0 ? gz : 0);
	return rc;
}

/* copies_note (copies.h) */
void copies_note(struct worker *w, const char *sha256)
{
	struct pypi_copies *c = &pypi_proc()->copies;

	if (!copies_later(w) || (size_t)c->n >= sizeof(c->sha256) /
						 sizeof(c->sha256[0]) ||
	    blob_gz_size(w->conf->data_dir, sha256) >= 0)
		return;
	for (int i = 0; i < c->n; i++)
		if (strcmp(c->sha256[i], sha256) == 0)
			return;
	memcpy(c->sha256[c->n++], sha256, 65);
}

void copies_make(struct worker *w)
{
	struct pypi_copies *c = &pypi_proc()->copies;
	const char *data_dir = w->conf->data_dir;
	char gz[PATH_MAX];
	struct blob_gz g;
	int rc, published, big = 0;

	for (int i = 0; i < c->n; i++) {
		/* (a rendering is at most twice the page) */
		rc = blob_gz_prepare(data_dir, c->sha256[i],
				     (size_t)w->conf->max_page_size * 2, &g);
		big = big || g.plain > COPIES_TRIM_OVER;
		if (rc || g.fd < 0) {
			/* gone meanwhile (evicted): nothing to copy */
			if (rc && rc != ENOENT)
				log_warn(rc, c->sha256[i], "gzip'd copy");
			continue;
		}
		/* under the collectors' lock: the blob stays while its copy
		 * is named and counted in its size. Counted first, published
		 * last: a copy the commit then fails to count is taken back,
		 * so none stays on disk outside the budget */
		rc = db_begin(w->db);
		if (!rc)
			rc = db_blob_add(w->db, c->sha256[i], g.plain + g.size);
		published = !rc && g.fd >= 0;
		if (!rc)
			rc = blob_gz_publish(data_dir, c->sha256[i], &g);
		published = published && !rc;
		if (!rc)
			rc = db_commit(w->db);
		if (rc) {
			blob_gz_discard(&g);
			db_rollback(w->db);
			if (published &&
			    !blob_gz_path(data_dir, c->sha256[i], gz,
					  sizeof(gz)))
				unlink(gz);
			continue;
		}
		lru_added(g.size);
	}
	/* a big rendering, read back and deflated, grew the heap: give it
	 * back, as storing the page does (fcgi/pypi/pages.c) */
	if (big)
		malloc_trim(0);
	c->n = 0;
}
