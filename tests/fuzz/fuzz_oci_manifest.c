/* libFuzzer target: OCI manifests and indexes, and Accept matching. The
 * first line of the input is a Content-Type (and Accept header), the rest
 * the manifest. Whatever comes in, a manifest read has a known kind, at
 * most OCI_MAX_DESCRIPTORS descriptors, each with a checkable digest and a
 * size of -1 or more; a failure says why and holds nothing. Its
 * annotations are an object cut from the input, or nothing. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/oci/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	const uint8_t *nl = memchr(d, '\n', n);
	char *ct = NULL, err[200];
	const char *body = (const char *)d;
	size_t len = n, i;
	struct oci_manifest m;
	int rc, k;

	if (nl) {
		ct = strndup((const char *)d, (size_t)(nl - d));
		body = (const char *)nl + 1;
		len = n - (size_t)(nl + 1 - d);
		for (k = OCI_MEDIA_UNKNOWN; k <= OCI_MEDIA_DOCKER_LIST; k++)
			oci_media_accepted(ct, (enum oci_media)k);
		oci_media_of(ct);
	}
	rc = oci_manifest_parse(body, len, ct, &m, err, sizeof(err));
	if (rc) {
		if ((rc != EINVAL && rc != EFBIG && rc != ENOMEM) || !*err ||
		    m.desc || m.n)
			abort();
	} else {
		if (m.media == OCI_MEDIA_UNKNOWN || m.n > OCI_MAX_DESCRIPTORS ||
		    m.is_index != (m.media == OCI_MEDIA_IMAGE_INDEX ||
				   m.media == OCI_MEDIA_DOCKER_LIST))
			abort();
		for (i = 0; i < m.n; i++)
			if (oci_digest_check(m.desc[i].digest,
					     strlen(m.desc[i].digest)) ||
			    m.desc[i].size < -1)
				abort();
		oci_index_pick(&m, "linux", "amd64", "");
		oci_manifest_free(&m);
	}
	/* as a referrers list: what comes out is an index whose entries are
	 * the input's own bytes, and that larder reads as an index whenever
	 * those entries pass its descriptor checks */
	{
		struct buf b;

		buf_init(&b, 2 * OCI_MAX_MANIFEST + 256);
		if (oci_referrers_filter(body, len, ct ? ct : "x", &b, err,
					 sizeof(err)) == 0) {
			if (strncmp(buf_str(&b), "{\"schemaVersion\":2,", 19) ||
			    b.len < 2 || memcmp(b.data + b.len - 2, "]}", 2))
				abort();
			if (oci_manifest_parse(b.data, b.len, NULL, &m, err,
					       sizeof(err)) == 0) {
				if (!m.is_index)
					abort();
				oci_manifest_free(&m);
			}
		}
		buf_free(&b);
	}
	/* its annotations: an object of the input's own bytes, or nothing */
	{
		struct buf b;

		buf_init(&b, OCI_MAX_MANIFEST);
		rc = oci_manifest_annotations(body, len, &b);
		if ((rc && b.len) ||
		    (!rc && b.len && (b.data[0] != '{' || b.data[b.len - 1] != '}' ||
				      !memmem(body, len, b.data, b.len))))
			abort();
		buf_free(&b);
	}
	free(ct);
	return 0;
}
