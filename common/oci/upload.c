/* oci_upload: the push side's grammar (oci_upload.h). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/oci/upload.h"

static int is(const char *p, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(p, word, n) == 0;
}

static void fail(struct oci_push_route *r, int status, const char *code,
                 const char *reason)
{
	r->kind = OCI_PUSH_ERROR;
	r->status = status;
	r->code = code;
	r->reason = reason;
}

int oci_upload_id_valid(const char *s, size_t n)
{
	if (n != OCI_UPLOAD_ID_HEX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* Splits rest (the path after "/v2/", n bytes) into name, kind and ref
 * (its last segment; "" after a trailing '/'). Returns 0 or -1. */
static int split(const char *rest, size_t n, size_t *namelen,
                 const char **kind, size_t *kindlen, const char **ref,
                 size_t *reflen)
{
	const char *last = memrchr(rest, '/', n), *k;

	if (!last || last == rest)
		return -1;
	k = memrchr(rest, '/', (size_t)(last - rest));
	k = k ? k + 1 : rest;
	*kind = k;
	*kindlen = (size_t)(last - k);
	*ref = last + 1;
	*reflen = n - (size_t)(last + 1 - rest);
	*namelen = k > rest ? (size_t)(k - 1 - rest) : 0;
	return *namelen ? 0 : -1;
}

/* Whether rest (n bytes) is {name}/blobs/uploads/{id or ""}: then *namelen
 * is the name's length. */
static int is_upload(const char *rest, size_t n, size_t *namelen)
{
	const char *kind, *ref;
	size_t kindlen, reflen, nl;

	if (split(rest, n, &nl, &kind, &kindlen, &ref, &reflen) ||
	    !is(kind, kindlen, "uploads") || nl < 6 ||
	    memcmp(rest + nl - 6, "/blobs", 6) != 0)
		return 0;
	*namelen = nl - 6;
	return *namelen > 0;
}

int oci_push_claims(const char *method, const char *path)
{
	const char *rest;
	size_t nl;

	if (strncmp(path, "/v2/", 4) != 0)
		return 0;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return 1;
	rest = path + 4;
	return is_upload(rest, strlen(rest), &nl);
}

static int take_name(struct oci_push_route *r, const char *p, size_t n)
{
	if (!oci_name_valid(p, n)) {
		fail(r, 400, "NAME_INVALID",
		     n > OCI_MAX_NAME ? "repository name too long"
		                      : "invalid repository name");
		return -1;
	}
	memcpy(r->name, p, n);
	r->name[n] = '\0';
	return 0;
}

/* Takes a tag or a digest into r->ref. Returns 0 or -1. */
static int take_ref(struct oci_push_route *r, const char *p, size_t n)
{
	int rc;

	if (memchr(p, ':', n)) {
		rc = oci_digest_check(p, n);
		if (rc == ENOTSUP) {
			fail(r, 400, "UNSUPPORTED",
			     "digest algorithm not supported");
			return -1;
		}
		if (rc) {
			fail(r, 400, "DIGEST_INVALID", "invalid digest");
			return -1;
		}
		r->by_digest = 1;
	} else if (!oci_tag_valid(p, n)) {
		fail(r, 400, "TAG_INVALID", "invalid tag");
		return -1;
	}
	memcpy(r->ref, p, n);
	r->ref[n] = '\0';
	return 0;
}

void oci_push_route_parse(const char *method, const char *path,
                          struct oci_push_route *r)
{
	const char *rest, *kind, *ref;
	size_t n, namelen, kindlen, reflen;

	memset(r, 0, sizeof(*r));
	if (strncmp(path, "/v2/", 4) != 0) {
		fail(r, 405, "UNSUPPORTED", "no such endpoint");
		return;
	}
	rest = path + 4;
	n = strlen(rest);
	if (is_upload(rest, n, &namelen)) {
		if (take_name(r, rest, namelen))
			return;
		ref = rest + namelen + sizeof("/blobs/uploads/") - 1;
		reflen = n - (size_t)(ref - rest);
		if (reflen == 0) {
			if (strcmp(method, "POST") != 0)
				fail(r, 405, "UNSUPPORTED",
				     "start an upload with POST");
			else
				r->kind = OCI_PUSH_START;
			return;
		}
		if (!oci_upload_id_valid(ref, reflen)) {
			fail(r, 404, "BLOB_UPLOAD_UNKNOWN",
			     "no such upload session");
			return;
		}
		if (strcmp(method, "PATCH") && strcmp(method, "PUT") &&
		    strcmp(method, "GET") && strcmp(method, "DELETE")) {
			fail(r, 405, "UNSUPPORTED",
			     "an upload takes PATCH, PUT, GET and DELETE");
			return;
		}
		memcpy(r->ref, ref, reflen);
		r->ref[reflen] = '\0';
		r->kind = OCI_PUSH_SESSION;
		return;
	}
	if (split(rest, n, &namelen, &kind, &kindlen, &ref, &reflen)) {
		fail(r, 405, "UNSUPPORTED", "no such endpoint for this method");
		return;
	}
	if (is(kind, kindlen, "manifests") &&
	    (!strcmp(method, "PUT") || !strcmp(method, "DELETE"))) {
		if (take_name(r, rest, namelen) || take_ref(r, ref, reflen))
			return;
		r->kind = !strcmp(method, "PUT") ? OCI_PUSH_MANIFEST
		                                 : OCI_PUSH_DELETE_MANIFEST;
		return;
	}
	if (is(kind, kindlen, "blobs") && !strcmp(method, "DELETE")) {
		if (take_name(r, rest, namelen) || take_ref(r, ref, reflen))
			return;
		if (!r->by_digest) {
			fail(r, 400, "DIGEST_INVALID", "invalid digest");
			return;
		}
		r->kind = OCI_PUSH_DELETE_BLOB;
		return;
	}
	fail(r, 405, "UNSUPPORTED", "no such endpoint for this method");
}

/* Reads 1 to 18 digits at *p into *v, moving *p past them. */
static int number(const char **p, long long *v)
{
	int n = 0;

	*v = 0;
	while (**p >= '0' && **p <= '9') {
		if (++n > 18)
			return -1;
		*v = *v * 10 + (**p - '0');
		(*p)++;
	}
	return n ? 0 : -1;
}

int oci_content_range(const char *h, long long *from, long long *to)
{
	const char *p = h;
	long long total;

	if (!h)
		return EINVAL;
	if (!strncmp(p, "bytes ", 6))
		p += 6;
	if (number(&p, from) || *p++ != '-' || number(&p, to) ||
	    *from > *to)
		return EINVAL;
	if (p > h + 6 && !strncmp(h, "bytes ", 6)) {
		if (*p++ != '/')
			return EINVAL;
		if (*p == '*')
			p++;
		else if (number(&p, &total) || total <= *to)
			return EINVAL;
	}
	return *p ? EINVAL : 0;
}

int oci_query_value(const char *query, const char *key, char *out,
                    size_t len)
{
	size_t klen = strlen(key);
	const char *p = query, *end, *eq;
	int found = 0;

	if (len)
		out[0] = '\0';
	if (!p)
		return ENOENT;
	while (*p) {
		end = p + strcspn(p, "&");
		eq = memchr(p, '=', (size_t)(end - p));
		if ((size_t)((eq ? eq : end) - p) == klen &&
		    !memcmp(p, key, klen)) {
			if (found++) {
				if (len)
					out[0] = '\0';
				return EINVAL;
			}
			if (eq ? oci_query_unescape(eq + 1,
			                            (size_t)(end - eq - 1), out,
			                            len)
			       : oci_query_unescape("", 0, out, len))
				return EINVAL;
		}
		p = *end ? end + 1 : end;
	}
	return found ? 0 : ENOENT;
}
