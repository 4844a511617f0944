#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/oci/ref.h"
#include "tests/unit/t.h"

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

/* n and last of a tags/list query, or EINVAL. */
static int tq(const char *query, long *n, char *last)
{
	return oci_tags_query(query, n, last);
}

T(tags_query)
{
	char last[OCI_MAX_TAG + 1], q[OCI_MAX_TAG + 16];
	long n;

	CHECK_INT(tq(NULL, &n, last), 0);
	CHECK_INT(n, -1);
	CHECK_STR(last, "");
	CHECK_INT(tq("", &n, last), 0);
	CHECK_INT(n, -1);
	CHECK_STR(last, "");

	CHECK_INT(tq("n=5", &n, last), 0);
	CHECK_INT(n, 5);
	CHECK_STR(last, "");
	CHECK_INT(tq("n=0", &n, last), 0);
	CHECK_INT(n, 0);
	CHECK_INT(tq("n=1000000", &n, last), 0);
	CHECK_INT(n, 1000000);
	CHECK_INT(tq("n=0000007", &n, last), 0);
	CHECK_INT(n, 7);
	CHECK_INT(tq("n=%32", &n, last), 0);
	CHECK_INT(n, 2);
	CHECK_INT(tq("last=v1.2", &n, last), 0);
	CHECK_INT(n, -1);
	CHECK_STR(last, "v1.2");
	CHECK_INT(tq("last=3%2E20%2dslim", &n, last), 0);
	CHECK_STR(last, "3.20-slim");

	/* any order, others ignored, names case and all */
	CHECK_INT(tq("last=b&n=2", &n, last), 0);
	CHECK_INT(n, 2);
	CHECK_STR(last, "b");
	CHECK_INT(tq("x=1&&n=3&last=_a&y&", &n, last), 0);
	CHECK_INT(n, 3);
	CHECK_STR(last, "_a");
	CHECK_INT(tq("N=3&Last=a&nn=4&xn=5&n%3D6&lastx=%ZZ", &n, last), 0);
	CHECK_INT(n, -1);
	CHECK_STR(last, "");

	/* bad n */
	CHECK_INT(tq("n=", &n, last), EINVAL);
	CHECK_INT(tq("n", &n, last), EINVAL);
	CHECK_INT(tq("n=-1", &n, last), EINVAL);
	CHECK_INT(tq("n=+1", &n, last), EINVAL);
	CHECK_INT(tq("n=1e3", &n, last), EINVAL);
	CHECK_INT(tq("n=0x10", &n, last), EINVAL);
	CHECK_INT(tq("n= 1", &n, last), EINVAL);
	CHECK_INT(tq("n=1000001", &n, last), EINVAL);
	CHECK_INT(tq("n=9999999", &n, last), EINVAL);
	CHECK_INT(tq("n=00000001", &n, last), EINVAL);
	CHECK_INT(tq("n=99999999999999999999", &n, last), EINVAL);
	CHECK_INT(tq("n=10&n=11", &n, last), EINVAL);
	CHECK_INT(tq("n=10&n=10", &n, last), EINVAL);
	CHECK_INT(tq("n=1;last=a", &n, last), EINVAL);

	/* bad last; an error leaves nothing half read */
	CHECK_INT(tq("n=2&last=", &n, last), EINVAL);
	CHECK_INT(n, -1);
	CHECK_STR(last, "");
	CHECK_INT(tq("last", &n, last), EINVAL);
	CHECK_INT(tq("n=2&last=%ZZ", &n, last), EINVAL);
	CHECK_INT(n, -1);
	CHECK_INT(tq("last=a%2", &n, last), EINVAL);
	CHECK_INT(tq("last=a%", &n, last), EINVAL);
	CHECK_INT(tq("last=a%00b", &n, last), EINVAL);
	CHECK_INT(tq("last=a%2Fb", &n, last), EINVAL);
	CHECK_INT(tq("last=a:b", &n, last), EINVAL);
	CHECK_INT(tq("last=-a", &n, last), EINVAL);
	CHECK_INT(tq("last=a+b", &n, last), EINVAL);
	CHECK_INT(tq("last=a&last=b", &n, last), EINVAL);
	CHECK_STR(last, "");

	/* the longest tag, and one byte more */
	strcpy(q, "last=");
	memset(q + 5, 'v', OCI_MAX_TAG);
	q[5 + OCI_MAX_TAG] = '\0';
	CHECK_INT(tq(q, &n, last), 0);
	CHECK_INT(strlen(last), OCI_MAX_TAG);
	strcat(q, "v");
	CHECK_INT(tq(q, &n, last), EINVAL);
	CHECK_STR(last, "");
}

static int rq(const char *query, char *type)
{
	return oci_referrers_query(query, type);
}

T(referrers_query)
{
	char type[OCI_MAX_MEDIA_TYPE + 1], q[2 * OCI_MAX_MEDIA_TYPE];

	CHECK_INT(rq(NULL, type), 0);
	CHECK_STR(type, "");
	CHECK_INT(rq("", type), 0);
	CHECK_STR(type, "");
	CHECK_INT(rq("n=2&artifacttype=x", type), 0);
	CHECK_STR(type, "");

	CHECK_INT(rq("artifactType=text%2Fplain", type), 0);
	CHECK_STR(type, "text/plain");
	CHECK_INT(rq("artifactType=text%2fplain", type), 0);
	CHECK_STR(type, "text/plain");
	CHECK_INT(rq("x=%ZZ&artifactType=application%2Fvnd.example%2Bjson",
		     type), 0);
	CHECK_STR(type, "application/vnd.example+json");
	/* '+' raw is '+', not a space */
	CHECK_INT(rq("artifactType=application/vnd.example+json&n=1", type),
		  0);
	CHECK_STR(type, "application/vnd.example+json");
	CHECK_INT(rq("artifactType=a1%21%23%24%26%5E_.%2B-%2Fb", type), 0);
	CHECK_STR(type, "a1!#$&^_.+-/b");

	CHECK_INT(rq("artifactType=", type), EINVAL);
	CHECK_STR(type, "");
	CHECK_INT(rq("artifactType", type), EINVAL);
	CHECK_INT(rq("artifactType=text", type), EINVAL);
	CHECK_INT(rq("artifactType=a/b/c", type), EINVAL);
	CHECK_INT(rq("artifactType=a%2Fb%2Fc", type), EINVAL);
	CHECK_INT(rq("artifactType=/x", type), EINVAL);
	CHECK_INT(rq("artifactType=x/", type), EINVAL);
	CHECK_INT(rq("artifactType=/", type), EINVAL);
	CHECK_INT(rq("artifactType=.a/b", type), EINVAL);
	CHECK_INT(rq("artifactType=a/+b", type), EINVAL);
	CHECK_INT(rq("artifactType=a%20b/c", type), EINVAL);
	CHECK_INT(rq("artifactType=a/b;q=1", type), EINVAL);
	CHECK_INT(rq("artifactType=a/b%C3%A9", type), EINVAL);
	CHECK_INT(rq("artifactType=text%00/plain", type), EINVAL);
	CHECK_INT(rq("artifactType=text%2/plain", type), EINVAL);
	CHECK_INT(rq("artifactType=text/plain%", type), EINVAL);
	CHECK_INT(rq("artifactType=text%ZZplain", type), EINVAL);
	CHECK_INT(rq("artifactType=text/plain&artifactType=text/plain",
		     type), EINVAL);
	CHECK_STR(type, "");

	/* 127 bytes a part, and one more */
	strcpy(q, "artifactType=");
	memset(q + 13, 'a', 127);
	q[13 + 127] = '/';
	memset(q + 13 + 128, 'b', 127);
	q[13 + 255] = '\0';
	CHECK_INT(rq(q, type), 0);
	CHECK_INT(strlen(type), OCI_MAX_MEDIA_TYPE);
	strcat(q, "b");
	CHECK_INT(rq(q, type), EINVAL);
	memmove(q + 14, q + 13, strlen(q + 13) + 1); /* 128 'a' */
	q[13 + 128 + 128] = '\0';
	CHECK_INT(rq(q, type), EINVAL);
}

T(query_escape)
{
	char out[3 * 256 + 1], back[256], all[256], q[3 * 256 + 16];
	char type[OCI_MAX_MEDIA_TYPE + 1];
	size_t i;

	CHECK_INT(oci_query_escape("", out, sizeof(out)), 0);
	CHECK_STR(out, "");
	CHECK_INT(oci_query_escape("aZ09-._~", out, sizeof(out)), 8);
	CHECK_STR(out, "aZ09-._~");
	CHECK_INT(oci_query_escape("application/vnd.example+json", out,
				   sizeof(out)), 32);
	CHECK_STR(out, "application%2Fvnd.example%2Bjson");
	CHECK_INT(oci_query_escape("a b&c=%\xff", out, sizeof(out)), 18);
	CHECK_STR(out, "a%20b%26c%3D%25%FF");

	/* like snprintf: the length needed, never half an escape */
	CHECK_INT(oci_query_escape("a/b", NULL, 0), 5);
	CHECK_INT(oci_query_escape("a/b", out, 1), 5);
	CHECK_STR(out, "");
	CHECK_INT(oci_query_escape("a/b", out, 3), 5);
	CHECK_STR(out, "a");
	CHECK_INT(oci_query_escape("a/b", out, 5), 5);
	CHECK_STR(out, "a%2F");
	CHECK_INT(oci_query_escape("a/b", out, 6), 5);
	CHECK_STR(out, "a%2Fb");

	/* every byte there and back */
	for (i = 0; i < 255; i++)
		all[i] = (char)(i + 1);
	all[255] = '\0';
	CHECK_INT(oci_query_escape(all, out, sizeof(out)), 66 + 3 * 189);
	CHECK_INT(oci_query_unescape(out, strlen(out), back, sizeof(back)),
		  0);
	CHECK(memcmp(back, all, 256) == 0);

	/* and a media type through the referrers query */
	strcpy(q, "artifactType=");
	oci_query_escape("application/vnd.cncf.helm.config.v1+json", q + 13,
			 sizeof(q) - 13);
	CHECK_INT(oci_referrers_query(q, type), 0);
	CHECK_STR(type, "application/vnd.cncf.helm.config.v1+json");
}

T(query_unescape)
{
	char out[8];

	CHECK_INT(oci_query_unescape("", 0, out, sizeof(out)), 0);
	CHECK_STR(out, "");
	CHECK_INT(oci_query_unescape("a%2fb+c", 7, out, sizeof(out)), 0);
	CHECK_STR(out, "a/b+c");
	CHECK_INT(oci_query_unescape("%41%4a%4A", 9, out, sizeof(out)), 0);
	CHECK_STR(out, "AJJ");
	CHECK_INT(oci_query_unescape("abc&def", 3, out, sizeof(out)), 0);
	CHECK_STR(out, "abc");
	CHECK_INT(oci_query_unescape("1234567", 7, out, sizeof(out)), 0);
	CHECK_INT(oci_query_unescape("12345678", 8, out, sizeof(out)),
		  ENAMETOOLONG);
	CHECK_STR(out, "");
	CHECK_INT(oci_query_unescape("", 0, out, 0), ENAMETOOLONG);
	CHECK_INT(oci_query_unescape("%", 1, out, sizeof(out)), EINVAL);
	CHECK_INT(oci_query_unescape("%4", 2, out, sizeof(out)), EINVAL);
	/* the escape may not run past n */
	CHECK_INT(oci_query_unescape("%41", 2, out, sizeof(out)), EINVAL);
	CHECK_INT(oci_query_unescape("%G1", 3, out, sizeof(out)), EINVAL);
	CHECK_INT(oci_query_unescape("%-1", 3, out, sizeof(out)), EINVAL);
	CHECK_INT(oci_query_unescape("a%00", 4, out, sizeof(out)), EINVAL);
	CHECK_STR(out, "");
	CHECK_INT(oci_query_unescape("a\0b", 3, out, sizeof(out)), EINVAL);
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
	RUN(tags_query);
	RUN(referrers_query);
	RUN(query_escape);
	RUN(query_unescape);
	return t_done();
}
