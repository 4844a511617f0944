/* serve: `larder serve', larder's own FastCGI server: a listening socket
 * and the pool of workers on it (fcgi/server/pool.h). */
#ifndef LARDER_SERVE_H
#define LARDER_SERVE_H

#include <stddef.h>

#include "fcgi/server/server.h"

/* Runs `larder serve [-c FILE] [--listen HOST:PORT|unix:PATH] [--workers N]
 * [--user NAME]'; argv[0] is "serve". Without --listen it serves the socket
 * systemd passes ($LISTEN_PID, $LISTEN_FDS, fd 3). Started as root it needs
 * --user, and becomes that user once the socket is bound. Returns an exit
 * status. */
int serve_main(int argc, char **argv, server_handler *handle);

/* Opens a listening socket for "HOST:PORT", "[V6]:PORT" or "unix:PATH"
 * (mode 0660). Returns the descriptor, or -1 with a reason in err. */
int serve_listen(const char *addr, char *err, size_t errlen);

#endif
