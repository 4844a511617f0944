/* oci_upload: the grammar of the push side of the OCI distribution spec:
 * which requests are pushes, upload session ids, Content-Range, and the
 * queries of an upload (digest, mount, from). I/O-free.
 *
 *   POST   /v2/{name}/blobs/uploads/            start (or ?digest= whole,
 *                                               ?mount=&from= mount)
 *   PATCH  /v2/{name}/blobs/uploads/{id}        a chunk
 *   PUT    /v2/{name}/blobs/uploads/{id}?digest= the last chunk, finish
 *   GET    /v2/{name}/blobs/uploads/{id}        status
 *   DELETE /v2/{name}/blobs/uploads/{id}        cancel
 *   PUT    /v2/{name}/manifests/{tag or digest}
 *   DELETE /v2/{name}/manifests/{digest or tag}, /v2/{name}/blobs/{digest}
 */
#ifndef LARDER_OCI_UPLOAD_H
#define LARDER_OCI_UPLOAD_H

#include <stddef.h>

#include "common/oci/ref.h"

/* An upload session id: 32 lowercase hex digits. */
#define OCI_UPLOAD_ID_HEX 32

enum oci_push_kind {
	OCI_PUSH_ERROR,         /* status, code and reason say why */
	OCI_PUSH_START,         /* POST .../blobs/uploads/ */
	OCI_PUSH_SESSION,       /* PATCH, PUT, GET, DELETE .../uploads/{id} */
	OCI_PUSH_MANIFEST,      /* PUT .../manifests/{ref} */
	OCI_PUSH_DELETE_MANIFEST,
	OCI_PUSH_DELETE_BLOB,
};

struct oci_push_route {
	enum oci_push_kind kind;
	int status;                     /* OCI_PUSH_ERROR: 400, 404 or 405 */
	const char *code;               /* OCI_PUSH_ERROR: the spec's code */
	const char *reason;             /* one line, static */
	char name[OCI_MAX_NAME + 1];
	char ref[OCI_MAX_DIGEST + 1];   /* a tag, a digest, or a session id */
	int by_digest;                  /* ref is a digest */
};

/* Returns 1 when the request is the push side's (any method but GET and
 * HEAD, or a GET of an upload session), else 0 (the pull side's). */
int oci_push_claims(const char *method, const char *path);

/* Routes a decoded path under /v2 for a method oci_push_claims() took.
 * Always returns with r filled in. */
void oci_push_route_parse(const char *method, const char *path,
                          struct oci_push_route *r);

/* Reads a Content-Range of a chunk: "FROM-TO" as the spec writes it, or
 * "bytes FROM-TO/TOTAL" ("*" for TOTAL) as HTTP does; FROM <= TO, both
 * inclusive, at most 18 digits each. Returns 0 or EINVAL. */
int oci_content_range(const char *h, long long *from, long long *to);

/* Reads the value of key from a raw query (NULL or "" for none) into out
 * (len bytes), percent-decoded. Returns 0, ENOENT when the key is absent,
 * or EINVAL for a bad escape, a value too long for out, or the key given
 * twice. */
int oci_query_value(const char *query, const char *key, char *out,
                    size_t len);

/* Whether s is an upload session id (OCI_UPLOAD_ID_HEX lowercase hex). */
int oci_upload_id_valid(const char *s, size_t n);

#endif
