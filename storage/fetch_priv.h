/* fetch_priv: what storage/fetch.c shares with the other fetch modules
 * (fetch_range.c) and no one else: the process's one curl handle and the
 * pieces every transfer is made of, so that a range read rides the same
 * kept connections and follows the same rules (trusted redirects, retries,
 * timeouts, counters) as every other fetch. */
#ifndef LARDER_FETCH_PRIV_H
#define LARDER_FETCH_PRIV_H

#include <time.h>

#include <curl/curl.h>

#include "storage/fetch.h"

/* What one attempt saw in its headers. */
struct head {
	long status;
	int answered;          /* a status line arrived */
	long retry_after;
	long long range_start; /* Content-Range, -1 when absent */
	long long range_total;
	time_t start;
	long first_byte_timeout;
	long idle_timeout;
	curl_off_t seen;         /* body bytes at the last progress call */
	time_t moved;            /* when a header or body byte last came */
	int idle;                /* aborted: idle_timeout passed */
	struct fetch_page *page; /* page fetches: where validators go */
	time_t expires;          /* Expires, 0 when absent, -1 unreadable */
	time_t date;             /* Date, 0 when absent or unreadable */
};

/* The process's handle, reset for a new transfer. */
CURL *fetch_easy(void);

/* Sets the options every transfer has, with h watching its progress. */
void fetch_setup(CURL *c, const struct fetch_opts *o, const char *url,
		 char *errbuf, struct head *h);

/* A libcurl failure as an errno and a reason. */
int fetch_curl_errno(CURLcode rc, const struct head *h, const char *errbuf,
		     const char *url, char *err, size_t errlen);

/* After a 3xx: the next URL into cur when it is allowed. */
int fetch_follow_redirect(CURL *c, const struct fetch_opts *o, char *cur,
			  size_t curlen, int *hops, char *err, size_t errlen);
int fetch_is_redirect(long status);

/* Adds the Authorization o carries when url is on trust_base's origin. */
struct curl_slist *fetch_add_auth(struct curl_slist *list,
				  const struct fetch_opts *o, const char *url);

/* Performs the transfer set up on c, with the Authorization o carries for
 * url, counts what it received, and sets *status (0 when none came). */
CURLcode fetch_perform(CURL *c, const struct fetch_opts *o, const char *url,
		       long *status);

/* Whether a failure is worth another try. */
int fetch_transient_curl(CURLcode rc);
int fetch_transient_status(long status);

/* Waits before try attempt+1; -1 when told to wait too long. */
int fetch_backoff(int attempt, long retry_after);

/* The counters (storage/stats.h) of what a transfer received, or how it
 * failed. */
void fetch_count_received(CURL *c);
void fetch_count_failure(int err, long status);

/* An error status as an errno (as fetch_file() documents). */
int fetch_status_errno(long status);

/* Masks the secrets of the URLs in a failed fetch's reason (url_redact:
 * an upstream's user:password, a presigned URL's signature), in place, as
 * every public fetch does before it returns one: the reason goes on to
 * error bodies, the log and the status page. Returns ret. */
int fetch_shown(int ret, char *err, size_t errlen);

#endif
