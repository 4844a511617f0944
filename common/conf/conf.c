#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/conf/conf.h"
#include "common/conf/keys.h"
#include "common/log.h"
#include "common/url.h"

#define MAX_LINE     4096          /* bytes in one line, comments included */
#define MAX_SHOWN    60            /* bytes of a value quoted in a message */

static char *skip_ws(char *s)
{
	while (conf_is_ws(*s))
		s++;
	return s;
}

static char *trim(char *s)
{
	size_t n;

	s = skip_ws(s);
	n = strlen(s);
	while (n && conf_is_ws(s[n - 1]))
		n--;
	s[n] = '\0';
	return s;
}

/* True when what is left of a line is blank or a comment. */
static int rest_is_comment(char *s)
{
	s = skip_ws(s);
	return *s == '\0' || *s == '#' || *s == ';';
}

/* Writes s to out for a message: the secrets of a URL in it masked
 * (url_redact, before it is cut: a cut password no longer looks like
 * one), control characters as \xNN, quotes and backslashes escaped when
 * quoted, cut to MAX_SHOWN bytes with "...". */
static void shown(const char *s, int quoted, char *out, size_t outlen)
{
	char masked[MAX_LINE + 64];
	size_t n = 0, i;

	s = url_redact(s, masked, sizeof(masked));

	for (i = 0; s[i] && n + 8 < outlen; i++) {
		if (i == MAX_SHOWN) {
			memcpy(out + n, "...", 3);
			n += 3;
			break;
		}
		if (conf_is_ctl(s[i])) {
			n += (size_t)snprintf(out + n, outlen - n, "\\x%02x",
			                      (unsigned char)s[i]);
			continue;
		}
		if (quoted && (s[i] == '"' || s[i] == '\\'))
			out[n++] = '\\';
		out[n++] = s[i];
	}
	out[n] = '\0';
}

const char *conf_file_of(const struct conf_parser *p, unsigned line)
{
	unsigned f = line / CONF_LINE_SPAN;

	return f && f <= p->nfiles ? p->files[f - 1] : p->name;
}

const char *conf_line_ref(const struct conf_parser *p, unsigned here,
                          unsigned line, char *out, size_t outlen)
{
	if (line / CONF_LINE_SPAN == here / CONF_LINE_SPAN)
		snprintf(out, outlen, "line %u", line % CONF_LINE_SPAN);
	else
		snprintf(out, outlen, "%s:%u", conf_file_of(p, line),
		         line % CONF_LINE_SPAN);
	return out;
}

/* Writes "NAME:LINE: message" to the error buffer; returns EINVAL. */
int conf_fail(struct conf_parser *p, unsigned line, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	size_t n;
	int k;

	if (!p->err || !p->errlen)
		return EINVAL;
	k = snprintf(p->err, p->errlen, "%s:%u: ", conf_file_of(p, line),
	             line % CONF_LINE_SPAN);
	n = k < 0 ? 0 : (size_t)k;
	if (n < p->errlen) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		/* a value quoted back may be an upstream URL: never its
		 * credentials */
		url_redact(msg, p->err + n, p->errlen - n);
	}
	return EINVAL;
}

/* The form a key's value takes, for messages: the type's, or the enum's
 * words. */
static const char *expected(const struct conf_key *k, char *out, size_t outlen)
{
	size_t n;
	int w;

	if (k->type != T_ENUM)
		return conf_types[k->type].expect;
	w = snprintf(out, outlen, "one of");
	n = w < 0 ? 0 : (size_t)w;
	for (size_t i = 0; k->values[i] && n < outlen; i++) {
		w = snprintf(out + n, outlen - n, "%s %s", i ? "," : "",
		             k->values[i]);
		n += w < 0 ? 0 : (size_t)w;
	}
	return out;
}

/* The sections: [larder], then the named ones, each an array in struct
 * conf with its count, and rows in struct conf_parser for the line each
 * key was set on. One table, so that starting, filling, copying and
 * freeing a section is written once. */
enum { K_LARDER, K_INDEX, K_REGISTRY, K_WEBHOOK, K_POLICY, K_COUNT };

struct conf_kind {
	const char *word;  /* "index" */
	const char *named; /* how a message names its kind: "[index \"NAME\"]" */
	const char *plural; /* "indexes" */
	size_t max;        /* sections of the kind at most */
	size_t size;       /* one section's struct */
	size_t array;      /* in struct conf: the sections */
	size_t count;      /* in struct conf: how many (a size_t) */
	size_t name;       /* in a section's struct: its char *name */
	size_t lines;      /* in struct conf_parser: unsigned [max][CONF_NKEYS] */
	size_t starts;     /* in struct conf_parser: unsigned [max] */
	const char *(*bad_name)(const char *name);
	int replaces;      /* the file's first replaces the built-in ones */
	int inherits;      /* keys left unset take [larder]'s value */
};

static const char *bad_webhook_name(const char *name)
{
	if (!*name || strlen(name) > 64 ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-_.") !=
	        strlen(name))
		return "expected 1 to 64 of a-z 0-9 - _ .";
	return NULL;
}

static const char *bad_policy_name(const char *name)
{
	if (!*name || strlen(name) > 64 ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz"
	                 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
	        strlen(name))
		return "1 to 64 letters, digits, - _ or .";
	return NULL;
}

#define KIND(w, pl, type, arr, n, max, ln, st, bad, repl, inh)             \
	{w, "[" w " \"NAME\"]", pl, max, sizeof(type), offsetof(struct conf, arr), \
	 offsetof(struct conf, n), offsetof(type, name),                    \
	 offsetof(struct conf_parser, ln), offsetof(struct conf_parser, st), \
	 bad, repl, inh}

static const struct conf_kind kinds[K_COUNT] = {
    [K_LARDER] = {"larder", "[larder]", "", 1, sizeof(struct conf), 0, 0, 0,
                  offsetof(struct conf_parser, larder_line), 0, NULL, 0, 0},
    [K_INDEX] = KIND("index", "indexes", struct conf_index, index, nindex,
                     CONF_MAX_INDEXES, index_line, section_line,
                     conf_bad_index_name, 1, 1),
    [K_REGISTRY] = KIND("registry", "registries", struct conf_registry, registry,
                        nregistry, CONF_MAX_REGISTRIES, registry_line,
                        registry_section_line, conf_bad_registry_name, 1,
                        1),
    [K_WEBHOOK] = KIND("webhook", "webhooks", struct conf_webhook, webhook, nwebhook,
                       CONF_MAX_WEBHOOKS, webhook_line,
                       webhook_section_line, bad_webhook_name, 0, 0),
    [K_POLICY] = KIND("policy", "policies", struct conf_policy_def, policy, npolicy,
                      CONF_MAX_POLICIES, policy_line, policy_section_line,
                      bad_policy_name, 0, 0),
};

static size_t *kind_count(struct conf *c, const struct conf_kind *k)
{
	return (size_t *)((char *)c + k->count);
}

/* Section i of kind k in c (c itself for [larder]). */
static void *kind_at(struct conf *c, const struct conf_kind *k, size_t i)
{
	return (char *)c + k->array + i * k->size;
}

static char **kind_name(struct conf *c, const struct conf_kind *k, size_t i)
{
	return (char **)((char *)kind_at(c, k, i) + k->name);
}

/* The lines section i's keys were set on. */
static unsigned *kind_lines(struct conf_parser *p, const struct conf_kind *k,
                            size_t i)
{
	return (unsigned *)((char *)p + k->lines) + i * CONF_NKEYS;
}

/* Frees the strings of section's keys in base, leaving NULLs. */
static void free_strings(void *base, const char *section)
{
	for (size_t i = 0; i < CONF_NKEYS; i++) {
		if (!strcmp(conf_keys[i].section, section) &&
		    conf_is_string(conf_keys[i].type)) {
			free(*(char **)conf_field(base, &conf_keys[i]));
			*(char **)conf_field(base, &conf_keys[i]) = NULL;
		}
	}
}

/* Frees every section of kind k in c, leaving none. */
static void free_kind(struct conf *c, const struct conf_kind *k)
{
	for (size_t i = 0; i < *kind_count(c, k); i++) {
		free_strings(kind_at(c, k, i), k->word);
		free(*kind_name(c, k, i));
		*kind_name(c, k, i) = NULL;
	}
	*kind_count(c, k) = 0;
}

void conf_free(struct conf *c)
{
	free_strings(c, "larder");
	for (size_t k = K_LARDER + 1; k < K_COUNT; k++)
		free_kind(c, &kinds[k]);
	free(c->source);
	c->source = NULL;
}

static int dup_str(char **dst, const char *src)
{
	*dst = NULL;
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : ENOMEM;
}

/* Sets the strings of section's keys in base to NULL, without freeing. */
static void forget_strings(void *base, const char *section)
{
	for (size_t i = 0; i < CONF_NKEYS; i++)
		if (!strcmp(conf_keys[i].section, section) &&
		    conf_is_string(conf_keys[i].type))
			*(char **)conf_field(base, &conf_keys[i]) = NULL;
}

/* Copies the strings of section's keys from src to dst, whose are NULL.
 * Returns 0 or ENOMEM. */
static int copy_strings(void *dst, const void *src, const char *section)
{
	int err = 0;

	for (size_t i = 0; i < CONF_NKEYS && !err; i++)
		if (!strcmp(conf_keys[i].section, section) &&
		    conf_is_string(conf_keys[i].type))
			err = dup_str(
			    conf_field(dst, &conf_keys[i]),
			    *(char *const *)conf_cfield(src, &conf_keys[i]));
	return err;
}

/* Makes dst a deep copy of src. Returns 0 or ENOMEM (dst then empty). */
static int copy_conf(struct conf *dst, const struct conf *src)
{
	struct conf *from = (struct conf *)src; /* only read */
	const struct conf_kind *k;
	int err;

	*dst = *src;
	/* Forget src's strings first, so a failure frees only our own. */
	forget_strings(dst, "larder");
	for (k = &kinds[K_LARDER + 1]; k < &kinds[K_COUNT]; k++)
		for (size_t j = 0; j < *kind_count(dst, k); j++) {
			forget_strings(kind_at(dst, k, j), k->word);
			*kind_name(dst, k, j) = NULL;
		}
	dst->source = NULL;

	err = copy_strings(dst, src, "larder");
	for (k = &kinds[K_LARDER + 1]; k < &kinds[K_COUNT]; k++)
		for (size_t j = 0; j < *kind_count(from, k) && !err; j++) {
			err = copy_strings(kind_at(dst, k, j),
			                   kind_at(from, k, j), k->word);
			if (!err)
				err = dup_str(kind_name(dst, k, j),
				              *kind_name(from, k, j));
		}
	if (!err)
		err = dup_str(&dst->source, src->source);
	if (err)
		conf_free(dst);
	return err;
}

/* Sets section's keys that have a default, in base. Returns 0 or ENOMEM
 * (the defaults are the table's own, so they parse). */
static int set_defaults(void *base, const char *section)
{
	const char *why, *form;
	int err = 0;

	for (size_t i = 0; i < CONF_NKEYS && !err; i++)
		if (!strcmp(conf_keys[i].section, section) && conf_keys[i].def)
			err = conf_set_value(base, &conf_keys[i],
			                     conf_keys[i].def, &why, &form);
	return err;
}

/* [KIND "NAME"]: a new section of kind k, its keys at their defaults. */
static int start_section(struct conf_parser *p, const struct conf_kind *k,
                         const char *name)
{
	char ref[PATH_MAX + 32], name_shown[MAX_SHOWN + 16];
	struct conf *c = p->c;
	unsigned *starts = (unsigned *)((char *)p + k->starts);
	size_t n = *kind_count(c, k);
	const char *why;

	shown(name, 1, name_shown, sizeof(name_shown));
	snprintf(p->where, sizeof(p->where), "[%s \"%s\"]: ", k->word,
	         name_shown);
	why = k->bad_name(name);
	if (why)
		return conf_fail(p, p->line, "%sbad %s name: %s", p->where,
		                 k->word, why);
	if (k->replaces && !(p->seen & 1u << (k - kinds))) {
		/* The file's first replaces the built-in ones. */
		free_kind(c, k);
		n = 0;
	}
	p->seen |= 1u << (k - kinds);
	for (size_t j = 0; j < n; j++)
		if (!strcmp(*kind_name(c, k, j), name))
			return conf_fail(
			    p, p->line,
			    "duplicate section [%s \"%s\"] (first at %s)",
			    k->word, name,
			    conf_line_ref(p, p->line, starts[j], ref,
			                  sizeof(ref)));
	if (n >= k->max)
		return conf_fail(p, p->line, "%stoo many %s (at most %zu)",
		                 p->where, k->plural, k->max);
	memset(kind_at(c, k, n), 0, k->size);
	memset(kind_lines(p, k, n), 0, CONF_NKEYS * sizeof(unsigned));
	starts[n] = p->line;
	*kind_name(c, k, n) = strdup(name);
	if (!*kind_name(c, k, n))
		return ENOMEM;
	*kind_count(c, k) = n + 1;
	p->in = k;
	p->at = n;
	if (k->inherits)
		conf_set_inherited(kind_at(c, k, n), k->word);
	return set_defaults(kind_at(c, k, n), k->word);
}

#define SECTIONS                                                           \
	"[larder], [index \"NAME\"], [registry \"NAME\"], "                \
	"[webhook \"NAME\"] or [policy \"NAME\"]"

/* The "NAME"] after a section's word, with an optional trailing comment:
 * returns the name (the closing quote made a NUL), or NULL. */
static char *quoted_name(char *q)
{
	char *name, *close;

	q = skip_ws(q);
	if (*q != '"')
		return NULL;
	name = q + 1;
	close = strchr(name, '"');
	if (!close)
		return NULL;
	*close = '\0';
	q = skip_ws(close + 1);
	if (*q != ']' || !rest_is_comment(q + 1))
		return NULL;
	return name;
}

/* "[larder]", "[index "NAME"]" or "[registry "NAME"]", with an optional
 * trailing comment. */
static int parse_section(struct conf_parser *p, char *s)
{
	char line_shown[MAX_SHOWN + 16];
	char *q = skip_ws(s + 1), *name;
	size_t word;

	shown(s, 0, line_shown, sizeof(line_shown));
	word = strspn(q, "abcdefghijklmnopqrstuvwxyz"
	                 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.");
	if (word == 6 && !strncmp(q, "larder", 6)) {
		q = skip_ws(q + 6);
		if (*q != ']' || !rest_is_comment(q + 1))
			goto syntax;
		p->in = &kinds[K_LARDER];
		p->at = 0;
		p->where[0] = '\0';
		return 0;
	}
	for (const struct conf_kind *k = &kinds[K_LARDER + 1];
	     k < &kinds[K_COUNT]; k++) {
		if (word != strlen(k->word) || strncmp(q, k->word, word))
			continue;
		name = quoted_name(q + word);
		if (!name)
			goto syntax;
		return start_section(p, k, name);
	}
	if (word && (conf_is_ws(q[word]) || q[word] == ']' || q[word] == '"'))
		return conf_fail(p, p->line,
		                 "unknown section %s: expected " SECTIONS,
		                 line_shown);
syntax:
	return conf_fail(p, p->line,
	                 "bad section header %s: expected " SECTIONS,
	                 line_shown);
}

/* The value after '=': unquoted up to a " #" or " ;" comment, or in double
 * quotes with \" and \\. Sets *out (inside v), or *why and EINVAL. */
static int read_value(char *v, char **out, const char **why)
{
	char *r, *w;

	v = skip_ws(v);
	if (*v != '"') {
		/* v[-1] is '=' or blank, so q[-1] is always there */
		for (char *q = v; *q; q++) {
			if ((*q == '#' || *q == ';') && conf_is_ws(q[-1])) {
				*q = '\0';
				break;
			}
		}
		*out = trim(v);
		return 0;
	}
	for (r = v + 1, w = v; *r != '"'; w++) {
		if (!*r) {
			*why = "unterminated quoted value";
			return EINVAL;
		}
		if (*r == '\\' && r[1] != '"' && r[1] != '\\') {
			*why = "unknown escape in quoted value (only \\\" and "
			       "\\\\)";
			return EINVAL;
		}
		if (*r == '\\')
			r++;
		*w = *r++;
	}
	*w = '\0';
	if (!rest_is_comment(r + 1)) {
		*why = "unexpected text after the closing quote";
		return EINVAL;
	}
	*out = v;
	return 0;
}

/* Edit distance of two short strings, capped at 9. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[32], prev, tmp;

	if (la >= 31 || lb >= 31)
		return 9;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			tmp = row[j];
			row[j] = prev + (a[i - 1] != b[j - 1]);
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			if (tmp + 1 < row[j])
				row[j] = tmp + 1;
			prev = tmp;
		}
	}
	return row[lb];
}

static int unknown_key(struct conf_parser *p, const char *section,
                       const char *key)
{
	char key_shown[MAX_SHOWN + 16], sect[200], hint[120] = "";
	const char *last = "larder";
	size_t best = 3, n = 0;

	shown(key, 1, key_shown, sizeof(key_shown));
	if (p->in == &kinds[K_LARDER])
		snprintf(sect, sizeof(sect), "[larder]");
	else
		snprintf(sect, sizeof(sect), "[%s \"%s\"]", p->in->word,
		         *kind_name(p->c, p->in, p->at));
	for (size_t i = 0; i < CONF_NKEYS; i++) {
		size_t d = distance(key, conf_keys[i].name);

		if (!strcmp(conf_keys[i].section, section) &&
		    (d < best || !strcasecmp(key, conf_keys[i].name))) {
			best = !strcasecmp(key, conf_keys[i].name) ? 0 : d;
			snprintf(hint, sizeof(hint), " (did you mean %s?)",
			         conf_keys[i].name);
		}
	}
	/* a key of the other sections says where it goes instead: "(it
	 * belongs in [larder] or [registry "NAME"] sections)"; the hint has
	 * room for both */
	for (size_t i = 0; i < K_COUNT; i++) {
		if (!strcmp(kinds[i].word, section) ||
		    !conf_find_key(kinds[i].word, key))
			continue;
		n += (size_t)snprintf(hint + n, sizeof(hint) - n, "%s%s",
		                      n ? " or " : " (it belongs in ",
		                      kinds[i].named);
		last = kinds[i].word;
	}
	if (n)
		snprintf(hint + n, sizeof(hint) - n, "%s)",
		         strcmp(last, "larder") ? " sections" : "");
	return conf_fail(p, p->line, "unknown key \"%s\" in %s%s", key_shown,
	                 sect, hint);
}

static int parse_text(struct conf_parser *p, const char *text, size_t len);

/* "include = GLOB", in a section or outside any. */
static int parse_include(struct conf_parser *p, char *v)
{
	char value_shown[MAX_SHOWN + 16];
	const char *why = NULL;
	char *pattern;

	if (read_value(v, &pattern, &why))
		return conf_fail(p, p->line, "include: %s", why);
	shown(pattern, 1, value_shown, sizeof(value_shown));
	if (!*pattern)
		return conf_fail(p, p->line, "include = \"\": expected a file "
		                 "or a glob (conf.d/*.conf)");
	if (!p->include)
		return conf_fail(p, p->line, "include = \"%s\": only a config "
		                 "file read from disk may include others",
		                 value_shown);
	if (p->depth >= CONF_MAX_DEPTH)
		return conf_fail(p, p->line, "include = \"%s\": includes "
		                 "nested deeper than %d (a file that includes "
		                 "itself?)", value_shown, CONF_MAX_DEPTH);
	return p->include(p, pattern);
}

int conf_parse_included(struct conf_parser *p, const char *path,
                        const char *text, size_t len)
{
	unsigned line = p->line;
	const struct conf_kind *in = p->in;
	size_t at = p->at;
	char where[sizeof(p->where)];
	int rc;

	if (p->nfiles >= CONF_MAX_FILES)
		return conf_fail(p, p->line, "more than %d included files",
		                 CONF_MAX_FILES);
	p->files[p->nfiles] = strdup(path);
	if (!p->files[p->nfiles])
		return ENOMEM;
	p->nfiles++;
	memcpy(where, p->where, sizeof(where));
	p->line = p->nfiles * CONF_LINE_SPAN;
	p->in = NULL;
	p->where[0] = '\0';
	p->depth++;
	rc = parse_text(p, text, len);
	p->depth--;
	if (rc)
		return rc; /* the message names the included file's line */
	p->line = line;
	p->in = in;
	p->at = at;
	memcpy(p->where, where, sizeof(where));
	return 0;
}

/* "key = value" in the current section. */
static int parse_assignment(struct conf_parser *p, char *s)
{
	char line_shown[MAX_SHOWN + 16], value_shown[MAX_SHOWN + 16];
	char form_buf[200], ref[PATH_MAX + 32];
	const char *section, *why = NULL, *form;
	const struct conf_key *k;
	unsigned *line;
	char *eq, *key, *value;
	void *base;
	int err;

	shown(s, 1, line_shown, sizeof(line_shown));
	eq = strchr(s, '=');
	if (!eq || eq == s)
		return conf_fail(p, p->line,
		                 "expected key = value, " SECTIONS
		                 ", got \"%s\"",
		                 line_shown);
	*eq = '\0';
	key = trim(s);
	if (!strcmp(key, "include"))
		return parse_include(p, eq + 1);
	if (!p->in)
		return conf_fail(
		    p, p->line,
		    "\"%s\" is outside any section: expected " SECTIONS
		    " before it",
		    line_shown);
	section = p->in->word;
	k = conf_find_key(section, key);
	if (!k)
		return unknown_key(p, section, key);
	err = read_value(eq + 1, &value, &why);
	if (err)
		return conf_fail(p, p->line, "%s%s: %s", p->where, key, why);
	shown(value, 1, value_shown, sizeof(value_shown));
	base = kind_at(p->c, p->in, p->at);
	line = &kind_lines(p, p->in, p->at)[k - conf_keys];
	if (*line)
		return conf_fail(p, p->line, "%s%s given twice (first at %s)",
		                 p->where, key,
		                 conf_line_ref(p, p->line, *line, ref,
		                               sizeof(ref)));
	err = conf_set_value(base, k, value, &why, &form);
	if (err == EINVAL)
		return conf_fail(
		    p, p->line, "%s%s = \"%s\": %s%sexpected %s", p->where, key,
		    value_shown, why ? why : "", why ? ": " : "",
		    form ? form : expected(k, form_buf, sizeof(form_buf)));
	if (err)
		return err;
	*line = p->line;
	return 0;
}

static int parse_line(struct conf_parser *p, char *s)
{
	s = trim(s);
	if (*s == '\0' || *s == '#' || *s == ';')
		return 0;
	if (*s == '[')
		return parse_section(p, s);
	return parse_assignment(p, s);
}

static int parse_text(struct conf_parser *p, const char *text, size_t len)
{
	char line[MAX_LINE + 1];
	size_t pos = 0, end, n;
	int err;

	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		pos = 3; /* a UTF-8 byte order mark */
	while (pos < len) {
		p->line++;
		end = pos;
		while (end < len && text[end] != '\n')
			end++;
		n = end - pos;
		if (memchr(text + pos, '\0', n))
			return conf_fail(p, p->line, "NUL byte in line");
		if (n > MAX_LINE)
			return conf_fail(p, p->line,
			                 "line too long (at most %d "
			                 "bytes)",
			                 MAX_LINE);
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos = end + 1;
		err = parse_line(p, line);
		if (err)
			return err;
	}
	return 0;
}

/* Parses text into c in place; c may be left half-changed on error. */
static int parse_into(struct conf *c, const char *name, const char *text,
                      size_t len, int (*include)(struct conf_parser *,
                                                 const char *),
                      char *err, size_t errlen)
{
	struct conf_parser *p;
	int rc;

	p = calloc(1, sizeof(*p));
	if (!p) {
		rc = ENOMEM;
		goto out;
	}
	p->c = c;
	p->name = name ? name : "-";
	p->err = err;
	p->errlen = errlen;
	p->include = include;
	rc = parse_text(p, text, len);
	if (!rc && p->seen & 1u << K_INDEX)
		rc = conf_check_indexes(p);
	if (!rc && p->seen & 1u << K_REGISTRY)
		rc = conf_check_registries(p);
	if (!rc)
		rc = conf_check_webhooks(p);
	if (!rc)
		rc = conf_check_policies(p);
out:
	if (rc == ENOMEM)
		log_reason(err, errlen, "%s: out of memory", name ? name : "-");
	if (p)
		for (unsigned i = 0; i < p->nfiles; i++)
			free(p->files[i]);
	free(p);
	return rc;
}

int conf_defaults(struct conf *c)
{
	int err;

	memset(c, 0, sizeof(*c));
	err = set_defaults(c, "larder");
	if (!err)
		err = parse_into(c, "(built-in defaults)", conf_default_indexes,
		                 strlen(conf_default_indexes), NULL, NULL, 0);
	if (!err)
		err = parse_into(c, "(built-in defaults)",
		                 conf_default_registries,
		                 strlen(conf_default_registries), NULL, NULL,
		                 0);
	if (err)
		conf_free(c);
	return err;
}

int conf_parse_with(struct conf *c, const char *name, const char *text,
                      size_t len, int (*include)(struct conf_parser *,
                                                 const char *),
                      char *err, size_t errlen)
{
	struct conf tmp;
	int rc;

	log_reason(err, errlen, "%s", "");
	rc = copy_conf(&tmp, c);
	if (rc) {
		log_reason(err, errlen, "%s: out of memory", name ? name : "-");
		return rc;
	}
	rc = parse_into(&tmp, name, text, len, include, err, errlen);
	if (rc) {
		conf_free(&tmp);
		return rc;
	}
	conf_free(c);
	*c = tmp;
	return 0;
}

int conf_parse(struct conf *c, const char *name, const char *text, size_t len,
               char *err, size_t errlen)
{
	return conf_parse_with(c, name, text, len, NULL, err, errlen);
}
