/* url: the little URL arithmetic a simple page needs. I/O-free. */
#ifndef LARDER_URL_H
#define LARDER_URL_H

#include <stddef.h>

#include "common/buf.h"

/* Resolves ref against the absolute URL base (RFC 3986 section 5),
 * appending the result without its fragment to out; the fragment (after
 * '#', without it) is appended to frag when frag is not NULL. Only http and
 * https results are accepted. Returns 0, EINVAL (unparseable, other scheme,
 * control characters or spaces), or an errno from buf. */
int url_resolve(const char *base, const char *ref, struct buf *out,
		struct buf *frag);

/* Copies the host of an absolute http(s) URL, lowercased, without port or
 * userinfo, to host. Returns 0, EINVAL, or ENAMETOOLONG. */
int url_host(const char *url, char *host, size_t hostlen);

/* Returns 1 when the host of url is base_url's host or one of the
 * space-separated names in trusted (may be NULL), else 0. */
int url_host_trusted(const char *url, const char *base_url,
		     const char *trusted);

#endif
