/* libFuzzer target: tag lists. Whatever a page holds, what is read is
 * tags the grammar allows, sorted without repeats, and every page rendered
 * from it holds only those, in order, with a next tag only when more
 * follow. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/oci/tags.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct oci_tags t = {0};
	char err[200], next[OCI_MAX_TAG + 1];
	struct buf b;

	if (oci_tags_add(&t, (const char *)d, n, err, sizeof(err)) == 0) {
		oci_tags_sort(&t);
		for (size_t i = 0; i < t.n; i++)
			if (!oci_tag_valid(t.tag[i], strlen(t.tag[i])) ||
			    (i && strcmp(t.tag[i - 1], t.tag[i]) >= 0))
				abort();
		buf_init(&b, 1 << 24);
		if (oci_tags_render(&t, t.n ? t.tag[0] : "", 1, &b, next))
			abort();
		if (*next ? t.n < 3 || strcmp(next, t.tag[1]) : t.n >= 3)
			abort();
		buf_free(&b);
	} else if (!*err) {
		abort();
	}
	oci_tags_free(&t);
	return 0;
}
