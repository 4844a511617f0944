/* pool: the workers on one listening socket, and the supervisor that keeps
 * them.
 *
 * Every listening socket larder serves (its own under `larder serve', or
 * the one a web server hands it on fd 0) gets a supervisor that forks the
 * workers, replaces any that die or recycle, and grows the pool when every
 * worker is busy, up to max_workers, so that a request never queues behind
 * a slow download; idle extra workers go again after a while. Workers mark
 * themselves busy or idle in a scoreboard in shared memory (no system call
 * per request); the one that takes the last idle place wakes the
 * supervisor. SIGHUP re-reads the config, workers and max_workers included
 * (a worker count given to pool_run still wins), and replaces the workers
 * without dropping a request; SIGTERM and SIGINT stop them and the supervisor.
 */
#ifndef LARDER_POOL_H
#define LARDER_POOL_H

#include <signal.h>

#include "common/conf/conf.h"
#include "fcgi/server/server.h"

#define POOL_MAX 1024

struct pool_board;

/* Runs the supervisor on listen_fd until SIGTERM or SIGINT. c is the
 * loaded config (re-read from conf_path, or c->source, on SIGHUP; c is
 * freed and replaced then); workers is the least number kept (0: the
 * config's). Returns an exit status. */
int pool_run(struct conf *c, const char *conf_path, int listen_fd,
	     long workers, server_handler *handle);

/* What the supervisor runs in a child of its own beside the workers (the
 * application's background work; NULL, the default: none): fn gets the
 * config and a flag SIGTERM sets, and returns an exit status; it runs
 * again a second after it exits with any status but 0, and is replaced
 * with the new config on SIGHUP. Call before pool_run. */
typedef int pool_companion_fn(const struct conf *c,
                              volatile sig_atomic_t *stop);
void pool_set_companion(pool_companion_fn *fn);

/* Worker side: marks this worker's place busy (1) or idle (0). Taking the
 * last idle place asks the supervisor for another worker. NULL board is
 * fine (no pool). */
void pool_mark(struct pool_board *b, int slot, int busy);

/* Worker side: this worker retires on its own (max_requests): it is no
 * longer counted, and the supervisor starts another at once. NULL board
 * is fine. */
void pool_retiring(struct pool_board *b, int slot);

/* Worker side: whether the config this worker serves is an old one (a
 * reload started a newer generation since it was forked): 1 or 0. NULL
 * board: 0. */
int pool_stale(const struct pool_board *b, int slot);

#endif
