#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/search.h"

/* The length of the UTF-8 sequence at s (at most n bytes), or 0 when it
 * is not one: overlong forms, surrogates and code points past U+10FFFF
 * are refused as SQLite's tokenizer would mangle them. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static int is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
	       c == '\v';
}

/* Whether the word w (n bytes) holds something the tokenizer keeps: an
 * ASCII letter or digit, or any non-ASCII character. */
static int has_word(const unsigned char *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (w[i] >= 0x80 || (w[i] >= '0' && w[i] <= '9') ||
		    ((w[i] | 0x20) >= 'a' && (w[i] | 0x20) <= 'z'))
			return 1;
	return 0;
}

int search_scopes(const char *list, char *out, size_t outlen)
{
	size_t at = 0, names = 0;
	const char *p = list;

	if (!outlen)
		return ENOSPC;
	out[0] = '\0';
	while (*p) {
		const char *end;

		if (*p == '\n') {
			p++;
			continue;
		}
		end = strchr(p, '\n');
		if (!end)
			end = p + strlen(p);
		/* the prefix or separator, the quotes, each byte doubled, and
		 * the ")" and NUL that end it */
		if (at + 16 + 2 * (size_t)(end - p) + 4 > outlen) {
			out[0] = '\0';
			return ENOSPC;
		}
		memcpy(out + at, names ? " OR \"" : "{scope} : (\"",
		       names ? 5 : 12);
		at += names ? 5 : 12;
		for (; p < end; p++) {
			if (*p == '"')
				out[at++] = '"';
			out[at++] = *p;
		}
		out[at++] = '"';
		names++;
	}
	if (names)
		out[at++] = ')';
	out[at] = '\0';
	return 0;
}

int search_match(const char *q, char *out, size_t outlen, char *err,
		 size_t errlen)
{
	const unsigned char *s = (const unsigned char *)q;
	size_t n = strlen(q), at = 0, terms = 0, i = 0;

	if (outlen)
		out[0] = '\0';
	if (n > SEARCH_MAX_QUERY) {
		snprintf(err, errlen, "query longer than %d bytes",
			 SEARCH_MAX_QUERY);
		return EINVAL;
	}
	for (size_t k = 0; k < n;) {
		size_t len = utf8_len(s + k, n - k);

		if (!len) {
			snprintf(err, errlen, "query is not UTF-8");
			return EINVAL;
		}
		if (len == 1 && (s[k] < 0x20 || s[k] == 0x7f) &&
		    !is_space(s[k])) {
			snprintf(err, errlen, "query holds a control "
				 "character");
			return EINVAL;
		}
		k += len;
	}
	while (i < n) {
		size_t start, end, stars = 0;

		while (i < n && is_space(s[i]))
			i++;
		if (i == n)
			break;
		start = i;
		while (i < n && !is_space(s[i]))
			i++;
		end = i;
		while (end - stars > start && s[end - stars - 1] == '*')
			stars++;
		end -= stars;
		if (!has_word(s + start, end - start))
			continue;
		if (++terms > SEARCH_MAX_TERMS) {
			snprintf(err, errlen, "more than %d words in the "
				 "query", SEARCH_MAX_TERMS);
			return EINVAL;
		}
		/* worst case: a separator, the quotes, every byte doubled,
		 * the '*' and the NUL */
		if (at + 5 + 2 * (end - start) > outlen) {
			snprintf(err, errlen, "query too long");
			return ENOSPC;
		}
		if (at)
			out[at++] = ' ';
		out[at++] = '"';
		for (size_t k = start; k < end; k++) {
			if (s[k] == '"')
				out[at++] = '"';
			out[at++] = (char)s[k];
		}
		out[at++] = '"';
		if (stars)
			out[at++] = '*';
		out[at] = '\0';
	}
	return 0;
}
