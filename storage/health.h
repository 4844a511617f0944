/* health: remembers for a while that an upstream host is failing, so that
 * requests answer at once (a stale page, another layer, a clear 502)
 * instead of each waiting out the timeouts and retries again. Shared by
 * every process through the database; a healthy fetch costs one read.
 *
 * While a host is remembered, from HEALTH_PROBE_AFTER seconds after it
 * failed, one request at a time (over every process) tries it all the
 * same: the probe, a lock on the host's byte of
 * DATA/probe.lock that goes with its process. The probe's outcome ends it
 * (health_ok() forgets the failure, health_failed() remembers it anew),
 * and so do the end of its request (health_release(), from dispatch) and
 * the process's next health_down(): a request that ends without either
 * holds it no longer than itself. */
#ifndef LARDER_HEALTH_H
#define LARDER_HEALTH_H

#include <stddef.h>

#include "storage/db/db.h"

/* Seconds after a host failed before a request may try it again: every
 * other request fails fast meanwhile, also when the host does not answer
 * at all and a probe waits out the timeouts. */
#define HEALTH_PROBE_AFTER 2

/* Returns 1 when the host of url is remembered as failing and another
 * request is trying it: reason is then "URL: what failed (failing:
 * remembered for N s more)", naming url (its secrets masked, url_redact).
 * Returns 0 when the host is not remembered as failing, or when this
 * request is to try it (the probe: it fetches, and health_ok() or
 * health_failed() says how that went). ttl is the error_ttl the failure
 * was remembered for. */
int health_down(struct db *db, const char *url, long ttl, char *reason,
		size_t len);

/* For the status page: returns 1 when the host of url is remembered as
 * failing (reason: what failed, and for how long more), else 0. Takes no
 * probe. */
int health_state(struct db *db, const char *url, char *reason, size_t len);

/* Remembers for ttl seconds (0: not at all) that a fetch of url failed in
 * a way that says its host is unwell (fetch_unwell(): it cannot be
 * reached or does not answer); reason, the fetch's, is kept without the
 * URL it starts with. Ends this process's probe. */
void health_failed(struct db *db, const char *url, long ttl,
		   const char *reason);

/* Ends this process's probe, if it holds one: its request is over,
 * however it ended. */
void health_release(void);

/* The host of url answered (whatever it said: an error status or bad
 * bytes are about one thing, not the host): forgets a failure remembered
 * for it, and notes the answer (to the minute) for the status page. Ends
 * this process's probe. */
void health_ok(struct db *db, const char *url);

/* How often health_ok() notes a host's answer again, in seconds. */
#define HEALTH_SEEN_EVERY 60

/* Notes how a request to url ended, rc being what a fetch returned: a
 * failure of the host itself (fetch_unwell) as health_failed() with ttl
 * and reason, anything else (an answer, even an error status or bad
 * bytes) as health_ok(). */
void health_note(struct db *db, const char *url, int rc, long ttl,
		 const char *reason);

/* What was last seen of the host of url: its last answer and failure,
 * whether the last attempt failed (a failure is noted whatever error_ttl
 * says). Returns 0, ENOENT (nothing yet), EINVAL or EIO. */
int health_seen(struct db *db, const char *url, struct db_seen *seen);

#endif
