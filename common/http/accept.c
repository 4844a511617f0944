#include "config.h"

#include <stddef.h>
#include <string.h>

#include "common/http/accept.h"

/*
 * How accept_choose() decides, for an Accept header (RFC 9110 12.5.1).
 * Below, ANY stands for the "*" wildcard.
 *
 * The header is a comma-separated list of media ranges, each with optional
 * ";name=value" parameters; whitespace may surround every token, types and
 * parameter names are case-insensitive, and quoted parameter values may hold
 * ',' or ';'. A range whose q is not a valid qvalue ("0" to "1", at most
 * three decimals) is dropped; other malformed parameters are ignored, and
 * so are parameters other than the first q.
 *
 * Each format is one representation with several names:
 *   JSON  application/vnd.pypi.simple.{v1,latest}+json              exact
 *   HTML  application/vnd.pypi.simple.{v1,latest}+html, text/html   exact
 *         text/ANY                                           type wildcard
 *         ANY/ANY                                            full wildcard
 * A wildcard never matches JSON. A format's q comes from the most specific
 * ranges that match it (the largest q among them), so "text/html;q=0,
 * ANY/ANY" excludes HTML and "text/html;q=0.5, ANY/ANY;q=0.9" gives HTML
 * 0.5. The format with the higher q wins; on a tie the one matched more
 * specifically wins, then JSON (so a tie is always JSON today). A format
 * with q=0 or no match is never chosen; when neither is left the answer is
 * ACCEPT_NONE. A missing header, or one with no ranges at all, means HTML.
 */

#define Q_ONE 1000 /* q in thousandths */

enum level {
	LEVEL_NONE = -1, /* no range matched */
	LEVEL_ANY,       /* matched by ANY/ANY */
	LEVEL_TYPE,      /* matched by text/ANY */
	LEVEL_EXACT,     /* matched by one of its own names */
};

struct score {
	int level;
	int q;
};

struct known {
	const char *type;
	const char *subtype;
	enum accept_format format;
	enum level level;
};

static const struct known known[] = {
	{ "application", "vnd.pypi.simple.v1+json", ACCEPT_JSON, LEVEL_EXACT },
	{ "application", "vnd.pypi.simple.latest+json", ACCEPT_JSON,
	  LEVEL_EXACT },
	{ "application", "vnd.pypi.simple.v1+html", ACCEPT_HTML, LEVEL_EXACT },
	{ "application", "vnd.pypi.simple.latest+html", ACCEPT_HTML,
	  LEVEL_EXACT },
	{ "text", "html", ACCEPT_HTML, LEVEL_EXACT },
	{ "text", "*", ACCEPT_HTML, LEVEL_TYPE },
	{ "*", "*", ACCEPT_HTML, LEVEL_ANY },
};

/* A piece of the header: n bytes at p, not NUL-terminated. */
struct span {
	const char *p;
	size_t n;
};

static int is_ows(char ch)
{
	return ch == ' ' || ch == '\t';
}

static unsigned char lower(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return (unsigned char)(ch - 'A' + 'a');
	return ch;
}

static struct span trim(const char *p, const char *end)
{
	struct span s;

	while (p < end && is_ows(*p))
		p++;
	while (end > p && is_ows(end[-1]))
		end--;
	s.p = p;
	s.n = (size_t)(end - p);
	return s;
}

/* Case-insensitive, whole-span comparison with a lowercase literal. */
static int span_is(struct span s, const char *lit)
{
	size_t i;

	for (i = 0; i < s.n; i++) {
		if (lit[i] == '\0' || lower((unsigned char)s.p[i]) != lit[i])
			return 0;
	}
	return lit[i] == '\0';
}

/* Returns the qvalue in thousandths, or -1 when s is not one:
 * "0" ["." 0*3DIGIT] or "1" ["." 0*3"0"]. */
static int parse_q(struct span s)
{
	int q, scale = 100;
	size_t i;

	if (s.n == 0 || (s.p[0] != '0' && s.p[0] != '1'))
		return -1;
	q = (s.p[0] - '0') * Q_ONE;
	if (s.n == 1)
		return q;
	if (s.p[1] != '.' || s.n > 5)
		return -1;
	for (i = 2; i < s.n; i++) {
		if (s.p[i] < '0' || s.p[i] > '9')
			return -1;
		q += (s.p[i] - '0') * scale;
		scale /= 10;
	}
	return q > Q_ONE ? -1 : q;
}

/* Skips one parameter (up to an unquoted ';' or ','), honouring quoted
 * strings with backslash escapes. Returns where it stopped. */
static const char *skip_param(const char *p)
{
	while (*p && *p != ';' && *p != ',') {
		if (*p == '"') {
			p++;
			while (*p && *p != '"') {
				if (*p == '\\' && p[1])
					p++;
				p++;
			}
			if (*p)
				p++;
			continue;
		}
		p++;
	}
	return p;
}

/* Credits every format that range type/subtype matches with q. */
static void score_range(struct span type, struct span subtype, int q,
			struct score *scores)
{
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		struct score *s = &scores[known[i].format];
		int level = known[i].level;

		if (!span_is(type, known[i].type) ||
		    !span_is(subtype, known[i].subtype))
			continue;
		if (level > s->level) {
			s->level = level;
			s->q = q;
		} else if (level == s->level && q > s->q) {
			s->q = q;
		}
	}
}

/* Parses one media range starting at p (after leading separators) and
 * scores it. Returns where it stopped: at a ',' or the end. */
static const char *parse_range(const char *p, struct score *scores)
{
	const char *start = p, *slash = NULL;
	struct span type, subtype;
	int q = Q_ONE, have_q = 0, bad = 0;

	while (*p && *p != ',' && *p != ';') {
		if (*p == '/' && !slash)
			slash = p;
		p++;
	}
	if (slash) {
		type = trim(start, slash);
		subtype = trim(slash + 1, p);
	} else {
		type = trim(start, start);
		subtype = type;
		bad = 1;
	}
	while (*p == ';') {
		const char *pstart = ++p, *eq;
		struct span name, value;

		p = skip_param(p);
		eq = memchr(pstart, '=', (size_t)(p - pstart));
		name = trim(pstart, eq ? eq : p);
		if (!span_is(name, "q") || have_q)
			continue; /* media-type or extension parameter */
		have_q = 1;
		if (!eq) {
			bad = 1;
			continue;
		}
		value = trim(eq + 1, p);
		q = parse_q(value);
		if (q < 0)
			bad = 1;
	}
	if (!bad)
		score_range(type, subtype, q, scores);
	return p;
}

enum accept_format accept_choose(const char *accept)
{
	struct score scores[3] = {
		{ LEVEL_NONE, 0 }, { LEVEL_NONE, 0 }, { LEVEL_NONE, 0 }
	};
	const struct score *json = &scores[ACCEPT_JSON];
	const struct score *html = &scores[ACCEPT_HTML];
	const char *p = accept;
	int nranges = 0;

	if (!p)
		return ACCEPT_HTML;
	for (;;) {
		while (*p == ',' || is_ows(*p))
			p++;
		if (!*p)
			break;
		nranges++;
		p = parse_range(p, scores);
	}
	if (nranges == 0)
		return ACCEPT_HTML;
	if (json->q == 0 && html->q == 0)
		return ACCEPT_NONE;
	if (json->q != html->q)
		return json->q > html->q ? ACCEPT_JSON : ACCEPT_HTML;
	return html->level > json->level ? ACCEPT_HTML : ACCEPT_JSON;
}

enum accept_format accept_from_format(const char *format)
{
	static const char *const json[] = {
		"application/vnd.pypi.simple.v1+json",
		"application/vnd.pypi.simple.latest+json",
	};
	static const char *const html[] = {
		"application/vnd.pypi.simple.v1+html",
		"application/vnd.pypi.simple.latest+html",
		"text/html",
	};
	struct span s;
	size_t i;

	if (!format)
		return ACCEPT_NONE;
	s.p = format;
	s.n = strlen(format);
	for (i = 0; i < sizeof(json) / sizeof(json[0]); i++) {
		if (span_is(s, json[i]))
			return ACCEPT_JSON;
	}
	for (i = 0; i < sizeof(html) / sizeof(html[0]); i++) {
		if (span_is(s, html[i]))
			return ACCEPT_HTML;
	}
	return ACCEPT_NONE;
}

int accept_gzip(const char *h)
{
	int named = -1; /* the q of gzip, -1: not named */
	const char *p = h, *start;

	while (p && *p) {
		struct span coding;
		int q = Q_ONE, have_q = 0;

		while (*p == ',' || is_ows(*p))
			p++;
		start = p;
		while (*p && *p != ',' && *p != ';')
			p++;
		coding = trim(start, p);
		while (*p == ';') {
			const char *pstart = ++p, *eq;

			p = skip_param(p);
			eq = memchr(pstart, '=', (size_t)(p - pstart));
			if (have_q || !span_is(trim(pstart, eq ? eq : p), "q"))
				continue;
			have_q = 1;
			q = eq ? parse_q(trim(eq + 1, p)) : -1;
		}
		if (q < 0)
			continue; /* a coding with a bad weight is left out */
		/* the highest q wins where a coding is listed twice */
		if ((span_is(coding, "gzip") || span_is(coding, "x-gzip")) &&
		    q > named)
			named = q;
	}
	return named > 0;
}

/* ACCEPT_NONE (the 406 answer) and anything unknown get plain text. */
const char *accept_content_type(enum accept_format f)
{
	switch (f) {
	case ACCEPT_JSON:
		return "application/vnd.pypi.simple.v1+json";
	case ACCEPT_HTML:
		return "text/html; charset=utf-8";
	case ACCEPT_NONE:
	default:
		return "text/plain; charset=utf-8";
	}
}
