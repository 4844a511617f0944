/* libFuzzer target: larder's JSON pull reader (common/json.c) against
 * Jansson, the library the design card named and larder replaced (see
 * docs/design.md). The same bytes go to both; they must take the same
 * accept/reject decision, and for an accepted document the same values in
 * the same order: every key and string byte for byte, every integer as the
 * same long long, every other number as the same double. larder's reader
 * is walked over the whole document into a canonical event stream, and
 * Jansson's tree is walked into the same form; the streams must be equal.
 *
 * Jansson is a test-only dependency: configure enables this target when
 * pkg-config finds it (libjansson-dev, contrib/deps.sh test).
 *
 * The known, legitimate differences, each decided here; the target skips
 * (returns 0) for these and nothing else:
 *
 *   - Depth. larder refuses nesting deeper than JSON_MAX_DEPTH (64), a
 *     bound on its memory; Jansson allows 2048. A document larder refuses
 *     as "nested deeper than" is skipped.
 *   - Numbers out of range. larder checks a number against the grammar and
 *     keeps its text (json_integer() reads it when a caller wants one);
 *     Jansson refuses an integer beyond long long and a real beyond double
 *     (json_error_numeric_overflow). Such a document is skipped; an
 *     integer that fits must read the same, and a real the same double.
 *   - Duplicate keys. Both accept them (Jansson without
 *     JSON_REJECT_DUPLICATES keeps the last value), but Jansson's tree has
 *     one entry per key where larder's stream has every pair: when the
 *     streams differ and Jansson with JSON_REJECT_DUPLICATES says the
 *     document has a duplicate key, it is skipped.
 *   - A raw NUL byte. Jansson's reader stops at one as at the end of the
 *     text ("2\0" is accepted as 2); JSON has no place for it, and
 *     larder must refuse any input holding one: that is checked here
 *     instead of Jansson's decision.
 *   - Bounded strings. larder refuses a string that decodes to more than
 *     json_init()'s max_string; here max_string is the input's length, so
 *     that limit never fires and is no difference.
 *
 * Not differences, and so checked: NUL (raw or \u0000) in a string or key
 * is refused by both (Jansson without JSON_ALLOW_NUL); a lone surrogate,
 * invalid UTF-8 and control characters in strings, leading zeros, and any
 * data after the document are refused by both; a top-level scalar is
 * accepted by both (Jansson with JSON_DECODE_ANY).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

/* Both libraries name things json_*: larder's json_integer() would even
 * take the place of Jansson's own at link time. So larder's reader is
 * compiled into this file under other names (make fuzz builds this target
 * from it and common/buf.c only), and then Jansson's header is read. */
#define json_init lj_init
#define json_free lj_free
#define json_value lj_value
#define json_key lj_key
#define json_skip lj_skip
#define json_end lj_end
#define json_integer lj_integer
#define json_put_string lj_put_string
#define json_utf8_valid lj_utf8_valid
#define json_type lj_type
#define JSON_ERROR LJ_ERROR
#define JSON_END LJ_END
#define JSON_OBJECT LJ_OBJECT
#define JSON_ARRAY LJ_ARRAY
#define JSON_STRING LJ_STRING
#define JSON_NUMBER LJ_NUMBER
#define JSON_TRUE LJ_TRUE
#define JSON_FALSE LJ_FALSE
#define JSON_NULL LJ_NULL
#include "common/json.c"
#undef json_init
#undef json_free
#undef json_value
#undef json_key
#undef json_skip
#undef json_end
#undef json_integer
#undef json_put_string
#undef json_utf8_valid
#undef json_type
#undef JSON_ERROR
#undef JSON_END
#undef JSON_OBJECT
#undef JSON_ARRAY
#undef JSON_STRING
#undef JSON_NUMBER
#undef JSON_TRUE
#undef JSON_FALSE
#undef JSON_NULL

#include <jansson.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

/* Appends one event: a tag byte and, for keys, strings and numbers, the
 * length and bytes of what it carries. */
static void ev(struct buf *b, char tag, const char *s, size_t len)
{
	char head[32];

	snprintf(head, sizeof(head), "%c%zu:", tag, len);
	if (buf_adds(b, head) || (len && buf_add(b, s, len)) ||
	    buf_adds(b, "\n"))
		abort();
}

/* A number's event: "I" and the long long, or "R" and the double in %a. */
static void ev_int(struct buf *b, long long v)
{
	char s[32];

	snprintf(s, sizeof(s), "%lld", v);
	ev(b, 'I', s, strlen(s));
}

static void ev_real(struct buf *b, double v)
{
	char s[64];

	snprintf(s, sizeof(s), "%a", v);
	ev(b, 'R', s, strlen(s));
}

/* larder's number, as Jansson reads it: no fraction or exponent is an
 * integer (*too_big when it overflows a long long), else a double. */
static void larder_number(const struct json_reader *r, struct buf *b,
			  int *too_big)
{
	char text[512];
	long long v;
	double x;

	if (!memchr(r->num, '.', r->numlen) && !memchr(r->num, 'e', r->numlen) &&
	    !memchr(r->num, 'E', r->numlen)) {
		if (lj_integer(r, &v)) {
			*too_big = 1;
			return;
		}
		ev_int(b, v);
		return;
	}
	if (r->numlen >= sizeof(text)) {
		/* strtod reads it the same from the heap */
		char *t = strndup(r->num, r->numlen);

		if (!t)
			abort();
		errno = 0;
		x = strtod(t, NULL);
		free(t);
	} else {
		memcpy(text, r->num, r->numlen);
		text[r->numlen] = '\0';
		errno = 0;
		x = strtod(text, NULL);
	}
	if (errno == ERANGE && (x > 1 || x < -1)) {
		*too_big = 1; /* Jansson refuses an overflowing real */
		return;
	}
	ev_real(b, x);
}

/* Walks the value of type t larder's reader has just begun. */
static int larder_walk(struct json_reader *r, int t, struct buf *b,
		       int *too_big)
{
	int k;

	switch (t) {
	case LJ_ERROR:
		return -1;
	case LJ_STRING:
		ev(b, 'S', r->str.data, r->str.len);
		return 0;
	case LJ_NUMBER:
		larder_number(r, b, too_big);
		return 0;
	case LJ_TRUE:
		ev(b, 'T', NULL, 0);
		return 0;
	case LJ_FALSE:
		ev(b, 'F', NULL, 0);
		return 0;
	case LJ_NULL:
		ev(b, 'N', NULL, 0);
		return 0;
	case LJ_OBJECT:
		ev(b, '{', NULL, 0);
		while ((k = lj_key(r)) == 1) {
			ev(b, 'K', r->str.data, r->str.len);
			if (larder_walk(r, lj_value(r), b, too_big))
				return -1;
		}
		if (k < 0)
			return -1;
		ev(b, '}', NULL, 0);
		return 0;
	case LJ_ARRAY:
		ev(b, '[', NULL, 0);
		while ((k = lj_value(r)) != LJ_END) {
			if (larder_walk(r, k, b, too_big))
				return -1;
		}
		ev(b, ']', NULL, 0);
		return 0;
	default:
		abort();
	}
}

/* Walks Jansson's tree in document order (Jansson keeps an object's keys
 * in insertion order). */
static void jansson_walk(json_t *v, struct buf *b)
{
	size_t i;

	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		void *it;

		ev(b, '{', NULL, 0);
		for (it = json_object_iter(v); it;
		     it = json_object_iter_next(v, it)) {
			ev(b, 'K', json_object_iter_key(it),
			   json_object_iter_key_len(it));
			jansson_walk(json_object_iter_value(it), b);
		}
		ev(b, '}', NULL, 0);
		break;
	}
	case JSON_ARRAY:
		ev(b, '[', NULL, 0);
		for (i = 0; i < json_array_size(v); i++)
			jansson_walk(json_array_get(v, i), b);
		ev(b, ']', NULL, 0);
		break;
	case JSON_STRING:
		ev(b, 'S', json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		ev_int(b, (long long)json_integer_value(v));
		break;
	case JSON_REAL:
		ev_real(b, json_real_value(v));
		break;
	case JSON_TRUE:
		ev(b, 'T', NULL, 0);
		break;
	case JSON_FALSE:
		ev(b, 'F', NULL, 0);
		break;
	case JSON_NULL:
		ev(b, 'N', NULL, 0);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct json_reader r;
	struct buf mine, theirs;
	json_error_t jerr;
	json_t *root;
	int ok, too_big = 0, skip = 0;

	buf_init(&mine, 64 * n + 4096);
	buf_init(&theirs, 64 * n + 4096);
	lj_init(&r, (const char *)d, n, n + 1);
	ok = larder_walk(&r, lj_value(&r), &mine, &too_big) == 0 &&
	     lj_end(&r) == 0;
	if (!ok && strstr(r.err, "nested deeper than"))
		skip = 1;
	if (memchr(d, '\0', n)) {
		if (ok)
			abort(); /* no raw NUL is valid JSON */
		lj_free(&r);
		buf_free(&mine);
		buf_free(&theirs);
		return 0;
	}
	root = json_loadb((const char *)d, n, JSON_DECODE_ANY, &jerr);
	if (!root && json_error_code(&jerr) == json_error_numeric_overflow)
		skip = 1;
	if (!skip && ok != (root != NULL)) {
		fprintf(stderr, "decision: larder %s (%s), jansson %s (%s)\n",
			ok ? "accepts" : "refuses", r.err,
			root ? "accepts" : "refuses", root ? "" : jerr.text);
		abort();
	}
	if (!skip && ok) {
		jansson_walk(root, &theirs);
		if (mine.len != theirs.len ||
		    memcmp(mine.data, theirs.data, mine.len) != 0) {
			json_t *strict = json_loadb((const char *)d, n,
						    JSON_DECODE_ANY |
							    JSON_REJECT_DUPLICATES,
						    &jerr);

			if (strict || json_error_code(&jerr) !=
					      json_error_duplicate_key) {
				fprintf(stderr, "values differ:\nlarder:\n%.*s"
					"jansson:\n%.*s",
					(int)mine.len, mine.data,
					(int)theirs.len, theirs.data);
				abort();
			}
			json_decref(strict);
		}
	}
	json_decref(root);
	lj_free(&r);
	buf_free(&mine);
	buf_free(&theirs);
	return 0;
}
