#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/hash/sha256.h"
#include "common/log.h"
#include "common/url.h"
#include "storage/fetch.h"
#include "storage/fetch_priv.h"
#include "storage/stats.h"

#define MAX_REDIRECTS 5
#define MAX_RETRY_AFTER 10 /* seconds; longer and we give up instead */
/* What one read from an upstream connection may bring (libcurl's default
 * is 16 KiB): every read is a write to the temp file, a hash update and a
 * read and send to the client, so a file arriving fast costs a quarter of
 * the system calls. Under glibc's mmap threshold, so the buffer stays on
 * the heap across the handle's reuse. */
#define RECV_BUFFER (64 * 1024)

static CURL *handle;

/* Returns the process's handle, reset for a new transfer: curl_easy_reset
 * keeps the live connections, the TLS session and DNS caches. */
CURL *fetch_easy(void)
{
	static int global;

	if (!global) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		global = 1;
	}
	if (!handle)
		handle = curl_easy_init();
	else
		curl_easy_reset(handle);
	return handle;
}

void fetch_forget(void)
{
	handle = NULL;
}

int fetch_unwell(int err)
{
	return err == ECONNREFUSED || err == EHOSTUNREACH || err == ETIMEDOUT;
}

long fetch_max_silence(const struct fetch_opts *o)
{
	long per_try = o->connect_timeout + o->first_byte_timeout +
		       o->idle_timeout;
	long backoff = 0;

	for (long i = 0; i < o->retries; i++)
		backoff += MAX_RETRY_AFTER; /* fetch_backoff() waits at most that */
	return per_try * (o->retries + 1) + backoff;
}

/* Fails an attempt that connected but got no answer in time, or that has
 * gone idle_timeout seconds without a byte. (libcurl's low-speed check
 * averages over a window of about five seconds, so after a burst it fires
 * that much late; it stays as a backstop.) */
static int progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow,
		    curl_off_t ultotal, curl_off_t ulnow)
{
	struct head *h = ctx;
	time_t now = time(NULL);

	(void)dltotal, (void)ultotal, (void)ulnow;
	if (dlnow != h->seen) {
		h->seen = dlnow;
		h->moved = now;
	}
	if (!h->answered)
		return h->first_byte_timeout > 0 &&
		       now - h->start > h->first_byte_timeout;
	if (h->idle_timeout > 0 && now - h->moved > h->idle_timeout) {
		h->idle = 1;
		return 1;
	}
	return 0;
}

/* Copies a header's value (trimmed) when line is "name: value". */
static int header_value(const char *line, size_t len, const char *name,
			char *out, size_t outlen)
{
	size_t nl = strlen(name);
	size_t i, end;

	if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return 0;
	i = nl + 1;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	end = len;
	while (end > i && isspace((unsigned char)line[end - 1]))
		end--;
	if (end - i >= outlen)
		end = i + outlen - 1;
	memcpy(out, line + i, end - i);
	out[end - i] = '\0';
	return 1;
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct head *h = ctx;
	struct fetch_page *r = h->page;
	size_t len = size * n;
	char v[256];

	h->moved = time(NULL);
	if (len > 5 && strncmp(p, "HTTP/", 5) == 0) {
		h->answered = 1;
		h->retry_after = -1;
		h->range_start = h->range_total = -1;
		h->expires = h->date = 0;
		if (r) {
			r->etag[0] = r->last_modified[0] = '\0';
			r->content_type[0] = '\0';
			r->digest[0] = r->authenticate[0] = r->link[0] = '\0';
			r->max_age = -1;
			r->no_store = 0;
		}
		return len;
	}
	if (header_value(p, len, "retry-after", v, sizeof(v)) &&
	    isdigit((unsigned char)v[0]))
		h->retry_after = strtol(v, NULL, 10);
	if (header_value(p, len, "content-range", v, sizeof(v)) &&
	    sscanf(v, "bytes %lld-%*d/%lld", &h->range_start,
		   &h->range_total) != 2)
		h->range_start = h->range_total = -1;
	if (!r)
		return len;
	if (header_value(p, len, "expires", v, sizeof(v)))
		h->expires = curl_getdate(v, NULL);
	if (header_value(p, len, "date", v, sizeof(v)) &&
	    (h->date = curl_getdate(v, NULL)) < 0)
		h->date = 0;
	header_value(p, len, "etag", r->etag, sizeof(r->etag));
	header_value(p, len, "last-modified", r->last_modified,
		     sizeof(r->last_modified));
	header_value(p, len, "content-type", r->content_type,
		     sizeof(r->content_type));
	header_value(p, len, "docker-content-digest", r->digest,
		     sizeof(r->digest));
	header_value(p, len, "www-authenticate", r->authenticate,
		     sizeof(r->authenticate));
	header_value(p, len, "link", r->link, sizeof(r->link));
	if (header_value(p, len, "cache-control", v, sizeof(v))) {
		const char *m = strcasestr(v, "max-age=");

		if (m)
			r->max_age = strtol(m + 8, NULL, 10);
		if (strcasestr(v, "no-store") || strcasestr(v, "no-cache"))
			r->no_store = 1;
	}
	return len;
}

int fetch_shown(int ret, char *err, size_t errlen)
{
	char text[2048];

	if (ret && err && errlen) {
		snprintf(text, sizeof(text), "%s", err);
		url_redact(text, err, errlen);
	}
	return ret;
}

/* The errno for an answer that is an HTTP error status. */
int fetch_status_errno(long status)
{
	if (status == 404 || status == 410)
		return ENODATA;
	if (status == 401 || status == 403)
		return EACCES;
	return EPROTO;
}

/* Appends the header "name: value" to list. */
static struct curl_slist *add_header(struct curl_slist *list,
				     const char *name, const char *value)
{
	struct buf line;

	buf_init(&line, strlen(name) + strlen(value) + 3);
	if (buf_addf(&line, "%s: %s", name, value) == 0)
		list = curl_slist_append(list, buf_str(&line));
	buf_free(&line);
	return list;
}

/* Appends o->auth to list when url is on the upstream's own origin. */
struct curl_slist *fetch_add_auth(struct curl_slist *list,
				   const struct fetch_opts *o, const char *url)
{
	char a[300], b[300];

	if (!o->auth || !*o->auth || !o->trust_base ||
	    url_origin(url, a, sizeof(a)) ||
	    url_origin(o->trust_base, b, sizeof(b)) || strcmp(a, b) != 0)
		return list;
	return add_header(list, "Authorization", o->auth);
}

void fetch_setup(CURL *c, const struct fetch_opts *o, const char *url,
		  char *errbuf, struct head *h)
{
	struct fetch_page *page = h->page;

	memset(h, 0, sizeof(*h));
	h->page = page;
	h->retry_after = -1;
	h->range_start = h->range_total = -1;
	h->start = h->moved = time(NULL);
	h->first_byte_timeout = o->first_byte_timeout;
	h->idle_timeout = o->idle_timeout;
	errbuf[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, o->connect_timeout);
	/* A backstop behind progress(): less than a byte a second for as
	 * long as both of its limits together. (libcurl counts the wait for
	 * the answer too, so idle_timeout alone would cut every slow first
	 * byte at idle_timeout, whatever first_byte_timeout says.) */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME,
			 o->idle_timeout + o->first_byte_timeout);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "larder/" PACKAGE_VERSION);
	/* idle upstream connections stay up between misses */
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, h);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, h);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_BUFFERSIZE, (long)RECV_BUFFER);
}

/* Maps a libcurl failure to an errno and a reason. */
int fetch_curl_errno(CURLcode rc, const struct head *h, const char *errbuf,
		      const char *url, char *err, size_t errlen)
{
	if (rc == CURLE_ABORTED_BY_CALLBACK && h->idle) {
		snprintf(err, errlen, "%s: no data for %ld seconds", url,
			 h->idle_timeout);
		return ETIMEDOUT;
	}
	if (rc == CURLE_ABORTED_BY_CALLBACK) {
		snprintf(err, errlen, "%s: no answer in time", url);
		return ETIMEDOUT;
	}
	snprintf(err, errlen, "%s: %s", url,
		 *errbuf ? errbuf : curl_easy_strerror(rc));
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
		return EHOSTUNREACH;
	case CURLE_WRITE_ERROR:
		return ENOSPC;
	default:
		return EIO;
	}
}

/* Counts the body bytes an attempt received (as they came, compressed or
 * not). */
void fetch_count_received(CURL *c)
{
	curl_off_t n = 0;

	if (curl_easy_getinfo(c, CURLINFO_SIZE_DOWNLOAD_T, &n) == CURLE_OK &&
	    n > 0)
		stats_add(STATS_FETCHED_BYTES, (uint64_t)n);
}

/* Counts a fetch that ended in err (0: an answer) with the final status
 * by what went wrong, when something did. */
void fetch_count_failure(int err, long status)
{
	enum stats_counter c;

	if (!err && status < 400)
		return;
	if (err == ENOMEM)
		return; /* ours, not the upstream's */
	if (err == ECONNREFUSED || err == EHOSTUNREACH)
		c = STATS_UP_CONNECT;
	else if (err == ETIMEDOUT)
		c = STATS_UP_TIMEOUT;
	else if (err == E2BIG)
		c = STATS_UP_TOO_BIG;
	else if (err == EPERM)
		c = STATS_UP_REDIRECT;
	else if (err == EREMOTEIO || status >= 500 || status == 429)
		c = STATS_UP_HTTP_5XX;
	else if (status >= 400)
		c = STATS_UP_HTTP_4XX;
	else
		c = STATS_UP_PROTOCOL;
	stats_add(c, 1);
}

int fetch_transient_curl(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_ABORTED_BY_CALLBACK:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return 1;
	default:
		return 0;
	}
}

int fetch_transient_status(long status)
{
	return status == 429 || status == 408 || status == 502 ||
	       status == 503 || status == 504 || status == 500;
}

/* Waits before try number attempt+1: 250 ms doubling, or Retry-After.
 * Returns 0, or -1 when upstream asks for a longer wait than we give. */
int fetch_backoff(int attempt, long retry_after)
{
	long ms = 250L << attempt;

	if (retry_after > MAX_RETRY_AFTER)
		return -1;
	if (retry_after >= 0)
		ms = retry_after * 1000;
	if (ms > MAX_RETRY_AFTER * 1000)
		ms = MAX_RETRY_AFTER * 1000;
	usleep((useconds_t)ms * 1000);
	return 0;
}

/* After a 3xx: copies the next URL to cur when it is allowed. Returns 0,
 * or EPERM / EIO with a reason. */
int fetch_follow_redirect(CURL *c, const struct fetch_opts *o, char *cur,
			   size_t curlen, int *hops, char *err, size_t errlen)
{
	char *next = NULL;

	curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &next);
	if (!next) {
		snprintf(err, errlen, "%s: redirect without a location", cur);
		return EIO;
	}
	if (++*hops > MAX_REDIRECTS) {
		snprintf(err, errlen, "%s: too many redirects", cur);
		return EIO;
	}
	if (!o->trust_base ||
	    !url_host_trusted(next, o->trust_base, o->trusted)) {
		char shown[FETCH_URL_MAX];

		/* masked before it is cut: a cut signature no longer looks
		 * like one */
		snprintf(err, errlen, "%s: refusing redirect to untrusted %.200s",
			 cur, url_redact(next, shown, sizeof(shown)));
		return EPERM;
	}
	if (strlen(next) >= curlen) {
		snprintf(err, errlen, "%s: redirect URL too long", cur);
		return EIO;
	}
	strcpy(cur, next);
	return 0;
}

int fetch_is_redirect(long status)
{
	return status == 301 || status == 302 || status == 303 ||
	       status == 307 || status == 308;
}

CURLcode fetch_perform(CURL *c, const struct fetch_opts *o, const char *url,
		       long *status)
{
	struct curl_slist *hdrs = fetch_add_auth(NULL, o, url);
	CURLcode rc;

	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	rc = curl_easy_perform(c);
	fetch_count_received(c);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdrs);
	*status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	return rc;
}

static size_t page_body(char *p, size_t size, size_t n, void *ctx)
{
	struct fetch_page *r = ctx;

	if (buf_add(&r->body, p, size * n))
		return 0; /* over the cap: abort the transfer */
	return size * n;
}

/* An Expires without a max-age (which wins over it, RFC 9111 5.3) is a
 * max-age of Expires - Date: another larder's page says so, and so a
 * node behind it keeps its copy no longer than the upstream node would.
 * An Expires that cannot be read, or is past, is a max-age of 0. */
static void expires_max_age(const struct head *h, struct fetch_page *r)
{
	time_t base = h->date ? h->date : time(NULL);

	if (r->max_age >= 0 || !h->expires)
		return;
	r->max_age = h->expires < 0 || h->expires <= base ?
			     0 : (long)(h->expires - base);
}

/* The request headers of a page fetch of url. */
static struct curl_slist *page_headers(const struct fetch_opts *o,
				       const char *url, const char *accept,
				       const char *etag,
				       const char *last_modified)
{
	struct curl_slist *hdrs = add_header(NULL, "Accept", accept);

	if (etag && *etag)
		hdrs = add_header(hdrs, "If-None-Match", etag);
	if (last_modified && *last_modified)
		hdrs = add_header(hdrs, "If-Modified-Since", last_modified);
	return fetch_add_auth(hdrs, o, url);
}

static int page_request(const struct fetch_opts *o, const char *url,
			const char *accept, const char *etag,
			const char *last_modified, int head,
			struct fetch_page *r, char *err, size_t errlen)
{
	char errbuf[CURL_ERROR_SIZE];
	struct curl_slist *hdrs = NULL;
	struct head h;
	int attempt = 0, hops = 0, ret;
	CURLcode rc;
	CURL *c;

	memset(r, 0, sizeof(*r));
	buf_init(&r->body, o->max_body);
	snprintf(r->url, sizeof(r->url), "%s", url);
	for (;;) {
		c = fetch_easy();
		if (!c) {
			snprintf(err, errlen, "%s: curl_easy_init failed", url);
			ret = ENOMEM;
			break;
		}
		buf_reset(&r->body);
		h.page = r;
		fetch_setup(c, o, r->url, errbuf, &h);
		curl_slist_free_all(hdrs);
		hdrs = page_headers(o, r->url, accept, etag, last_modified);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
		if (head) {
			curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
		} else {
			curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
			curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, page_body);
			curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
		}
		rc = curl_easy_perform(c);
		fetch_count_received(c);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
		r->retry_after = h.retry_after;
		expires_max_age(&h, r);
		if (rc == CURLE_WRITE_ERROR && r->body.len + CURL_MAX_WRITE_SIZE >
						      o->max_body) {
			snprintf(err, errlen, "%s: page larger than %zu bytes",
				 r->url, o->max_body);
			ret = E2BIG;
			break;
		}
		if (rc != CURLE_OK) {
			ret = fetch_curl_errno(rc, &h, errbuf, r->url, err, errlen);
			if (fetch_transient_curl(rc) && attempt < o->retries &&
			    fetch_backoff(attempt++, -1) == 0)
				continue;
			break;
		}
		if (fetch_is_redirect(r->status)) {
			ret = fetch_follow_redirect(c, o, r->url, sizeof(r->url),
					      &hops, err, errlen);
			if (ret)
				break;
			continue;
		}
		if (fetch_transient_status(r->status) && attempt < o->retries &&
		    fetch_backoff(attempt++, r->retry_after) == 0)
			continue;
		ret = 0;
		break;
	}
	if (c)
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdrs);
	fetch_count_failure(ret, r->status);
	return ret;
}

int fetch_page(const struct fetch_opts *o, const char *url,
	       const char *accept, const char *etag,
	       const char *last_modified, struct fetch_page *r, char *err,
	       size_t errlen)
{
	return fetch_shown(page_request(o, url, accept, etag, last_modified,
					0, r, err, errlen),
			   err, errlen);
}

int fetch_page_head(const struct fetch_opts *o, const char *url,
		    const char *accept, struct fetch_page *r, char *err,
		    size_t errlen)
{
	return fetch_shown(page_request(o, url, accept, NULL, NULL, 1, r, err,
					errlen),
			   err, errlen);
}

/* fetch_head(), with the final status in *status. */
static int head_request(const struct fetch_opts *o, const char *url,
			long long *size, long *status, char *err,
			size_t errlen)
{
	struct curl_slist *hdrs;
	char errbuf[CURL_ERROR_SIZE];
	char cur[FETCH_URL_MAX];
	curl_off_t cl;
	struct head h;
	int attempt = 0, hops = 0;
	CURLcode rc;
	CURL *c;

	*size = -1;
	snprintf(cur, sizeof(cur), "%s", url);
	for (;;) {
		c = fetch_easy();
		if (!c) {
			snprintf(err, errlen, "%s: curl_easy_init failed", url);
			return ENOMEM;
		}
		h.page = NULL;
		fetch_setup(c, o, cur, errbuf, &h);
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
		hdrs = fetch_add_auth(NULL, o, cur);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
		rc = curl_easy_perform(c);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
		curl_slist_free_all(hdrs);
		*status = 0;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
		if (rc != CURLE_OK) {
			int ret = fetch_curl_errno(rc, &h, errbuf, url, err, errlen);

			if (fetch_transient_curl(rc) && attempt < o->retries &&
			    fetch_backoff(attempt++, -1) == 0)
				continue;
			return ret;
		}
		if (fetch_is_redirect(*status)) {
			int ret = fetch_follow_redirect(c, o, cur, sizeof(cur), &hops,
						  err, errlen);

			if (ret)
				return ret;
			continue;
		}
		if (fetch_transient_status(*status) && attempt < o->retries &&
		    fetch_backoff(attempt++, h.retry_after) == 0)
			continue;
		if (*status != 200) {
			snprintf(err, errlen, "%s: upstream answered %ld", url,
				 *status);
			return fetch_status_errno(*status);
		}
		if (curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T,
				      &cl) == CURLE_OK && cl >= 0)
			*size = cl;
		return 0;
	}
}

int fetch_head(const struct fetch_opts *o, const char *url, long long *size,
	       char *err, size_t errlen)
{
	long status = 0;
	int rc = head_request(o, url, size, &status, err, errlen);

	fetch_count_failure(rc, status);
	return fetch_shown(rc, err, errlen);
}

struct file_ctx {
	int fd;
	struct sha256 hash;
	const struct fetch_hooks *hooks;
	CURL *c;
	struct head *h;
	long long written;  /* bytes in the file, over all attempts */
	long long total;    /* -1 until known */
	long long expect;   /* the size the caller knows, -1 none */
	int checked;        /* this attempt's status was looked at */
	int refused;        /* this attempt's answer was not the bytes */
	int write_err;
};

/* Takes the size an answer says (-1: it says none) when the file's is not
 * known yet, else the caller's. Returns 0 when that disagrees with what
 * the caller knows. */
static int settle_total(struct file_ctx *f, long long said)
{
	if (f->total < 0) {
		f->total = said >= 0 ? said : f->expect;
		if (f->total >= 0 && f->hooks && f->hooks->size)
			f->hooks->size(f->total, f->hooks->ctx);
	}
	return f->expect < 0 || f->total == f->expect;
}

/* Accepts an attempt's answer when it carries the next bytes: a 200 from
 * the start, or a 206 resuming exactly where the file ends. */
static int answer_fits(struct file_ctx *f)
{
	curl_off_t cl = -1;
	long status = 0;

	curl_easy_getinfo(f->c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(f->c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
	if (status == 200 && f->written == 0)
		return settle_total(f, cl);
	if (status == 206 && f->h->range_start == f->written)
		return settle_total(f, f->h->range_total);
	return 0;
}

static size_t file_body(char *p, size_t size, size_t n, void *vctx)
{
	struct file_ctx *f = vctx;
	size_t len = size * n, off = 0;
	ssize_t w;

	if (!f->checked) {
		f->checked = 1;
		if (!answer_fits(f)) {
			f->refused = 1;
			return 0;
		}
	}
	if (f->total >= 0 && f->written + (long long)len > f->total) {
		f->refused = 1; /* more than promised */
		return 0;
	}
	while (off < len) {
		w = write(f->fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			f->write_err = errno;
			return 0;
		}
		off += (size_t)w;
	}
	sha256_update(&f->hash, p, len);
	f->written += (long long)len;
	if (f->hooks && f->hooks->progress)
		f->hooks->progress(f->written, f->hooks->ctx);
	return len;
}

int fetch_file(const struct fetch_opts *o, const char *url, long long size,
	       int fd, const struct fetch_hooks *hooks, char sha256[65],
	       char *err, size_t errlen)
{
	char errbuf[CURL_ERROR_SIZE];
	char cur[FETCH_URL_MAX], range[64];
	struct file_ctx f;
	struct head h;
	int attempt = 0, hops = 0, ret;
	long status = 0;
	CURLcode rc;

	memset(&f, 0, sizeof(f));
	sha256[0] = '\0';
	f.fd = fd;
	f.hooks = hooks;
	f.total = -1;
	f.expect = size;
	f.h = &h;
	h.page = NULL;
	snprintf(cur, sizeof(cur), "%s", url);
	if (sha256_init(&f.hash)) {
		snprintf(err, errlen, "%s: out of memory", url);
		return fetch_shown(ENOMEM, err, errlen);
	}
	for (;;) {
		f.c = fetch_easy();
		if (!f.c) {
			snprintf(err, errlen, "%s: curl_easy_init failed", url);
			ret = ENOMEM;
			break;
		}
		f.checked = f.refused = 0;
		fetch_setup(f.c, o, cur, errbuf, &h);
		if (f.written > 0) {
			snprintf(range, sizeof(range), "%lld-", f.written);
			curl_easy_setopt(f.c, CURLOPT_RANGE, range);
		}
		curl_easy_setopt(f.c, CURLOPT_WRITEFUNCTION, file_body);
		curl_easy_setopt(f.c, CURLOPT_WRITEDATA, &f);
		rc = fetch_perform(f.c, o, cur, &status);
		if (f.write_err) {
			ret = f.write_err;
			snprintf(err, errlen, "%s: writing the temp file: %s",
				 url, strerror(ret));
			/* Give the space back at once: the caller drops the
			 * file, but its blocks stay taken while anyone (a
			 * tailer, the caller) has it open, and on a full disk
			 * recording the failure needs room. */
			if (ftruncate(fd, 0) != 0)
				log_warn(errno, url, "truncating the temp file");
			break;
		}
		if (fetch_is_redirect(status)) {
			ret = fetch_follow_redirect(f.c, o, cur, sizeof(cur), &hops,
					      err, errlen);
			if (ret)
				break;
			continue;
		}
		if (f.refused || (rc == CURLE_OK && status != 200 &&
				  status != 206)) {
			/* an error status (its body refused, or complete):
			 * a 5xx or 429 that outlasts the retries says the host
			 * is unwell, a 404 that there is no such file; an
			 * answer with the bytes wrong is about this file */
			int bytes = status == 200 || status == 206;

			ret = bytes ? EPROTO : fetch_transient_status(status) ?
			      EREMOTEIO : fetch_status_errno(status);
			snprintf(err, errlen, "%s: upstream answered %ld%s", url,
				 status, bytes ? " with more or other bytes than "
						 "expected" : "");
			if (!bytes && fetch_transient_status(status) &&
			    attempt < o->retries &&
			    fetch_backoff(attempt++, h.retry_after) == 0)
				continue;
			break;
		}
		if (rc != CURLE_OK) {
			ret = fetch_curl_errno(rc, &h, errbuf, url, err, errlen);
			if (fetch_transient_curl(rc) && attempt < o->retries &&
			    fetch_backoff(attempt++, -1) == 0)
				continue;
			break;
		}
		if (f.total >= 0 && f.written != f.total) {
			/* a clean end short of Content-Length */
			ret = EIO;
			snprintf(err, errlen, "%s: got %lld of %lld bytes", url,
				 f.written, f.total);
			if (attempt < o->retries && fetch_backoff(attempt++, -1) == 0)
				continue;
			break;
		}
		sha256_final(&f.hash, sha256);
		return 0;
	}
	sha256_abort(&f.hash);
	if (!f.write_err) /* a full disk is ours, not the upstream's */
		fetch_count_failure(ret, status);
	return fetch_shown(ret, err, errlen);
}
