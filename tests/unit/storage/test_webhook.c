/* test_webhook: the outbox's queues (in order per hook and index, a failing
 * head holds its queue back, not the others), what an event's body is, and
 * the signature a receiver checks. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/conf/conf.h"
#include "common/hash/hmac.h"
#include "storage/db/db.h"
#include "storage/db/db_outbox.h"
#include "storage/webhook.h"
#include "tests/unit/t.h"

static void remove_db(const char *dir)
{
	static const char *const files[] = {"larder.db", "larder.db-wal",
					    "larder.db-shm"};
	char path[512];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

T(queues_in_order)
{
	char dir[] = "/tmp/larder-test-hook-XXXXXX";
	struct db_outbox *rows = NULL;
	struct db *db = NULL;
	long pending, failed;
	size_t n = 0;

	CHECK(mkdtemp(dir) != NULL);
	CHECK_INT(db_open(dir, &db), 0);
	if (!db)
		return;
	CHECK_INT(db_outbox_add(db, "ci", "upload", "a", "p", "1.0",
	                        "{\"x\":1}", 100), 0);
	CHECK_INT(db_outbox_add(db, "ci", "upload", "a", "p", "1.1", NULL, 100),
	          0);
	CHECK_INT(db_outbox_add(db, "ci", "push", "b", "img", "v1", "", 100),
	          0);
	CHECK_INT(db_outbox_add(db, "ops", "upload", "a", "p", "1.0", NULL,
	                        100), 0);
	/* not UTF-8: refused */
	CHECK_INT(db_outbox_add(db, "ci", "upload", "a", "p\xff", "1", NULL,
	                        100), EINVAL);
	/* not due before it was made */
	CHECK_INT(db_outbox_due(db, 99, 10, &rows, &n), 0);
	CHECK_INT(n, 0);
	db_outbox_free(rows, n);
	/* the head of each (hook, idx) queue: three of them */
	CHECK_INT(db_outbox_due(db, 100, 10, &rows, &n), 0);
	CHECK_INT(n, 3);
	if (n == 3) {
		CHECK_STR(rows[0].version, "1.0");
		CHECK_STR(rows[0].hook, "ci");
		CHECK_STR(rows[1].event, "push");
		CHECK_STR(rows[2].hook, "ops");
		CHECK_INT(strlen(rows[0].uuid), 32);
		CHECK(strcmp(rows[0].uuid, rows[2].uuid) != 0);
		CHECK(strstr(rows[0].body, "\"event\":\"upload\"") != NULL);
		CHECK(strstr(rows[0].body, "\"data\":{\"x\":1}}") != NULL);
		CHECK(strstr(rows[1].body, "\"data\":{}}") != NULL);
		/* the head of ci/a fails: retried at 130, its queue waits */
		CHECK_INT(db_outbox_tried(db, rows[0].id, DB_OUTBOX_PENDING, 1,
		                          130, 101, 503, "HTTP 503"), 0);
		/* ci/b is delivered */
		CHECK_INT(db_outbox_tried(db, rows[1].id, DB_OUTBOX_DELIVERED,
		                          1, 0, 101, 200, ""), 0);
	}
	db_outbox_free(rows, n);
	CHECK_INT(db_outbox_due(db, 120, 10, &rows, &n), 0);
	/* ci/a's 1.1 is not handed out while 1.0 waits; ops/a is */
	CHECK_INT(n, 1);
	if (n == 1)
		CHECK_STR(rows[0].hook, "ops");
	db_outbox_free(rows, n);
	CHECK_INT(db_outbox_due(db, 130, 10, &rows, &n), 0);
	CHECK_INT(n, 2);
	if (n == 2) {
		CHECK_STR(rows[0].version, "1.0");
		CHECK_INT(rows[0].attempts, 1);
		CHECK_STR(rows[0].error, "HTTP 503");
		/* given up: the queue moves on to 1.1 */
		CHECK_INT(db_outbox_tried(db, rows[0].id, DB_OUTBOX_FAILED, 2,
		                          0, 131, 503, "HTTP 503"), 0);
	}
	db_outbox_free(rows, n);
	CHECK_INT(db_outbox_due(db, 131, 10, &rows, &n), 0);
	CHECK_INT(n, 2);
	if (n == 2)
		CHECK_STR(rows[0].version, "1.1");
	db_outbox_free(rows, n);
	CHECK_INT(db_outbox_counts(db, &pending, &failed), 0);
	CHECK_INT(pending, 2);
	CHECK_INT(failed, 1);
	CHECK_INT(db_outbox_recent(db, 10, &rows, &n), 0);
	CHECK_INT(n, 2);
	if (n == 2) {
		CHECK_INT(rows[0].state, DB_OUTBOX_FAILED);
		CHECK(rows[0].body == NULL);
	}
	db_outbox_free(rows, n);
	CHECK_INT(db_outbox_prune(db, 1000), 0);
	CHECK_INT(db_outbox_counts(db, &pending, &failed), 0);
	CHECK_INT(pending, 2);
	CHECK_INT(failed, 0);
	db_close(db);
	remove_db(dir);
}

T(enqueue_filters)
{
	char dir[] = "/tmp/larder-test-hook-XXXXXX";
	struct db_outbox *rows = NULL;
	struct db *db = NULL;
	struct conf c;
	char err[512] = "";
	const char *text = "[webhook \"all\"]\nurl = http://h/\n"
	                   "secret_file = /s\n"
	                   "[webhook \"pushes\"]\nurl = http://h/\n"
	                   "secret_file = /s\nevents = push\n"
	                   "registries = hub\n";
	size_t n = 0;

	CHECK_INT(conf_defaults(&c), 0);
	CHECK_INT(conf_parse(&c, "t", text, strlen(text), err, sizeof(err)),
	          0);
	CHECK_STR(err, "");
	CHECK(mkdtemp(dir) != NULL);
	CHECK_INT(db_open(dir, &db), 0);
	if (!db) {
		conf_free(&c);
		return;
	}
	CHECK(webhook_wanted(&c, "push"));
	CHECK(webhook_wanted(&c, "new-release"));
	CHECK(!webhook_wanted(&c, "ping"));
	CHECK_INT(webhook_enqueue(db, &c, "upload", 0, "pypi", "p", "1", NULL),
	          0);
	CHECK_INT(webhook_enqueue(db, &c, "push", 1, "hub", "img", "v1", NULL),
	          0);
	CHECK_INT(webhook_enqueue(db, &c, "push", 1, "ghcr", "img", "v1",
	                          NULL), 0);
	CHECK_INT(db_outbox_due(db, (long long)time(NULL), 10, &rows, &n), 0);
	/* all: pypi, hub, ghcr; pushes: hub only */
	CHECK_INT(n, 4);
	db_outbox_free(rows, n);
	db_close(db);
	remove_db(dir);
	conf_free(&c);
}

/* What goes out: the stored body with timestamp and attempt first, and
 * its signature as a receiver computes it. */
T(body_and_signature)
{
	struct buf b;
	char sig[72], hex[65];

	buf_init(&b, 1 << 16);
	CHECK_INT(webhook_body(&b, "{\"id\":\"x\",\"event\":\"ping\"}",
	                       1700000000, 3), 0);
	CHECK_STR(b.data, "{\"timestamp\":1700000000,\"attempt\":3,"
	                  "\"id\":\"x\",\"event\":\"ping\"}");
	CHECK_INT(webhook_sign("k", b.data, b.len, sig), 0);
	CHECK_INT(hmac_sha256_hex("k", 1, b.data, b.len, hex), 0);
	CHECK(!strncmp(sig, "sha256=", 7));
	CHECK_STR(sig + 7, hex);
	/* Python: hmac.new(b"k", body, "sha256").hexdigest() */
	CHECK_STR(hex, "e454f7669a1931cf5d4ada673853e91317b0bf3c517d90f0bd32d4e970f06d07");
	buf_free(&b);
}

int main(void)
{
	RUN(queues_in_order);
	RUN(enqueue_filters);
	RUN(body_and_signature);
	return t_done();
}
