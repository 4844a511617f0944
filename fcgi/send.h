/* send: hands a stored blob to the client, the way the config says:
 * X-Accel-Redirect (nginx), X-Sendfile (lighttpd, Apache mod_xsendfile),
 * or streamed by larder itself with ETag, If-None-Match and single-range
 * Range support. */
#ifndef LARDER_SEND_H
#define LARDER_SEND_H

#include "fcgi/req.h"
#include "fcgi/worker.h"

struct send_opts {
	const char *content_type;
	const char *cache_control;
	int vary_accept;   /* add Vary: Accept */
};

/* Sends blob sha256 as the response to r. Returns 0 when a response was
 * sent, or an errno (ENOENT when the blob is missing) with nothing sent. */
int send_blob(struct worker *w, struct req *r, const char *sha256,
	      const struct send_opts *o);

#endif
