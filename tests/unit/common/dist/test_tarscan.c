#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/tarscan.h"
#include "common/gunzip.h"
#include "tests/unit/t.h"
#include "tests/unit/tar_fixtures.h"

#define Z(a) (a), (sizeof(a) - 1)

static const char pkg_info[] =
    "Metadata-Version: 2.1\nName: corp_lib\nVersion: 1.0\n"
    "Requires-Python: >=3.9\n\nsdist description\n";

static char err[256];

/* What the callbacks saw. */
struct seen {
	char names[8][TARSCAN_NAME_MAX + 1];
	char types[8];
	uint64_t sizes[8];
	size_t n;
	char data[4096]; /* the data of every entry asked for */
	size_t len;
	int ends;
	int stop_at; /* entry number to stop at with 42, or -1 */
};

static int on_entry(void *arg, const struct tarscan_entry *e)
{
	struct seen *s = arg;

	if (s->n < 8) {
		strcpy(s->names[s->n], e->name);
		s->types[s->n] = e->type;
		s->sizes[s->n] = e->size;
	}
	if ((int)s->n++ == s->stop_at)
		return 42;
	return strstr(e->name, "PKG-INFO") || strstr(e->name, "file.txt")
	           ? 0
	           : TARSCAN_SKIP;
}

static int on_data(void *arg, const uint8_t *d, size_t n)
{
	struct seen *s = arg;

	if (!d) {
		s->ends++;
		return 0;
	}
	if (s->len + n > sizeof(s->data))
		return ENOSPC;
	memcpy(s->data + s->len, d, n);
	s->len += n;
	return 0;
}

static const struct tarscan_ops ops = {on_entry, on_data};

static struct {
	uint8_t *d;
	size_t n, cap;
} out;

static int collect(void *arg, const uint8_t *d, size_t n)
{
	(void)arg;
	if (out.n + n > out.cap) {
		out.cap = (out.n + n) * 2;
		out.d = realloc(out.d, out.cap);
		if (!out.d)
			return ENOMEM;
	}
	memcpy(out.d + out.n, d, n);
	out.n += n;
	return 0;
}

/* Inflates the n bytes at d into out, in chunks of step bytes. */
static int gunzip_all(const uint8_t *d, size_t n, size_t step, uint64_t cap)
{
	struct gunzip g;
	int rc = 0;

	out.n = 0;
	if (gunzip_init(&g, cap))
		return ENOMEM;
	for (size_t i = 0; i < n && rc == 0; i += step)
		rc = gunzip_feed(&g, d + i, n - i < step ? n - i : step,
		                 collect, NULL, err, sizeof(err));
	if (rc == 0)
		rc = gunzip_finish(&g, err, sizeof(err));
	gunzip_free(&g);
	return rc;
}

/* Scans out.d (its first n bytes) in chunks of step into s. */
static int scan(size_t n, size_t step, struct seen *s, int stop_at)
{
	struct tarscan *t = malloc(sizeof(*t));
	int rc = 0;

	memset(s, 0, sizeof(*s));
	s->stop_at = stop_at;
	tarscan_init(t, &ops, s);
	for (size_t i = 0; i < n && rc == 0; i += step)
		rc = tarscan_feed(t, out.d + i, n - i < step ? n - i : step,
		                  err, sizeof(err));
	if (rc == 0)
		rc = tarscan_finish(t, err, sizeof(err));
	else
		CHECK_INT(tarscan_feed(t, out.d, 1, err, sizeof(err)), rc);
	free(t);
	return rc;
}

static const size_t steps[] = {1, 7, 511, 512, 513, 100000};

T(ustar)
{
	struct seen s;

	CHECK_INT(gunzip_all(Z(tgz_ustar), 1 << 20, 1 << 20), 0);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		CHECK_INT(scan(out.n, steps[i], &s, -1), 0);
		CHECK_INT(s.n, 4);
		CHECK_STR(s.names[0], "corp_lib-1.0/");
		CHECK_INT(s.types[0], '5');
		CHECK_STR(s.names[2], "corp_lib-1.0/PKG-INFO");
		CHECK_INT(s.types[2], '0');
		CHECK_INT(s.sizes[2], strlen(pkg_info));
		CHECK_STR(s.names[3], "corp_lib-1.0/src/corp_lib/__init__.py");
		CHECK_INT(s.sizes[3], 600);
		CHECK_INT(s.ends, 1);
		CHECK_INT(s.len, strlen(pkg_info));
		CHECK(memcmp(s.data, pkg_info, s.len) == 0);
	}
}

static void long_name(const uint8_t *gz, size_t n, const char *data)
{
	char want[200];
	struct seen s;

	snprintf(want, sizeof(want), "corp_lib-1.0/%0120d/file.txt", 0);
	memset(want + 13, 'd', 120);
	CHECK_INT(gunzip_all(gz, n, 100, 1 << 20), 0);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		CHECK_INT(scan(out.n, steps[i], &s, -1), 0);
		CHECK_INT(s.n, 5);
		CHECK_STR(s.names[0], want);
		CHECK_INT(s.types[0], '0');
		CHECK_STR(s.names[1], "corp_lib-1.0/");
		CHECK_STR(s.names[3], "corp_lib-1.0/PKG-INFO");
		CHECK_INT(s.ends, 2);
		CHECK_INT(s.len, strlen(data) + strlen(pkg_info));
		CHECK(memcmp(s.data, data, strlen(data)) == 0);
	}
}

T(gnu_longname)
{
	long_name(Z(tgz_gnu), "long gnu\n");
}

T(pax_path)
{
	long_name(Z(tgz_pax), "long pax\n");
}

T(truncated_and_bad)
{
	struct seen s;
	size_t n;

	CHECK_INT(gunzip_all(Z(tgz_ustar), 1 << 20, 1 << 20), 0);
	n = out.n;
	CHECK_INT(scan(1024 + 100, 64, &s, -1), EINVAL);
	CHECK_STR(err, "tar is truncated");
	CHECK_INT(scan(700, 64, &s, -1), EINVAL); /* mid header */
	/* after the end-of-archive block, the rest is not read */
	CHECK_INT(scan(n, 64, &s, -1), 0);
	out.d[100] ^= 0x01; /* the first header's mode */
	CHECK_INT(scan(n, 64, &s, -1), EINVAL);
	CHECK_STR(err, "tar header 1 has a bad checksum");
	out.d[100] ^= 0x01;
	/* a callback stops the scan; later feeds give its code again */
	CHECK_INT(scan(n, 64, &s, 2), 42);
	CHECK_INT(s.n, 3);
}

T(gunzip_errors)
{
	uint8_t bad[sizeof(tgz_ustar)];

	CHECK_INT(gunzip_all(Z(tgz_ustar), 13, 1000), EFBIG);
	CHECK_CONTAINS(err, "inflates past 1000 bytes");
	CHECK_INT(gunzip_all(tgz_ustar, sizeof(tgz_ustar) - 10, 13, 1 << 20),
	          EINVAL);
	CHECK_STR(err, "gzip data is truncated");
	CHECK_INT(gunzip_all((const uint8_t *)"not gzip", 8, 3, 1 << 20),
	          EINVAL);
	CHECK_CONTAINS(err, "not gzip data or corrupt");
	memcpy(bad, tgz_ustar, sizeof(bad));
	bad[sizeof(bad) - 1] = 'x'; /* the literal's NUL: a byte after it */
	CHECK_INT(gunzip_all(bad, sizeof(bad), 5, 1 << 20), EINVAL);
	CHECK_STR(err, "bytes after the gzip data");
	bad[sizeof(bad) - 1] = 0; /* zero padding is fine */
	CHECK_INT(gunzip_all(bad, sizeof(bad), 5, 1 << 20), 0);
}

T(gunzip_members)
{
	uint8_t two[2 * (sizeof(tgz_ustar) - 1)];
	size_t n = sizeof(tgz_ustar) - 1, one;

	CHECK_INT(gunzip_all(Z(tgz_ustar), 1 << 20, 1 << 20), 0);
	one = out.n;
	memcpy(two, tgz_ustar, n);
	memcpy(two + n, tgz_ustar, n);
	CHECK_INT(gunzip_all(two, sizeof(two), 17, 1 << 20), 0);
	CHECK_INT(out.n, 2 * one);
}

int main(void)
{
	RUN(ustar);
	RUN(gnu_longname);
	RUN(pax_path);
	RUN(truncated_and_bad);
	RUN(gunzip_errors);
	RUN(gunzip_members);
	free(out.d);
	return t_done();
}
