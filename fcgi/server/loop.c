#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "fcgi/server/loop.h"
#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* Connections one worker holds at most. */
#define MAX_CONNS 128
/* How long a stopping worker waits for the first request of a connection
 * it accepted. */
#define STOP_WAIT_MS 5000
/* How long a new connection may take to send its first request. */
#define FIRST_REQUEST_MS 10000
/* How long a worker leaves the listening socket to the others for a new
 * connection of its own that has not sent its first request yet. A web
 * server sends it at once, and the next connection then goes to a worker
 * that is free; one that keeps silent longer no longer holds the worker
 * up (six silent connections stalled every worker for 20 s). */
#define FRESH_WAIT_MS 100
/* A kept connection idle this long is let go. Longer than the
 * keepalive_timeout nginx's upstream block has (60 s unless set; the
 * shipped config says 30 s): nginx closes first, and never sends on a
 * connection larder is closing. */
#define KEEP_IDLE_MS 75000
/* How long a connection larder sent its FIN on is drained before it is
 * closed whatever comes. */
#define CLOSE_GRACE_MS 2000

static volatile sig_atomic_t stopping, reopen, retire_asked;

static void on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

/* SIGUSR1, from the supervisor or logrotate: reopen the log file. */
static void on_reopen(int sig)
{
	(void)sig;
	reopen = 1;
}

/* SIGUSR2, from the supervisor: retire (a reload, or the pool shrinks;
 * pool_stale() tells which). */
static void on_retire(int sig)
{
	(void)sig;
	retire_asked = 1;
}

struct loop {
	struct worker w;
	int ep;
	int listen_fd;
	int listening;        /* the listening socket is in the epoll set */
	int retiring;         /* takes nothing new; goes once it holds none */
	long served;
	long max_requests;
	struct pool_board *board;
	int slot;
	server_handler *handle;
};

static struct conn *find_conn(struct loop *l, int fd)
{
	for (struct conn *c = l->w.conns; c; c = c->next)
		if (c->fd == fd)
			return c;
	return NULL;
}

static void drop(struct loop *l, struct conn *c)
{
	struct conn **pc = &l->w.conns;

	while (*pc && *pc != c)
		pc = &(*pc)->next;
	if (*pc)
		*pc = c->next;
	conn_free(c);
}

/* From now on: no new connection, and every response ends its
 * connection (with its FIN, so a web server never sends on one that is
 * going); the idle ones go when the web server closes them or they have
 * been idle KEEP_IDLE_MS. The pool replaces the worker at once. */
static void retire(struct loop *l)
{
	if (l->retiring)
		return;
	l->retiring = 1;
	for (struct conn *c = l->w.conns; c; c = c->next)
		c->last = 1;
	pool_retiring(l->board, l->slot);
}

/* Answers the request that is complete on c. */
static void serve(struct loop *l, struct conn *c)
{
	struct req r;
	int err;

	/* the last request of max_requests ends its connection */
	if (l->max_requests && l->served + 1 >= l->max_requests)
		retire(l);
	if (l->retiring || stopping)
		c->last = 1;
	l->w.current = c;
	c->state = CONN_BUSY;
	pool_mark(l->board, l->slot, 1);
	err = req_init(&r, c);
	l->handle(&l->w, &r, err);
	req_free(&r);
	/* req_abort() closed it, or req_end() ended the request already */
	if (c->state == CONN_BUSY)
		conn_end(c);
	l->w.current = NULL;
	worker_collect(&l->w, l->w.db);
	pool_mark(l->board, l->slot, 0);
	if (++l->served % 256 == 0)
		worker_sweep(&l->w);
}

/* Reads what c has and answers every request that is complete; drains a
 * closing one. */
static void service(struct loop *l, struct conn *c)
{
	while (conn_fill(c) == CONN_READY)
		serve(l, c);
	if (c->state == CONN_CLOSED)
		drop(l, c);
}

static void take(struct loop *l)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct conn *c;
	int fd;

	fd = accept4(l->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR && errno != ECONNABORTED)
			log_error(errno, "fastcgi", "accept");
		return;
	}
	c = conn_new(fd);
	if (!c) {
		log_error(ENOMEM, "fastcgi", "new connection");
		return;
	}
	ev.data.fd = fd;
	if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		log_error(errno, "fastcgi", "epoll_ctl");
		conn_free(c);
		return;
	}
	c->next = l->w.conns;
	l->w.conns = c;
	service(l, c);
}

/* A kept connection that has been idle too long, or that a stopping
 * worker lets go: a request already on its way is answered (its
 * response ends the connection), else larder sends its FIN. */
static void let_go(struct loop *l, struct conn *c)
{
	int pending = conn_pending(c);

	c->last = 1;
	if (pending > 0) {
		service(l, c);
		return;
	}
	conn_shut(c);
	if (pending < 0)
		service(l, c); /* closed already: drained and dropped */
}

/* Minds the connections' clocks: drops what kept silent too long, lets
 * go of kept connections idle for KEEP_IDLE_MS and of closing ones past
 * their grace. Returns whether the worker should take new connections:
 * not when stopping or retiring, when it holds MAX_CONNS, or while one
 * it took less than FRESH_WAIT_MS ago has not sent its first request.
 * Sets *wait_ms to how long the next wait may last. */
static int tend(struct loop *l, int *wait_ms)
{
	struct conn *c, *next, *oldest_silent = NULL;
	long long now = conn_now_ms();
	int n = 0, fresh = 0;

	*wait_ms = 60000;
	for (c = l->w.conns; c; c = next) {
		long long age = now - c->since_ms;

		next = c->next;
		if (c->state == CONN_CLOSING) {
			if (age > CLOSE_GRACE_MS) {
				drop(l, c);
				continue;
			}
			*wait_ms = 100;
		} else if (c->state == CONN_IDLE && !c->served) {
			age = now - c->born_ms;
			if (age > FIRST_REQUEST_MS) {
				log_warn(0, "fastcgi", "no request on a new "
					 "connection for %d s: closing it",
					 FIRST_REQUEST_MS / 1000);
				drop(l, c);
				continue;
			}
			if (age < FRESH_WAIT_MS) {
				fresh = 1;
				if (*wait_ms > FRESH_WAIT_MS - age + 1)
					*wait_ms = (int)(FRESH_WAIT_MS - age + 1);
			} else {
				oldest_silent = c; /* the list is newest first */
				if (*wait_ms > 1000)
					*wait_ms = 1000;
			}
		} else if (c->state == CONN_IDLE) {
			if (age > KEEP_IDLE_MS) {
				let_go(l, c);
				next = l->w.conns; /* c may be gone: start over */
				n = 0;
				oldest_silent = NULL;
				continue;
			}
			if (*wait_ms > 1000)
				*wait_ms = 1000;
		}
		n++;
	}
	if (n >= MAX_CONNS && oldest_silent) {
		log_warn(0, "fastcgi", "%d connections: closing one that has "
			 "sent nothing for %lld ms", n,
			 now - oldest_silent->born_ms);
		drop(l, oldest_silent);
		n--;
	}
	if (stopping || l->retiring) {
		if (*wait_ms > 100)
			*wait_ms = 100;
		return 0;
	}
	return !fresh && n < MAX_CONNS;
}

static void set_listening(struct loop *l, int on)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE};

	if (on == l->listening)
		return;
	ev.data.fd = l->listen_fd;
	if (epoll_ctl(l->ep, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, l->listen_fd,
		      &ev) == 0)
		l->listening = on;
}

/* Stopping: the kept connections between requests go (a request already
 * on its way is answered first; a web server retries the next one on
 * another worker), the ones still to send their first request are
 * waited for. Returns 1 when none is left. */
static int wind_down(struct loop *l)
{
	struct conn *c, *next;

	for (c = l->w.conns; c; c = next) {
		next = c->next;
		c->last = 1;
		if (c->served && c->state == CONN_IDLE) {
			let_go(l, c);
			next = l->w.conns; /* c may be gone: start over */
		}
	}
	return l->w.conns == NULL;
}

int loop_fcgi(const struct conf *c, int listen_fd, long max_requests,
	      struct pool_board *board, int slot, server_handler *handle)
{
	struct epoll_event evs[16];
	struct sigaction sa;
	long long stop_at = 0, last_sweep;
	sigset_t block, waitmask;
	struct loop l;
	int n, wait_ms;

	memset(&l, 0, sizeof(l));
	l.listen_fd = listen_fd;
	l.board = board;
	l.slot = slot;
	l.handle = handle;
	l.max_requests = max_requests;
	/* The supervisor forked this process with its signals blocked: what
	 * was sent since stays pending until the handlers below are in.
	 * Signals land only while the worker waits, so it never stops
	 * between taking a connection and answering it. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_reopen;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_retire;
	sigaction(SIGUSR2, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	sigprocmask(SIG_SETMASK, &block, NULL);
	sigemptyset(&waitmask);
	if (worker_open(&l.w, c, 0))
		return 1;
	l.ep = epoll_create1(EPOLL_CLOEXEC);
	if (l.ep < 0) {
		log_error(errno, "fastcgi", "epoll_create1");
		worker_close(&l.w);
		return 1;
	}
	last_sweep = conn_now_ms();
	for (;;) {
		if (max_requests && l.served >= max_requests)
			retire(&l);
		if (retire_asked) {
			retire_asked = 0;
			retire(&l);
			/* a reload: what has not arrived yet is not answered
			 * under the old config (an index made private stays
			 * open for no one). The idle kept connections go now,
			 * with larder's FIN, and the web server sends their
			 * next requests to the new workers (nginx retries a
			 * GET on a kept connection that closes); a request
			 * already on its way is answered, then its
			 * connection ends. */
			if (pool_stale(l.board, l.slot))
				worker_shed(&l.w);
		}
		if (stopping) {
			if (!stop_at)
				stop_at = conn_now_ms();
			if (wind_down(&l) ||
			    conn_now_ms() - stop_at > STOP_WAIT_MS)
				break;
		} else if (l.retiring && !l.w.conns) {
			break;
		}
		set_listening(&l, tend(&l, &wait_ms));
		n = epoll_pwait(l.ep, evs, 16, wait_ms, &waitmask);
		if (n < 0 && errno != EINTR) {
			log_error(errno, "fastcgi", "epoll_wait");
			break;
		}
		if (reopen) {
			reopen = 0;
			log_open(c->log_file);
		}
		for (int i = 0; i < n; i++) {
			struct conn *conn;

			if (evs[i].data.fd == listen_fd) {
				if (l.listening)
					take(&l);
				continue;
			}
			conn = find_conn(&l, evs[i].data.fd);
			if (conn)
				service(&l, conn);
		}
		if (n == 0 && conn_now_ms() - last_sweep >= 60000) {
			last_sweep = conn_now_ms();
			worker_sweep(&l.w);
		}
	}
	while (l.w.conns)
		drop(&l, l.w.conns);
	close(l.ep);
	worker_close(&l.w);
	return 0;
}

int loop_cgi(const struct conf *c, server_handler *handle)
{
	struct worker w;
	sigset_t term;
	struct req r;
	int err;

	/* lighttpd's mod_cgi sends SIGTERM as soon as it has the whole
	 * response; finish the log line and the cleanup first. (What this
	 * process forks restores the mask: fcgi/server/fetcher.c.) */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, NULL);
	signal(SIGPIPE, SIG_IGN);
	log_open(c->log_file);
	err = req_init(&r, NULL);
	if (worker_open(&w, c, 1)) {
		req_error(&r, 503, "cannot open the data directory");
		req_log(&r);
		req_free(&r);
		return 1;
	}
	handle(&w, &r, err);
	req_drain(&r);
	req_free(&r);
	worker_collect(&w, w.db);
	worker_close(&w);
	return 0;
}
