#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/dist/distname.h"
#include "common/dist/wheeltag.h"

/* Locale-free character classes. */
static int is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static char lower(char ch)
{
	return (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch;
}

static int is_alnum(char ch)
{
	ch = lower(ch);
	return is_digit(ch) || (ch >= 'a' && ch <= 'z');
}

static int is_sep(char ch)
{
	return ch == '-' || ch == '_' || ch == '.';
}

static int is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' ||
	       ch == '\f' || ch == '\v';
}

/* Copies n bytes of s to out as a string. */
static int copy(char *out, size_t outlen, const char *s, size_t n)
{
	if (n == 0 || n >= outlen)
		return EINVAL;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

static int ends_with(const char *s, size_t len, const char *suffix)
{
	size_t sl = strlen(suffix);

	return len > sl && strcmp(s + len - sl, suffix) == 0;
}

int distname_parse(const char *filename, struct distname *out)
{
	size_t len, ext = 0, dash = 0;

	if (!filename || !out)
		return EINVAL;
	memset(out, 0, sizeof(*out));
	if (!names_is_filename(filename))
		return EINVAL;
	len = strlen(filename);
	if (ends_with(filename, len, ".whl")) {
		out->kind = DISTNAME_WHEEL;
		return wheeltag_split(filename, out->name, sizeof(out->name),
		                      out->version, sizeof(out->version), NULL,
		                      0);
	}
	if (ends_with(filename, len, ".tar.gz")) {
		out->kind = DISTNAME_SDIST_TGZ;
		ext = 7;
	} else if (ends_with(filename, len, ".zip")) {
		out->kind = DISTNAME_SDIST_ZIP;
		ext = 4;
	} else {
		return EINVAL;
	}
	len -= ext;
	for (size_t i = 0; i < len; i++)
		if (filename[i] == '-')
			dash = i;
	if (dash == 0 || dash + 1 >= len)
		return EINVAL;
	if (copy(out->name, sizeof(out->name), filename, dash) ||
	    copy(out->version, sizeof(out->version), filename + dash + 1,
	         len - dash - 1))
		return EINVAL;
	return 0;
}

/* The canonicaliser's cursor and output. */
struct vc {
	const char *p, *end;
	char *out;
	size_t n, len;
	int full;
};

static void put(struct vc *c, const char *s, size_t n)
{
	if (c->n + n >= c->len) {
		c->full = 1;
		return;
	}
	memcpy(c->out + c->n, s, n);
	c->n += n;
}

/* Consumes a run of digits and writes it without leading zeros.
 * Returns 0, or EINVAL when there is none. */
static int number(struct vc *c)
{
	const char *s = c->p;

	while (c->p < c->end && is_digit(*c->p))
		c->p++;
	if (c->p == s)
		return EINVAL;
	while (s + 1 < c->p && *s == '0')
		s++;
	put(c, s, (size_t)(c->p - s));
	return 0;
}

/* When the letters at the cursor (any case) are word, consumes them. */
static int word(struct vc *c, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(c->end - c->p) < n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (lower(c->p[i]) != word[i])
			return 0;
	if (c->p + n < c->end && lower(c->p[n]) >= 'a' && lower(c->p[n]) <= 'z')
		return 0;
	c->p += n;
	return 1;
}

/* An optional separator, then an optional number (0 when absent). */
static void seg_number(struct vc *c)
{
	const char *save = c->p;

	if (c->p < c->end && is_sep(*c->p))
		c->p++;
	if (c->p < c->end && is_digit(*c->p)) {
		number(c);
		return;
	}
	c->p = save;
	put(c, "0", 1);
}

/* Tries one of words after an optional separator; the spelling is out. */
static int label(struct vc *c, const char *const *words, size_t nwords,
                 const char *spell)
{
	const char *save = c->p;

	if (c->p < c->end && is_sep(*c->p))
		c->p++;
	for (size_t i = 0; i < nwords; i++)
		if (word(c, words[i])) {
			put(c, spell, strlen(spell));
			seg_number(c);
			return 1;
		}
	c->p = save;
	return 0;
}

static const char *const pre_a[] = {"alpha", "a"};
static const char *const pre_b[] = {"beta", "b"};
static const char *const pre_rc[] = {"preview", "pre", "rc", "c"};
static const char *const post_w[] = {"post", "rev", "r"};
static const char *const dev_w[] = {"dev"};

int distname_version_canon(const char *v, char *out, size_t outlen)
{
	struct vc c = {0};
	const char *bang;

	if (!out || outlen == 0)
		return ENAMETOOLONG;
	out[0] = '\0';
	if (!v)
		return EINVAL;
	c.p = v;
	c.end = v + strlen(v);
	c.out = out;
	c.len = outlen;
	while (c.p < c.end && is_space(*c.p))
		c.p++;
	while (c.end > c.p && is_space(c.end[-1]))
		c.end--;
	if (c.p < c.end && lower(*c.p) == 'v')
		c.p++;
	bang = memchr(c.p, '!', (size_t)(c.end - c.p));
	if (bang) {
		const char *s = c.p;

		while (s < bang && *s == '0')
			s++;
		if (c.p == bang)
			return EINVAL;
		for (const char *q = c.p; q < bang; q++)
			if (!is_digit(*q))
				return EINVAL;
		if (s < bang) {
			put(&c, s, (size_t)(bang - s));
			put(&c, "!", 1);
		}
		c.p = bang + 1;
	}
	if (number(&c))
		return EINVAL;
	while (c.p + 1 < c.end && *c.p == '.' && is_digit(c.p[1])) {
		c.p++;
		put(&c, ".", 1);
		number(&c);
	}
	if (!label(&c, pre_a, 2, "a") && !label(&c, pre_b, 2, "b"))
		label(&c, pre_rc, 4, "rc");
	if (c.p + 1 < c.end && *c.p == '-' && is_digit(c.p[1])) {
		c.p++;
		put(&c, ".post", 5);
		number(&c);
	} else {
		label(&c, post_w, 3, ".post");
	}
	label(&c, dev_w, 1, ".dev");
	if (c.p < c.end && *c.p == '+') {
		c.p++;
		put(&c, "+", 1);
		for (;;) {
			const char *s = c.p;

			while (c.p < c.end && is_alnum(*c.p)) {
				char ch = lower(*c.p++);

				put(&c, &ch, 1);
			}
			if (c.p == s)
				return EINVAL;
			if (c.p == c.end)
				break;
			if (!is_sep(*c.p))
				return EINVAL;
			c.p++;
			put(&c, ".", 1);
		}
	}
	if (c.p != c.end)
		return EINVAL;
	if (c.full) {
		out[0] = '\0';
		return ENAMETOOLONG;
	}
	out[c.n] = '\0';
	return 0;
}

/* For an sdist, the split of its name part whose name normalises to
 * project (distname_parse() split at the last '-'). */
static int sdist_split(const char *filename, const char *project,
                       struct distname *d)
{
	char name[NAMES_MAX_PROJECT + 1], norm[NAMES_MAX_PROJECT + 1];
	size_t len = strlen(filename);

	len -= d->kind == DISTNAME_SDIST_TGZ ? 7 : 4;
	for (size_t i = 1; i + 1 < len && i <= NAMES_MAX_PROJECT; i++) {
		if (filename[i] != '-')
			continue;
		memcpy(name, filename, i);
		name[i] = '\0';
		if (names_normalize(name, norm, sizeof(norm)) ||
		    strcmp(norm, project) != 0)
			continue;
		if (len - i - 1 >= sizeof(d->version))
			return EINVAL;
		memcpy(d->name, name, i + 1);
		memcpy(d->version, filename + i + 1, len - i - 1);
		d->version[len - i - 1] = '\0';
		return 0;
	}
	return ENOENT;
}

int distname_check(const char *filename, const char *name, const char *version,
                   struct distname *out, char *err, size_t errlen)
{
	char project[NAMES_MAX_PROJECT + 1], canon[DISTNAME_VERSION_MAX];
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!filename || !name || !version || !out)
		return EINVAL;
	if (distname_parse(filename, out)) {
		snprintf(err, errlen,
		         "%.80s: not a wheel or sdist file name "
		         "(NAME-VERSION.tar.gz, .zip or -PY-ABI-PLAT.whl)",
		         filename);
		return EINVAL;
	}
	if (names_normalize(name, project, sizeof(project))) {
		snprintf(err, errlen, "project name %.80s is not valid", name);
		return EINVAL;
	}
	if (distname_version_canon(version, canon, sizeof(canon))) {
		snprintf(err, errlen, "version %.80s is not a PEP 440 version",
		         version);
		return EINVAL;
	}
	if (out->kind != DISTNAME_WHEEL) {
		rc = sdist_split(filename, project, out);
		if (rc == EINVAL) {
			snprintf(err, errlen, "%.80s: version part too long",
			         filename);
			return EINVAL;
		}
	}
	if (names_normalize(out->name, out->project, sizeof(out->project)) ||
	    strcmp(out->project, project) != 0) {
		snprintf(err, errlen,
		         "filename project %.80s does not match project %.80s",
		         out->name, name);
		return EINVAL;
	}
	if (distname_version_canon(out->version, out->canon,
	                           sizeof(out->canon))) {
		snprintf(err, errlen,
		         "filename version %.80s is not a PEP 440 version",
		         out->version);
		return EINVAL;
	}
	if (strcmp(out->canon, canon) != 0) {
		snprintf(err, errlen,
		         "filename version %.80s does not match version %.80s",
		         out->version, version);
		return EINVAL;
	}
	return 0;
}
