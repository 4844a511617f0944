/* db_outbox: webhook events waiting to be delivered, and what became of
 * the delivered ones (docs/webhooks.md). A row is one event for one
 * receiver ("hook"); rows of the same hook and index (or registry) are
 * delivered in id order. Rows are added inside the caller's transaction,
 * the one that makes the change they report. Statements are prepared per
 * call: nothing here is on a warm request's path. */
#ifndef LARDER_DB_OUTBOX_H
#define LARDER_DB_OUTBOX_H

#include <stddef.h>

#include "storage/db/db.h"

enum db_outbox_state {
	DB_OUTBOX_PENDING = 0,
	DB_OUTBOX_DELIVERED = 1,
	DB_OUTBOX_FAILED = 2, /* given up after the hook's retry_for */
};

struct db_outbox {
	long long id;
	char hook[65];
	char event[32];
	char idx[128];       /* an index's or a registry's name */
	char project[256];   /* a project or an image name */
	char version[256];   /* a version, a tag or a digest; "" none */
	char uuid[33];       /* the idempotency id, 32 hex digits */
	char *body;          /* the JSON object, owned (db_outbox_free) */
	long long created, next_at, done_at;
	long attempts;
	int state;           /* enum db_outbox_state */
	int status;          /* the last HTTP status, 0 none */
	char error[256];     /* the last failure, "" none */
};

/* Adds an event for hook: its body is the JSON object
 *   {"id": UUID, "event": EVENT, "webhook": HOOK, "index": IDX,
 *    "project": PROJECT, "version": VERSION, "created": RFC 3339,
 *    "data": DATA}
 * where data is the JSON object text data (NULL or "": {}), which the
 * caller vouches for. Due at once. Returns 0, EINVAL when a string is not
 * UTF-8, ENOMEM or EIO. */
int db_outbox_add(struct db *db, const char *hook, const char *event,
                  const char *idx, const char *project, const char *version,
                  const char *data, long long now);

/* The events due at now: of each (hook, idx) with pending rows, the first
 * pending one, when its next_at has come, in id order; at most max. On
 * success *rows (n of them) is the caller's to free with db_outbox_free.
 * Returns 0, ENOMEM or EIO. */
int db_outbox_due(struct db *db, long long now, size_t max,
                  struct db_outbox **rows, size_t *n);

/* The row db_outbox_add() just added on db's connection, pending, in
 * *rows (*n 1), or none (*n 0). Returns 0 or an errno. */
int db_outbox_last(struct db *db, struct db_outbox **rows, size_t *n);

/* Records a try of row id: its new state, attempts, next_at (pending),
 * the HTTP status (0 none) and error ("" none). Returns 0 or EIO. */
int db_outbox_tried(struct db *db, long long id, int state, long attempts,
                    long long next_at, long long now, int status,
                    const char *error);

/* The last max rows tried (delivered, given up, or pending after a
 * failure), newest first; bodies are not read (body NULL). Same returns
 * and ownership as db_outbox_due. */
int db_outbox_recent(struct db *db, size_t max, struct db_outbox **rows,
                     size_t *n);

/* Counts the pending rows into *pending and the given-up ones into
 * *failed. Returns 0 or EIO. */
int db_outbox_counts(struct db *db, long *pending, long *failed);

/* Deletes the delivered and given-up rows done before before. Returns 0
 * or EIO. */
int db_outbox_prune(struct db *db, long long before);

/* Frees n rows from db_outbox_due or db_outbox_recent. */
void db_outbox_free(struct db_outbox *rows, size_t n);

#endif
