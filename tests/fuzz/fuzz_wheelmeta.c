/* libFuzzer target: the input is a whole wheel, read through
 * wheelmeta_read() as range reads would read it: every read it asks for
 * lies within the file, the bytes asked for stay within the cap, and a
 * success is NUL-ended. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/wheelmeta.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

struct mem {
	const uint8_t *d;
	size_t n;
};

static int mem_read(void *ctx, uint64_t off, int tail, size_t len, uint8_t *buf,
                    size_t *got, uint64_t *size, char *err, size_t errlen)
{
	struct mem *m = ctx;

	(void)err, (void)errlen;
	if (tail) {
		if (len > m->n)
			len = m->n;
		off = m->n - len;
	}
	if (off > m->n || len > m->n - off)
		abort(); /* a read past the end the file said it has */
	memcpy(buf, m->d + off, len);
	*got = len;
	*size = m->n;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct mem m = {d, n};
	struct wheelmeta_src src = {mem_read, &m};
	struct wheelmeta_stats st;
	uint8_t *out = NULL;
	size_t len = 0;
	char err[256];
	int rc;

	rc = wheelmeta_read(&src, "corp_lib-1.0-py3-none-any.whl", 1 << 20,
	                    &out, &len, &st, err, sizeof(err));
	if (st.bytes > 1 << 20)
		abort();
	if (rc == 0 && (!out || out[len] != '\0'))
		abort();
	if (rc && out)
		abort();
	free(out);
	return 0;
}
