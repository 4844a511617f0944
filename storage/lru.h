/* lru: when each blob was last handed out, recorded without a database
 * write, shared by every process of a store through DATA/lru.shm.
 *
 * The file is a fixed-size table mapped MAP_SHARED: a header (a magic
 * number, the slot count, the running total of the store's bytes and when
 * the collector last folded the table into the database) and LRU_SLOTS
 * slots of (key, time). The key is the first 64 bits of a blob's sha256
 * (never 0); a blob's slot is found by open addressing within LRU_PROBE
 * slots of its home. Every store is an atomic 64-bit store: a touch on
 * the warm path is a few loads and one store, no lock, no system call
 * but time().
 *
 * The approximation, on purpose:
 *   - two blobs whose hashes share their first 64 bits share a slot: the
 *     collector then treats both as used (it never makes a blob look
 *     older than it is);
 *   - when all LRU_PROBE slots near a blob's home hold other blobs, the
 *     one used longest ago gives its slot up; its time is lost unless the
 *     collector folded it into blobs.used_at before (it folds every run);
 *   - the running total counts every blob a process committed (a blob
 *     stored twice counts twice), and each collector run resets it to the
 *     inventory's sum: it may run high, never low, between runs.
 * A file of the wrong size or magic (torn, or from another build) is
 * replaced by a fresh one, published atomically; no times are lost that
 * the database has.
 *
 * One mapping per process (the functions use it implicitly); before
 * lru_open, or when it failed, they do nothing and read as empty.
 */
#ifndef LARDER_LRU_H
#define LARDER_LRU_H

#define LRU_SLOTS 65536
#define LRU_PROBE 16

/* Maps DATA/lru.shm for this process, making it when missing or not one
 * of ours. Calling it again for the same data directory does nothing.
 * Returns 0 or an errno (logged). */
int lru_open(const char *data_dir);

/* Returns 1 when this process has the table mapped, else 0. */
int lru_ready(void);

/* Unmaps the table (a forked child may keep the parent's). */
void lru_close(void);

/* Records that blob sha256 is in use now. */
void lru_touch(const char *sha256);

/* When blob sha256 was last touched (unix seconds), or 0 when the table
 * does not know. */
long long lru_get(const char *sha256);

/* Calls fn with the 16-hex-digit prefix and the time of every slot
 * touched at or after since. */
void lru_each(long long since,
              void (*fn)(const char prefix[17], long long at, void *ctx),
              void *ctx);

/* Adds a committed blob's size to the running total, and remembers in
 * this process that it committed one (lru_take_added). */
void lru_added(long long size);

/* Returns 1 when this process committed a blob since the last call, and
 * forgets it. */
int lru_take_added(void);

/* The running total of the store's bytes (see above); -1 when unknown. */
long long lru_bytes(void);

/* Sets the running total (a collector's reconciled sum) and the time the
 * table was folded into the database. */
void lru_reset(long long bytes, long long folded_at);

/* When the table was last folded into the database (0: never). */
long long lru_folded_at(void);

#endif
