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

/* Writes "scheme://host:port" of an absolute http(s) URL to out: scheme
 * and host lowercased, no userinfo, the port always written. Returns 0,
 * EINVAL, or ENAMETOOLONG. */
int url_origin(const char *url, char *out, size_t len);

/* Returns 1 when url may be fetched for an upstream at base_url, else 0:
 * never plain http when base_url is https; on base_url's own host only on
 * its port; else on one of the space-separated hosts in trusted (may be
 * NULL), each "host" (the scheme's default port) or "host:port", compared
 * without regard to case. A host "*.example.com" matches any name under
 * example.com (a.example.com, a.b.example.com), not example.com itself. */
int url_host_trusted(const char *url, const char *base_url,
		     const char *trusted);

/* Copies text (a URL, or a line with URLs in it) to out, len bytes with
 * its NUL, cut short when longer, with the secrets of every URL in it
 * masked, for anywhere a URL becomes text (an error, a log line, a status
 * page, a label, larder config check):
 *  - userinfo: "scheme://user:password@host" becomes
 *    "scheme://user:***@host"; a userinfo without a ':' (a token as the
 *    user name, "https://TOKEN@host") becomes "***@";
 *  - query: the value of each parameter whose name holds "sig", "token",
 *    "secret", "pass", "key", "auth" or "credential", in any case (a
 *    presigned URL's X-Amz-Signature, X-Amz-Credential, sig...), becomes
 *    "***".
 * Everything else is copied as it is. A URL starts at "://" and ends at a
 * space, a control character, a quote, '<', '>', '`' or a backslash. Returns out.
 * Never fails; out may not overlap text. */
const char *url_redact(const char *text, char *out, size_t len);

#endif
