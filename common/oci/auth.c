/* oci_auth: Bearer challenges and token answers, read (oci_auth.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/hash/hmac.h"
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

/* The path markers after a repository name, each after a '/'. */
static const char *const name_ends[] = {"manifests/", "blobs/", "tags/",
					"referrers/"};

int oci_auth_path_name(const char *path, char *out, size_t len)
{
	const char *rest, *end = NULL;
	size_t n;

	if (strncmp(path, "/v2/", 4) != 0)
		return ENOENT;
	rest = path + 4;
	/* the last marker: a name may hold "blobs" as a component, a
	 * reference or an upload id holds no '/' */
	for (const char *p = strchr(rest, '/'); p; p = strchr(p + 1, '/'))
		for (size_t i = 0; i < sizeof(name_ends) / sizeof(*name_ends);
		     i++)
			if (p > rest && !strncmp(p + 1, name_ends[i],
						 strlen(name_ends[i])))
				end = p;
	if (!end)
		return ENOENT;
	n = (size_t)(end - rest);
	if (strspn(rest, "abcdefghijklmnopqrstuvwxyz0123456789._-/") < n)
		return EINVAL;
	if (n >= len)
		return ENAMETOOLONG;
	memcpy(out, rest, n);
	out[n] = '\0';
	return 0;
}

/* Whether s may go between the quotes of a challenge parameter. */
static int quotable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f ||
		    *s == '"' || *s == '\\')
			return 0;
	return 1;
}

int oci_auth_challenge(const char *realm, const char *name,
		       const char *actions, char *out, size_t len)
{
	int n;

	if (!realm || (strncmp(realm, "https://", 8) != 0 &&
		       strncmp(realm, "http://", 7) != 0) || !quotable(realm))
		return EINVAL;
	if (name && (!*name || !actions || !*actions || !quotable(name) ||
		     !quotable(actions) || strchr(name, ' ') ||
		     strchr(actions, ' ')))
		return EINVAL;
	if (name)
		n = snprintf(out, len, "Bearer realm=\"%s\",service=\"%s\","
			     "scope=\"repository:%s:%s\"", realm,
			     OCI_AUTH_SERVICE, name, actions);
	else
		n = snprintf(out, len, "Bearer realm=\"%s\",service=\"%s\"",
			     realm, OCI_AUTH_SERVICE);
	return n < 0 || (size_t)n >= len ? ENAMETOOLONG : 0;
}

/* Writes the hex HMAC of an anonymous token's 16 expiry digits. */
static int anon_mac(const unsigned char *key, size_t keylen,
		    const char *expiry, char hex[65])
{
	static const char label[] = "larder-anonymous:";
	unsigned char msg[sizeof(label) - 1 + 16];

	memcpy(msg, label, sizeof(label) - 1);
	memcpy(msg + sizeof(label) - 1, expiry, 16);
	return hmac_sha256_hex(key, keylen, msg, sizeof(msg), hex) ? ENOMEM
								 : 0;
}

int oci_anon_token_make(const unsigned char *key, size_t keylen,
			long long expires, char out[OCI_ANON_TEXT_LEN + 1])
{
	char expiry[17], mac[65];

	if (expires < 0 || !key || !keylen)
		return EINVAL;
	snprintf(expiry, sizeof(expiry), "%016llx", expires);
	if (anon_mac(key, keylen, expiry, mac))
		return ENOMEM;
	snprintf(out, OCI_ANON_TEXT_LEN + 1, OCI_ANON_PREFIX "%s_%s", expiry,
		 mac);
	return 0;
}

int oci_anon_token_check(const char *text, const unsigned char *key,
			 size_t keylen, long long now)
{
	static const char hexdigits[] = "0123456789abcdef";
	char expiry[17], mac[65];
	long long expires = 0;
	int good;

	if (strncmp(text, OCI_ANON_PREFIX, 3) != 0)
		return ENOENT;
	if (strlen(text) != OCI_ANON_TEXT_LEN || text[3 + 16] != '_' ||
	    strspn(text + 3, hexdigits) != 16 ||
	    strspn(text + 3 + 17, hexdigits) != 64 || !key || !keylen)
		return EINVAL;
	memcpy(expiry, text + 3, 16);
	expiry[16] = '\0';
	if (anon_mac(key, keylen, expiry, mac))
		return EINVAL;
	good = hmac_equal(mac, text + 3 + 17);
	if (!good)
		return EINVAL;
	for (int i = 0; i < 16; i++) {
		if (expires > (0x7fffffffffffffffLL >> 4))
			return EINVAL;
		expires = expires * 16 +
			  (long long)(strchr(hexdigits, expiry[i]) - hexdigits);
	}
	return now >= expires ? ETIMEDOUT : 0;
}

int oci_anon_bearer(const char *value, char out[OCI_ANON_TEXT_LEN + 1])
{
	size_t n;

	if (!value)
		return 0;
	value = ows(value);
	if (strncasecmp(value, "Bearer", 6) != 0 ||
	    (value[6] != ' ' && value[6] != '\t'))
		return 0;
	value = ows(value + 6);
	if (strncmp(value, OCI_ANON_PREFIX, 3) != 0)
		return 0;
	n = strlen(value);
	while (n && (value[n - 1] == ' ' || value[n - 1] == '\t'))
		n--;
	if (n > OCI_ANON_TEXT_LEN)
		n = 3;
	memcpy(out, value, n);
	out[n] = '\0';
	return 1;
}
