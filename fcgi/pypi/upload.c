/* upload: POST /{index}/, the legacy upload API that twine, pdm, poetry
 * and uv publish speak (upload.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/hash/blake2b.h"
#include "common/hash/sha256.h"
#include "common/hex.h"
#include "common/http/multipart.h"
#include "common/json.h"
#include "common/log.h"
#include "common/names.h"
#include "fcgi/access/auth.h"
#include "fcgi/pypi/dist.h"
#include "fcgi/pypi/hosted.h"
#include "fcgi/pypi/upload.h"
#include "storage/blob.h"
#include "storage/lru.h"

/* Room for the form fields around the file: a body may pass
 * max_upload_size by this much. */
#define FORM_SLACK (1L << 20)

/* What of the file is written at once (fewer, larger writes to the temp
 * file). */
#define WBUF (256 * 1024)

/* How much of the file is written before its writeback is started. */
#define KICK (8 * 1024 * 1024)

/* A form field the upload reads, and where it goes. */
struct field {
	const char *name;
	size_t off;   /* in struct upload */
	size_t size;
};

struct upload {
	struct req *r;
	const struct conf *conf;
	long long max;                  /* max_upload_size */
	/* the fields that matter; the rest of the metadata comes from the
	 * file itself */
	char action[32];
	char protocol[8];
	char name[NAMES_MAX_PROJECT + 1];
	char version[128];
	char md5[64];
	char sha256[80];
	char blake2[160];
	/* the part being read: a field (out) or the file (in_file) */
	char *out;
	size_t out_len, out_size;
	const char *out_name;
	int in_file;
	/* the file */
	char filename[NAMES_MAX_FILENAME + 1];
	char tmp[PATH_MAX];
	int fd;
	long long size;
	struct sha256 h_sha;
	EVP_MD_CTX *h_md5;
	struct blake2b h_blake;
	int weak;                       /* md5 and BLAKE2b are computed: no
	                                   sha256_digest came before the file */
	char *wbuf;                     /* the file's bytes not yet written */
	size_t wlen;
	long long written, kicked;      /* bytes written; bytes whose
	                                   writeback was started */
	/* the first failure: a status and its reason */
	int status;
	char reason[512];
};

#define FIELD(f, n) {n, offsetof(struct upload, f), sizeof(((struct upload *)0)->f)}

static const struct field fields[] = {
	FIELD(action, ":action"),
	FIELD(protocol, "protocol_version"),
	FIELD(name, "name"),
	FIELD(version, "version"),
	FIELD(md5, "md5_digest"),
	FIELD(sha256, "sha256_digest"),
	FIELD(blake2, "blake2_256_digest"),
};

/* Records the first failure; returns 1, to stop the parse. */
static int refuse(struct upload *u, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int refuse(struct upload *u, int status, const char *fmt, ...)
{
	va_list ap;

	if (u->status)
		return 1;
	u->status = status;
	va_start(ap, fmt);
	vsnprintf(u->reason, sizeof(u->reason), fmt, ap);
	va_end(ap);
	return 1;
}

static int open_file(struct upload *u, const char *filename)
{
	const char *base = strrchr(filename, '/');
	int err;

	base = base ? base + 1 : filename;
	if (u->fd >= 0)
		return refuse(u, 400, "more than one file in the upload");
	if (!names_is_filename(base))
		return refuse(u, 400, "bad file name \"%.200s\"", base);
	snprintf(u->filename, sizeof(u->filename), "%s", base);
	err = blob_tmp(u->conf->data_dir, u->tmp, sizeof(u->tmp), &u->fd);
	if (err) {
		u->fd = -1;
		return refuse(u, 500, "cannot make a temp file: %s",
			      strerror(err));
	}
	/* locked while it is written: the sweep takes only what a dead
	 * process left (storage/flight.c) */
	flock(u->fd, LOCK_EX);
	u->wbuf = malloc(WBUF);
	if (!u->wbuf)
		return refuse(u, 500, "out of memory");
	/* The sha256 is the file's address and is always computed. When
	 * the client sent its sha256_digest before the file (twine, uv,
	 * poetry and pdm do), that check protects the bytes, and md5 and
	 * BLAKE2b (two thirds of an upload's CPU) are not computed; else
	 * every digest sent is checked. */
	u->weak = !*u->sha256;
	if (sha256_init(&u->h_sha))
		return refuse(u, 500, "cannot start the hashes");
	if (u->weak) {
		u->h_md5 = EVP_MD_CTX_new();
		if (!u->h_md5 ||
		    EVP_DigestInit_ex(u->h_md5, EVP_md5(), NULL) != 1 ||
		    blake2b_init(&u->h_blake, 32))
			return refuse(u, 500, "cannot start the hashes");
	}
	u->in_file = 1;
	return 0;
}

static int part_begin(void *arg, const struct multipart_part *part)
{
	struct upload *u = arg;

	u->out = NULL;
	u->in_file = 0;
	if (part->filename && strcmp(part->name, "content") == 0)
		return open_file(u, part->filename);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (strcmp(part->name, fields[i].name) != 0)
			continue;
		u->out = (char *)u + fields[i].off;
		u->out_size = fields[i].size;
		u->out_len = 0;
		u->out_name = fields[i].name;
		u->out[0] = '\0';
	}
	return 0; /* any other field: ignored */
}

static int write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Counts n more bytes written, and starts the disk's writeback of each
 * KICK bytes as they are written: the fsync before the file is published
 * then waits for the last few MB only, not for the whole file (0.1 s of
 * a 50 MB upload). A hint: errors surface at the fsync. */
static void wrote(struct upload *u, size_t n)
{
	u->written += (long long)n;
#ifdef SYNC_FILE_RANGE_WRITE
	if (u->written - u->kicked >= KICK) {
		sync_file_range(u->fd, u->kicked, u->written - u->kicked,
				SYNC_FILE_RANGE_WRITE);
		u->kicked = u->written;
	}
#endif
}

/* Writes out what the file's buffer holds. Returns 0, or 1 (in u). */
static int flush_file(struct upload *u)
{
	int err;

	if (!u->wlen)
		return 0;
	err = write_all(u->fd, u->wbuf, u->wlen);
	if (err)
		return refuse(u, 500, "writing the upload: %s", strerror(err));
	wrote(u, u->wlen);
	u->wlen = 0;
	return 0;
}

static int part_data(void *arg, const char *data, size_t len)
{
	struct upload *u = arg;
	int err;

	if (u->in_file) {
		u->size += (long long)len;
		if (u->size > u->max)
			return refuse(u, 413, "%s is over max_upload_size "
				      "(%lld bytes)", u->filename, u->max);
		/* the parser hands the file over in pieces of a FastCGI
		 * record or less: written WBUF at a time, not a syscall
		 * each */
		if (u->wlen + len > WBUF && flush_file(u))
			return 1;
		if (len >= WBUF) {
			err = write_all(u->fd, data, len);
			if (err)
				return refuse(u, 500, "writing the upload: %s",
					      strerror(err));
			wrote(u, len);
		} else {
			memcpy(u->wbuf + u->wlen, data, len);
			u->wlen += len;
		}
		sha256_update(&u->h_sha, data, len);
		if (u->weak) {
			EVP_DigestUpdate(u->h_md5, data, len);
			blake2b_update(&u->h_blake, data, len);
		}
		return 0;
	}
	if (!u->out)
		return 0;
	if (u->out_len + len >= u->out_size)
		return refuse(u, 400, "form field %s is too long",
			      u->out_name);
	memcpy(u->out + u->out_len, data, len);
	u->out_len += len;
	u->out[u->out_len] = '\0';
	return 0;
}

static int part_end(void *arg)
{
	struct upload *u = arg;

	u->out = NULL;
	if (u->in_file) {
		u->in_file = 0;
		return flush_file(u);
	}
	return 0;
}

/* Reads the body through the parser: the fields into u, the file into
 * u->tmp. Returns 0, or 1 with u->status and u->reason set. */
static int read_body(struct upload *u, const char *boundary)
{
	static const struct multipart_callbacks cb = {part_begin, part_data,
						      part_end};
	struct multipart *mp = malloc(sizeof(*mp));
	char *buf = malloc(1 << 16);
	long long total = 0;
	ssize_t got;
	int rc = 0;

	if (!mp || !buf) {
		rc = refuse(u, 500, "out of memory");
		goto out;
	}
	if (multipart_init(mp, boundary, &cb, u)) {
		rc = refuse(u, 400, "%s", mp->err);
		goto out;
	}
	for (;;) {
		got = req_read_body(u->r, buf, 1 << 16);
		if (got < 0) {
			rc = refuse(u, 400, "the upload was cut short");
			goto out;
		}
		if (got == 0)
			break;
		/* the fields too: a chunked body has no length to refuse
		 * up front, and an endless field would tie the worker */
		total += got;
		if (total > u->max + FORM_SLACK) {
			rc = refuse(u, 413, "the upload is over "
				    "max_upload_size (%lld bytes)", u->max);
			goto out;
		}
		rc = multipart_feed(mp, buf, (size_t)got);
		if (rc)
			break;
	}
	if (!rc)
		rc = multipart_finish(mp);
	if (rc && !u->status)
		refuse(u, 400, "%s", mp->err);
	rc = rc ? 1 : 0;
out:
	free(mp);
	free(buf);
	return rc;
}

/* Checks the client's sha256_digest against the file's, and when it sent
 * none before the file (u->weak), each other digest it sent; sha256 gets
 * the file's own. Returns 0, or 1 with the failure in u. */
static int check_digests(struct upload *u, char sha256[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char md5[2 * EVP_MAX_MD_SIZE + 1], blake[2 * BLAKE2B_MAX_OUT + 1];

	sha256_final(&u->h_sha, sha256);
	if (*u->sha256 && strcasecmp(u->sha256, sha256) != 0)
		return refuse(u, 400, "sha256_digest does not match the "
			      "file (it is %s)", sha256);
	if (!u->weak)
		return 0;
	EVP_DigestFinal_ex(u->h_md5, md, &mdlen);
	hex_encode(md, mdlen, md5);
	blake2b_final_hex(&u->h_blake, blake);
	if (*u->md5 && strcasecmp(u->md5, md5) != 0)
		return refuse(u, 400, "md5_digest does not match the file "
			      "(it is %s)", md5);
	if (*u->blake2 && strcasecmp(u->blake2, blake) != 0)
		return refuse(u, 400, "blake2_256_digest does not match the "
			      "file (it is %s)", blake);
	return 0;
}

/* Checks the fields the upload must have. Returns 0 or 1 (in u). */
static int check_form(struct upload *u)
{
	if (strcmp(u->action, "file_upload") != 0)
		return refuse(u, 400, "%s%s: only file_upload is supported",
			      *u->action ? ":action " : "no :action",
			      u->action);
	if (*u->protocol && strcmp(u->protocol, "1") != 0)
		return refuse(u, 400, "protocol_version %s: only 1 is "
			      "supported", u->protocol);
	if (u->fd < 0)
		return refuse(u, 400, "no file in the upload (content)");
	if (!*u->name || !*u->version)
		return refuse(u, 400, "the upload names no %s",
			      *u->name ? "version" : "project (name)");
	return 0;
}

/* Whether an sdist's PKG-INFO of that Metadata-Version can stand for its
 * metadata: 2.2 or later. */
static int sdist_metadata_reliable(const char *version)
{
	char *end;
	long major = strtol(version, &end, 10), minor = 0;

	if (*end == '.')
		minor = strtol(end + 1, NULL, 10);
	return major > 2 || (major == 2 && minor >= 2);
}

/* Takes the garbage notes of the blobs h names, before they are stored:
 * bytes a replaced or removed upload left for the collector (the same
 * file uploaded again) stay, since the note's taker decides (pages.c
 * gc_collect_replaced), and the use recorded now keeps eviction off them until
 * they are published. Returns 0 or an errno. */
static int keep_blobs(struct worker *w, const struct db_hosted *h)
{
	int rc = db_begin(w->db);

	if (rc)
		return rc;
	if (db_garbage_take(w->db, h->sha256) == EIO ||
	    (*h->meta_sha && db_garbage_take(w->db, h->meta_sha) == EIO)) {
		db_rollback(w->db);
		return EIO;
	}
	/* under the lock eviction decides under (storage/gc.h): one that
	 * comes after sees the use, one before has unlinked the blob
	 * already, and it is stored anew */
	lru_touch(h->sha256);
	if (*h->meta_sha)
		lru_touch(h->meta_sha);
	rc = db_commit(w->db);
	if (rc) {
		db_rollback(w->db);
		return rc;
	}
	return 0;
}

/* Notes the blobs stored for a refused upload as garbage. */
static void forget_blobs(struct worker *w, const struct db_hosted *h)
{
	long long now = (long long)time(NULL);

	db_garbage_add(w->db, h->sha256, now);
	if (*h->meta_sha)
		db_garbage_add(w->db, h->meta_sha, now);
}

/* Checks the file, stores it and its metadata, and publishes it in the
 * hosted index at position target. Returns 0 or 1 (in u); *changed says
 * whether the index changed. */
static int publish(struct worker *w, struct upload *u, int target,
		   int *changed)
{
	const char *data_dir = w->conf->data_dir;
	struct dist_info info;
	struct db_hosted h = {0};
	struct hosted_bytes bytes;
	char err[1024];
	int rc;

	if (check_digests(u, h.sha256))
		return 1;
	/* refused before anything is stored; hosted_publish() checks again
	 * under its lock, for an upload of the same name meanwhile */
	if (hosted_conflicts(w, target, u->filename, h.sha256, err,
			      sizeof(err)))
		return refuse(u, 409, "%s", err);
	rc = dist_inspect(u->fd, u->filename, u->name, u->version, &info, err,
			  sizeof(err));
	if (rc)
		return refuse(u, rc == EINVAL ? 400 : 500, "%s", err);
	if (names_normalize(info.name, h.project, sizeof(h.project)) != 0) {
		dist_info_free(&info);
		return refuse(u, 400, "bad project name %s", info.name);
	}
	/* one release, however its files spell the version: 1.0rc1 and
	 * 1.0-RC1 are yanked and listed together */
	if (distname_version_canon(info.version, h.version,
				   sizeof(h.version)) ||
	    !json_utf8_valid(info.requires_python)) {
		dist_info_free(&info);
		return refuse(u, 400, "bad Version or Requires-Python in the "
			      "metadata");
	}
	snprintf(h.filename, sizeof(h.filename), "%s", u->filename);
	snprintf(h.requires_python, sizeof(h.requires_python), "%s",
		 info.requires_python);
	h.size = u->size;
	/* a wheel's METADATA is its PEP 658 metadata; an sdist's PKG-INFO
	 * only from Metadata-Version 2.2 (PEP 643), which marks the fields
	 * that a build may change: before it, nothing in it is reliable */
	if (info.kind == DISTNAME_WHEEL ||
	    sdist_metadata_reliable(info.metadata_version))
		sha256_hex(info.metadata, info.metadata_len, h.meta_sha);
	worker_make_room(w, w->db, u->size + (long long)info.metadata_len);
	rc = keep_blobs(w, &h);
	if (!rc && *h.meta_sha)
		rc = blob_put(data_dir, info.metadata, info.metadata_len,
			      h.meta_sha);
	if (!rc)
		rc = blob_commit(data_dir, u->tmp, u->fd, h.sha256);
	if (rc) {
		dist_info_free(&info);
		forget_blobs(w, &h);
		return refuse(u, 500, "storing %s: %s", u->filename,
			      strerror(rc));
	}
	bytes.fd = u->fd;
	bytes.meta = *h.meta_sha ? info.metadata : NULL;
	bytes.meta_len = info.metadata_len;
	rc = hosted_publish(w, target, &h, &bytes, changed, err, sizeof(err));
	dist_info_free(&info);
	if (rc) {
		/* what was stored for it goes with the collector, unless
		 * something else names the same bytes */
		forget_blobs(w, &h);
		return refuse(u, rc == EEXIST ? 409 : 500, "%s", err);
	}
	if (*changed)
		lru_added(u->size);
	return 0;
}

void upload_serve(struct worker *w, struct req *r, const struct route *rt)
{
	const char *type = req_env(r, "CONTENT_TYPE");
	int target = hosted_target(w->conf, rt->index), changed = 0;
	struct upload *u;
	char boundary[MULTIPART_MAX_BOUNDARY + 1];
	long long max;

	if (target < 0) {
		/* the path still takes reads: its landing page */
		req_header(r, "Allow", "GET, HEAD");
		req_error(r, 405, "not a hosted index: upload to a hosted "
			  "index, or a virtual index over one");
		return;
	}
	/* the token before the body, and before anything is said of it: a
	 * refused client sends nothing big and learns nothing */
	if (auth_allow(w, r, rt->index, target, TOKEN_UPLOAD, NULL))
		return;
	if (!r->conn && (!req_env(r, "CONTENT_LENGTH") ||
			 !*req_env(r, "CONTENT_LENGTH"))) {
		/* CGI reads its body by its length */
		req_error(r, 411, "an upload needs a Content-Length here");
		return;
	}
	max = w->conf->index[target].max_upload_size;
	if (r->body_left > max + FORM_SLACK) {
		req_error(r, 413, "the upload is over max_upload_size");
		return;
	}
	if (!type || multipart_boundary(type, boundary, sizeof(boundary))) {
		req_error(r, 400, "expected a multipart/form-data body");
		return;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		req_error(r, 500, "out of memory");
		return;
	}
	u->r = r;
	u->conf = w->conf;
	u->max = max;
	u->fd = -1;
	worker_shed(w); /* a long body ties this worker */
	if (!read_body(u, boundary) && !check_form(u)) {
		char project[NAMES_MAX_PROJECT + 1];

		if (names_normalize(u->name, project, sizeof(project)) != 0)
			refuse(u, 400, "bad project name %s", u->name);
		else if (auth_allow(w, r, rt->index, target, TOKEN_UPLOAD,
				    project))
			u->status = -1; /* answered */
		else
			publish(w, u, target, &changed);
	}
	if (u->status > 0) {
		log_warn(0, u->filename[0] ? u->filename : r->path,
			 "upload refused: %s", u->reason);
		req_error(r, u->status, u->reason);
	} else if (u->status == 0) {
		const char *ok = changed ? "OK\n" : "OK (already there)\n";

		req_reply(r, 200, "text/plain; charset=utf-8", ok, strlen(ok));
	}
	if (u->fd >= 0) {
		close(u->fd);
		unlink(u->tmp); /* gone already when it was published */
	}
	if (u->h_md5)
		EVP_MD_CTX_free(u->h_md5);
	sha256_abort(&u->h_sha);
	free(u->wbuf);
	free(u);
}
