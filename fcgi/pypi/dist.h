/* dist: the check of an uploaded distribution file before it is
 * published: its file name against the project and version the upload
 * names, then its core metadata (a wheel's .dist-info/METADATA, an sdist's
 * top-level PKG-INFO) against both. Reads the file with pread(). */
#ifndef LARDER_DIST_H
#define LARDER_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "common/dist/coremeta.h"
#include "common/dist/distname.h"

#define DIST_METADATA_CAP (16u << 20)  /* METADATA / PKG-INFO bytes */
#define DIST_GUNZIP_CAP   (1ull << 30) /* an sdist's tar, inflated */
#define DIST_CD_CAP       (64u << 20)  /* a zip's central directory */

struct dist_info {
	enum distname_kind kind;
	uint8_t *metadata; /* malloc'd, NUL-ended; the PEP 658 metadata */
	size_t metadata_len;
	char name[NAMES_MAX_PROJECT + 1];   /* Name as the metadata writes it */
	char version[DISTNAME_VERSION_MAX]; /* Version, likewise */
	char metadata_version[16];
	char requires_python[COREMETA_MAX_REQUIRES_PYTHON]; /* "" if none */
	char summary[COREMETA_MAX_SUMMARY];                 /* "" if none */
};

/* Checks the upload in fd (read with pread, from offset 0 to its size)
 * called filename, for project name at version: the file name's grammar,
 * name and version, then the archive and the Name and Version its metadata
 * gives. Returns 0 with out filled (the caller's to dist_info_free());
 * EINVAL with a one-line reason in err (errlen bytes) for anything wrong
 * with the upload, for the client to see; or, for a fault of the server's
 * own (a read error, no memory), that errno with a reason in err. On
 * failure out holds nothing to free. */
int dist_inspect(int fd, const char *filename, const char *name,
                 const char *version, struct dist_info *out, char *err,
                 size_t errlen);

void dist_info_free(struct dist_info *info);

#endif
