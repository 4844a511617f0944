/* dispatch: routes one request to its handler. */
#ifndef LARDER_DISPATCH_H
#define LARDER_DISPATCH_H

#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* Answers r, whose req_init() returned init_err, and logs the access
 * line. */
void dispatch(struct worker *w, struct req *r, int init_err);

#endif
