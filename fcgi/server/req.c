#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/url.h"
#include "fcgi/server/req.h"

extern char **environ;

#define MAX_HEADERS (16 * 1024)

ssize_t req_read_body(struct req *r, void *p, size_t n)
{
	ssize_t got;

	if (r->conn) /* FastCGI: the records say where the body ends */
		return conn_read_body(r->conn, p, n);
	if (r->body_left <= 0)
		return 0;
	if ((long long)n > r->body_left)
		n = (size_t)r->body_left;
	do
		got = read(STDIN_FILENO, p, n);
	while (got < 0 && errno == EINTR);
	if (got <= 0)
		return -1; /* a CGI body shorter than its Content-Length */
	r->body_left -= got;
	return got;
}

void req_drain(struct req *r)
{
	char sink[65536];
	long long drained = 0;
	ssize_t got;

	if (r->conn)
		return;
	while (r->body_left > 0 && drained < REQ_DRAIN_MAX) {
		got = req_read_body(r, sink, sizeof(sink));
		if (got <= 0)
			break;
		drained += got;
	}
}

int req_init(struct req *r, struct conn *conn)
{
	const char *m;

	memset(r, 0, sizeof(*r));
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	r->conn = conn;
	r->envp = conn ? conn->envp : environ;
	buf_init(&r->hdr, MAX_HEADERS);
	m = req_env(r, "REQUEST_METHOD");
	r->method = m && *m ? m : "GET";
	r->head = strcmp(r->method, "HEAD") == 0;
	r->query = req_env(r, "QUERY_STRING");
	if (!r->query)
		r->query = "";
	m = req_env(r, "CONTENT_LENGTH");
	r->body_left = m ? strtoll(m, NULL, 10) : 0;
	if (r->body_left < 0)
		r->body_left = 0;
	if (conn && conn->bad_env) {
		r->bad_request = conn->bad_env;
		return EINVAL;
	}
	return route_request_path(req_env(r, "SCRIPT_NAME"),
				  req_env(r, "PATH_INFO"),
				  req_env(r, "REQUEST_URI"), r->path,
				  sizeof(r->path), r->mount, sizeof(r->mount));
}

void req_quiet(struct req *r, const char *what)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "%s", what);
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	buf_init(&r->hdr, MAX_HEADERS);
	r->method = "GET";
	r->query = "";
	r->aborted = 1;
}

void req_free(struct req *r)
{
	buf_free(&r->hdr);
}

const char *req_env(const struct req *r, const char *name)
{
	const char *found = NULL;
	size_t n = strlen(name);

	/* The last one wins, as in every FastCGI application server: nginx
	 * sends both fastcgi_params' SCRIPT_NAME and a later override. */
	for (char **e = r->envp; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			found = *e + n + 1;
	return found;
}

int req_env_on(const struct req *r, const char *name)
{
	const char *v = req_env(r, name);

	return v && strcmp(v, "1") == 0;
}

int req_env_joined(const struct req *r, const char *name, struct buf *out)
{
	size_t n = strlen(name);
	int err = 0, first = 1;

	for (char **e = r->envp; !err && e && *e; e++) {
		if (strncmp(*e, name, n) != 0 || (*e)[n] != '=')
			continue;
		if (!first)
			err = buf_add(out, ", ", 2);
		if (!err)
			err = buf_adds(out, *e + n + 1);
		first = 0;
	}
	return err;
}

int req_header(struct req *r, const char *name, const char *fmt, ...)
{
	size_t mark = r->hdr.len;
	va_list ap;
	int err;

	err = buf_addf(&r->hdr, "%s: ", name);
	if (!err) {
		va_start(ap, fmt);
		err = buf_vaddf(&r->hdr, fmt, ap);
		va_end(ap);
	}
	if (!err && strpbrk(r->hdr.data + mark + strlen(name) + 2, "\r\n")) {
		log_warn(0, r->path, "dropped header %s with CR/LF", name);
		r->hdr.len = mark;
		r->hdr.data[mark] = '\0';
		return 0;
	}
	if (!err)
		err = buf_adds(&r->hdr, "\r\n");
	if (err) {
		r->hdr.len = mark;
		if (r->hdr.data)
			r->hdr.data[mark] = '\0';
	}
	return err;
}

size_t req_header_mark(const struct req *r)
{
	return r->hdr.len;
}

void req_header_rewind(struct req *r, size_t mark)
{
	if (r->started || mark > r->hdr.len)
		return;
	r->hdr.len = mark;
	if (r->hdr.data)
		r->hdr.data[mark] = '\0';
}

int req_header_date(struct req *r, const char *name, long long t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	char date[64];

	if (!gmtime_r(&tt, &tm) ||
	    !strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm))
		return EINVAL;
	return req_header(r, name, "%s", date);
}

static int out(struct req *r, const void *p, size_t n)
{
	const char *c = p;
	ssize_t w;

	if (r->write_failed || r->aborted || r->ended)
		return EPIPE;
	if (r->conn) {
		if (conn_send(r->conn, p, n, 1) < 0) {
			r->write_failed = 1;
			return EPIPE;
		}
		return 0;
	}
	while (n) {
		w = write(STDOUT_FILENO, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			r->write_failed = 1;
			return EPIPE;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static const char *reason_phrase(int status)
{
	switch (status) {
	case 200: return "OK";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 406: return "Not Acceptable";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 413: return "Payload Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 416: return "Range Not Satisfiable";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Unknown";
	}
}

int req_start(struct req *r, int status)
{
	char line[64];
	int err;

	if (r->started)
		return 0;
	r->started = 1;
	if (r->conn)
		conn_linger(r->conn, 1);
	r->status = status;
	if (r->cache)
		req_header(r, "X-Larder-Cache", "%s", r->cache);
	snprintf(line, sizeof(line), "Status: %d %s\r\n", status,
		 reason_phrase(status));
	err = out(r, line, strlen(line));
	if (!err)
		err = out(r, buf_str(&r->hdr), r->hdr.len);
	if (!err)
		err = out(r, "\r\n", 2);
	return err;
}

int req_write(struct req *r, const void *p, size_t n)
{
	int err;

	if (r->head || !n)
		return 0;
	err = out(r, p, n);
	if (!err)
		r->bytes += (long long)n;
	return err;
}

ssize_t req_write_some(struct req *r, const void *p, size_t n)
{
	ssize_t took;

	if (r->write_failed || r->aborted || r->ended)
		return -1;
	if (r->head || !n || !r->conn)
		return req_write(r, p, n) ? -1 : (ssize_t)n;
	took = conn_send(r->conn, p, n, 0);
	if (took < 0)
		r->write_failed = 1;
	else
		r->bytes += took;
	return took;
}

void req_flush(struct req *r)
{
	if (r->conn && !r->write_failed && !r->aborted && !r->ended &&
	    conn_flush(r->conn) < 0)
		r->write_failed = 1;
}

void req_end(struct req *r, int keep)
{
	if (!r->conn || !r->started || r->ended || r->aborted ||
	    r->write_failed)
		return;
	if (keep && !r->no_keep)
		conn_end(r->conn);
	else
		conn_end_close(r->conn);
	clock_gettime(CLOCK_MONOTONIC, &r->t_end);
	r->ended = 1;
}

int req_reply(struct req *r, int status, const char *content_type,
	      const void *body, size_t n)
{
	int err;

	if (content_type)
		req_header(r, "Content-Type", "%s", content_type);
	req_header(r, "Content-Length", "%zu", n);
	err = req_start(r, status);
	if (!err)
		err = req_write(r, body, n);
	return err;
}

int req_error(struct req *r, int status, const char *reason)
{
	char body[512], shown[512];
	int n;

	if (r->started) {
		req_abort(r);
		return EPIPE;
	}
	/* a reason naming an upstream URL: never its credentials */
	n = snprintf(body, sizeof(body), "%d %s: %s\n", status,
		     reason_phrase(status),
		     url_redact(reason, shown, sizeof(shown)));
	if (n < 0 || (size_t)n >= sizeof(body))
		n = (int)sizeof(body) - 1;
	req_header(r, "Cache-Control", "no-store");
	return req_reply(r, status, "text/plain; charset=utf-8", body,
			 (size_t)n);
}

void req_abort(struct req *r)
{
	if (r->aborted || r->ended)
		return;
	r->aborted = 1;
	if (r->conn)
		conn_abort(r->conn);
	else
		close(STDOUT_FILENO);
}

/* A Host value fit to be echoed into a Location header. */
static int host_ok(const char *h)
{
	if (!h || !*h || strlen(h) > 255)
		return 0;
	for (; *h; h++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]_",
			    *h))
			return 0;
	return 1;
}

int req_url(const struct req *r, int trust_forwarded, const char *path,
	    struct buf *out_url)
{
	const char *scheme = "http";
	const char *host = req_env(r, "HTTP_HOST");
	const char *v, *port;

	v = req_env(r, "HTTPS");
	if ((v && strcasecmp(v, "on") == 0) ||
	    ((v = req_env(r, "REQUEST_SCHEME")) && strcmp(v, "https") == 0))
		scheme = "https";
	if (trust_forwarded) {
		v = req_env(r, "HTTP_X_FORWARDED_PROTO");
		if (v && (strcmp(v, "https") == 0 || strcmp(v, "http") == 0))
			scheme = v;
		v = req_env(r, "HTTP_X_FORWARDED_HOST");
		if (host_ok(v))
			host = v;
	}
	if (!host_ok(host))
		host = req_env(r, "SERVER_NAME");
	if (!host_ok(host))
		host = "localhost";
	/* Some servers pass the host without its port (Debian's nginx
	 * fastcgi_params sends $host): put the port back from SERVER_PORT. */
	port = req_env(r, "SERVER_PORT");
	if (host == req_env(r, "HTTP_HOST") && !strchr(host, ':') && port &&
	    strspn(port, "0123456789") == strlen(port) && *port &&
	    strcmp(port, strcmp(scheme, "https") ? "80" : "443") != 0)
		return buf_addf(out_url, "%s://%s:%s%s%s", scheme, host, port,
				r->mount, path);
	return buf_addf(out_url, "%s://%s%s%s", scheme, host, r->mount, path);
}

/* Copies path to out (len bytes) with a space, '%', '"' and bytes past
 * ASCII as %XX, so that the log line splits on spaces. */
static void log_path(const char *path, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)path;
	     *p && n + 4 < len; p++) {
		if (*p == ' ' || *p == '%' || *p == '"' || *p >= 0x7f) {
			out[n++] = '%';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 15];
		} else {
			out[n++] = (char)*p;
		}
	}
	out[n] = '\0';
}

void req_log(const struct req *r)
{
	char path[ROUTE_MAX_PATH * 3 + 1];
	struct timespec t1;
	long ms;

	if (r->ended)
		t1 = r->t_end;
	else
		clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - r->t0.tv_sec) * 1000 +
	     (t1.tv_nsec - r->t0.tv_nsec) / 1000000;
	log_path(r->path, path, sizeof(path));
	log_info("%s %s%s %d %s %lldB %ldms%s", r->method, path,
		 *r->query ? "?..." : "", r->status, r->cache ? r->cache : "-",
		 r->bytes, ms,
		 r->aborted ? " aborted" : r->write_failed ? " client-gone" : "");
}
