/* libFuzzer target: OCI names, tags, digests and /v2/ routes. Input is
 * "METHOD PATH" or just a path (GET). Whatever comes in, an accepted route
 * has a name the grammar allows and a reference that is a valid tag or a
 * digest larder can check, an error has a status and a spec code, and the
 * error body is the JSON the spec gives. The same text as a Link header
 * yields a next page's query that is fit to go into one, or nothing; as a
 * query, a page size in range and a tag or "", and a media type or "",
 * which percent-encodes to unreserved bytes and escapes and decodes back
 * to itself, as does the text itself. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/oci/ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

static int upper_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

/* Whether out (len bytes) is nothing but unreserved bytes and %XX. */
static int escaped(const char *out, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (out[i] == '%') {
			if (i + 2 >= len || !upper_hex(out[i + 1]) ||
			    !upper_hex(out[i + 2]))
				return 0;
			i += 2;
		} else if (!strchr("abcdefghijklmnopqrstuvwxyz"
				   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~",
				   out[i]) || !out[i]) {
			return 0;
		}
	}
	return 1;
}

/* Escapes s, checks the result, and decodes it back to s. */
static void round_trip(const char *s)
{
	size_t n = strlen(s), len = 3 * n + 1, got, cut;
	char *out = malloc(len), *back = malloc(len);

	if (!out || !back)
		abort();
	got = oci_query_escape(s, out, len);
	if (got != strlen(out) || got < n || got > 3 * n || !escaped(out, got))
		abort();
	if (oci_query_unescape(out, got, back, n + 1) != 0 ||
	    strcmp(back, s) != 0)
		abort();
	/* a short buffer: the same length, and as much of the result as
	 * fits in whole bytes and escapes */
	cut = got / 2;
	if (oci_query_escape(s, back, cut + 1) != got ||
	    strncmp(back, out, strlen(back)) != 0 || strlen(back) > cut ||
	    strlen(back) + 3 <= cut || !escaped(back, strlen(back)))
		abort();
	free(out);
	free(back);
}

/* An RFC 6838 type "/" subtype, checked here apart from oci_ref.c. */
static int media_part(const char *s, size_t n)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				    "!#$&^_.+-";

	return n >= 1 && n <= 127 && strspn(s, chars) >= n &&
	       strchr(chars, s[0]) < chars + 62;
}

/* s as a tags/list and as a referrers query. */
static void queries(const char *s)
{
	char last[OCI_MAX_TAG + 1], type[OCI_MAX_MEDIA_TYPE + 1];
	const char *slash;
	long page;
	int rc;

	memset(last, 'x', sizeof(last));
	rc = oci_tags_query(s, &page, last);
	if (rc != 0 && rc != EINVAL)
		abort();
	if (strlen(last) > OCI_MAX_TAG)
		abort();
	if (rc == EINVAL && (page != -1 || *last))
		abort();
	if (rc == 0 && (page < -1 || page > 1000000 ||
			(*last && !oci_tag_valid(last, strlen(last)))))
		abort();

	memset(type, 'x', sizeof(type));
	rc = oci_referrers_query(s, type);
	if (rc != 0 && rc != EINVAL)
		abort();
	if (strlen(type) > OCI_MAX_MEDIA_TYPE || (rc && *type))
		abort();
	if (*type) {
		slash = strchr(type, '/');
		if (!slash || strchr(slash + 1, '/') ||
		    !media_part(type, (size_t)(slash - type)) ||
		    !media_part(slash + 1, strlen(slash + 1)))
			abort();
		round_trip(type);
	}
	round_trip(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char *s = malloc(n + 1), *path, *sp;
	const char *method = "GET";
	struct oci_route r;
	struct buf b;

	if (!s)
		return 0;
	memcpy(s, d, n);
	s[n] = '\0';
	queries(s);
	path = s;
	sp = strchr(s, ' ');
	if (sp) {
		*sp = '\0';
		method = s;
		path = sp + 1;
	}
	oci_route_parse(method, path, &r);
	switch (r.kind) {
	case OCI_ERROR:
		if (!r.code || !r.reason || r.status < 400 || r.status > 405)
			abort();
		buf_init(&b, 4096);
		if (oci_error_body(&b, r.code, r.reason) ||
		    strncmp(buf_str(&b), "{\"errors\":[{\"code\":\"", 20))
			abort();
		buf_free(&b);
		break;
	case OCI_BASE:
		break;
	case OCI_MANIFEST:
	case OCI_BLOB:
	case OCI_REFERRERS:
		if (r.by_digest ? oci_digest_check(r.ref, strlen(r.ref)) != 0
				: !oci_tag_valid(r.ref, strlen(r.ref)))
			abort();
		if (r.kind != OCI_MANIFEST && !r.by_digest)
			abort();
		/* fall through */
	case OCI_TAGS:
		if (!oci_name_valid(r.name, strlen(r.name)) ||
		    strstr(r.name, ".."))
			abort();
		break;
	}
	/* a Link header's next page: only bytes a query may hold */
	{
		char q[512];

		if (oci_link_next(s, q, sizeof(q)) == 0 &&
		    (!*q || strpbrk(q, " \t\r\n\"<>;,")))
			abort();
	}
	/* the raw bytes, NULs included, through each grammar */
	oci_name_valid((const char *)d, n);
	oci_tag_valid((const char *)d, n);
	oci_digest_check((const char *)d, n);
	free(s);
	return 0;
}
