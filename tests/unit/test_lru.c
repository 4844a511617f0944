#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/lru.shm", dir);
	RUN(touch_and_get);
	RUN(probe_overflow);
	RUN(bytes);
	RUN(torn_and_foreign);
	unlink(path);
	rmdir(dir);
	return t_done();
}
