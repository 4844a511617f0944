#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/hash/sha256.h"
#include "fcgi/cmd/warm_http.h"

/* One transfer in flight. */
struct xfer {
	struct warm_job *job;
	CURL *easy;
	struct curl_slist *hdrs;
	struct sha256 h;
	int hashing;
	char errbuf[CURL_ERROR_SIZE];
};

struct warm_job *warm_job_new(const char *url, const char *label)
{
	struct warm_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->url = strdup(url);
	j->label = strdup(label);
	buf_init(&j->body, WARM_MAX_KEEP);
	if (!j->url || !j->label) {
		warm_job_free(j);
		return NULL;
	}
	return j;
}

void warm_job_free(struct warm_job *j)
{
	if (!j)
		return;
	free(j->url);
	free(j->label);
	buf_free(&j->body);
	free(j);
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct xfer *x = ctx;
	struct warm_job *j = x->job;

	n *= size;
	j->bytes += (long long)n;
	if (x->hashing)
		sha256_update(&x->h, p, n);
	if (j->keep && buf_add(&j->body, p, n)) {
		snprintf(j->err, sizeof(j->err), "more than %d MiB",
		         WARM_MAX_KEEP >> 20);
		return 0;
	}
	return n;
}

/* Copies header value v (n bytes, "Name: value\r\n") after name. */
static int header_value(const char *p, size_t n, const char *name, char *out,
                        size_t len)
{
	size_t k = strlen(name), m;

	if (n <= k + 1 || strncasecmp(p, name, k) != 0 || p[k] != ':')
		return 0;
	p += k + 1;
	n -= k + 1;
	while (n && (*p == ' ' || *p == '\t'))
		p++, n--;
	while (n && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' '))
		n--;
	m = n < len ? n : len - 1;
	memcpy(out, p, m);
	out[m] = '\0';
	return 1;
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct xfer *x = ctx;
	struct warm_job *j = x->job;

	n *= size;
	/* each response of a redirect chain starts afresh */
	if (n > 5 && strncmp(p, "HTTP/", 5) == 0) {
		j->cache[0] = '\0';
		j->content_type[0] = '\0';
	}
	if (!header_value(p, n, "X-Larder-Cache", j->cache, sizeof(j->cache)))
		header_value(p, n, "Content-Type", j->content_type,
		             sizeof(j->content_type));
	return n;
}

static int start(CURLM *m, struct xfer *x, struct warm_job *j)
{
	char line[512];

	memset(x, 0, sizeof(*x));
	x->job = j;
	x->easy = curl_easy_init();
	if (!x->easy)
		return ENOMEM;
	if (j->accept) {
		snprintf(line, sizeof(line), "Accept: %s", j->accept);
		x->hdrs = curl_slist_append(NULL, line);
	}
	if (sha256_init(&x->h) == 0)
		x->hashing = 1;
	curl_easy_setopt(x->easy, CURLOPT_URL, j->url);
	curl_easy_setopt(x->easy, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->easy, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(x->easy, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(x->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(x->easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(x->easy, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(x->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(x->easy, CURLOPT_LOW_SPEED_TIME, 300L);
	curl_easy_setopt(x->easy, CURLOPT_USERAGENT,
	                 "larder-warm/" PACKAGE_VERSION);
	curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->hdrs);
	curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(x->easy, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
	if (j->keep)
		curl_easy_setopt(x->easy, CURLOPT_ACCEPT_ENCODING, "");
	if (curl_multi_add_handle(m, x->easy) != CURLM_OK) {
		curl_easy_cleanup(x->easy);
		curl_slist_free_all(x->hdrs);
		sha256_abort(&x->h);
		return ENOMEM;
	}
	return 0;
}

/* Judges a finished transfer. */
static void finish(CURLM *m, struct xfer *x, CURLcode rc)
{
	struct warm_job *j = x->job;
	char got[65] = "";

	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &j->status);
	if (x->hashing)
		sha256_final(&x->h, got);
	if (rc != CURLE_OK) {
		if (!j->err[0])
			snprintf(j->err, sizeof(j->err), "%s",
			         x->errbuf[0] ? x->errbuf
			                      : curl_easy_strerror(rc));
		j->failed = 1;
	} else if (j->status != 200) {
		snprintf(j->err, sizeof(j->err), "HTTP %ld", j->status);
		j->failed = 1;
	} else if (j->want[0] && !x->hashing) {
		snprintf(j->err, sizeof(j->err), "cannot hash: out of memory");
		j->failed = 1;
	} else if (j->want[0] && strcmp(got, j->want) != 0) {
		snprintf(j->err, sizeof(j->err), "sha256 %s, the page says %s",
		         got, j->want);
		j->failed = 1;
	}
	curl_multi_remove_handle(m, x->easy);
	curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->hdrs);
	x->easy = NULL;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void human(long long n, char *out, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)n;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(out, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

static void report(const struct warm_job *j, size_t done, size_t n,
                   long long bytes, double t0, int tty, const char *what)
{
	char b[32], r[32];
	double dt = now_s() - t0;

	if (!tty) {
		human(j->bytes, b, sizeof(b));
		if (j->failed)
			fprintf(stderr, "warm: FAILED %s: %s\n", j->label,
			        j->err);
		else
			fprintf(stderr, "warm: %s %s%s%s\n", j->label, b,
			        j->cache[0] ? " " : "", j->cache);
		return;
	}
	if (j->failed)
		fprintf(stderr, "\r\033[Kwarm: FAILED %s: %s\n", j->label,
		        j->err);
	human(bytes, b, sizeof(b));
	human(dt > 0.05 ? (long long)((double)bytes / dt) : 0, r, sizeof(r));
	fprintf(stderr, "\r\033[K%s: [%zu/%zu] %s, %s/s", what, done, n, b, r);
	if (done == n)
		fputc('\n', stderr);
	fflush(stderr);
}

int warm_http_run(struct warm_job **v, size_t n, int jobs, int tty,
                  const char *what, struct warm_totals *t)
{
	struct xfer *x;
	size_t next = 0, done = 0;
	long long bytes = 0;
	double t0 = now_s();
	CURLM *m;
	int running = 0, err = 0;

	if (!n)
		return 0;
	if (jobs < 1)
		jobs = 1;
	x = calloc((size_t)jobs, sizeof(*x));
	m = curl_multi_init();
	if (!x || !m) {
		err = ENOMEM;
		goto out;
	}
	while (done < n) {
		struct CURLMsg *msg;
		int left;

		for (int i = 0; i < jobs && next < n; i++) {
			if (x[i].easy)
				continue;
			err = start(m, &x[i], v[next]);
			if (err)
				goto out;
			next++;
		}
		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &left))) {
			struct xfer *xp;
			struct warm_job *j;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
			                  (char **)&xp);
			j = xp->job;
			finish(m, xp, msg->data.result);
			done++;
			bytes += j->bytes;
			t->bytes += j->bytes;
			if (j->failed) {
				t->failed++;
			} else {
				t->done++;
				if (strcasecmp(j->cache, "HIT") == 0)
					t->hit++;
				else if (j->cache[0])
					t->miss++;
				else
					t->unsaid++;
			}
			report(j, done, n, bytes, t0, tty, what);
		}
		if (done < n)
			curl_multi_poll(m, NULL, 0, 200, NULL);
	}
out:
	for (int i = 0; x && i < jobs; i++)
		if (x[i].easy) {
			curl_multi_remove_handle(m, x[i].easy);
			curl_easy_cleanup(x[i].easy);
			curl_slist_free_all(x[i].hdrs);
			sha256_abort(&x[i].h);
		}
	if (m)
		curl_multi_cleanup(m);
	free(x);
	return err;
}
