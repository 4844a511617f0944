#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/oci_ref.h"
#include "t.h"

#define SHA "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static int name_ok(const char *s)
{
	return oci_name_valid(s, strlen(s));
}

T(names)
{
	char longest[OCI_MAX_NAME + 2];

	CHECK(name_ok("alpine"));
	CHECK(name_ok("library/alpine"));
	CHECK(name_ok("a/b/c/d"));
	CHECK(name_ok("my.repo_name__x--y---z/0"));
	CHECK(name_ok("manifests/blobs"));
	CHECK(!name_ok(""));
	CHECK(!name_ok("Alpine"));
	CHECK(!name_ok("/alpine"));
	CHECK(!name_ok("alpine/"));
	CHECK(!name_ok("a//b"));
	CHECK(!name_ok("a..b"));
	CHECK(!name_ok("a___b"));
	CHECK(!name_ok("a._b"));
	CHECK(!name_ok("-a"));
	CHECK(!name_ok("a-"));
	CHECK(!name_ok("a_"));
	CHECK(!name_ok("a."));
	CHECK(!name_ok("a/.b"));
	CHECK(!name_ok("a b"));
	CHECK(!name_ok("../etc"));
	CHECK(!oci_name_valid("ab\0c", 4));
	memset(longest, 'a', sizeof(longest));
	CHECK(oci_name_valid(longest, OCI_MAX_NAME));
	CHECK(!oci_name_valid(longest, OCI_MAX_NAME + 1));
}

T(tags)
{
	char t[OCI_MAX_TAG + 1];

	CHECK(oci_tag_valid("latest", 6));
	CHECK(oci_tag_valid("3.12-slim", 9));
	CHECK(oci_tag_valid("_x.Y-z", 6));
	CHECK(!oci_tag_valid("", 0));
	CHECK(!oci_tag_valid(".x", 2));
	CHECK(!oci_tag_valid("-x", 2));
	CHECK(!oci_tag_valid("a:b", 3));
	CHECK(!oci_tag_valid("a/b", 3));
	memset(t, 'v', sizeof(t));
	CHECK(oci_tag_valid(t, OCI_MAX_TAG));
	CHECK(!oci_tag_valid(t, OCI_MAX_TAG + 1));
}

static int digest(const char *s)
{
	return oci_digest_check(s, strlen(s));
}

T(digests)
{
	CHECK_INT(digest(SHA), 0);
	CHECK_INT(digest("sha512:" "0123456789abcdef0123456789abcdef"
			 "0123456789abcdef0123456789abcdef"
			 "0123456789abcdef0123456789abcdef"
			 "0123456789abcdef0123456789abcdef"), 0);
	CHECK_INT(digest("sha256:0123"), EINVAL);
	CHECK_INT(digest("sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef"
			 "0123456789abcdef"), EINVAL);
	CHECK_INT(digest("sha256:0123456789abcdef0123456789abcdef0123456789abcdef"
			 "0123456789abcdeg"), EINVAL);
	CHECK_INT(digest("multihash+base58:QmRZxt2b1FVZPNqd8hsiykDL3TdBDeTSPX9Kv46HmX4Gx8"),
		  ENOTSUP);
	CHECK_INT(digest("md5:abc"), ENOTSUP);
	CHECK_INT(digest("sha256"), EINVAL);
	CHECK_INT(digest("sha256:"), EINVAL);
	CHECK_INT(digest(":abc"), EINVAL);
	CHECK_INT(digest("SHA256:abc"), EINVAL);
	CHECK_INT(digest("sha256+:abc"), EINVAL);
	CHECK_INT(digest("sha256:ab/c"), EINVAL);
	CHECK_INT(digest(""), EINVAL);
}

static struct oci_route route(const char *method, const char *path)
{
	struct oci_route r;

	oci_route_parse(method, path, &r);
	return r;
}

T(routes)
{
	struct oci_route r;

	CHECK_INT(route("GET", "/v2/").kind, OCI_BASE);
	CHECK_INT(route("HEAD", "/v2").kind, OCI_BASE);

	r = route("GET", "/v2/hub/library/alpine/manifests/3.20");
	CHECK_INT(r.kind, OCI_MANIFEST);
	CHECK_STR(r.name, "hub/library/alpine");
	CHECK_STR(r.ref, "3.20");
	CHECK_INT(r.by_digest, 0);

	r = route("HEAD", "/v2/alpine/manifests/" SHA);
	CHECK_INT(r.kind, OCI_MANIFEST);
	CHECK_STR(r.ref, SHA);
	CHECK_INT(r.by_digest, 1);

	/* "manifests" as a component of the name: the last two segments */
	r = route("GET", "/v2/a/manifests/b/manifests/latest");
	CHECK_INT(r.kind, OCI_MANIFEST);
	CHECK_STR(r.name, "a/manifests/b");

	r = route("GET", "/v2/a/b/blobs/" SHA);
	CHECK_INT(r.kind, OCI_BLOB);
	CHECK_STR(r.name, "a/b");
	CHECK_STR(r.ref, SHA);

	r = route("GET", "/v2/a/b/tags/list");
	CHECK_INT(r.kind, OCI_TAGS);
	CHECK_STR(r.name, "a/b");

	r = route("GET", "/v2/a/referrers/" SHA);
	CHECK_INT(r.kind, OCI_REFERRERS);
	CHECK_STR(r.name, "a");
}

T(route_errors)
{
	struct oci_route r;

	r = route("PUT", "/v2/a/manifests/latest");
	CHECK_INT(r.kind, OCI_ERROR);
	CHECK_INT(r.status, 405);
	CHECK_STR(r.code, "UNSUPPORTED");
	r = route("POST", "/v2/a/blobs/uploads/");
	CHECK_INT(r.status, 405);
	r = route("GET", "/v2/a/blobs/uploads");
	CHECK_INT(r.status, 405);

	r = route("GET", "/v2/A/manifests/latest");
	CHECK_INT(r.status, 400);
	CHECK_STR(r.code, "NAME_INVALID");
	r = route("GET", "/v2/../manifests/latest");
	CHECK_STR(r.code, "NAME_INVALID");
	r = route("GET", "/v2/a/manifests/-bad");
	CHECK_INT(r.status, 404);
	CHECK_STR(r.code, "MANIFEST_UNKNOWN");
	r = route("GET", "/v2/a/manifests/sha256:abc");
	CHECK_INT(r.status, 400);
	CHECK_STR(r.code, "DIGEST_INVALID");
	r = route("GET", "/v2/a/blobs/latest");
	CHECK_STR(r.code, "DIGEST_INVALID");
	r = route("GET", "/v2/a/blobs/md5:abc");
	CHECK_STR(r.code, "UNSUPPORTED");
	CHECK_INT(r.status, 400);

	CHECK_INT(route("GET", "/v2/manifests/latest").status, 404);
	CHECK_INT(route("GET", "/v2//manifests/latest").status, 404);
	CHECK_INT(route("GET", "/v2/a/tags/list/").status, 404);
	CHECK_INT(route("GET", "/v2/a").status, 404);
	CHECK_INT(route("GET", "/v2/a/other/x").status, 404);
	CHECK_INT(route("GET", "/v2x/").status, 404);
	CHECK_INT(route("GET", "/v3/").status, 404);
}

T(error_bodies)
{
	struct buf b;

	buf_init(&b, 4096);
	CHECK_INT(oci_error_body(&b, "MANIFEST_UNKNOWN", "no \"such\" tag"), 0);
	CHECK_STR(buf_str(&b), "{\"errors\":[{\"code\":\"MANIFEST_UNKNOWN\","
			       "\"message\":\"no \\\"such\\\" tag\","
			       "\"detail\":null}]}");
	buf_free(&b);
}

T(links)
{
	char q[64];

	CHECK_INT(oci_link_next("</v2/library/alpine/tags/list?last=b&n=2>; "
				"rel=\"next\"", q, sizeof(q)), 0);
	CHECK_STR(q, "last=b&n=2");
	CHECK_INT(oci_link_next("<https://r.example/v2/a/tags/list?n=5&last="
				"v1.2>; rel=next", q, sizeof(q)), 0);
	CHECK_STR(q, "n=5&last=v1.2");
	CHECK_INT(oci_link_next("", q, sizeof(q)), ENOENT);
	CHECK_STR(q, "");
	CHECK_INT(oci_link_next("</v2/a/tags/list?n=2>; rel=\"prev\"", q,
				sizeof(q)), ENOENT);
	CHECK_INT(oci_link_next("</v2/a/tags/list?n=2", q, sizeof(q)), ENOENT);
	CHECK_INT(oci_link_next("</v2/a/tags/list>; rel=\"next\"", q,
				sizeof(q)), EINVAL);
	/* nothing that could break out of the header it goes into */
	CHECK_INT(oci_link_next("</v2/a/tags/list?n=2\"x>; rel=\"next\"", q,
				sizeof(q)), EINVAL);
	CHECK_INT(oci_link_next("</v2/a/tags/list?n=2 x>; rel=\"next\"", q,
				sizeof(q)), EINVAL);
	CHECK_INT(oci_link_next("</v2/a/tags/list?last=aaaaaaaaaaaaaaaaaaaaaaaa"
				"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa>; "
				"rel=\"next\"", q, sizeof(q)), EINVAL);
}

int main(void)
{
	RUN(names);
	RUN(tags);
	RUN(digests);
	RUN(routes);
	RUN(route_errors);
	RUN(error_bodies);
	RUN(links);
	return t_done();
}
