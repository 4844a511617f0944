#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "fcgi/server/fetcher.h"
#include "fcgi/server/send.h"
#include "storage/blob.h"
#include "storage/fill.h"
#include "storage/tail.h"

#define CHUNK (256 * 1024)
/* A response starts once the bytes are verified, or, for a file bigger
 * than START_BYTES, once that much has come or the first byte came
 * START_MS ago: a small file that turns out bad is a 502 with the reason
 * rather than a broken transfer, and a big one streams at once. */
#define START_BYTES (64 * 1024)
#define START_MS 50
/* A file up to this size is stored in a few ms (fsync included). */
#define KEEP_BYTES (1024 * 1024)

/* One request following (or owning) a fetch. */
struct pump {
	struct worker *w;
	struct req *r;
	const struct fetcher_want *want;
	struct tail t;
	char *chunk;
	int broken;          /* what the client has cannot be finished */
	char reason[1024];   /* why */
	long long first_ms;  /* when the first byte was seen, 0 before */
	struct db *db;       /* the connection fill() runs on */
};

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Whether the response may start: the upstream has answered, with enough
 * to be worth streaming, or everything. */
static int may_start(struct pump *p)
{
	const struct tail *t = &p->t;

	if (t->size < 0)
		return 0;
	if (t->verified)
		return 1;
	if (t->avail == 0 || t->size <= START_BYTES)
		return 0;
	if (!p->first_ms)
		p->first_ms = now_ms();
	return t->avail >= START_BYTES || now_ms() - p->first_ms >= START_MS;
}

static int send_headers(struct pump *p)
{
	struct req *r = p->r;

	req_header(r, "Content-Type", "%s", p->want->content_type);
	req_header(r, "Content-Length", "%lld", p->t.size);
	/* A transfer that fails after this ends short of its Content-Length.
	 * Apache (CGI, mod_fcgid, mod_proxy_fcgi) and lighttpd's CGI take the
	 * end of such a body for the end of the response and keep the
	 * client's connection, so the client would wait for the rest until a
	 * keep-alive timeout; told to close it, they close it, and the client
	 * learns at once. nginx keeps the header to itself. */
	req_header(r, "Connection", "close");
	if (*p->want->expect) {
		req_header(r, "ETag", "\"%s\"", p->want->expect);
		req_header(r, "Cache-Control", "%s", send_immutable(r));
	} else if (p->want->meta_of) {
		/* metadata no page vouched for: as fcgi/pypi/metadata.h serves
		 * what it made from range reads */
		req_header(r, "Cache-Control", "%s, max-age=%ld",
			   r->private_index ? "private" : "public",
			   p->w->conf->cache_ttl);
		req_header(r, "X-Larder-Metadata", "provisional");
	}
	return req_start(r, 200);
}

/* Hands the client what the tail allows now: the headers once the
 * upstream has answered, then the bytes. With block, waits for the web
 * server to take them; without, sends what it takes at once (an owner
 * must not let its client slow the download). Returns 0, EPIPE when the
 * client is gone or the response already ended, or an errno with a reason
 * in p->reason. */
static int pump(struct pump *p, int block)
{
	struct tail *t = &p->t;
	struct req *r = p->r;
	long long limit;
	ssize_t n, took;
	int rc;

	if (p->broken || r->write_failed || r->aborted || r->ended)
		return EPIPE;
	limit = tail_limit(t, &rc, p->reason, sizeof(p->reason));
	if (limit < 0)
		return rc;
	if (!r->started) {
		if (!may_start(p))
			return 0;
		if (send_headers(p))
			return EPIPE;
	}
	while (t->off < limit) {
		size_t want = (size_t)(limit - t->off) < CHUNK ?
			(size_t)(limit - t->off) : CHUNK;

		n = tail_read(t, p->chunk, want);
		if (n <= 0)
			break;
		if (block) {
			if (req_write(r, p->chunk, (size_t)n))
				return EPIPE;
			t->off += n;
			continue;
		}
		took = req_write_some(r, p->chunk, (size_t)n);
		if (took < 0)
			return EPIPE;
		t->off += took;
		if (took < n)
			break;
	}
	if (block)
		req_flush(r);
	return r->write_failed ? EPIPE : 0;
}

/* The owner's client, as the download goes: what it takes without
 * waiting. A client that cannot be finished (a restarted fetch brought
 * other bytes) is cut off; the download goes on for everyone else. */
static void on_progress(long long written, void *ctx)
{
	struct pump *p = ctx;
	int rc;

	(void)written;
	rc = pump(p, 0);
	if (rc && rc != EPIPE) {
		log_error(rc, p->r->path, "%s", p->reason);
		p->broken = 1;
		req_abort(p->r);
	}
}

static void on_verified(const char *sha256, long long size, void *ctx)
{
	struct pump *p = ctx;

	tail_verified(&p->t, sha256, size);
	on_progress(size, ctx);
	/* all of it handed over: the client need not wait while the file
	 * is stored (fsync, rename, the database); the connection stays for
	 * the web server's next request when that is quick, as it is for a
	 * small file, so it rides this worker's warm upstream connection */
	if (!p->broken && p->r->started && p->t.off == size)
		req_end(p->r, size <= KEEP_BYTES);
	/* and before it is stored, room for it within max_size */
	worker_make_room(p->w, p->db, size);
}

/* Runs the fetch this process owns (tail says so) to its end. */
static int fill(struct pump *p, struct db *db, char *err, size_t errlen)
{
	const struct fetcher_want *want = p->want;
	const struct conf *c = p->w->conf;
	/* bytes no hash vouched for: provisional, until the verified file
	 * says what its metadata is (fcgi/pypi/metadata.h), recorded with the
	 * outcome so no request sees one without the other */
	struct fill_want fw = {.key = want->key, .url = want->url,
			       .expect = want->expect, .size = p->t.size,
			       .opts = want->opts, .error_ttl = c->error_ttl,
			       .meta_of = want->meta_of,
			       .provisional = want->meta_of != NULL};
	struct fill_hooks h = {.progress = on_progress,
			       .verified = on_verified, .ctx = p};
	char sha[65];
	int rc;

	p->db = db;
	rc = fill_run(db, c->data_dir, &p->t.f, &fw, &h, sha, err, errlen);
	if (!rc && want->stored)
		want->stored(db, sha, p->t.size, want->ctx);
	tail_filled(&p->t, rc, sha);
	return rc;
}

/* CGI: the web server may kill this process once its client is gone, so
 * a detached child (fork, no exec: this process's config and options)
 * owns the fetch, and this process follows it. When fork fails the fetch
 * runs here instead. Returns what fill() does, or 0 once the child has
 * the claim. */
static int fill_detached(struct pump *p, char *err, size_t errlen)
{
	sigset_t none;
	pid_t pid, got;
	struct db *db;
	int status, devnull, lfd, rc;
	char log[PATH_MAX];

	pid = fork();
	if (pid < 0) {
		log_warn(errno, p->want->key, "fork: fetching in this process");
		return fill(p, p->w->db, err, errlen);
	}
	if (pid == 0) {
		setsid();
		if (fork() != 0)
			_exit(0);
		prctl(PR_SET_NAME, "larder-fetch");
		/* not the CGI's blocked SIGTERM: kill -TERM stops it */
		signal(SIGTERM, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			dup2(devnull, STDOUT_FILENO);
		}
		snprintf(log, sizeof(log), "%s/fetch.log", p->w->conf->data_dir);
		lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
		if (lfd >= 0)
			dup2(lfd, STDERR_FILENO);
		/* the parent's database connection and curl handle are the
		 * parent's: this child makes its own */
		fetch_forget();
		p->r->aborted = 1; /* this child has no client */
		if (db_open(p->w->conf->data_dir, &db))
			_exit(1);
		rc = fill(p, db, err, errlen);
		worker_collect(p->w, db);
		db_close(db);
		_exit(rc ? 1 : 0);
	}
	do {
		got = waitpid(pid, &status, 0);
	} while (got < 0 && errno == EINTR);
	tail_handed(&p->t);
	return 0;
}

int fetcher_serve(struct worker *w, struct req *r,
		  const struct fetcher_want *want, char sha256[65], char *err,
		  size_t errlen)
{
	struct pump p = {.w = w, .r = r, .want = want};
	int rc;

	rc = tail_start(&p.t, w->db, w->conf->data_dir, want->key,
			want->expect, want->size, fetch_max_silence(want->opts),
			err, errlen);
	if (rc == EEXIST)
		snprintf(sha256, 65, "%s", p.t.sha);
	if (rc)
		goto out;
	r->cache = "MISS";
	/* this may take long: kept connections go to a free worker */
	worker_shed(w);
	p.chunk = malloc(CHUNK);
	if (!p.chunk) {
		if (p.t.owner)
			flight_drop(w->db, &p.t.f);
		snprintf(err, errlen, "out of memory");
		rc = ENOMEM;
		goto out;
	}
	for (;;) {
		if (p.t.owner) {
			rc = w->cgi ? fill_detached(&p, err, errlen) :
				      fill(&p, w->db, err, errlen);
			if (rc)
				goto fail;
			continue;
		}
		rc = pump(&p, 1);
		/* the client is gone (the owner goes on), or has it all */
		if (rc == EPIPE)
			break;
		if (rc) {
			snprintf(err, errlen, "%s", p.reason);
			goto fail;
		}
		if (tail_complete(&p.t))
			break;
		rc = tail_next(&p.t, err, errlen);
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
	free(p.chunk);
	tail_close(&p.t);
	return rc;
}
