/* oci_ref: the OCI distribution spec's grammar for repository names, tags
 * and digests, the pull side of its /v2/ URL space, the queries of its tag
 * lists and referrers, and its error bodies. I/O-free.
 *
 *   /v2/                                   the API base
 *   /v2/{name}/manifests/{tag or digest}
 *   /v2/{name}/blobs/{digest}
 *   /v2/{name}/tags/list
 *   /v2/{name}/referrers/{digest}
 *
 * {name} is one or more '/'-separated components, each
 * [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*; since a reference has no '/', the
 * last two segments say what is asked ("manifests" may well be a component
 * of a name).
 */
#ifndef LARDER_OCI_REF_H
#define LARDER_OCI_REF_H

#include <stddef.h>

#include "common/buf.h"

/* The longest name clients accept with the registry's host in front. */
#define OCI_MAX_NAME 255
#define OCI_MAX_TAG 128
/* "sha512:" and 128 hex digits. */
#define OCI_MAX_DIGEST 135
/* RFC 6838: a type and a subtype of at most 127 bytes each, and the '/'. */
#define OCI_MAX_MEDIA_TYPE 255
/* The largest page of a tag list a client may ask for. */
#define OCI_MAX_PAGE 1000000

enum oci_kind {
	OCI_ERROR,      /* status, code and reason say why */
	OCI_BASE,
	OCI_MANIFEST,
	OCI_BLOB,
	OCI_TAGS,
	OCI_REFERRERS,
};

struct oci_route {
	enum oci_kind kind;
	int status;                     /* OCI_ERROR: 400, 404 or 405 */
	const char *code;               /* OCI_ERROR: the spec's code */
	const char *reason;             /* OCI_ERROR: one line, static */
	char name[OCI_MAX_NAME + 1];
	char ref[OCI_MAX_DIGEST + 1];   /* a tag or a digest */
	int by_digest;                  /* ref is a digest */
};

/* Whether s (n bytes) is a repository name by the spec's grammar. */
int oci_name_valid(const char *s, size_t n);

/* Whether s (n bytes) is a tag: [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}. */
int oci_tag_valid(const char *s, size_t n);

/* Checks a digest "algorithm:encoded": 0 for sha256 with 64 lowercase hex
 * digits or sha512 with 128; ENOTSUP for a well-formed digest of another
 * algorithm (the spec's grammar, [a-z0-9]+([+._-][a-z0-9]+)* and
 * [a-zA-Z0-9=_-]+); EINVAL for anything else. */
int oci_digest_check(const char *s, size_t n);

/* Routes a decoded path that starts with "/v2" for method. GET and HEAD
 * read; anything else (a push) is a 405 UNSUPPORTED. Always returns with
 * r filled in. */
void oci_route_parse(const char *method, const char *path,
		     struct oci_route *r);

/* Appends the spec's error body, {"errors":[{"code":..,"message":..,
 * "detail":null}]}, to b. Returns 0 or ENOMEM. */
int oci_error_body(struct buf *b, const char *code, const char *message);

/* Reads the query of the next page from a tag list's Link header value,
 * "<URL?n=2&last=b>; rel=\"next\"" (URL absolute or a path, whatever its
 * name: the caller names the page itself), into query. Returns 0,
 * ENOENT when there is no next page (link "" or without rel="next"), or
 * EINVAL for a URL without a query or with bytes a query does not hold. */
int oci_link_next(const char *link, char *query, size_t len);

/* The queries below are the raw QUERY_STRING (NULL or "" for none):
 * "key=value" pairs joined by '&', in any order; keys are compared as
 * they come, case and all (an escaped key is another parameter), and
 * parameters other than the ones asked for are ignored. A key without
 * '=' is given with the value "". Values are percent-decoded, and '+'
 * stays '+' (media types hold it; it is no space here). */

/* Reads a tag list's query: n, the page size, into *n (-1 when absent;
 * else 1 to 7 digits, 0 to OCI_MAX_PAGE), and last, the tag the page
 * starts after, into last ("" when absent; else a tag by oci_tag_valid,
 * escapes such as %2D allowed). Returns 0, or EINVAL for an n or a last
 * that is no such thing, a bad or NUL escape, or either given twice;
 * then *n is -1 and last "". */
int oci_tags_query(const char *query, long *n, char last[OCI_MAX_TAG + 1]);

/* Reads a referrers query: artifactType, decoded, into type ("" when
 * absent). It must be a media type by RFC 6838, type "/" subtype, each
 * 1 to 127 of [A-Za-z0-9!#$&^_.+-] starting with a letter or a digit
 * (Go clients send application%2Fvnd.example%2Bjson). Returns 0, or
 * EINVAL for a value that is no media type, a bad or NUL escape, or the
 * parameter given twice; then type is "". */
int oci_referrers_query(const char *query, char type[OCI_MAX_MEDIA_TYPE + 1]);

/* Percent-decodes s (n bytes of a query value) into out (len bytes),
 * NUL-terminated; '+' stays '+'. Returns 0, EINVAL for a '%' without
 * two hex digits after it or a NUL (raw or %00), or ENAMETOOLONG when
 * the result and its NUL do not fit (len 0 included); out is "" on an
 * error when len > 0. */
int oci_query_unescape(const char *s, size_t n, char *out, size_t len);

/* Percent-encodes s for a query value: the unreserved A-Za-z0-9-._~ as
 * they are, every other byte as %XX, uppercase. Returns the length of
 * the whole result without its NUL, as snprintf does; when len > 0, out
 * holds as much of it as fits in len - 1 bytes, never half an escape,
 * and a NUL. out may be NULL when len is 0. */
size_t oci_query_escape(const char *s, char *out, size_t len);

#endif
