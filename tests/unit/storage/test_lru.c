#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "storage/blob.h"
#include "storage/db/db_sql.h"
#include "storage/gc.h"
#include "storage/lru.h"
#include "tests/unit/t.h"

static char dir[] = "/tmp/larder-test-lru-XXXXXX";
static char path[512];

/* A hash whose first 16 hex digits are prefix, the rest from tail. */
static void sha_of(char out[65], unsigned long long prefix, int tail)
{
	snprintf(out, 65, "%016llx%048d", prefix, tail);
}

static int n_seen;
static long long seen_at;

static void count(const char prefix[17], long long at, void *ctx)
{
	(void)ctx;
	(void)prefix;
	n_seen++;
	seen_at = at;
}

/* A touch is seen by lru_get and lru_each, in this process and in a
 * child that maps the same file. */
T(touch_and_get)
{
	char a[65], b[65];
	long long now = (long long)time(NULL);
	pid_t pid;
	int status = -1;

	sha_of(a, 0x1234, 1);
	sha_of(b, 0x5678, 2);
	CHECK_INT(lru_open(dir), 0);
	CHECK_INT(lru_get(a), 0);
	lru_touch(a);
	CHECK(lru_get(a) >= now);
	CHECK_INT(lru_get(b), 0);
	n_seen = 0;
	lru_each(0, count, NULL);
	CHECK_INT(n_seen, 1);
	n_seen = 0;
	lru_each(now + 100, count, NULL);
	CHECK_INT(n_seen, 0);
	pid = fork();
	if (pid == 0) {
		lru_close();
		if (lru_open(dir) || lru_get(a) < now)
			_exit(1);
		lru_touch(b);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	CHECK_INT(status, 0);
	CHECK(lru_get(b) >= now);
	/* a bad name is ignored */
	lru_touch("not-a-hash-at-all");
	CHECK_INT(lru_get("not-a-hash-at-all"), 0);
}

/* More blobs than LRU_PROBE with the same home: the one used longest ago
 * gives its slot up, the others keep theirs. */
T(probe_overflow)
{
	char sha[LRU_PROBE + 1][65];

	/* keys k * LRU_SLOTS + 7 all have home 7 */
	for (int i = 0; i <= LRU_PROBE; i++)
		sha_of(sha[i], (unsigned long long)(i + 1) * LRU_SLOTS + 7, i);
	for (int i = 0; i < LRU_PROBE; i++)
		lru_touch(sha[i]);
	for (int i = 0; i < LRU_PROBE; i++)
		CHECK(lru_get(sha[i]) > 0);
	lru_touch(sha[LRU_PROBE]);
	CHECK(lru_get(sha[LRU_PROBE]) > 0);
	n_seen = 0;
	for (int i = 0; i < LRU_PROBE; i++)
		n_seen += lru_get(sha[i]) > 0;
	CHECK_INT(n_seen, LRU_PROBE - 1);
}

/* The running total and the process's "committed" flag. */
T(bytes)
{
	CHECK_INT(lru_bytes(), -1); /* unknown until a collector said */
	lru_added(10);
	CHECK_INT(lru_bytes(), -1);
	CHECK_INT(lru_take_added(), 1);
	CHECK_INT(lru_take_added(), 0);
	lru_reset(100, 42);
	lru_added(10);
	CHECK_INT(lru_bytes(), 110);
	CHECK_INT(lru_folded_at(), 42);
}

/* A torn file (wrong size) and a foreign one (wrong magic) are made
 * anew; what they held is gone. */
T(torn_and_foreign)
{
	char a[65];
	int fd;

	sha_of(a, 0x99, 9);
	lru_touch(a);
	lru_close();
	CHECK_INT(truncate(path, 100), 0);
	CHECK_INT(lru_open(dir), 0);
	CHECK_INT(lru_get(a), 0);
	lru_touch(a);
	CHECK(lru_get(a) > 0);
	lru_close();
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0);
	CHECK_INT(pwrite(fd, "garbage!", 8, 0), 8);
	close(fd);
	CHECK_INT(lru_open(dir), 0);
	CHECK_INT(lru_get(a), 0);
	CHECK_INT(lru_bytes(), -1);
	/* closed, everything reads as empty and does nothing */
	lru_close();
	lru_touch(a);
	CHECK_INT(lru_get(a), 0);
	CHECK_INT(lru_bytes(), -1);
}

/* What the commit hook saw of the store at each commit of gc's connection
 * that forgot a blob's row. */
struct seen_commit {
	const char *dir;
	char sha[65];
	int forgot;        /* a row of blobs was deleted in this transaction */
	int evicting;      /* commits that forgot it */
	int file_at_commit; /* ... with its file still in the store */
};

static void on_update(void *ctx, int op, const char *db, const char *table,
		      sqlite3_int64 rowid)
{
	struct seen_commit *s = ctx;

	(void)db;
	(void)rowid;
	if (op == SQLITE_DELETE && strcmp(table, "blobs") == 0)
		s->forgot = 1;
}

static int on_commit(void *ctx)
{
	struct seen_commit *s = ctx;

	if (s->forgot) {
		s->evicting++;
		s->file_at_commit += blob_exists(s->dir, s->sha);
	}
	s->forgot = 0;
	return 0;
}

static void on_rollback(void *ctx)
{
	((struct seen_commit *)ctx)->forgot = 0;
}

/* gc decides and unlinks under one write lock: when the transaction that
 * forgets a blob commits, its file is already gone. (It unlinked after
 * the commit: an upload or a page rendering of the same bytes that took
 * the lock in between found the file, named it, and lost it to the
 * unlink: issue 28, items 1 and 2.) */
T(evict_unlinks_under_the_lock)
{
	char gdir[] = "/tmp/larder-test-gc-XXXXXX", sha[65];
	struct gc_opts o = {.max_size = 1, .grace = 60, .wait = 1};
	struct seen_commit seen = {0};
	struct gc_report r;
	struct db *db = NULL;

	if (!mkdtemp(gdir)) {
		CHECK(!"mkdtemp failed");
		return;
	}
	CHECK_INT(blob_init(gdir), 0);
	CHECK_INT(lru_open(gdir), 0);
	CHECK_INT(db_open(gdir, &db), 0);
	CHECK_INT(blob_put(gdir, "evict me", 8, sha), 0);
	/* last used long ago: due for eviction */
	CHECK_INT(db_blob_add_at(db, sha, 8, 1000), 0);
	seen.dir = gdir;
	snprintf(seen.sha, sizeof(seen.sha), "%s", sha);
	sqlite3_update_hook(db->conn, on_update, &seen);
	sqlite3_commit_hook(db->conn, on_commit, &seen);
	sqlite3_rollback_hook(db->conn, on_rollback, &seen);
	CHECK_INT(gc_run(db, gdir, &o, &r), 0);
	CHECK_INT(r.evicted, 1);
	CHECK_INT(blob_exists(gdir, sha), 0);
	CHECK_INT(seen.evicting, 1);
	CHECK_INT(seen.file_at_commit, 0);
	sqlite3_commit_hook(db->conn, NULL, NULL);
	sqlite3_update_hook(db->conn, NULL, NULL);
	sqlite3_rollback_hook(db->conn, NULL, NULL);
	db_close(db);
	lru_close();
	snprintf(path, sizeof(path), "rm -rf %s", gdir);
	CHECK_INT(system(path), 0);
	snprintf(path, sizeof(path), "%s/lru.shm", dir);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/lru.shm", dir);
	RUN(touch_and_get);
	RUN(probe_overflow);
	RUN(bytes);
	RUN(torn_and_foreign);
	RUN(evict_unlinks_under_the_lock);
	unlink(path);
	rmdir(dir);
	return t_done();
}
