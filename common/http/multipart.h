/* multipart: a streaming multipart/form-data parser (RFC 7578 over the
 * RFC 2046 multipart syntax). I/O-free and malloc-free: the caller owns the
 * parser, feeds it the request body in chunks of any size (one byte at a
 * time works, a delimiter may be split anywhere) and gets callbacks for
 * each part's start, its data and its end.
 *
 * The body is preamble, "--boundary" lines starting each part, part
 * headers, an empty line, the part's bytes, and "--boundary--" after the
 * last one; the CRLF before each delimiter belongs to the delimiter, not
 * to the data. The preamble and the epilogue after the close delimiter are
 * ignored; spaces and tabs after a boundary (transport padding) are
 * allowed. "\r\n--boundary" followed by anything but padding, CR or "--"
 * is data, as it cannot be a delimiter.
 *
 * Data is handed on as soon as it is known not to start a delimiter: the
 * parser holds back at most boundary length + 5 bytes, and keeps none of
 * them in memory (they are a prefix of the delimiter it knows).
 */
#ifndef LARDER_MULTIPART_H
#define LARDER_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

#define MULTIPART_MAX_BOUNDARY 70   /* RFC 2046 */
#define MULTIPART_MAX_HEADERS  8192 /* one part's header block, bytes */
#define MULTIPART_MAX_PARTS    1000

/* What a part's headers said. The strings live in the parser and stay
 * valid until the next part begins (or the parser is initialised again). */
struct multipart_part {
	const char *name;         /* Content-Disposition name: never empty */
	const char *filename;     /* its filename, NULL when it has none */
	const char *content_type; /* Content-Type value, "" when absent */
	unsigned index;           /* 0 for the first part */
};

/* Callbacks, each may be NULL. A non-zero return stops the parse: the
 * parser keeps that value and multipart_feed and multipart_finish return
 * it from then on. */
struct multipart_callbacks {
	/* a part's headers are complete */
	int (*begin)(void *arg, const struct multipart_part *part);
	/* len > 0 bytes of the current part; called any number of times */
	int (*data)(void *arg, const char *data, size_t len);
	/* the current part's data is complete */
	int (*end)(void *arg);
};

struct multipart {
	const struct multipart_callbacks *cb;
	void *arg;
	char delim[MULTIPART_MAX_BOUNDARY + 5]; /* "\r\n--" boundary */
	size_t dlen;
	int state;
	size_t k;       /* bytes of delim matched so far */
	int in_part;    /* a part's headers were read and it has not ended */
	unsigned parts; /* parts begun */
	int error;      /* 0, EINVAL, or what a callback returned */
	size_t hlen;
	char hdr[MULTIPART_MAX_HEADERS];      /* the header block being read */
	char strs[MULTIPART_MAX_HEADERS + 4]; /* decoded name etc., NULs */
	struct multipart_part part;
	char err[160]; /* one line, "multipart: ...", when error is set */
};

/* Checks that content_type (a Content-Type header value) is
 * multipart/form-data (case-insensitive) and writes its boundary parameter,
 * token or quoted-string, unquoted, to out (len bytes). Returns 0, EINVAL
 * when it is not multipart/form-data, has no boundary, or the boundary is
 * not 1..70 RFC 2046 characters (not ending in a space); ENAMETOOLONG when
 * out is too small. */
int multipart_boundary(const char *content_type, char *out, size_t len);

/* Readies p to parse a body delimited by boundary, calling cb's functions
 * with arg; cb and arg must outlive the parse. Returns 0, or EINVAL (reason
 * in p->err) for a boundary that multipart_boundary would refuse. */
int multipart_init(struct multipart *p, const char *boundary,
                   const struct multipart_callbacks *cb, void *arg);

/* Parses len more bytes of the body. Returns 0; EINVAL with the reason in
 * p->err when the body is malformed or over a limit; or the non-zero value
 * a callback returned. Once it has failed it returns that value again. */
int multipart_feed(struct multipart *p, const void *data, size_t len);

/* Says the body is complete. Returns 0 when the close delimiter was seen
 * (and nothing failed), else EINVAL with the reason in p->err, or the
 * earlier failure. */
int multipart_finish(struct multipart *p);

#endif
