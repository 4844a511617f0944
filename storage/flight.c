#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "storage/blob.h"
#include "storage/flight.h"

int flight_locked(const char *tmp)
{
	int fd = open(tmp, O_RDONLY | O_CLOEXEC);
	int locked = 0;

	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0)
		locked = errno == EWOULDBLOCK;
	/* a LOCK_SH we got is released by close(); flock locks belong to
	 * this descriptor only, so the owner's lock is never touched */
	close(fd);
	return locked;
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
	 * tmp must still be unlocked, or someone got there first. */
	if (db_flight_get(db, key, &row) == 0 && strcmp(row.tmp, tmp) == 0 &&
	    !flight_locked(tmp)) {
		log_warn(0, key, "taking over from dead fetcher %ld (%s)",
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

int flight_claim(struct db *db, const char *data_dir, const char *key,
		 long long expect_size, int *owner, struct flight *f)
{
	struct db_flight row;
	int err;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->size = expect_size;
	snprintf(f->key, sizeof(f->key), "%s", key);
	*owner = 0;
	for (int tries = 0; tries < 5; tries++) {
		err = db_flight_get(db, key, &row);
		if (err == 0) {
			if (flight_locked(row.tmp)) {
				snprintf(f->tmp, sizeof(f->tmp), "%s",
					 row.tmp);
				f->size = row.size;
				return 0;
			}
			err = flight_reap(db, key, row.tmp);
			if (err)
				return err;
			continue;
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
	}
	log_error(0, key, "could not claim or follow the fetch");
	return EAGAIN;
}

int flight_done(struct db *db, struct flight *f)
{
	return db_flight_delete(db, f->key, f->tmp);
}

int flight_update(struct db *db, struct flight *f, long pid, long long size)
{
	f->size = size;
	return db_flight_set(db, f->key, f->tmp, pid, size);
}

static void sweep_claim(const char *key, const char *tmp, void *ctx)
{
	struct db *db = ((void **)ctx)[0];
	int *removed = ((void **)ctx)[1];

	if (!flight_locked(tmp) && flight_reap(db, key, tmp) == 0)
		(*removed)++;
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
		 * files old enough and unlocked are orphans */
		if (fstat(fd, &st) == 0 && now - st.st_mtime > 60 &&
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
