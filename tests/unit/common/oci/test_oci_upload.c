#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/oci/upload.h"
#include "tests/unit/t.h"

#define ID "0123456789abcdef0123456789abcdef"
#define DG "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

T(claims)
{
	CHECK_INT(oci_push_claims("GET", "/v2/a/manifests/1"), 0);
	CHECK_INT(oci_push_claims("HEAD", "/v2/a/blobs/" DG), 0);
	CHECK_INT(oci_push_claims("GET", "/v2/a/blobs/uploads/" ID), 1);
	CHECK_INT(oci_push_claims("POST", "/v2/a/blobs/uploads/"), 1);
	CHECK_INT(oci_push_claims("PUT", "/v2/a/manifests/1"), 1);
	/* a repository called blobs/uploads is still a name */
	CHECK_INT(oci_push_claims("GET", "/v2/blobs/uploads/tags/list"), 0);
	CHECK_INT(oci_push_claims("POST", "/simple/"), 0);
}

T(routes)
{
	struct oci_push_route r;

	oci_push_route_parse("POST", "/v2/hub/team/app/blobs/uploads/", &r);
	CHECK_INT(r.kind, OCI_PUSH_START);
	CHECK_STR(r.name, "hub/team/app");
	oci_push_route_parse("PATCH", "/v2/a/blobs/uploads/" ID, &r);
	CHECK_INT(r.kind, OCI_PUSH_SESSION);
	CHECK_STR(r.ref, ID);
	CHECK_STR(r.name, "a");
	oci_push_route_parse("PUT", "/v2/a/blobs/uploads/" ID, &r);
	CHECK_INT(r.kind, OCI_PUSH_SESSION);
	oci_push_route_parse("POST", "/v2/a/blobs/uploads/" ID, &r);
	CHECK_INT(r.kind, OCI_PUSH_ERROR);
	CHECK_INT(r.status, 405);
	oci_push_route_parse("PATCH", "/v2/a/blobs/uploads/", &r);
	CHECK_INT(r.status, 405);
	oci_push_route_parse("PATCH", "/v2/a/blobs/uploads/../x", &r);
	CHECK_INT(r.kind, OCI_PUSH_ERROR);
	oci_push_route_parse("PATCH", "/v2/a/blobs/uploads/0123456789ABCDEF0123456789abcdef", &r);
	CHECK_INT(r.status, 404);
	CHECK_STR(r.code, "BLOB_UPLOAD_UNKNOWN");
	oci_push_route_parse("PUT", "/v2/a/manifests/v1.0", &r);
	CHECK_INT(r.kind, OCI_PUSH_MANIFEST);
	CHECK_INT(r.by_digest, 0);
	CHECK_STR(r.ref, "v1.0");
	oci_push_route_parse("PUT", "/v2/a/manifests/" DG, &r);
	CHECK_INT(r.kind, OCI_PUSH_MANIFEST);
	CHECK_INT(r.by_digest, 1);
	oci_push_route_parse("PUT", "/v2/a/manifests/.bad", &r);
	CHECK_STR(r.code, "TAG_INVALID");
	oci_push_route_parse("PUT", "/v2/A/manifests/x", &r);
	CHECK_STR(r.code, "NAME_INVALID");
	oci_push_route_parse("PUT", "/v2/a/manifests/sha256:00", &r);
	CHECK_STR(r.code, "DIGEST_INVALID");
	oci_push_route_parse("DELETE", "/v2/a/blobs/" DG, &r);
	CHECK_INT(r.kind, OCI_PUSH_DELETE_BLOB);
	oci_push_route_parse("DELETE", "/v2/a/blobs/latest", &r);
	CHECK_STR(r.code, "DIGEST_INVALID");
	oci_push_route_parse("DELETE", "/v2/a/manifests/latest", &r);
	CHECK_INT(r.kind, OCI_PUSH_DELETE_MANIFEST);
	oci_push_route_parse("PUT", "/v2/a/tags/list", &r);
	CHECK_INT(r.status, 405);
	oci_push_route_parse("POST", "/v2/", &r);
	CHECK_INT(r.status, 405);
	oci_push_route_parse("POST", "/v2/x", &r);
	CHECK_INT(r.status, 405);
}

/* Names and tags at and past the spec's limits. */
T(limits)
{
	struct oci_push_route r;
	char path[1024], tag[200];

	memset(tag, 'a', 128);
	tag[128] = '\0';
	snprintf(path, sizeof(path), "/v2/a/manifests/%s", tag);
	oci_push_route_parse("PUT", path, &r);
	CHECK_INT(r.kind, OCI_PUSH_MANIFEST);
	tag[128] = 'a';
	tag[129] = '\0';
	snprintf(path, sizeof(path), "/v2/a/manifests/%s", tag);
	oci_push_route_parse("PUT", path, &r);
	CHECK_STR(r.code, "TAG_INVALID");
	memset(path, 0, sizeof(path));
	strcpy(path, "/v2/");
	memset(path + 4, 'n', 256);
	strcat(path, "/blobs/uploads/");
	oci_push_route_parse("POST", path, &r);
	CHECK_STR(r.code, "NAME_INVALID");
}

T(content_range)
{
	long long a, b;

	CHECK_INT(oci_content_range("0-9", &a, &b), 0);
	CHECK_INT((int)a, 0);
	CHECK_INT((int)b, 9);
	CHECK_INT(oci_content_range("bytes 10-19/*", &a, &b), 0);
	CHECK_INT((int)a, 10);
	CHECK_INT(oci_content_range("bytes 10-19/20", &a, &b), 0);
	CHECK_INT(oci_content_range("bytes 10-19/19", &a, &b), EINVAL);
	CHECK_INT(oci_content_range("bytes 10-19", &a, &b), EINVAL);
	CHECK_INT(oci_content_range("9-0", &a, &b), EINVAL);
	CHECK_INT(oci_content_range("-9", &a, &b), EINVAL);
	CHECK_INT(oci_content_range("0-", &a, &b), EINVAL);
	CHECK_INT(oci_content_range("0-9 ", &a, &b), EINVAL);
	CHECK_INT(oci_content_range("0-1234567890123456789", &a, &b), EINVAL);
	CHECK_INT(oci_content_range("", &a, &b), EINVAL);
	CHECK_INT(oci_content_range(NULL, &a, &b), EINVAL);
}

T(query)
{
	char v[80];

	CHECK_INT(oci_query_value("digest=sha256%3Aab&x=1", "digest", v,
	                          sizeof(v)), 0);
	CHECK_STR(v, "sha256:ab");
	CHECK_INT(oci_query_value("mount=a&from=team%2Fapp", "from", v,
	                          sizeof(v)), 0);
	CHECK_STR(v, "team/app");
	CHECK_INT(oci_query_value("from=a&from=b", "from", v, sizeof(v)),
	          EINVAL);
	CHECK_INT(oci_query_value("fromage=1", "from", v, sizeof(v)), ENOENT);
	CHECK_INT(oci_query_value("", "digest", v, sizeof(v)), ENOENT);
	CHECK_INT(oci_query_value(NULL, "digest", v, sizeof(v)), ENOENT);
	CHECK_INT(oci_query_value("digest=%zz", "digest", v, sizeof(v)),
	          EINVAL);
	CHECK_INT(oci_query_value("digest=%00", "digest", v, sizeof(v)),
	          EINVAL);
	CHECK_INT(oci_query_value("digest", "digest", v, sizeof(v)), 0);
	CHECK_STR(v, "");
	CHECK_INT(oci_query_value("digest=abcdef", "digest", v, 4), EINVAL);
}

T(ids)
{
	CHECK_INT(oci_upload_id_valid(ID, strlen(ID)), 1);
	CHECK_INT(oci_upload_id_valid(ID, 31), 0);
	CHECK_INT(oci_upload_id_valid("0123456789abcdef0123456789abcdeg", 32),
	          0);
}

int main(void)
{
	RUN(claims);
	RUN(routes);
	RUN(limits);
	RUN(content_range);
	RUN(query);
	RUN(ids);
	return t_done();
}
