#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/hash/sha256.h"
#include "common/log.h"
#include "common/names.h"
#include "storage/blob.h"

int blob_relpath(const char *sha256, char *out, size_t outlen)
{
	if (!names_is_sha256(sha256))
		return EINVAL;
	if ((size_t)snprintf(out, outlen, "blobs/sha256/%.2s/%.2s/%s", sha256,
			     sha256 + 2, sha256) >= outlen)
		return ENAMETOOLONG;
	return 0;
}

int blob_path(const char *data_dir, const char *sha256, char *out,
	      size_t outlen)
{
	char rel[128];
	int err = blob_relpath(sha256, rel, sizeof(rel));

	if (err)
		return err;
	if ((size_t)snprintf(out, outlen, "%s/%s", data_dir, rel) >= outlen)
		return ENAMETOOLONG;
	return 0;
}

int blob_exists(const char *data_dir, const char *sha256)
{
	char path[PATH_MAX];

	if (blob_path(data_dir, sha256, path, sizeof(path)))
		return 0;
	return access(path, F_OK) == 0;
}

/* mkdir that tolerates an existing directory. */
static int mkdir_one(const char *path)
{
	if (mkdir(path, 0755) == 0 || errno == EEXIST)
		return 0;
	return errno;
}

int blob_init(const char *data_dir)
{
	static const char *const dirs[] = {"", "/blobs", "/blobs/sha256",
					   "/tmp"};
	char path[PATH_MAX];
	int err;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", data_dir, dirs[i]);
		err = mkdir_one(path);
		if (err) {
			log_error(err, path, "mkdir");
			return err;
		}
	}
	return 0;
}

int blob_tmp(const char *data_dir, char *path, size_t pathlen, int *fd)
{
	unsigned long long r = 0;

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r ^= (unsigned long long)(size_t)&r;
	if ((size_t)snprintf(path, pathlen, "%s/tmp/%ld.%016llx.part",
			     data_dir, (long)getpid(), r) >= pathlen)
		return ENAMETOOLONG;
	*fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (*fd < 0) {
		log_error(errno, path, "create temp file");
		return errno;
	}
	return 0;
}

/* fsyncs the directory holding path. */
static int sync_dir(const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	int fd, err = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return 0;
	*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (fsync(fd) < 0)
		err = errno;
	close(fd);
	return err;
}

/* A blob's mode: 0644 less the umask. The web server reads it
 * (X-Accel-Redirect, X-Sendfile), as its group under the shipped unit's
 * UMask=0027; its temp file was larder's alone (0600) until verified. */
static mode_t blob_mode(void)
{
	static mode_t mode = (mode_t)-1;
	mode_t mask;

	if (mode == (mode_t)-1) {
		mask = umask(0);
		umask(mask);
		mode = 0644 & ~mask;
	}
	return mode;
}

int blob_commit(const char *data_dir, const char *tmp, int fd,
		const char *sha256)
{
	char path[PATH_MAX];
	char *p;
	int err;

	err = blob_path(data_dir, sha256, path, sizeof(path));
	if (err)
		return err;
	/* published readable (the fsync below makes the mode durable too) */
	if (fchmod(fd, blob_mode()) < 0)
		log_warn(errno, tmp, "fchmod");
	if (fsync(fd) < 0) {
		err = errno;
		log_error(err, tmp, "fsync");
		return err;
	}
	/* blobs/sha256/ab and blobs/sha256/ab/cd */
	for (int depth = 0; depth < 2; depth++) {
		p = path + strlen(data_dir) + strlen("/blobs/sha256/") +
		    (depth ? 5 : 2);
		*p = '\0';
		err = mkdir_one(path);
		*p = '/';
		if (err) {
			log_error(err, path, "mkdir");
			return err;
		}
	}
	if (access(path, F_OK) == 0) {
		unlink(tmp);
		return 0;
	}
	if (rename(tmp, path) < 0) {
		err = errno;
		log_error(err, path, "rename %s", tmp);
		return err;
	}
	err = sync_dir(path);
	if (err)
		log_warn(err, path, "fsync directory");
	return 0;
}

int blob_put(const char *data_dir, const void *p, size_t n, char sha256[65])
{
	char tmp[PATH_MAX];
	const char *c = p;
	size_t left = n;
	ssize_t w;
	int fd, err;

	err = sha256_hex(p, n, sha256);
	if (err)
		return err;
	if (blob_exists(data_dir, sha256))
		return 0;
	err = blob_tmp(data_dir, tmp, sizeof(tmp), &fd);
	if (err)
		return err;
	/* locked like every temp file in use, so a sweep or fsck leaves it */
	flock(fd, LOCK_EX);
	while (left) {
		w = write(fd, c, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			err = errno;
			log_error(err, tmp, "write");
			goto fail;
		}
		c += w;
		left -= (size_t)w;
	}
	err = blob_commit(data_dir, tmp, fd, sha256);
	if (err)
		goto fail;
	close(fd);
	return 0;
fail:
	unlink(tmp);
	close(fd);
	return err;
}

static int write_all(int fd, const unsigned char *c, size_t left);

/* Reads fd from its start (pread), copying it to out unless out is -1,
 * and holds what it read to sha256. Returns 0, EINVAL when the bytes are
 * not blob sha256's, or the errno of a failed read or write. */
static int copy_hashed(int fd, int out, const char sha256[65])
{
	static unsigned char chunk[65536];
	struct sha256 h;
	char got[65];
	off_t at = 0;
	ssize_t n;
	int err = sha256_init(&h);

	if (err)
		return err;
	for (;;) {
		n = pread(fd, chunk, sizeof(chunk), at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : 0;
			break;
		}
		sha256_update(&h, chunk, (size_t)n);
		if (out >= 0) {
			err = write_all(out, chunk, (size_t)n);
			if (err)
				break;
		}
		at += n;
	}
	if (err) {
		sha256_abort(&h);
		return err;
	}
	sha256_final(&h, got);
	return strcmp(got, sha256) == 0 ? 0 : EINVAL;
}

/* blob_put_fd(), and with check the bytes are held to sha256 even when
 * the store has the blob already. */
static int put_fd(const char *data_dir, int fd, const char sha256[65],
		  int check)
{
	char tmp[PATH_MAX];
	int out, err;

	if (blob_exists(data_dir, sha256))
		return check ? copy_hashed(fd, -1, sha256) : 0;
	err = blob_tmp(data_dir, tmp, sizeof(tmp), &out);
	if (err)
		return err;
	flock(out, LOCK_EX); /* as blob_put's: a sweep leaves it */
	err = copy_hashed(fd, out, sha256);
	if (err && err != EINVAL)
		log_error(err, tmp, "copying a blob");
	if (!err)
		err = blob_commit(data_dir, tmp, out, sha256);
	if (err) {
		unlink(tmp);
		close(out);
		return err;
	}
	close(out);
	return 0;
}

int blob_put_fd(const char *data_dir, int fd, const char sha256[65])
{
	return put_fd(data_dir, fd, sha256, 0);
}

int blob_put_fd_claimed(const char *data_dir, int fd, const char sha256[65])
{
	return put_fd(data_dir, fd, sha256, 1);
}

int blob_read(const char *data_dir, const char *sha256, struct buf *b)
{
	char path[PATH_MAX], chunk[65536];
	ssize_t got;
	int fd, rc;

	rc = blob_path(data_dir, sha256, path, sizeof(path));
	if (rc)
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	for (;;) {
		got = read(fd, chunk, sizeof(chunk));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			rc = got < 0 ? errno : 0;
			break;
		}
		if (buf_add(b, chunk, (size_t)got)) {
			rc = EFBIG;
			break;
		}
	}
	close(fd);
	return rc;
}

int blob_gz_path(const char *data_dir, const char *sha256, char *out,
		 size_t outlen)
{
	int err = blob_path(data_dir, sha256, out, outlen);
	size_t len;

	if (err)
		return err;
	len = strlen(out);
	if (len + 4 > outlen)
		return ENAMETOOLONG;
	memcpy(out + len, ".gz", 4);
	return 0;
}

long long blob_gz_size(const char *data_dir, const char *sha256)
{
	char path[PATH_MAX];
	struct stat st;

	if (blob_gz_path(data_dir, sha256, path, sizeof(path)) ||
	    stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return -1;
	return (long long)st.st_size;
}

static int write_all(int fd, const unsigned char *c, size_t left)
{
	ssize_t w;

	while (left) {
		w = write(fd, c, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno;
		c += w;
		left -= (size_t)w;
	}
	return 0;
}

/* Deflates n bytes at p into fd as gzip (no name, no time: the same
 * bytes give the same file). Returns 0 with *out the gzip's size, EFBIG
 * when it would not be smaller than n, or an errno. */
static int deflate_to(int fd, const void *p, size_t n, long long *out)
{
	static unsigned char chunk[65536];
	z_stream zs;
	int zrc, err = 0;
	size_t have;

	memset(&zs, 0, sizeof(zs));
	/* 15 + 16: a gzip wrapper, which is what Content-Encoding: gzip and
	 * nginx's gzip_static mean */
	if (deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return ENOMEM;
	zs.next_in = (unsigned char *)(uintptr_t)p;
	zs.avail_in = (uInt)n; /* renderings are far below 4 GB */
	do {
		zs.next_out = chunk;
		zs.avail_out = sizeof(chunk);
		zrc = deflate(&zs, Z_FINISH);
		if (zrc == Z_STREAM_ERROR) {
			err = EIO;
			break;
		}
		have = sizeof(chunk) - zs.avail_out;
		if (zs.total_out >= n) {
			err = EFBIG;
			break;
		}
		err = write_all(fd, chunk, have);
	} while (!err && zrc != Z_STREAM_END);
	*out = (long long)zs.total_out;
	deflateEnd(&zs);
	return err;
}

/* Deflates n bytes at p into a new temp file, made readable and synced,
 * for g. Returns 0 with g->fd >= 0 and g->size the copy's bytes, 0 with
 * g->fd -1 when the copy would not be smaller, or an errno (logged;
 * nothing left behind). */
static int gz_write(const char *data_dir, const void *p, size_t n,
		    struct blob_gz *g)
{
	int err;

	g->fd = -1;
	g->size = 0;
	err = blob_tmp(data_dir, g->tmp, sizeof(g->tmp), &g->fd);
	if (err)
		return err;
	flock(g->fd, LOCK_EX); /* as blob_put's: a sweep leaves it */
	err = deflate_to(g->fd, p, n, &g->size);
	if (err == EFBIG) {
		blob_gz_discard(g);
		return 0;
	}
	if (!err && fchmod(g->fd, blob_mode()) < 0) /* as blob_commit's */
		err = errno;
	/* the copy's bytes are on disk before its name is: a crash may lose
	 * the copy, never leave a wrong one */
	if (!err && fsync(g->fd) < 0)
		err = errno;
	if (err) {
		log_warn(err, g->tmp, "writing a gzip'd copy");
		blob_gz_discard(g);
	}
	return err;
}

/* Renames g into place as blob sha256's copy. No directory fsync: a
 * rename a crash loses only means the page goes out plain until its copy
 * is made again (blob_put_page, pages' deferred copies). Returns 0 or an
 * errno; g is spent either way. */
static int gz_rename(const char *data_dir, const char *sha256,
		     struct blob_gz *g)
{
	char path[PATH_MAX];
	int err = blob_gz_path(data_dir, sha256, path, sizeof(path));

	/* a copy made meanwhile by another process holds the same bytes */
	if (!err && rename(g->tmp, path) < 0)
		err = errno;
	if (err) {
		log_warn(err, path, "storing the gzip'd copy");
		blob_gz_discard(g);
		return err;
	}
	close(g->fd);
	g->fd = -1;
	return 0;
}

void blob_gz_discard(struct blob_gz *g)
{
	if (g->fd < 0)
		return;
	unlink(g->tmp);
	close(g->fd);
	g->fd = -1;
}

/* Writes blob sha256's gzip'd copy from its n bytes at p. Returns 0 with
 * *size its bytes (0: not made, it would not be smaller), or an errno. */
static int put_gz(const char *data_dir, const void *p, size_t n,
		  const char *sha256, long long *size)
{
	struct blob_gz g;
	int err = gz_write(data_dir, p, n, &g);

	*size = 0;
	if (err || g.fd < 0)
		return err;
	*size = g.size;
	err = gz_rename(data_dir, sha256, &g);
	if (err)
		*size = 0;
	return err;
}

int blob_gz_prepare(const char *data_dir, const char *sha256, size_t max,
		    struct blob_gz *g)
{
	struct buf b;
	char got[65];
	int err;

	g->fd = -1;
	g->size = g->plain = 0;
	if (blob_gz_size(data_dir, sha256) >= 0)
		return 0;
	buf_init(&b, max);
	err = blob_read(data_dir, sha256, &b);
	/* held to its name: a copy is only ever of the blob's own bytes */
	if (!err)
		err = sha256_hex(b.data ? b.data : "", b.len, got);
	if (!err && strcmp(got, sha256) != 0)
		err = EINVAL;
	if (!err) {
		g->plain = (long long)b.len;
		err = gz_write(data_dir, b.data ? b.data : "", b.len, g);
	}
	buf_free(&b);
	return err;
}

int blob_gz_publish(const char *data_dir, const char *sha256,
		    struct blob_gz *g)
{
	if (g->fd < 0)
		return 0;
	if (!blob_exists(data_dir, sha256)) {
		blob_gz_discard(g);
		return ENOENT;
	}
	return gz_rename(data_dir, sha256, g);
}

int blob_put_page(const char *data_dir, const void *p, size_t n,
		  char sha256[65], long long *size)
{
	long long gz;
	int err;

	*size = (long long)n;
	err = blob_put(data_dir, p, n, sha256);
	if (err)
		return err;
	gz = blob_gz_size(data_dir, sha256);
	/* (a page stored before copies were made gets one now) */
	if (gz < 0 && put_gz(data_dir, p, n, sha256, &gz))
		gz = 0;
	if (gz > 0)
		*size += gz;
	return 0;
}

/* blob_keep and blob_keep_page: puts the bytes again, as a page
 * rendering (with its gzip'd copy, *size updated) when size is not NULL. */
static int keep(const char *data_dir, const void *p, size_t n,
		const char sha256[65], long long *size)
{
	char again[65];
	int err;

	if (blob_exists(data_dir, sha256))
		return 0;
	err = size ? blob_put_page(data_dir, p, n, again, size)
		   : blob_put(data_dir, p, n, again);
	if (!err && strcmp(again, sha256) != 0)
		err = EINVAL; /* not the bytes it was put from */
	return err;
}

int blob_keep(const char *data_dir, const void *p, size_t n,
	      const char sha256[65])
{
	return keep(data_dir, p, n, sha256, NULL);
}

int blob_keep_page(const char *data_dir, const void *p, size_t n,
		   const char sha256[65], long long *size)
{
	return keep(data_dir, p, n, sha256, size);
}

int blob_remove(const char *data_dir, const char *sha256)
{
	char path[PATH_MAX];
	int err;

	/* the copy first: what is left after a crash in between is a blob
	 * without one, never a copy without its blob */
	err = blob_gz_path(data_dir, sha256, path, sizeof(path));
	if (err)
		return err;
	if (unlink(path) < 0 && errno != ENOENT)
		log_warn(errno, path, "deleting the gzip'd copy");
	path[strlen(path) - 3] = '\0';
	return unlink(path) < 0 ? errno : 0;
}
