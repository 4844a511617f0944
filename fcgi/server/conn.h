/* conn: one FastCGI connection from the web server.
 *
 * Reading is non-blocking and incremental (conn_fill), so a worker can wait
 * on many kept connections and its listening socket at once; a request is
 * handed over once its variables and (for requests without a body) its
 * empty stdin have arrived. Writing buffers small pieces (headers, a short
 * body and the end of the request go out in one write) and sends the rest
 * as FCGI_STDOUT records, blocking until the web server takes them, or not
 * at all (conn_send with block 0) for an owner that must not let its client
 * slow the upstream download.
 */
#ifndef LARDER_CONN_H
#define LARDER_CONN_H

#include <stddef.h>
#include <sys/types.h>

#include "common/buf.h"
#include "common/http/fastcgi.h"

enum conn_state {
	CONN_IDLE,    /* waiting for (the rest of) a request */
	CONN_READY,   /* a request is complete: serve it */
	CONN_BUSY,    /* being served */
	CONN_CLOSING, /* larder sent its FIN (conn_shut): draining what the
	                 web server still sends until it closes too */
	CONN_CLOSED,  /* the peer closed, or broke the protocol: drop it */
};

struct conn {
	int fd;
	int is_tcp;           /* SO_LINGER resets only work on TCP */
	enum conn_state state;
	struct fastcgi_parser p;
	char in[16384];       /* read, not yet parsed */
	size_t in_off, in_len;
	char **envp;          /* the request's variables, "NAME=VALUE" */
	struct buf env;       /* what envp points into */
	int has_body;         /* CONTENT_LENGTH > 0: stdin is the handler's */
	const char *bad_env;  /* why the variables were refused (a NUL in a
	                         value...): envp is empty, the answer a 400 */
	struct buf out;       /* buffered FCGI_STDOUT records */
	int broken;           /* a write failed: the web server is gone */
	int linger;           /* reset-on-close is on */
	long served;          /* requests answered on it */
	int last;             /* end the next response with a FIN: the
	                         worker is retiring, or the socket is
	                         wanted free */
	long long born_ms;    /* when it was accepted (CLOCK_MONOTONIC) */
	long long since_ms;   /* when it went idle, or began closing */
	int told;             /* CONN_CLOSING: bytes after the FIN logged */
	struct conn *next;    /* the worker's list */
};

/* Makes a connection for an accepted, non-blocking socket. Returns it, or
 * NULL (ENOMEM; fd is closed). */
struct conn *conn_new(int fd);

/* Closes the socket and frees c. NULL is fine. Closing a socket with
 * bytes unread makes the kernel reset it, and a web server that was
 * sending a request on it fails that request: logged when it happens. */
void conn_free(struct conn *c);

/* Milliseconds of CLOCK_MONOTONIC. */
long long conn_now_ms(void);

/* Whether the web server has sent anything on an idle c (a request on its
 * way, which closing would reset). Returns 1, 0, or -1 when it has closed
 * its side. */
int conn_pending(const struct conn *c);

/* Lets go of c gracefully: a FIN (shutdown SHUT_WR), then c is
 * CONN_CLOSING, and conn_fill() reads and drops what still comes until
 * the web server closes too (nginx drops a kept connection whose FIN it
 * has seen, and never sends on it); the caller frees it then, or after a
 * grace. */
void conn_shut(struct conn *c);

/* Reads what the socket has without blocking and parses it; answers
 * management records itself. Sets c->state: CONN_READY with a request,
 * CONN_IDLE when more is needed, CONN_CLOSED when the connection is over.
 * On a CONN_CLOSING connection, reads and drops what came (logged: the
 * web server sent a request larder cannot answer) and sets CONN_CLOSED
 * at its end. Returns c->state. */
enum conn_state conn_fill(struct conn *c);

/* Reads up to n bytes of the request body, blocking until some arrive,
 * then taking whatever else has come (any number of records) without
 * waiting. Returns the number read, 0 at its end, or -1 (the connection
 * broke). */
ssize_t conn_read_body(struct conn *c, void *p, size_t n);

/* Sends n bytes of response as FCGI_STDOUT. With block, all of them, or -1
 * once the web server is gone; without, only what the socket takes now
 * (perhaps 0). Returns the bytes taken. */
ssize_t conn_send(struct conn *c, const void *p, size_t n, int block);

/* Pushes buffered bytes out, blocking. Returns 0 or -1. */
int conn_flush(struct conn *c);

/* Ends the request (FCGI_END_REQUEST), reads what is left of its body, and
 * readies c for the next request when the web server keeps connections;
 * else, or with c->last, lets go of it (conn_shut; on TCP the FIN rides
 * in the segment of the FCGI_END_REQUEST, so nginx sees both at once and
 * never keeps the connection), or sets CONN_CLOSED when it is broken. */
void conn_end(struct conn *c);

/* Ends the request as conn_end() does with c->last: lets go of the
 * connection rather than keep it, so the web server does not send its
 * next request to a worker that goes on working on this one. */
void conn_end_close(struct conn *c);

/* Breaks the response so the web server fails it at once: an invalid
 * record (any front end stops at a protocol error, on any transport), then
 * a close with a reset. c is CONN_CLOSED afterwards. */
void conn_abort(struct conn *c);

/* Turns reset-on-close on or off: a process that dies mid-response then
 * resets its TCP connection rather than closing it, which a web server
 * takes for the normal end of a short body. (On unix sockets nginx learns
 * it from the missing FCGI_END_REQUEST, with fastcgi_keep_conn.) */
void conn_linger(struct conn *c, int reset);

/* Returns a request variable or NULL; valid until conn_end(). */
const char *conn_env(const struct conn *c, const char *name);

#endif
