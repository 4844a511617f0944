/* distname: the file-name grammar of uploaded distributions (wheels and
 * sdists), the check of a file name against the project name and version
 * an upload gives, and PEP 440 version canonicalisation. I/O-free. */
#ifndef LARDER_DISTNAME_H
#define LARDER_DISTNAME_H

#include <stddef.h>

#include "common/names.h"

#define DISTNAME_VERSION_MAX 128

enum distname_kind {
	DISTNAME_WHEEL = 1, /* NAME-VERSION[-BUILD]-PY-ABI-PLAT.whl */
	DISTNAME_SDIST_TGZ, /* NAME-VERSION.tar.gz */
	DISTNAME_SDIST_ZIP, /* NAME-VERSION.zip */
};

struct distname {
	enum distname_kind kind;
	char name[NAMES_MAX_PROJECT + 1];    /* as in the file name */
	char version[DISTNAME_VERSION_MAX];  /* as in the file name */
	char canon[DISTNAME_VERSION_MAX];    /* version, canonicalised */
	char project[NAMES_MAX_PROJECT + 1]; /* name, PEP 503 normalised */
};

/* Splits filename into its kind, name part and version part (an sdist's
 * at its last '-'; distname_check() splits by the project instead). Only
 * the kind, name and version are set. Returns 0, or EINVAL when filename
 * is no wheel, .tar.gz or .zip name, or a part does not fit. */
int distname_parse(const char *filename, struct distname *out);

/* Writes the PEP 440 normal form of version v to out (outlen bytes):
 * whitespace and a leading 'v' dropped, lowercase, numbers without leading
 * zeros, a zero epoch dropped, "alpha"/"beta"/"c"/"pre"/"preview" spelled
 * a/b/rc, an implicit 0 number added, ".post", ".dev" and '+local' (with
 * '.' separators) spelled out: "V1.0-RC1" gives "1.0rc1", "1.0-1" gives
 * "1.0.post1". Trailing zero segments are kept ("1.0" is not "1.0.0").
 * Returns 0, EINVAL when v is no PEP 440 version, or ENAMETOOLONG when the
 * result does not fit. */
int distname_version_canon(const char *v, char *out, size_t outlen);

/* Checks that filename is a wheel or sdist of project name (compared PEP
 * 503 normalised) at version (compared canonicalised), and fills out.
 * Returns 0, or EINVAL with a one-line reason in err (errlen bytes), such
 * as "filename version 1.1 does not match version 1.0". */
int distname_check(const char *filename, const char *name, const char *version,
                   struct distname *out, char *err, size_t errlen);

#endif
