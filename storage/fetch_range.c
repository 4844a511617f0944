#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "storage/fetch_priv.h"
#include "storage/fetch_range.h"

struct range_ctx {
	CURL *c;
	struct head *h;
	uint8_t *buf;
	size_t len, got;
	uint64_t off;      /* the first byte asked for (not for a tail) */
	int tail;
	int checked;
	int ignored;       /* a 200 with more than asked for */
	int wrong;         /* a 206 of other bytes, or too many */
	long long total;
};

/* Whether the answer's first bytes are the ones asked for. */
static void check_answer(struct range_ctx *r)
{
	curl_off_t cl = -1;
	long status = 0;

	r->checked = 1;
	curl_easy_getinfo(r->c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(r->c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
	if (status == 200) {
		/* the whole file: fine when it is no more than was asked
		 * for and starts where the range does */
		if (cl >= 0 && (size_t)cl <= r->len && (r->tail || !r->off))
			r->total = cl;
		else
			r->ignored = 1;
		return;
	}
	if (status != 206)
		return; /* an error page: its body is not kept */
	r->total = r->h->range_total;
	if (r->h->range_start < 0 || r->total < 0)
		r->wrong = 1;
	else if (r->tail && (uint64_t)r->h->range_start !=
			 (r->total > (long long)r->len ?
			  (uint64_t)r->total - r->len : 0))
		r->wrong = 1;
	else if (!r->tail && (uint64_t)r->h->range_start != r->off)
		r->wrong = 1;
}

static size_t range_body(char *p, size_t size, size_t n, void *vctx)
{
	struct range_ctx *r = vctx;
	size_t len = size * n;
	long status = 0;

	if (!r->checked)
		check_answer(r);
	if (r->ignored || r->wrong)
		return 0;
	curl_easy_getinfo(r->c, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200 && status != 206)
		return len;
	if (len > r->len - r->got) {
		r->wrong = 1;
		return 0;
	}
	memcpy(r->buf + r->got, p, len);
	r->got += len;
	return len;
}

int fetch_range(const struct fetch_opts *o, const char *url, uint64_t off,
		int tail, size_t len, uint8_t *buf, size_t *got,
		long long *total, char *err, size_t errlen)
{
	char errbuf[CURL_ERROR_SIZE], cur[FETCH_URL_MAX], spec[64];
	struct range_ctx r;
	struct head h;
	int attempt = 0, hops = 0, ret;
	long status = 0;
	CURLcode rc;

	*got = 0;
	*total = -1;
	if (!len) {
		snprintf(err, errlen, "%s: an empty range", url);
		return fetch_shown(EINVAL, err, errlen);
	}
	if (tail)
		snprintf(spec, sizeof(spec), "-%zu", len);
	else
		snprintf(spec, sizeof(spec), "%llu-%llu",
			 (unsigned long long)off,
			 (unsigned long long)(off + len - 1));
	snprintf(cur, sizeof(cur), "%s", url);
	h.page = NULL;
	for (;;) {
		memset(&r, 0, sizeof(r));
		r.buf = buf;
		r.len = len;
		r.off = off;
		r.tail = tail;
		r.h = &h;
		r.total = -1;
		r.c = fetch_easy();
		if (!r.c) {
			snprintf(err, errlen, "%s: curl_easy_init failed", url);
			ret = ENOMEM;
			break;
		}
		fetch_setup(r.c, o, cur, errbuf, &h);
		curl_easy_setopt(r.c, CURLOPT_RANGE, spec);
		curl_easy_setopt(r.c, CURLOPT_WRITEFUNCTION, range_body);
		curl_easy_setopt(r.c, CURLOPT_WRITEDATA, &r);
		rc = fetch_perform(r.c, o, cur, &status);
		if (fetch_is_redirect(status)) {
			ret = fetch_follow_redirect(r.c, o, cur, sizeof(cur),
						  &hops, err, errlen);
			if (ret)
				break;
			continue;
		}
		if (r.ignored) {
			snprintf(err, errlen, "%s: upstream ignores Range "
				 "(answered 200)", url);
			ret = EOPNOTSUPP;
			break;
		}
		if (r.wrong) {
			snprintf(err, errlen, "%s: upstream answered %ld with "
				 "other bytes than bytes=%s", url, status,
				 spec);
			ret = EPROTO;
			break;
		}
		if (rc == CURLE_OK && status == 416) {
			snprintf(err, errlen, "%s: bytes=%s: not satisfiable",
				 url, spec);
			ret = ERANGE;
			break;
		}
		if (rc == CURLE_OK && status != 200 && status != 206) {
			ret = fetch_transient_status(status) ? EREMOTEIO :
			      fetch_status_errno(status);
			snprintf(err, errlen, "%s: upstream answered %ld", url,
				 status);
			if (fetch_transient_status(status) &&
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
		if (r.total < 0 || (status == 200 && r.got != (size_t)r.total) ||
		    (status == 206 && r.got != (tail ? (r.total < (long long)len
							? (size_t)r.total : len)
						     : len))) {
			snprintf(err, errlen, "%s: bytes=%s: got %zu bytes",
				 url, spec, r.got);
			ret = EIO;
			if (attempt < o->retries &&
			    fetch_backoff(attempt++, -1) == 0)
				continue;
			break;
		}
		*got = r.got;
		*total = r.total;
		return 0;
	}
	fetch_count_failure(ret, status);
	return fetch_shown(ret, err, errlen);
}
