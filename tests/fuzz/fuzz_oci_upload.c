/* libFuzzer target: the push side's grammar. Whatever the path, a route
 * that is not an error has a valid name and a valid ref (an upload id, a
 * tag or a digest); a Content-Range read has FROM <= TO; a query value
 * read fits its buffer. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/oci/upload.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static const char *const methods[] = {"GET", "PUT", "PATCH", "POST",
	                                      "DELETE"};
	struct oci_push_route r;
	char *s = malloc(n + 1), v[64];
	long long a, b;

	if (!s)
		return 0;
	memcpy(s, d, n);
	s[n] = '\0';
	for (size_t i = 0; i < 5; i++) {
		if (!oci_push_claims(methods[i], s))
			continue;
		oci_push_route_parse(methods[i], s, &r);
		if (r.kind == OCI_PUSH_ERROR) {
			if (!r.code || !r.reason || r.status < 400)
				abort();
			continue;
		}
		if (!oci_name_valid(r.name, strlen(r.name)))
			abort();
		if (r.kind == OCI_PUSH_SESSION &&
		    !oci_upload_id_valid(r.ref, strlen(r.ref)))
			abort();
	}
	if (oci_content_range(s, &a, &b) == 0 && (a < 0 || a > b))
		abort();
	if (oci_query_value(s, "digest", v, sizeof(v)) == 0 &&
	    strlen(v) >= sizeof(v))
		abort();
	free(s);
	return 0;
}
