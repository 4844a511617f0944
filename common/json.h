/* json: a pull reader of JSON (RFC 8259) text. I/O-free, and no tree: the
 * caller walks the document value by value and keeps what it wants, so a
 * page of a million entries costs the entries kept, not a tree of them
 * (a DOM parser needs about 80 times the input for small objects).
 *
 *     struct json_reader r;
 *     json_init(&r, data, len, 1 << 20);
 *     if (json_value(&r) != JSON_OBJECT) ...        enters the object
 *     while ((k = json_key(&r)) == 1) {             r.str is the key
 *             t = json_value(&r);                   its value; a container
 *             ...                                   is entered: walk it, or
 *             json_skip(&r);                        skip the rest of it
 *     }
 *     k == 0: the object ended; -1: r.err says what is wrong
 *     json_end(&r)                                  nothing but space left
 *
 * In an array, json_value() gives each element in turn and JSON_END after
 * the last. Strings are decoded (escapes, surrogate pairs) into r.str and
 * must be valid UTF-8 without NUL; numbers are checked against the grammar
 * and left as text (json_integer() reads one). json_put_string() is the one
 * piece of writing JSON needs beyond printf.
 */
#ifndef LARDER_JSON_H
#define LARDER_JSON_H

#include <stddef.h>

#include "common/buf.h"

#define JSON_MAX_DEPTH 64

enum json_type {
	JSON_ERROR = -1,
	JSON_END = 0,      /* the array (or document) has no more values */
	JSON_OBJECT,
	JSON_ARRAY,
	JSON_STRING,
	JSON_NUMBER,
	JSON_TRUE,
	JSON_FALSE,
	JSON_NULL,
};

struct json_reader {
	const char *start, *p, *end;
	unsigned depth;
	char kind[JSON_MAX_DEPTH];  /* '{' or '[' for each open container */
	int first;                  /* the next item is the first in its
	                               container */
	int want_value;             /* a key was read: its value comes next */
	int done;                   /* the top value is complete */
	struct buf str;             /* the last key or string, decoded */
	const char *num;            /* the last number's text... */
	size_t numlen;              /* ...and its length */
	char err[160];
};

/* Readies r to read len bytes at data; no string may decode to more than
 * max_string bytes. */
void json_init(struct json_reader *r, const char *data, size_t len,
	       size_t max_string);

/* Frees what r holds. */
void json_free(struct json_reader *r);

/* Reads the next value: the document's one value, an array's next element,
 * or the value of the key just read. An object or array is entered (walk
 * it with json_key or json_value, or leave it with json_skip). Returns its
 * type, JSON_END after an array's last element (the array is left), or
 * JSON_ERROR with the reason in r->err. */
int json_value(struct json_reader *r);

/* In an object: reads the next key into r->str. Returns 1, 0 when the
 * object has no more (it is left), or -1 with the reason in r->err. */
int json_key(struct json_reader *r);

/* Skips the rest of the innermost open object or array, nested values
 * included, and leaves it. Returns 0 or -1. */
int json_skip(struct json_reader *r);

/* After the top value: returns 0 when nothing but white space is left,
 * else -1 with the reason in r->err. */
int json_end(struct json_reader *r);

/* Reads the last number as a whole number. Returns 0, or -1 when it has a
 * fraction or exponent or does not fit. */
int json_integer(const struct json_reader *r, long long *out);

/* Appends s to b as a JSON string: quoted, with '"', '\\' and control
 * characters escaped (\n and the like, else \u00XX), the rest as is.
 * Returns 0, EINVAL when s is not valid UTF-8, or an errno from buf. */
int json_put_string(struct buf *b, const char *s);

/* Returns 1 when s is well-formed UTF-8 (no overlong forms, surrogates or
 * code points past U+10FFFF), else 0; NULL is fine. What json_put_string()
 * takes. */
int json_utf8_valid(const char *s);

#endif
