/* oci_manifest: manifests and indexes, read (oci_manifest.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "common/log.h"
#include "common/oci/manifest.h"

static const char *const names[] = {
	[OCI_MEDIA_UNKNOWN] = "application/octet-stream",
	[OCI_MEDIA_IMAGE_MANIFEST] = "application/vnd.oci.image.manifest.v1+json",
	[OCI_MEDIA_IMAGE_INDEX] = "application/vnd.oci.image.index.v1+json",
	[OCI_MEDIA_DOCKER_MANIFEST] =
		"application/vnd.docker.distribution.manifest.v2+json",
	[OCI_MEDIA_DOCKER_LIST] =
		"application/vnd.docker.distribution.manifest.list.v2+json",
};

#define NMEDIA (sizeof(names) / sizeof(names[0]))

/* The length of the type in a media range or Content-Type, without its
 * parameters and the white space before them. */
static size_t type_len(const char *s)
{
	size_t n = strcspn(s, ";,");

	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return n;
}

static enum oci_media media_n(const char *s, size_t n)
{
	size_t i;

	for (i = 1; i < NMEDIA; i++)
		if (strlen(names[i]) == n && strncasecmp(s, names[i], n) == 0)
			return (enum oci_media)i;
	return OCI_MEDIA_UNKNOWN;
}

enum oci_media oci_media_of(const char *content_type)
{
	if (!content_type)
		return OCI_MEDIA_UNKNOWN;
	content_type += strspn(content_type, " \t");
	return media_n(content_type, type_len(content_type));
}

const char *oci_media_name(enum oci_media m)
{
	return (size_t)m < NMEDIA ? names[m] : names[0];
}

/* Whether the parameters of one media range (from p to its ',') say q=0. */
static int q_zero(const char *p)
{
	const char *end = p + strcspn(p, ",");

	while ((p = memchr(p, ';', (size_t)(end - p))) != NULL) {
		p++;
		p += strspn(p, " \t");
		if ((*p == 'q' || *p == 'Q') && p[1] == '=') {
			double q = strtod(p + 2, NULL);

			return q <= 0.0;
		}
	}
	return 0;
}

int oci_media_accepted(const char *accept, enum oci_media m)
{
	const char *p = accept;

	if (m == OCI_MEDIA_UNKNOWN)
		return 0;
	if (!p || !*(p + strspn(p, " \t")))
		return m == OCI_MEDIA_DOCKER_MANIFEST;
	while (*p) {
		size_t n;

		p += strspn(p, " \t,");
		n = type_len(p);
		if (n && !q_zero(p) &&
		    ((n == 3 && strncmp(p, "*/*", 3) == 0) ||
		     (n == 13 && strncasecmp(p, "application/*", 13) == 0) ||
		     media_n(p, n) == m))
			return 1;
		p += strcspn(p, ",");
	}
	return 0;
}

/* Copies the string just read into out; -1 when it does not fit. */
static int take(struct json_reader *r, char *out, size_t outlen)
{
	if (r->str.len >= outlen)
		return -1;
	memcpy(out, buf_str(&r->str), r->str.len + 1);
	return 0;
}

static int fail(struct json_reader *r, char *err, size_t errlen,
		const char *what)
{
	log_reason(err, errlen, "manifest: %s", *r->err ? r->err : what);
	return EINVAL;
}

/* Reads an index's platform object into d. */
static int platform(struct json_reader *r, struct oci_descriptor *d,
		    char *err, size_t errlen)
{
	int k, t;

	while ((k = json_key(r)) == 1) {
		char *out = NULL;
		size_t outlen = sizeof(d->os);

		if (!strcmp(buf_str(&r->str), "os"))
			out = d->os;
		else if (!strcmp(buf_str(&r->str), "architecture"))
			out = d->arch;
		else if (!strcmp(buf_str(&r->str), "variant"))
			out = d->variant;
		t = json_value(r);
		if (t == JSON_ERROR)
			return fail(r, err, errlen, "bad platform");
		if (!out) {
			if ((t == JSON_OBJECT || t == JSON_ARRAY) && json_skip(r))
				return fail(r, err, errlen, "bad platform");
			continue;
		}
		if (t != JSON_STRING || take(r, out, outlen))
			return fail(r, err, errlen, "bad platform field");
	}
	return k < 0 ? fail(r, err, errlen, "bad platform") : 0;
}

/* Reads the descriptor object r has just entered into d. */
static int descriptor(struct json_reader *r, struct oci_descriptor *d,
		      char *err, size_t errlen)
{
	int k, t, rc;

	memset(d, 0, sizeof(*d));
	d->size = -1;
	while ((k = json_key(r)) == 1) {
		const char *key = buf_str(&r->str);
		int is_type = !strcmp(key, "mediaType"),
		    is_digest = !strcmp(key, "digest"),
		    is_size = !strcmp(key, "size"),
		    is_platform = !strcmp(key, "platform");

		t = json_value(r);
		if (t == JSON_ERROR)
			return fail(r, err, errlen, "bad descriptor");
		if (is_type) {
			if (t != JSON_STRING ||
			    take(r, d->media_type, sizeof(d->media_type)))
				return fail(r, err, errlen, "bad mediaType");
		} else if (is_digest) {
			if (t != JSON_STRING || take(r, d->digest,
						     sizeof(d->digest)) ||
			    oci_digest_check(d->digest, strlen(d->digest)))
				return fail(r, err, errlen, "bad digest");
		} else if (is_size) {
			if (t != JSON_NUMBER || json_integer(r, &d->size) ||
			    d->size < 0)
				return fail(r, err, errlen, "bad size");
		} else if (is_platform && t == JSON_OBJECT) {
			rc = platform(r, d, err, errlen);
			if (rc)
				return rc;
		} else if ((t == JSON_OBJECT || t == JSON_ARRAY) &&
			   json_skip(r)) {
			return fail(r, err, errlen, "bad descriptor");
		}
	}
	if (k < 0)
		return fail(r, err, errlen, "bad descriptor");
	if (!*d->digest)
		return fail(r, err, errlen, "a descriptor without a digest");
	return 0;
}

/* Reads the array of descriptors r has just entered into m. */
static int descriptors(struct json_reader *r, struct oci_manifest *m,
		       char *err, size_t errlen)
{
	size_t cap = 0;
	int t, rc;

	while ((t = json_value(r)) == JSON_OBJECT) {
		if (m->n == OCI_MAX_DESCRIPTORS) {
			log_reason(err, errlen, "manifest: more than %d "
				   "descriptors", OCI_MAX_DESCRIPTORS);
			return EFBIG;
		}
		if (m->n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			void *p = realloc(m->desc, ncap * sizeof(*m->desc));

			if (!p)
				return ENOMEM;
			m->desc = p;
			cap = ncap;
		}
		rc = descriptor(r, &m->desc[m->n], err, errlen);
		if (rc)
			return rc;
		m->n++;
	}
	return t == JSON_END ? 0 : fail(r, err, errlen, "bad descriptor list");
}

/* The kind of a manifest from its mediaType field, the Content-Type and
 * which list it had. */
static int settle_kind(struct oci_manifest *m, const char *field,
		       const char *content_type, int had_manifests,
		       int had_layers, char *err, size_t errlen)
{
	m->media = media_n(field, strlen(field));
	if (m->media == OCI_MEDIA_UNKNOWN && *field) {
		log_reason(err, errlen, "manifest: unsupported mediaType %s",
			   field);
		return EINVAL;
	}
	if (m->media == OCI_MEDIA_UNKNOWN)
		m->media = oci_media_of(content_type);
	if (m->media == OCI_MEDIA_UNKNOWN) /* OCI lets mediaType be absent */
		m->media = had_manifests ? OCI_MEDIA_IMAGE_INDEX :
					   OCI_MEDIA_IMAGE_MANIFEST;
	m->is_index = m->media == OCI_MEDIA_IMAGE_INDEX ||
		      m->media == OCI_MEDIA_DOCKER_LIST;
	if (m->is_index ? had_layers || *m->config.digest : had_manifests) {
		log_reason(err, errlen, "manifest: an %s with %s",
			   m->is_index ? "index" : "image manifest",
			   m->is_index ? "layers" : "manifests");
		return EINVAL;
	}
	return 0;
}

/* Starts reading a document of len bytes that must be a JSON object of
 * at most OCI_MAX_MANIFEST bytes (what names it in messages). Returns 0
 * with r at its first key, EFBIG (r untouched), or EINVAL with r to be
 * freed; the reason goes to err. */
static int open_object(struct json_reader *r, const char *data, size_t len,
		       const char *what, char *err, size_t errlen)
{
	log_reason(err, errlen, "%s", "");
	if (len > OCI_MAX_MANIFEST) {
		log_reason(err, errlen, "%s: bigger than %d bytes", what,
			   OCI_MAX_MANIFEST);
		return EFBIG;
	}
	json_init(r, data, len, 64 * 1024);
	if (json_value(r) != JSON_OBJECT)
		return fail(r, err, errlen, "not a JSON object");
	return 0;
}

int oci_manifest_parse(const char *data, size_t len, const char *content_type,
		       struct oci_manifest *m, char *err, size_t errlen)
{
	struct json_reader r;
	char field[128] = "";
	int k = 0, t, rc = 0, had_manifests = 0, had_layers = 0, version = 0;
	long long v;

	memset(m, 0, sizeof(*m));
	rc = open_object(&r, data, len, "manifest", err, errlen);
	if (rc == EFBIG)
		return rc;
	if (rc)
		goto out;
	while (!rc && (k = json_key(&r)) == 1) {
		const char *key = buf_str(&r.str);
		int is_type = !strcmp(key, "mediaType"),
		    is_version = !strcmp(key, "schemaVersion"),
		    is_config = !strcmp(key, "config"),
		    is_layers = !strcmp(key, "layers"),
		    is_manifests = !strcmp(key, "manifests"),
		    is_subject = !strcmp(key, "subject"),
		    is_artifact = !strcmp(key, "artifactType");

		t = json_value(&r);
		if (t == JSON_ERROR) {
			rc = fail(&r, err, errlen, "bad JSON");
		} else if (is_subject) {
			if (t != JSON_OBJECT)
				rc = fail(&r, err, errlen, "bad subject");
			else
				rc = descriptor(&r, &m->subject, err, errlen);
		} else if (is_artifact) {
			if (t != JSON_STRING || take(&r, m->artifact_type,
			                             sizeof(m->artifact_type)))
				rc = fail(&r, err, errlen, "bad artifactType");
		} else if (is_type) {
			if (t != JSON_STRING || take(&r, field, sizeof(field)))
				rc = fail(&r, err, errlen, "bad mediaType");
		} else if (is_version) {
			if (t != JSON_NUMBER || json_integer(&r, &v) || v != 2)
				rc = fail(&r, err, errlen,
					  "schemaVersion is not 2");
			version = 1;
		} else if (is_config && t == JSON_OBJECT) {
			rc = descriptor(&r, &m->config, err, errlen);
		} else if ((is_layers || is_manifests) && t == JSON_ARRAY) {
			if (had_layers || had_manifests)
				rc = fail(&r, err, errlen, "two descriptor lists");
			else
				rc = descriptors(&r, m, err, errlen);
			had_layers |= is_layers;
			had_manifests |= is_manifests;
		} else if (is_config || is_layers || is_manifests) {
			rc = fail(&r, err, errlen, "bad descriptor list");
		} else if ((t == JSON_OBJECT || t == JSON_ARRAY) &&
			   json_skip(&r)) {
			rc = fail(&r, err, errlen, "bad JSON");
		}
	}
	if (!rc && (k < 0 || json_end(&r)))
		rc = fail(&r, err, errlen, "bad JSON");
	if (!rc && !version)
		rc = fail(&r, err, errlen, "no schemaVersion");
	if (!rc && !had_layers && !had_manifests)
		rc = fail(&r, err, errlen, "neither layers nor manifests");
	if (!rc)
		rc = settle_kind(m, field, content_type, had_manifests,
				 had_layers, err, errlen);
out:
	json_free(&r);
	if (rc)
		oci_manifest_free(m);
	return rc;
}

void oci_manifest_free(struct oci_manifest *m)
{
	free(m->desc);
	m->desc = NULL;
	m->n = 0;
}

int oci_index_pick(const struct oci_manifest *m, const char *os,
		   const char *arch, const char *variant)
{
	size_t i;

	if (!m->is_index)
		return -1;
	for (i = 0; i < m->n; i++) {
		const struct oci_descriptor *d = &m->desc[i];
		const char *v = d->variant;

		if (strcmp(d->os, os) || strcmp(d->arch, arch))
			continue;
		if (!*v && !strcmp(arch, "arm64"))
			v = "v8";
		if (!*variant || !strcmp(v, variant))
			return (int)i;
	}
	return -1;
}

/* Walks one descriptor of a referrers list (entered), telling whether its
 * artifactType is want. Returns 1 or 0, or -1 on bad JSON. */
static int referrer_matches(struct json_reader *r, const char *want)
{
	int k, t, match = 0;

	while ((k = json_key(r)) == 1) {
		int is_type = !strcmp(buf_str(&r->str), "artifactType");

		t = json_value(r);
		if (t == JSON_ERROR)
			return -1;
		if (is_type && t == JSON_STRING)
			match = !strcmp(buf_str(&r->str), want);
		else if ((t == JSON_OBJECT || t == JSON_ARRAY) && json_skip(r))
			return -1;
	}
	return k < 0 ? -1 : match;
}

int oci_referrers_filter(const char *data, size_t len,
			 const char *artifact_type, struct buf *out, char *err,
			 size_t errlen)
{
	static const char head[] =
		"{\"schemaVersion\":2,\"mediaType\":"
		"\"application/vnd.oci.image.index.v1+json\",\"manifests\":[";
	struct json_reader r;
	size_t kept = 0;
	int k = 0, t, rc = 0, match;

	rc = open_object(&r, data, len, "referrers", err, errlen);
	if (rc == EFBIG)
		return rc;
	if (!rc)
		rc = buf_add(out, head, sizeof(head) - 1);
	while (!rc && (k = json_key(&r)) == 1) {
		int is_list = !strcmp(buf_str(&r.str), "manifests");

		t = json_value(&r);
		if (t == JSON_ERROR) {
			rc = fail(&r, err, errlen, "bad JSON");
		} else if (is_list && t == JSON_ARRAY) {
			while (!rc && (t = json_value(&r)) == JSON_OBJECT) {
				const char *start = r.p - 1; /* its '{' */

				match = referrer_matches(&r, artifact_type);
				if (match < 0)
					rc = fail(&r, err, errlen, "bad JSON");
				else if (match && kept++)
					rc = buf_add(out, ",", 1);
				if (!rc && match > 0)
					rc = buf_add(out, start,
						     (size_t)(r.p - start));
			}
			if (!rc && t != JSON_END)
				rc = fail(&r, err, errlen,
					  "a manifests entry is no object");
		} else if ((t == JSON_OBJECT || t == JSON_ARRAY) &&
			   json_skip(&r)) {
			rc = fail(&r, err, errlen, "bad JSON");
		}
	}
	if (!rc && (k < 0 || json_end(&r)))
		rc = fail(&r, err, errlen, "bad JSON");
	if (!rc)
		rc = buf_add(out, "]}", 2);
	json_free(&r);
	return rc;
}

int oci_manifest_annotations(const char *data, size_t len, struct buf *out)
{
	struct json_reader r;
	const char *found = NULL;
	size_t found_len = 0;
	char err[160];
	int k = 0, t, rc;

	rc = open_object(&r, data, len, "manifest", err, sizeof(err));
	if (rc == EFBIG)
		return rc;
	while (!rc && (k = json_key(&r)) == 1) {
		int want = !found && !strcmp(buf_str(&r.str), "annotations");

		t = json_value(&r);
		if (t == JSON_ERROR) {
			rc = EINVAL;
		} else if (t == JSON_OBJECT || t == JSON_ARRAY) {
			const char *start = r.p - 1; /* its '{' or '[' */

			if (json_skip(&r))
				rc = EINVAL;
			else if (want && t == JSON_OBJECT) {
				found = start;
				found_len = (size_t)(r.p - start);
			}
		}
	}
	if (!rc && (k < 0 || json_end(&r)))
		rc = EINVAL;
	if (!rc && found)
		rc = buf_add(out, found, found_len);
	json_free(&r);
	return rc;
}
