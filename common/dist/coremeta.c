#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/dist/coremeta.h"

static int is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* The headers coremeta keeps, and where. */
struct field {
	const char *key;
	size_t off, size;
	int cut; /* a long value is cut, not refused */
};

static const struct field fields[] = {
    {"Metadata-Version", offsetof(struct coremeta, metadata_version),
     sizeof(((struct coremeta *)0)->metadata_version), 0},
    {"Name", offsetof(struct coremeta, name),
     sizeof(((struct coremeta *)0)->name), 0},
    {"Version", offsetof(struct coremeta, version),
     sizeof(((struct coremeta *)0)->version), 0},
    {"Requires-Python", offsetof(struct coremeta, requires_python),
     sizeof(((struct coremeta *)0)->requires_python), 0},
    {"Summary", offsetof(struct coremeta, summary),
     sizeof(((struct coremeta *)0)->summary), 1},
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/* Appends the n bytes at s to the value dst (size bytes, *len used),
 * marking *over when they do not fit. */
static void append(char *dst, size_t size, size_t *len, const char *s, size_t n,
                   int *over)
{
	if (*len + n >= size) {
		*over = 1;
		n = size - 1 - *len;
	}
	memcpy(dst + *len, s, n);
	*len += n;
	dst[*len] = '\0';
}

/* Drops trailing whitespace and a UTF-8 sequence cut short. */
static void trim(char *s, size_t *len, int over)
{
	if (over) {
		size_t i = *len;

		while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
			i--;
		if (i > 0 && ((unsigned char)s[i - 1] & 0x80))
			i--;
		else
			i = *len;
		*len = i;
	}
	while (*len > 0 && (is_blank(s[*len - 1]) || s[*len - 1] == '\r'))
		(*len)--;
	s[*len] = '\0';
}

int coremeta_parse(const char *buf, size_t len, struct coremeta *m, char *err,
                   size_t errlen)
{
	size_t pos = 0, line = 0, vlen = 0;
	int cur = -1, over = 0, seen[NFIELDS] = {0};
	char *dst = NULL;

	if (err && errlen)
		err[0] = '\0';
	if (!m || (!buf && len))
		return EINVAL;
	memset(m, 0, sizeof(*m));
	if (memchr(buf, '\0', len)) {
		snprintf(err, errlen, "metadata holds a NUL byte");
		return EINVAL;
	}
	while (pos < len) {
		const char *s = buf + pos, *nl, *colon;
		size_t n, end;

		nl = memchr(s, '\n', len - pos);
		end = nl ? (size_t)(nl - s) : len - pos;
		n = end > 0 && s[end - 1] == '\r' ? end - 1 : end;
		line++;
		if (pos > COREMETA_MAX_HEADERS) {
			snprintf(err, errlen,
			         "metadata headers exceed %d bytes",
			         COREMETA_MAX_HEADERS);
			return EINVAL;
		}
		pos += end + (nl ? 1 : 0);
		if (n == 0)
			break; /* the description follows */
		if (is_blank(s[0])) {
			if (line == 1) {
				snprintf(err, errlen,
				         "metadata starts with a continuation");
				return EINVAL;
			}
			if (dst)
				append(dst, fields[cur].size, &vlen, s, n,
				       &over);
			continue;
		}
		if (dst) {
			trim(dst, &vlen, over);
			if (over && !fields[cur].cut) {
				snprintf(err, errlen, "metadata %s is too long",
				         fields[cur].key);
				return EINVAL;
			}
		}
		dst = NULL;
		colon = memchr(s, ':', n);
		if (!colon || colon == s) {
			snprintf(err, errlen,
			         "metadata line %zu is not a header", line);
			return EINVAL;
		}
		for (size_t i = 0; i < NFIELDS; i++) {
			size_t kl = strlen(fields[i].key);

			if ((size_t)(colon - s) != kl ||
			    strncasecmp(s, fields[i].key, kl) != 0)
				continue;
			if (seen[i]++) {
				snprintf(err, errlen, "metadata has %s twice",
				         fields[i].key);
				return EINVAL;
			}
			cur = (int)i;
			dst = (char *)m + fields[i].off;
			vlen = 0;
			over = 0;
			colon++;
			while (colon < s + n && is_blank(*colon))
				colon++;
			append(dst, fields[i].size, &vlen, colon,
			       (size_t)(s + n - colon), &over);
		}
	}
	if (dst) {
		trim(dst, &vlen, over);
		if (over && !fields[cur].cut) {
			snprintf(err, errlen, "metadata %s is too long",
			         fields[cur].key);
			return EINVAL;
		}
	}
	m->body = pos;
	for (size_t i = 0; i < 3; i++) {
		if (!seen[i] || !*((char *)m + fields[i].off)) {
			snprintf(err, errlen, "metadata has no %s",
			         fields[i].key);
			return EINVAL;
		}
	}
	return 0;
}

/* Appends the header's line s (n bytes, the first after its colon) to v
 * as pkginfo unfolds it. */
static int unfold(struct buf *v, int description, int first, const char *s,
		  size_t n)
{
	if (description) {
		if (!first && n >= 8 && strncmp(s, "        ", 8) == 0)
			s += 8, n -= 8;
		else if (!first && n >= 8 && strncmp(s, "       |", 8) == 0)
			s += 8, n -= 8;
		if (!first && buf_add(v, "\n", 1))
			return E2BIG;
		return buf_add(v, s, n);
	}
	while (n && is_blank(*s))
		s++, n--;
	while (n && is_blank(s[n - 1]))
		n--;
	if (!n)
		return 0;
	if (v->len && buf_add(v, " ", 1))
		return E2BIG;
	return buf_add(v, s, n);
}

/* Hands the header collected in v to fn, trailing space dropped. */
static int emit(struct buf *v, const char *name, size_t nlen,
		int (*fn)(const char *, size_t, const char *, void *),
		void *ctx)
{
	while (v->len && (is_blank(v->data[v->len - 1]) ||
			  v->data[v->len - 1] == '\n'))
		v->data[--v->len] = '\0';
	return fn(name, nlen, buf_str(v), ctx);
}

int coremeta_each(const char *buf, size_t len,
		  int (*fn)(const char *name, size_t nlen, const char *value,
			    void *ctx),
		  void *ctx, size_t *body)
{
	const char *name = NULL;
	size_t pos = 0, nlen = 0;
	int description = 0, rc = 0;
	struct buf v;

	if (body)
		*body = len;
	if (!buf && len)
		return EINVAL;
	if (len && memchr(buf, '\0', len))
		return EINVAL;
	buf_init(&v, COREMETA_MAX_VALUE);
	while (pos < len) {
		const char *s = buf + pos, *nl, *colon;
		size_t n, end;

		nl = memchr(s, '\n', len - pos);
		end = nl ? (size_t)(nl - s) : len - pos;
		n = end > 0 && s[end - 1] == '\r' ? end - 1 : end;
		pos += end + (nl ? 1 : 0);
		if (n == 0)
			break;
		if (is_blank(s[0])) {
			/* a value too long is cut, not refused */
			if (name && unfold(&v, description, 0, s, n) == ENOMEM)
				rc = ENOMEM;
			if (rc)
				goto out;
			continue;
		}
		if (name && (rc = emit(&v, name, nlen, fn, ctx)))
			goto out;
		name = NULL;
		buf_reset(&v);
		colon = memchr(s, ':', n);
		if (!colon || colon == s)
			continue;
		name = s;
		nlen = (size_t)(colon - s);
		description = nlen == 11 && strncasecmp(s, "Description", 11) == 0;
		colon++;
		while (colon < s + n && is_blank(*colon))
			colon++;
		if (unfold(&v, description, 1, colon, (size_t)(s + n - colon)) ==
		    ENOMEM) {
			rc = ENOMEM;
			goto out;
		}
	}
	if (name)
		rc = emit(&v, name, nlen, fn, ctx);
	if (body)
		*body = pos;
out:
	buf_free(&v);
	return rc;
}

/* Whether the marker text s mentions the variable extra (outside quotes). */
static int mentions_extra(const char *s)
{
	char quote = 0;

	for (const char *p = s; *p; p++) {
		if (quote) {
			if (*p == quote)
				quote = 0;
			continue;
		}
		if (*p == '"' || *p == '\'') {
			quote = *p;
			continue;
		}
		if (strncmp(p, "extra", 5) == 0 &&
		    (p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
		    !(isalnum((unsigned char)p[5]) || p[5] == '_'))
			return 1;
	}
	return 0;
}

struct requires_ctx {
	char (*names)[NAMES_MAX_PROJECT + 1];
	size_t max, n;
};

/* coremeta_each() callback of coremeta_requires(). */
static int one_require(const char *name, size_t nlen, const char *value,
		       void *ctx)
{
	struct requires_ctx *rq = ctx;
	char raw[NAMES_MAX_PROJECT + 1], norm[NAMES_MAX_PROJECT + 1];
	const char *p = value, *semi;
	size_t n = 0;

	if (nlen != 13 || strncasecmp(name, "Requires-Dist", 13) != 0 ||
	    rq->n >= rq->max)
		return 0;
	semi = strchr(value, ';');
	if (semi && mentions_extra(semi + 1))
		return 0;
	while (is_blank(*p))
		p++;
	while (n < sizeof(raw) &&
	       (isalnum((unsigned char)p[n]) || p[n] == '.' || p[n] == '_' ||
		p[n] == '-'))
		n++;
	/* longer than a project name may be: no index has it (cut short,
	 * it would name another project) */
	if (n == sizeof(raw))
		return 0;
	memcpy(raw, p, n);
	raw[n] = '\0';
	p += n;
	/* a direct reference (name @ url) is not looked up in an index */
	while (is_blank(*p))
		p++;
	if (*p == '[')
		p = strchr(p, ']') ? strchr(p, ']') + 1 : p;
	while (is_blank(*p))
		p++;
	if (*p == '@' || names_normalize(raw, norm, sizeof(norm)))
		return 0;
	for (size_t i = 0; i < rq->n; i++)
		if (strcmp(rq->names[i], norm) == 0)
			return 0;
	memcpy(rq->names[rq->n++], norm, sizeof(norm));
	return 0;
}

int coremeta_requires(const char *buf, size_t len,
		      char (*names)[NAMES_MAX_PROJECT + 1], size_t max,
		      size_t *n)
{
	struct requires_ctx rq = {names, max, 0};
	int rc = coremeta_each(buf, len, one_require, &rq, NULL);

	*n = rq.n;
	return rc;
}

struct license_ctx {
	char *out;
	size_t len, used;
	int expression;  /* out holds a License-Expression */
};

/* Appends text to lc's classifiers, "; " between them, cut at its size. */
static void license_add(struct license_ctx *lc, const char *text)
{
	int n;

	if (lc->used + 1 >= lc->len)
		return;
	n = snprintf(lc->out + lc->used, lc->len - lc->used, "%s%s",
		     lc->used ? "; " : "", text);
	if (n > 0)
		lc->used += (size_t)n < lc->len - lc->used ?
				    (size_t)n : lc->len - lc->used - 1;
}

/* coremeta_each() callback of coremeta_license(). */
static int one_license(const char *name, size_t nlen, const char *value,
		       void *ctx)
{
	struct license_ctx *lc = ctx;

	if (nlen == 18 && strncasecmp(name, "License-Expression", 18) == 0) {
		snprintf(lc->out, lc->len, "%s", value);
		lc->expression = 1;
		return 0;
	}
	if (!lc->expression && nlen == 10 &&
	    strncasecmp(name, "Classifier", 10) == 0 &&
	    strncmp(value, "License ::", 10) == 0)
		license_add(lc, value);
	return 0;
}

int coremeta_license(const char *buf, size_t len, char *out, size_t outlen)
{
	struct license_ctx lc = {out, outlen, 0, 0};

	if (outlen)
		*out = '\0';
	return outlen ? coremeta_each(buf, len, one_license, &lc, NULL) : 0;
}
