/* libFuzzer target: OCI names, tags, digests and /v2/ routes. Input is
 * "METHOD PATH" or just a path (GET). Whatever comes in, an accepted route
 * has a name the grammar allows and a reference that is a valid tag or a
 * digest larder can check, an error has a status and a spec code, and the
 * error body is the JSON the spec gives. The same text as a Link header
 * yields a next page's query that is fit to go into one, or nothing. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/oci_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char *s = malloc(n + 1), *path, *sp;
	const char *method = "GET";
	struct oci_route r;
	struct buf b;

	if (!s)
		return 0;
	memcpy(s, d, n);
	s[n] = '\0';
	path = s;
	sp = strchr(s, ' ');
	if (sp) {
		*sp = '\0';
		method = s;
		path = sp + 1;
	}
	oci_route_parse(method, path, &r);
	switch (r.kind) {
	case OCI_ERROR:
		if (!r.code || !r.reason || r.status < 400 || r.status > 405)
			abort();
		buf_init(&b, 4096);
		if (oci_error_body(&b, r.code, r.reason) ||
		    strncmp(buf_str(&b), "{\"errors\":[{\"code\":\"", 20))
			abort();
		buf_free(&b);
		break;
	case OCI_BASE:
		break;
	case OCI_MANIFEST:
	case OCI_BLOB:
	case OCI_REFERRERS:
		if (r.by_digest ? oci_digest_check(r.ref, strlen(r.ref)) != 0
				: !oci_tag_valid(r.ref, strlen(r.ref)))
			abort();
		if (r.kind != OCI_MANIFEST && !r.by_digest)
			abort();
		/* fall through */
	case OCI_TAGS:
		if (!oci_name_valid(r.name, strlen(r.name)) ||
		    strstr(r.name, ".."))
			abort();
		break;
	}
	/* a Link header's next page: only bytes a query may hold */
	{
		char q[512];

		if (oci_link_next(s, q, sizeof(q)) == 0 &&
		    (!*q || strpbrk(q, " \t\r\n\"<>;,")))
			abort();
	}
	/* the raw bytes, NULs included, through each grammar */
	oci_name_valid((const char *)d, n);
	oci_tag_valid((const char *)d, n);
	oci_digest_check((const char *)d, n);
	free(s);
	return 0;
}
