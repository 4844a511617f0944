#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "storage/blob.h"
#include "storage/flight.h"

int flight_key(char out[FLIGHT_KEY_MAX + 1], const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, FLIGHT_KEY_MAX + 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n > FLIGHT_KEY_MAX) {
		out[0] = '\0';
		return ENAMETOOLONG;
	}
	return 0;
}

enum flight_lock flight_locked(const char *tmp)
{
	int fd = open(tmp, O_RDONLY | O_CLOEXEC);
	enum flight_lock state = FLIGHT_FREE;
	int err;

	if (fd < 0)
		return FLIGHT_UNKNOWN; /* errno says why */
	if (flock(fd, LOCK_SH | LOCK_NB) < 0)
		state = errno == EWOULDBLOCK ? FLIGHT_HELD : FLIGHT_UNKNOWN;
	/* a LOCK_SH we got is released by close(); flock locks belong to
	 * this descriptor only, so the owner's lock is never touched */
	err = errno;
	close(fd);
	errno = err;
	return state;
}

int flight_locked_fd(int fd)
{
	if (flock(fd, LOCK_SH | LOCK_NB) < 0)
		return errno == EWOULDBLOCK;
	flock(fd, LOCK_UN);
	return 0;
}

int flight_pending(struct db *db, struct flight *f)
{
	struct db_flight row;

	if (db_flight_get(db, f->key, &row))
		return 0;
	if (strcmp(row.tmp, f->tmp) != 0)
		return 0;
	f->size = row.size;
	snprintf(f->sha256, sizeof(f->sha256), "%s", row.sha256);
	return 1;
}

int flight_reap(struct db *db, const char *key, const char *tmp)
{
	struct db_flight row;
	int err;

	err = db_begin(db);
	if (err)
		return err;
	/* Re-check inside the transaction: the row must still name tmp and
	 * tmp must still be tested unlocked, or someone got there first. */
	if (db_flight_get(db, key, &row) == 0 && strcmp(row.tmp, tmp) == 0 &&
	    flight_locked(tmp) == FLIGHT_FREE) {
		log_warn(0, key, "taking over from dead owner %ld (%s)",
			 row.pid, tmp);
		err = db_flight_delete(db, key, tmp);
		if (!err)
			unlink(tmp);
	}
	if (err) {
		db_rollback(db);
		return err;
	}
	return db_commit(db);
}

/* Makes f follow the claim in row. */
static void follow_row(struct flight *f, const struct db_flight *row)
{
	snprintf(f->tmp, sizeof(f->tmp), "%s", row->tmp);
	f->size = row->size;
	snprintf(f->sha256, sizeof(f->sha256), "%s", row->sha256);
}

int flight_claim(struct db *db, const char *data_dir, const char *key,
		 long long expect_size, int *owner, struct flight *f)
{
	struct db_flight row;
	int err, unknown = 0;

	memset(f, 0, sizeof(f[0]));
	f->fd = -1;
	f->size = expect_size;
	*owner = 0;
	if (strlen(key) > FLIGHT_KEY_MAX)
		return ENAMETOOLONG;
	strcpy(f->key, key);
	for (int tries = 0; tries < 5;) {
		err = db_flight_get(db, key, &row);
		if (err == 0) {
			switch (flight_locked(row.tmp)) {
			case FLIGHT_HELD:
				follow_row(f, &row);
				return 0;
			case FLIGHT_UNKNOWN:
				/* a verified file already renamed into the
				 * store: the row is about to go; follow it
				 * to the blob */
				if (errno == ENOENT && row.sha256[0]) {
					follow_row(f, &row);
					return 0;
				}
				/* never taken for a dead owner: wait */
				if (++unknown > 100) {
					log_error(errno, key, "cannot tell the "
						  "state of %s", row.tmp);
					return EAGAIN;
				}
				usleep(2000);
				continue;
			case FLIGHT_FREE:
				err = flight_reap(db, key, row.tmp);
				if (err)
					return err;
				tries++;
				continue;
			}
		}
		if (err != ENOENT)
			return err;
		/* The file exists and is locked before the row names it. */
		err = blob_tmp(data_dir, f->tmp, sizeof(f->tmp), &f->fd);
		if (err)
			return err;
		if (flock(f->fd, LOCK_EX | LOCK_NB) < 0) {
			err = errno;
			goto drop;
		}
		err = db_flight_insert(db, key, f->tmp, (long)getpid(),
				       (long long)time(NULL), expect_size);
		if (err == 0) {
			*owner = 1;
			return 0;
		}
drop:
		unlink(f->tmp);
		close(f->fd);
		f->fd = -1;
		f->tmp[0] = '\0';
		if (err != EEXIST)
			return err;
		tries++;
	}
	log_error(0, key, "could not claim or follow the fetch");
	return EAGAIN;
}

int flight_done(struct db *db, struct flight *f)
{
	return db_flight_delete(db, f->key, f->tmp);
}

void flight_drop(struct db *db, struct flight *f)
{
	flight_done(db, f);
	unlink(f->tmp);
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

/* A row change has no file event of its own: touching the temp file
 * wakes the followers watching it (inotify IN_ATTRIB) at once rather than
 * at their next poll. */
static int touched(struct flight *f, int err)
{
	if (!err && f->fd >= 0)
		futimens(f->fd, NULL);
	return err;
}

int flight_update(struct db *db, struct flight *f, long long size)
{
	f->size = size;
	return touched(f, db_flight_set(db, f->key, f->tmp, size));
}

int flight_verified(struct db *db, struct flight *f, const char *sha256)
{
	snprintf(f->sha256, sizeof(f->sha256), "%s", sha256);
	return touched(f, db_flight_set_sha(db, f->key, f->tmp, sha256));
}

static void sweep_claim(const char *key, const struct db_flight *row,
			void *ctx)
{
	struct db *db = ((void **)ctx)[0];
	int *removed = ((void **)ctx)[1];

	switch (flight_locked(row->tmp)) {
	case FLIGHT_FREE:
		if (flight_reap(db, key, row->tmp) == 0)
			(*removed)++;
		break;
	case FLIGHT_UNKNOWN:
		/* a temp file gone for a minute: its owner died between
		 * publishing it and deleting the row */
		if (errno == ENOENT && time(NULL) - row->started > 60 &&
		    db_flight_delete(db, key, row->tmp) == 0) {
			log_warn(0, key, "removing a claim whose file is gone");
			(*removed)++;
		}
		break;
	case FLIGHT_HELD:
		break;
	}
}

/* Returns 1 when the process whose pid a temp file's name begins with
 * (blob_tmp's <pid>.<random>.part) no longer exists: what it was writing
 * when it was killed, outside a claim (a page rendering, or a claim's file
 * before its row went in), need not wait out the age limit. */
static int maker_gone(const char *name)
{
	char *end;
	long pid = strtol(name, &end, 10);

	return end != name && *end == '.' && pid > 0 &&
	       kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

int flight_sweep(struct db *db, const char *data_dir)
{
	char dir[PATH_MAX], path[PATH_MAX];
	int removed = 0;
	void *ctx[2] = {db, &removed};
	struct dirent *e;
	struct stat st;
	time_t now = time(NULL);
	DIR *d;
	int fd;

	db_flight_each(db, sweep_claim, ctx);
	snprintf(dir, sizeof(dir), "%s/tmp", data_dir);
	d = opendir(dir);
	if (!d)
		return removed;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);

		if (len < 6 || strcmp(e->d_name + len - 5, ".part") != 0)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
				     e->d_name) >= sizeof(path))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* a claimant locks its file right after creating it: only
		 * files old enough and unlocked are orphans, or unlocked ones
		 * whose maker (the pid the name begins with) is gone */
		if (fstat(fd, &st) == 0 &&
		    (now - st.st_mtime > 60 || maker_gone(e->d_name)) &&
		    flock(fd, LOCK_EX | LOCK_NB) == 0) {
			log_warn(0, path, "removing an orphaned temp file");
			unlink(path);
			removed++;
		}
		close(fd);
	}
	closedir(d);
	return removed;
}

int flight_sweep_due(struct db *db, const char *data_dir, long interval)
{
	char stamp[PATH_MAX];
	struct stat st;
	time_t now = time(NULL);
	int fd, n;

	snprintf(stamp, sizeof(stamp), "%s/tmp/.swept", data_dir);
	if (stat(stamp, &st) == 0 && now - st.st_mtime < interval)
		return 0;
	fd = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return 0;
	/* whoever gets the lock sweeps; the others go on */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return 0;
	}
	futimens(fd, NULL);
	n = flight_sweep(db, data_dir);
	close(fd);
	return n;
}

/* The longest flight_wait() sleeps between two looks when it watches
 * the owner's file (a wake-up it could miss: the file was gone before the
 * watch), and the longest step of the polling it does without a watch. */
#define WAIT_LOOK_MS 50

static long long wait_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The owner lets go of its claim by closing its temp file (after renaming
 * or unlinking it; a dead owner's close is the kernel's): an inotify watch
 * on the file wakes the waiter then. Polling with growing steps (2, 4, 8,
 * ... 50 ms) woke it up to twice as late as the owner finished: a page or
 * a manifest that took 35 ms came to its waiters at 62 ms. */
int flight_wait(struct db *db, struct flight *f, long max_ms)
{
	long long start = wait_now_ms(), left;
	long step = 2;
	char ev[4096];
	int in, rc = 1;

	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (in >= 0 &&
	    inotify_add_watch(in, f->tmp, IN_CLOSE_WRITE | IN_ATTRIB |
					      IN_MOVE_SELF | IN_DELETE_SELF) < 0) {
		close(in);
		in = -1;
	}
	while (flight_pending(db, f) && flight_locked(f->tmp) != FLIGHT_FREE) {
		left = max_ms - (wait_now_ms() - start);
		if (left <= 0) {
			rc = 0;
			break;
		}
		if (in >= 0) {
			struct pollfd p = {.fd = in, .events = POLLIN};

			if (poll(&p, 1, left < WAIT_LOOK_MS ? (int)left :
					WAIT_LOOK_MS) > 0)
				while (read(in, ev, sizeof(ev)) > 0) {
				}
			continue;
		}
		usleep((useconds_t)(step < left ? step : left) * 1000);
		if (step < WAIT_LOOK_MS)
			step *= 2;
	}
	if (in >= 0)
		close(in);
	return rc;
}
