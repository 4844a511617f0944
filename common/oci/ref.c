/* oci_ref: OCI names, tags, digests and the /v2/ routes (oci_ref.h). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/hex.h"
#include "common/json.h"
#include "common/oci/ref.h"

static int lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int alnum(char c)
{
	return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* Steps over one separator at s[i]: ".", "_", "__" or "-"+. Returns the
 * index after it, or i when there is none. */
static size_t separator(const char *s, size_t n, size_t i)
{
	if (s[i] == '.')
		return i + 1;
	if (s[i] == '_')
		return i + 1 < n && s[i + 1] == '_' ? i + 2 : i + 1;
	while (i < n && s[i] == '-')
		i++;
	return i;
}

int oci_name_valid(const char *s, size_t n)
{
	size_t i = 0, next;

	if (n == 0 || n > OCI_MAX_NAME)
		return 0;
	for (;;) {
		/* a component: alnum runs joined by separators */
		if (!lower_alnum(s[i]))
			return 0;
		while (i < n && lower_alnum(s[i]))
			i++;
		if (i == n)
			return 1;
		if (s[i] == '/') {
			if (++i == n)
				return 0;
			continue;
		}
		next = separator(s, n, i);
		if (next == i || next == n)
			return 0;
		i = next;
	}
}

int oci_tag_valid(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > OCI_MAX_TAG || !(alnum(s[0]) || s[0] == '_'))
		return 0;
	for (i = 1; i < n; i++)
		if (!alnum(s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
			return 0;
	return 1;
}

/* The spec's digest grammar, whatever the algorithm. */
static int digest_form(const char *s, size_t n, size_t *colon)
{
	size_t i = 0;

	for (;;) {
		if (i == n || !lower_alnum(s[i]))
			return 0;
		while (i < n && lower_alnum(s[i]))
			i++;
		if (i == n)
			return 0;
		if (s[i] == ':')
			break;
		if (!s[i] || !strchr("+._-", s[i]))
			return 0;
		i++;
	}
	*colon = i++;
	if (i == n)
		return 0;
	for (; i < n; i++)
		if (!alnum(s[i]) && (!s[i] || !strchr("=_-", s[i])))
			return 0;
	return 1;
}

int oci_digest_check(const char *s, size_t n)
{
	size_t colon, want;

	if (!digest_form(s, n, &colon))
		return EINVAL;
	if (colon == 6 && memcmp(s, "sha256", 6) == 0)
		want = 64;
	else if (colon == 6 && memcmp(s, "sha512", 6) == 0)
		want = 128;
	else
		return ENOTSUP;
	if (n - colon - 1 != want)
		return EINVAL;
	if (!hex_is_lower(s + colon + 1, want))
		return EINVAL;
	return 0;
}

static void fail(struct oci_route *r, int status, const char *code,
		 const char *reason)
{
	r->kind = OCI_ERROR;
	r->status = status;
	r->code = code;
	r->reason = reason;
}

/* Takes the name (path[0..n)) into r; 0 when it is valid. */
static int take_name(struct oci_route *r, const char *p, size_t n)
{
	if (!oci_name_valid(p, n)) {
		fail(r, 400, "NAME_INVALID", n > OCI_MAX_NAME ?
		     "repository name too long" : "invalid repository name");
		return -1;
	}
	memcpy(r->name, p, n);
	r->name[n] = '\0';
	return 0;
}

/* Takes a digest reference into r; 0 when it is one larder can check. */
static int take_digest(struct oci_route *r, const char *p, size_t n)
{
	int rc = oci_digest_check(p, n);

	if (rc == ENOTSUP) {
		fail(r, 400, "UNSUPPORTED", "digest algorithm not supported");
		return -1;
	}
	if (rc) {
		fail(r, 400, "DIGEST_INVALID", "invalid digest");
		return -1;
	}
	memcpy(r->ref, p, n);
	r->ref[n] = '\0';
	r->by_digest = 1;
	return 0;
}

static int is(const char *p, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(p, word, n) == 0;
}

void oci_route_parse(const char *method, const char *path,
		     struct oci_route *r)
{
	const char *rest, *last, *kind;
	size_t n, namelen, kindlen, reflen;

	memset(r, 0, sizeof(*r));
	if (strncmp(path, "/v2", 3) != 0 || (path[3] && path[3] != '/')) {
		fail(r, 404, "NAME_UNKNOWN", "not an OCI path");
		return;
	}
	rest = path[3] ? path + 4 : path + 3;
	n = strlen(rest);
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		fail(r, 405, "UNSUPPORTED", "this registry is a read-only cache");
		return;
	}
	if (n == 0) {
		r->kind = OCI_BASE;
		return;
	}
	/* .../{kind}/{ref}: the last two segments */
	last = memrchr(rest, '/', n);
	if (!last || last == rest) {
		fail(r, 404, "NAME_UNKNOWN", "no such endpoint");
		return;
	}
	kind = memrchr(rest, '/', (size_t)(last - rest));
	kind = kind ? kind + 1 : rest;
	kindlen = (size_t)(last - kind);
	reflen = n - (size_t)(last + 1 - rest);
	namelen = kind > rest ? (size_t)(kind - 1 - rest) : 0;
	if (namelen == 0) {
		fail(r, 404, "NAME_UNKNOWN", "no such endpoint");
		return;
	}
	if (is(kind, kindlen, "tags") && is(last + 1, reflen, "list")) {
		if (take_name(r, rest, namelen) == 0)
			r->kind = OCI_TAGS;
		return;
	}
	if (is(kind, kindlen, "blobs") && is(last + 1, reflen, "uploads")) {
		fail(r, 405, "UNSUPPORTED", "this registry is a read-only cache");
		return;
	}
	if (is(kind, kindlen, "manifests")) {
		if (take_name(r, rest, namelen))
			return;
		if (memchr(last + 1, ':', reflen)) {
			if (take_digest(r, last + 1, reflen) == 0)
				r->kind = OCI_MANIFEST;
			return;
		}
		if (!oci_tag_valid(last + 1, reflen)) {
			fail(r, 404, "MANIFEST_UNKNOWN", "invalid tag");
			return;
		}
		memcpy(r->ref, last + 1, reflen);
		r->ref[reflen] = '\0';
		r->kind = OCI_MANIFEST;
		return;
	}
	if (is(kind, kindlen, "blobs") || is(kind, kindlen, "referrers")) {
		if (take_name(r, rest, namelen) == 0 &&
		    take_digest(r, last + 1, reflen) == 0)
			r->kind = is(kind, kindlen, "blobs") ? OCI_BLOB
							     : OCI_REFERRERS;
		return;
	}
	fail(r, 404, "NAME_UNKNOWN", "no such endpoint");
}

int oci_error_body(struct buf *b, const char *code, const char *message)
{
	if (buf_adds(b, "{\"errors\":[{\"code\":") ||
	    json_put_string(b, code) || buf_adds(b, ",\"message\":") ||
	    json_put_string(b, message) ||
	    buf_adds(b, ",\"detail\":null}]}"))
		return ENOMEM;
	return 0;
}

int oci_link_next(const char *link, char *query, size_t len)
{
	const char *open, *close, *q, *rel;
	size_t n;

	query[0] = '\0';
	open = strchr(link, '<');
	close = open ? strchr(open, '>') : NULL;
	if (!close)
		return ENOENT;
	rel = strstr(close, "rel=");
	if (!rel || (strncmp(rel + 4, "\"next\"", 6) != 0 &&
		     strncmp(rel + 4, "next", 4) != 0))
		return ENOENT;
	q = memchr(open, '?', (size_t)(close - open));
	if (!q)
		return EINVAL;
	q++;
	n = (size_t)(close - q);
	if (n == 0 || n >= len)
		return EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789=&._~%+-", q[i]))
			return EINVAL;
	memcpy(query, q, n);
	query[n] = '\0';
	return 0;
}

int oci_query_unescape(const char *s, size_t n, char *out, size_t len)
{
	size_t i, o = 0;
	int hi, lo;
	char c;

	if (len == 0)
		return ENAMETOOLONG;
	out[0] = '\0';
	for (i = 0; i < n; i++) {
		c = s[i];
		if (c == '%') {
			if (n - i < 3)
				goto bad;
			hi = hex_value((unsigned char)s[i + 1]);
			lo = hex_value((unsigned char)s[i + 2]);
			if (hi < 0 || lo < 0)
				goto bad;
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		if (c == '\0')
			goto bad;
		if (o + 1 >= len) {
			out[0] = '\0';
			return ENAMETOOLONG;
		}
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
bad:
	out[0] = '\0';
	return EINVAL;
}

static int unreserved(char c)
{
	return alnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

size_t oci_query_escape(const char *s, char *out, size_t len)
{
	static const char digits[] = "0123456789ABCDEF";
	size_t need = 0, w;
	unsigned char c;

	for (; *s; s++) {
		c = (unsigned char)*s;
		w = unreserved((char)c) ? 1 : 3;
		if (need + w < len) {
			if (w == 1) {
				out[need] = (char)c;
			} else {
				out[need] = '%';
				out[need + 1] = digits[c >> 4];
				out[need + 2] = digits[c & 15];
			}
		} else if (need < len) {
			out[need] = '\0';
			len = need; /* nothing more is written */
		}
		need += w;
	}
	if (need < len)
		out[need] = '\0';
	return need;
}

/* Finds parameter key in query: *v and *vn are its raw value (*v NULL
 * when it is absent). Returns 0, or EINVAL when it is given twice. */
static int query_find(const char *query, const char *key, const char **v,
		      size_t *vn)
{
	size_t kl = strlen(key), pl;
	const char *p = query, *eq;

	*v = NULL;
	*vn = 0;
	while (p && *p) {
		pl = strcspn(p, "&");
		eq = memchr(p, '=', pl);
		if ((size_t)((eq ? eq : p + pl) - p) == kl &&
		    memcmp(p, key, kl) == 0) {
			if (*v)
				return EINVAL;
			*v = eq ? eq + 1 : p + pl;
			*vn = (size_t)(p + pl - *v);
		}
		p += pl;
		if (*p)
			p++;
	}
	return 0;
}

/* Reads parameter key of query, decoded, into out (len bytes; "" when
 * absent); *given says whether it is there. Returns 0 or EINVAL. */
static int query_value(const char *query, const char *key, char *out,
		       size_t len, int *given)
{
	const char *v;
	size_t vn;

	out[0] = '\0';
	*given = 0;
	if (query_find(query, key, &v, &vn))
		return EINVAL;
	if (!v)
		return 0;
	*given = 1;
	return oci_query_unescape(v, vn, out, len) ? EINVAL : 0;
}

/* A page size: 1 to 7 digits, at most OCI_MAX_PAGE. */
static int page_size(const char *s, long *n)
{
	size_t len = strlen(s), i;
	long v = 0;

	if (len == 0 || len > 7)
		return EINVAL;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	if (v > OCI_MAX_PAGE)
		return EINVAL;
	*n = v;
	return 0;
}

int oci_tags_query(const char *query, long *n, char last[OCI_MAX_TAG + 1])
{
	char count[8];
	int given, rc;

	*n = -1;
	rc = query_value(query, "n", count, sizeof(count), &given);
	if (!rc && given)
		rc = page_size(count, n);
	if (!rc)
		rc = query_value(query, "last", last, OCI_MAX_TAG + 1, &given);
	if (!rc && given && !oci_tag_valid(last, strlen(last)))
		rc = EINVAL;
	if (rc) {
		*n = -1;
		last[0] = '\0';
		return EINVAL;
	}
	return 0;
}

/* An RFC 6838 restricted-name: 1 to 127 bytes, a letter or digit first. */
static size_t restricted_name(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || !alnum(s[0]))
		return 0;
	for (i = 1; i < n && i < 127; i++)
		if (!alnum(s[i]) && (!s[i] || !strchr("!#$&^_.+-", s[i])))
			break;
	return i;
}

/* Whether s (n bytes) is a media type, type "/" subtype. */
static int media_type_valid(const char *s, size_t n)
{
	size_t t = restricted_name(s, n), sub;

	if (t == 0 || t == n || s[t] != '/')
		return 0;
	sub = n - t - 1;
	return sub > 0 && restricted_name(s + t + 1, sub) == sub;
}

int oci_referrers_query(const char *query, char type[OCI_MAX_MEDIA_TYPE + 1])
{
	int given;

	if (query_value(query, "artifactType", type, OCI_MAX_MEDIA_TYPE + 1,
			&given) ||
	    (given && !media_type_valid(type, strlen(type)))) {
		type[0] = '\0';
		return EINVAL;
	}
	return 0;
}
