#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/http/accept.h"
#include "common/log.h"
#include "fcgi/server/send.h"
#include "storage/blob.h"
#include "storage/lru.h"

#define CHUNK (256 * 1024)

/* With X-Accel-Redirect, a blob smaller than this goes out from larder
 * itself whatever the caller asked (inline_under 0): nginx ends the
 * upstream request the moment it reads an X-Accel-Redirect, before the
 * FCGI_END_REQUEST that would let it keep the connection (nginx 1.22,
 * ngx_http_upstream_process_headers), so each small file or .metadata
 * cost a connect and an accept more than its bytes. 24 KiB and the
 * headers fit nginx's default fastcgi_buffers (8 4k) in memory. */
#define ACCEL_INLINE_UNDER (24 * 1024)

int send_parse_range(const char *h, long long size, long long *from,
		     long long *to)
{
	char *end;
	long long a, b;

	if (!h || strncmp(h, "bytes=", 6) != 0 || strchr(h, ','))
		return 0;
	h += 6;
	if (*h == '-') {
		b = strtoll(h + 1, &end, 10);
		if (end == h + 1 || *end || b <= 0)
			return b == 0 && end != h + 1 && !*end ? -1 : 0;
		*from = b >= size ? 0 : size - b;
		*to = size - 1;
		return size > 0 ? 1 : -1;
	}
	a = strtoll(h, &end, 10);
	if (end == h || *end != '-' || a < 0)
		return 0;
	h = end + 1;
	if (!*h) {
		b = size - 1;
	} else {
		b = strtoll(h, &end, 10);
		if (*end)
			return 0;
		if (b < a) /* reversed: no byte satisfies it */
			return -1;
		if (b >= size)
			b = size - 1;
	}
	if (a >= size)
		return -1;
	*from = a;
	*to = b;
	return 1;
}

static int etag_matches(const char *inm, const char *sha)
{
	return inm && (strcmp(inm, "*") == 0 || strstr(inm, sha));
}

/* Whether the ETag a 304 answers If-None-Match inm with is the gzip'd
 * copy's ("<sha>-gz"): the one the client holds, or when it holds both
 * (or says "*") the one it would get now (gz). */
static int etag_gz(const char *inm, const char *sha, int gz)
{
	char tag[80];
	int plain, zipped;

	snprintf(tag, sizeof(tag), "%s\"", sha);
	plain = strstr(inm, tag) != NULL;
	snprintf(tag, sizeof(tag), "%s-gz\"", sha);
	zipped = strstr(inm, tag) != NULL;
	return plain == zipped ? gz : zipped;
}

/* Whether the web server keeps the Content-Encoding of an X-Sendfile
 * answer (it sets LARDER_SENDFILE_GZIP=1 for larder). */
static int keeps_encoding(struct req *r)
{
	return req_env_on(r, "LARDER_SENDFILE_GZIP");
}

/* The path of blob sha, or of its gzip'd copy when gz. */
static int path_of(const struct conf *c, const char *sha, int gz, char *out,
		   size_t outlen)
{
	return gz ? blob_gz_path(c->data_dir, sha, out, outlen) :
		    blob_path(c->data_dir, sha, out, outlen);
}

/* Sends the blob itself (CGI, or a server without X-Sendfile), or its
 * gzip'd copy when gz, with Range (of the bytes sent). Returns 0 once a
 * response went out (complete, or cut off on a read error), or an errno
 * with nothing sent. */
static int stream(struct worker *w, struct req *r, const char *sha, int gz,
		  const struct send_opts *o)
{
	/* one buffer for the life of the (single-threaded) process: sending
	 * a file never waits on, nor fails for, an allocation */
	static char chunk[CHUNK];
	char path[PATH_MAX];
	long long from = 0, to, left;
	struct stat st;
	int fd, rc, status = 200;
	ssize_t n;

	(void)o;
	path_of(w->conf, sha, gz, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) < 0) {
		rc = errno;
		close(fd);
		return rc;
	}
	to = st.st_size - 1;
	req_header(r, "Accept-Ranges", "bytes");
	rc = send_parse_range(req_env(r, "HTTP_RANGE"), st.st_size, &from, &to);
	if (rc < 0) {
		close(fd);
		req_header(r, "Content-Range", "bytes */%lld",
			   (long long)st.st_size);
		req_reply(r, 416, "text/plain", "range not satisfiable\n", 22);
		return 0;
	}
	if (rc > 0) {
		status = 206;
		req_header(r, "Content-Range", "bytes %lld-%lld/%lld", from,
			   to, (long long)st.st_size);
	}
	left = st.st_size ? to - from + 1 : 0;
	req_header(r, "Content-Length", "%lld", left);
	rc = req_start(r, status);
	while (!rc && !r->head && left > 0) {
		n = pread(fd, chunk, left < CHUNK ? (size_t)left : CHUNK, from);
		if (n <= 0) {
			log_error(n < 0 ? errno : 0, path, "short read");
			req_abort(r);
			break;
		}
		rc = req_write(r, chunk, (size_t)n);
		from += n;
		left -= n;
	}
	close(fd);
	return 0;
}

/* Counts as sent what the web server is handed to send for r: the blob
 * (of o->size bytes, or as its file says), or the range asked for. */
static void handed_over(const struct conf *c, struct req *r,
			const char *sha256, int gz, const struct send_opts *o)
{
	char path[PATH_MAX];
	long long size = o->size, from, to;
	struct stat st;

	if (r->head)
		return;
	if (!o->have_size || gz) {
		if (path_of(c, sha256, gz, path, sizeof(path)) ||
		    stat(path, &st) < 0)
			return;
		size = st.st_size;
	}
	r->bytes = size;
	if (send_parse_range(req_env(r, "HTTP_RANGE"), size, &from, &to) > 0)
		r->bytes = to - from + 1;
}

/* Sends blob sha256, or its gzip'd copy when gz, in the representation's
 * headers: by X-Sendfile, or by larder itself when inl says so, in stream
 * mode, and for a copy a web server would strip of its Content-Encoding.
 * Returns as stream(). */
static int send_one(struct worker *w, struct req *r, const char *sha256,
		    int gz, int inl, const struct send_opts *o)
{
	const struct conf *c = w->conf;
	char rel[128];

	/* a different representation: a strong ETag of the plain bytes
	 * must not name it */
	req_header(r, "ETag", "\"%s%s\"", sha256, gz ? "-gz" : "");
	if (gz)
		req_header(r, "Content-Encoding", "gzip");
	/* Apache's mod_xsendfile drops the Content-Encoding of what it is
	 * handed: the copy goes out from here unless the web server says
	 * it keeps it (lighttpd: conf/lighttpd.conf) */
	if (inl || c->sendfile != CONF_SENDFILE_XSENDFILE ||
	    (gz && !keeps_encoding(r)) ||
	    blob_relpath(sha256, rel, sizeof(rel)))
		return stream(w, r, sha256, gz, o);
	req_header(r, "X-Sendfile", "%s/%s%s", c->data_dir, rel,
		   gz ? ".gz" : "");
	if (req_start(r, 200))
		return EPIPE;
	handed_over(c, r, sha256, gz, o);
	return 0;
}

const char *send_immutable(const struct req *r)
{
	return r->private_index ? SEND_PRIVATE_IMMUTABLE : SEND_IMMUTABLE;
}

int send_stored(struct worker *w, const char *sha256)
{
	lru_touch(sha256);
	return blob_exists(w->conf->data_dir, sha256);
}

int send_blob(struct worker *w, struct req *r, const char *sha256,
	      const struct send_opts *o)
{
	const struct conf *c = w->conf;
	const char *cc = o->cache_control;
	const char *inm = req_env(r, "HTTP_IF_NONE_MATCH");
	size_t mark = req_header_mark(r), rep;
	long long under, from, to;
	char rel[128], path[PATH_MAX];
	struct stat st;
	int rc, gz, inl, takes_gz;

	rc = blob_relpath(sha256, rel, sizeof(rel));
	if (rc)
		return rc;
	/* the collector spares what was handed out within gc_grace */
	lru_touch(sha256);
	/* a blob gone from the store (evicted after the caller looked) is
	 * the caller's miss, fetched or rendered again: not a 404 from a
	 * web server handed its path (X-Accel-Redirect, X-Sendfile). One
	 * stat says that and its size: a warm small file's answer is some
	 * fifteen system calls, and each counts. */
	if (blob_path(c->data_dir, sha256, path, sizeof(path)) ||
	    stat(path, &st) < 0)
		return ENOENT;
	/* the gzip'd copy when the client takes it and the page has one (a
	 * page whose gzip is no smaller has none) */
	takes_gz = o->gzip && accept_gzip(req_env(r, "HTTP_ACCEPT_ENCODING"));
	gz = takes_gz && blob_gz_size(c->data_dir, sha256) >= 0;
	/* nginx keeps an answer under its URL whatever the method: never a
	 * HEAD's, which has no body, for the GETs after it (unless the key
	 * holds the method: front_head); never one that needed a token (it
	 * would hand it to anyone); never one with no expiry (the caller's
	 * answer to this client alone); never a page sent plain to a client
	 * that takes gzip, as its copy may be on its way (a cold page's
	 * copies are made after its answer, by the worker that fetched it:
	 * any worker may be the one asked meanwhile). Said before
	 * Cache-Control: nginx 1.22 heeds the first of the two it reads,
	 * and a "no-cache" read first keeps nothing. */
	if (o->front_cache &&
	    (r->private_index || (r->head && !o->front_head) ||
	     (takes_gz && !gz) || !o->expires)) {
		req_header(r, "X-Accel-Expires", "0");
	} else if (o->front_cache) {
		long long last = o->expires - 1; /* the last second fresh */

		if (last >= (long long)time(NULL))
			req_header(r, "X-Accel-Expires", "@%lld", last);
		else
			req_header(r, "X-Accel-Expires", "0");
	}
	if (o->content_type)
		req_header(r, "Content-Type", "%s", o->content_type);
	/* an answer that needed a token is the client's alone: no shared
	 * cache, and not the web server's (which would hand it to anyone) */
	if (r->private_index)
		cc = cc && !strcmp(cc, SEND_IMMUTABLE) ? SEND_PRIVATE_IMMUTABLE :
							 "private";
	if (cc)
		req_header(r, "Cache-Control", "%s", cc);
	if (o->expires)
		req_header_date(r, "Expires", o->expires);
	if (o->gzip)
		req_header(r, "Vary", o->vary_accept ? "Accept, Accept-Encoding" :
						       "Accept-Encoding");
	else if (o->vary_accept)
		req_header(r, "Vary", "Accept");
	/* Answered here in every mode: the web server only knows its own
	 * validators for the file, not ours. */
	if (!o->whole && etag_matches(inm, sha256)) {
		req_header(r, "ETag", "\"%s%s\"", sha256,
			   etag_gz(inm, sha256, gz) ? "-gz" : "");
		return req_start(r, 304) ? EPIPE : 0;
	}
	/* a range no byte satisfies is 416 from here, whoever sends the
	 * bytes: nginx ignores a reversed one and sends the whole blob (200),
	 * where lighttpd, docker-registry and the OCI conformance suite say
	 * 416. (A gzip'd copy's ranges are the sender's to judge.) */
	if (!gz && send_parse_range(req_env(r, "HTTP_RANGE"), st.st_size,
				    &from, &to) < 0) {
		req_header_rewind(r, mark);
		req_header(r, "Content-Range", "bytes */%lld",
			   (long long)st.st_size);
		return req_reply(r, 416, "text/plain",
				 "range not satisfiable\n", 22) ? EPIPE : 0;
	}
	/* (an inline_under of 1 is HEADs only: no stat for a GET) */
	under = o->inline_under;
	if (c->sendfile == CONF_SENDFILE_ACCEL && under < ACCEL_INLINE_UNDER)
		under = ACCEL_INLINE_UNDER;
	inl = o->inline_body ||
	      (under > 0 &&
	       (r->head || (under > 1 && st.st_size < under)));
	if (!inl && c->sendfile == CONF_SENDFILE_ACCEL) {
		/* nginx picks the copy itself (gzip_static in the internal
		 * location) and gives its ETag the "-gz" (conf/nginx.conf) */
		req_header(r, "ETag", "\"%s\"", sha256);
		req_header(r, "X-Accel-Redirect", "%s%s", c->sendfile_prefix,
			   rel);
		if (req_start(r, 200))
			return EPIPE;
		if (!o->have_size) {
			struct send_opts known = *o;

			known.size = st.st_size;
			known.have_size = 1;
			handed_over(c, r, sha256, 0, &known);
		} else {
			handed_over(c, r, sha256, 0, o);
		}
		return 0;
	}
	/* a small file's bytes sent from here: nginx's page cache may keep
	 * them as it keeps pages, for as long as the caller says (the bytes
	 * never change; whether they are still to be served does); never a
	 * HEAD's (no body: unless the caller's web server keys HEADs apart),
	 * a range, a token's answer, nor a file too big to have come this
	 * way */
	if (o->front_small) {
		const char *range = req_env(r, "HTTP_RANGE");

		/* (an empty Range is none: nginx may pass one) */
		if (inl && !r->private_index && !gz &&
		    (r->head ? o->front_head :
			       st.st_size < ACCEL_INLINE_UNDER) &&
		    !(range && *range) &&
		    o->front_until >= (long long)time(NULL))
			req_header(r, "X-Accel-Expires", "@%lld",
				   o->front_until);
		else
			req_header(r, "X-Accel-Expires", "0");
	}
	rep = req_header_mark(r);
	rc = send_one(w, r, sha256, gz, inl, o);
	if (rc == ENOENT && gz) {
		/* the copy went meanwhile (fsck --repair): the plain bytes */
		req_header_rewind(r, rep);
		rc = send_one(w, r, sha256, 0, inl, o);
	}
	if (rc) /* nothing sent: the caller answers, without our headers */
		req_header_rewind(r, mark);
	return rc;
}
