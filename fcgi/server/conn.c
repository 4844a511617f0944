#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "fcgi/server/conn.h"

/* Pieces smaller than this are gathered and written together. */
#define COALESCE 8192
/* What conn_send may hold back: one record's unsent remainder and more. */
#define OUT_MAX (2 * (FASTCGI_MAX_CONTENT + FASTCGI_HEADER_LEN) + COALESCE)
/* How long a blocked write waits for the web server to take a byte. */
#define WRITE_WAIT_MS (300 * 1000)
/* Body bytes conn_end reads and drops, after a response that did not read
 * them all (an upload refused early), until the web server ends the body
 * or hangs up; past that the connection is closed anyway. Closing on
 * unread bytes resets it, and nginx, still sending the body, then answers
 * 502 instead of the response it was given: this is enough for what
 * sits in the socket buffers between them. */
#define DRAIN_MAX (16 << 20)

long long conn_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

struct conn *conn_new(int fd)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (!c) {
		close(fd);
		return NULL;
	}
	c->born_ms = c->since_ms = conn_now_ms();
	c->fd = fd;
	c->is_tcp = getsockname(fd, (struct sockaddr *)&ss, &len) == 0 &&
		    ss.ss_family != AF_UNIX;
	fastcgi_init(&c->p);
	buf_init(&c->env, 2 * FASTCGI_MAX_PARAMS);
	buf_init(&c->out, OUT_MAX);
	c->state = CONN_IDLE;
	return c;
}

void conn_free(struct conn *c)
{
	int unread = 0;

	if (!c)
		return;
	/* a reset on purpose (conn_abort) is not worth a line */
	if (c->fd >= 0 && !c->linger &&
	    (ioctl(c->fd, FIONREAD, &unread) < 0 || unread < 0))
		unread = 0;
	if (unread > 0)
		log_warn(0, "fastcgi", "closing a connection with %d bytes "
			 "unread (%s): the web server gets a reset",
			 unread, c->state == CONN_CLOSING ? "sent after larder's "
			 "FIN" : c->served ? "a request on a kept connection" :
			 "a new connection");
	if (c->fd >= 0)
		close(c->fd);
	fastcgi_free(&c->p);
	buf_free(&c->env);
	buf_free(&c->out);
	free(c->envp);
	free(c);
}

/* Waits until fd is ready for events, up to ms. Returns 1, 0 on timeout. */
static int wait_fd(int fd, short events, int ms)
{
	struct pollfd p = {.fd = fd, .events = events};
	int rc;

	do {
		rc = poll(&p, 1, ms);
	} while (rc < 0 && errno == EINTR);
	return rc > 0;
}

/* Writes the buffered bytes, waiting up to wait_ms at a time for the web
 * server to take some (0: only what the socket takes now). Returns 0 when
 * the buffer is empty, 1 when bytes are left (wait_ms 0), -1 when the
 * peer is gone or took nothing for wait_ms. */
static int push_wait(struct conn *c, int wait_ms)
{
	size_t off = 0;
	ssize_t w;

	if (c->broken)
		return -1;
	while (off < c->out.len) {
		w = send(c->fd, c->out.data + off, c->out.len - off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!wait_ms)
				break;
			if (wait_fd(c->fd, POLLOUT, wait_ms))
				continue;
			log_warn(0, "fastcgi", "the web server took nothing "
				 "for %d ms", wait_ms);
		}
		c->broken = 1;
		return -1;
	}
	if (off) {
		memmove(c->out.data, c->out.data + off, c->out.len - off);
		c->out.len -= off;
		c->out.data[c->out.len] = '\0';
	}
	return c->out.len ? 1 : 0;
}

/* push_wait() blocking (block 1) or not (0). */
static int push(struct conn *c, int block)
{
	return push_wait(c, block ? WRITE_WAIT_MS : 0);
}

int conn_flush(struct conn *c)
{
	return push(c, 1) < 0 ? -1 : 0;
}

/* Buffers one record: header and content. */
static int put_record(struct conn *c, int type, const void *p, size_t n)
{
	unsigned char h[FASTCGI_HEADER_LEN];

	fastcgi_header(h, type, c->p.id, n, 0);
	if (buf_add(&c->out, h, sizeof(h)) || buf_add(&c->out, p, n)) {
		c->broken = 1;
		return -1;
	}
	return 0;
}

ssize_t conn_send(struct conn *c, const void *p, size_t n, int block)
{
	const char *d = p;
	size_t taken = 0;

	if (c->broken)
		return -1;
	if (!block && c->out.len && push(c, 0) != 0)
		return c->broken ? -1 : 0;
	while (taken < n) {
		size_t chunk = n - taken;
		unsigned char h[FASTCGI_HEADER_LEN];
		struct iovec iov[2];
		ssize_t w;
		int left;

		if (chunk > FASTCGI_MAX_CONTENT)
			chunk = FASTCGI_MAX_CONTENT;
		if (c->out.len + chunk + FASTCGI_HEADER_LEN <= COALESCE) {
			if (put_record(c, FASTCGI_STDOUT, d + taken, chunk))
				return -1;
			taken += chunk;
			continue;
		}
		if ((left = push(c, block)) != 0)
			return left < 0 ? -1 : (ssize_t)taken;
		fastcgi_header(h, FASTCGI_STDOUT, c->p.id, chunk, 0);
		iov[0].iov_base = h;
		iov[0].iov_len = sizeof(h);
		iov[1].iov_base = (void *)(d + taken);
		iov[1].iov_len = chunk;
		do {
			w = writev(c->fd, iov, 2);
		} while (w < 0 && errno == EINTR);
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			c->broken = 1;
			return -1;
		}
		if (w < 0)
			w = 0;
		if ((size_t)w < sizeof(h)) {
			if (buf_add(&c->out, h + w, sizeof(h) - (size_t)w) ||
			    buf_add(&c->out, d + taken, chunk)) {
				c->broken = 1;
				return -1;
			}
		} else if ((size_t)w < sizeof(h) + chunk &&
			   buf_add(&c->out, d + taken + (w - sizeof(h)),
				   chunk - (size_t)(w - sizeof(h)))) {
			c->broken = 1;
			return -1;
		}
		taken += chunk;
		if ((left = push(c, block)) != 0)
			return left < 0 ? -1 : (ssize_t)taken;
	}
	return (ssize_t)taken;
}

const char *conn_env(const struct conn *c, const char *name)
{
	const char *found = NULL;
	size_t n = strlen(name);

	/* The last one wins, as in every FastCGI application server: nginx
	 * sends both fastcgi_params' SCRIPT_NAME and a later override. */
	for (char **e = c->envp; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			found = *e + n + 1;
	return found;
}

/* Buffers and sends the end of the request: an empty FCGI_STDOUT and
 * FCGI_END_REQUEST. Returns 0 or -1. */
static int finish(struct conn *c)
{
	unsigned char end[24];

	fastcgi_end(end, c->p.id, 0);
	if (c->broken || buf_add(&c->out, end, sizeof(end)))
		return -1;
	return conn_flush(c);
}

/* Writes a management answer the parser made. */
static int reply(struct conn *c)
{
	if (buf_add(&c->out, c->p.data, c->p.len))
		return -1;
	return conn_flush(c);
}

/* Parses buffered bytes until a request is complete, more are needed, or
 * the connection must go. */
static enum conn_state parse(struct conn *c)
{
	enum fastcgi_event ev;
	const char *cl;
	int err;

	while (c->in_off < c->in_len) {
		c->in_off += fastcgi_feed(&c->p, c->in + c->in_off,
					  c->in_len - c->in_off, &ev);
		switch (ev) {
		case FASTCGI_MORE:
		case FASTCGI_STDIN_DATA: /* a body nobody asked for */
			break;
		case FASTCGI_PARAMS_END:
			err = fastcgi_env(c->p.params.data, c->p.params.len,
					  &c->env, &c->envp, &c->bad_env);
			if (err == EINVAL) {
				/* answered 400; its stdin is drained after */
				log_warn(0, "fastcgi", "refusing a request: %s",
					 c->bad_env);
				c->has_body = 1;
				return CONN_READY;
			}
			if (err) {
				log_error(err, "fastcgi", "bad CGI variables");
				return CONN_CLOSED;
			}
			cl = conn_env(c, "CONTENT_LENGTH");
			/* a chunked upload comes with no length (nginx with
			 * fastcgi_request_buffering off passes it on as it
			 * comes): a POST, PUT or PATCH (a registry's upload
			 * chunk) without one has a body too */
			if (cl && *cl) {
				c->has_body = strtoll(cl, NULL, 10) > 0;
			} else {
				const char *m = conn_env(c, "REQUEST_METHOD");

				c->has_body = m && (!strcmp(m, "POST") ||
						    !strcmp(m, "PUT") ||
						    !strcmp(m, "PATCH"));
			}
			if (c->has_body)
				return CONN_READY;
			break;
		case FASTCGI_STDIN_END:
			if (!c->has_body)
				return CONN_READY;
			break;
		case FASTCGI_ABORT:
			/* given up before we started: end it, no answer */
			if (finish(c) || !c->p.keep_conn)
				return CONN_CLOSED;
			fastcgi_next(&c->p);
			break;
		case FASTCGI_REPLY:
			if (reply(c))
				return CONN_CLOSED;
			break;
		case FASTCGI_ERROR:
			log_error(0, "fastcgi", "%s: closing the connection",
				  c->p.reason);
			return CONN_CLOSED;
		}
	}
	return CONN_IDLE;
}

/* CONN_CLOSING: reads and drops what comes until the web server closes
 * its side. Returns the state. */
static enum conn_state drain_closing(struct conn *c)
{
	char sink[4096];
	ssize_t n;

	for (;;) {
		n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n > 0) {
			/* the rest of a body larder stopped reading is
			 * expected; a new request is one that will fail */
			if (!c->told && (!c->has_body || c->p.stdin_done))
				log_warn(0, "fastcgi", "%zd bytes came on a "
					 "connection after larder's FIN: "
					 "dropped (the web server sent a "
					 "request it will fail)", n);
			c->told = 1;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return CONN_CLOSING;
		return c->state = CONN_CLOSED;
	}
}

int conn_pending(const struct conn *c)
{
	char b;
	ssize_t n;

	if (c->in_off < c->in_len)
		return 1;
	do {
		n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n > 0)
		return 1;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	return -1;
}

void conn_shut(struct conn *c)
{
	if (c->state == CONN_CLOSING || c->state == CONN_CLOSED)
		return;
	if (shutdown(c->fd, SHUT_WR) < 0) {
		c->state = CONN_CLOSED;
		return;
	}
	c->state = CONN_CLOSING;
	c->since_ms = conn_now_ms();
}

enum conn_state conn_fill(struct conn *c)
{
	ssize_t n;

	if (c->state == CONN_CLOSING)
		return drain_closing(c);
	for (;;) {
		c->state = parse(c);
		if (c->state != CONN_IDLE)
			return c->state;
		c->in_off = c->in_len = 0;
		n = recv(c->fd, c->in, sizeof(c->in), MSG_DONTWAIT);
		if (n > 0) {
			c->in_len = (size_t)n;
			c->since_ms = conn_now_ms();
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return c->state = CONN_IDLE;
		return c->state = CONN_CLOSED;
	}
}

ssize_t conn_read_body(struct conn *c, void *p, size_t n)
{
	enum fastcgi_event ev;
	size_t total = 0;
	ssize_t got;

	/* as many records' content as have come, up to n: nginx sends a
	 * streamed body in records of 8 KiB or less, and the caller's
	 * parser and file writes cost per call */
	while (!c->p.stdin_done && total < n) {
		if (c->in_off < c->in_len) {
			size_t len = c->in_len - c->in_off;

			/* no more content in one event than the caller takes */
			if (len > n - total)
				len = n - total;
			c->in_off += fastcgi_feed(&c->p, c->in + c->in_off, len,
						  &ev);
			if (ev == FASTCGI_STDIN_DATA) {
				memcpy((char *)p + total, c->p.data, c->p.len);
				total += c->p.len;
				continue;
			}
			if (ev == FASTCGI_STDIN_END)
				break;
			if (ev == FASTCGI_REPLY && reply(c))
				return -1;
			if (ev == FASTCGI_ERROR || ev == FASTCGI_ABORT) {
				c->broken = 1;
				return -1;
			}
			continue;
		}
		c->in_off = c->in_len = 0;
		/* with some in hand, only what is there already */
		got = recv(c->fd, c->in, sizeof(c->in),
			   total ? MSG_DONTWAIT : 0);
		if (got < 0 && (errno == EINTR || errno == EAGAIN)) {
			if (total && errno == EAGAIN)
				break;
			if (errno == EAGAIN &&
			    !wait_fd(c->fd, POLLIN, WRITE_WAIT_MS))
				return -1;
			continue;
		}
		if (got <= 0) {
			if (total)
				break; /* the next call finds the break */
			return -1;
		}
		c->in_len = (size_t)got;
	}
	return (ssize_t)total;
}

void conn_linger(struct conn *c, int reset)
{
	struct linger l = {.l_onoff = reset, .l_linger = 0};

	if (c->is_tcp && c->linger != reset) {
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		c->linger = reset;
	}
}

/* TCP_CORK on or off: while it is on, what is written waits, so that the
 * FIN of a shutdown goes out in the same segment. */
static void cork(struct conn *c, int on)
{
	if (c->is_tcp)
		setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
}

/* Reads and drops what is left of the request body, up to DRAIN_MAX. */
static void drain_body(struct conn *c)
{
	char sink[4096];
	size_t drained = 0;
	ssize_t n;

	while (c->has_body && !c->p.stdin_done && drained < DRAIN_MAX) {
		n = conn_read_body(c, sink, sizeof(sink));
		if (n <= 0)
			break;
		drained += (size_t)n;
	}
}

void conn_end(struct conn *c)
{
	int going = c->last || !c->p.keep_conn;

	/* A connection that goes: the rest of the body first (the response
	 * goes out meanwhile, all but its end), so that FCGI_END_REQUEST
	 * and the FIN leave together, and nginx, seeing both at once, never
	 * keeps the connection. A FIN after the end would come too late:
	 * nginx may have sent its next request on it already. */
	if (going && c->has_body && !c->p.stdin_done) {
		if (conn_flush(c) < 0) {
			c->state = CONN_CLOSED;
			return;
		}
		drain_body(c);
	}
	if (going && (!c->has_body || c->p.stdin_done))
		cork(c, 1);
	if (finish(c)) {
		c->state = CONN_CLOSED;
		return;
	}
	conn_linger(c, 0);
	c->served++;
	if (going) {
		conn_shut(c);
		return;
	}
	drain_body(c);
	/* nginx does not keep a connection it has not sent the body on */
	if (c->has_body && !c->p.stdin_done) {
		conn_shut(c);
		return;
	}
	fastcgi_next(&c->p);
	c->has_body = 0;
	c->bad_env = NULL;
	c->state = CONN_IDLE;
	c->since_ms = conn_now_ms();
}

void conn_end_close(struct conn *c)
{
	c->last = 1;
	conn_end(c);
}

void conn_abort(struct conn *c)
{
	static const unsigned char bogus[FASTCGI_HEADER_LEN]; /* version 0 */

	/* finish the record in flight, or the bogus header would be read as
	 * its content; a web server that takes nothing for a second is cut
	 * off by the reset alone */
	if (!c->broken && push_wait(c, 1000) == 0) {
		ssize_t w = send(c->fd, bogus, sizeof(bogus),
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;
	}
	c->broken = 1;
	conn_linger(c, 1);
	c->is_tcp = 0;
	c->state = CONN_CLOSED;
	shutdown(c->fd, SHUT_WR);
}
