/* health: remembers for a while that an upstream host is failing, so that
 * requests answer at once (a stale page, another layer, a clear 502)
 * instead of each waiting out the timeouts and retries again. Shared by
 * every process through the database; a healthy fetch costs one read. */
#ifndef LARDER_HEALTH_H
#define LARDER_HEALTH_H

#include <stddef.h>

#include "storage/db.h"

/* Returns 1 when the host of url is remembered as failing (what failed in
 * reason, with how long it stays remembered), else 0. */
int health_down(struct db *db, const char *url, char *reason, size_t len);

/* Remembers for ttl seconds (0: not at all) that a fetch of url failed in
 * a way that says its host is unwell (fetch_unwell(): it cannot be
 * reached or does not answer). */
void health_failed(struct db *db, const char *url, long ttl,
		   const char *reason);

/* The host of url answered: forgets a failure remembered for it, and
 * notes the answer (to the minute) for the status page. */
void health_ok(struct db *db, const char *url);

/* How often health_ok() notes a host's answer again, in seconds. */
#define HEALTH_SEEN_EVERY 60

/* What was last seen of the host of url: its last answer and failure,
 * whether the last attempt failed (a failure is noted whatever error_ttl
 * says). Returns 0, ENOENT (nothing yet), EINVAL or EIO. */
int health_seen(struct db *db, const char *url, struct db_seen *seen);

#endif
