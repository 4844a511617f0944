/* accept: chooses a PEP 691 simple-page representation, and whether the
 * client takes it gzip'd. I/O-free. */
#ifndef LARDER_ACCEPT_H
#define LARDER_ACCEPT_H

enum accept_format {
	ACCEPT_NONE = 0, /* nothing acceptable: answer 406 */
	ACCEPT_JSON,     /* application/vnd.pypi.simple.v1+json */
	ACCEPT_HTML,     /* text/html (PEP 503 page) */
};

/* Picks the format for an Accept header value (NULL or "" means HTML).
 * application/vnd.pypi.simple.{v1,latest}+json give JSON;
 * application/vnd.pypi.simple.{v1,latest}+html, text/html, text/ and a bare
 * wildcard give HTML. The highest q wins; q=0 excludes; on a tie JSON is
 * preferred unless the tie comes only from a wildcard. Malformed parameters
 * are ignored, unknown types never match. */
enum accept_format accept_choose(const char *accept);

/* Picks the format from a PEP 691 `format` query value (already decoded);
 * returns ACCEPT_NONE for an unknown one. */
enum accept_format accept_from_format(const char *format);

/* Returns 1 when an Accept-Encoding header value (RFC 9110 12.5.3) takes
 * gzip: "gzip" or "x-gzip" with a q above 0 (the highest where it is
 * named twice). A missing or empty header, a q of 0 or a malformed q give
 * 0: the plain bytes, which are never wrong. So does a "*" without gzip
 * named, as nginx's gzip_static has it (so every web server answers a
 * client alike), though RFC 9110 would allow gzip. */
int accept_gzip(const char *accept_encoding);

/* The Content-Type larder answers with for f. */
const char *accept_content_type(enum accept_format f);

#endif
