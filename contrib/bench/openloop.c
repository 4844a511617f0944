/*
 * openloop: an open-loop HTTP/1.1 load generator for the benchmarks, to
 * measure latency at a fixed offered rate (what wrk2 does; Debian lacks it).
 *
 * Usage:
 *   openloop -c CONNS -r RATE -d SECONDS [-H 'Name: value']... [-t TIMEOUT_S] URL
 *
 *   URL is http://HOST[:PORT]/path?query (no https; HOST an IPv4 literal, a
 *   [v6] literal or a name for getaddrinfo). At most 8 -H headers; a Host
 *   or Connection one replaces the default (the URL's host, keep-alive).
 *   TIMEOUT_S (default 5) is how long to wait for what is still outstanding
 *   once SECONDS are over.
 *
 * Build: cc -O2 -o openloop openloop.c   (libc only, Linux: epoll, timerfd)
 *
 * Request i (0 <= i < RATE * SECONDS) is due at start + i / RATE. When it is
 * due it goes out on an idle one of the CONNS persistent connections, or
 * else waits in a FIFO backlog until one is idle; one request per connection
 * at a time (no pipelining). Its latency runs from when it was due to the
 * last byte of its response, never from when it was sent, so a server that
 * stalls shows in the percentiles (no coordinated omission). One thread, one
 * epoll, non-blocking sockets; the time is kept by one timerfd on
 * CLOCK_MONOTONIC (ns precision, nothing spins), armed for the next request
 * while a connection is idle to send it, else for the end of the run.
 *
 * Before the clock starts, every connection is opened (waiting at most
 * TIMEOUT_S, at least 1 s); a connection that closes or fails is opened again, at once
 * after a clean close and with a backoff (1 ms doubling to 1 s) after a
 * failed connect. A request that finds its kept-alive connection closed by
 * the server before any byte of an answer is resent once on a new one.
 *
 * Output, on stdout, one JSON object:
 *   {"rate": 1000.0, "duration_s": 10.0, "conns": 32, "scheduled": 10000,
 *    "completed": 9998, "errors": 0, "non2xx3xx": 0, "timeouts": 2,
 *    "achieved_rps": 999.8, "bytes": 123456, "latency_ms": {"p50": 0.8,
 *    "p90": 1.2, "p95": 1.5, "p99": 3.1, "max": 12.0, "mean": 0.9}}
 * completed: responses parsed whole (any status; non2xx3xx is how many of
 * them had a status outside 200-399; all count for latency). errors: failed
 * connects, resets and closes in the middle of an answer, malformed answers;
 * a request lost that way is neither completed nor a timeout. timeouts:
 * requests still unanswered (sent or not) TIMEOUT_S after the end.
 * achieved_rps: completed / max(SECONDS, time from start to the last
 * answer). bytes: every byte received. Percentiles are nearest-rank over the
 * completed requests; null when none completed.
 *
 * Exit status: 0 when it ran (errors or not), 2 on bad usage or when it
 * cannot connect at all (one line on stderr), 1 on a failure of the system.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S 1000000000ull
#define NS_PER_MS 1000000ull

#define MAX_HEADERS 8
#define MAX_CONNS 10000
/* The latency array holds one uint64_t per scheduled request: 128 MiB. */
#define MAX_REQUESTS (1ull << 24)
#define MAX_RATE 1e7
#define MAX_SECONDS 1e6

#define HEAD_MAX 16384		/* status line and headers of one answer */
#define CHUNK_LINE_MAX 128	/* a chunk-size line, extensions cut off */
#define READ_MAX 65536
#define EVENTS_MAX 256
#define TIMER_ID 0xffffffffu
#define BACKOFF_MAX_MS 1000

enum cstate { C_DOWN, C_CONNECTING, C_IDLE, C_BUSY };

enum pstate {
	P_HEAD,		/* status line and headers */
	P_LENGTH,	/* body of Content-Length bytes */
	P_CHUNK_SIZE,	/* chunk-size line */
	P_CHUNK_DATA,	/* chunk data */
	P_CHUNK_END,	/* the CRLF after chunk data */
	P_TRAILER,	/* trailer lines after the last chunk */
	P_UNTIL_CLOSE,	/* body delimited by the end of the connection */
	P_DONE
};

struct conn {
	int fd;
	uint32_t gen;		/* bumped per socket; stale events are dropped */
	enum cstate state;
	int has_req;		/* holds a request: in flight or to be resent */
	int reused;		/* this socket carried a whole answer already */
	int retried;		/* the request held was resent once already */
	int want_out;		/* EPOLLOUT is in the interest set */
	unsigned fails;		/* failed connects in a row */
	uint64_t retry_at;	/* when C_DOWN: when to connect again */
	size_t pos;		/* index in the idle or the down list */
	uint64_t sched;		/* when the request held was due */
	size_t woff;		/* bytes of the request sent */
	uint64_t got;		/* bytes of the answer received */
	enum pstate ps;
	int status;
	int close_after;	/* the server closes after this answer */
	uint64_t left;		/* bytes left of the body or of the chunk */
	size_t hlen;
	size_t llen;
	char line[CHUNK_LINE_MAX];
	char head[HEAD_MAX];
};

struct opts {
	int conns;
	double rate;
	double duration;
	double timeout;
	const char *url;
	const char *headers[MAX_HEADERS];
	int nheaders;
};

struct run {
	struct opts o;
	char err[512];

	/* the target */
	char host[256];
	char port[8];
	struct sockaddr_storage addr;
	socklen_t addrlen;
	int family;
	char *req;
	size_t reqlen;

	int ep;
	int tfd;
	uint64_t armed;		/* when the timerfd fires, 0 once it has */
	struct conn *conns;
	uint32_t *idle;		/* stack of idle connections */
	size_t nidle;
	uint32_t *down;		/* connections waiting to connect again */
	size_t ndown;
	int running;		/* past the warm-up: failures count */

	uint64_t start;
	uint64_t n;		/* requests scheduled */
	uint64_t due;		/* requests whose time has come */
	uint64_t issued;	/* requests handed to a connection */
	uint64_t held;		/* requests held by connections */

	uint64_t *lat;		/* ns, one per completed request */
	uint64_t completed;
	uint64_t errors;
	uint64_t non2xx3xx;
	uint64_t bytes;
	uint64_t lat_sum;
	uint64_t lat_max;
	uint64_t last_done;

	char rbuf[READ_MAX];
};

static int fail(struct run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return -1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static uint64_t sched_at(const struct run *r, uint64_t i)
{
	return r->start + (uint64_t)((double)i * 1e9 / r->o.rate);
}

/* ---- command line and target ---- */

static int usage(struct run *r, const char *why)
{
	return fail(r, "%s (usage: openloop -c CONNS -r RATE -d SECONDS "
		    "[-H 'Name: value']... [-t TIMEOUT_S] http://HOST:PORT/path)",
		    why);
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int header_ok(const char *h)
{
	const char *colon = strchr(h, ':');

	return colon && colon != h && !strpbrk(h, "\r\n");
}

static int parse_args(struct run *r, int argc, char **argv)
{
	struct opts *o = &r->o;
	double v;
	int opt;

	o->conns = 0;
	o->rate = 0;
	o->duration = 0;
	o->timeout = 5;
	opterr = 0;
	while ((opt = getopt(argc, argv, "c:r:d:t:H:")) != -1) {
		switch (opt) {
		case 'c':
			if (parse_num(optarg, 1, MAX_CONNS, &v) < 0 ||
			    v != (int)v)
				return usage(r, "-c: a whole number 1-10000");
			o->conns = (int)v;
			break;
		case 'r':
			if (parse_num(optarg, 1e-6, MAX_RATE, &o->rate) < 0)
				return usage(r, "-r: requests per second > 0");
			break;
		case 'd':
			if (parse_num(optarg, 1e-6, MAX_SECONDS,
				      &o->duration) < 0)
				return usage(r, "-d: seconds > 0");
			break;
		case 't':
			if (parse_num(optarg, 0, MAX_SECONDS, &o->timeout) < 0)
				return usage(r, "-t: seconds >= 0");
			break;
		case 'H':
			if (o->nheaders == MAX_HEADERS)
				return usage(r, "at most 8 -H headers");
			if (!header_ok(optarg))
				return usage(r, "-H: 'Name: value'");
			o->headers[o->nheaders++] = optarg;
			break;
		default:
			return usage(r, "unknown option or missing value");
		}
	}
	if (!o->conns || o->rate <= 0 || o->duration <= 0)
		return usage(r, "-c, -r and -d are required");
	if (optind != argc - 1)
		return usage(r, "one URL expected");
	o->url = argv[optind];
	if (o->rate * o->duration + 0.5 < 1)
		return usage(r, "RATE * SECONDS is less than one request");
	if (o->rate * o->duration + 0.5 > (double)MAX_REQUESTS)
		return usage(r, "RATE * SECONDS is over 16777216 requests");
	r->n = (uint64_t)(o->rate * o->duration + 0.5);
	return 0;
}

/* Returns 1 when the header line h (as given to -H) is called name. */
static int header_is(const char *h, const char *name)
{
	size_t n = strlen(name);

	return !strncasecmp(h, name, n) && h[n] == ':';
}

static int user_has(const struct opts *o, const char *name)
{
	int i;

	for (i = 0; i < o->nheaders; i++)
		if (header_is(o->headers[i], name))
			return 1;
	return 0;
}

/* Builds the one request every connection sends. */
static int build_request(struct run *r, const char *auth, size_t authlen,
			 const char *path)
{
	const struct opts *o = &r->o;
	size_t cap = strlen(path) + authlen + 128;
	size_t len;
	int i;

	for (i = 0; i < o->nheaders; i++)
		cap += strlen(o->headers[i]) + 2;
	r->req = malloc(cap);
	if (!r->req)
		return fail(r, "out of memory");
	len = (size_t)snprintf(r->req, cap, "GET %s%s HTTP/1.1\r\n",
			       *path == '/' ? "" : "/", path);
	if (!user_has(o, "host"))
		len += (size_t)snprintf(r->req + len, cap - len,
					"Host: %.*s\r\n", (int)authlen, auth);
	for (i = 0; i < o->nheaders; i++)
		len += (size_t)snprintf(r->req + len, cap - len, "%s\r\n",
					o->headers[i]);
	if (!user_has(o, "connection"))
		len += (size_t)snprintf(r->req + len, cap - len,
					"Connection: keep-alive\r\n");
	len += (size_t)snprintf(r->req + len, cap - len, "\r\n");
	r->reqlen = len;
	return 0;
}

/* Splits http://HOST[:PORT]/path?query into r->host, r->port and the
 * request. */
static int parse_url(struct run *r)
{
	const char *u = r->o.url, *auth, *path, *hp, *he, *pp;
	size_t authlen, hlen, plen;

	if (strncasecmp(u, "http://", 7))
		return usage(r, "URL: only http://HOST:PORT/path");
	auth = u + 7;
	authlen = strcspn(auth, "/?#");
	path = auth + authlen;
	if (!authlen || memchr(auth, '@', authlen) || strpbrk(u, " \r\n"))
		return usage(r, "URL: bad host");
	if (*auth == '[') {
		he = memchr(auth, ']', authlen);
		if (!he)
			return usage(r, "URL: bad [v6] host");
		hp = auth + 1;
		pp = he + 1;
	} else {
		hp = auth;
		he = memchr(auth, ':', authlen);
		if (!he)
			he = auth + authlen;
		pp = he;
	}
	hlen = (size_t)(he - hp);
	if (!hlen || hlen >= sizeof(r->host))
		return usage(r, "URL: bad host");
	memcpy(r->host, hp, hlen);
	r->host[hlen] = '\0';
	if (pp == auth + authlen) {
		strcpy(r->port, "80");
	} else {
		char *end;
		long port;

		if (*pp != ':')
			return usage(r, "URL: bad host");
		plen = (size_t)(auth + authlen - pp - 1);
		port = strtol(pp + 1, &end, 10);
		if (!plen || plen > 5 || end != auth + authlen ||
		    port < 1 || port > 65535)
			return usage(r, "URL: bad port");
		snprintf(r->port, sizeof(r->port), "%ld", port);
	}
	if (strchr(path, '#'))
		return usage(r, "URL: no #fragment");
	return build_request(r, auth, authlen, path);
}

/* How long to wait for connections to open: TIMEOUT_S, at least 1 s. */
static double connect_wait(const struct run *r)
{
	return r->o.timeout < 1 ? 1 : r->o.timeout;
}

/* Connects one blocking-in-effect socket to ai, waiting at most timeout
 * seconds. Returns 0 or an errno. */
static int try_connect(const struct addrinfo *ai, double timeout)
{
	struct pollfd pfd;
	socklen_t len = sizeof(int);
	int fd, err = 0;

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		err = errno;
		if (err == EINPROGRESS) {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			err = poll(&pfd, 1, (int)(timeout * 1000) + 1);
			if (err < 0)
				err = errno;
			else if (err == 0)
				err = ETIMEDOUT;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err,
					    &len) < 0)
				err = errno;
		}
	}
	close(fd);
	return err;
}

/* Resolves the host and keeps the first address that takes a connection. */
static int find_address(struct run *r)
{
	struct addrinfo hints, *res, *ai;
	int rc, err = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(r->host, r->port, &hints, &res);
	if (rc)
		return fail(r, "cannot resolve %s: %s", r->host,
			    gai_strerror(rc));
	for (ai = res; ai; ai = ai->ai_next) {
		err = try_connect(ai, connect_wait(r));
		if (!err) {
			memcpy(&r->addr, ai->ai_addr, ai->ai_addrlen);
			r->addrlen = ai->ai_addrlen;
			r->family = ai->ai_family;
			break;
		}
	}
	freeaddrinfo(res);
	if (err)
		return fail(r, "cannot connect to %s port %s: %s", r->host,
			    r->port, strerror(err));
	return 0;
}

/* ---- connections ---- */

static void idle_push(struct run *r, struct conn *c)
{
	c->state = C_IDLE;
	c->pos = r->nidle;
	r->idle[r->nidle++] = (uint32_t)(c - r->conns);
}

static void list_remove(struct run *r, uint32_t *list, size_t *n, size_t pos)
{
	uint32_t last = list[--*n];

	list[pos] = last;
	r->conns[last].pos = pos;
}

static struct conn *idle_pop(struct run *r)
{
	return &r->conns[r->idle[--r->nidle]];
}

static int set_out(struct run *r, struct conn *c, int on)
{
	struct epoll_event ev;

	if (c->want_out == on)
		return 0;
	ev.events = EPOLLIN | (on ? EPOLLOUT : 0);
	ev.data.u64 = (uint64_t)c->gen << 32 | (uint64_t)(c - r->conns);
	if (epoll_ctl(r->ep, EPOLL_CTL_MOD, c->fd, &ev) < 0)
		return -1;
	c->want_out = on;
	return 0;
}

static void drop_request(struct run *r, struct conn *c)
{
	if (c->has_req) {
		c->has_req = 0;
		c->retried = 0;
		r->held--;
	}
}

/* Closes the socket; the connection is opened again delay_ms from now. */
static void conn_down(struct run *r, struct conn *c, uint64_t delay_ms)
{
	if (c->state == C_IDLE)
		list_remove(r, r->idle, &r->nidle, c->pos);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->state = C_DOWN;
	c->retry_at = now_ns() + delay_ms * NS_PER_MS;
	c->pos = r->ndown;
	r->down[r->ndown++] = (uint32_t)(c - r->conns);
}

/* A connect failed: counted, and tried again after a backoff. */
static void conn_failed(struct run *r, struct conn *c)
{
	unsigned shift;

	if (r->running)
		r->errors++;
	drop_request(r, c);
	c->fails++;
	shift = c->fails > 11 ? 10 : c->fails - 1;
	conn_down(r, c, (1ull << shift) > BACKOFF_MAX_MS ? BACKOFF_MAX_MS :
		  1ull << shift);
}

/* The connection broke while busy: the request is resent once on a new
 * connection when this kept-alive one was closed before any answer (the
 * server's idle close raced our request), otherwise it is an error. */
static void conn_broke(struct run *r, struct conn *c)
{
	if (c->has_req && c->reused && !c->retried && c->got == 0) {
		c->retried = 1;
	} else {
		if (r->running)
			r->errors++;
		drop_request(r, c);
	}
	conn_down(r, c, 0);
}

static void reset_parser(struct conn *c)
{
	c->ps = P_HEAD;
	c->hlen = 0;
	c->llen = 0;
	c->status = 0;
	c->close_after = 0;
	c->left = 0;
}

static void conn_write(struct run *r, struct conn *c)
{
	while (c->woff < r->reqlen) {
		ssize_t n = send(c->fd, r->req + c->woff, r->reqlen - c->woff,
				 MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				if (set_out(r, c, 1) < 0)
					conn_broke(r, c);
				return;
			}
			conn_broke(r, c);
			return;
		}
		c->woff += (size_t)n;
	}
	if (set_out(r, c, 0) < 0)
		conn_broke(r, c);
}

/* Sends the request the connection holds. */
static void conn_send(struct run *r, struct conn *c)
{
	c->state = C_BUSY;
	c->woff = 0;
	c->got = 0;
	reset_parser(c);
	conn_write(r, c);
}

static void conn_connected(struct run *r, struct conn *c)
{
	c->fails = 0;
	c->reused = 0;
	if (set_out(r, c, 0) < 0) {
		conn_failed(r, c);
		return;
	}
	if (c->has_req)
		conn_send(r, c);
	else
		idle_push(r, c);
}

/* Opens a new socket for c and starts connecting it. */
static void conn_open(struct run *r, struct conn *c)
{
	struct epoll_event ev;
	int one = 1;

	c->fd = socket(r->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       0);
	if (c->fd < 0) {
		conn_failed(r, c);
		return;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->gen++;
	c->want_out = 1;
	c->state = C_CONNECTING;
	ev.events = EPOLLIN | EPOLLOUT;
	ev.data.u64 = (uint64_t)c->gen << 32 | (uint64_t)(c - r->conns);
	if (epoll_ctl(r->ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
		conn_failed(r, c);
		return;
	}
	if (connect(c->fd, (struct sockaddr *)&r->addr, r->addrlen) == 0)
		conn_connected(r, c);
	else if (errno != EINPROGRESS)
		conn_failed(r, c);
}

/* Opens again the connections whose time has come; returns the earliest
 * time one is still waiting for, or 0. */
static uint64_t reopen_due(struct run *r, uint64_t now)
{
	uint64_t next = 0;
	size_t i = 0, n = r->ndown;

	/* Only the first n: those that fail again are appended. */
	while (i < n && i < r->ndown) {
		struct conn *c = &r->conns[r->down[i]];

		if (c->retry_at > now) {
			if (!next || c->retry_at < next)
				next = c->retry_at;
			i++;
			continue;
		}
		list_remove(r, r->down, &r->ndown, i);
		n--;
		conn_open(r, c);
	}
	for (; i < r->ndown; i++) {
		uint64_t t = r->conns[r->down[i]].retry_at;

		if (!next || t < next)
			next = t;
	}
	return next;
}

/* ---- response parser ---- */

static int has_token(const char *v, size_t n, const char *tok)
{
	size_t tl = strlen(tok);

	while (n) {
		size_t len = 0, end;

		while (n && (*v == ' ' || *v == '\t' || *v == ',')) {
			v++;
			n--;
		}
		while (len < n && v[len] != ',')
			len++;
		end = len;
		while (end && (v[end - 1] == ' ' || v[end - 1] == '\t'))
			end--;
		if (end == tl && !strncasecmp(v, tok, tl))
			return 1;
		v += len;
		n -= len;
	}
	return 0;
}

static int parse_length(const char *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;
	size_t i;

	if (!n || n > 18)
		return -1;
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*out = x;
	return 0;
}

/* Parses the status line and the headers in c->head (which ends with an
 * empty line) and sets how the body is delimited. */
static int parse_head(struct conn *c)
{
	const char *p = c->head, *end = c->head + c->hlen, *eol;
	int minor, keep_alive = 0, closing = 0, chunked = 0, has_len = 0;
	uint64_t len = 0;

	if (c->hlen < 14 || memcmp(p, "HTTP/1.", 7) || p[7] < '0' ||
	    p[7] > '9' || p[8] != ' ' || p[9] < '1' || p[9] > '5' ||
	    p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9' ||
	    (p[12] != ' ' && p[12] != '\r' && p[12] != '\n'))
		return -1;
	minor = p[7] - '0';
	c->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	eol = memchr(p, '\n', (size_t)(end - p));
	for (p = eol + 1; p < end; p = eol + 1) {
		const char *colon, *v, *ve;
		size_t nl;

		eol = memchr(p, '\n', (size_t)(end - p));
		ve = eol;
		if (ve > p && ve[-1] == '\r')
			ve--;
		if (ve == p)
			break;
		colon = memchr(p, ':', (size_t)(ve - p));
		if (!colon || colon == p)
			return -1;
		nl = (size_t)(colon - p);
		for (v = colon + 1; v < ve && (*v == ' ' || *v == '\t'); v++)
			;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (nl == 14 && !strncasecmp(p, "content-length", nl)) {
			if (parse_length(v, (size_t)(ve - v), &len) < 0)
				return -1;
			has_len = 1;
		} else if (nl == 17 &&
			   !strncasecmp(p, "transfer-encoding", nl)) {
			chunked = has_token(v, (size_t)(ve - v), "chunked");
		} else if (nl == 10 && !strncasecmp(p, "connection", nl)) {
			closing |= has_token(v, (size_t)(ve - v), "close");
			keep_alive |= has_token(v, (size_t)(ve - v),
						"keep-alive");
		}
	}
	c->close_after = closing || (minor == 0 && !keep_alive);
	if (c->status < 200) {
		/* an interim answer: the real one follows */
		c->hlen = 0;
		c->ps = P_HEAD;
	} else if (c->status == 204 || c->status == 304) {
		c->ps = P_DONE;
	} else if (chunked) {
		c->llen = 0;
		c->ps = P_CHUNK_SIZE;
	} else if (has_len) {
		c->left = len;
		c->ps = len ? P_LENGTH : P_DONE;
	} else {
		c->close_after = 1;
		c->ps = P_UNTIL_CLOSE;
	}
	return 0;
}

/* A chunk-size line (its CR, if any, still there): hex digits, then
 * nothing, blanks or ";extensions". */
static int parse_chunk_size(struct conn *c)
{
	uint64_t x = 0;
	size_t i;

	for (i = 0; i < c->llen; i++) {
		int ch = c->line[i], d;

		if (ch >= '0' && ch <= '9')
			d = ch - '0';
		else if (ch >= 'a' && ch <= 'f')
			d = ch - 'a' + 10;
		else if (ch >= 'A' && ch <= 'F')
			d = ch - 'A' + 10;
		else
			break;
		if (i == 15)
			return -1;
		x = x * 16 + (uint64_t)d;
	}
	if (!i || (i < c->llen && !strchr(" \t;\r", c->line[i])))
		return -1;
	c->llen = 0;
	if (x) {
		c->left = x;
		c->ps = P_CHUNK_DATA;
	} else {
		c->ps = P_TRAILER;
	}
	return 0;
}

/* Takes the status line and headers from buf; returns the bytes used. */
static long feed_head(struct conn *c, const char *buf, size_t n)
{
	size_t from = c->hlen > 3 ? c->hlen - 3 : 0;
	size_t take = n < HEAD_MAX - c->hlen ? n : HEAD_MAX - c->hlen;
	const char *e;
	size_t hend;

	if (!take)
		return -1;
	memcpy(c->head + c->hlen, buf, take);
	c->hlen += take;
	e = memmem(c->head + from, c->hlen - from, "\r\n\r\n", 4);
	if (!e)
		return (long)take;
	hend = (size_t)(e + 4 - c->head);
	take -= c->hlen - hend;
	c->hlen = hend;
	if (parse_head(c) < 0)
		return -1;
	return (long)take;
}

/* Feeds n bytes of the answer to the parser. Returns the bytes used (fewer
 * than n only once the answer is whole, c->ps == P_DONE) or -1 when it is
 * malformed. */
static long feed(struct conn *c, const char *buf, size_t n)
{
	size_t i = 0;

	while (i < n && c->ps != P_DONE) {
		const char *p = buf + i;
		size_t avail = n - i, take;
		long used;

		switch (c->ps) {
		case P_HEAD:
			used = feed_head(c, p, avail);
			if (used < 0)
				return -1;
			i += (size_t)used;
			break;
		case P_LENGTH:
		case P_CHUNK_DATA:
			take = avail < c->left ? avail : (size_t)c->left;
			c->left -= take;
			i += take;
			if (!c->left)
				c->ps = c->ps == P_LENGTH ? P_DONE :
					P_CHUNK_END;
			break;
		case P_CHUNK_SIZE:
			i++;
			if (*p != '\n') {
				if (c->llen < CHUNK_LINE_MAX)
					c->line[c->llen++] = *p;
			} else if (parse_chunk_size(c) < 0) {
				return -1;
			}
			break;
		case P_CHUNK_END:
			i++;
			if (*p == '\n')
				c->ps = P_CHUNK_SIZE;
			else if (*p != '\r')
				return -1;
			break;
		case P_TRAILER:
			i++;
			if (*p == '\n') {
				if (!c->llen)
					c->ps = P_DONE;
				c->llen = 0;
			} else if (*p != '\r') {
				c->llen++;
			}
			break;
		case P_UNTIL_CLOSE:
			i = n;
			break;
		case P_DONE:
			break;
		}
	}
	return (long)i;
}

/* ---- the run ---- */

static void complete(struct run *r, struct conn *c)
{
	uint64_t now = now_ns();
	uint64_t lat = now - c->sched;

	r->lat[r->completed++] = lat;
	r->lat_sum += lat;
	if (lat > r->lat_max)
		r->lat_max = lat;
	r->last_done = now;
	if (c->status < 200 || c->status > 399)
		r->non2xx3xx++;
	drop_request(r, c);
	c->reused = 1;
}

/* The server closed the connection, or reset it (err != 0). */
static void conn_eof(struct run *r, struct conn *c, int err)
{
	if (c->state == C_BUSY && c->ps == P_UNTIL_CLOSE && !err) {
		complete(r, c);
		conn_down(r, c, 0);
	} else if (c->state == C_BUSY) {
		conn_broke(r, c);
	} else {
		conn_down(r, c, 0);	/* an idle one closed: no harm */
	}
}

/* Handles n bytes of an answer just read; returns 1 when the connection is
 * done with for this read. */
static int conn_got(struct run *r, struct conn *c, size_t n)
{
	long used;

	if (c->state != C_BUSY || c->woff < r->reqlen) {
		/* bytes nobody asked for */
		if (r->running)
			r->errors++;
		drop_request(r, c);
		conn_down(r, c, 0);
		return 1;
	}
	c->got += n;
	used = feed(c, r->rbuf, n);
	if (used < 0) {
		if (r->running)
			r->errors++;
		drop_request(r, c);
		conn_down(r, c, 0);
		return 1;
	}
	if (c->ps != P_DONE)
		return 0;
	complete(r, c);
	if ((size_t)used < n) {
		if (r->running)
			r->errors++;	/* more than one answer */
		conn_down(r, c, 0);
	} else if (c->close_after) {
		conn_down(r, c, 0);
	} else {
		idle_push(r, c);
	}
	return 1;
}

static void conn_read(struct run *r, struct conn *c)
{
	for (;;) {
		ssize_t n = recv(c->fd, r->rbuf, sizeof(r->rbuf), 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				conn_eof(r, c, errno);
			return;
		}
		if (n == 0) {
			conn_eof(r, c, 0);
			return;
		}
		r->bytes += (uint64_t)n;
		if (conn_got(r, c, (size_t)n) || (size_t)n < sizeof(r->rbuf))
			return;
	}
}

static void on_event(struct run *r, uint64_t data, uint32_t events)
{
	uint32_t id = (uint32_t)data, gen = (uint32_t)(data >> 32);
	struct conn *c;

	if (id == TIMER_ID) {
		/* Edge-triggered: each expiry wakes us once, no need to read
		 * their count. */
		r->armed = 0;
		return;
	}
	c = &r->conns[id];
	if (c->gen != gen || c->state == C_DOWN)
		return;		/* an event of a socket since closed */
	if (c->state == C_CONNECTING) {
		socklen_t len = sizeof(int);
		int err = 0;

		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err)
			conn_failed(r, c);
		else
			conn_connected(r, c);
		return;
	}
	if ((events & EPOLLOUT) && c->state == C_BUSY &&
	    c->woff < r->reqlen) {
		conn_write(r, c);
		if (c->gen != gen || c->state != C_BUSY)
			return;
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		conn_read(r, c);
}

/* Sends what is due on idle connections, oldest first. */
static void dispatch(struct run *r, uint64_t now)
{
	while (r->due < r->n && sched_at(r, r->due) <= now)
		r->due++;
	while (r->issued < r->due && r->nidle) {
		struct conn *c = idle_pop(r);

		c->has_req = 1;
		c->retried = 0;
		c->sched = sched_at(r, r->issued);
		r->issued++;
		r->held++;
		conn_send(r, c);
	}
}

/* Arms the one timer for the time t (CLOCK_MONOTONIC, ns). Changing it
 * costs a syscall, so it is left alone while t stays the same. */
static int set_timer(struct run *r, uint64_t t)
{
	struct itimerspec its;

	if (t == r->armed)
		return 0;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(t / NS_PER_S);
	its.it_value.tv_nsec = (long)(t % NS_PER_S);
	if (timerfd_settime(r->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		return fail(r, "timerfd_settime: %s", strerror(errno));
	r->armed = t;
	return 0;
}

/* Handles the events until the time `until` at the latest: the timer wakes
 * us then, so epoll itself never needs a timeout (one would cost a kernel
 * timer per wait). */
static int wait_events(struct run *r, uint64_t until)
{
	struct epoll_event evs[EVENTS_MAX];
	int i, k, block = until > now_ns();

	if (block && set_timer(r, until) < 0)
		return -1;
	k = epoll_wait(r->ep, evs, EVENTS_MAX, block ? -1 : 0);
	if (k < 0)
		return errno == EINTR ? 0 : fail(r, "epoll_wait: %s",
						 strerror(errno));
	for (i = 0; i < k; i++)
		on_event(r, evs[i].data.u64, evs[i].events);
	return 0;
}

static int init(struct run *r)
{
	struct epoll_event ev;
	struct rlimit rl;
	rlim_t need = (rlim_t)r->o.conns + 32;
	int i;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need) {
		rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	r->conns = calloc((size_t)r->o.conns, sizeof(*r->conns));
	r->idle = calloc((size_t)r->o.conns, sizeof(*r->idle));
	r->down = calloc((size_t)r->o.conns, sizeof(*r->down));
	r->lat = malloc(r->n * sizeof(*r->lat));
	if (!r->conns || !r->idle || !r->down || !r->lat)
		return fail(r, "out of memory");
	for (i = 0; i < r->o.conns; i++)
		r->conns[i].fd = -1;
	r->ep = epoll_create1(EPOLL_CLOEXEC);
	if (r->ep < 0)
		return fail(r, "epoll_create1: %s", strerror(errno));
	r->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (r->tfd < 0)
		return fail(r, "timerfd_create: %s", strerror(errno));
	ev.events = EPOLLIN | EPOLLET;
	ev.data.u64 = TIMER_ID;
	if (epoll_ctl(r->ep, EPOLL_CTL_ADD, r->tfd, &ev) < 0)
		return fail(r, "epoll_ctl: %s", strerror(errno));
	return 0;
}

/* Opens every connection before the clock starts; returns 1 when none
 * could be opened. */
static int warm_up(struct run *r)
{
	uint64_t deadline = now_ns() + (uint64_t)(connect_wait(r) * NS_PER_S);
	int i, connecting;

	for (i = 0; i < r->o.conns; i++)
		conn_open(r, &r->conns[i]);
	for (;;) {
		uint64_t now = now_ns();

		connecting = 0;
		for (i = 0; i < r->o.conns; i++)
			connecting += r->conns[i].state == C_CONNECTING;
		if (!connecting || now >= deadline)
			break;
		if (wait_events(r, deadline) < 0)
			return -1;
	}
	if (!r->nidle)
		return fail(r, "cannot connect to %s port %s: no connection "
			    "opened in %g s", r->host, r->port, connect_wait(r));
	return 0;
}

static int run_loop(struct run *r)
{
	uint64_t deadline;

	r->running = 1;
	r->start = now_ns();
	deadline = r->start + (uint64_t)((r->o.duration + r->o.timeout) *
					 NS_PER_S);
	for (;;) {
		uint64_t now = now_ns(), retry, until = deadline;

		retry = r->ndown ? reopen_due(r, now) : 0;
		dispatch(r, now);
		if (r->issued == r->n && !r->held)
			break;
		if (now_ns() >= deadline)
			break;
		if (retry && retry < until)
			until = retry;
		/* with a connection idle, the next request is what's next */
		if (r->nidle && r->issued < r->n &&
		    sched_at(r, r->issued) < until)
			until = sched_at(r, r->issued);
		if (wait_events(r, until) < 0)
			return -1;
	}
	return 0;
}

/* ---- the report ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Prints a number as JSON: whole ones with ".0", like the example. */
static void put_num(const char *name, double v)
{
	if (v < 1e15 && v == (double)(long long)v)
		printf("\"%s\": %.1f", name, v);
	else
		printf("\"%s\": %.6g", name, v);
}

static void put_ms(const char *name, uint64_t ns, int any)
{
	if (any)
		printf("\"%s\": %.3f", name, (double)ns / 1e6);
	else
		printf("\"%s\": null", name);
}

/* Nearest rank: the smallest latency with p% of them at or below it. */
static uint64_t percentile(const struct run *r, uint64_t p)
{
	uint64_t k;

	if (!r->completed)
		return 0;
	k = (p * r->completed + 99) / 100;
	return r->lat[k ? k - 1 : 0];
}

static void report(struct run *r)
{
	double span = r->o.duration;
	double done_s = r->last_done > r->start ?
		(double)(r->last_done - r->start) / 1e9 : 0;
	uint64_t timeouts = (r->n - r->issued) + r->held;
	int any = r->completed > 0;

	if (done_s > span)
		span = done_s;
	qsort(r->lat, r->completed, sizeof(*r->lat), cmp_u64);
	printf("{");
	put_num("rate", r->o.rate);
	printf(", ");
	put_num("duration_s", r->o.duration);
	printf(", \"conns\": %d, \"scheduled\": %llu, \"completed\": %llu, "
	       "\"errors\": %llu, \"non2xx3xx\": %llu, \"timeouts\": %llu, ",
	       r->o.conns, (unsigned long long)r->n,
	       (unsigned long long)r->completed,
	       (unsigned long long)r->errors,
	       (unsigned long long)r->non2xx3xx,
	       (unsigned long long)timeouts);
	printf("\"achieved_rps\": %.1f, \"bytes\": %llu, \"latency_ms\": {",
	       (double)r->completed / span, (unsigned long long)r->bytes);
	put_ms("p50", percentile(r, 50), any);
	printf(", ");
	put_ms("p90", percentile(r, 90), any);
	printf(", ");
	put_ms("p95", percentile(r, 95), any);
	printf(", ");
	put_ms("p99", percentile(r, 99), any);
	printf(", ");
	put_ms("max", r->lat_max, any);
	printf(", ");
	put_ms("mean", any ? r->lat_sum / r->completed : 0, any);
	printf("}}\n");
	fflush(stdout);
}

static void cleanup(struct run *r)
{
	int i;

	if (r->conns)
		for (i = 0; i < r->o.conns; i++)
			if (r->conns[i].fd >= 0)
				close(r->conns[i].fd);
	if (r->tfd >= 0)
		close(r->tfd);
	if (r->ep >= 0)
		close(r->ep);
	free(r->conns);
	free(r->idle);
	free(r->down);
	free(r->lat);
	free(r->req);
}

int main(int argc, char **argv)
{
	static struct run r;
	int rc = 2;

	r.ep = -1;
	r.tfd = -1;
	if (parse_args(&r, argc, argv) < 0 || parse_url(&r) < 0 ||
	    find_address(&r) < 0)
		goto out;
	rc = 1;
	if (init(&r) < 0)
		goto out;
	if (warm_up(&r) < 0) {
		rc = r.nidle ? 1 : 2;
		goto out;
	}
	if (run_loop(&r) < 0)
		goto out;
	report(&r);
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "openloop: %s\n", r.err);
	cleanup(&r);
	return rc;
}
