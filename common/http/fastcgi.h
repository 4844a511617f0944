/* fastcgi: the FastCGI protocol (version 1), responder role, as bytes in
 * and bytes out. I/O-free: the connection layer (fcgi/server/conn.c) feeds what it
 * reads to a parser and writes what the encoders produce.
 *
 * A web server sends, per request, FCGI_BEGIN_REQUEST, FCGI_PARAMS records
 * ending with an empty one, then FCGI_STDIN records ending with an empty
 * one; the application answers with FCGI_STDOUT records, an empty one, and
 * FCGI_END_REQUEST. Management records (request id 0) may come between.
 * larder does not multiplex: one request at a time on a connection, which
 * is what every web server does.
 */
#ifndef LARDER_FASTCGI_H
#define LARDER_FASTCGI_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define FASTCGI_HEADER_LEN 8
#define FASTCGI_MAX_CONTENT 65535
/* The bytes of CGI variables one request may carry. */
#define FASTCGI_MAX_PARAMS (64 * 1024)

enum fastcgi_type {
	FASTCGI_BEGIN_REQUEST = 1,
	FASTCGI_ABORT_REQUEST = 2,
	FASTCGI_END_REQUEST = 3,
	FASTCGI_PARAMS = 4,
	FASTCGI_STDIN = 5,
	FASTCGI_STDOUT = 6,
	FASTCGI_STDERR = 7,
	FASTCGI_DATA = 8,
	FASTCGI_GET_VALUES = 9,
	FASTCGI_GET_VALUES_RESULT = 10,
	FASTCGI_UNKNOWN_TYPE = 11,
};

enum fastcgi_event {
	FASTCGI_MORE,       /* nothing yet: feed more bytes */
	FASTCGI_PARAMS_END, /* the request's variables are complete (in env) */
	FASTCGI_STDIN_DATA, /* body bytes: data, len */
	FASTCGI_STDIN_END,  /* the body is complete */
	FASTCGI_ABORT,      /* the web server gave up on the request */
	FASTCGI_REPLY,      /* a management answer to write: data, len */
	FASTCGI_ERROR,      /* the peer broke the protocol: reason */
};

struct fastcgi_parser {
	/* the request in progress */
	uint16_t id;             /* 0 between requests */
	int keep_conn;           /* FCGI_KEEP_CONN was set */
	int params_done, stdin_done;
	struct buf params;       /* raw name-value pairs, FASTCGI_MAX_PARAMS */
	/* the record being read */
	unsigned char hdr[FASTCGI_HEADER_LEN];
	size_t hdr_have;
	int type;
	uint16_t rec_id;
	size_t content_left, padding_left;
	unsigned char body[1024]; /* BEGIN_REQUEST, GET_VALUES: kept whole */
	size_t body_have;
	unsigned char reply[128]; /* management answers */
	/* what the last event carries */
	const char *data;
	size_t len;
	const char *reason;
};

/* Readies p for a new connection (and frees nothing: p owns one buf). */
void fastcgi_init(struct fastcgi_parser *p);

/* Frees what p owns. */
void fastcgi_free(struct fastcgi_parser *p);

/* Readies p for the next request on the same connection. */
void fastcgi_next(struct fastcgi_parser *p);

/* Consumes up to len bytes and reports at most one event. Returns the
 * number of bytes consumed; *ev says what happened (FASTCGI_MORE when
 * every byte was consumed with nothing to report). p->data and p->len
 * point into p or into data for FASTCGI_STDIN_DATA and FASTCGI_REPLY,
 * valid until the next call. After FASTCGI_ERROR (p->reason says why) the
 * connection must be closed. */
size_t fastcgi_feed(struct fastcgi_parser *p, const char *data, size_t len,
		    enum fastcgi_event *ev);

/* Walks the name-value pairs of a FCGI_PARAMS stream: from *off, sets the
 * next name and value (not NUL-terminated) and moves *off past them.
 * Returns 1 for a pair, 0 at the end, -1 when the bytes are malformed. */
int fastcgi_pair(const char *data, size_t len, size_t *off, const char **name,
		 size_t *nlen, const char **value, size_t *vlen);

/* Turns the name-value pairs of a FCGI_PARAMS stream into a CGI
 * environment: each pair becomes "NAME=VALUE" and its NUL in env (reset
 * first; its limit bounds the whole), and *envp (realloc'd; the caller's
 * to free, NULL-terminated) points at each in order. A name that is empty
 * or holds '=' or NUL, or a value that holds NUL, would make one variable
 * read as another (a NUL in a value splits it into two strings, and the
 * second could be REQUEST_URI): the request is refused, not cleaned.
 * Returns 0; EINVAL with *why set (a one-line reason) for such a pair;
 * EBADMSG when the pairs are malformed; ENOMEM when env is full or an
 * allocation fails. On error *envp is still a valid, empty list. */
int fastcgi_env(const char *data, size_t len, struct buf *env, char ***envp,
		const char **why);

/* Writes a record header for content_len bytes of type on request id. */
void fastcgi_header(unsigned char out[FASTCGI_HEADER_LEN], int type,
		    uint16_t id, size_t content_len, size_t padding_len);

/* Writes the empty FCGI_STDOUT record and FCGI_END_REQUEST that end
 * request id. Returns the length written (24). */
size_t fastcgi_end(unsigned char out[24], uint16_t id, uint32_t app_status);

#endif
