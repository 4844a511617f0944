#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

static int fail(struct json_reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Writes "json: WHAT at byte N" to r->err; returns -1. */
static int fail(struct json_reader *r, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	if (r->err[0]) /* the first error is the one that counts */
		return -1;
	memcpy(r->err, "json: ", 7);
	va_start(ap, fmt);
	vsnprintf(r->err + 6, sizeof(r->err) - 6, fmt, ap);
	va_end(ap);
	n = strlen(r->err);
	snprintf(r->err + n, sizeof(r->err) - n, " at byte %zu",
		 (size_t)(r->p - r->start));
	return -1;
}

void json_init(struct json_reader *r, const char *data, size_t len,
	       size_t max_string)
{
	memset(r, 0, sizeof(*r));
	r->start = r->p = data;
	r->end = data + len;
	buf_init(&r->str, max_string);
}

void json_free(struct json_reader *r)
{
	buf_free(&r->str);
}

static void space(struct json_reader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' ||
				 *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

static int push(struct json_reader *r, char kind)
{
	if (r->depth == JSON_MAX_DEPTH)
		return fail(r, "nested deeper than %d", JSON_MAX_DEPTH);
	r->kind[r->depth++] = kind;
	r->first = 1;
	r->p++;
	return 0;
}

static void pop(struct json_reader *r)
{
	r->p++;
	r->depth--;
	/* the parent had at least this one item */
	r->first = 0;
	if (r->depth == 0)
		r->done = 1;
}

/* Before an item of the innermost container (closed by close): takes the
 * ',' that separates it from the one before, or the end of the container.
 * Returns 1 for an item, 0 when the container ended (and is left), -1. */
static int item(struct json_reader *r, char close)
{
	space(r);
	if (r->p == r->end)
		return fail(r, "unexpected end");
	if (*r->p == close) {
		pop(r);
		return 0;
	}
	if (!r->first) {
		if (*r->p != ',')
			return fail(r, "expected ',' or '%c'", close);
		r->p++;
		space(r);
	}
	r->first = 0;
	return 1;
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* Length of the valid UTF-8 sequence at p (before end), 0 when invalid:
 * no overlong forms, no surrogates, nothing past U+10FFFF. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0];
	size_t n, i;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

int json_utf8_valid(const char *s)
{
	const unsigned char *u = (const unsigned char *)s, *end;
	size_t n;

	if (!s)
		return 1;
	end = u + strlen(s);
	for (; u < end; u += n) {
		n = utf8_len(u, end);
		if (!n)
			return 0;
	}
	return 1;
}

static int put_utf8(struct json_reader *r, unsigned cp)
{
	char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return buf_add(&r->str, b, n) ? fail(r, "string too long") : 0;
}

/* \uXXXX at r->p (past the backslash and 'u'), with a surrogate pair's
 * second half. */
static int unicode_escape(struct json_reader *r)
{
	unsigned cp, lo;

	if (r->end - r->p < 4 || hex4(r->p, &cp))
		return fail(r, "bad \\u escape");
	r->p += 4;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return fail(r, "lone low surrogate");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' ||
		    hex4(r->p + 2, &lo) || lo < 0xdc00 || lo > 0xdfff)
			return fail(r, "lone high surrogate");
		r->p += 6;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (cp == 0)
		return fail(r, "NUL in a string");
	return put_utf8(r, cp);
}

/* The string at r->p (its opening quote), decoded into r->str. */
static int string(struct json_reader *r)
{
	const unsigned char *u;
	size_t n;

	buf_reset(&r->str);
	if (buf_add(&r->str, "", 0))
		return fail(r, "out of memory");
	r->p++;
	for (;;) {
		const char *run = r->p;

		while (r->p < r->end && *r->p != '"' && *r->p != '\\') {
			u = (const unsigned char *)r->p;
			if (*u < 0x20)
				return fail(r, "control character in a string");
			n = utf8_len(u, (const unsigned char *)r->end);
			if (!n)
				return fail(r, "invalid UTF-8 in a string");
			r->p += n;
		}
		if (buf_add(&r->str, run, (size_t)(r->p - run)))
			return fail(r, "string too long");
		if (r->p == r->end)
			return fail(r, "unterminated string");
		if (*r->p++ == '"')
			return 0;
		if (r->p == r->end)
			return fail(r, "unterminated string");
		switch (*r->p++) {
		case '"': n = buf_add(&r->str, "\"", 1); break;
		case '\\': n = buf_add(&r->str, "\\", 1); break;
		case '/': n = buf_add(&r->str, "/", 1); break;
		case 'b': n = buf_add(&r->str, "\b", 1); break;
		case 'f': n = buf_add(&r->str, "\f", 1); break;
		case 'n': n = buf_add(&r->str, "\n", 1); break;
		case 'r': n = buf_add(&r->str, "\r", 1); break;
		case 't': n = buf_add(&r->str, "\t", 1); break;
		case 'u':
			if (unicode_escape(r))
				return -1;
			n = 0;
			break;
		default:
			r->p--;
			return fail(r, "bad escape");
		}
		if (n)
			return fail(r, "string too long");
	}
}

static int digits(struct json_reader *r)
{
	const char *s = r->p;

	while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
		r->p++;
	return r->p > s ? 0 : fail(r, "bad number");
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at r->p */
static int number(struct json_reader *r)
{
	r->num = r->p;
	if (*r->p == '-')
		r->p++;
	if (r->p < r->end && *r->p == '0')
		r->p++;
	else if (digits(r))
		return -1;
	if (r->p < r->end && *r->p == '.') {
		r->p++;
		if (digits(r))
			return -1;
	}
	if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
		r->p++;
		if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
			r->p++;
		if (digits(r))
			return -1;
	}
	r->numlen = (size_t)(r->p - r->num);
	return 0;
}

static int literal(struct json_reader *r, const char *word, int type)
{
	size_t n = strlen(word);

	if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
		return fail(r, "unexpected character");
	r->p += n;
	return type;
}

int json_value(struct json_reader *r)
{
	int type;

	if (r->err[0])
		return JSON_ERROR;
	if (r->depth == 0) {
		if (r->done)
			return JSON_END;
	} else if (r->kind[r->depth - 1] == '{') {
		if (!r->want_value)
			return fail(r, "a value where a key belongs");
		r->want_value = 0;
	} else {
		int more = item(r, ']');

		if (more <= 0)
			return more;
	}
	space(r);
	if (r->p == r->end)
		return fail(r, "unexpected end");
	switch (*r->p) {
	case '{':
		return push(r, '{') ? JSON_ERROR : JSON_OBJECT;
	case '[':
		return push(r, '[') ? JSON_ERROR : JSON_ARRAY;
	case '"':
		type = string(r) ? JSON_ERROR : JSON_STRING;
		break;
	case 't':
		type = literal(r, "true", JSON_TRUE);
		break;
	case 'f':
		type = literal(r, "false", JSON_FALSE);
		break;
	case 'n':
		type = literal(r, "null", JSON_NULL);
		break;
	default:
		if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9')) {
			type = number(r) ? JSON_ERROR : JSON_NUMBER;
			break;
		}
		return fail(r, "unexpected character");
	}
	if (type != JSON_ERROR && r->depth == 0)
		r->done = 1;
	return type;
}

int json_key(struct json_reader *r)
{
	int more;

	if (r->err[0])
		return -1;
	if (r->depth == 0 || r->kind[r->depth - 1] != '{')
		return fail(r, "a key outside an object");
	if (r->want_value)
		return fail(r, "a key where a value belongs");
	more = item(r, '}');
	if (more <= 0)
		return more;
	if (r->p == r->end || *r->p != '"')
		return fail(r, "expected a key");
	if (string(r))
		return -1;
	space(r);
	if (r->p == r->end || *r->p != ':')
		return fail(r, "expected ':'");
	r->p++;
	r->want_value = 1;
	return 1;
}

int json_skip(struct json_reader *r)
{
	unsigned leave = r->depth;

	if (leave == 0)
		return fail(r, "nothing to skip");
	while (r->depth >= leave) {
		if (r->kind[r->depth - 1] == '{' && !r->want_value) {
			if (json_key(r) < 0)
				return -1;
		} else if (json_value(r) == JSON_ERROR) {
			return -1;
		}
	}
	return 0;
}

int json_end(struct json_reader *r)
{
	if (r->err[0])
		return -1;
	if (!r->done)
		return fail(r, "unexpected end");
	space(r);
	return r->p == r->end ? 0 : fail(r, "data after the document");
}

int json_integer(const struct json_reader *r, long long *out)
{
	char text[32];
	char *end;

	if (!r->num || r->numlen >= sizeof(text) ||
	    memchr(r->num, '.', r->numlen) || memchr(r->num, 'e', r->numlen) ||
	    memchr(r->num, 'E', r->numlen))
		return -1;
	memcpy(text, r->num, r->numlen);
	text[r->numlen] = '\0';
	errno = 0;
	*out = strtoll(text, &end, 10);
	return errno || *end ? -1 : 0;
}

int json_put_string(struct buf *b, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	const unsigned char *end = u + strlen(s);
	int err = buf_add(b, "\"", 1);

	while (!err && u < end) {
		const unsigned char *run = u;
		size_t n;

		while (u < end && *u >= 0x20 && *u != '"' && *u != '\\') {
			n = utf8_len(u, end);
			if (!n)
				return EINVAL;
			u += n;
		}
		err = buf_add(b, run, (size_t)(u - run));
		if (err || u == end)
			break;
		switch (*u) {
		case '"': err = buf_add(b, "\\\"", 2); break;
		case '\\': err = buf_add(b, "\\\\", 2); break;
		case '\b': err = buf_add(b, "\\b", 2); break;
		case '\f': err = buf_add(b, "\\f", 2); break;
		case '\n': err = buf_add(b, "\\n", 2); break;
		case '\r': err = buf_add(b, "\\r", 2); break;
		case '\t': err = buf_add(b, "\\t", 2); break;
		default: err = buf_addf(b, "\\u%04x", *u); break;
		}
		u++;
	}
	return err ? err : buf_add(b, "\"", 1);
}
