#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/oci/manifest.h"
#include "tests/unit/t.h"

#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define D1 "sha256:" H64
#define D2 "sha256:" "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

static const char manifest[] =
	"{\"schemaVersion\":2,"
	"\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
	"\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\","
	"\"digest\":\"" D1 "\",\"size\":1470},"
	"\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\","
	"\"digest\":\"" D2 "\",\"size\":3623807,\"urls\":[\"x\"],"
	"\"annotations\":{\"a\":\"b\"}}],"
	"\"annotations\":{\"org.opencontainers.image.created\":\"2026\"}}";

static const char list[] =
	"{\"schemaVersion\":2,"
	"\"mediaType\":\"application/vnd.docker.distribution.manifest.list.v2+json\","
	"\"manifests\":["
	"{\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\","
	"\"digest\":\"" D1 "\",\"size\":528,"
	"\"platform\":{\"architecture\":\"arm64\",\"os\":\"linux\"}},"
	"{\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\","
	"\"digest\":\"" D2 "\",\"size\":528,"
	"\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\","
	"\"os.features\":[\"x\"]}}]}";

static int parse(const char *s, const char *ct, struct oci_manifest *m,
		 char *err)
{
	return oci_manifest_parse(s, strlen(s), ct, m, err, 200);
}

T(image_manifest)
{
	struct oci_manifest m;
	char err[200];

	CHECK_INT(parse(manifest, NULL, &m, err), 0);
	CHECK_INT(m.media, OCI_MEDIA_IMAGE_MANIFEST);
	CHECK_INT(m.is_index, 0);
	CHECK_STR(m.config.digest, D1);
	CHECK_INT(m.config.size, 1470);
	CHECK_INT(m.n, 1);
	CHECK_STR(m.desc[0].digest, D2);
	CHECK_INT(m.desc[0].size, 3623807);
	CHECK_STR(m.desc[0].media_type,
		  "application/vnd.oci.image.layer.v1.tar+gzip");
	CHECK_INT(oci_index_pick(&m, "linux", "amd64", ""), -1);
	oci_manifest_free(&m);
}

/* An artifact: its artifactType and the subject it refers to. */
T(subject)
{
	struct oci_manifest m;
	char err[200];
	const char *a =
	    "{\"schemaVersion\":2,\"artifactType\":\"application/spdx+json\","
	    "\"config\":{\"mediaType\":\"application/vnd.oci.empty.v1+json\","
	    "\"digest\":\"" D1 "\",\"size\":2},\"layers\":[],"
	    "\"subject\":{\"mediaType\":\"application/vnd.oci.image.manifest."
	    "v1+json\",\"digest\":\"" D2 "\",\"size\":7,"
	    "\"annotations\":{\"a\":\"b\"}}}";

	CHECK_INT(parse(a, NULL, &m, err), 0);
	CHECK_STR(m.subject.digest, D2);
	CHECK_INT(m.subject.size, 7);
	CHECK_STR(m.artifact_type, "application/spdx+json");
	oci_manifest_free(&m);
	CHECK_INT(parse(manifest, NULL, &m, err), 0);
	CHECK_STR(m.subject.digest, "");
	CHECK_STR(m.artifact_type, "");
	oci_manifest_free(&m);
	CHECK_INT(parse("{\"schemaVersion\":2,\"layers\":[],"
	                "\"subject\":\"x\"}", NULL, &m, err), EINVAL);
	CHECK_INT(parse("{\"schemaVersion\":2,\"layers\":[],"
	                "\"subject\":{\"size\":1}}", NULL, &m, err), EINVAL);
	CHECK_INT(parse("{\"schemaVersion\":2,\"layers\":[],"
	                "\"artifactType\":3}", NULL, &m, err), EINVAL);
}

T(manifest_list)
{
	struct oci_manifest m;
	char err[200];

	CHECK_INT(parse(list, NULL, &m, err), 0);
	CHECK_INT(m.media, OCI_MEDIA_DOCKER_LIST);
	CHECK_INT(m.is_index, 1);
	CHECK_INT(m.n, 2);
	CHECK_STR(m.desc[0].arch, "arm64");
	CHECK_INT(oci_index_pick(&m, "linux", "amd64", ""), 1);
	CHECK_INT(oci_index_pick(&m, "linux", "arm64", "v8"), 0);
	CHECK_INT(oci_index_pick(&m, "linux", "arm64", "v7"), -1);
	CHECK_INT(oci_index_pick(&m, "windows", "amd64", ""), -1);
	oci_manifest_free(&m);
}

T(kind_without_media_type)
{
	struct oci_manifest m;
	char err[200];
	const char *bare = "{\"schemaVersion\":2,\"manifests\":[]}";

	CHECK_INT(parse(bare, NULL, &m, err), 0);
	CHECK_INT(m.media, OCI_MEDIA_IMAGE_INDEX);
	oci_manifest_free(&m);
	CHECK_INT(parse(bare, "application/vnd.docker.distribution.manifest"
			".list.v2+json; charset=utf-8", &m, err), 0);
	CHECK_INT(m.media, OCI_MEDIA_DOCKER_LIST);
	oci_manifest_free(&m);
	CHECK_INT(parse("{\"schemaVersion\":2,\"layers\":[]}", NULL, &m, err), 0);
	CHECK_INT(m.media, OCI_MEDIA_IMAGE_MANIFEST);
	oci_manifest_free(&m);
}

T(bad_manifests)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{\"schemaVersion\":2}",
		"{\"schemaVersion\":1,\"layers\":[]}",
		"{\"layers\":[]}",
		"{\"schemaVersion\":2,\"layers\":{}}",
		"{\"schemaVersion\":2,\"layers\":[{\"size\":1}]}",
		"{\"schemaVersion\":2,\"layers\":[{\"digest\":\"sha256:abc\"}]}",
		"{\"schemaVersion\":2,\"layers\":[{\"digest\":\"" D1 "\",\"size\":-1}]}",
		"{\"schemaVersion\":2,\"layers\":[{\"digest\":\"" D1 "\",\"size\":1.5}]}",
		"{\"schemaVersion\":2,\"layers\":[],\"manifests\":[]}",
		"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"layers\":[]}",
		"{\"schemaVersion\":2,\"mediaType\":\"text/plain\",\"layers\":[]}",
		"{\"schemaVersion\":2,\"layers\":[]} x",
		"{\"schemaVersion\":2,\"layers\":[1]}",
	};
	struct oci_manifest m;
	char err[200];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse(bad[i], NULL, &m, err);

		if (rc != EINVAL)
			fprintf(stderr, "  case %zu: rc %d\n", i, rc);
		CHECK_INT(rc, EINVAL);
		CHECK_CONTAINS(err, "manifest: ");
		CHECK(m.desc == NULL);
	}
}

T(limits)
{
	struct oci_manifest m;
	char err[200];
	size_t one = strlen("{\"digest\":\"" D1 "\"},"), n = OCI_MAX_DESCRIPTORS + 1;
	char *big = malloc(64 + n * one), *p = big;
	size_t i;

	p += sprintf(p, "{\"schemaVersion\":2,\"layers\":[");
	for (i = 0; i < n; i++)
		p += sprintf(p, "{\"digest\":\"" D1 "\"}%s", i + 1 < n ? "," : "");
	p += sprintf(p, "]}");
	CHECK_INT(oci_manifest_parse(big, (size_t)(p - big), NULL, &m, err,
				     sizeof(err)), EFBIG);
	CHECK_INT(oci_manifest_parse(big, OCI_MAX_MANIFEST + 1, NULL, &m, err,
				     sizeof(err)), EFBIG);
	free(big);
}

T(accept)
{
	CHECK(oci_media_accepted(NULL, OCI_MEDIA_DOCKER_MANIFEST));
	CHECK(!oci_media_accepted("", OCI_MEDIA_IMAGE_INDEX));
	CHECK(oci_media_accepted("application/vnd.oci.image.index.v1+json, "
				 "application/vnd.oci.image.manifest.v1+json",
				 OCI_MEDIA_IMAGE_INDEX));
	CHECK(!oci_media_accepted("application/vnd.oci.image.manifest.v1+json",
				  OCI_MEDIA_IMAGE_INDEX));
	CHECK(oci_media_accepted("*/*", OCI_MEDIA_DOCKER_LIST));
	CHECK(oci_media_accepted("application/*;q=0.5", OCI_MEDIA_DOCKER_LIST));
	CHECK(!oci_media_accepted("application/vnd.oci.image.index.v1+json;q=0",
				  OCI_MEDIA_IMAGE_INDEX));
	CHECK(oci_media_accepted("APPLICATION/VND.OCI.IMAGE.INDEX.V1+JSON ; q=1",
				 OCI_MEDIA_IMAGE_INDEX));
	CHECK_INT(oci_media_of(" application/vnd.oci.image.manifest.v1+json;x=y"),
		  OCI_MEDIA_IMAGE_MANIFEST);
	CHECK_INT(oci_media_of("application/json"), OCI_MEDIA_UNKNOWN);
	CHECK_STR(oci_media_name(OCI_MEDIA_DOCKER_MANIFEST),
		  "application/vnd.docker.distribution.manifest.v2+json");
}

T(referrers_filter)
{
	static const char list[] =
		"{\"schemaVersion\":2,\"mediaType\":"
		"\"application/vnd.oci.image.index.v1+json\",\"manifests\":["
		"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
		"\"digest\":\"sha256:aa\",\"size\":1,"
		"\"artifactType\":\"application/spdx+json\","
		"\"annotations\":{\"a\":[1,{\"b\":2}]}},"
		" {\"artifactType\":\"application/vnd.dev.cosign\","
		"\"digest\":\"sha256:bb\"},"
		"{\"digest\":\"sha256:cc\",\"artifactType\":"
		"\"application/spdx+json\"}],\"annotations\":{}}";
	char err[200];
	struct buf b;

	buf_init(&b, 1 << 20);
	CHECK_INT(oci_referrers_filter(list, strlen(list),
				       "application/spdx+json", &b, err,
				       sizeof(err)),
		  0);
	CHECK_STR(buf_str(&b),
		  "{\"schemaVersion\":2,\"mediaType\":"
		  "\"application/vnd.oci.image.index.v1+json\",\"manifests\":["
		  "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
		  "\"digest\":\"sha256:aa\",\"size\":1,"
		  "\"artifactType\":\"application/spdx+json\","
		  "\"annotations\":{\"a\":[1,{\"b\":2}]}},"
		  "{\"digest\":\"sha256:cc\",\"artifactType\":"
		  "\"application/spdx+json\"}]}");
	buf_reset(&b);
	CHECK_INT(oci_referrers_filter(list, strlen(list), "none/such", &b, err,
				       sizeof(err)),
		  0);
	CHECK(strstr(buf_str(&b), "\"manifests\":[]}") != NULL);
	buf_reset(&b);
	CHECK_INT(oci_referrers_filter("{\"manifests\":[1]}", 17, "x", &b, err,
				       sizeof(err)),
		  EINVAL);
	CHECK(*err);
	buf_reset(&b);
	CHECK_INT(oci_referrers_filter("[]", 2, "x", &b, err, sizeof(err)),
		  EINVAL);
	buf_reset(&b);
	CHECK_INT(oci_referrers_filter("{\"manifests\":[{}]} x", 20, "x", &b,
				       err, sizeof(err)),
		  EINVAL);
	buf_free(&b);
}

T(annotations)
{
	static const char m[] =
		"{\"schemaVersion\":2,\"config\":{\"annotations\":{\"no\":\"1\"}},"
		"\"annotations\" : {\"a\":\"x\", \"b\":\"y\"},"
		"\"layers\":[{\"annotations\":{\"no\":\"2\"}}]}";
	struct buf b;

	buf_init(&b, 1 << 20);
	CHECK_INT(oci_manifest_annotations(m, strlen(m), &b), 0);
	CHECK_STR(buf_str(&b), "{\"a\":\"x\", \"b\":\"y\"}");
	/* none, or none at the top: nothing */
	buf_reset(&b);
	CHECK_INT(oci_manifest_annotations("{\"layers\":[]}", 13, &b), 0);
	CHECK_INT((int)b.len, 0);
	CHECK_INT(oci_manifest_annotations(m + 0, 0, &b), EINVAL);
	CHECK_INT(oci_manifest_annotations("{\"annotations\":[1]}", 19, &b), 0);
	CHECK_INT((int)b.len, 0);
	/* bad JSON after it: nothing kept */
	CHECK_INT(oci_manifest_annotations("{\"annotations\":{}} x", 20, &b),
		  EINVAL);
	CHECK_INT((int)b.len, 0);
	CHECK_INT(oci_manifest_annotations("[]", 2, &b), EINVAL);
	buf_free(&b);
}

int main(void)
{
	RUN(image_manifest);
	RUN(annotations);
	RUN(subject);
	RUN(manifest_list);
	RUN(kind_without_media_type);
	RUN(bad_manifests);
	RUN(limits);
	RUN(accept);
	RUN(referrers_filter);
	return t_done();
}
