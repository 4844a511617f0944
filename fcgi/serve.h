/* serve: `larder serve`, a preforking FastCGI server. The supervisor
 * listens, forks the workers (each opens its own database), respawns any
 * that die, re-reads the config on SIGHUP and replaces the workers, and on
 * SIGTERM or SIGINT stops them and exits. */
#ifndef LARDER_SERVE_H
#define LARDER_SERVE_H

/* Runs `larder serve [-c FILE] --listen HOST:PORT|unix:PATH
 * [--workers N]`; argv[0] is "serve". Returns an exit status. */
int serve_main(int argc, char **argv);

/* Opens a listening socket for "HOST:PORT", "[V6]:PORT" or "unix:PATH"
 * (mode 0660). Returns the descriptor, or -1 with a reason in err. */
int serve_listen(const char *addr, char *err, size_t errlen);

#endif
