/* stats: counters shared by every process of one data directory, with no
 * database write per request.
 *
 * They live in data_dir/stats.shm, a fixed-size file every process maps
 * MAP_SHARED: counters are 64-bit atomic adds; the hourly history and the
 * most-requested lists take a robust process-shared mutex (a process that
 * dies holding it hands it on, EOWNERDEAD). The file starts with a magic
 * and a layout version; one that is torn, of another size or another
 * version is replaced (atomically: a temp file, then rename), so a larder
 * of another layout never reads this one's bytes as its own. It survives
 * restarts: the history goes back as far as the file does.
 *
 * One mapping per process (stats_open); until then, or when it failed,
 * every call here does nothing and the readers see zeros.
 */
#ifndef LARDER_STATS_H
#define LARDER_STATS_H

#include <stdint.h>

enum stats_kind {
	STATS_PAGE,
	STATS_FILE,
	STATS_METADATA,
	STATS_MANIFEST,
	STATS_BLOB,
	STATS_OTHER,
	STATS_NKINDS
};

enum stats_outcome {
	STATS_HIT,
	STATS_MISS,
	STATS_STALE,
	STATS_REVALIDATED,
	STATS_ERROR, /* answered 4xx/5xx, or cut off */
	STATS_NONE,  /* answered without the cache (health, redirect) */
	STATS_NOUTCOMES
};

/* The counters that are one number each. */
enum stats_counter {
	STATS_SERVED_BYTES,  /* body bytes of answers from the store */
	STATS_FETCHED_BYTES, /* body bytes received from upstreams */
	STATS_UP_CONNECT,    /* upstream errors: cannot resolve/connect */
	STATS_UP_TIMEOUT,    /* no answer, or no data, in time */
	STATS_UP_HTTP_4XX,   /* an error status 400-499 (404 included) */
	STATS_UP_HTTP_5XX,   /* 5xx (or 429) that outlasted the retries */
	STATS_UP_TOO_BIG,    /* a page over max_page_size */
	STATS_UP_REDIRECT,   /* a redirect refused (untrusted, too many) */
	STATS_UP_PROTOCOL,   /* a broken, short or wrong body */
	STATS_EVICTED_BLOBS, /* blobs the collector removed */
	STATS_EVICTED_BYTES, /* and their bytes */
	STATS_META_MISMATCH, /* provisional metadata the verified file's
	                        metadata differed from */
	STATS_PREFETCH_PAGES,   /* dependency pages a prefetch fetched */
	STATS_PREFETCH_SKIPPED, /* ones it did not: fresh, or no slot free */
	STATS_PREFETCH_USED,    /* prefetched pages a client then asked for */
	STATS_POLICY_DENIED,    /* files a [policy] left out of a page */
	STATS_POLICY_REFUSED,   /* requests for such a file, refused (403) */
	STATS_POLICY_MANIFESTS, /* manifest requests and pushes a registry's
	                           [policy] refused (403) */
	STATS_PREFETCH_WHEELS,  /* likely wheels of prefetched pages fetched
	                           (prefetch_wheel_size) */
	STATS_NCOUNTERS
};

/* The two most-requested lists. */
enum stats_top { STATS_TOP_PROJECTS, STATS_TOP_IMAGES, STATS_NTOPS };

/* Hours of history kept: 8 days, so that the last 7 whole days and the
 * one under way are all there. */
#define STATS_HOURS (8 * 24)
/* Names tracked per most-requested list, and the longest name kept. */
#define STATS_TOP_SLOTS 64
#define STATS_TOP_NAME  96

struct stats_hour {
	int64_t hour; /* unix time / 3600; 0: no data */
	uint64_t requests, hits, served_bytes, fetched_bytes;
};

struct stats_top_entry {
	char name[STATS_TOP_NAME];
	uint64_t count; /* at most count - error true requests... */
	uint64_t error; /* ...and at least count - error */
};

/* A copy of everything, for a reader. */
struct stats_snapshot {
	int64_t created; /* unix time the file was made */
	uint64_t requests[STATS_NKINDS][STATS_NOUTCOMES];
	uint64_t counter[STATS_NCOUNTERS];
	struct stats_hour hours[STATS_HOURS]; /* oldest first; a missing
	                                         hour has hour set, zeros */
	struct stats_top_entry top[STATS_NTOPS][STATS_TOP_SLOTS]; /* by count,
	                                           descending; "" unused */
	uint64_t top_total[STATS_NTOPS]; /* names counted, all told */
};

/* Maps data_dir/stats.shm, making it (or replacing a torn or foreign one)
 * when needed. Returns 0 or an errno (logged); on failure the counters
 * are simply off in this process. Calling it again unmaps the old one. */
int stats_open(const char *data_dir);

/* Unmaps the file (after fork, the child may keep the parent's mapping:
 * it is the same file). */
void stats_close(void);

/* Counts one request of kind with outcome, now. */
void stats_request(enum stats_kind kind, enum stats_outcome outcome);

/* Adds n to counter c; the byte counters also go to this hour's history. */
void stats_add(enum stats_counter c, uint64_t n);

/* Counts one request for name (a normalised project, an image
 * "registry/name") in list t. Approximate, by the Space-Saving algorithm
 * (Metwally et al. 2005) over STATS_TOP_SLOTS names: a new name takes the
 * place of the least counted one and inherits its count as its error, so
 * every name requested more than 1/STATS_TOP_SLOTS of the time is in the
 * list, and each count is over the true one by at most its error. */
void stats_top_add(enum stats_top t, const char *name);

/* Copies the counters into *out as of now (the history ends at this
 * hour). Returns 0, or ENOENT when nothing is mapped (*out is zeros). */
int stats_read(struct stats_snapshot *out);

/* For tests: the hour the history uses instead of the clock when non-zero
 * (unix time / 3600). */
void stats_set_hour(int64_t hour);

#endif
