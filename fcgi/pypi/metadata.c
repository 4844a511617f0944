#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/conf/conf.h"
#include "common/dist/distname.h"
#include "common/dist/wheelmeta.h"
#include "common/log.h"
#include "common/url.h"
#include "fcgi/pypi/dist.h"
#include "fcgi/pypi/metadata.h"
#include "fcgi/pypi/pypi.h"
#include "fcgi/pypi/ranges.h"
#include "fcgi/server/fetcher.h"
#include "fcgi/server/req.h"
#include "fcgi/server/send.h"
#include "storage/blob.h"
#include "storage/fetch_range.h"
#include "storage/fill.h"
#include "storage/flight.h"
#include "storage/stats.h"

/* The most bytes read of an upstream wheel for its metadata. */
#define METADATA_READ_CAP (16u << 20)
/* Stored files whose metadata one page refresh may read. */
#define LOCAL_PER_PAGE 32

/* After fetcher_serve() handed the fetch of key to another process (one
 * that owned it already, or a CGI's detached child): waits until no one
 * owns it. Returns 0, or ETIMEDOUT when the owner went silent. */
static int follow(struct worker *w, const char *key, long max_ms)
{
	struct flight f;
	int owner;

	for (int round = 0; round < 3; round++) {
		if (flight_claim(w->db, w->conf->data_dir, key, -1, &owner, &f))
			return EIO;
		if (owner) {
			flight_drop(w->db, &f);
			return 0;
		}
		if (flight_wait(w->db, &f, max_ms))
			continue;
		return ETIMEDOUT;
	}
	return 0;
}

/* The synthesize_metadata (enum conf_synth) of the index at from. */
static int synth_mode(const struct worker *w, int from)
{
	return (int)conf_inherit(w->conf->index[from].synthesize_metadata,
				 w->conf->synthesize_metadata);
}

/* Whether the blob sha256 was stored at or after unix time at. */
static int stored_since(struct worker *w, const char *sha256, long long at)
{
	char path[PATH_MAX];
	struct stat st;

	return blob_path(w->conf->data_dir, sha256, path, sizeof(path)) == 0 &&
	       stat(path, &st) == 0 && (long long)st.st_mtime >= at;
}

/* What the last outcome of key, about the file sha256, says: 1 when its
 * metadata was made and is in the store (meta_sha names it; *prov when it
 * was made from unverified bytes); -1 when it cannot be made (the reason
 * in why): a failure to read a stored file stands for good (the bytes
 * never change), one that involved the upstream for error_ttl, or until
 * the verified file is stored (a failure before that was about what the
 * upstream served); else 0. */
static int prior(struct worker *w, const char *key, const char *sha256,
		 int local, char meta_sha[65], int *prov, char *why,
		 size_t len)
{
	long long at;

	*prov = 0;
	if (db_outcome_get(w->db, key, meta_sha, why, len, &at)) {
		*meta_sha = '\0';
		return 0;
	}
	if (*meta_sha) {
		*prov = strcmp(why, FILL_PROVISIONAL) == 0;
		*why = '\0';
		return send_stored(w, meta_sha) ? 1 : (*meta_sha = '\0', 0);
	}
	if (local && stored_since(w, sha256, at))
		return 0;
	return local || time(NULL) < at + w->conf->error_ttl ? -1 : 0;
}

/* Whether a Metadata-Version is 2.2 or later (PEP 643: fields a build may
 * change are marked Dynamic, so the rest is what any build gives). */
static int version_2_2(const char *v)
{
	char *end;
	long major = strtol(v, &end, 10), minor = 0;

	if (end == v)
		return 0;
	if (*end == '.')
		minor = strtol(end + 1, NULL, 10);
	return major > 2 || (major == 2 && minor >= 2);
}

/* A stored blob, read with pread. */
struct local {
	int fd;
	uint64_t size;
};

static int local_read(void *ctx, uint64_t off, int tail, size_t len,
		      uint8_t *buf, size_t *got, uint64_t *size, char *err,
		      size_t errlen)
{
	struct local *l = ctx;
	size_t n = 0;

	if (tail) {
		if (len > l->size)
			len = (size_t)l->size;
		off = l->size - len;
	}
	while (n < len) {
		ssize_t k = pread(l->fd, buf + n, len - n, (off_t)(off + n));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			snprintf(err, errlen, "reading the stored file: %s",
				 k < 0 ? strerror(errno) : "it ends early");
			return k < 0 ? errno : EIO;
		}
		n += (size_t)k;
	}
	*got = n;
	*size = l->size;
	return 0;
}

/* Range reads of the upstream file. */
struct remote {
	const struct fetch_opts *o;
	const char *url;
};

static int remote_read(void *ctx, uint64_t off, int tail, size_t len,
		       uint8_t *buf, size_t *got, uint64_t *size, char *err,
		       size_t errlen)
{
	struct remote *rm = ctx;
	long long total = -1;
	int rc;

	rc = fetch_range(rm->o, rm->url, off, tail, len, buf, got, &total,
			 err, errlen);
	if (!rc)
		*size = (uint64_t)total;
	return rc;
}

/* Reads the metadata of the distribution stored as blob sha256 (a wheel,
 * or an sdist whose PKG-INFO is Metadata-Version 2.2 or later). Returns 0
 * with *out the caller's; ENOENT with a reason for an sdist whose
 * metadata may be dynamic; or as wheelmeta_read(). */
static int from_store(struct worker *w, const char *sha256,
		      const char *filename, const struct distname *dn,
		      uint8_t **out, size_t *len, char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct dist_info di;
	struct local l;
	struct stat st;
	int rc;

	*out = NULL;
	if (blob_path(w->conf->data_dir, sha256, path, sizeof(path)))
		return EINVAL;
	l.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (l.fd < 0 || fstat(l.fd, &st) < 0) {
		rc = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(rc));
		if (l.fd >= 0)
			close(l.fd);
		return rc;
	}
	l.size = (uint64_t)st.st_size;
	if (dn->kind == DISTNAME_WHEEL) {
		struct wheelmeta_src src = {local_read, &l};

		rc = wheelmeta_read(&src, filename, UINT64_MAX, out, len, NULL,
				    err, errlen);
	} else {
		rc = dist_inspect(l.fd, filename, dn->name, dn->version, &di,
				  err, errlen);
		if (!rc && version_2_2(di.metadata_version)) {
			*out = di.metadata;
			*len = di.metadata_len;
			di.metadata = NULL;
		} else if (!rc) {
			snprintf(err, errlen, "%s: its PKG-INFO is "
				 "Metadata-Version %s, which may leave fields "
				 "to the build (2.2 or later is needed)",
				 filename, di.metadata_version);
			rc = ENOENT;
		}
		dist_info_free(&di);
	}
	close(l.fd);
	return rc;
}

int metadata_read_stored(struct worker *w, const char *sha256,
			 const char *filename, uint8_t **out, size_t *len,
			 char *err, size_t errlen)
{
	struct distname dn;

	*out = NULL;
	if (distname_parse(filename, &dn) || dn.kind != DISTNAME_WHEEL) {
		snprintf(err, errlen, "%s: not a wheel", filename);
		return ENOENT;
	}
	return from_store(w, sha256, filename, &dn, out, len, err, errlen);
}

int metadata_fetch_file(struct worker *w, int from, const struct db_file *f,
		       const char *sha256, char *err, size_t errlen)
{
	struct fetcher_want want;
	struct fetch_opts o;
	struct req q;
	char key[FLIGHT_KEY_MAX + 1], url[2100], sha[65];
	int rc;

	if (pypi_file_want(w, from, f, sha256, 0, &want, &o, key, url, sha))
		return 0;
	req_quiet(&q, key);
	rc = fetcher_serve(w, &q, &want, sha, err, errlen);
	req_free(&q);
	if (rc == EEXIST)
		return 0;
	if (!rc)
		rc = follow(w, key, fetch_max_silence(&o) * 1000);
	if (!rc && !blob_exists(w->conf->data_dir, sha256)) {
		snprintf(err, errlen, "%s: the download failed", url);
		rc = EIO;
	}
	return rc;
}

/* The owner's part: reads the metadata and ends the claim fl with it or
 * with the reason it cannot be had. old names the provisional metadata
 * this replaces ("" none): when what the verified file says differs, the
 * difference is logged and counted. Returns as metadata_make(). */
static int make(struct worker *w, int from, const struct db_file *f,
		const char *sha256, const char *filename,
		const struct distname *dn, struct flight *fl, const char *old,
		char meta_sha[65], int *provisional, char *err, size_t errlen)
{
	struct fetch_opts o;
	struct remote rm = {&o, f->url};
	struct wheelmeta_src src = {remote_read, &rm};
	uint8_t *bytes = NULL;
	size_t len = 0;
	int rc, prov = 0, local = blob_exists(w->conf->data_dir, sha256);

	worker_fetch_opts(w->conf, from, &o);
	if (local) {
		rc = from_store(w, sha256, filename, dn, &bytes, &len, err,
				errlen);
	} else if (synth_mode(w, from) != CONF_SYNTH_RANGES ||
		   ranges_ignored(w, f->url)) {
		rc = EOPNOTSUPP;
	} else {
		/* bytes nobody has verified (the file's sha256 covers all
		 * of it): what they say is provisional */
		worker_shed(w);
		prov = 1;
		rc = wheelmeta_read(&src, filename, METADATA_READ_CAP, &bytes,
				    &len, NULL, err, errlen);
		if (rc == EOPNOTSUPP)
			ranges_ignore(w, f->url, err);
	}
	if (rc == EOPNOTSUPP) {
		/* the whole file, once, for installs too: verified */
		prov = 0;
		rc = metadata_fetch_file(w, from, f, sha256, err, errlen);
		if (!rc)
			rc = from_store(w, sha256, filename, dn, &bytes, &len,
					err, errlen);
	}
	if (rc) {
		char why[1024];

		snprintf(why, sizeof(why), "%s: no metadata: %s", filename,
			 err);
		fill_made(w->db, w->conf->data_dir, fl, NULL, 0, NULL, 0, why,
			  meta_sha, err, errlen);
		return rc == ENOENT || dn->kind != DISTNAME_WHEEL ? ENOENT :
		       EBADMSG;
	}
	rc = fill_made(w->db, w->conf->data_dir, fl, bytes, len, sha256, prov,
		       NULL, meta_sha, err, errlen);
	free(bytes);
	if (rc)
		return rc;
	*provisional = prov;
	if (*old && strcmp(old, meta_sha) != 0) {
		log_error(0, filename, "METADATA MISMATCH: what %s%s "
			  "gave (metadata sha256 %s, provisional) is not what "
			  "the verified file %s says (metadata sha256 %s): the "
			  "upstream served other bytes; the verified metadata "
			  "replaces it", f->has_meta ? "" : "range reads of ",
			  f->has_meta ? "the upstream's .metadata" : f->url,
			  old, sha256, meta_sha);
		stats_add(STATS_META_MISMATCH, 1);
	}
	/* the page's next refresh renders it again, with the hash (a 304
	 * would keep the rendering that has none); a provisional hash is
	 * never advertised */
	if (!prov && *f->project)
		db_page_unvalidate(w->db, w->conf->index[from].name,
				   f->project);
	return 0;
}

int metadata_make(struct worker *w, int from, const struct db_file *f,
		  const char *sha256, const char *filename, int local_only,
		  char meta_sha[65], int *provisional, char *err, size_t errlen)
{
	char key[FLIGHT_KEY_MAX + 1], old[65] = "";
	struct distname dn;
	struct fetch_opts o;
	struct flight fl;
	long max_ms;
	int owner, local, prov, rc, mode = synth_mode(w, from);

	*meta_sha = '\0';
	*provisional = 0;
	if (*f->meta_sha && !f->meta_prov && send_stored(w, f->meta_sha)) {
		memcpy(meta_sha, f->meta_sha, 65);
		return 0;
	}
	/* the upstream's own, provisional (no hash vouched for it): read
	 * again from the verified file, whatever synthesize_metadata says */
	if (mode == CONF_SYNTH_NO && !f->has_meta) {
		snprintf(err, errlen, "%s: the upstream lists no metadata for "
			 "it, and this index makes none (synthesize_metadata "
			 "= no)", filename);
		return ENOENT;
	}
	if (f->meta_prov)
		memcpy(old, f->meta_sha, 65);
	local = blob_exists(w->conf->data_dir, sha256);
	if (distname_parse(filename, &dn) ||
	    (dn.kind != DISTNAME_WHEEL && !local) ||
	    (dn.kind != DISTNAME_WHEEL && dn.kind != DISTNAME_SDIST_TGZ &&
	     dn.kind != DISTNAME_SDIST_ZIP) ||
	    ((local_only || f->has_meta) && !local)) {
		snprintf(err, errlen, "%s: %s", filename,
			 dn.kind == DISTNAME_WHEEL || local_only ||
			 f->has_meta ?
			 "not in the store" :
			 "an sdist's metadata comes from a stored copy only");
		return ENOENT;
	}
	if (flight_key(key, "meta:%s", sha256))
		return ENAMETOOLONG;
	rc = prior(w, key, sha256, local, meta_sha, &prov, err, errlen);
	if (rc > 0 && f->meta_prov && strcmp(meta_sha, f->meta_sha) == 0)
		prov = 1;
	if (rc > 0 && (!prov || (!local && mode == CONF_SYNTH_RANGES))) {
		*provisional = prov;
		return 0;
	}
	if (rc > 0) {
		/* provisional, and the verified file is in the store now (or
		 * verified metadata is asked for): read again, verified */
		memcpy(old, meta_sha, 65);
		*meta_sha = '\0';
	}
	if (rc < 0)
		return dn.kind == DISTNAME_WHEEL ? EBADMSG : ENOENT;
	rc = flight_claim(w->db, w->conf->data_dir, key, -1, &owner, &fl);
	if (rc) {
		snprintf(err, errlen, "%s: claiming its metadata: %s", filename,
			 strerror(rc));
		return rc;
	}
	if (owner)
		return make(w, from, f, sha256, filename, &dn, &fl, old,
			    meta_sha, provisional, err, errlen);
	/* another process makes it (one that fetches the whole file for it
	 * may take as long as that download): wait while it lives */
	worker_fetch_opts(w->conf, from, &o);
	max_ms = 10 * fetch_max_silence(&o) * 1000;
	while (!flight_wait(w->db, &fl, 1000)) {
		max_ms -= 1000;
		if (max_ms <= 0) {
			snprintf(err, errlen, "%s: its metadata is taking too "
				 "long", filename);
			return ETIMEDOUT;
		}
	}
	if (db_outcome_get(w->db, key, meta_sha, err, errlen, NULL) ||
	    !*meta_sha) {
		*meta_sha = '\0';
		if (!*err)
			snprintf(err, errlen, "%s: its metadata could not be "
				 "made", filename);
		return dn.kind == DISTNAME_WHEEL ? EBADMSG : ENOENT;
	}
	*provisional = strcmp(err, FILL_PROVISIONAL) == 0;
	*err = '\0';
	return send_stored(w, meta_sha) ? 0 : EIO;
}

int metadata_ensure(struct worker *w, int idx, const char *sha256,
		    const char *filename, char meta_sha[65], char *err,
		    size_t errlen)
{
	struct fetcher_want want;
	struct fetch_opts o;
	struct db_file f;
	struct req q;
	char key[FLIGHT_KEY_MAX + 1], url[2100];
	int from, rc, prov;

	*meta_sha = '\0';
	from = pypi_find_file(w, idx, sha256, filename, &f);
	if (from < 0) {
		snprintf(err, errlen, "%s: no page lists it", filename);
		return ENOENT;
	}
	if (!f.has_meta && w->conf->index[from].type != CONF_INDEX_HOSTED)
		return metadata_make(w, from, &f, sha256, filename, 0,
				     meta_sha, &prov, err, errlen);
	/* the upstream's, provisional: verified once the file is stored */
	if (f.meta_prov && *f.meta_sha &&
	    (metadata_make(w, from, &f, sha256, filename, 1, meta_sha, &prov,
			   err, errlen) == 0 ||
	     (send_stored(w, f.meta_sha) &&
	      memcpy(meta_sha, f.meta_sha, 65)))) {
		*err = '\0';
		return 0;
	}
	if (!f.has_meta) {
		snprintf(err, errlen, "%s: no metadata is listed for it",
			 filename);
		return ENOENT;
	}
	if (pypi_file_want(w, from, &f, sha256, 1, &want, &o, key, url,
			   meta_sha))
		return 0;
	if (w->conf->index[from].type == CONF_INDEX_HOSTED) {
		snprintf(err, errlen, "%s: its metadata is missing from the "
			 "store", filename);
		return ENOENT;
	}
	if (pypi_offline(w, from, err, errlen))
		return ENETDOWN;
	req_quiet(&q, key);
	rc = fetcher_serve(w, &q, &want, meta_sha, err, errlen);
	req_free(&q);
	if (rc == EEXIST)
		return 0;
	if (!rc)
		rc = follow(w, key, fetch_max_silence(&o) * 1000);
	if (rc) {
		snprintf(err, errlen, "%s: fetching its metadata: %s",
			 filename, strerror(rc));
		return rc;
	}
	if (*meta_sha && !send_stored(w, meta_sha)) {
		snprintf(err, errlen, "%s: its metadata could not be fetched",
			 filename);
		return EIO;
	}
	/* fetched: its hash is the promised one, or now on the file's row */
	if (!*meta_sha && (db_file_get(w->db, w->conf->index[from].name,
				       sha256, filename, &f) ||
			   !*f.meta_sha)) {
		snprintf(err, errlen, "%s: its metadata was not stored",
			 filename);
		return EIO;
	}
	if (!*meta_sha)
		memcpy(meta_sha, f.meta_sha, 65);
	return 0;
}

void metadata_send_provisional(struct worker *w, struct req *r,
			       const char *meta_sha)
{
	char path[PATH_MAX];
	uint8_t *buf = NULL;
	struct stat st = {0};
	size_t n = 0;
	int fd = -1;

	if (blob_path(w->conf->data_dir, meta_sha, path, sizeof(path)) == 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size >= 0 &&
	    st.st_size <= (off_t)METADATA_READ_CAP)
		buf = malloc((size_t)st.st_size + 1);
	while (buf && n < (size_t)st.st_size) {
		ssize_t k = pread(fd, buf + n, (size_t)st.st_size - n,
				  (off_t)n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			free(buf);
			buf = NULL;
			break;
		}
		n += (size_t)k;
	}
	if (fd >= 0)
		close(fd);
	if (!buf) {
		req_error(r, 500, "cannot read the stored metadata");
		return;
	}
	req_header(r, "Cache-Control", "%s, max-age=%ld",
		   r->private_index ? "private" : "public", w->conf->cache_ttl);
	req_header(r, "X-Larder-Metadata", "provisional");
	req_reply(r, 200, "text/plain; charset=utf-8", buf, n);
	free(buf);
}

void metadata_serve(struct worker *w, struct req *r, int from,
		    const struct db_file *f, const char *sha256,
		    const char *filename)
{
	struct send_opts o = {.cache_control = SEND_IMMUTABLE,
			      .content_type = "text/plain; charset=utf-8"};
	char meta_sha[65], err[1024] = "", key[FLIGHT_KEY_MAX + 1];
	int rc, prov;

	if (w->conf->index[from].type == CONF_INDEX_HOSTED) {
		req_error(r, 404, "no metadata was stored for it");
		return;
	}
	/* made before (a lookup), unless it is to be read again */
	if (!r->cache && flight_key(key, "meta:%s", sha256) == 0 &&
	    db_outcome_get(w->db, key, meta_sha, err, sizeof(err), NULL) ==
	    0 && *meta_sha && (strcmp(err, FILL_PROVISIONAL) != 0 ||
			       !blob_exists(w->conf->data_dir, sha256)))
		r->cache = "HIT";
	*err = '\0';
	rc = metadata_make(w, from, f, sha256, filename, 0, meta_sha, &prov,
			   err, sizeof(err));
	if (rc == ENOENT) {
		req_error(r, 404, err);
		return;
	}
	if (rc) {
		log_warn(rc, filename, "%s", err);
		req_error(r, 502, err);
		return;
	}
	if (!r->cache)
		r->cache = "MISS";
	if (prov) {
		metadata_send_provisional(w, r, meta_sha);
		return;
	}
	req_header(r, "X-Larder-Metadata", "verified");
	if (send_blob(w, r, meta_sha, &o))
		req_error(r, 500, "cannot read the stored metadata");
}

int metadata_serve_listed(struct worker *w, struct req *r, int from,
			  const struct db_file *f, const char *sha256,
			  const char *filename)
{
	struct send_opts o = {.cache_control = SEND_IMMUTABLE,
			      .content_type = "text/plain; charset=utf-8"};
	char meta_sha[65] = "", err[1024] = "";
	int prov = 1;

	if (!f->has_meta || !f->meta_prov || !*f->meta_sha)
		return 0;
	/* the verified file is stored: what it says replaces the
	 * upstream's (a difference is logged and counted) */
	if (blob_exists(w->conf->data_dir, sha256) &&
	    metadata_make(w, from, f, sha256, filename, 1, meta_sha, &prov,
			  err, sizeof(err)) == 0 && !prov) {
		r->cache = "HIT";
		req_header(r, "X-Larder-Metadata", "verified");
		if (send_blob(w, r, meta_sha, &o))
			req_error(r, 500, "cannot read the stored metadata");
		return 1;
	}
	if (!send_stored(w, f->meta_sha))
		return 0;
	r->cache = "HIT";
	metadata_send_provisional(w, r, f->meta_sha);
	return 1;
}

void metadata_advertise(struct worker *w, const struct conf_index *ix,
			struct simple_page *p)
{
	int idx = (int)(ix - w->conf->index), budget = LOCAL_PER_PAGE;
	char meta_sha[65], err[1024];
	struct distname dn;
	struct db_file row;

	if (synth_mode(w, idx) == CONF_SYNTH_NO)
		return;
	for (size_t i = 0; i < p->nfiles; i++) {
		struct simple_file *sf = &p->files[i];
		int known = 0, prov = 0;

		if (sf->core_metadata || !sf->filename ||
		    distname_parse(sf->filename, &dn))
			continue;
		/* a hash only of metadata read from verified bytes */
		if (db_file_get(w->db, ix->name, sf->sha256, sf->filename,
				&row) == 0 && !row.has_meta && *row.meta_sha &&
		    !row.meta_prov) {
			memcpy(sf->meta_sha256, row.meta_sha, 65);
			known = 1;
		} else if (budget > 0 &&
			   blob_exists(w->conf->data_dir, sf->sha256)) {
			/* stored already: read it now, so the page can say
			 * its hash (and an sdist whether it has any) */
			memset(&row, 0, sizeof(row));
			snprintf(row.url, sizeof(row.url), "%s", sf->url);
			budget--;
			known = metadata_make(w, idx, &row, sf->sha256,
					      sf->filename, 1, meta_sha, &prov,
					      err, sizeof(err)) == 0;
			if (known && !prov)
				memcpy(sf->meta_sha256, meta_sha, 65);
		}
		if (known || dn.kind == DISTNAME_WHEEL) {
			sf->core_metadata = 1;
			sf->made_metadata = 1;
		}
	}
}

/* fetcher_want.stored of an sdist: see metadata_watch(). */
static void sdist_stored(struct db *db, const char *sha256, long long size,
			 void *ctx)
{
	struct metadata_page *pg = ctx;

	(void)sha256, (void)size;
	db_page_unvalidate(db, pg->index, pg->project);
}

/* fetcher_want.stored of a wheel: see metadata_watch(). */
static void wheel_stored(struct db *db, const char *sha256, long long size,
			 void *ctx)
{
	struct metadata_page *pg = ctx;
	struct worker *w = pg->w;
	char meta_sha[65], err[1024] = "";
	struct db_file row;
	int from, prov;

	(void)size;
	/* a CGI's detached child has a database of its own: the next
	 * request for the metadata reads it again there */
	if (db != w->db ||
	    db_file_get(db, pg->index, sha256, pg->filename, &row) ||
	    !row.meta_prov)
		return;
	from = conf_index_find(w->conf, pg->index);
	if (from < 0)
		return;
	if (metadata_make(w, from, &row, sha256, pg->filename, 1, meta_sha,
			  &prov, err, sizeof(err)))
		log_warn(0, pg->filename, "reading its metadata from the "
			 "verified file: %s", err);
}

void metadata_watch(struct worker *w, struct fetcher_want *want,
		    const char *filename, struct metadata_page *pg)
{
	struct distname dn;

	if (distname_parse(filename, &dn))
		return;
	pg->w = w;
	pg->filename = filename;
	if (dn.kind == DISTNAME_WHEEL) {
		want->stored = wheel_stored;
		want->ctx = pg;
		return;
	}
	if (!*pg->project)
		return;
	want->stored = sdist_stored;
	want->ctx = pg;
}
