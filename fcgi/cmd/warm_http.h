/* warm_http: the HTTP client half of `larder warm`: runs a batch of GETs
 * against larder (through the web server in front of it) a few at a time
 * with libcurl's multi interface, hashing what comes and keeping only
 * what the caller asked to keep, with a progress bar on a terminal or a
 * line per request elsewhere.
 */
#ifndef LARDER_WARM_HTTP_H
#define LARDER_WARM_HTTP_H

#include <stddef.h>

#include "common/buf.h"

/* Pages and manifests kept in memory are refused beyond this. */
#define WARM_MAX_KEEP (64 * 1024 * 1024)

struct warm_job {
	char *url;          /* owned */
	char *label;        /* owned: what the progress line names */
	char want[65];      /* sha256 hex the body must have, or "" */
	const char *accept; /* Accept header, or NULL */
	int keep;           /* keep the body in body */
	/* results */
	struct buf body;
	char content_type[128];
	char cache[16]; /* X-Larder-Cache, or "" when none came */
	long status;
	long long bytes;
	int failed;
	char err[256]; /* why it failed */
};

struct warm_totals {
	long done, failed, hit, miss, unsaid;
	long long bytes;
};

/* Makes a job for url (copied) named label (copied). Returns it or NULL
 * (ENOMEM); free with warm_job_free(). */
struct warm_job *warm_job_new(const char *url, const char *label);

void warm_job_free(struct warm_job *j);

/* Runs the n jobs, at most jobs at a time; each ends failed (with err)
 * unless the answer was a 200 whose body had the wanted digest. tty draws
 * one progress line, else each job gets a line on stderr; what (e.g.
 * "files") names the batch. Adds the outcomes to t. Returns 0, or an errno
 * when libcurl could not be set up (the jobs are then not run). */
int warm_http_run(struct warm_job **v, size_t n, int jobs, int tty,
                  const char *what, struct warm_totals *t);

#endif
