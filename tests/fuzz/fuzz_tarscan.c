/* libFuzzer target: the input is a .tar.gz, inflated (with a cap) and
 * scanned in chunks whose size comes from the input's first byte. Entry
 * names are NUL-ended and bounded, data never exceeds the size the entry
 * gave, and nothing crashes. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/tarscan.h"
#include "common/gunzip.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

struct state {
	struct tarscan tar;
	uint64_t size, got;
	int in_data;
	char err[256];
};

static int on_entry(void *arg, const struct tarscan_entry *e)
{
	struct state *s = arg;

	if (strlen(e->name) > TARSCAN_NAME_MAX || s->in_data)
		abort();
	s->size = e->size;
	s->got = 0;
	s->in_data = e->name[0] != 'x'; /* skip some */
	return s->in_data ? 0 : TARSCAN_SKIP;
}

static int on_data(void *arg, const uint8_t *d, size_t n)
{
	struct state *s = arg;

	if (!s->in_data)
		abort();
	if (!d) {
		if (s->got != s->size)
			abort();
		s->in_data = 0;
		return 0;
	}
	s->got += n;
	if (s->got > s->size)
		abort();
	return 0;
}

static const struct tarscan_ops ops = {on_entry, on_data};

static int sink(void *arg, const uint8_t *d, size_t n)
{
	struct state *s = arg;

	return tarscan_feed(&s->tar, d, n, s->err, sizeof(s->err));
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct gunzip g;
	struct state *s;
	size_t step;
	int rc = 0;

	if (n < 1)
		return 0;
	step = (size_t)d[0] * 7 + 1;
	d++;
	n--;
	s = calloc(1, sizeof(*s));
	if (!s || gunzip_init(&g, 1 << 22)) {
		free(s);
		return 0;
	}
	tarscan_init(&s->tar, &ops, s);
	for (size_t i = 0; i < n && rc == 0; i += step)
		rc = gunzip_feed(&g, d + i, n - i < step ? n - i : step, sink,
		                 s, s->err, sizeof(s->err));
	if (rc == 0 && gunzip_finish(&g, s->err, sizeof(s->err)) == 0)
		tarscan_finish(&s->tar, s->err, sizeof(s->err));
	gunzip_free(&g);
	free(s);
	return 0;
}
