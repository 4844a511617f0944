/* coremeta: the headers of a distribution's core metadata (a wheel's
 * METADATA, an sdist's PKG-INFO): RFC 822 style "Key: value" lines,
 * continuation lines starting with whitespace, up to the first blank line;
 * what follows is the description. I/O-free. */
#ifndef LARDER_COREMETA_H
#define LARDER_COREMETA_H

#include <stddef.h>

#include "common/dist/distname.h"
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

/* The most bytes coremeta_each() gives one header's value. */
#define COREMETA_MAX_VALUE (4 << 20)

/* Calls fn for each header of the metadata at buf (len bytes, CRLF or
 * LF), in order, up to the first blank line: its name as written (nlen
 * bytes, not NUL-terminated) and its value unfolded as pkginfo (and so
 * twine and pypi.org) reads it: a Description keeps its lines, each less
 * the 8 spaces or "       |" that fold it; any other header's lines are
 * stripped and joined by one space. The value is a NUL-terminated string
 * that lives until fn returns, cut at COREMETA_MAX_VALUE bytes. A line
 * that is no header is skipped. When body is not NULL, *body is the
 * offset of what follows the headers (the description of metadata 2.1).
 * Returns 0, EINVAL when buf holds a NUL, ENOMEM, or the first non-zero
 * value fn returned (which stops the walk). */
int coremeta_each(const char *buf, size_t len,
		  int (*fn)(const char *name, size_t nlen, const char *value,
			    void *ctx),
		  void *ctx, size_t *body);

/* The most dependencies coremeta_requires() is asked for by the prefetch. */
#define COREMETA_MAX_REQUIRES 16

/* Reads the Requires-Dist headers of the metadata at buf (len bytes) into
 * names (max of them, the caller's): the project each names, PEP 503
 * normalised, each once, in order. Left out: a requirement whose marker
 * mentions extra (it applies only to a client that asks for that extra),
 * a direct reference (name @ url, which no index is asked for), and a
 * name that is not one. Any other marker is kept: what it says about a
 * client is not known here. *n is how many were written. Returns 0, or
 * as coremeta_each(). */
int coremeta_requires(const char *buf, size_t len,
		      char (*names)[NAMES_MAX_PROJECT + 1], size_t max,
		      size_t *n);

/* The most bytes coremeta_license() writes, its NUL included. */
#define COREMETA_MAX_LICENSE 512

/* Reads what the metadata at buf (len bytes) says of its license into out
 * (outlen bytes): the License-Expression (PEP 639) when there is one,
 * else its "License :: ..." classifiers, whole, joined by "; " in order;
 * "" when it says neither (the free-text License field is not read: it
 * often holds the license's whole text). Cut at outlen. Returns 0, or as
 * coremeta_each(). */
int coremeta_license(const char *buf, size_t len, char *out, size_t outlen);

#endif
