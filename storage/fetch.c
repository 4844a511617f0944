#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/sha256.h"
#include "storage/fetch.h"

static CURL *handle;

/* Returns the process's handle, reset for a new transfer. */
static CURL *easy(void)
{
	if (!handle) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		handle = curl_easy_init();
	} else {
		curl_easy_reset(handle);
	}
	return handle;
}

static void setup(CURL *h, const struct fetch_opts *o, const char *url,
		  char *errbuf)
{
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, o->connect_timeout);
	/* less than one byte a second for idle_timeout seconds: give up */
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, o->idle_timeout);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "larder/" PACKAGE_VERSION);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
}

/* Maps a libcurl failure to an errno and a reason. */
static int curl_errno(CURLcode rc, const char *errbuf, const char *url,
		      char *err, size_t errlen)
{
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

static size_t page_body(char *p, size_t size, size_t n, void *ctx)
{
	struct fetch_page *r = ctx;

	if (buf_add(&r->body, p, size * n))
		return 0; /* over the cap: abort the transfer */
	return size * n;
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

static void cache_control(struct fetch_page *r, const char *v)
{
	const char *p = strcasestr(v, "max-age=");

	if (p)
		r->max_age = strtol(p + 8, NULL, 10);
	if (strcasestr(v, "no-store") || strcasestr(v, "no-cache"))
		r->no_store = 1;
}

static size_t page_header(char *p, size_t size, size_t n, void *ctx)
{
	struct fetch_page *r = ctx;
	size_t len = size * n;
	char cc[256];

	/* A new response (after a redirect or 100) starts over. */
	if (len > 5 && strncmp(p, "HTTP/", 5) == 0) {
		r->etag[0] = r->last_modified[0] = r->content_type[0] = '\0';
		r->max_age = -1;
		r->no_store = 0;
		return len;
	}
	header_value(p, len, "etag", r->etag, sizeof(r->etag));
	header_value(p, len, "last-modified", r->last_modified,
		     sizeof(r->last_modified));
	header_value(p, len, "content-type", r->content_type,
		     sizeof(r->content_type));
	if (header_value(p, len, "cache-control", cc, sizeof(cc)))
		cache_control(r, cc);
	return len;
}

int fetch_page(const struct fetch_opts *o, const char *url,
	       const char *accept, const char *etag,
	       const char *last_modified, struct fetch_page *r, char *err,
	       size_t errlen)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	char line[512];
	char *eff = NULL;
	CURLcode rc;
	CURL *h;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	buf_init(&r->body, o->max_body);
	r->max_age = -1;
	h = easy();
	if (!h) {
		snprintf(err, errlen, "%s: curl_easy_init failed", url);
		return ENOMEM;
	}
	setup(h, o, url, errbuf);
	snprintf(line, sizeof(line), "Accept: %s", accept);
	hdrs = curl_slist_append(hdrs, line);
	if (etag && *etag) {
		snprintf(line, sizeof(line), "If-None-Match: %s", etag);
		hdrs = curl_slist_append(hdrs, line);
	}
	if (last_modified && *last_modified) {
		snprintf(line, sizeof(line), "If-Modified-Since: %s",
			 last_modified);
		hdrs = curl_slist_append(hdrs, line);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, page_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, page_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	rc = curl_easy_perform(h);
	if (rc == CURLE_WRITE_ERROR && r->body.len >= o->max_body) {
		snprintf(err, errlen, "%s: page larger than %zu bytes", url,
			 o->max_body);
		ret = E2BIG;
	} else if (rc != CURLE_OK) {
		ret = curl_errno(rc, errbuf, url, err, errlen);
	} else {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
		curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &eff);
		snprintf(r->url, sizeof(r->url), "%s", eff ? eff : url);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdrs);
	return ret;
}

struct file_ctx {
	int fd;
	struct sha256 hash;
	fetch_size_fn *on_size;
	void *ctx;
	CURL *h;
	int size_told;
	int write_err;
	long status;
};

static size_t file_body(char *p, size_t size, size_t n, void *vctx)
{
	struct file_ctx *c = vctx;
	size_t len = size * n, off = 0;
	curl_off_t cl = -1;
	ssize_t w;

	if (!c->size_told) {
		c->size_told = 1;
		curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->status);
		if (c->status != 200)
			return 0;
		curl_easy_getinfo(c->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T,
				  &cl);
		if (cl >= 0 && c->on_size)
			c->on_size((long long)cl, c->ctx);
	}
	while (off < len) {
		w = write(c->fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			c->write_err = errno;
			return 0;
		}
		off += (size_t)w;
	}
	sha256_update(&c->hash, p, len);
	return len;
}

int fetch_file(const struct fetch_opts *o, const char *url, int fd,
	       fetch_size_fn *on_size, void *ctx, char sha256[65], char *err,
	       size_t errlen)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct file_ctx c;
	curl_off_t cl = -1, got = 0;
	CURLcode rc;
	int ret;

	memset(&c, 0, sizeof(c));
	sha256[0] = '\0';
	c.fd = fd;
	c.on_size = on_size;
	c.ctx = ctx;
	c.h = easy();
	if (!c.h || sha256_init(&c.hash)) {
		snprintf(err, errlen, "%s: out of memory", url);
		return ENOMEM;
	}
	setup(c.h, o, url, errbuf);
	curl_easy_setopt(c.h, CURLOPT_ACCEPT_ENCODING, NULL);
	curl_easy_setopt(c.h, CURLOPT_WRITEFUNCTION, file_body);
	curl_easy_setopt(c.h, CURLOPT_WRITEDATA, &c);
	rc = curl_easy_perform(c.h);
	if (!c.status)
		curl_easy_getinfo(c.h, CURLINFO_RESPONSE_CODE, &c.status);
	if (c.write_err) {
		ret = c.write_err;
		snprintf(err, errlen, "%s: writing the temp file: %s", url,
			 strerror(ret));
		goto fail;
	}
	if (c.status && c.status != 200) {
		ret = EPROTO;
		snprintf(err, errlen, "%s: upstream answered %ld", url,
			 c.status);
		goto fail;
	}
	if (rc != CURLE_OK) {
		ret = curl_errno(rc, errbuf, url, err, errlen);
		goto fail;
	}
	curl_easy_getinfo(c.h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
	curl_easy_getinfo(c.h, CURLINFO_SIZE_DOWNLOAD_T, &got);
	if (cl >= 0 && got != cl) {
		ret = EIO;
		snprintf(err, errlen, "%s: got %lld of %lld bytes", url,
			 (long long)got, (long long)cl);
		goto fail;
	}
	sha256_final(&c.hash, sha256);
	return 0;
fail:
	sha256_abort(&c.hash);
	return ret;
}
