#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fcgi/pypi/dist.h"
#include "tests/unit/t.h"
#include "tests/unit/tar_fixtures.h"
#include "tests/unit/zip_fixtures.h"

#define Z(a) (a), (sizeof(a) - 1)
#define WHL  "corp_lib-1.0-py3-none-any.whl"

static char dir[] = "/tmp/test_dist.XXXXXX";
static char err[512];
static struct dist_info info;

/* Writes the n bytes at d to a file in dir called name and inspects it. */
static int inspect(const uint8_t *d, size_t n, const char *name,
                   const char *project, const char *version)
{
	char path[256];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, d, n) != (ssize_t)n) {
		perror(path);
		exit(1);
	}
	err[0] = '\0';
	dist_info_free(&info);
	rc = dist_inspect(fd, name, project, version, &info, err, sizeof(err));
	close(fd);
	unlink(path);
	return rc;
}

T(wheel)
{
	static const char want[] =
	    "Metadata-Version: 2.1\nName: corp-lib\nVersion: 1.0\n"
	    "Summary: A corporate library\nRequires-Python: >=3.8\n"
	    "\nThe description.\n";

	CHECK_INT(inspect(Z(zip_wheel), WHL, "Corp.Lib", "1.0"), 0);
	CHECK_INT(info.kind, DISTNAME_WHEEL);
	CHECK_INT(info.metadata_len, strlen(want));
	CHECK_STR((char *)info.metadata, want);
	CHECK_STR(info.name, "corp-lib");
	CHECK_STR(info.version, "1.0");
	CHECK_STR(info.metadata_version, "2.1");
	CHECK_STR(info.requires_python, ">=3.8");
	CHECK_STR(info.summary, "A corporate library");
	CHECK_INT(inspect(Z(zip_stream), WHL, "corp-lib", "1.0"), 0);
	CHECK_STR((char *)info.metadata, want);
	CHECK_INT(inspect(Z(zip_zip64), WHL, "corp-lib", "1.0"), 0);
	CHECK_STR((char *)info.metadata, want);
	CHECK_INT(inspect(Z(zip_comment), WHL, "corp-lib", "1.0"), 0);
	/* two .dist-info directories: the one of the file name counts */
	CHECK_INT(inspect(Z(zip_two_distinfo), WHL, "corp-lib", "1.0"), 0);
	CHECK_STR(info.name, "corp-lib");
}

T(sdists)
{
	static const char want[] =
	    "Metadata-Version: 2.1\nName: corp_lib\nVersion: 1.0\n"
	    "Requires-Python: >=3.9\n\nsdist description\n";

	CHECK_INT(
	    inspect(Z(tgz_sdist), "corp_lib-1.0.tar.gz", "corp-lib", "1.0"), 0);
	CHECK_INT(info.kind, DISTNAME_SDIST_TGZ);
	CHECK_STR((char *)info.metadata, want);
	CHECK_INT(info.metadata_len, strlen(want));
	CHECK_STR(info.name, "corp_lib");
	CHECK_STR(info.requires_python, ">=3.9");
	CHECK_STR(info.summary, "");
	CHECK_INT(inspect(Z(zip_sdist), "corp_lib-1.0.zip", "corp-lib", "1.0"),
	          0);
	CHECK_INT(info.kind, DISTNAME_SDIST_ZIP);
	CHECK_STR((char *)info.metadata, want);
}

T(mismatches)
{
	CHECK_INT(inspect(Z(zip_wheel), WHL, "corp-lib", "1.1"), EINVAL);
	CHECK_STR(err, "filename version 1.0 does not match version 1.1");
	CHECK_INT(inspect(Z(zip_wheel), WHL, "other", "1.0"), EINVAL);
	CHECK_STR(err, "filename project corp_lib does not match project "
	               "other");
	CHECK_INT(inspect(Z(zip_wrong_version), WHL, "corp-lib", "1.0"),
	          EINVAL);
	CHECK_STR(err, "METADATA says Version: 1.1, the upload says 1.0");
	CHECK_INT(inspect(Z(tgz_other_name), "corp_lib-1.0.tar.gz", "corp-lib",
	                  "1.0"),
	          EINVAL);
	CHECK_STR(err, "PKG-INFO says Name: other, the upload says corp-lib");
	CHECK(info.metadata == NULL);
}

T(broken)
{
	static const uint8_t junk[] = "this is not a zip at all";
	uint8_t half[sizeof(tgz_sdist) / 2];

	CHECK_INT(inspect(junk, sizeof(junk), WHL, "corp-lib", "1.0"), EINVAL);
	CHECK_STR(err, WHL ": not a zip (no end of central directory)");
	CHECK_INT(inspect(junk, 0, WHL, "corp-lib", "1.0"), EINVAL);
	CHECK_INT(inspect(Z(zip_stored), WHL, "corp-lib", "1.0"), EINVAL);
	CHECK_STR(err, WHL ": wheel has no corp_lib-1.0.dist-info/METADATA");
	CHECK_INT(inspect(Z(zip_wheel), "corp_lib-1.0.zip", "corp-lib", "1.0"),
	          EINVAL);
	CHECK_STR(err, "corp_lib-1.0.zip: sdist has no {top}/PKG-INFO");
	CHECK_INT(inspect(Z(tgz_no_pkginfo), "corp_lib-1.0.tar.gz", "corp-lib",
	                  "1.0"),
	          EINVAL);
	CHECK_STR(err, "corp_lib-1.0.tar.gz: sdist has no {top}/PKG-INFO");
	memcpy(half, tgz_sdist, sizeof(half));
	CHECK_INT(inspect(half, sizeof(half), "corp_lib-1.0.tar.gz", "corp-lib",
	                  "1.0"),
	          EINVAL);
	CHECK_CONTAINS(err, "corp_lib-1.0.tar.gz: ");
	CHECK_INT(
	    inspect(Z(zip_wheel), "corp_lib-1.0.tar.gz", "corp-lib", "1.0"),
	    EINVAL);
	CHECK_CONTAINS(err, "not gzip data");
	CHECK_INT(inspect(Z(zip_dup), WHL, "corp-lib", "1.0"), EINVAL);
	CHECK_CONTAINS(err, "appears twice");
	CHECK_INT(inspect(Z(zip_too_many), WHL, "corp-lib", "1.0"), EINVAL);
	CHECK_CONTAINS(err, "too many entries");
	CHECK(info.metadata == NULL);
}

/* A fault of the server's own is its errno, not EINVAL. */
T(read_error)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);

	CHECK(fd >= 0);
	CHECK_INT(
	    dist_inspect(fd, WHL, "corp-lib", "1.0", &info, err, sizeof(err)),
	    EISDIR);
	CHECK_CONTAINS(err, "read: ");
	close(fd);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(wheel);
	RUN(sdists);
	RUN(mismatches);
	RUN(broken);
	RUN(read_error);
	dist_info_free(&info);
	rmdir(dir);
	return t_done();
}
