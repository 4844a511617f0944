/* flight: single-flight across processes.
 *
 * The first process to miss a key claims it: it creates a temp file in
 * DATA/tmp, takes flock(LOCK_EX) on it, and inserts a row (key, temp path,
 * pid, start) into the flights table. Others find the row and wait on the
 * owner, or tail its temp file. The lock dies with its holder, so a row
 * whose temp file is tested and found unlocked belongs to a dead owner, and
 * the next claimant takes it over. An owner deletes its row before it lets
 * go of the lock, so "row present, lock free" never means "finished".
 *
 * An owner that has verified what it fetched records the hash on its row
 * (flight_verified) before it publishes the blob, so followers can finish
 * their clients without waiting for the fsync. Its temp file is renamed
 * into the store before the row goes: a row whose temp file has vanished
 * and names a verified hash is a finished fetch whose row is about to go
 * (or whose owner died just then).
 */
#ifndef LARDER_FLIGHT_H
#define LARDER_FLIGHT_H

#include <limits.h>

#include "storage/db/db.h"

/* The longest key: "page:" + a 100-byte index + ':' + a 200-byte project
 * fits, and so does "blob:" or "meta:" + a sha256. */
#define FLIGHT_KEY_MAX 320

struct flight {
	char key[FLIGHT_KEY_MAX + 1];
	char tmp[PATH_MAX];   /* the owner's temp file */
	int fd;               /* owner: the locked temp file; waiter: -1 */
	long long size;       /* the size recorded on the row, -1 unknown */
	char sha256[65];      /* the verified hash on the row, "" before */
};

/* Writes a key to out from fmt. Returns 0, or ENAMETOOLONG when it would
 * be longer than FLIGHT_KEY_MAX (out is then ""). */
int flight_key(char out[FLIGHT_KEY_MAX + 1], const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Claims key (as flight_key() made it). Sets *owner to 1 when this process
 * now owns it (f->fd is a new empty temp file, locked, opened read-write)
 * or 0 when another live process does (f->tmp names its file, f->size and
 * f->sha256 what its row says). expect_size goes on the row. Returns 0,
 * ENAMETOOLONG for a key that is too long, EAGAIN when the state of the
 * claim could not be told for a while (its temp file cannot be opened:
 * EMFILE, EACCES), or another errno. */
int flight_claim(struct db *db, const char *data_dir, const char *key,
		 long long expect_size, int *owner, struct flight *f);

enum flight_lock {
	FLIGHT_FREE = 0,     /* tested and found free: finished or dead */
	FLIGHT_HELD = 1,     /* the owner is alive */
	FLIGHT_UNKNOWN = -1, /* the file could not be opened: no verdict */
};

/* Tells whether the owner of the temp file tmp holds its lock, testing
 * with a fresh descriptor. */
enum flight_lock flight_locked(const char *tmp);

/* Same check on a descriptor the caller holds open on the temp file; it
 * keeps working after the file was renamed into the store. Returns 1 or
 * 0. */
int flight_locked_fd(int fd);

/* Returns 1 when the flight's row still stands naming f->tmp, else 0; on
 * 1, f->size and f->sha256 are refreshed from it. */
int flight_pending(struct db *db, struct flight *f);

/* Waits while another process owns f (a claim that is no download: a
 * page, a manifest, a token), until its row goes, its lock is let go, or
 * max_ms pass; woken by inotify when the owner closes, renames or unlinks
 * its temp file (polled every 50 ms when the file cannot be watched).
 * Returns 1 when that claim is over, 0 when time ran out. */
int flight_wait(struct db *db, struct flight *f, long max_ms);

/* Owner: deletes the row (the caller then unlinks the temp file, or has
 * renamed it, and closes f->fd, which lets go of the lock). Returns 0 or
 * EIO. */
int flight_done(struct db *db, struct flight *f);

/* Owner: deletes the row, unlinks the temp file and closes it: a claim
 * given up without a fetch. */
void flight_drop(struct db *db, struct flight *f);

/* Owner: records the size the download will have. Returns 0 or EIO. */
int flight_update(struct db *db, struct flight *f, long long size);

/* Owner: records that the bytes in the temp file hash to sha256 (and were
 * what was asked for). Returns 0 or EIO. */
int flight_verified(struct db *db, struct flight *f, const char *sha256);

/* Removes a dead owner's row and temp file if its lock is still tested
 * free. Returns 0 or an errno. */
int flight_reap(struct db *db, const char *key, const char *tmp);

/* Cleans up after dead owners: claims whose temp file is unlocked (or gone
 * for a minute), and unlocked temp files in DATA/tmp older than a minute
 * that no live claim names. Returns the number of things removed. */
int flight_sweep(struct db *db, const char *data_dir);

/* Runs flight_sweep() when the last sweep (any process's) is older than
 * interval seconds. Returns what flight_sweep() did, or 0. */
int flight_sweep_due(struct db *db, const char *data_dir, long interval);

#endif
