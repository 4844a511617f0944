/* server: what the transport promises the application, and asks of it.
 *
 * The transport (serve, pool, loop, conn, req, send, fetcher, worker)
 * listens, accepts, reads FastCGI records or a CGI environment, builds a
 * struct req, and answers through it; it names no protocol. The
 * application hands it one function, the handler, and everything PyPI or
 * the registry does happens inside that call: main passes dispatch
 * (fcgi/dispatch.h) to serve_main(), pool_run() or loop_cgi().
 */
#ifndef LARDER_SERVER_H
#define LARDER_SERVER_H

#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* Answers r, read on w's current connection (or CGI's stdin), whose
 * req_init() returned init_err (0, or an errno the handler answers with
 * an error), and logs its access line. The transport frees r after. */
typedef void server_handler(struct worker *w, struct req *r, int init_err);

#endif
