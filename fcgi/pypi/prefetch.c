#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/dist/coremeta.h"
#include "common/log.h"
#include "fcgi/pypi/metadata.h"
#include "fcgi/pypi/pages.h"
#include "fcgi/pypi/prefetch.h"
#include "fcgi/pypi/proc.h"
#include "fcgi/pypi/pypi.h"
#include "fcgi/server/send.h"
#include "storage/blob.h"
#include "storage/flight.h"
#include "storage/stats.h"

_Static_assert(PYPI_MAX_DEPS == COREMETA_MAX_REQUIRES, "deps cap");

/* The most bytes of a metadata file read for its headers. */
#define HEADERS_CAP COREMETA_MAX_HEADERS

/* Reads up to HEADERS_CAP bytes of blob sha into *out (NUL-terminated,
 * the caller's). Returns 0 or an errno. */
static int read_blob(const struct worker *w, const char *sha, char **out,
		     size_t *len)
{
	char path[PATH_MAX];
	size_t n = 0, want;
	struct stat st;
	char *buf;
	int fd, rc = 0;

	*out = NULL;
	if (blob_path(w->conf->data_dir, sha, path, sizeof(path)))
		return EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) < 0) {
		rc = errno;
		goto out;
	}
	want = st.st_size > HEADERS_CAP ? HEADERS_CAP : (size_t)st.st_size;
	buf = malloc(want + 1);
	if (!buf) {
		rc = ENOMEM;
		goto out;
	}
	while (n < want) {
		ssize_t k = pread(fd, buf + n, want - n, (off_t)n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
out:
	close(fd);
	return rc;
}

/* The stored metadata of the file (sha256, filename) listed by the index
 * at position from: the hash on its row, or what making it recorded.
 * Returns 1 with meta_sha set, or 0. */
static int stored_meta(struct worker *w, int from, const char *sha256,
		       const char *filename, char meta_sha[65])
{
	char key[FLIGHT_KEY_MAX + 1], why[256];
	struct db_file f;

	if (db_file_get(w->db, w->conf->index[from].name, sha256, filename,
			&f) == 0 && *f.meta_sha && send_stored(w, f.meta_sha)) {
		memcpy(meta_sha, f.meta_sha, 65);
		return 1;
	}
	return flight_key(key, "meta:%s", sha256) == 0 &&
	       db_outcome_get(w->db, key, meta_sha, why, sizeof(why), NULL) ==
		       0 && *meta_sha && send_stored(w, meta_sha);
}

/* How recently a wheel a client asks for first was stored for it to
 * count as one a prefetch fetched (seconds). */
#define PREFETCHED_RECENTLY 60

/* Whether wheel sha256 was stored within PREFETCHED_RECENTLY: a HIT a
 * prefetch made, as likely as not, whose dependencies are as cold as a
 * MISS's would be. Only with prefetch_wheel_size. */
static int stored_recently(const struct worker *w, const char *sha256)
{
	char path[PATH_MAX];
	struct stat st;

	return w->conf->prefetch_wheel_size > 0 &&
	       blob_path(w->conf->data_dir, sha256, path, sizeof(path)) == 0 &&
	       stat(path, &st) == 0 &&
	       st.st_mtime >= time(NULL) - PREFETCHED_RECENTLY;
}

void prefetch_note(struct worker *w, const struct req *r, int idx,
		   const char *sha256, const char *filename, int metadata)
{
	struct pypi_deps *d = &pypi_proc()->deps;
	char meta_sha[65], err[256];
	struct db_file f;
	char *text = NULL;
	uint8_t *bytes = NULL;
	size_t len = 0, kept = 0;
	int from;

	d->index = -1;
	d->n = 0;
	if (w->conf->prefetch_max <= 0 || w->cgi || r->status < 200 ||
	    r->status > 299 || r->head)
		return;
	/* a wheel stored (and verified) by this request, or by a prefetch
	 * just before it */
	if (!metadata && (!r->cache || (strcmp(r->cache, "MISS") != 0 &&
					!(strcmp(r->cache, "HIT") == 0 &&
					  stored_recently(w, sha256)))))
		return;
	from = pypi_find_file(w, idx, sha256, filename, &f);
	if (from < 0 || w->conf->index[from].type != CONF_INDEX_CACHE)
		return;
	if (metadata) {
		if (!stored_meta(w, from, sha256, filename, meta_sha) ||
		    read_blob(w, meta_sha, &text, &len))
			return;
	} else {
		if (!blob_exists(w->conf->data_dir, sha256) ||
		    metadata_read_stored(w, sha256, filename, &bytes, &len,
					 err, sizeof(err)))
			return;
		text = (char *)bytes;
	}
	if (coremeta_requires(text, len, d->name, PYPI_MAX_DEPS, &d->n))
		d->n = 0;
	free(text);
	/* only what is to be fetched ends the answer early (and lets its
	 * connection go): a warm install keeps its connections */
	for (size_t i = 0; i < d->n; i++) {
		enum pages_want want = pages_wanted(w, idx, d->name[i]);

		if (want == PAGES_FRESH)
			stats_add(STATS_PREFETCH_SKIPPED, 1);
		if (want != PAGES_WANTED)
			continue;
		if (kept != i)
			memcpy(d->name[kept], d->name[i], sizeof(d->name[i]));
		kept++;
	}
	d->n = kept;
	if (kept)
		d->index = idx;
}

/* Takes a free one of the prefetch_max slots: returns the open lock file
 * (closing it frees the slot), or -1 when every slot is taken. */
static int take_slot(const struct worker *w)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/prefetch", w->conf->data_dir);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -1;
	for (long k = 0; k < w->conf->prefetch_max; k++) {
		snprintf(path, sizeof(path), "%s/prefetch/slot-%ld",
			 w->conf->data_dir, k);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return -1;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		close(fd);
	}
	return -1;
}

/* Fetches the wheels the prefetched pages noted (note_likely_wheel() in
 * pages.c), each in a prefetch slot, with no client: a request for one
 * meanwhile follows the fetch. */
static void prefetch_wheels(struct worker *w)
{
	struct pypi_wheels *l = &pypi_proc()->wheels;
	char err[1024];
	struct db_file f;
	int slot, rc;

	for (size_t i = 0; i < l->n; i++) {
		const struct pypi_hint *x = &l->f[i];

		if (blob_exists(w->conf->data_dir, x->sha256) ||
		    db_file_get(w->db, w->conf->index[x->index].name,
				x->sha256, x->filename, &f))
			continue;
		slot = take_slot(w);
		if (slot < 0) /* (its installer fetches it) */
			continue;
		rc = metadata_fetch_file(w, x->index, &f, x->sha256, err,
					 sizeof(err));
		close(slot);
		if (rc)
			log_warn(0, x->filename, "prefetch: %s", err);
		else
			stats_add(STATS_PREFETCH_WHEELS, 1);
	}
	l->n = 0;
}

void prefetch_run(struct worker *w)
{
	struct pypi_deps *d = &pypi_proc()->deps;
	char err[1024];
	const char *cache;
	struct db_page p;
	int idx = d->index, slot, rc;

	d->index = -1;
	pypi_proc()->wheels.n = 0;
	if (idx < 0)
		return;
	for (size_t i = 0; i < d->n; i++) {
		enum pages_want want = pages_wanted(w, idx, d->name[i]);

		if (want == PAGES_OFFLINE)
			continue;
		if (want == PAGES_FRESH) {
			stats_add(STATS_PREFETCH_SKIPPED, 1);
			continue;
		}
		slot = take_slot(w);
		if (slot < 0) {
			stats_add(STATS_PREFETCH_SKIPPED, 1);
			continue;
		}
		pypi_proc()->prefetching = 1;
		pypi_proc()->prefetched = 0;
		rc = pages_get(w, idx, d->name[i], &p, &cache, err,
			       sizeof(err));
		pypi_proc()->prefetching = 0;
		close(slot);
		if (rc && rc != ENOENT)
			log_warn(0, d->name[i], "prefetch: %s", err);
		if (pypi_proc()->prefetched)
			stats_add(STATS_PREFETCH_PAGES,
				  (uint64_t)pypi_proc()->prefetched);
		else
			stats_add(STATS_PREFETCH_SKIPPED, 1);
	}
	/* the pages fetched hint at no metadata: one level deep */
	pypi_proc()->hint.index = -1;
	d->n = 0;
	prefetch_wheels(w);
}
