/* loop: a FastCGI worker's loop, and the one request of a CGI process. */
#ifndef LARDER_LOOP_H
#define LARDER_LOOP_H

#include "common/conf/conf.h"
#include "fcgi/server/pool.h"
#include "fcgi/server/server.h"

/* Serves FastCGI connections from listen_fd (non-blocking, shared with the
 * pool's other workers) until SIGTERM or SIGINT (answers what it has
 * accepted, lets go of the rest), or until it retires, on SIGUSR2 or after
 * max_requests requests (0: no limit): then it takes nothing new, ends
 * each kept connection with its next response and returns once the web
 * server has let go of the idle ones. Returns an exit status. It waits on
 * its kept connections and the listening socket at once, and leaves new
 * connections to the others for a moment while one it took has not sent
 * its first request, so nothing waits on a worker that is busy. board and
 * slot are its place in the pool's scoreboard (board NULL: none). The
 * caller forks it with SIGTERM, SIGINT, SIGUSR1 and SIGUSR2 blocked. */
int loop_fcgi(const struct conf *c, int listen_fd, long max_requests,
	      struct pool_board *board, int slot, server_handler *handle);

/* Answers the one CGI request in the environment. Returns an exit status. */
int loop_cgi(const struct conf *c, server_handler *handle);

#endif
