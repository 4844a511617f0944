/* oci_auth: Bearer challenges and token answers, read (oci_auth.h). */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "common/log.h"
#include "common/oci/auth.h"

/* RFC 9110 tchar. */
static int tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static const char *ows(const char *p)
{
	return p + strspn(p, " \t");
}

/* Reads a token or quoted-string value at p into out (outlen bytes).
 * Returns the position after it, or NULL when it is bad or too long. */
static const char *value(const char *p, char *out, size_t outlen)
{
	size_t n = 0;

	if (*p != '"') {
		while (tchar(*p) || *p == '/' || *p == ':') {
			/* tokens, and the unquoted URLs registries send */
			if (n + 1 >= outlen)
				return NULL;
			out[n++] = *p++;
		}
		out[n] = '\0';
		return n ? p : NULL;
	}
	for (p++; *p != '"'; p++) {
		if (*p == '\\')
			p++;
		if (!*p || (unsigned char)*p < 0x20 || *p == 0x7f ||
		    n + 1 >= outlen)
			return NULL;
		out[n++] = *p;
	}
	out[n] = '\0';
	return p + 1;
}

int oci_challenge_parse(const char *v, struct oci_challenge *c)
{
	char name[64], scratch[OCI_AUTH_MAX_PARAM];
	const char *p = ows(v ? v : "");
	size_t n;

	memset(c, 0, sizeof(*c));
	if (strncasecmp(p, "Bearer", 6) != 0 || (p[6] && p[6] != ' ' &&
						   p[6] != '\t'))
		return ENOENT;
	p = ows(p + 6);
	while (*p) {
		char *out = scratch;

		for (n = 0; tchar(p[n]); n++)
			;
		if (!n || n >= sizeof(name))
			return EINVAL;
		memcpy(name, p, n);
		name[n] = '\0';
		p = ows(p + n);
		if (*p++ != '=')
			return EINVAL;
		p = ows(p);
		if (!strcasecmp(name, "realm"))
			out = c->realm;
		else if (!strcasecmp(name, "service"))
			out = c->service;
		else if (!strcasecmp(name, "scope"))
			out = c->scope;
		p = value(p, out, OCI_AUTH_MAX_PARAM);
		if (!p)
			return EINVAL;
		p = ows(p);
		if (*p && *p++ != ',')
			return EINVAL;
		p = ows(p);
	}
	if (strncmp(c->realm, "https://", 8) != 0 &&
	    strncmp(c->realm, "http://", 7) != 0)
		return EINVAL;
	return 0;
}

/* Whether s may go in an Authorization header as is. */
static int header_safe(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

int oci_token_parse(const char *data, size_t len, struct oci_token *t,
		    char *err, size_t errlen)
{
	struct json_reader r;
	int k = 0, type, rc = EINVAL, have = 0;
	long long v;

	memset(t, 0, sizeof(*t));
	t->expires_in = OCI_AUTH_DEFAULT_TTL;
	json_init(&r, data, len, OCI_AUTH_MAX_TOKEN * 2);
	if (json_value(&r) != JSON_OBJECT) {
		log_reason(err, errlen, "token: not a JSON object");
		goto out;
	}
	while ((k = json_key(&r)) == 1) {
		int is_token = !strcmp(buf_str(&r.str), "token") ||
			       !strcmp(buf_str(&r.str), "access_token"),
		    is_ttl = !strcmp(buf_str(&r.str), "expires_in");

		type = json_value(&r);
		if (type == JSON_ERROR)
			break;
		if (is_token && type == JSON_STRING && r.str.len) {
			/* both may come; "token" and "access_token" are the
			 * same one, so the first will do */
			if (have)
				continue;
			if (r.str.len >= sizeof(t->token) ||
			    !header_safe(buf_str(&r.str))) {
				log_reason(err, errlen, "token: a token too "
					   "long or with bytes a header cannot "
					   "carry");
				goto out;
			}
			memcpy(t->token, buf_str(&r.str), r.str.len + 1);
			have = 1;
		} else if (is_ttl && type == JSON_NUMBER &&
			   !json_integer(&r, &v) && v > 0) {
			t->expires_in = v > 86400 ? 86400 : (long)v;
		} else if ((type == JSON_OBJECT || type == JSON_ARRAY) &&
			   json_skip(&r)) {
			break;
		}
	}
	if (k != 0 || json_end(&r)) {
		log_reason(err, errlen, "token: %s", *r.err ? r.err : "bad JSON");
		goto out;
	}
	if (!have) {
		log_reason(err, errlen, "token: the answer has no token");
		goto out;
	}
	rc = 0;
out:
	json_free(&r);
	return rc;
}
