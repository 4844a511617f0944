#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/url.h"
#include "fcgi/pypi/metadata.h"
#include "fcgi/pypi/ranges.h"
#include "fcgi/server/send.h"
#include "storage/blob.h"
#include "storage/fetch_range.h"
#include "storage/flight.h"

/* How long an upstream that ignores Range is remembered to (seconds). */
#define NORANGE_TTL 86400
/* The longest range relayed; a longer one is served once the whole file
 * is stored (the download serves installs too). */
#define RELAY_MAX (8u << 20)

int ranges_ignored(struct worker *w, const char *url)
{
	char key[FLIGHT_KEY_MAX + 1], origin[300], sha[65], why[8];
	long long at;

	if (url_origin(url, origin, sizeof(origin)) ||
	    flight_key(key, "norange:%s", origin))
		return 0;
	return db_outcome_get(w->db, key, sha, why, sizeof(why), &at) == 0 &&
	       time(NULL) < at + NORANGE_TTL;
}

void ranges_ignore(struct worker *w, const char *url, const char *reason)
{
	char key[FLIGHT_KEY_MAX + 1], origin[300];

	if (url_origin(url, origin, sizeof(origin)) ||
	    flight_key(key, "norange:%s", origin))
		return;
	log_warn(0, origin, "%s: fetching whole files rather than ranges of "
		 "them for a day", reason);
	db_outcome_put(w->db, key, "", reason);
}

/* Sends bytes [from, to] of a file of size bytes, buf holding them: bytes
 * relayed or read from a download under way, which nobody has verified
 * (the file's sha256 covers all of it), so with no validator that would
 * claim they are the file and nothing a cache may keep. */
static void send_part(struct req *r, const struct fetcher_want *want,
		      long long from, long long to, long long size,
		      const void *buf)
{
	req_header(r, "Content-Type", "%s", want->content_type);
	req_header(r, "Content-Length", "%lld", to - from + 1);
	req_header(r, "Content-Range", "bytes %lld-%lld/%lld", from, to, size);
	req_header(r, "Accept-Ranges", "bytes");
	req_header(r, "Cache-Control", "no-store");
	if (req_start(r, 206) == 0 && !r->head)
		req_write(r, buf, (size_t)(to - from + 1));
}

/* Reads [from, to] out of the temp file of the fetch of want->key under
 * way, waiting while it grows (as long as a healthy owner may be silent).
 * Returns 0 with the bytes in buf; ENOENT when there is no such fetch or
 * it ended (the caller looks in the store); or another errno. */
static int from_flight(struct worker *w, const struct fetcher_want *want,
		       long long from, long long to, uint8_t *buf)
{
	struct flight f = {0};
	struct db_flight row;
	struct stat st;
	long waited = 0, max_ms = fetch_max_silence(want->opts) * 1000;
	size_t n = (size_t)(to - from + 1), got = 0;
	int fd, rc = 0;

	if (db_flight_get(w->db, want->key, &row))
		return ENOENT;
	fd = open(row.tmp, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ENOENT;
	snprintf(f.key, sizeof(f.key), "%s", want->key);
	snprintf(f.tmp, sizeof(f.tmp), "%s", row.tmp);
	for (;;) {
		if (fstat(fd, &st) < 0) {
			rc = errno;
			break;
		}
		if (st.st_size > to)
			break;
		if (!flight_pending(w->db, &f) ||
		    flight_locked(f.tmp) == FLIGHT_FREE || waited >= max_ms) {
			rc = ENOENT;
			break;
		}
		usleep(20000);
		waited += 20;
	}
	while (!rc && got < n) {
		ssize_t k = pread(fd, buf + got, n - got, (off_t)from + got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			rc = k < 0 ? errno : EIO;
			break;
		}
		got += (size_t)k;
	}
	close(fd);
	return rc;
}

int ranges_serve_cold(struct worker *w, struct req *r, int from,
		      const struct db_file *f, const char *sha256,
		      const struct fetcher_want *want)
{
	struct send_opts so = {.cache_control = SEND_IMMUTABLE,
			       .content_type = want->content_type};
	const char *h = req_env(r, "HTTP_RANGE");
	long long size = want->size, a, b, total = -1;
	uint8_t *buf = NULL;
	size_t got = 0;
	char err[1024] = "";
	int rc;

	if (!h || !*h)
		return 0;
	if (size < 0 && fetch_head(want->opts, want->url, &size, err,
				   sizeof(err)) == 0 && size < 0)
		return 0;
	if (size < 0) {
		req_error(r, 502, err);
		return 1;
	}
	rc = send_parse_range(h, size, &a, &b);
	if (rc == 0)
		return 0;
	if (rc < 0) {
		req_header(r, "Content-Range", "bytes */%lld", size);
		req_reply(r, 416, "text/plain", "range not satisfiable\n", 22);
		return 1;
	}
	r->cache = "MISS";
	/* all of it: as a whole file, verified before it goes out */
	if (a == 0 && b == size - 1)
		goto whole;
	if (b - a + 1 <= RELAY_MAX)
		buf = malloc((size_t)(b - a + 1));
	if (buf) {
		rc = from_flight(w, want, a, b, buf);
		if (!rc) {
			send_part(r, want, a, b, size, buf);
			goto out;
		}
		if (blob_exists(w->conf->data_dir, sha256))
			goto whole;
		if (ranges_ignored(w, want->url))
			goto whole;
		worker_shed(w);
		rc = fetch_range(want->opts, want->url, (uint64_t)a, 0,
				 (size_t)(b - a + 1), buf, &got, &total, err,
				 sizeof(err));
		if (!rc && total == size) {
			send_part(r, want, a, b, size, buf);
			goto out;
		}
		if (rc == EOPNOTSUPP) {
			ranges_ignore(w, want->url, err);
		} else if (!rc) {
			snprintf(err, sizeof(err), "%s: upstream says %lld "
				 "bytes, the page %lld", want->url, total,
				 size);
			req_error(r, 502, err);
			goto out;
		} else {
			req_error(r, rc == ENODATA ? 404 : 502, err);
			goto out;
		}
	}
whole:
	/* the whole file once, then the range of it from the store */
	rc = metadata_fetch_file(w, from, f, sha256, err, sizeof(err));
	if (rc)
		req_error(r, 502, err);
	else if (send_blob(w, r, sha256, &so))
		req_error(r, 500, "cannot read the stored file");
out:
	free(buf);
	return 1;
}
