#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/zipdir.h"
#include "tests/unit/t.h"
#include "tests/unit/zip_fixtures.h"

#define Z(a) (a), (sizeof(a) - 1)

static const char metadata[] =
    "Metadata-Version: 2.1\nName: corp-lib\nVersion: 1.0\n"
    "Summary: A corporate library\nRequires-Python: >=3.8\n"
    "\nThe description.\n";

static char err[256];

/* Opens the whole file d (n bytes). */
static int open_all(const uint8_t *d, size_t n, struct zipdir *z)
{
	return zipdir_open(z, d, n, n, NULL, err, sizeof(err));
}

/* Reads entry e of the zip d, as a range reader would: local header,
 * then the data. */
static int read_entry(const uint8_t *d, size_t n, const struct zipdir *z,
                      const struct zipdir_entry *e, size_t cap, uint8_t **out,
                      size_t *outlen)
{
	uint64_t at;
	size_t need = 0;
	int rc;

	*out = NULL;
	if (e->offset >= n)
		return EINVAL;
	rc =
	    zipdir_local(z, e, d + e->offset, 10, &at, &need, err, sizeof(err));
	if (rc != EAGAIN)
		return -1; /* 10 bytes can never be enough */
	rc = zipdir_local(z, e, d + e->offset, n - e->offset, &at, NULL, err,
	                  sizeof(err));
	if (rc)
		return rc;
	return zipdir_inflate(e, d + at, (size_t)e->csize, cap, out, outlen,
	                      err, sizeof(err));
}

/* The entry called name, or ENOENT. */
static int find(const struct zipdir *z, const uint8_t *cd, const char *name,
                struct zipdir_entry *e)
{
	struct zipdir_iter it;
	int rc;

	zipdir_iter_init(&it, z, cd);
	for (;;) {
		rc = zipdir_next(&it, e, err, sizeof(err));
		if (rc)
			return rc;
		if (e->namelen == strlen(name) &&
		    memcmp(e->name, name, e->namelen) == 0)
			return 0;
	}
}

/* The whole path for a wheel: open, check, find METADATA, read it. */
static int wheel_metadata(const uint8_t *d, size_t n, uint8_t **out,
                          size_t *outlen)
{
	struct zipdir z;
	struct zipdir_entry e;
	const uint8_t *cd;
	int rc;

	*out = NULL;
	err[0] = '\0';
	rc = open_all(d, n, &z);
	if (rc)
		return rc;
	cd = zipdir_cd_in(&z, d, n);
	if (!cd)
		return -1;
	rc = zipdir_check(&z, cd, err, sizeof(err));
	if (rc)
		return rc;
	rc = zipdir_find_metadata(&z, cd, "corp-lib", "1.0", &e, err,
	                          sizeof(err));
	if (rc)
		return rc;
	return read_entry(d, n, &z, &e, 1 << 20, out, outlen);
}

T(stored)
{
	struct zipdir z;
	struct zipdir_entry e;
	uint8_t *out;
	size_t len;
	const uint8_t *cd;

	CHECK_INT(open_all(Z(zip_stored), &z), 0);
	CHECK_INT(z.entries, 2);
	CHECK_INT(z.zip64, 0);
	cd = zipdir_cd_in(&z, Z(zip_stored));
	CHECK(cd != NULL);
	CHECK_INT(zipdir_check(&z, cd, err, sizeof(err)), 0);
	CHECK_INT(find(&z, cd, "a.txt", &e), 0);
	CHECK_INT(e.method, 0);
	CHECK_INT(e.usize, 14);
	CHECK_INT(e.index, 0);
	CHECK_INT(read_entry(Z(zip_stored), &z, &e, 100, &out, &len), 0);
	CHECK_INT(len, 14);
	CHECK_STR((char *)out, "hello, stored\n");
	free(out);
	CHECK_INT(find(&z, cd, "dir/b.txt", &e), 0);
	CHECK_INT(read_entry(Z(zip_stored), &z, &e, 100, &out, &len), 0);
	CHECK_INT(len, 0);
	free(out);
	CHECK_INT(find(&z, cd, "nope", &e), ENOENT);
}

T(deflated_wheel)
{
	uint8_t *out;
	size_t len;

	CHECK_INT(wheel_metadata(Z(zip_wheel), &out, &len), 0);
	CHECK_INT(len, strlen(metadata));
	CHECK_STR((char *)out, metadata);
	free(out);
}

T(data_descriptors)
{
	struct zipdir z;
	struct zipdir_entry e;
	uint8_t *out;
	size_t len;

	CHECK_INT(open_all(Z(zip_stream), &z), 0);
	CHECK_INT(find(&z, zipdir_cd_in(&z, Z(zip_stream)),
	               "corp_lib-1.0.dist-info/METADATA", &e),
	          0);
	CHECK(e.flags & 0x08);
	CHECK_INT(e.method, 8);
	CHECK_INT(wheel_metadata(Z(zip_stream), &out, &len), 0);
	CHECK_STR((char *)out, metadata);
	free(out);
}

T(zip64)
{
	struct zipdir z;
	struct zipdir_entry e;
	uint8_t *out;
	size_t len;

	CHECK_INT(open_all(Z(zip_zip64), &z), 0);
	CHECK_INT(z.zip64, 1);
	CHECK_INT(z.entries, 4);
	CHECK_INT(find(&z, zipdir_cd_in(&z, Z(zip_zip64)),
	               "corp_lib-1.0.dist-info/METADATA", &e),
	          0);
	CHECK_INT(e.usize, strlen(metadata));
	CHECK(e.offset > 0);
	CHECK_INT(wheel_metadata(Z(zip_zip64), &out, &len), 0);
	CHECK_STR((char *)out, metadata);
	free(out);
}

/* The tail of the file only, as a range read gives it. */
T(short_tail)
{
	const uint8_t *d = zip_comment;
	size_t n = sizeof(zip_comment) - 1, need = 0, t;
	struct zipdir z, whole;
	uint8_t *out;
	size_t len;

	/* the comment is 47 bytes: 30 of the tail hold no end record */
	CHECK_INT(zipdir_open(&z, d + n - 30, 30, n, &need, err, sizeof(err)),
	          EAGAIN);
	CHECK_INT(need, n); /* the file is shorter than ZIPDIR_TAIL */
	CHECK_INT(open_all(d, n, &whole), 0);
	/* the end record and comment, but not the 20 bytes a zip64 locator
	 * would take before them */
	t = n - (size_t)whole.end;
	CHECK_INT(zipdir_open(&z, d + n - t, t, n, &need, err, sizeof(err)),
	          EAGAIN);
	CHECK_INT(need, t + 20);
	/* with them: the central directory is out of the tail */
	t += 20;
	CHECK_INT(zipdir_open(&z, d + n - t, t, n, &need, err, sizeof(err)), 0);
	CHECK_INT(z.cd_offset, whole.cd_offset);
	CHECK(zipdir_cd_in(&z, d + n - t, t) == NULL);
	t = n - (size_t)whole.cd_offset;
	CHECK(zipdir_cd_in(&z, d + n - t, t) == d + whole.cd_offset);
	CHECK_INT(wheel_metadata(d, n, &out, &len), 0);
	CHECK_STR((char *)out, metadata);
	free(out);
	/* the zip64 records lie before a tail of only the end record */
	n = sizeof(zip_zip64) - 1;
	CHECK_INT(
	    zipdir_open(&z, zip_zip64 + n - 22, 22, n, &need, err, sizeof(err)),
	    EAGAIN);
	CHECK_INT(need, 42);
	CHECK_INT(
	    zipdir_open(&z, zip_zip64 + n - 42, 42, n, &need, err, sizeof(err)),
	    EAGAIN);
	CHECK_INT(need, 98);
	CHECK_INT(
	    zipdir_open(&z, zip_zip64 + n - 98, 98, n, &need, err, sizeof(err)),
	    0);
	CHECK_INT(z.zip64, 1);
}

T(several_dist_info)
{
	struct zipdir z;
	struct zipdir_entry e;
	const uint8_t *cd;

	CHECK_INT(open_all(Z(zip_two_distinfo), &z), 0);
	cd = zipdir_cd_in(&z, Z(zip_two_distinfo));
	CHECK_INT(
	    zipdir_find_metadata(&z, cd, NULL, NULL, &e, err, sizeof(err)),
	    EINVAL);
	CHECK_CONTAINS(err, "2 .dist-info");
	CHECK_INT(zipdir_find_metadata(&z, cd, "corp-lib", "1.0", &e, err,
	                               sizeof(err)),
	          0);
	CHECK_INT(e.namelen, strlen("corp_lib-1.0.dist-info/METADATA"));
	CHECK_INT(
	    zipdir_find_metadata(&z, cd, "other", NULL, &e, err, sizeof(err)),
	    0);
	CHECK(memcmp(e.name, "other-2.0.dist-info/", 20) == 0);
	CHECK_INT(zipdir_find_metadata(&z, cd, "corp-lib", "2.0", &e, err,
	                               sizeof(err)),
	          ENOENT);
	CHECK_CONTAINS(err, "no corp-lib-2.0.dist-info/METADATA");
	/* a METADATA deeper down is not the wheel's */
	CHECK_INT(open_all(Z(zip_sdist), &z), 0);
	CHECK_INT(zipdir_find_metadata(&z, zipdir_cd_in(&z, Z(zip_sdist)), NULL,
	                               NULL, &e, err, sizeof(err)),
	          ENOENT);
	CHECK_CONTAINS(err, "no .dist-info/METADATA");
}

T(empty_and_not_zip)
{
	struct zipdir z;
	struct zipdir_entry e;
	size_t need = 0;
	static const uint8_t junk[100] = "this is no zip";

	CHECK_INT(open_all(Z(zip_empty), &z), 0);
	CHECK_INT(z.entries, 0);
	CHECK_INT(
	    zipdir_check(&z, zipdir_cd_in(&z, Z(zip_empty)), err, sizeof(err)),
	    0);
	CHECK_INT(zipdir_find_metadata(&z, zipdir_cd_in(&z, Z(zip_empty)), NULL,
	                               NULL, &e, err, sizeof(err)),
	          ENOENT);
	CHECK_INT(open_all(junk, sizeof(junk), &z), EINVAL);
	CHECK_STR(err, "not a zip (no end of central directory)");
	CHECK_INT(open_all(junk, 0, &z), EINVAL);
	/* a short tail of a long file: read more */
	CHECK_INT(zipdir_open(&z, junk, sizeof(junk), 1 << 20, &need, err,
	                      sizeof(err)),
	          EAGAIN);
	CHECK_INT(need, ZIPDIR_TAIL);
	/* the tail cannot be longer than the file */
	CHECK_INT(
	    zipdir_open(&z, junk, sizeof(junk), 10, &need, err, sizeof(err)),
	    EINVAL);
}

T(truncated)
{
	uint8_t *out;
	size_t len, n = sizeof(zip_wheel) - 1;

	/* the end record cut short */
	CHECK_INT(wheel_metadata(zip_wheel, n - 3, &out, &len), EINVAL);
	CHECK_CONTAINS(err, "not a zip");
	/* the head cut off: the central directory is not where it says */
	CHECK_INT(wheel_metadata(zip_wheel + 40, n - 40, &out, &len), EINVAL);
	CHECK_CONTAINS(err, "not where the end record says");
}

T(inflate_cap)
{
	struct zipdir z;
	struct zipdir_entry e;
	uint8_t *out = NULL;
	size_t len;

	CHECK_INT(open_all(Z(zip_wheel), &z), 0);
	CHECK_INT(find(&z, zipdir_cd_in(&z, Z(zip_wheel)),
	               "corp_lib-1.0.dist-info/METADATA", &e),
	          0);
	CHECK_INT(read_entry(Z(zip_wheel), &z, &e, 50, &out, &len), EFBIG);
	CHECK(out == NULL);
	CHECK_CONTAINS(err, "over 50");
	CHECK_INT(
	    read_entry(Z(zip_wheel), &z, &e, strlen(metadata), &out, &len), 0);
	free(out);
}

/* zip_wheel with the patch p applied. */
static int hostile(const struct zip_patch *p)
{
	uint8_t d[sizeof(zip_wheel)], *out = NULL;
	size_t len;
	int rc;

	memcpy(d, zip_wheel, sizeof(d));
	for (; p->width; p++)
		for (int i = 0; i < p->width; i++)
			d[p->off + (size_t)i] = (uint8_t)(p->value >> (8 * i));
	rc = wheel_metadata(d, sizeof(d) - 1, &out, &len);
	free(out);
	return rc;
}

#define HOSTILE(patch, reason)                                                 \
	do {                                                                   \
		CHECK_INT(hostile(patch), EINVAL);                             \
		CHECK_CONTAINS(err, reason);                                   \
	} while (0)

T(hostile_zips)
{
	HOSTILE(patch_lying_size, "inflates past its stated size");
	HOSTILE(patch_local_differs, "local sizes differ");
	HOSTILE(patch_bad_crc, "CRC-32 mismatch");
	HOSTILE(patch_overlap, "entries overlap");
	HOSTILE(patch_past_end, "lies past the start of the central");
	HOSTILE(patch_csize_past, "lies past the start of the central");
	HOSTILE(patch_count_lies, "has 4 entries, the end record says 5");
	HOSTILE(patch_cd_loop, "not where the end record says");
	HOSTILE(patch_no_zip64, "zip64 locator missing");
	HOSTILE(patch_nul_name, "NUL in its name");
	HOSTILE(patch_local_name, "another local name");
	HOSTILE(patch_comment_lies, "not a zip");
	HOSTILE(patch_method, "compression method 12 is not supported");
	HOSTILE(patch_encrypted, "is encrypted");
}

T(hostile_counts)
{
	struct zipdir z;

	CHECK_INT(open_all(Z(zip_too_many), &z), EINVAL);
	CHECK_CONTAINS(err, "too many entries (200000");
	CHECK_INT(open_all(Z(zip_dup), &z), 0);
	CHECK_INT(
	    zipdir_check(&z, zipdir_cd_in(&z, Z(zip_dup)), err, sizeof(err)),
	    EINVAL);
	CHECK_CONTAINS(err, "entry a.txt appears twice");
}

int main(void)
{
	RUN(stored);
	RUN(deflated_wheel);
	RUN(data_descriptors);
	RUN(zip64);
	RUN(short_tail);
	RUN(several_dist_info);
	RUN(empty_and_not_zip);
	RUN(truncated);
	RUN(inflate_cap);
	RUN(hostile_zips);
	RUN(hostile_counts);
	return t_done();
}
