/* status: what larder says of itself. GET /metrics (Prometheus text
 * exposition 0.0.4), GET /+stats (the same figures as JSON) and GET
 * /+status (an HTML page with SVG charts, no script), all no-store. The
 * figures come from the shared counters (storage/stats.h) and a few reads
 * of the database; none of them writes anything. */
#ifndef LARDER_STATUS_H
#define LARDER_STATUS_H

#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* Each answers r (a 500 with the reason when the figures cannot be put
 * together). */
void status_metrics(struct worker *w, struct req *r);
void status_json(struct worker *w, struct req *r);
void status_page(struct worker *w, struct req *r);

#endif
