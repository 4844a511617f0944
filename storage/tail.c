#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "storage/blob.h"
#include "storage/tail.h"

/* Takeovers a follower goes through before it gives up. */
#define MAX_RESTARTS 2
/* Half the scratch buffer same_start() compares with. */
#define HALF (64 * 1024)

/* Makes fd the file t reads from. The bytes already handed out came from
 * the old file; when fd is another file (a fetch that took over from a
 * dead one, or the blob a later fetch committed), the old one is kept as
 * t->prev until the new one is seen to start with the same bytes, since
 * only the last fetch's bytes are verified. */
static void switch_to(struct tail *t, int fd)
{
	struct stat a, b;

	if (t->fd < 0) {
		t->fd = fd;
		return;
	}
	if (t->off > 0 && t->prev < 0 &&
	    (fd < 0 || fstat(t->fd, &a) < 0 || fstat(fd, &b) < 0 ||
	     a.st_dev != b.st_dev || a.st_ino != b.st_ino))
		t->prev = t->fd;
	else
		close(t->fd); /* same file, or t->prev already holds them */
	t->fd = fd;
}

/* Whether a and b hold the same first n bytes. */
static int same_start(struct tail *t, int a, int b, long long n)
{
	long long off = 0;
	ssize_t x, y;

	if (!t->scratch)
		t->scratch = malloc(2 * HALF);
	if (!t->scratch)
		return 0;
	while (off < n) {
		size_t want = (size_t)(n - off) < HALF ? (size_t)(n - off) : HALF;

		x = pread(a, t->scratch, want, off);
		y = pread(b, t->scratch + HALF, want, off);
		if (x <= 0 || x != y ||
		    memcmp(t->scratch, t->scratch + HALF, (size_t)x) != 0)
			return 0;
		off += x;
	}
	return 1;
}

/* Watches the temp file of t->f for growth (none: t->in -1, and the
 * file is polled). */
static void watch(struct tail *t)
{
	if (t->in >= 0)
		close(t->in);
	t->in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (t->in >= 0 &&
	    inotify_add_watch(t->in, t->f.tmp,
			      IN_MODIFY | IN_CLOSE_WRITE | IN_MOVE_SELF |
				      IN_DELETE_SELF | IN_ATTRIB) < 0) {
		close(t->in);
		t->in = -1;
	}
}

/* Opens the temp file of t->f to read, and (for another process's fetch)
 * watches it. Returns 0 or an errno (ENOENT: that fetch is over). */
static int follow(struct tail *t)
{
	int fd = open(t->f.tmp, O_RDONLY | O_CLOEXEC);
	int err = fd < 0 ? errno : 0;

	switch_to(t, fd);
	if (fd < 0)
		return err;
	if (!t->own)
		watch(t);
	return 0;
}

/* Sleeps until the file changes, or briefly (the lock is polled). Once
 * every byte is there, the owner is only committing (rename, database
 * rows) and the lock goes with no event to wake us: complete says so, and
 * the lock is then polled every 2 ms rather than every 100. */
static void wait_change(struct tail *t, int complete)
{
	struct pollfd p = {.fd = t->in, .events = POLLIN};
	char ev[4096];

	if (t->in < 0) {
		usleep(complete ? 2000 : 20000);
		return;
	}
	if (poll(&p, 1, complete ? 2 : 100) > 0)
		while (read(t->in, ev, sizeof(ev)) > 0) {
		}
}

/* Takes the claim again after its owner died. */
static int reclaim(struct tail *t, char *err, size_t errlen);

/* The owner of t->f has let go: decides what happened. Returns TAIL_MORE
 * when the blob is committed (t reads it) or a new fetch is being followed
 * or owned (t->owner), or an errno with a reason. */
static int settle(struct tail *t, char *err, size_t errlen)
{
	struct db_flight row;
	char path[PATH_MAX], reason[1024] = "";
	int fd;

	if (*t->expect && blob_exists(t->data_dir, t->expect)) {
		/* committed; a row left behind means the owner died after
		 * the rename, and is harmless to clear */
		if (flight_pending(t->db, &t->f))
			flight_reap(t->db, t->f.key, t->f.tmp);
		snprintf(t->sha, sizeof(t->sha), "%s", t->expect);
	} else if (flight_pending(t->db, &t->f) ||
		   (db_flight_get(t->db, t->key, &row) == 0 &&
		    strcmp(row.tmp, t->f.tmp) != 0)) {
		/* row stands, lock free: the owner died; or another
		 * requester found it dead first and started again, and we
		 * follow that fetch instead of failing */
		return reclaim(t, err, errlen);
	} else if (db_outcome_get(t->db, t->key, t->sha, reason,
				  sizeof(reason), NULL) != 0 ||
		   !*t->sha || !blob_exists(t->data_dir, t->sha)) {
		snprintf(err, errlen, "%s", *reason ? reason :
			 "upstream fetch failed");
		return EIO;
	}
	blob_path(t->data_dir, t->sha, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return errno ? errno : EIO;
	}
	switch_to(t, fd);
	t->verified = t->done = 1;
	return TAIL_MORE;
}

static int reclaim(struct tail *t, char *err, size_t errlen)
{
	int owner, rc;

	if (++t->restarts > MAX_RESTARTS) {
		snprintf(err, errlen, "%s: the fetch keeps dying", t->key);
		return EIO;
	}
	flight_reap(t->db, t->f.key, t->f.tmp);
	rc = flight_claim(t->db, t->data_dir, t->key, t->size, &owner, &t->f);
	if (rc) {
		snprintf(err, errlen, "%s: restarting the fetch: %s", t->key,
			 strerror(rc));
		return rc;
	}
	if (owner && *t->expect && blob_exists(t->data_dir, t->expect)) {
		/* the fetch we saw restarted has committed since */
		flight_drop(t->db, &t->f);
		return settle(t, err, errlen);
	}
	t->owner = t->own = owner;
	rc = follow(t);
	if (rc == ENOENT && !owner) /* that fetch is over already */
		return settle(t, err, errlen);
	if (rc) {
		if (owner)
			flight_drop(t->db, &t->f);
		t->owner = t->own = 0;
		snprintf(err, errlen, "%s: following the fetch: %s", t->key,
			 strerror(rc));
		return rc;
	}
	return TAIL_MORE;
}

int tail_start(struct tail *t, struct db *db, const char *data_dir,
	       const char *key, const char *expect, long long size,
	       long silence, char *err, size_t errlen)
{
	int owner, rc;

	memset(t, 0, sizeof(*t));
	t->db = db;
	t->data_dir = data_dir;
	t->key = key;
	t->expect = expect;
	t->silence = silence;
	t->fd = t->prev = t->in = -1;
	t->size = size;
	t->moved = time(NULL);
	rc = flight_claim(db, data_dir, key, size, &owner, &t->f);
	if (rc) {
		snprintf(err, errlen, "%s: cannot claim the fetch: %s", key,
			 strerror(rc));
		return rc;
	}
	if (owner && *expect && blob_exists(data_dir, expect)) {
		/* committed between the caller's look and our claim */
		flight_drop(db, &t->f);
		snprintf(t->sha, sizeof(t->sha), "%s", expect);
		return EEXIST;
	}
	t->owner = t->own = owner;
	rc = follow(t);
	if (rc && owner) {
		flight_drop(db, &t->f);
		t->owner = t->own = 0;
		snprintf(err, errlen, "%s: %s", t->f.tmp, strerror(rc));
		return rc;
	}
	if (rc == ENOENT) {
		/* finished before we looked */
		rc = settle(t, err, errlen);
		if (rc == TAIL_MORE && t->done)
			return EEXIST;
	}
	return rc;
}

void tail_handed(struct tail *t)
{
	if (t->f.fd >= 0)
		close(t->f.fd);
	t->f.fd = -1;
	t->owner = t->own = 0;
	watch(t);
}

void tail_verified(struct tail *t, const char *sha256, long long size)
{
	snprintf(t->sha, sizeof(t->sha), "%s", sha256);
	if (t->size < 0)
		t->size = size;
	t->verified = 1;
}

void tail_filled(struct tail *t, int rc, const char *sha256)
{
	t->owner = 0;
	if (rc == 0) {
		/* t->fd was opened on the temp file, now the blob */
		snprintf(t->sha, sizeof(t->sha), "%s", sha256);
		t->verified = t->done = 1;
	}
}

long long tail_limit(struct tail *t, int *rc, char *err, size_t errlen)
{
	struct stat st;
	long long limit;

	*rc = 0;
	if (fstat(t->fd, &st) < 0) {
		*rc = errno;
		snprintf(err, errlen, "%s: fstat: %s", t->key, strerror(errno));
		return -1;
	}
	t->avail = st.st_size;
	if (t->own) {
		if (t->size < 0)
			t->size = t->f.size;
	} else if (!t->done && (t->size < 0 ||
				(!t->verified && t->avail >= t->size))) {
		/* what the owner's row says, when it matters: the size, and
		 * whether the bytes are known good */
		if (flight_pending(t->db, &t->f)) {
			if (t->size < 0)
				t->size = t->f.size;
			if (*t->f.sha256 && t->prev < 0 &&
			    (!*t->expect || !strcmp(t->f.sha256, t->expect)))
				tail_verified(t, t->f.sha256, t->avail);
		}
	}
	if (t->done && t->size < 0)
		t->size = t->avail;
	if (t->done && t->avail != t->size) {
		/* the blob is not the size announced: never end that as a
		 * complete response */
		*rc = EIO;
		snprintf(err, errlen, "%s: the file is %lld bytes, not %lld",
			 t->key, t->avail, t->size);
		return -1;
	}
	if (t->avail != t->seen) { /* the fetch is moving */
		t->seen = t->avail;
		t->moved = time(NULL);
	}
	if (t->prev >= 0 && (t->avail >= t->off || t->done)) {
		/* Another fetch took over: go on only if it starts with the
		 * bytes already handed out. */
		if (t->avail < t->off || !same_start(t, t->prev, t->fd, t->off)) {
			*rc = EIO;
			snprintf(err, errlen, "%s: the fetch that took over got "
				 "other bytes than were sent", t->key);
			return -1;
		}
		close(t->prev);
		t->prev = -1;
	}
	if (t->size < 0)
		return t->off;
	limit = t->verified ? t->size : t->size - TAIL_HOLD;
	if (t->prev >= 0)
		limit = t->off; /* nothing more until checked */
	if (t->avail < limit)
		limit = t->avail;
	return limit < t->off ? t->off : limit;
}

ssize_t tail_read(struct tail *t, void *buf, size_t n)
{
	return pread(t->fd, buf, n, t->off);
}

int tail_complete(const struct tail *t)
{
	return t->verified && t->size >= 0 && t->off >= t->size &&
	       t->prev < 0;
}

int tail_next(struct tail *t, char *err, size_t errlen)
{
	if (t->done) {
		/* committed, yet not every byte could go: shorter than
		 * announced */
		snprintf(err, errlen, "%s: the file is shorter than announced",
			 t->key);
		return EIO;
	}
	if (flight_locked_fd(t->fd)) {
		if (time(NULL) - t->moved > t->silence) {
			snprintf(err, errlen, "%s: the fetch went silent for "
				 "%ld s", t->key, t->silence);
			return ETIMEDOUT;
		}
		wait_change(t, t->size >= 0 && t->avail >= t->size);
		return TAIL_MORE;
	}
	return settle(t, err, errlen);
}

void tail_close(struct tail *t)
{
	if (t->fd >= 0)
		close(t->fd);
	if (t->prev >= 0)
		close(t->prev);
	if (t->in >= 0)
		close(t->in);
	free(t->scratch);
	t->fd = t->prev = t->in = -1;
	t->scratch = NULL;
}
