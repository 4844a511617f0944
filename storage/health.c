#include "config.h"

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

	if (ttl <= 0 || url_origin(url, key, sizeof(key)))
		return;
	if (db_upstream_put(db, key, (long long)time(NULL) + ttl, reason) == 0)
		log_warn(0, key, "remembering for %ld s that it fails", ttl);
}

void health_ok(struct db *db, const char *url)
{
	char key[512], why[1024];
	long long until;

	if (url_origin(url, key, sizeof(key)) == 0 &&
	    db_upstream_get(db, key, &until, why, sizeof(why)) == 0)
		db_upstream_delete(db, key);
}
