#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/hex.h"
#include "common/names.h"

/* Locale-free character classes: names are bytes, not text. */
static int is_alnum(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9');
}

static int is_sep(unsigned char ch)
{
	return ch == '-' || ch == '_' || ch == '.';
}

static unsigned char lower(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return (unsigned char)(ch - 'A' + 'a');
	return ch;
}

/* Writes "" to out when there is room, so a failed call leaves no stale
 * name behind. */
int names_normalize(const char *name, char *out, size_t outlen)
{
	size_t len, i, n = 0;

	if (out && outlen)
		out[0] = '\0';
	if (!name)
		return EINVAL;
	len = strnlen(name, NAMES_MAX_PROJECT + 1);
	if (len == 0 || len > NAMES_MAX_PROJECT)
		return EINVAL;
	if (!is_alnum((unsigned char)name[0]) ||
	    !is_alnum((unsigned char)name[len - 1]))
		return EINVAL;
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (!is_alnum(ch) && !is_sep(ch))
			return EINVAL;
	}
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (is_sep(ch)) {
			/* a run of separators becomes one '-' */
			while (i + 1 < len &&
			       is_sep((unsigned char)name[i + 1]))
				i++;
			ch = '-';
		}
		if (n + 1 >= outlen) {
			if (out && outlen)
				out[0] = '\0';
			return ENAMETOOLONG;
		}
		out[n++] = (char)lower(ch);
	}
	out[n] = '\0';
	return 0;
}

int names_is_sha256(const char *s)
{
	return s && hex_is_lower(s, 64) && s[64] == '\0';
}

int names_is_filename(const char *s)
{
	size_t i;

	if (!s || s[0] == '\0' || s[0] == '.')
		return 0;
	for (i = 0; s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (i >= NAMES_MAX_FILENAME)
			return 0;
		if (!is_alnum(ch) && !strchr("._+!~-", ch))
			return 0;
	}
	return 1;
}

/* Iterative, remembering the last '*'. */
int names_glob_match(const char *g, size_t gn, const char *name)
{
	size_t gi = 0, ni = 0, nn = strlen(name);
	size_t star = (size_t)-1, resume = 0;

	while (ni < nn) {
		if (gi < gn && g[gi] == '*') {
			star = gi++;
			resume = ni;
		} else if (gi < gn && (g[gi] == '?' || g[gi] == name[ni])) {
			gi++;
			ni++;
		} else if (star != (size_t)-1) {
			gi = star + 1;
			ni = ++resume;
		} else {
			return 0;
		}
	}
	while (gi < gn && g[gi] == '*')
		gi++;
	return gi == gn;
}

int names_globs_match(const char *globs, const char *name)
{
	size_t n;

	if (!globs || !name)
		return 0;
	for (const char *g = globs; *g; g += n) {
		while (*g == ' ')
			g++;
		n = strcspn(g, " ");
		if (n && names_glob_match(g, n, name))
			return 1;
	}
	return 0;
}

int names_globs_normalize(const char *in, char *out, size_t len, char *err,
			  size_t errlen)
{
	size_t o = 0, limit = len - 1;
	int in_word = 0, sep = 0;

	if (!len)
		return EINVAL;
	if (limit > NAMES_MAX_GLOBS)
		limit = NAMES_MAX_GLOBS;
	for (const char *p = in;; p++) {
		unsigned char c = (unsigned char)*p;
		char put = 0;

		if (!c || (c == ' ' || c == '\t')) {
			in_word = 0;
			sep = 0;
			if (!c)
				break;
			continue;
		}
		if (c == '-' || c == '_' || c == '.') {
			sep = 1;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '*' || c == '?')) {
			snprintf(err, errlen, "project glob \"%.64s\": %s", in,
			         "expected letters, digits, '-', '_', '.', "
			         "'*' and '?'");
			return EINVAL;
		}
		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		/* a space between globs, a '-' for a run of separators
		 * inside one (a leading or trailing run goes, as in a
		 * normalised name) */
		if (!in_word && o)
			put = ' ';
		else if (in_word && sep)
			put = '-';
		if (put) {
			if (o + 1 > limit)
				goto too_long;
			out[o++] = put;
		}
		if (o + 1 > limit)
			goto too_long;
		out[o++] = (char)c;
		in_word = 1;
		sep = 0;
	}
	out[o] = '\0';
	if (!o) {
		snprintf(err, errlen,
		         "no project globs given (\"*\" is every "
		         "project)");
		return EINVAL;
	}
	return 0;
too_long:
	snprintf(err, errlen, "project globs longer than %zu bytes", limit);
	return EINVAL;
}
