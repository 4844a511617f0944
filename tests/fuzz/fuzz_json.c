/* libFuzzer target: the JSON pull reader. A document is accepted or
 * refused the same way whether its containers are walked or skipped, the
 * reader never reads past its input, and every string it hands out is as
 * long as it says. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

/* Walks the value just begun (type t) to its end; with skip, containers
 * are left with json_skip() instead. Returns 0 or -1. */
static int walk(struct json_reader *r, int t, int skip)
{
	int k;

	if (t == JSON_ERROR)
		return -1;
	if (t != JSON_OBJECT && t != JSON_ARRAY) {
		if (t == JSON_STRING && strlen(r->str.data) != r->str.len)
			abort(); /* a NUL got into a string */
		return 0;
	}
	if (skip)
		return json_skip(r);
	for (;;) {
		if (t == JSON_OBJECT) {
			k = json_key(r);
			if (k <= 0)
				return k;
			if (walk(r, json_value(r), skip))
				return -1;
		} else {
			k = json_value(r);
			if (k == JSON_END)
				return 0;
			if (walk(r, k, skip))
				return -1;
		}
	}
}

static int accept_doc(const uint8_t *d, size_t n, int skip)
{
	struct json_reader r;
	int ok;

	json_init(&r, (const char *)d, n, 1 << 16);
	ok = walk(&r, json_value(&r), skip) == 0 && json_end(&r) == 0;
	if (r.p < r.start || r.p > r.end)
		abort();
	if (!ok && !r.err[0])
		abort(); /* every refusal says why */
	json_free(&r);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	if (accept_doc(d, n, 0) != accept_doc(d, n, 1))
		abort();
	return 0;
}
