#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/hash/sha256.h"
#include "storage/blob.h"
#include "storage/db/db_sql.h"
#include "storage/fill.h"
#include "storage/flight.h"
#include "tests/unit/t.h"

/* A fresh data directory with its database. */
static struct db *store(char *dir)
{
	struct db *db = NULL;

	if (!mkdtemp(dir) || blob_init(dir) || db_open(dir, &db)) {
		CHECK(!"cannot make a store");
		return NULL;
	}
	return db;
}

static void unstore(const char *dir, struct db *db)
{
	char cmd[600];

	db_close(db);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "  could not remove %s\n", dir);
}

static int rows(struct db *db, const char *key)
{
	struct db_flight row;

	return db_flight_get(db, key, &row) == 0;
}

T(claim_follow_done)
{
	char dir[] = "/tmp/larder-test-flight-XXXXXX";
	struct db *db = store(dir);
	struct flight a, b;
	int owner;

	if (!db)
		return;
	CHECK_INT(flight_claim(db, dir, "blob:x", 10, &owner, &a), 0);
	CHECK_INT(owner, 1);
	CHECK(a.fd >= 0);
	CHECK_INT(flight_locked(a.tmp), FLIGHT_HELD);
	/* a second claimant follows */
	CHECK_INT(flight_claim(db, dir, "blob:x", 10, &owner, &b), 0);
	CHECK_INT(owner, 0);
	CHECK_STR(b.tmp, a.tmp);
	CHECK_INT(b.size, 10);
	CHECK_INT(flight_verified(db, &a, "abc"), 0);
	CHECK_INT(flight_pending(db, &b), 1);
	CHECK_STR(b.sha256, "abc");
	flight_drop(db, &a);
	CHECK_INT(rows(db, "blob:x"), 0);
	CHECK_INT(flight_locked(a.tmp), FLIGHT_UNKNOWN);
	unstore(dir, db);
}

/* A row whose temp file cannot be opened is no proof that its owner
 * died: the owner renames its file into the store a moment before it
 * deletes its row, and open() also fails on EMFILE or EACCES. Only a lock
 * tested and found free means a dead owner. */
T(unopenable_temp_file_is_not_a_dead_owner)
{
	char dir[] = "/tmp/larder-test-flight-XXXXXX";
	struct db *db = store(dir);
	char gone[600];
	struct flight f;
	int owner;

	if (!db)
		return;
	snprintf(gone, sizeof(gone), "%s/tmp/1.0000000000000001.part", dir);
	/* published and verified: the row is about to go; follow it */
	CHECK_INT(db_flight_insert(db, "meta:y", gone, 1, time(NULL), -1), 0);
	CHECK_INT(db_flight_set_sha(db, "meta:y", gone, "feed"), 0);
	CHECK_INT(flight_claim(db, dir, "meta:y", -1, &owner, &f), 0);
	CHECK_INT(owner, 0);
	CHECK_STR(f.sha256, "feed");
	CHECK_INT(rows(db, "meta:y"), 1);
	/* not verified: no verdict; never taken over, the row stays */
	CHECK_INT(db_flight_insert(db, "meta:z", gone, 1, time(NULL), -1), 0);
	CHECK_INT(flight_claim(db, dir, "meta:z", -1, &owner, &f), EAGAIN);
	CHECK_INT(owner, 0);
	CHECK_INT(rows(db, "meta:z"), 1);
	/* a minute on, the sweep takes such a row for a crash's leftover */
	CHECK_INT(db_flight_delete(db, "meta:z", gone), 0);
	CHECK_INT(db_flight_insert(db, "meta:z", gone, 1, time(NULL) - 120, -1),
		  0);
	CHECK(flight_sweep(db, dir) >= 1);
	CHECK_INT(rows(db, "meta:z"), 0);
	unstore(dir, db);
}

/* A temp file outside any claim (a page rendering, or a claim's file
 * before its row): swept at once when its maker is gone, never while it
 * lives (unless a minute old). */
T(unclaimed_temp_of_a_dead_maker)
{
	char dir[] = "/tmp/larder-test-flight-XXXXXX";
	struct db *db = store(dir);
	char dead[600], live[600];
	pid_t pid;
	int fd;

	if (!db)
		return;
	pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	snprintf(dead, sizeof(dead), "%s/tmp/%ld.00000000000000aa.part", dir,
		 (long)pid);
	snprintf(live, sizeof(live), "%s/tmp/%ld.00000000000000bb.part", dir,
		 (long)getpid());
	fd = open(dead, O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0);
	close(fd);
	fd = open(live, O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0);
	close(fd);
	CHECK_INT(flight_sweep(db, dir), 1);
	CHECK_INT(access(dead, F_OK), -1);
	CHECK_INT(access(live, F_OK), 0);
	unstore(dir, db);
}

T(dead_owner_is_taken_over)
{
	char dir[] = "/tmp/larder-test-flight-XXXXXX";
	struct db *db = store(dir);
	char tmp[600];
	struct flight f;
	int owner, fd;

	if (!db)
		return;
	snprintf(tmp, sizeof(tmp), "%s/tmp/2.0000000000000002.part", dir);
	fd = open(tmp, O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0);
	close(fd); /* nobody holds its lock */
	CHECK_INT(db_flight_insert(db, "blob:w", tmp, 999999, time(NULL), 5), 0);
	CHECK_INT(flight_claim(db, dir, "blob:w", 5, &owner, &f), 0);
	CHECK_INT(owner, 1);
	CHECK(strcmp(f.tmp, tmp) != 0);
	CHECK(access(tmp, F_OK) != 0); /* the dead one's file is gone */
	flight_drop(db, &f);
	unstore(dir, db);
}

/* One key length, checked once: the longest page key (a 100-byte index, a
 * 200-byte project) fits whole, and a longer one is refused, never cut to
 * a key whose row nobody deletes. */
T(key_lengths)
{
	char dir[] = "/tmp/larder-test-flight-XXXXXX";
	struct db *db = store(dir);
	char index[101], project[201], key[FLIGHT_KEY_MAX + 1];
	char longer[FLIGHT_KEY_MAX + 2];
	struct flight f;
	int owner;

	if (!db)
		return;
	memset(index, 'i', 100);
	index[100] = '\0';
	memset(project, 'p', 200);
	project[200] = '\0';
	CHECK_INT(flight_key(key, "page:%s:%s", index, project), 0);
	CHECK_INT(strlen(key), 306);
	CHECK_INT(flight_claim(db, dir, key, -1, &owner, &f), 0);
	CHECK_INT(owner, 1);
	CHECK_STR(f.key, key);
	CHECK_INT(rows(db, key), 1);
	flight_drop(db, &f);
	CHECK_INT(rows(db, key), 0);
	memset(longer, 'k', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	CHECK_INT(flight_key(key, "%s", longer), ENAMETOOLONG);
	CHECK_STR(key, "");
	CHECK_INT(flight_claim(db, dir, longer, -1, &owner, &f), ENAMETOOLONG);
	unstore(dir, db);
}

/* What the tracer below does: unlinks blob sha as the first BEGIN starts,
 * as a collector would between fill's publish and its transaction. */
struct thief {
	const char *dir;
	char sha[65];
	int struck;
};

static int steal_at_begin(unsigned type, void *ctx, void *p, void *x)
{
	struct thief *t = ctx;
	char path[512];

	(void)type;
	(void)x;
	if (t->struck ||
	    strncmp(sqlite3_sql((sqlite3_stmt *)p), "BEGIN", 5) != 0)
		return 0;
	if (blob_path(t->dir, t->sha, path, sizeof(path)) == 0 &&
	    unlink(path) == 0)
		t->struck = 1;
	return 0;
}

/* A blob a collector takes after fill published it and before the
 * transaction that names it is put again inside that transaction: the
 * inventory never names a missing file (issue 28: fill_run and fill_made
 * published, then settled outside the collectors' lock). */
T(fill_keeps_a_blob_taken_before_its_row)
{
	char dir[] = "/tmp/larder-test-fill-XXXXXX", sha[65], err[256];
	const char bytes[] = "made here, taken by a collector";
	struct db *db = store(dir);
	struct thief t = {0};
	struct flight f;
	int owner;

	if (!db)
		return;
	t.dir = dir;
	CHECK_INT(sha256_hex(bytes, sizeof(bytes) - 1, t.sha), 0);
	CHECK_INT(flight_claim(db, dir, "made:x", 10, &owner, &f), 0);
	CHECK_INT(owner, 1);
	sqlite3_trace_v2(db->conn, SQLITE_TRACE_STMT, steal_at_begin, &t);
	CHECK_INT(fill_made(db, dir, &f, bytes, sizeof(bytes) - 1, NULL, 0,
			    NULL, sha, err, sizeof(err)), 0);
	sqlite3_trace_v2(db->conn, 0, NULL, NULL);
	CHECK_INT(t.struck, 1);
	CHECK_STR(sha, t.sha);
	CHECK_INT(blob_exists(dir, sha), 1);
	unstore(dir, db);
}

int main(void)
{
	RUN(claim_follow_done);
	RUN(unopenable_temp_file_is_not_a_dead_owner);
	RUN(unclaimed_temp_of_a_dead_maker);
	RUN(dead_owner_is_taken_over);
	RUN(key_lengths);
	RUN(fill_keeps_a_blob_taken_before_its_row);
	return t_done();
}
