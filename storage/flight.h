/* flight: single-flight across processes.
 *
 * The first process to miss a key claims it: it creates a temp file in
 * DATA/tmp, takes flock(LOCK_EX) on it, and inserts a row (key, temp path,
 * pid, start) into the flights table. Others find the row and wait on the
 * owner, or tail its temp file. The lock dies with its holder, so a row
 * whose temp file is not locked belongs to a dead owner, and the next
 * claimant takes it over. An owner deletes its row before it lets go of the
 * lock, so "row present, lock free" never means "finished".
 */
#ifndef LARDER_FLIGHT_H
#define LARDER_FLIGHT_H

#include <limits.h>

#include "storage/db.h"

struct flight {
	char key[256];
	char tmp[PATH_MAX];   /* the owner's temp file */
	int fd;               /* owner: the locked temp file; waiter: -1 */
	long long size;       /* the size recorded on the row, -1 unknown */
};

/* Claims key. Sets *owner to 1 when this process now owns it (f->fd is a
 * new empty temp file, locked, opened read-write) or 0 when another live
 * process does (f->tmp names its file). expect_size goes on the row.
 * Returns 0 or an errno. */
int flight_claim(struct db *db, const char *data_dir, const char *key,
		 long long expect_size, int *owner, struct flight *f);

/* Returns 1 while the owner of f->tmp holds its lock, 0 once it has let go
 * (finished or died), checking with a fresh descriptor. */
int flight_locked(const char *tmp);

/* Same check on a descriptor the caller holds open on the temp file; it
 * keeps working after the file was renamed into the store. */
int flight_locked_fd(int fd);

/* Returns 1 when the flight's row still stands naming f->tmp, else 0; on
 * 1, f->size is refreshed from it. */
int flight_pending(struct db *db, struct flight *f);

/* Owner: deletes the row (the caller then commits or unlinks the temp file
 * and closes f->fd, which lets go of the lock). Returns 0 or EIO. */
int flight_done(struct db *db, struct flight *f);

/* Owner handing the lock to a child: records pid and size on the row.
 * Returns 0 or EIO. */
int flight_update(struct db *db, struct flight *f, long pid, long long size);

/* Removes a dead owner's row and temp file if its lock is still free.
 * Returns 0 or an errno. */
int flight_reap(struct db *db, const char *key, const char *tmp);

/* Cleans up after dead fetchers: claims whose temp file is unlocked, and
 * unlocked temp files in DATA/tmp older than a minute that no live claim
 * names. Returns the number of things removed. */
int flight_sweep(struct db *db, const char *data_dir);

/* Runs flight_sweep() when the last sweep (any process's) is older than
 * interval seconds. Returns what flight_sweep() did, or 0. */
int flight_sweep_due(struct db *db, const char *data_dir, long interval);

#endif
