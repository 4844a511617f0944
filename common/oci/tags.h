/* oci_tags: a repository's tag list, the JSON of GET /v2/<name>/tags/list
 * ({"name": ..., "tags": [...]}). Read page by page from an upstream (some
 * page with n and last, some ignore both and send every tag in any
 * order), kept whole and sorted, and paged for a client as the spec says:
 * tags in lexical order, at most n of them after last, and whether more
 * follow (the caller's Link). I/O-free.
 */
#ifndef LARDER_OCI_TAGS_H
#define LARDER_OCI_TAGS_H

#include <stddef.h>

#include "common/buf.h"
#include "common/oci/ref.h"

#define OCI_TAGS_MAX 100000 /* tags in one repository's list */

struct oci_tags {
	char name[OCI_MAX_NAME + 1]; /* the first page's, "" when absent */
	char **tag;
	size_t n, cap;
};

/* Adds the tags of one page (len bytes of JSON) to t, which starts zeroed.
 * Every tag must pass oci_tag_valid(); "tags": null is an empty page.
 * Returns 0, EINVAL with a reason in err, EFBIG past OCI_TAGS_MAX, or
 * ENOMEM. */
int oci_tags_add(struct oci_tags *t, const char *data, size_t len, char *err,
                 size_t errlen);

/* Sorts t's tags in lexical (byte) order and drops repeats. */
void oci_tags_sort(struct oci_tags *t);

/* Writes the page of sorted t that follows last ("" or NULL: from the
 * start) with at most n tags (n < 0: all) to out as the spec's JSON, and
 * the last tag written to next when more follow ("" when none do; next
 * holds OCI_MAX_TAG + 1 bytes). Returns 0 or an errno from buf. */
int oci_tags_render(const struct oci_tags *t, const char *last, long n,
                    struct buf *out, char *next);

void oci_tags_free(struct oci_tags *t);

#endif
