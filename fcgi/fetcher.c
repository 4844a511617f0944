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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/names.h"
#include "fcgi/fetcher.h"
#include "storage/blob.h"
#include "storage/flight.h"

#define FETCH_FD 3
#define CHUNK (256 * 1024)
#define MAX_RESTARTS 2

/* ---- the detached process ---------------------------------------------- */

struct size_ctx {
	struct db *db;
	struct flight *f;
};

static void record_size(long long size, void *vctx)
{
	struct size_ctx *c = vctx;

	if (c->f->size < 0 || c->f->size == size)
		flight_update(c->db, c->f, (long)getpid(), size);
}

int fetcher_main(const struct conf *c, int argc, char **argv)
{
	struct fetch_opts o;
	struct size_ctx sc;
	struct flight f;
	struct db *db = NULL;
	char reason[1024] = "";
	char sha[65];
	const char *key, *url, *expect;
	int rc, status = 1;

	if (argc != 7) {
		log_error(0, "_fetch", "usage: larder _fetch KEY INDEX URL "
			  "EXPECT TMP SIZE (internal)");
		return 2;
	}
	key = argv[1];
	worker_fetch_opts(c, conf_index_find(c, argv[2]), &o);
	url = argv[3];
	expect = strcmp(argv[4], "-") ? argv[4] : "";
	memset(&f, 0, sizeof(f));
	snprintf(f.key, sizeof(f.key), "%s", key);
	snprintf(f.tmp, sizeof(f.tmp), "%s", argv[5]);
	f.size = strtoll(argv[6], NULL, 10);
	f.fd = FETCH_FD;
	if (db_open(c->data_dir, &db))
		goto out;
	if (!flight_pending(db, &f)) {
		log_warn(0, key, "claim on %s is gone; not fetching", f.tmp);
		goto out;
	}
	flight_update(db, &f, (long)getpid(), f.size);
	sc.db = db;
	sc.f = &f;
	rc = fetch_file(&o, url, FETCH_FD, record_size, &sc, sha, reason,
			sizeof(reason));
	if (!rc && *expect && strcmp(sha, expect) != 0) {
		snprintf(reason, sizeof(reason),
			 "%s: sha256 mismatch: got %s, want %s", url, sha,
			 expect);
		rc = EBADMSG;
	}
	if (!rc) {
		rc = blob_commit(c->data_dir, f.tmp, FETCH_FD, sha);
		if (rc)
			snprintf(reason, sizeof(reason), "%s: storing: %s",
				 url, strerror(rc));
	}
	if (rc) {
		log_error(rc, key, "%s", reason);
		unlink(f.tmp);
		db_outcome_put(db, key, "", reason);
	} else {
		if (strncmp(key, "meta:", 5) == 0 && !*expect)
			db_file_set_meta(db, key + 5, sha);
		db_outcome_put(db, key, sha, "");
		status = 0;
	}
	flight_done(db, &f);
out:
	db_close(db);
	close(FETCH_FD); /* lets go of the lock */
	return status;
}

/* Starts `larder _fetch` detached, handing it the locked temp file. The
 * caller's descriptor is closed here, so only the fetcher holds the lock.
 * Returns 0 or an errno. */
static int spawn(struct worker *w, const struct fetcher_want *want,
		 struct flight *f)
{
	char size[32];
	pid_t pid, got;
	int status, hi, devnull;

	snprintf(size, sizeof(size), "%lld", want->size);
	pid = fork();
	if (pid < 0) {
		int err = errno;

		log_error(err, want->key, "fork");
		return err;
	}
	if (pid == 0) {
		setsid();
		if (fork() != 0)
			_exit(0);
		/* fd 3 must be the temp file and survive exec */
		hi = fcntl(f->fd, F_DUPFD, 64);
		if (hi < 0 || dup2(hi, FETCH_FD) < 0)
			_exit(127);
		devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			dup2(devnull, STDOUT_FILENO);
		}
		if (w->cgi) {
			char log[PATH_MAX];
			int lfd;

			snprintf(log, sizeof(log), "%s/fetch.log",
				 w->conf->data_dir);
			lfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (lfd >= 0)
				dup2(lfd, STDERR_FILENO);
		}
		close_range(FETCH_FD + 1, ~0U, 0);
		if (w->conf->source)
			setenv("LARDER_CONFIG", w->conf->source, 1);
		execl("/proc/self/exe", "larder", "_fetch", want->key,
		      want->index, want->url, *want->expect ? want->expect : "-", f->tmp,
		      size, (char *)NULL);
		_exit(127);
	}
	do {
		got = waitpid(pid, &status, 0);
	} while (got < 0 && errno == EINTR);
	close(f->fd);
	f->fd = -1;
	return 0;
}

/* ---- following a fetch ------------------------------------------------- */

struct tail {
	int fd;           /* what we read: the temp file, then the blob */
	int prev;         /* the file the bytes sent so far came from, when
			   * fd is another one whose start is not yet known
			   * to hold the same bytes; -1 */
	int in;           /* inotify descriptor, -1 when unavailable */
	long long off;    /* bytes sent */
	long long size;   /* Content-Length, -1 until known */
	int done;         /* the blob is committed: send the last byte */
	char sha[65];     /* the committed blob */
};

/* Makes fd the file t reads from. The bytes already sent came from the
 * old file; when fd is another file (a fetch that took over from a dead
 * one, or the blob a later fetch committed), the old one is kept as
 * t->prev until the new one is seen to start with the same bytes
 * (same_start), since only the last fetch's bytes are verified. */
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

/* Whether a and b hold the same first n bytes. buf has room for 2 * half. */
static int same_start(int a, int b, long long n, char *buf, size_t half)
{
	long long off = 0;
	ssize_t x, y;

	while (off < n) {
		size_t want = (size_t)(n - off) < half ? (size_t)(n - off) : half;

		x = pread(a, buf, want, off);
		y = pread(b, buf + half, want, off);
		if (x <= 0 || x != y || memcmp(buf, buf + half, (size_t)x) != 0)
			return 0;
		off += x;
	}
	return 1;
}

/* Opens the temp file of flight f to read and watches it. */
static int follow(struct tail *t, struct flight *f)
{
	int fd = open(f->tmp, O_RDONLY | O_CLOEXEC);
	int err = fd < 0 ? errno : 0;

	switch_to(t, fd);
	if (fd < 0)
		return err;
	if (t->in >= 0) {
		close(t->in);
		t->in = -1;
	}
	t->in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (t->in >= 0 &&
	    inotify_add_watch(t->in, f->tmp,
			      IN_MODIFY | IN_CLOSE_WRITE | IN_MOVE_SELF |
				      IN_DELETE_SELF | IN_ATTRIB) < 0) {
		close(t->in);
		t->in = -1;
	}
	return 0;
}

/* Sleeps until the file changes, or briefly (the lock is polled). Once
 * every byte is there, the fetcher is only committing (rename, database
 * rows, exit) and the lock goes with no event to wake us: complete says
 * so, and the lock is then polled every 2 ms rather than every 100. */
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

/* Whether a row for key names another temp file than tmp: someone
 * started the fetch again. */
static int restarted_elsewhere(struct worker *w, const char *key,
			       const char *tmp)
{
	struct db_flight row;

	return db_flight_get(w->db, key, &row) == 0 &&
	       strcmp(row.tmp, tmp) != 0;
}

/* The fetcher of f has let go: decides what happened. Returns 0 when the
 * blob is committed (t switched to it), EAGAIN when the fetcher died and a
 * new fetch is being followed, or an errno with reason. */
static int settle(struct worker *w, const struct fetcher_want *want,
		  struct flight *f, struct tail *t, int *restarts,
		  char *err, size_t errlen)
{
	char path[PATH_MAX];
	char reason[1024] = "";
	int owner, rc, fd;

	if (*want->expect && blob_exists(w->conf->data_dir, want->expect)) {
		/* committed; a row left behind means the fetcher died after
		 * the rename, and is harmless to clear */
		if (flight_pending(w->db, f))
			flight_reap(w->db, f->key, f->tmp);
	} else if (flight_pending(w->db, f) ||
		   restarted_elsewhere(w, want->key, f->tmp)) {
		/* row stands, lock free: the fetcher died; or another
		 * requester found it dead first and started again, and we
		 * follow that fetch instead of failing */
		if (++*restarts > MAX_RESTARTS) {
			snprintf(err, errlen, "%s: fetcher keeps dying",
				 want->key);
			return EIO;
		}
		flight_reap(w->db, f->key, f->tmp);
		rc = flight_claim(w->db, w->conf->data_dir, want->key,
				  want->size, &owner, f);
		if (!rc && owner && *want->expect &&
		    blob_exists(w->conf->data_dir, want->expect)) {
			/* the fetch we saw restarted has committed since */
			flight_done(w->db, f);
			unlink(f->tmp);
			close(f->fd);
			f->fd = -1;
			return settle(w, want, f, t, restarts, err, errlen);
		}
		if (!rc && owner)
			rc = spawn(w, want, f);
		if (!rc)
			rc = follow(t, f);
		if (rc == ENOENT) /* that fetch is over already */
			return settle(w, want, f, t, restarts, err, errlen);
		if (rc) {
			snprintf(err, errlen, "%s: restarting the fetch: %s",
				 want->key, strerror(rc));
			return rc;
		}
		return EAGAIN;
	}
	if (*want->expect) {
		snprintf(t->sha, sizeof(t->sha), "%s", want->expect);
	} else if (db_outcome_get(w->db, want->key, t->sha, reason,
				  sizeof(reason)) != 0) {
		t->sha[0] = '\0';
	}
	if (!*t->sha || !blob_exists(w->conf->data_dir, t->sha)) {
		if (!*reason)
			db_outcome_get(w->db, want->key, path, reason,
				       sizeof(reason));
		snprintf(err, errlen, "%s", *reason ? reason :
			 "upstream fetch failed");
		return EIO;
	}
	blob_path(w->conf->data_dir, t->sha, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return errno;
	}
	switch_to(t, fd);
	t->done = 1;
	return 0;
}

static int send_headers(struct req *r, const struct fetcher_want *want,
			struct tail *t)
{
	req_header(r, "Content-Type", "%s", want->content_type);
	req_header(r, "Content-Length", "%lld", t->size);
	if (*want->expect) {
		req_header(r, "ETag", "\"%s\"", want->expect);
		req_header(r, "Cache-Control",
			   "public, max-age=31536000, immutable");
	}
	return req_start(r, 200);
}

int fetcher_serve(struct worker *w, struct req *r,
		  const struct fetcher_want *want, char sha256[65], char *err,
		  size_t errlen)
{
	struct tail t = {.fd = -1, .prev = -1, .in = -1, .size = want->size};
	struct flight f;
	struct stat st;
	char *chunk = NULL;
	long long limit, avail, seen = 0;
	time_t last_progress = time(NULL);
	int restarts = 0, owner, rc;
	ssize_t n;

	rc = flight_claim(w->db, w->conf->data_dir, want->key, want->size,
			  &owner, &f);
	if (rc) {
		snprintf(err, errlen, "%s: cannot claim the fetch: %s",
			 want->key, strerror(rc));
		return rc;
	}
	if (owner && *want->expect &&
	    blob_exists(w->conf->data_dir, want->expect)) {
		/* committed between our lookup and our claim */
		flight_done(w->db, &f);
		unlink(f.tmp);
		close(f.fd);
		snprintf(sha256, 65, "%s", want->expect);
		return EEXIST;
	}
	if (owner) {
		rc = spawn(w, want, &f);
		if (rc) {
			flight_done(w->db, &f);
			unlink(f.tmp);
			close(f.fd);
			snprintf(err, errlen, "%s: cannot start the fetcher",
				 want->key);
			return rc;
		}
	}
	r->cache = "MISS";
	chunk = malloc(CHUNK);
	if (!chunk) {
		rc = ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	rc = follow(&t, &f);
	if (rc == ENOENT) {
		/* finished before we looked */
		rc = settle(w, want, &f, &t, &restarts, err, errlen);
		if (rc == 0) {
			snprintf(sha256, 65, "%s", t.sha);
			rc = EEXIST;
			goto out;
		}
	}
	if (rc && rc != EAGAIN)
		goto out;
	for (;;) {
		if (t.size < 0 && flight_pending(w->db, &f))
			t.size = f.size;
		if (t.done && t.size < 0 && fstat(t.fd, &st) == 0)
			t.size = st.st_size;
		if (t.size >= 0 && !r->started) {
			if (send_headers(r, want, &t))
				break;
		}
		if (fstat(t.fd, &st) < 0)
			break;
		avail = st.st_size;
		if (t.done && avail != t.size) {
			/* the committed blob is not the size we announced:
			 * never end that as a complete response */
			snprintf(err, errlen, "%s: size differs from the page",
				 want->key);
			rc = EIO;
			goto fail;
		}
		if (avail != seen) { /* the fetch is moving */
			seen = avail;
			last_progress = time(NULL);
		}
		if (t.prev >= 0 && (avail >= t.off || t.done)) {
			/* Another fetch took over: go on only if it starts
			 * with the bytes this client already has. */
			if (avail < t.off ||
			    !same_start(t.prev, t.fd, t.off, chunk, CHUNK / 2)) {
				snprintf(err, errlen, "%s: the fetch that took "
					 "over got other bytes than were sent",
					 want->key);
				rc = EIO;
				goto fail;
			}
			close(t.prev);
			t.prev = -1;
		}
		limit = t.size < 0 ? 0 : t.done ? t.size : t.size - 1;
		if (t.prev >= 0)
			limit = t.off; /* nothing more until checked */
		if (avail < limit)
			limit = avail;
		while (r->started && t.off < limit) {
			size_t want_n = (size_t)(limit - t.off) < CHUNK ?
				(size_t)(limit - t.off) : CHUNK;

			n = pread(t.fd, chunk, want_n, t.off);
			if (n <= 0)
				break;
			if (req_write(r, chunk, (size_t)n))
				goto out; /* client gone; fetcher goes on */
			t.off += n;
			last_progress = time(NULL);
		}
		if (r->started && t.off >= t.size && t.done)
			break;
		if (t.done) {
			/* the blob is shorter than promised */
			snprintf(err, errlen, "%s: size differs from the page",
				 want->key);
			rc = EIO;
			goto fail;
		}
		req_flush(r);
		if (flight_locked_fd(t.fd)) {
			if (time(NULL) - last_progress >
			    w->conf->fetch_timeout + 30) {
				snprintf(err, errlen, "%s: fetch stalled",
					 want->key);
				rc = ETIMEDOUT;
				goto fail;
			}
			wait_change(&t, t.size >= 0 && avail >= t.size);
			continue;
		}
		rc = settle(w, want, &f, &t, &restarts, err, errlen);
		if (rc == EAGAIN)
			continue;
		if (rc)
			goto fail;
	}
	rc = 0;
	goto out;
fail:
	log_error(rc, r->path, "%s", err);
	if (r->started) {
		req_abort(r);
		rc = 0;
	}
out:
	free(chunk);
	if (t.fd >= 0)
		close(t.fd);
	if (t.prev >= 0)
		close(t.prev);
	if (t.in >= 0)
		close(t.in);
	return rc;
}
