/* libFuzzer target: the multipart parser never crashes, never hands on
 * more data than it was given, and gives the same events and result
 * whether the body comes in one call or in chunks. Input: a byte picking
 * the chunk size, a byte picking the boundary length, the boundary, the
 * body. The body is also tried as a Content-Type value. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/http/multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

struct seen {
	uint64_t hash; /* FNV-1a over the events */
	size_t data;   /* data bytes handed on */
	unsigned parts;
	int open;
};

static void mix(struct seen *s, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		s->hash = (s->hash ^ b[i]) * 0x100000001b3ULL;
}

static int on_begin(void *arg, const struct multipart_part *part)
{
	struct seen *s = arg;

	if (s->open || !part->name || !part->name[0] || !part->content_type)
		abort();
	s->open = 1;
	s->parts++;
	mix(s, "<", 1);
	mix(s, part->name, strlen(part->name) + 1);
	if (part->filename)
		mix(s, part->filename, strlen(part->filename) + 1);
	mix(s, part->content_type, strlen(part->content_type) + 1);
	return 0;
}

static int on_data(void *arg, const char *data, size_t len)
{
	struct seen *s = arg;

	if (!s->open || len == 0)
		abort();
	s->data += len;
	mix(s, data, len);
	return 0;
}

static int on_end(void *arg)
{
	struct seen *s = arg;

	if (!s->open)
		abort();
	s->open = 0;
	mix(s, "$", 1);
	return 0;
}

static const struct multipart_callbacks cbs = {on_begin, on_data, on_end};

static int run(const char *bnd, const uint8_t *body, size_t n, size_t step,
               struct seen *s, struct multipart *p)
{
	int rc;

	memset(s, 0, sizeof(*s));
	s->hash = 0xcbf29ce484222325ULL;
	rc = multipart_init(p, bnd, &cbs, s);
	for (size_t off = 0; !rc && off < n; off += step)
		rc = multipart_feed(p, body + off,
		                    n - off < step ? n - off : step);
	if (!rc)
		rc = multipart_finish(p);
	if (rc && strncmp(p->err, "multipart: ", 11) != 0)
		abort();
	if (s->data > n)
		abort();
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct multipart p;
	char bnd[MULTIPART_MAX_BOUNDARY + 1], out[MULTIPART_MAX_BOUNDARY + 1];
	struct seen whole, chunked;
	size_t step, blen;
	char *ct;
	int rc1, rc2;

	if (n < 2)
		return 0;
	step = (size_t)d[0] % 64 + 1;
	blen = (size_t)d[1] % MULTIPART_MAX_BOUNDARY + 1;
	if (n < 2 + blen)
		return 0;
	memcpy(bnd, d + 2, blen);
	bnd[blen] = '\0';
	d += 2 + blen;
	n -= 2 + blen;

	rc1 = run(bnd, d, n, n ? n : 1, &whole, &p);
	rc2 = run(bnd, d, n, step, &chunked, &p);
	if (rc1 != rc2 || whole.hash != chunked.hash ||
	    whole.data != chunked.data || whole.parts != chunked.parts)
		abort();
	if (whole.parts > MULTIPART_MAX_PARTS)
		abort();

	ct = malloc(n + 1);
	if (!ct)
		return 0;
	memcpy(ct, d, n);
	ct[n] = '\0';
	if (multipart_boundary(ct, out, sizeof(out)) == 0) {
		struct multipart *q = &p;

		if (strlen(out) < 1 || strlen(out) > MULTIPART_MAX_BOUNDARY ||
		    multipart_init(q, out, &cbs, &whole) != 0)
			abort();
	}
	free(ct);
	return 0;
}
