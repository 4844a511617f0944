#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "fcgi/dispatch.h"
#include "fcgi/loop.h"
#include "fcgi/req.h"
#include "fcgi/worker.h"

/* Connections one worker holds at most. */
#define MAX_CONNS 128
/* How long a stopping worker waits for the first request of a connection
 * it accepted. */
#define STOP_WAIT_MS 5000
/* How long a new connection may take to send its first request. */
#define FIRST_REQUEST_MS 10000

static volatile sig_atomic_t stopping, reopen;

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

struct loop {
	struct worker w;
	int ep;
	int listen_fd;
	int listening;        /* the listening socket is in the epoll set */
	long served;
	struct pool_board *board;
	int slot;
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

/* Answers the request that is complete on c. */
static void serve(struct loop *l, struct conn *c)
{
	struct req r;
	int err;

	l->w.current = c;
	c->state = CONN_BUSY;
	pool_mark(l->board, l->slot, 1);
	err = req_init(&r, c);
	dispatch(&l->w, &r, err);
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

/* Reads what c has and answers every request that is complete. */
static void service(struct loop *l, struct conn *c)
{
	while (conn_fill(c) == CONN_READY) {
		serve(l, c);
		if (c->state == CONN_CLOSED)
			break;
	}
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

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Whether the worker should take new connections now: not when stopping,
 * when it holds too many, or while one it took has not sent its first
 * request (the next request would wait behind that one); a connection
 * that keeps silent too long is dropped. Sets *fresh when one is still
 * awaited. */
static int want_more(struct loop *l, int *fresh)
{
	struct conn *c, *next;
	int n = 0;

	*fresh = 0;
	for (c = l->w.conns; c; c = next) {
		next = c->next;
		if (!c->served && c->state == CONN_IDLE &&
		    now_ms() - c->born_ms > FIRST_REQUEST_MS) {
			log_warn(0, "fastcgi", "no request on a new connection "
				 "for %d s: closing it", FIRST_REQUEST_MS / 1000);
			drop(l, c);
			continue;
		}
		if (!c->served)
			*fresh = 1;
		n++;
	}
	return !stopping && !*fresh && n < MAX_CONNS;
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

/* Stopping: the kept connections between requests go (a web server
 * retries on another), the ones still to send their first request are
 * waited for. Returns 1 when none is left. */
static int wind_down(struct loop *l)
{
	struct conn **pc = &l->w.conns, *c;

	while ((c = *pc) != NULL) {
		if (c->served && c->state == CONN_IDLE) {
			*pc = c->next;
			conn_free(c);
			continue;
		}
		pc = &c->next;
	}
	return l->w.conns == NULL;
}

int loop_fcgi(const struct conf *c, int listen_fd, long max_requests,
	      struct pool_board *board, int slot)
{
	struct epoll_event evs[16];
	struct sigaction sa;
	long long stop_at = 0;
	sigset_t block, waitmask;
	struct loop l;
	int n, fresh;

	memset(&l, 0, sizeof(l));
	l.listen_fd = listen_fd;
	l.board = board;
	l.slot = slot;
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
	signal(SIGUSR2, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGUSR1);
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
	for (;;) {
		if (max_requests && l.served >= max_requests)
			stopping = 1;
		if (stopping) {
			if (!stop_at)
				stop_at = now_ms();
			if (wind_down(&l) || now_ms() - stop_at > STOP_WAIT_MS)
				break;
		}
		set_listening(&l, want_more(&l, &fresh));
		n = epoll_pwait(l.ep, evs, 16,
				stopping || fresh ? 100 : 60000, &waitmask);
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
		if (n == 0)
			worker_sweep(&l.w);
	}
	while (l.w.conns)
		drop(&l, l.w.conns);
	close(l.ep);
	worker_close(&l.w);
	return 0;
}

int loop_cgi(const struct conf *c)
{
	struct worker w;
	sigset_t term;
	struct req r;
	int err;

	/* lighttpd's mod_cgi sends SIGTERM as soon as it has the whole
	 * response; finish the log line and the cleanup first. (What this
	 * process forks restores the mask: fcgi/fetcher.c.) */
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
	dispatch(&w, &r, err);
	req_drain(&r);
	req_free(&r);
	worker_collect(&w, w.db);
	worker_close(&w);
	return 0;
}
