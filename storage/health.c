#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/url.h"
#include "storage/fetch.h"
#include "storage/health.h"

/* The probe this process holds: the lock on its host's byte of
 * DATA/probe.lock, an open file description lock (F_OFD_SETLK), which goes
 * with the descriptor or the process, whatever becomes of it. */
static int probe_fd = -1;

/* Ends the probe this process holds, if any. */
static void probe_end(void)
{
	if (probe_fd >= 0)
		close(probe_fd);
	probe_fd = -1;
}

void health_release(void)
{
	probe_end();
}

/* The byte of DATA/probe.lock that stands for host (FNV-1a): two hosts
 * that share one only take turns. */
static off_t probe_byte(const char *host)
{
	uint32_t h = 2166136261u;

	for (const char *p = host; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return (off_t)(h & 0x3fffffff);
}

/* Takes the probe of host when nobody holds it. Returns 1 when this
 * process holds it now, else 0 (held elsewhere, or the lock file cannot
 * be had: then nobody probes, as before there were probes). */
static int probe_begin(struct db *db, const char *host)
{
	char path[4096];
	const char *file = db_file(db), *slash = strrchr(file, '/');
	struct flock fl;
	int fd;

	if (!slash ||
	    (size_t)snprintf(path, sizeof(path), "%.*s/probe.lock",
			     (int)(slash - file), file) >= sizeof(path))
		return 0;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		log_warn(errno, path, "opening the probe lock");
		return 0;
	}
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = probe_byte(host);
	fl.l_len = 1;
	if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
		close(fd);
		return 0;
	}
	probe_fd = fd;
	return 1;
}

/* A fetch's reason without the URL it starts with ("URL: what failed"):
 * what is remembered of a host is what failed, the URL is the asker's. */
static const char *without_url(const char *reason)
{
	size_t n = strcspn(reason, " ");
	const char *s = strstr(reason, "://");

	if (s && s < reason + n && n > 1 && reason[n - 1] == ':' &&
	    reason[n] == ' ')
		return reason + n + 1;
	return reason;
}

int health_state(struct db *db, const char *url, char *reason, size_t len)
{
	char key[512], why[1024];
	long long until, now = time(NULL);

	if (url_origin(url, key, sizeof(key)) ||
	    db_upstream_get(db, key, &until, why, sizeof(why)) || until <= now)
		return 0;
	snprintf(reason, len, "%s (remembered for %lld s more)", why,
		 until - now);
	return 1;
}

int health_down(struct db *db, const char *url, long ttl, char *reason,
		size_t len)
{
	char key[512], why[1024], shown[2048];
	long long until, now = time(NULL);

	probe_end(); /* this process's last request is over, and its probe */
	if (url_origin(url, key, sizeof(key)) ||
	    db_upstream_get(db, key, &until, why, sizeof(why)) || until <= now)
		return 0;
	/* failed at until - ttl: tried again once that is PROBE_AFTER old */
	if (now >= until - ttl + HEALTH_PROBE_AFTER && probe_begin(db, key))
		return 0; /* this request tries the host again */
	snprintf(reason, len, "%s: %s (failing: remembered for %lld s more)",
		 url_redact(url, shown, sizeof(shown)), without_url(why),
		 until - now);
	return 1;
}

void health_failed(struct db *db, const char *url, long ttl,
		   const char *reason)
{
	char key[512], shown[1024];

	probe_end();
	if (url_origin(url, key, sizeof(key)))
		return;
	url_redact(without_url(reason), shown, sizeof(shown));
	/* the status page says so after the memory below is gone */
	db_seen_failed(db, key, (long long)time(NULL), shown);
	if (ttl <= 0)
		return;
	if (db_upstream_put(db, key, (long long)time(NULL) + ttl, shown) == 0)
		log_warn(0, key, "remembering for %ld s that it fails", ttl);
}

void health_ok(struct db *db, const char *url)
{
	char key[512], why[1024];
	long long until, now = time(NULL);
	struct db_seen seen;

	probe_end();
	if (url_origin(url, key, sizeof(key)))
		return;
	/* the memory of a failure ends whatever the status record says: a
	 * failure noted there and one remembered here are two writes, and a
	 * success between them must not leave the second standing */
	if (db_upstream_get(db, key, &until, why, sizeof(why)) == 0)
		db_upstream_delete(db, key);
	/* the last answer is noted again once a minute at most, a failure
	 * at once */
	if (db_seen_get(db, key, &seen) == 0 && !seen.last_failed &&
	    now - seen.ok_at < HEALTH_SEEN_EVERY && now >= seen.ok_at)
		return;
	db_seen_ok(db, key, now);
}

void health_note(struct db *db, const char *url, int rc, long ttl,
		 const char *reason)
{
	if (rc && fetch_unwell(rc))
		health_failed(db, url, ttl, reason);
	else
		health_ok(db, url);
}

int health_seen(struct db *db, const char *url, struct db_seen *seen)
{
	char key[512];

	if (url_origin(url, key, sizeof(key)))
		return EINVAL;
	return db_seen_get(db, key, seen);
}
