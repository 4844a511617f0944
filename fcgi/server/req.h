/* req: one request and its response, over FastCGI or plain CGI.
 *
 * Handlers read CGI variables with req_env(), set headers with
 * req_header(), and either send a whole small reply (req_reply,
 * req_error) or start a response (req_start) and stream the body
 * (req_write). req_abort() breaks the connection without finishing the
 * response, so a client never mistakes a failed transfer for a complete
 * one. req_log() writes the access line.
 */
#ifndef LARDER_REQ_H
#define LARDER_REQ_H

#include <stddef.h>
#include <time.h>

#include <sys/types.h>

#include "common/buf.h"
#include "common/http/route.h"
#include "fcgi/server/conn.h"

struct req {
	struct conn *conn;    /* NULL in CGI mode (stdin/stdout) */
	char **envp;          /* CGI mode: environ */
	const char *method;
	const char *query;    /* "" when none */
	char path[ROUTE_MAX_PATH];   /* decoded, relative to the mount */
	char mount[ROUTE_MAX_PATH];  /* where larder is mounted, "" at / */
	int head;             /* HEAD: headers only */
	const char *bad_request; /* req_init refused it: why (static) */
	int status;           /* sent status, for the log */
	long long bytes;      /* body bytes sent */
	const char *cache;    /* HIT, MISS, STALE, REVALIDATED or NULL */
	int stat_kind;        /* enum stats_kind: what the metrics count it as */
	int private_index;    /* of an index that needs a token to read: its
	                         answers say Cache-Control: private and no
	                         cache in front keeps them (fcgi/server/send.h) */
	int started;          /* headers sent */
	int ended;            /* complete before the handler returned */
	int no_keep;          /* the handler has work after the answer:
	                         req_end() lets the connection go */
	int aborted;          /* connection broken on purpose */
	int write_failed;     /* the client went away */
	long long body_left;  /* request body bytes not read yet (CGI:
	                         from CONTENT_LENGTH) */
	struct buf hdr;       /* headers waiting for req_start */
	struct timespec t0;
	struct timespec t_end; /* when req_end() ended it */
};

/* Prepares r for the request whose variables are in conn (or environ when
 * conn is NULL): method, path, mount, query. Returns 0, or an errno when
 * the path cannot be decoded or the variables were refused (the caller
 * answers 400, with r->bad_request as the reason when it is set). */
int req_init(struct req *r, struct conn *conn);

/* Prepares r as a request that no client waits on, for work a handler
 * does on its own (a prefetch): whatever it would send goes nowhere. what
 * stands for the path in its log lines. */
void req_quiet(struct req *r, const char *what);

/* Frees what r owns. */
void req_free(struct req *r);

/* Returns a CGI variable or NULL. Strings live until the next request. */
const char *req_env(const struct req *r, const char *name);

/* Whether the web server set parameter name to 1: the per-request
 * switches its configuration gives larder (LARDER_PAGE_CACHE,
 * LARDER_HEAD_KEYED, LARDER_SENDFILE_GZIP; man/larder.8). */
int req_env_on(const struct req *r, const char *name);

/* Appends every value of a parameter to out, joined by ", ": a request
 * header sent on several lines (skopeo sends one Accept line per media
 * type, and nginx passes each on), as one list. Returns 0 or an errno
 * from buf. */
int req_env_joined(const struct req *r, const char *name, struct buf *out);

/* Reads up to n bytes of the request body into p. Returns how many, 0 at
 * its end, or -1 when the client or web server went away before it. */
ssize_t req_read_body(struct req *r, void *p, size_t n);

/* In CGI mode, once the response is out: reads and drops what is left of
 * the request body, up to REQ_DRAIN_MAX bytes. A web server that writes the
 * whole body before it reads the answer (Apache's mod_cgi) otherwise fails
 * the write to a program that exited, and drops the answer with it (an
 * upload refused before it was read). FastCGI connections drain their own
 * (fcgi/server/conn.c). */
#define REQ_DRAIN_MAX (16L << 20)
void req_drain(struct req *r);

/* Adds a response header; dropped silently when the value holds CR or LF.
 * Returns 0 or an errno from buf. */
int req_header(struct req *r, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Where the headers added so far end, and dropping those added since
 * (before the response starts): a header meant for a body that will not
 * come (an error goes out instead). */
size_t req_header_mark(const struct req *r);
void req_header_rewind(struct req *r, size_t mark);

/* Adds a header whose value is the HTTP date (RFC 9110, in GMT) of the
 * unix time t. Returns 0 or an errno from buf. */
int req_header_date(struct req *r, const char *name, long long t);

/* Sends the status line and headers. Returns 0 or EPIPE. From here until
 * the request ends, a worker that dies (killed, OOM, mod_fcgid's busy
 * timeout) resets its FastCGI connection rather than closing it, so the
 * web server cuts the client off at once instead of taking the close for
 * the normal end of a short body (conn_linger). */
int req_start(struct req *r, int status);

/* Writes body bytes (nothing for HEAD). Returns 0 or EPIPE. */
int req_write(struct req *r, const void *p, size_t n);

/* Writes what of n body bytes the web server takes without waiting (all of
 * them in CGI mode and for HEAD). Returns the number taken, or -1 once the
 * client is gone. */
ssize_t req_write_some(struct req *r, const void *p, size_t n);

/* Pushes buffered body bytes to the web server. */
void req_flush(struct req *r);

/* Completes a started response now, so that the web server finishes it
 * for the client, while the handler goes on with work of its own (a fetch
 * owner storing the file it has sent, a prefetch). With keep (unless
 * r->no_keep says more work follows), the connection stays, and a request
 * the web server sends on it waits until the handler is done: worth it
 * when that is a matter of milliseconds, since this worker holds a warm
 * connection to the upstream. Without, it is let go, so that the web
 * server sends its next request to a free worker. Writes after it fail
 * and req_abort() does nothing. FastCGI only: a CGI response ends with
 * its process. */
void req_end(struct req *r, int keep);

/* Sends a complete response with body (Content-Length set here). */
int req_reply(struct req *r, int status, const char *content_type,
	      const void *body, size_t n);

/* Sends status with a one-line text/plain reason, and logs it. */
int req_error(struct req *r, int status, const char *reason);

/* Breaks the connection mid-response so the transfer visibly fails. */
void req_abort(struct req *r);

/* Builds an absolute URL for path (mount prefixed) from Host, HTTPS and,
 * when trust_forwarded, X-Forwarded-Proto/Host; appends it to out.
 * Returns 0 or an errno from buf. */
int req_url(const struct req *r, int trust_forwarded, const char *path,
	    struct buf *out);

/* Logs the access line after the log's time and "larder[pid]:" (log.h):
 *   GET /root/pypi/simple/numpy/ 200 HIT 48213B 2ms
 * method, path (a space, '%', '"' or non-ASCII byte as %XX; "?..." when
 * there was a query), status, cache outcome ("-": none), body bytes (for
 * a blob handed to the web server, those it was handed: the blob or the
 * range), milliseconds, and "aborted" or "client-gone" when it did not
 * complete. */
void req_log(const struct req *r);

#endif
