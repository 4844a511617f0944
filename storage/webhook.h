/* webhook: signed events for the receivers of [webhook] sections
 * (docs/webhooks.md). Events are queued in the outbox (storage/db/
 * db_outbox.h) inside the transaction of the change they report, and
 * POSTed later by a deliverer that never runs on a request's time: the
 * child each pool starts (webhook_run) or `larder webhook deliver`. One
 * deliverer works at a time (a flock on DATA/webhook.lock), so the events
 * of one hook and index arrive in order.
 *
 * A delivery is a POST of the event's JSON with "timestamp" (unix
 * seconds) and "attempt" put first, and the headers
 *   X-Larder-Event: EVENT
 *   X-Larder-Delivery: the event's id (also "id" in the body)
 *   X-Larder-Timestamp: the same seconds as "timestamp"
 *   X-Larder-Signature-256: sha256=HEX, the HMAC-SHA256 of the body
 *     under the first line of secret_file
 * A 2xx is delivered; anything else (a redirect too: none is followed)
 * is tried again after retry_min, doubling up to retry_max, until
 * retry_for has passed since the event. */
#ifndef LARDER_WEBHOOK_H
#define LARDER_WEBHOOK_H

#include <signal.h>
#include <stddef.h>

#include "common/conf/conf.h"
#include "storage/db/db.h"

/* Queues event for every webhook of c that asks for it and takes idx (a
 * registry's name when registry, else an index's). data is a JSON object
 * text or NULL (db_outbox_add). Call it inside the transaction of the
 * change. Returns 0 or an errno from db_outbox_add. */
int webhook_enqueue(struct db *db, const struct conf *c, const char *event,
                    int registry, const char *idx, const char *project,
                    const char *version, const char *data);

/* Whether any webhook of c asks for event: 1 or 0 (cheap; to skip the
 * work of finding what an event would say). */
int webhook_wanted(const struct conf *c, const char *event);

/* The body as sent: row_body (a JSON object) with "timestamp":ts and
 * "attempt":attempt put first, appended to out. Returns 0 or an errno
 * from buf. */
struct buf;
int webhook_body(struct buf *out, const char *row_body, long long ts,
                 long attempt);

/* The X-Larder-Signature-256 value of body under secret: "sha256=" and
 * 64 hex digits and a NUL in out. Returns 0 or ENOMEM. */
int webhook_sign(const char *secret, const char *body, size_t len,
                 char out[72]);

/* One pass: delivers every due event of c's webhooks, in order per hook
 * and index, until none is due; events of a hook c no longer has are
 * given up. *sent and *failed (either may be NULL) count the tries that
 * worked and that did not. Returns 0, EAGAIN when another deliverer holds
 * DATA/webhook.lock, or an errno. */
int webhook_deliver(struct db *db, const struct conf *c, size_t *sent,
                    size_t *failed);

/* Sends webhook hook of c a "ping" event at once (queued and delivered
 * like any other, so it is on /+status). Returns 0 when the receiver
 * answered 2xx, else an errno with the reason in msg. */
int webhook_ping(struct db *db, const struct conf *c, int hook, char *msg,
                 size_t msglen);

/* The deliverer's loop, for a child of the pool: opens the database,
 * delivers what is due every second until *stop is set. Returns an exit
 * status (0 at once when c has no webhook). */
int webhook_run(const struct conf *c, volatile sig_atomic_t *stop);

#endif
