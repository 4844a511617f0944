/* oci_manifest: what larder needs to know of an image manifest or index,
 * read without a tree (common/json.h). I/O-free.
 *
 * A registry answers a manifest request with one of four media types: an
 * OCI image manifest or index, or Docker's schema 2 manifest or manifest
 * list. larder stores the bytes as they came; it reads them to learn the
 * kind, the descriptors (config and layers, or an index's children with
 * their platforms), and, for a client that cannot take an index, which
 * child is linux/amd64.
 */
#ifndef LARDER_OCI_MANIFEST_H
#define LARDER_OCI_MANIFEST_H

#include <stddef.h>

#include "common/oci/ref.h"

/* Manifests bigger than this are refused (the spec lets a registry). */
#define OCI_MAX_MANIFEST (4 * 1024 * 1024)
/* Descriptors one manifest may list. */
#define OCI_MAX_DESCRIPTORS 4096

enum oci_media {
	OCI_MEDIA_UNKNOWN,
	OCI_MEDIA_IMAGE_MANIFEST,   /* application/vnd.oci.image.manifest.v1+json */
	OCI_MEDIA_IMAGE_INDEX,      /* application/vnd.oci.image.index.v1+json */
	OCI_MEDIA_DOCKER_MANIFEST,  /* ...docker.distribution.manifest.v2+json */
	OCI_MEDIA_DOCKER_LIST,      /* ...docker.distribution.manifest.list.v2+json */
};

struct oci_descriptor {
	char media_type[128];
	char digest[OCI_MAX_DIGEST + 1];
	long long size;             /* -1 when absent */
	char os[32], arch[32], variant[32];  /* an index's platform, or "" */
};

struct oci_manifest {
	enum oci_media media;
	int is_index;
	struct oci_descriptor config;       /* a manifest's; digest "" if none */
	struct oci_descriptor *desc;        /* layers, or an index's children */
	size_t n;
	struct oci_descriptor subject;      /* what it refers to (the
	                                       referrers API); digest "" if
	                                       none */
	char artifact_type[OCI_MAX_MEDIA_TYPE + 1]; /* "" if none */
};

/* The media type a Content-Type names (parameters and case ignored). */
enum oci_media oci_media_of(const char *content_type);

/* The Content-Type of m. */
const char *oci_media_name(enum oci_media m);

/* Whether an Accept header value takes media type m: the type itself,
 * application/ * or * / *, with a q above 0. An absent or empty Accept
 * takes only Docker's schema 2 manifest, as registries assume. */
int oci_media_accepted(const char *accept, enum oci_media m);

/* Reads a manifest or index of len bytes. Its kind comes from its
 * mediaType field, else from content_type (may be NULL), else from its
 * shape ("manifests" or "layers"). Every descriptor's digest must pass
 * oci_digest_check(). Returns 0, EINVAL with a reason in err (not JSON, not
 * a manifest, a bad descriptor), EFBIG (over OCI_MAX_MANIFEST or
 * OCI_MAX_DESCRIPTORS) or ENOMEM. */
int oci_manifest_parse(const char *data, size_t len, const char *content_type,
		       struct oci_manifest *m, char *err, size_t errlen);

void oci_manifest_free(struct oci_manifest *m);

/* The child of index m for os/arch (variant "" matches any, else it must
 * match, with arm64's empty variant taken as "v8"): its position, or -1. */
int oci_index_pick(const struct oci_manifest *m, const char *os,
		   const char *arch, const char *variant);

/* Writes to out the image index that lists the descriptors of referrers
 * list data (len bytes, an index) whose artifactType is artifact_type,
 * each copied byte for byte: the referrers API's artifactType filter, for
 * an upstream that did not apply it (or has no referrers API, and larder
 * read the tag schema's index). Returns 0, EINVAL with a reason in err
 * for what is not an index, EFBIG over OCI_MAX_MANIFEST, or an errno from
 * buf. */
int oci_referrers_filter(const char *data, size_t len,
			 const char *artifact_type, struct buf *out, char *err,
			 size_t errlen);

/* Appends to out the top-level "annotations" object of manifest or index
 * data (len bytes) as it is written there, byte for byte; nothing when it
 * has none (or one that is no object): what the referrers API lists with
 * a referrer. Returns 0, EINVAL for what is not a JSON object, EFBIG over
 * OCI_MAX_MANIFEST, or an errno from buf. */
int oci_manifest_annotations(const char *data, size_t len, struct buf *out);

#endif
