#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* the module itself, for its lock (see lock_left_by_another_boot) */
#include "storage/stats.c"
#include "tests/unit/t.h"

static char dir[64];
static struct stats_snapshot snap;

static void fresh_dir(void)
{
	char path[128];

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/larder-stats-XXXXXX");
		if (!mkdtemp(dir))
			abort();
	}
	snprintf(path, sizeof(path), "%s/stats.shm", dir);
	unlink(path);
	stats_set_hour(0);
}

#define ROUNDS 100000

T(two_processes_lose_nothing)
{
	pid_t pid[2];
	int status;

	fresh_dir();
	CHECK_INT(stats_open(dir), 0);
	for (int p = 0; p < 2; p++) {
		pid[p] = fork();
		if (pid[p] == 0) {
			/* each child maps the file itself, as a worker does */
			if (stats_open(dir))
				_exit(1);
			for (int i = 0; i < ROUNDS; i++) {
				stats_request(STATS_FILE, STATS_HIT);
				stats_add(STATS_SERVED_BYTES, 3);
				if (i % 10 == 0)
					stats_top_add(STATS_TOP_PROJECTS,
					              p ? "numpy" : "requests");
			}
			_exit(0);
		}
	}
	for (int p = 0; p < 2; p++) {
		CHECK(waitpid(pid[p], &status, 0) == pid[p]);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	CHECK_INT(stats_read(&snap), 0);
	CHECK_INT(snap.requests[STATS_FILE][STATS_HIT], 2 * ROUNDS);
	CHECK_INT(snap.counter[STATS_SERVED_BYTES], 6 * ROUNDS);
	CHECK_INT(snap.hours[STATS_HOURS - 1].requests, 2 * ROUNDS);
	CHECK_INT(snap.hours[STATS_HOURS - 1].hits, 2 * ROUNDS);
	CHECK_INT(snap.hours[STATS_HOURS - 1].served_bytes, 6 * ROUNDS);
	CHECK_INT(snap.top_total[STATS_TOP_PROJECTS], 2 * ROUNDS / 10);
	CHECK_INT(snap.top[STATS_TOP_PROJECTS][0].count, ROUNDS / 10);
	CHECK_INT(snap.top[STATS_TOP_PROJECTS][1].count, ROUNDS / 10);
	CHECK_STR(snap.top[STATS_TOP_PROJECTS][0].name, "numpy");
	CHECK_STR(snap.top[STATS_TOP_PROJECTS][1].name, "requests");
	stats_close();
}

T(survives_reopen)
{
	fresh_dir();
	CHECK_INT(stats_open(dir), 0);
	stats_add(STATS_FETCHED_BYTES, 42);
	stats_close();
	CHECK_INT(stats_read(&snap), ENOENT);
	CHECK_INT(snap.counter[STATS_FETCHED_BYTES], 0);
	stats_add(STATS_FETCHED_BYTES, 1); /* nothing mapped: nothing */
	CHECK_INT(stats_open(dir), 0);
	CHECK_INT(stats_read(&snap), 0);
	CHECK_INT(snap.counter[STATS_FETCHED_BYTES], 42);
	stats_close();
}

static void spoil(const char *how)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/stats.shm", dir);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		abort();
	if (strcmp(how, "torn") == 0) {
		if (ftruncate(fd, 100) < 0)
			abort();
	} else if (pwrite(fd, "NOTMINE!", 8, 0) != 8) {
		abort();
	}
	close(fd);
}

T(torn_or_foreign_file_recreated)
{
	static const char *const hows[] = {"torn", "foreign"};

	for (int i = 0; i < 2; i++) {
		fresh_dir();
		CHECK_INT(stats_open(dir), 0);
		stats_request(STATS_PAGE, STATS_MISS);
		stats_close();
		spoil(hows[i]);
		CHECK_INT(stats_open(dir), 0);
		CHECK_INT(stats_read(&snap), 0);
		CHECK_INT(snap.requests[STATS_PAGE][STATS_MISS], 0);
		stats_request(STATS_PAGE, STATS_MISS);
		stats_close();
		CHECK_INT(stats_open(dir), 0);
		CHECK_INT(stats_read(&snap), 0);
		CHECK_INT(snap.requests[STATS_PAGE][STATS_MISS], 1);
		stats_close();
	}
}

T(ring_rolls_over_hours)
{
	const int64_t h0 = 490000;

	fresh_dir();
	CHECK_INT(stats_open(dir), 0);
	stats_set_hour(h0);
	stats_request(STATS_PAGE, STATS_MISS);
	stats_add(STATS_FETCHED_BYTES, 10);
	stats_set_hour(h0 + 1);
	stats_request(STATS_PAGE, STATS_HIT);
	stats_request(STATS_PAGE, STATS_HIT);
	stats_request(STATS_OTHER, STATS_NONE); /* not in the history */
	CHECK_INT(stats_read(&snap), 0);
	CHECK_INT(snap.hours[STATS_HOURS - 1].hour, h0 + 1);
	CHECK_INT(snap.hours[STATS_HOURS - 1].requests, 2);
	CHECK_INT(snap.hours[STATS_HOURS - 1].hits, 2);
	CHECK_INT(snap.hours[STATS_HOURS - 2].hour, h0);
	CHECK_INT(snap.hours[STATS_HOURS - 2].requests, 1);
	CHECK_INT(snap.hours[STATS_HOURS - 2].hits, 0);
	CHECK_INT(snap.hours[STATS_HOURS - 2].fetched_bytes, 10);
	/* a whole ring later, h0's slot is this hour's: h0 is gone, and
	 * h0 + 1 is the oldest hour shown */
	stats_set_hour(h0 + STATS_HOURS);
	stats_request(STATS_FILE, STATS_HIT);
	CHECK_INT(stats_read(&snap), 0);
	CHECK_INT(snap.hours[STATS_HOURS - 1].hour, h0 + STATS_HOURS);
	CHECK_INT(snap.hours[STATS_HOURS - 1].requests, 1);
	CHECK_INT(snap.hours[STATS_HOURS - 1].fetched_bytes, 0);
	CHECK_INT(snap.hours[0].hour, h0 + 1);
	CHECK_INT(snap.hours[0].requests, 2);
	/* the totals are not history: nothing rolled off them */
	CHECK_INT(snap.requests[STATS_PAGE][STATS_HIT], 2);
	CHECK_INT(snap.counter[STATS_FETCHED_BYTES], 10);
	/* a quiet hour in between is zeros, not the old hour's numbers */
	stats_set_hour(h0 + 2 * STATS_HOURS + 2);
	CHECK_INT(stats_read(&snap), 0);
	for (int i = 0; i < STATS_HOURS; i++)
		CHECK_INT(snap.hours[i].requests, 0);
	stats_close();
}

T(top_keeps_the_heavy_hitters)
{
	char name[32];

	fresh_dir();
	CHECK_INT(stats_open(dir), 0);
	/* 1000 names once each, among them "pip" 500 times and "uv" 300 */
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "project-%d", i);
		stats_top_add(STATS_TOP_PROJECTS, name);
		if (i % 2 == 0)
			stats_top_add(STATS_TOP_PROJECTS, "pip");
		if (i % 10 < 3)
			stats_top_add(STATS_TOP_PROJECTS, "uv");
	}
	stats_top_add(STATS_TOP_IMAGES, "hub/library/python");
	CHECK_INT(stats_read(&snap), 0);
	CHECK_STR(snap.top[STATS_TOP_PROJECTS][0].name, "pip");
	CHECK_STR(snap.top[STATS_TOP_PROJECTS][1].name, "uv");
	CHECK(snap.top[STATS_TOP_PROJECTS][0].count -
	          snap.top[STATS_TOP_PROJECTS][0].error <=
	      500);
	CHECK(snap.top[STATS_TOP_PROJECTS][0].count >= 500);
	CHECK_INT(snap.top_total[STATS_TOP_PROJECTS], 1800);
	CHECK_STR(snap.top[STATS_TOP_IMAGES][0].name, "hub/library/python");
	CHECK_INT(snap.top[STATS_TOP_IMAGES][0].count, 1);
	CHECK_STR(snap.top[STATS_TOP_IMAGES][1].name, "");
	stats_close();
}

/* A lock left held by a holder the kernel never saw die (the machine went
 * down, the file stayed): a child's lock word, copied back after it went.
 * Within that boot an update gives up instead of hanging; the first open
 * of a new boot makes the lock again. */
T(lock_left_by_another_boot)
{
	pthread_mutex_t held;
	struct timespec t0, t1;
	int pfd[2], status, found = 0;
	pid_t pid;

	fresh_dir();
	CHECK_INT(stats_open(dir), 0);
	CHECK_INT(pipe(pfd), 0);
	pid = fork();
	if (pid == 0) {
		pthread_mutex_lock(&map->lock);
		if (write(pfd[1], &map->lock, sizeof(map->lock)) < 0)
			_exit(1);
		pthread_mutex_unlock(&map->lock);
		_exit(0);
	}
	CHECK_INT(read(pfd[0], &held, sizeof(held)), (long)sizeof(held));
	waitpid(pid, &status, 0);
	close(pfd[0]);
	close(pfd[1]);
	memcpy(&map->lock, &held, sizeof(held));
	alarm(20); /* a hang fails the test rather than the build */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	stats_top_add(STATS_TOP_PROJECTS, "while-stuck");
	CHECK_INT(stats_read(&snap), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(t1.tv_sec - t0.tv_sec < 2);
	/* a new boot */
	snprintf(map->boot, sizeof(map->boot), "%s", "a-boot-gone-by");
	stats_close();
	CHECK_INT(stats_open(dir), 0);
	stats_top_add(STATS_TOP_PROJECTS, "after-boot");
	CHECK_INT(stats_read(&snap), 0);
	alarm(0);
	for (int i = 0; i < STATS_TOP_SLOTS; i++)
		if (strcmp(snap.top[STATS_TOP_PROJECTS][i].name, "after-boot") == 0)
			found = 1;
	CHECK_INT(found, 1);
	stats_close();
}

int main(void)
{
	RUN(two_processes_lose_nothing);
	RUN(survives_reopen);
	RUN(torn_or_foreign_file_recreated);
	RUN(ring_rolls_over_hours);
	RUN(top_keeps_the_heavy_hitters);
	RUN(lock_left_by_another_boot);
	fresh_dir();
	rmdir(dir);
	return t_done();
}
