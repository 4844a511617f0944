/* loop: a FastCGI worker's loop, and the one request of a CGI process. */
#ifndef LARDER_LOOP_H
#define LARDER_LOOP_H

#include "common/conf.h"
#include "fcgi/pool.h"

/* Serves FastCGI connections from listen_fd (non-blocking, shared with the
 * pool's other workers) until SIGTERM, SIGINT or max_requests requests (0:
 * no limit), then answers what it has accepted and returns an exit status.
 * It waits on its kept connections and the listening socket at once, and
 * takes a new connection only when none it holds is still to send its
 * first request, so nothing waits on a worker that is busy. board and slot
 * are its place in the pool's scoreboard (board NULL: none). */
int loop_fcgi(const struct conf *c, int listen_fd, long max_requests,
	      struct pool_board *board, int slot);

/* Answers the one CGI request in the environment. Returns an exit status. */
int loop_cgi(const struct conf *c);

#endif
