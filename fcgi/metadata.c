#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fcgi/fetcher.h"
#include "fcgi/metadata.h"
#include "fcgi/pypi.h"
#include "fcgi/req.h"
#include "fcgi/send.h"
#include "storage/flight.h"

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

int metadata_ensure(struct worker *w, int idx, const char *sha256,
		    const char *filename, char meta_sha[65], char *err,
		    size_t errlen)
{
	struct fetcher_want want;
	struct fetch_opts o;
	struct db_file f;
	struct req q;
	char key[FLIGHT_KEY_MAX + 1], url[2100];
	int from, rc;

	*meta_sha = '\0';
	from = pypi_find_file(w, idx, sha256, filename, &f);
	if (from < 0 || !f.has_meta) {
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
