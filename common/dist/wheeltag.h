/* wheeltag: which wheels a Python version on a platform can install, as
 * pip (packaging.tags) decides it, and the file-name grammar of wheels and
 * sdists. I/O-free.
 *
 * A target is a CPython version ("3.12") and a platform tag
 * ("manylinux_2_17_x86_64", "musllinux_1_1_x86_64", "macosx_11_0_arm64",
 * "win_amd64", or "any" for pure wheels only). Its tags are listed best
 * first, in packaging's sys_tags() order: cp312-cp312-P, cp312-abi3-P,
 * cp312-none-P, cp311..cp32-abi3-P, py312/py3/py311..py30-none-P,
 * cp312-none-any, py312/py3/py311..py30-none-any, where P runs through the
 * platforms the platform tag implies (manylinux_2_17 also takes
 * manylinux2014, manylinux_2_16 ... manylinux_2_5, manylinux2010,
 * manylinux1 and linux; macOS 11 on arm64 takes universal2 and the macOS
 * 10 universal2 builds; and so on). A wheel's rank is the position of its
 * best tag (a compressed tag set such as py2.py3-none-any is expanded).
 */
#ifndef LARDER_WHEELTAG_H
#define LARDER_WHEELTAG_H

#include <stddef.h>

#define WHEELTAG_LEN 96

struct wheeltag_target {
	char (*tags)[WHEELTAG_LEN]; /* "py-abi-plat", best first */
	size_t n;
	char python[16];   /* "3.12" */
	char platform[64]; /* as given */
};

/* Lists the tags of CPython python ("3" "." minor, a patch level ignored)
 * on platform. Returns 0, EINVAL for a version or platform it cannot read
 * or too long for a WHEELTAG_LEN tag (with nothing to free), or ENOMEM;
 * on success t is the caller's to free with wheeltag_target_free(). */
int wheeltag_target_init(struct wheeltag_target *t, const char *python,
                         const char *platform);

void wheeltag_target_free(struct wheeltag_target *t);

/* The parts of a wheel file name
 * NAME-VERSION[-BUILD]-PY-ABI-PLAT.whl, each copied into the caller's
 * arrays (any may be NULL). Returns 0, or EINVAL when filename is not a
 * wheel's name or a part does not fit. */
int wheeltag_split(const char *filename, char *name, size_t namelen,
                   char *version, size_t versionlen, char *tags,
                   size_t tagslen);

/* The rank of wheel filename for t: the position of its best tag in
 * t->tags (0 is best), or -1 when none of its tags is supported or it is
 * not a wheel's name. */
long wheeltag_rank(const struct wheeltag_target *t, const char *filename);

/* The version in sdist file name NAME-VERSION.tar.gz (or .zip, .tar.bz2,
 * .tgz) whose NAME normalises to project (already normalised), copied to
 * version. Returns 0, or EINVAL when filename is no sdist of project. */
int wheeltag_sdist_version(const char *filename, const char *project,
                           char *version, size_t versionlen);

/* Whether two versions are the same release as PEP 440 compares them,
 * for the forms lock files write: case, a leading 'v', '_' or '-' for '.'
 * and trailing ".0" release segments ignored ("1.0" is "1", "1.0RC1" is
 * "1.0rc1"). Returns 1 or 0. */
int wheeltag_version_eq(const char *a, const char *b);

#endif
