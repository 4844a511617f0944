#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "common/dist/wheelmeta.h"
#include "common/dist/zipdir.h"
#include "tests/unit/t.h"
#include "tests/unit/zip_fixtures.h"

static const char metadata[] =
    "Metadata-Version: 2.1\nName: corp-lib\nVersion: 1.0\n"
    "Summary: A corporate library\nRequires-Python: >=3.8\n"
    "\nThe description.\n";

#define WHEEL "corp_lib-1.0-py3-none-any.whl"

static char err[256];

/* A file in memory, read as an upstream answers range requests. */
struct mem {
	const uint8_t *d;
	size_t n;
	int fail_at;  /* the read (1-based) that fails with EIO, 0 none */
	int short_by; /* bytes every read leaves off */
	int calls;
};

static int mem_read(void *ctx, uint64_t off, int tail, size_t len, uint8_t *buf,
                    size_t *got, uint64_t *size, char *e, size_t elen)
{
	struct mem *m = ctx;

	if (++m->calls == m->fail_at) {
		snprintf(e, elen, "connection reset");
		return EIO;
	}
	if (tail) {
		if (len > m->n)
			len = m->n;
		off = m->n - len;
	}
	if (off > m->n || len > m->n - off)
		len = off > m->n ? 0 : m->n - off;
	if (len >= (size_t)m->short_by)
		len -= (size_t)m->short_by;
	memcpy(buf, m->d + off, len);
	*got = len;
	*size = m->n;
	return 0;
}

static int read_mem(struct mem *m, uint64_t cap, uint8_t **out, size_t *len,
                    struct wheelmeta_stats *st)
{
	struct wheelmeta_src src = {mem_read, m};

	return wheelmeta_read(&src, WHEEL, cap, out, len, st, err, sizeof(err));
}

T(one_read_for_a_small_wheel)
{
	struct mem m = {.d = zip_wheel, .n = sizeof(zip_wheel) - 1};
	struct wheelmeta_stats st;
	uint8_t *out;
	size_t len;

	CHECK_INT(read_mem(&m, 1 << 20, &out, &len, &st), 0);
	CHECK_INT(len, strlen(metadata));
	CHECK_STR((char *)out, metadata);
	CHECK_INT(st.reads, 1); /* the tail held everything */
	free(out);
}

T(data_descriptors_and_zip64)
{
	struct mem s = {.d = zip_stream, .n = sizeof(zip_stream) - 1};
	struct mem z = {.d = zip_zip64, .n = sizeof(zip_zip64) - 1};
	uint8_t *out;
	size_t len;

	CHECK_INT(read_mem(&s, 1 << 20, &out, &len, NULL), 0);
	CHECK_STR((char *)out, metadata);
	free(out);
	CHECK_INT(read_mem(&z, 1 << 20, &out, &len, NULL), 0);
	CHECK_STR((char *)out, metadata);
	free(out);
}

T(cap_on_bytes_read)
{
	struct mem m = {.d = zip_wheel, .n = sizeof(zip_wheel) - 1};
	uint8_t *out;
	size_t len;

	/* the first read asks for a whole tail, more than 100 bytes */
	CHECK_INT(read_mem(&m, 100, &out, &len, NULL), EFBIG);
	CHECK_CONTAINS(err, "more than 100 bytes");
	CHECK(out == NULL);
}

T(read_errors_and_short_reads)
{
	struct mem m = {
	    .d = zip_wheel, .n = sizeof(zip_wheel) - 1, .fail_at = 1};
	struct mem s = {
	    .d = zip_wheel, .n = sizeof(zip_wheel) - 1, .short_by = 3};
	uint8_t *out;
	size_t len;

	CHECK_INT(read_mem(&m, 1 << 20, &out, &len, NULL), EIO);
	CHECK_CONTAINS(err, "connection reset");
	CHECK_INT(read_mem(&s, 1 << 20, &out, &len, NULL), EIO);
	CHECK_CONTAINS(err, "got");
}

T(not_a_wheel)
{
	struct mem m = {.d = zip_sdist, .n = sizeof(zip_sdist) - 1};
	struct mem w = {.d = zip_wrong_version,
	                .n = sizeof(zip_wrong_version) - 1};
	struct mem e = {.d = zip_empty, .n = sizeof(zip_empty) - 1};
	struct wheelmeta_src src = {mem_read, &m};
	uint8_t *out;
	size_t len;

	CHECK_INT(wheelmeta_read(&src, "corp_lib-1.0.tar.gz", 1 << 20, &out,
	                         &len, NULL, err, sizeof(err)),
	          EINVAL);
	CHECK_CONTAINS(err, "not a wheel's name");
	CHECK_INT(read_mem(&m, 1 << 20, &out, &len, NULL), EINVAL);
	/* what the wheel holds, as it holds it */
	CHECK_INT(read_mem(&w, 1 << 20, &out, &len, NULL), 0);
	CHECK(strstr((char *)out, "Version: 1.1") != NULL);
	free(out);
	CHECK_INT(read_mem(&e, 1 << 20, &out, &len, NULL), EINVAL);
}

static void le(uint8_t *p, uint64_t v, int w)
{
	for (int i = 0; i < w; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A stored zip of two entries: METADATA first, then pad bytes of
 * padding, so that the tail holds the central directory but not the
 * METADATA entry. Returns its size; *out is the caller's to free. */
static size_t build(size_t pad, uint8_t **out)
{
	static const char *names[2] = {"corp_lib-1.0.dist-info/METADATA",
	                               "corp_lib/data.bin"};
	uint64_t sizes[2] = {sizeof(metadata) - 1, pad}, offs[2];
	uint32_t crcs[2];
	size_t n = 0, cd, cap = pad + 1024;
	uint8_t *z = calloc(1, cap), *body;

	body = calloc(1, pad ? pad : 1);
	crcs[0] = (uint32_t)crc32(0, (const uint8_t *)metadata,
	                          (uInt)(sizeof(metadata) - 1));
	crcs[1] = (uint32_t)crc32(0, body, (uInt)pad);
	for (int i = 0; i < 2; i++) {
		size_t nl = strlen(names[i]);

		offs[i] = n;
		le(z + n, 0x04034b50, 4);
		le(z + n + 4, 20, 2);
		le(z + n + 14, crcs[i], 4);
		le(z + n + 18, sizes[i], 4);
		le(z + n + 22, sizes[i], 4);
		le(z + n + 26, nl, 2);
		memcpy(z + n + 30, names[i], nl);
		n += 30 + nl;
		memcpy(z + n, i ? (const void *)body : (const void *)metadata,
		       (size_t)sizes[i]);
		n += (size_t)sizes[i];
	}
	cd = n;
	for (int i = 0; i < 2; i++) {
		size_t nl = strlen(names[i]);

		le(z + n, 0x02014b50, 4);
		le(z + n + 4, 20, 2);
		le(z + n + 6, 20, 2);
		le(z + n + 16, crcs[i], 4);
		le(z + n + 20, sizes[i], 4);
		le(z + n + 24, sizes[i], 4);
		le(z + n + 28, nl, 2);
		le(z + n + 42, offs[i], 4);
		memcpy(z + n + 46, names[i], nl);
		n += 46 + nl;
	}
	le(z + n, 0x06054b50, 4);
	le(z + n + 8, 2, 2);
	le(z + n + 10, 2, 2);
	le(z + n + 12, n - cd, 4);
	le(z + n + 16, cd, 4);
	n += 22;
	free(body);
	*out = z;
	return n;
}

T(entry_before_the_tail)
{
	struct wheelmeta_stats st;
	struct mem m = {0};
	uint8_t *z, *out;
	size_t len;

	m.n = build(200000, &z);
	m.d = z;
	CHECK_INT(read_mem(&m, 1 << 20, &out, &len, &st), 0);
	CHECK_STR((char *)out, metadata);
	/* the tail, then the local header and the entry in one read */
	CHECK_INT(st.reads, 2);
	CHECK(st.bytes < ZIPDIR_TAIL + 2048);
	free(out);
	/* the cap counts every read */
	CHECK_INT(read_mem(&m, ZIPDIR_TAIL + 10, &out, &len, &st), EFBIG);
	free(z);
}

/* zip_wheel with patch applied, read through a mem source. */
static int hostile(const struct zip_patch *p)
{
	uint8_t d[sizeof(zip_wheel)];
	struct mem m = {.d = d, .n = sizeof(zip_wheel) - 1};
	uint8_t *out = NULL;
	size_t len;
	int rc;

	memcpy(d, zip_wheel, sizeof(d));
	for (; p->width; p++)
		for (int i = 0; i < p->width; i++)
			d[p->off + i] = (uint8_t)(p->value >> (8 * i));
	rc = read_mem(&m, 1 << 20, &out, &len, NULL);
	free(out);
	return rc;
}

T(hostile_wheels)
{
	CHECK_INT(hostile(patch_lying_size), EINVAL);
	CHECK_INT(hostile(patch_local_differs), EINVAL);
	CHECK_INT(hostile(patch_bad_crc), EINVAL);
	CHECK_CONTAINS(err, "CRC-32 mismatch");
	CHECK_INT(hostile(patch_overlap), EINVAL);
	CHECK_INT(hostile(patch_past_end), EINVAL);
	CHECK_INT(hostile(patch_csize_past), EINVAL);
	CHECK_INT(hostile(patch_count_lies), EINVAL);
	CHECK_INT(hostile(patch_cd_loop), EINVAL);
	CHECK_INT(hostile(patch_nul_name), EINVAL);
	CHECK_INT(hostile(patch_local_name), EINVAL);
	CHECK_INT(hostile(patch_method), EINVAL);
	CHECK_INT(hostile(patch_encrypted), EINVAL);
}

int main(void)
{
	RUN(one_read_for_a_small_wheel);
	RUN(data_descriptors_and_zip64);
	RUN(cap_on_bytes_read);
	RUN(read_errors_and_short_reads);
	RUN(not_a_wheel);
	RUN(entry_before_the_tail);
	RUN(hostile_wheels);
	return t_done();
}
