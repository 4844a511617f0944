/* buf: a growable byte buffer with a hard size limit fixed when it is made.
 *
 * Every buffer that holds something a peer sent (headers, URLs, pages) is a
 * buf, so an upstream that sends a 2 GB page is an E2BIG, not an OOM. The
 * data is always NUL-terminated one past len, so it can be used as a string.
 */
#ifndef LARDER_BUF_H
#define LARDER_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *data;   /* NULL until the first append; NUL-terminated after */
	size_t len;
	size_t cap;
	size_t max;   /* len may never exceed this */
};

/* Makes an empty buffer that refuses to grow beyond max bytes. */
void buf_init(struct buf *b, size_t max);

/* Frees the bytes; the buffer is empty (and reusable) afterwards. */
void buf_free(struct buf *b);

/* Empties the buffer, keeping its allocation. */
void buf_reset(struct buf *b);

/* Appends n bytes. Returns 0, E2BIG past the limit, or ENOMEM. */
int buf_add(struct buf *b, const void *p, size_t n);

/* Appends a NUL-terminated string. Same returns as buf_add. */
int buf_adds(struct buf *b, const char *s);

/* Appends printf-formatted text. Same returns as buf_add. */
int buf_addf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int buf_vaddf(struct buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Appends s with & < > " ' escaped for HTML text and attributes. */
int buf_add_html(struct buf *b, const char *s);

/* Returns the contents as a string ("" for an empty buffer); owned by b. */
const char *buf_str(const struct buf *b);

/* Hands the bytes to the caller (who frees them) and empties b.
 * Returns a NUL-terminated string, never NULL on success; NULL on ENOMEM. */
char *buf_steal(struct buf *b);

#endif
