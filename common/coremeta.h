/* coremeta: the headers of a distribution's core metadata (a wheel's
 * METADATA, an sdist's PKG-INFO): RFC 822 style "Key: value" lines,
 * continuation lines starting with whitespace, up to the first blank line;
 * what follows is the description. I/O-free. */
#ifndef LARDER_COREMETA_H
#define LARDER_COREMETA_H

#include <stddef.h>

#include "common/distname.h"
#include "common/names.h"

#define COREMETA_MAX_REQUIRES_PYTHON 256
#define COREMETA_MAX_SUMMARY         512
#define COREMETA_MAX_HEADERS         (1 << 20) /* bytes before the body */

struct coremeta {
	char metadata_version[16];
	char name[NAMES_MAX_PROJECT + 1];
	char version[DISTNAME_VERSION_MAX];
	char requires_python[COREMETA_MAX_REQUIRES_PYTHON];
	char summary[COREMETA_MAX_SUMMARY]; /* cut at a UTF-8 boundary */
	size_t body;                        /* offset of the description */
};

/* Parses the headers of the metadata at buf (len bytes, CRLF or LF) into
 * m; folded values are unfolded, surrounding whitespace dropped, header
 * names compared case-insensitively, unknown headers skipped. Returns 0,
 * or EINVAL with a one-line reason in err when there is a NUL, a line that
 * is no header, no or a repeated Metadata-Version, Name or Version, or a
 * Name, Version or Requires-Python too long. A long Summary is cut. */
int coremeta_parse(const char *buf, size_t len, struct coremeta *m, char *err,
                   size_t errlen);

#endif
