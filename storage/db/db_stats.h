/* db_stats: what the metrics and the status page read from the database.
 * Rare reads (a scrape, a page view), prepared when asked: nothing here
 * is on the path of a request for a package. */
#ifndef LARDER_DB_STATS_H
#define LARDER_DB_STATS_H

#include "storage/db/db.h"

/* Counts the fetches under way: the rows of the flights table (a worker
 * that was killed leaves its row to the sweep, not a gauge that never
 * comes down). Returns 0 with *n, or EIO. */
int db_flight_count(struct db *db, long *n);

/* Calls fn for each upstream host remembered as failing ("scheme://host:
 * port", until when in unix seconds, why), in host order, until fn
 * returns non-zero. Returns 0 or EIO. */
int db_upstream_each(struct db *db,
                     int (*fn)(const char *host, long long until,
                               const char *reason, void *ctx),
                     void *ctx);

#endif
