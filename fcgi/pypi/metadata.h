/* metadata: the PEP 658 core metadata of a file an index lists, made
 * available in the store without a client waiting on it: what a JSON API
 * page's "info" is read from, and what a prefetch warms.
 *
 * When the upstream advertises none, larder makes it: a wheel's
 * .dist-info/METADATA, read from the stored wheel or with range reads of
 * the upstream file (common/dist/wheelmeta.h; at most 16 MiB read), or, from
 * an upstream that ignores Range (remembered for a day), from the whole
 * file fetched into the store as an install would; an sdist's PKG-INFO
 * when the sdist is stored and says Metadata-Version 2.2 or later. It is
 * single-flight under "meta:<sha256 of the file>", like the fetch of an
 * advertised .metadata, stored content-addressed, and its hash recorded on
 * the file's rows, so the next request is a lookup. What range reads give
 * is provisional (no file hash covers those bytes): served without ETag or
 * immutable, advertised without a hash, and read again from the verified
 * file once that is stored, which replaces it (synthesize_metadata picks
 * ranges, the verified file only, or none; docs/reliability.md).
 */
#ifndef LARDER_METADATA_H
#define LARDER_METADATA_H

#include <stddef.h>
#include <stdint.h>

#include "common/pypi/simple.h"
#include "fcgi/server/fetcher.h"
#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* Makes the core metadata of the file (sha256, filename), as listed by the
 * index at position idx (any type: a virtual index's policy picks the
 * leaf), available in the store, fetching it through the single-flight
 * gate as a client's request for the .metadata would. Sends nothing to
 * any client. Returns 0 with meta_sha naming the stored blob; ENOENT
 * when no page of the index lists the file or no metadata can be had for
 * it; or another errno with a one-line reason in err. */
int metadata_ensure(struct worker *w, int idx, const char *sha256,
		    const char *filename, char meta_sha[65], char *err,
		    size_t errlen);

/* Makes the metadata of the file (sha256, filename), listed as f by the
 * cache index at position from, whose upstream advertises none, as its
 * synthesize_metadata says; with local_only, only from a stored copy (no
 * upstream is asked). Metadata made from range reads is provisional; once
 * the file is in the store (verified), it is read again from there and
 * replaces the provisional one. Returns 0 with meta_sha naming the stored
 * blob and *provisional set when it was made from unverified bytes;
 * ENOENT when none can be had (not a wheel or sdist, an sdist not stored
 * or older than Metadata-Version 2.2, synthesize_metadata = no, or with
 * local_only a file not stored); EBADMSG when the wheel is no wheel, lies,
 * or is over the cap; or another errno; a one-line reason is in err
 * either way. A failure is remembered as the key's outcome (for good for
 * a stored file, for error_ttl otherwise). */
int metadata_make(struct worker *w, int from, const struct db_file *f,
		  const char *sha256, const char *filename, int local_only,
		  char meta_sha[65], int *provisional, char *err,
		  size_t errlen);

/* Reads the METADATA of the wheel filename stored as blob sha256, with
 * nothing stored or recorded. Returns 0 with *out (len bytes,
 * NUL-terminated) the caller's to free; ENOENT when filename is no wheel;
 * or as wheelmeta_read(), with a reason in err. */
int metadata_read_stored(struct worker *w, const char *sha256,
			 const char *filename, uint8_t **out, size_t *len,
			 char *err, size_t errlen);

/* Fetches the file (sha256, listed as f by the cache index at position
 * from) into the store through the single-flight fetch installs use, with
 * no client, or follows the fetch under way. Returns 0 once it is stored,
 * or an errno with a reason in err. */
int metadata_fetch_file(struct worker *w, int from, const struct db_file *f,
			const char *sha256, char *err, size_t errlen);

/* Answers r, a request for the .metadata of a file listed as f by the
 * cache index at position from whose upstream advertises none:
 * metadata_make(), then the blob (provisional metadata without ETag or
 * immutable, X-Larder-Metadata: provisional), or a 404 or 502 with the
 * reason. */
void metadata_serve(struct worker *w, struct req *r, int from,
		    const struct db_file *f, const char *sha256,
		    const char *filename);

/* Sends the stored metadata meta_sha that was made from, or fetched as,
 * unverified bytes as what it is: X-Larder-Metadata: provisional, no ETag
 * (its hash is not one anybody vouched for), fresh for cache_ttl at most,
 * never immutable; the bytes sent by larder itself, so no web server adds
 * a validator. */
void metadata_send_provisional(struct worker *w, struct req *r,
			       const char *meta_sha);

/* Answers r, a request for the .metadata of a file listed as f by the
 * cache index at position from, when the upstream advertised it without a
 * hash and larder fetched it (provisional): once the file itself is in the
 * store (verified), the metadata read from it, verified, replacing the
 * upstream's (a difference is logged and counted); before, the upstream's
 * as metadata_serve() sends provisional metadata. Returns 1 when r was
 * answered; 0 when the caller fetches it (not provisional, or the blob is
 * gone). */
int metadata_serve_listed(struct worker *w, struct req *r, int from,
			  const struct db_file *f, const char *sha256,
			  const char *filename);

/* Where the page that lists a file is: what a page's rendering depends
 * on of a download. */
struct metadata_page {
	const char *index;    /* the cache index's name */
	const char *project;  /* the page's (normalised), "" unknown */
	struct worker *w;     /* set by metadata_watch() */
	const char *filename; /* set by metadata_watch() */
};

/* Before want (the download of filename, listed on page *pg, which must
 * outlive it, as must filename) is served by worker w: for an sdist, has
 * the page rendered again at its next refresh once the file is stored, so
 * that the page can advertise the metadata the stored sdist gives
 * (metadata_advertise()); for a wheel whose metadata is provisional (made
 * from range reads, or the upstream's fetched with no hash promised),
 * reads it again from the verified file once that is
 * stored, and the verified metadata replaces it (a difference is logged
 * and counted). */
void metadata_watch(struct worker *w, struct fetcher_want *want,
		    const char *filename, struct metadata_page *pg);

/* Before page p of cache index ix is rendered: marks the files whose
 * metadata larder can serve though the upstream advertises none
 * (made_metadata): every wheel, and a stored sdist whose PKG-INFO will
 * do. The hash goes with them only when it is known: made before, or now
 * from a stored copy (a few per page, so a refresh stays quick). */
void metadata_advertise(struct worker *w, const struct conf_index *ix,
			struct simple_page *p);

#endif
