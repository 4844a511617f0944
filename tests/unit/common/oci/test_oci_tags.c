#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/oci/tags.h"
#include "tests/unit/t.h"

static const char *page(const struct oci_tags *t, const char *last, long n,
                        char *next)
{
	static struct buf b;

	buf_free(&b);
	buf_init(&b, 1 << 20);
	if (oci_tags_render(t, last, n, &b, next))
		return "(error)";
	return buf_str(&b);
}

/* Pages of an upstream that ignores n and last: merged, sorted, repeats
 * dropped, then paged for the client with where the next page starts. */
T(pages)
{
	struct oci_tags t = {0};
	char err[200], next[OCI_MAX_TAG + 1];
	const char *p1 = "{\"name\":\"library/alpine\",\"tags\":"
	                 "[\"b\",\"3.20\",\"a\"]}";
	const char *p2 = "{\"tags\":[\"latest\",\"a\"],\"name\":\"x\"}";

	CHECK_INT(oci_tags_add(&t, p1, strlen(p1), err, sizeof(err)), 0);
	CHECK_INT(oci_tags_add(&t, p2, strlen(p2), err, sizeof(err)), 0);
	oci_tags_sort(&t);
	CHECK_INT(t.n, 4);
	CHECK_STR(t.name, "library/alpine");
	CHECK_STR(page(&t, NULL, -1, next),
	          "{\"name\":\"library/alpine\",\"tags\":"
	          "[\"3.20\",\"a\",\"b\",\"latest\"]}");
	CHECK_STR(next, "");
	CHECK_STR(page(&t, "", 2, next),
	          "{\"name\":\"library/alpine\",\"tags\":[\"3.20\",\"a\"]}");
	CHECK_STR(next, "a");
	CHECK_STR(page(&t, "a", 2, next),
	          "{\"name\":\"library/alpine\",\"tags\":[\"b\",\"latest\"]}");
	CHECK_STR(next, "");
	/* last need not be a tag that exists */
	CHECK_STR(page(&t, "aa", -1, next),
	          "{\"name\":\"library/alpine\",\"tags\":[\"b\",\"latest\"]}");
	CHECK_STR(page(&t, "zzz", 5, next),
	          "{\"name\":\"library/alpine\",\"tags\":[]}");
	CHECK_STR(page(&t, NULL, 0, next),
	          "{\"name\":\"library/alpine\",\"tags\":[]}");
	CHECK_STR(next, "");
	oci_tags_free(&t);
}

T(bad_lists)
{
	static const char *const bad[] = {
		"[]",
		"{\"tags\":[1]}",
		"{\"tags\":\"a\"}",
		"{\"tags\":[\"-bad\"]}",
		"{\"tags\":[\"a b\"]}",
		"{\"tags\":[\"a\"]} x",
		"{\"tags\":[\"a\"]",
	};
	struct oci_tags t = {0};
	char err[200];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_INT(oci_tags_add(&t, bad[i], strlen(bad[i]), err,
		                       sizeof(err)),
		          EINVAL);
		CHECK(*err);
		oci_tags_free(&t);
	}
	/* null tags, no tags, unknown keys: an empty page */
	CHECK_INT(oci_tags_add(&t, "{\"name\":\"a\",\"tags\":null,\"x\":{}}",
	                       31, err, sizeof(err)),
	          0);
	CHECK_INT(t.n, 0);
	oci_tags_free(&t);
}

int main(void)
{
	RUN(pages);
	RUN(bad_lists);
	return t_done();
}
