#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/url.h"

/* The most a host name can be (253 for DNS, more for an IPv6 literal). */
#define HOST_MAX 256

/* A piece of a URI reference; p is NULL when the piece is not there. */
struct span {
	const char *p;
	size_t n;
};

/* RFC 3986 section 3: the five components of a URI reference. */
struct uri {
	struct span scheme;
	struct span auth;
	struct span path;
	struct span query;
	struct span frag;
};

static int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int is_hex(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Returns 1 when every byte of s is one RFC 3986 allows in a URI reference
 * (unreserved, reserved or a well-formed %XX), else 0. Spaces, controls,
 * quotes, backslashes and bytes outside ASCII are all refused. */
static int chars_ok(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '%') {
			if (!is_hex(s[1]) || !is_hex(s[2]))
				return 0;
			s += 2;
			continue;
		}
		if (is_alpha(c) || is_digit(c))
			continue;
		if (!strchr("-._~:/?#[]@!$&'()*+,;=", c))
			return 0;
	}
	return 1;
}

/* Splits the URI reference s into its components (RFC 3986 appendix B,
 * with the scheme checked). Returns 0 or EINVAL. */
static int parse(const char *s, struct uri *u)
{
	const char *p = s;
	size_t n;

	memset(u, 0, sizeof(*u));
	if (!chars_ok(s))
		return EINVAL;
	n = strcspn(p, ":/?#");
	if (p[n] == ':') {
		/* a colon in the first segment: only a scheme may come here */
		if (n == 0 || !is_alpha(p[0]))
			return EINVAL;
		for (size_t i = 1; i < n; i++)
			if (!is_alpha(p[i]) && !is_digit(p[i]) &&
			    !strchr("+-.", p[i]))
				return EINVAL;
		u->scheme.p = p;
		u->scheme.n = n;
		p += n + 1;
	}
	if (p[0] == '/' && p[1] == '/') {
		p += 2;
		u->auth.p = p;
		u->auth.n = strcspn(p, "/?#");
		p += u->auth.n;
	}
	u->path.p = p;
	u->path.n = strcspn(p, "?#");
	p += u->path.n;
	if (*p == '?') {
		p++;
		u->query.p = p;
		u->query.n = strcspn(p, "#");
		p += u->query.n;
	}
	if (*p == '#') {
		p++;
		u->frag.p = p;
		u->frag.n = strlen(p);
	}
	return 0;
}

static int starts(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && memcmp(s, prefix, k) == 0;
}

static int equals(const char *s, size_t n, const char *word)
{
	return n == strlen(word) && memcmp(s, word, n) == 0;
}

/* Removes the "." and ".." segments of the path in[0..n) (RFC 3986 section
 * 5.2.4) and appends the result to out. Returns 0 or an errno from buf. */
static int remove_dots(const char *in, size_t n, struct buf *out)
{
	char *w;
	size_t i = 0, o = 0;
	int err;

	w = malloc(n + 1);
	if (!w)
		return ENOMEM;
	while (i < n) {
		const char *s = in + i;
		size_t rest = n - i;

		if (starts(s, rest, "../")) {
			i += 3;
		} else if (starts(s, rest, "./")) {
			i += 2;
		} else if (starts(s, rest, "/./")) {
			i += 2;
		} else if (equals(s, rest, "/.")) {
			w[o++] = '/';
			i += 2;
		} else if (starts(s, rest, "/../") || equals(s, rest, "/..")) {
			while (o > 0 && w[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
			if (rest == 3)
				w[o++] = '/';
			i += 3;
		} else if (equals(s, rest, ".") || equals(s, rest, "..")) {
			i = n;
		} else {
			if (*s == '/')
				w[o++] = in[i++];
			while (i < n && in[i] != '/')
				w[o++] = in[i++];
		}
	}
	err = buf_add(out, w, o);
	free(w);
	return err;
}

/* Appends the target path of ref against base (RFC 3986 section 5.2.2 and
 * the merge of 5.2.3), dot segments removed. */
static int target_path(const struct uri *base, const struct uri *ref,
		       struct buf *out)
{
	const struct span *bp = &base->path;
	char *merged;
	size_t keep = 0;
	int err;

	if (ref->scheme.p || ref->auth.p ||
	    (ref->path.n && *ref->path.p == '/'))
		return remove_dots(ref->path.p, ref->path.n, out);
	if (ref->path.n == 0)
		return buf_add(out, bp->p, bp->n);
	merged = malloc(bp->n + ref->path.n + 2);
	if (!merged)
		return ENOMEM;
	if (base->auth.p && bp->n == 0) {
		merged[keep++] = '/';
	} else {
		for (size_t i = bp->n; i > 0; i--) {
			if (bp->p[i - 1] == '/') {
				keep = i;
				break;
			}
		}
		memcpy(merged, bp->p, keep);
	}
	memcpy(merged + keep, ref->path.p, ref->path.n);
	err = remove_dots(merged, keep + ref->path.n, out);
	free(merged);
	return err;
}

int url_resolve(const char *base, const char *ref, struct buf *out,
		struct buf *frag)
{
	struct uri b, r;
	const struct span *scheme, *auth, *query;
	struct buf res;
	char host[HOST_MAX];
	int err;

	buf_init(&res, out->max);
	err = parse(base, &b);
	if (!err)
		err = parse(ref, &r);
	if (err)
		goto out;
	err = EINVAL;
	if (!b.scheme.p)
		goto out;
	scheme = r.scheme.p ? &r.scheme : &b.scheme;
	auth = r.scheme.p || r.auth.p ? &r.auth : &b.auth;
	query = &r.query;
	if (!r.scheme.p && !r.auth.p && r.path.n == 0 && !r.query.p)
		query = &b.query;
	if (!auth->p)
		goto out;
	for (size_t i = 0; i < scheme->n; i++) {
		char c = (char)lower(scheme->p[i]);

		err = buf_add(&res, &c, 1);
		if (err)
			goto out;
	}
	err = buf_adds(&res, "://");
	if (!err)
		err = buf_add(&res, auth->p, auth->n);
	if (!err)
		err = target_path(&b, &r, &res);
	if (!err && query->p) {
		err = buf_adds(&res, "?");
		if (!err)
			err = buf_add(&res, query->p, query->n);
	}
	if (err)
		goto out;
	/* checks the scheme is http(s) and the host is sound */
	err = url_host(buf_str(&res), host, sizeof(host));
	if (err) {
		err = EINVAL;
		goto out;
	}
	err = buf_add(out, res.data, res.len);
	if (!err && frag && r.frag.p)
		err = buf_add(frag, r.frag.p, r.frag.n);
out:
	buf_free(&res);
	return err;
}

/* Splits an absolute http(s) URL into its lowercased host (no userinfo,
 * no port), its port (the scheme's default when none is written) and
 * whether it is https. Returns 0, EINVAL, or ENAMETOOLONG. */
static int endpoint(const char *url, char *host, size_t hostlen, long *port,
		    int *https)
{
	struct uri u;
	const char *h, *at, *end;
	size_t n;

	if (parse(url, &u) || !u.scheme.p || !u.auth.p)
		return EINVAL;
	if (u.scheme.n == 4 && strncasecmp(u.scheme.p, "http", 4) == 0)
		*https = 0;
	else if (u.scheme.n == 5 && strncasecmp(u.scheme.p, "https", 5) == 0)
		*https = 1;
	else
		return EINVAL;
	*port = *https ? 443 : 80;
	h = u.auth.p;
	end = u.auth.p + u.auth.n;
	at = memchr(h, '@', (size_t)(end - h));
	if (at) {
		/* two '@' are read differently by different parsers */
		if (memchr(at + 1, '@', (size_t)(end - at - 1)))
			return EINVAL;
		h = at + 1;
	}
	n = 0;
	if (h < end && *h == '[') {
		while (h + n < end && h[n] != ']') {
			if (n && !is_hex(h[n]) && h[n] != ':' && h[n] != '.')
				return EINVAL;
			n++;
		}
		if (h + n == end || n < 3)
			return EINVAL;
		n++;
	} else {
		while (h + n < end && h[n] != ':') {
			if (!is_alpha(h[n]) && !is_digit(h[n]) &&
			    !strchr("-._", h[n]))
				return EINVAL;
			n++;
		}
		if (n == 0)
			return EINVAL;
	}
	if (h + n < end) {
		const char *p = h + n;
		size_t plen = (size_t)(end - p) - 1;
		long v = 0;

		if (*p != ':' || plen > 5)
			return EINVAL;
		for (size_t i = 1; i <= plen; i++) {
			if (!is_digit(p[i]))
				return EINVAL;
			v = v * 10 + (p[i] - '0');
		}
		if (v > 65535)
			return EINVAL;
		if (plen)
			*port = v;
	}
	if (n >= hostlen)
		return ENAMETOOLONG;
	for (size_t i = 0; i < n; i++)
		host[i] = (char)lower(h[i]);
	host[n] = '\0';
	return 0;
}

int url_origin(const char *url, char *out, size_t len)
{
	char host[HOST_MAX];
	long port;
	int https, err, n;

	err = endpoint(url, host, sizeof(host), &port, &https);
	if (err)
		return err;
	n = snprintf(out, len, "%s://%s:%ld", https ? "https" : "http", host,
		     port);
	return n < 0 || (size_t)n >= len ? ENAMETOOLONG : 0;
}

int url_host(const char *url, char *host, size_t hostlen)
{
	long port;
	int https;

	return endpoint(url, host, hostlen, &port, &https);
}

/* Returns the length of the host part of a trusted-list entry: up to a
 * port, the closing bracket of an IPv6 literal kept. */
static size_t entry_host_len(const char *s, size_t n)
{
	const char *end;

	if (n && s[0] == '[') {
		end = memchr(s, ']', n);
		return end ? (size_t)(end - s) + 1 : n;
	}
	end = memchr(s, ':', n);
	return end ? (size_t)(end - s) : n;
}

/* True when the lowercase host (hlen bytes) is the entry's host (k bytes
 * at e): the same name in any case, or for "*.example.com" a name that ends
 * in ".example.com" with at least one non-empty label before it. */
static int host_matches(const char *host, size_t hlen, const char *e,
			size_t k)
{
	if (k > 2 && e[0] == '*' && e[1] == '.')
		return hlen > k - 1 && host[hlen - k] != '.' &&
		       strncasecmp(host + hlen - (k - 1), e + 1, k - 1) == 0;
	return k == hlen && strncasecmp(e, host, k) == 0;
}

int url_host_trusted(const char *url, const char *base_url,
		     const char *trusted)
{
	char host[HOST_MAX], bhost[HOST_MAX];
	const char *s = trusted;
	long port, bport = 0;
	int https, bhttps = 0, have_base;
	size_t hlen;

	if (endpoint(url, host, sizeof(host), &port, &https))
		return 0;
	have_base = base_url &&
		    !endpoint(base_url, bhost, sizeof(bhost), &bport, &bhttps);
	/* an upstream served over https keeps its files on https */
	if (have_base && bhttps && !https)
		return 0;
	/* the upstream's own host and port; another port of it only when
	 * the list names it (a mirror's files on a second port) */
	if (have_base && strcmp(host, bhost) == 0 && port == bport)
		return 1;
	if (!s)
		return 0;
	hlen = strlen(host);
	while (*s) {
		size_t n, k;
		long want = https ? 443 : 80;

		s += strspn(s, " \t\r\n,");
		n = strcspn(s, " \t\r\n,");
		k = entry_host_len(s, n);
		if (k < n && s[k] == ':') {
			want = 0;
			for (size_t i = k + 1; i < n && is_digit(s[i]); i++)
				want = want * 10 + (s[i] - '0');
		}
		if (k && port == want && host_matches(host, hlen, s, k))
			return 1;
		s += n;
	}
	return 0;
}

/* Whether c ends a URL written in running text. */
static int text_end(char c)
{
	return c == '\0' || (unsigned char)c <= ' ' || c == 0x7f ||
	       strchr("\"'<>`\\", c) != NULL;
}

/* Whether the query parameter name[0..n) names a secret: its name holds
 * one of these words, in any case (AWS's X-Amz-Signature, X-Amz-Credential
 * and X-Amz-Security-Token, Azure's sig, GCS's X-Goog-Signature,
 * CloudFront's Signature and Key-Pair-Id, a plain token= or api_key=). */
static int secret_name(const char *name, size_t n)
{
	static const char *const words[] = {"sig", "token", "secret", "pass",
					    "key", "auth", "credential"};

	for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
		size_t k = strlen(words[w]);

		for (size_t i = 0; i + k <= n; i++)
			if (!strncasecmp(name + i, words[w], k))
				return 1;
	}
	return 0;
}

/* Appends s[0..n) to out (room for len with its NUL) at *at, as much as
 * fits. */
static void put(char *out, size_t len, size_t *at, const char *s, size_t n)
{
	if (*at + 1 >= len)
		return;
	if (n > len - 1 - *at)
		n = len - 1 - *at;
	memcpy(out + *at, s, n);
	*at += n;
	out[*at] = '\0';
}

/* Writes the authority of a URL that starts at s (after "://") to out,
 * its userinfo masked. Returns the bytes of s it stood for. */
static size_t redact_authority(const char *s, char *out, size_t len,
			       size_t *at)
{
	size_t end = 0, user_end;
	const char *userinfo_end = NULL;

	while (!text_end(s[end]) && !strchr("/?#", s[end])) {
		if (s[end] == '@')
			userinfo_end = s + end;
		end++;
	}
	if (!userinfo_end)
		return 0; /* nothing to mask: copied as it comes */
	user_end = strcspn(s, ":");
	if (s + user_end < userinfo_end) {
		put(out, len, at, s, user_end);
		put(out, len, at, ":***@", 5);
	} else {
		put(out, len, at, "***@", 4); /* a lone token as the user */
	}
	return (size_t)(userinfo_end - s) + 1;
}

const char *url_redact(const char *text, char *out, size_t len)
{
	size_t at = 0, i = 0;
	int in_url = 0, in_query = 0, in_frag = 0;

	if (!len)
		return out;
	out[0] = '\0';
	while (text[i]) {
		if (!strncmp(text + i, "://", 3)) {
			put(out, len, &at, "://", 3);
			i += 3;
			i += redact_authority(text + i, out, len, &at);
			in_url = 1;
			in_query = in_frag = 0;
			continue;
		}
		if (in_url && text_end(text[i])) {
			in_url = in_query = in_frag = 0;
		} else if (in_url && text[i] == '#') {
			in_query = 0;
			in_frag = 1;
		} else if (in_url && !in_frag && (text[i] == '?' ||
				      (in_query && strchr("&;", text[i])))) {
			size_t name = i + 1, n = 0;

			in_query = 1;
			while (!text_end(text[name + n]) &&
			       !strchr("=&;#", text[name + n]) &&
			       strncmp(text + name + n, "://", 3) != 0)
				n++;
			if (text[name + n] == '=' && secret_name(text + name, n)) {
				size_t v = name + n + 1;

				put(out, len, &at, text + i, n + 2);
				put(out, len, &at, "***", 3);
				/* to the next parameter, or a ": " after it */
				while (!text_end(text[v]) && !strchr("&;#", text[v]) &&
				       !(text[v] == ':' && text_end(text[v + 1])))
					v++;
				i = v;
				continue;
			}
		}
		put(out, len, &at, text + i, 1);
		i++;
	}
	return out;
}
