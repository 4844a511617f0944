#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/hash/sha256.h"
#include "common/log.h"
#include "storage/blob.h"
#include "storage/fill.h"
#include "storage/health.h"
#include "storage/lru.h"
#include "storage/search_note.h"

struct run {
	struct db *db;
	struct flight *f;
	const struct fill_want *want;
	const struct fill_hooks *hooks;
	long long size;     /* what the upstream said, -1 before */
};

/* The upstream said how big the file is. */
static void on_size(long long size, void *vctx)
{
	struct run *r = vctx;

	r->size = size;
}

static void on_progress(long long written, void *vctx)
{
	struct run *r = vctx;

	/* Followers that could not know the size (the page gave none)
	 * learn it from the row, once there is more to come: a file that
	 * came whole in the first bytes is announced with its hash instead,
	 * one database write fewer before its client has it. */
	if (r->size >= 0 && written < r->size && r->want->size < 0 &&
	    r->f->size != r->size)
		flight_update(r->db, r->f, r->size);
	if (r->hooks && r->hooks->progress)
		r->hooks->progress(written, r->hooks->ctx);
}

/* Checks a complete download against the promise. Returns 0 or EBADMSG. */
static int check(const struct fill_want *want, int fd, const char *sha,
		 long long *size, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "%s: fstat: %s", want->url,
			 strerror(errno));
		return EIO;
	}
	*size = st.st_size;
	if (want->size >= 0 && st.st_size != want->size) {
		snprintf(err, errlen, "%s: got %lld bytes, the page says %lld",
			 want->url, (long long)st.st_size, want->size);
		return EBADMSG;
	}
	if (*want->expect && strcmp(sha, want->expect) != 0) {
		snprintf(err, errlen, "%s: sha256 mismatch: got %s, want %s",
			 want->url, sha, want->expect);
		return EBADMSG;
	}
	return 0;
}

/* Ends the claim f on key after a fetch or a making that ended with rc:
 * the blob sha256 of size bytes (when rc is 0), the metadata hash of the
 * file meta_of (when not NULL; provisional when prov), the outcome and the
 * end of the claim in one transaction; then lets go of the temp file and
 * its lock. The blob was published before the transaction, outside the
 * lock the collectors unlink under: inside it, it is put again from f's
 * still open file when a collector took it in between, so the row never
 * names a missing file. */
static void settle(struct db *db, const char *data_dir, struct flight *f,
		   const char *key, int rc, const char *sha256, long long size,
		   const char *meta_of, int prov, const char *err)
{
	int dberr = db_begin(db);

	if (!dberr && !rc) /* does nothing while the blob is there */
		dberr = blob_put_fd(data_dir, f->fd, sha256);
	if (!dberr && !rc)
		dberr = db_blob_add(db, sha256, size);
	if (!dberr && !rc && meta_of)
		dberr = db_file_set_meta_as(db, meta_of, sha256, prov);
	if (!dberr)
		dberr = db_outcome_put(db, key, sha256,
				       rc ? err : prov ? FILL_PROVISIONAL : "");
	if (!dberr)
		dberr = flight_done(db, f);
	if (!dberr)
		dberr = db_commit(db);
	if (dberr) {
		db_rollback(db);
		flight_done(db, f);
		/* the blob is in the store: the collector must know it, or
		 * only a reconciling `larder gc' would ever find it */
		if (!rc && blob_exists(data_dir, sha256))
			dberr = db_blob_add(db, sha256, size);
	}
	if (!rc && !dberr)
		lru_added(size);
	/* a file's metadata (fetched under the key "meta:<the file's
	 * sha256>", or made for meta_of): its summary, for /+search */
	/* (never metadata larder stored as provisional: range reads, or an
	 * upstream's .metadata no page vouched for) */
	if (!rc && !dberr && !prov &&
	    (meta_of || (strncmp(key, "meta:", 5) == 0 &&
			 strlen(key) == 5 + 64)))
		search_note_file(db, data_dir, meta_of ? meta_of : key + 5,
				 sha256);
	if (rc)
		unlink(f->tmp);
	close(f->fd); /* lets go of the lock */
	f->fd = -1;
}

int fill_run(struct db *db, const char *data_dir, struct flight *f,
	     const struct fill_want *want, const struct fill_hooks *hooks,
	     char sha256[65], char *err, size_t errlen)
{
	struct run r = {.db = db, .f = f, .want = want, .hooks = hooks,
			.size = -1};
	struct fetch_hooks fh = {.size = on_size, .progress = on_progress,
				 .ctx = &r};
	long long size = -1;
	int rc;

	sha256[0] = '\0';
	if (health_down(db, want->url, want->error_ttl, err, errlen)) {
		rc = EREMOTEIO;
	} else {
		rc = fetch_file(want->opts, want->url, want->size, f->fd, &fh,
				sha256, err, errlen);
		health_note(db, want->url, rc, want->error_ttl, err);
	}
	if (!rc)
		rc = check(want, f->fd, sha256, &size, err, errlen);
	if (!rc) {
		/* this client first, then the followers may finish theirs;
		 * the blob is published below, and the row goes after that */
		if (hooks && hooks->verified)
			hooks->verified(sha256, size, hooks->ctx);
		flight_verified(db, f, sha256);
		rc = blob_commit(data_dir, f->tmp, f->fd, sha256);
		if (rc)
			snprintf(err, errlen, "%s: storing: %s", want->url,
				 strerror(rc));
	}
	if (rc) {
		log_error(rc, want->key, "%s", err);
		sha256[0] = '\0';
	}
	settle(db, data_dir, f, want->key, rc, sha256, size, want->meta_of,
	       want->meta_of && want->provisional, err);
	return rc;
}

int fill_made(struct db *db, const char *data_dir, struct flight *f,
	      const void *bytes, size_t len, const char *meta_of,
	      int provisional, const char *reason, char sha256[65], char *err,
	      size_t errlen)
{
	int rc = 0;
	size_t off = 0;

	sha256[0] = '\0';
	if (!bytes) {
		snprintf(err, errlen, "%s", reason);
		rc = EPROTO;
	}
	while (!rc && off < len) {
		ssize_t n = write(f->fd, (const char *)bytes + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = errno;
			snprintf(err, errlen, "%s: writing: %s", f->key,
				 strerror(rc));
			break;
		}
		off += (size_t)n;
	}
	if (!rc && sha256_hex(bytes, len, sha256)) {
		snprintf(err, errlen, "%s: out of memory", f->key);
		rc = ENOMEM;
	}
	if (!rc) {
		flight_verified(db, f, sha256);
		rc = blob_commit(data_dir, f->tmp, f->fd, sha256);
		if (rc)
			snprintf(err, errlen, "%s: storing: %s", f->key,
				 strerror(rc));
	}
	if (rc)
		sha256[0] = '\0';
	settle(db, data_dir, f, f->key, rc, sha256, (long long)len, meta_of,
	       provisional, err);
	return rc;
}
