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
};

struct fetch_priv {
	/* the process's handle, reset for a new transfer */
	CURL *(*easy)(void);
	/* the options every transfer has, with h watching its progress */
	void (*setup)(CURL *c, const struct fetch_opts *o, const char *url,
		      char *errbuf, struct head *h);
	/* a libcurl failure as an errno and a reason */
	int (*curl_errno)(CURLcode rc, const struct head *h,
			  const char *errbuf, const char *url, char *err,
			  size_t errlen);
	/* after a 3xx: the next URL into cur when it is allowed */
	int (*follow_redirect)(CURL *c, const struct fetch_opts *o, char *cur,
			       size_t curlen, int *hops, char *err,
			       size_t errlen);
	int (*is_redirect)(long status);
	struct curl_slist *(*add_auth)(struct curl_slist *list,
				       const struct fetch_opts *o,
				       const char *url);
	int (*transient_curl)(CURLcode rc);
	int (*transient_status)(long status);
	/* waits before try attempt+1; -1 when told to wait too long */
	int (*backoff)(int attempt, long retry_after);
	void (*count_received)(CURL *c);
	void (*count_failure)(int err, long status);
	int (*status_errno)(long status);
};

extern const struct fetch_priv fetch_priv;

#endif
