/* blob: the content-addressed store, DATA/blobs/sha256/ab/cd/<hex>.
 *
 * A blob is written to a temp file under DATA/tmp (same filesystem),
 * fsynced, renamed into place and its directory fsynced; readers never
 * lock and never see half a file. A blob's name is its sha256.
 *
 * A page rendering may have a gzip'd copy beside it, <hex>.gz, published
 * after the blob (so a .gz never names bytes not in the store but for a
 * moment of eviction), which web servers send to clients that accept
 * gzip: fsynced before its rename like a blob, but its directory is not
 * (a copy a crash loses is made again; the page goes out plain meanwhile).
 * It is made with the blob (blob_put_page) or, for a page answered before
 * its copy, from the stored blob afterwards (blob_gz_prepare). It belongs to its blob: the inventory counts both in
 * the blob's size, and whatever deletes the blob deletes it first.
 */
#ifndef LARDER_BLOB_H
#define LARDER_BLOB_H

#include <limits.h>
#include <stddef.h>

#include "common/buf.h"

/* Writes "blobs/sha256/ab/cd/<hex>" (relative to the data directory) to
 * out. Returns 0, EINVAL for a bad hash, or ENAMETOOLONG. */
int blob_relpath(const char *sha256, char *out, size_t outlen);

/* Writes the absolute path of a blob to out. Same returns. */
int blob_path(const char *data_dir, const char *sha256, char *out,
	      size_t outlen);

/* Returns 1 when the blob is in the store, else 0. */
int blob_exists(const char *data_dir, const char *sha256);

/* Creates the data directory's layout (blobs/, tmp/) if missing. Returns 0
 * or an errno. */
int blob_init(const char *data_dir);

/* Creates a new empty temp file DATA/tmp/<pid>.<random>.part with O_EXCL,
 * opened read-write and close-on-exec. Returns 0 or an errno; on success
 * *fd is the caller's and the path is in path. */
int blob_tmp(const char *data_dir, char *path, size_t pathlen, int *fd);

/* Publishes the temp file (fd open on path, fully written) as the blob
 * sha256: fsync, rename into place, fsync the directory. If the blob is
 * already there the temp file is removed instead. fd stays the caller's.
 * Returns 0 or an errno; on error the temp file is left for the caller to
 * unlink. */
int blob_commit(const char *data_dir, const char *tmp, int fd,
		const char *sha256);

/* Appends the blob sha256 to b (made by the caller, whose limit bounds
 * what is read). Returns 0, ENOENT when the store lacks it, EFBIG when it
 * is bigger than b may grow, or another errno; b is the caller's to free
 * either way. */
int blob_read(const char *data_dir, const char *sha256, struct buf *b);

/* Stores bytes as a blob; its hash goes to sha256. Returns 0 or an errno;
 * nothing is left behind on error. */
int blob_put(const char *data_dir, const void *p, size_t n, char sha256[65]);

/* Stores the bytes of the open file fd (from its start to its end, read
 * with pread) as blob sha256, unless the store has it. Returns 0, EINVAL
 * when they are not blob sha256's bytes, or an errno; nothing is left
 * behind on error. fd stays the caller's. */
int blob_put_fd(const char *data_dir, int fd, const char sha256[65]);

/* blob_put_fd() for bytes whose digest is only a claim (a registry push):
 * they are hashed and held to sha256 even when the store has the blob, so
 * a claimed digest never names bytes the client did not send. Returns 0,
 * EINVAL when they are not blob sha256's bytes, or an errno. */
int blob_put_fd_claimed(const char *data_dir, int fd, const char sha256[65]);

/* Writes the path of blob sha256's gzip'd copy (its path and ".gz") to
 * out. Same returns as blob_path. */
int blob_gz_path(const char *data_dir, const char *sha256, char *out,
		 size_t outlen);

/* The size in bytes of blob sha256's gzip'd copy, or -1 when it has
 * none. */
long long blob_gz_size(const char *data_dir, const char *sha256);

/* Stores a page rendering: as blob_put, then its gzip (level 9) as the
 * blob's .gz when that is smaller and not there yet. *size is what both
 * take in the store, for the inventory. Returns 0 or blob_put's errno; a
 * copy that cannot be made is logged and left out (the page goes out
 * plain). */
int blob_put_page(const char *data_dir, const void *p, size_t n,
		  char sha256[65], long long *size);

/* A gzip'd copy made and synced under DATA/tmp, not yet published. */
struct blob_gz {
	char tmp[PATH_MAX];
	int fd;                 /* -1: nothing to publish */
	long long size;         /* the copy's bytes */
	long long plain;        /* the blob's bytes */
};

/* Makes blob sha256's gzip'd copy from the blob in the store, read back
 * (up to max bytes) and held to its name first, into a synced temp file
 * for blob_gz_publish(). Returns 0 with g->fd >= 0; 0 with g->fd -1 when
 * there is nothing to publish (the blob has its copy, or a copy would not
 * be smaller); ENOENT when the blob is gone, EFBIG when it is over max,
 * EINVAL when its bytes are not sha256's, or another errno. g holds
 * nothing on error. */
int blob_gz_prepare(const char *data_dir, const char *sha256, size_t max,
		    struct blob_gz *g);

/* Publishes g (from blob_gz_prepare) as blob sha256's copy while the blob
 * is in the store: the caller holds the lock the collectors unlink under
 * (storage/gc.h), so it stays. Returns 0, ENOENT when the blob went (the
 * copy is discarded), or an errno; g is spent either way. */
int blob_gz_publish(const char *data_dir, const char *sha256,
		    struct blob_gz *g);

/* Drops an unpublished g (removes its temp file). */
void blob_gz_discard(struct blob_gz *g);

/* As blob_keep_page, for a blob put by blob_put: puts the n bytes at p
 * again when blob sha256 went since. Returns 0, EINVAL when they are not
 * its bytes, or blob_put's errno. */
int blob_keep(const char *data_dir, const void *p, size_t n,
	      const char sha256[65]);

/* For a rendering put before the write transaction that is to name it
 * (blob_put_page, outside the lock, where the writing is): called inside
 * that transaction, puts it again when a collector deleted it in between.
 * The collectors decide and unlink under that same lock (storage/gc.h,
 * gc_collect_replaced), so once this returns 0 the blob stays
 * until the transaction commits the row that names it. *size is updated
 * when it is put again. Returns 0 or blob_put_page's errno. */
int blob_keep_page(const char *data_dir, const void *p, size_t n,
		   const char sha256[65], long long *size);

/* Deletes blob sha256 and its gzip'd copy, the copy first. Returns 0 or
 * the errno of unlinking the blob (ENOENT when it was not there). */
int blob_remove(const char *data_dir, const char *sha256);

#endif
