#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/url.h"
#include "storage/health.h"

int health_down(struct db *db, const char *url, char *reason, size_t len)
{
	char key[512], why[1024];
	long long until, now = time(NULL);

	if (url_origin(url, key, sizeof(key)) ||
	    db_upstream_get(db, key, &until, why, sizeof(why)) || until <= now)
		return 0;
	snprintf(reason, len, "%s (failing: remembered for %lld s more)", why,
		 until - now);
	return 1;
}

void health_failed(struct db *db, const char *url, long ttl,
		   const char *reason)
{
	char key[512];

	if (url_origin(url, key, sizeof(key)))
		return;
	/* the status page says so after the memory below is gone */
	db_seen_failed(db, key, (long long)time(NULL), reason);
	if (ttl <= 0)
		return;
	if (db_upstream_put(db, key, (long long)time(NULL) + ttl, reason) == 0)
		log_warn(0, key, "remembering for %ld s that it fails", ttl);
}

void health_ok(struct db *db, const char *url)
{
	char key[512], why[1024];
	long long until, now = time(NULL);
	struct db_seen seen;

	if (url_origin(url, key, sizeof(key)))
		return;
	/* one read while all is well: the last answer is noted again once a
	 * minute at most, a failure (and the memory of it) at once */
	if (db_seen_get(db, key, &seen) == 0 && !seen.last_failed &&
	    now - seen.ok_at < HEALTH_SEEN_EVERY && now >= seen.ok_at)
		return;
	db_seen_ok(db, key, now);
	if (db_upstream_get(db, key, &until, why, sizeof(why)) == 0)
		db_upstream_delete(db, key);
}

int health_seen(struct db *db, const char *url, struct db_seen *seen)
{
	char key[512];

	if (url_origin(url, key, sizeof(key)))
		return EINVAL;
	return db_seen_get(db, key, seen);
}
