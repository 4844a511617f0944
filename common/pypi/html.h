/* html: a tolerant parser for PEP 503 HTML simple pages. I/O-free. */
#ifndef LARDER_HTML_H
#define LARDER_HTML_H

#include <stddef.h>

#include "common/pypi/simple.h"

/* Parses a PEP 503 HTML project page (is_list 0) or project list (1) into
 * p: every <a> element's href (entities decoded, resolved against
 * o->base_url, #sha256= fragment taken as the hash), its text as the file
 * name, data-requires-python, data-yanked, data-core-metadata and
 * data-dist-info-metadata ("true" or "sha256=<hex>"), and
 * <meta name="pypi:repository-version">. Files are filtered exactly as
 * simple_parse_json() does. Same returns and ownership. */
int html_parse_simple(const char *data, size_t len,
		      const struct simple_opts *o, int is_list,
		      struct simple_page *p, char *err, size_t errlen);

/* Decodes HTML character references (&amp; &lt; &gt; &quot; &apos; &#39;
 * &#NNN; &#xHH; and a few common named ones) in s[0..len) and appends the
 * result to out; an unknown or malformed reference is kept as written.
 * Returns 0 or an errno from buf. */
int html_unescape(const char *s, size_t len, struct buf *out);

#endif
