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

static void free_index(struct conf_index *ix)
{
	free_strings(ix, "index");
	free(ix->name);
	ix->name = NULL;
}

static void free_registry(struct conf_registry *r)
{
	free_strings(r, "registry");
	free(r->name);
	r->name = NULL;
}

static void free_webhook(struct conf_webhook *h)
{
	free_strings(h, "webhook");
	free(h->name);
	h->name = NULL;
}

static void free_policy(struct conf_policy_def *d)
{
	free_strings(d, "policy");
	free(d->name);
	d->name = NULL;
}

void conf_free(struct conf *c)
{
	free_strings(c, "larder");
	for (size_t i = 0; i < c->npolicy; i++)
		free_policy(&c->policy[i]);
	c->npolicy = 0;
	for (size_t i = 0; i < c->nindex; i++)
		free_index(&c->index[i]);
	c->nindex = 0;
	for (size_t i = 0; i < c->nregistry; i++)
		free_registry(&c->registry[i]);
	c->nregistry = 0;
	for (size_t i = 0; i < c->nwebhook; i++)
		free_webhook(&c->webhook[i]);
	c->nwebhook = 0;
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
	int err;

	*dst = *src;
	/* Forget src's strings first, so a failure frees only our own. */
	forget_strings(dst, "larder");
	for (size_t j = 0; j < src->nindex; j++) {
		forget_strings(&dst->index[j], "index");
		dst->index[j].name = NULL;
	}
	for (size_t j = 0; j < src->nregistry; j++) {
		forget_strings(&dst->registry[j], "registry");
		dst->registry[j].name = NULL;
	}
	for (size_t j = 0; j < src->nwebhook; j++) {
		forget_strings(&dst->webhook[j], "webhook");
		dst->webhook[j].name = NULL;
	}
	for (size_t j = 0; j < src->npolicy; j++) {
		forget_strings(&dst->policy[j], "policy");
		dst->policy[j].name = NULL;
	}
	dst->source = NULL;

	err = copy_strings(dst, src, "larder");
	for (size_t j = 0; j < src->npolicy && !err; j++) {
		err = copy_strings(&dst->policy[j], &src->policy[j], "policy");
		if (!err)
			err = dup_str(&dst->policy[j].name, src->policy[j].name);
	}
	for (size_t j = 0; j < src->nindex && !err; j++) {
		err = copy_strings(&dst->index[j], &src->index[j], "index");
		if (!err)
			err = dup_str(&dst->index[j].name, src->index[j].name);
	}
	for (size_t j = 0; j < src->nregistry && !err; j++) {
		err = copy_strings(&dst->registry[j], &src->registry[j],
		                   "registry");
		if (!err)
			err = dup_str(&dst->registry[j].name,
			              src->registry[j].name);
	}
	for (size_t j = 0; j < src->nwebhook && !err; j++) {
		err = copy_strings(&dst->webhook[j], &src->webhook[j],
		                   "webhook");
		if (!err)
			err = dup_str(&dst->webhook[j].name,
			              src->webhook[j].name);
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

static int start_index(struct conf_parser *p, const char *name)
{
	char ref[PATH_MAX + 32];
	struct conf *c = p->c;
	char name_shown[MAX_SHOWN + 16];
	const char *why;
	int j;

	shown(name, 1, name_shown, sizeof(name_shown));
	snprintf(p->where, sizeof(p->where), "[index \"%s\"]: ", name_shown);
	why = conf_bad_index_name(name);
	if (why)
		return conf_fail(p, p->line, "%sbad index name: %s", p->where,
		                 why);
	if (!p->declared) {
		/* The first [index] replaces the indexes there were. */
		for (size_t i = 0; i < c->nindex; i++)
			free_index(&c->index[i]);
		c->nindex = 0;
		p->declared = 1;
	}
	j = conf_index_find(c, name);
	if (j >= 0)
		return conf_fail(
		    p, p->line,
		    "duplicate section [index \"%s\"] (first at %s)",
		    name, conf_line_ref(p, p->line, p->section_line[j], ref,
		                        sizeof(ref)));
	if (c->nindex >= CONF_MAX_INDEXES)
		return conf_fail(p, p->line, "%stoo many indexes (at most %d)",
		                 p->where, CONF_MAX_INDEXES);
	p->ix = c->nindex;
	memset(&c->index[p->ix], 0, sizeof(c->index[p->ix]));
	memset(p->index_line[p->ix], 0, sizeof(p->index_line[p->ix]));
	p->section_line[p->ix] = p->line;
	c->index[p->ix].name = strdup(name);
	if (!c->index[p->ix].name)
		return ENOMEM;
	c->nindex++;
	p->in = IN_INDEX;
	conf_set_inherited(&c->index[p->ix], "index");
	return set_defaults(&c->index[p->ix], "index");
}

static int start_registry(struct conf_parser *p, const char *name)
{
	char ref[PATH_MAX + 32];
	struct conf *c = p->c;
	char name_shown[MAX_SHOWN + 16];
	const char *why;
	int j;

	shown(name, 1, name_shown, sizeof(name_shown));
	snprintf(p->where, sizeof(p->where), "[registry \"%s\"]: ", name_shown);
	why = conf_bad_registry_name(name);
	if (why)
		return conf_fail(p, p->line, "%sbad registry name: %s",
		                 p->where, why);
	if (!p->declared_registries) {
		/* The first [registry] replaces the registries there were. */
		for (size_t i = 0; i < c->nregistry; i++)
			free_registry(&c->registry[i]);
		c->nregistry = 0;
		p->declared_registries = 1;
	}
	j = conf_registry_find(c, name, strlen(name));
	if (j >= 0)
		return conf_fail(
		    p, p->line,
		    "duplicate section [registry \"%s\"] (first at %s)",
		    name, conf_line_ref(p, p->line, p->registry_section_line[j], ref,
		                        sizeof(ref)));
	if (c->nregistry >= CONF_MAX_REGISTRIES)
		return conf_fail(p, p->line,
		                 "%stoo many registries (at most %d)", p->where,
		                 CONF_MAX_REGISTRIES);
	p->rx = c->nregistry;
	memset(&c->registry[p->rx], 0, sizeof(c->registry[p->rx]));
	memset(p->registry_line[p->rx], 0, sizeof(p->registry_line[p->rx]));
	p->registry_section_line[p->rx] = p->line;
	c->registry[p->rx].name = strdup(name);
	if (!c->registry[p->rx].name)
		return ENOMEM;
	c->nregistry++;
	p->in = IN_REGISTRY;
	conf_set_inherited(&c->registry[p->rx], "registry");
	return set_defaults(&c->registry[p->rx], "registry");
}

static int start_webhook(struct conf_parser *p, const char *name)
{
	char ref[PATH_MAX + 32];
	struct conf *c = p->c;
	char name_shown[MAX_SHOWN + 16];
	int j;

	shown(name, 1, name_shown, sizeof(name_shown));
	snprintf(p->where, sizeof(p->where), "[webhook \"%s\"]: ", name_shown);
	if (!*name || strlen(name) > 64 ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-_.") !=
	        strlen(name))
		return conf_fail(p, p->line, "%sbad webhook name: expected 1 "
		                 "to 64 of a-z 0-9 - _ .", p->where);
	j = conf_webhook_find(c, name);
	if (j >= 0)
		return conf_fail(
		    p, p->line, "duplicate section [webhook \"%s\"] (first at %s)",
		    name, conf_line_ref(p, p->line, p->webhook_section_line[j],
		                        ref, sizeof(ref)));
	if (c->nwebhook >= CONF_MAX_WEBHOOKS)
		return conf_fail(p, p->line, "%stoo many webhooks (at most %d)",
		                 p->where, CONF_MAX_WEBHOOKS);
	p->wx = c->nwebhook;
	memset(&c->webhook[p->wx], 0, sizeof(c->webhook[p->wx]));
	memset(p->webhook_line[p->wx], 0, sizeof(p->webhook_line[p->wx]));
	p->webhook_section_line[p->wx] = p->line;
	c->webhook[p->wx].name = strdup(name);
	if (!c->webhook[p->wx].name)
		return ENOMEM;
	c->nwebhook++;
	p->in = IN_WEBHOOK;
	return set_defaults(&c->webhook[p->wx], "webhook");
}

/* A [policy "NAME"]: its rules start empty; allow and deny are kept as
 * written (common/pypi/policy.c compiles them). */
static int start_policy(struct conf_parser *p, const char *name)
{
	char ref[PATH_MAX + 32];
	struct conf *c = p->c;
	char name_shown[MAX_SHOWN + 16];
	int j;

	shown(name, 1, name_shown, sizeof(name_shown));
	snprintf(p->where, sizeof(p->where), "[policy \"%s\"]: ", name_shown);
	if (!*name || strlen(name) > 64 ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz"
	                 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
	        strlen(name))
		return conf_fail(p, p->line,
		                 "%sbad policy name: 1 to 64 letters, digits, "
		                 "- _ or .", p->where);
	j = conf_policy_find(c, name, strlen(name));
	if (j >= 0)
		return conf_fail(
		    p, p->line,
		    "duplicate section [policy \"%s\"] (first at %s)", name,
		    conf_line_ref(p, p->line, p->policy_section_line[j], ref,
		                  sizeof(ref)));
	if (c->npolicy >= CONF_MAX_POLICIES)
		return conf_fail(p, p->line, "%stoo many policies (at most %d)",
		                 p->where, CONF_MAX_POLICIES);
	p->px = c->npolicy;
	memset(&c->policy[p->px], 0, sizeof(c->policy[p->px]));
	memset(p->policy_line[p->px], 0, sizeof(p->policy_line[p->px]));
	p->policy_section_line[p->px] = p->line;
	c->policy[p->px].name = strdup(name);
	if (!c->policy[p->px].name)
		return ENOMEM;
	c->npolicy++;
	p->in = IN_POLICY;
	return set_defaults(&c->policy[p->px], "policy");
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
		p->in = IN_LARDER;
		p->where[0] = '\0';
		return 0;
	}
	if (word == 5 && !strncmp(q, "index", 5)) {
		name = quoted_name(q + 5);
		if (!name)
			goto syntax;
		return start_index(p, name);
	}
	if (word == 8 && !strncmp(q, "registry", 8)) {
		name = quoted_name(q + 8);
		if (!name)
			goto syntax;
		return start_registry(p, name);
	}
	if (word == 7 && !strncmp(q, "webhook", 7)) {
		name = quoted_name(q + 7);
		if (!name)
			goto syntax;
		return start_webhook(p, name);
	}
	if (word == 6 && !strncmp(q, "policy", 6)) {
		name = quoted_name(q + 6);
		if (!name)
			goto syntax;
		return start_policy(p, name);
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

/* The sections, and how a hint names them; [larder] is one, the others
 * are "sections". */
static const struct {
	const char *section, *named;
} sections[] = {
    {"larder", "[larder]"},
    {"index", "[index \"NAME\"]"},
    {"registry", "[registry \"NAME\"]"},
    {"webhook", "[webhook \"NAME\"]"},
    {"policy", "[policy \"NAME\"]"},
};

static int unknown_key(struct conf_parser *p, const char *section,
                       const char *key)
{
	char key_shown[MAX_SHOWN + 16], sect[200], hint[120] = "";
	const char *last = "larder";
	size_t best = 3, n = 0;

	shown(key, 1, key_shown, sizeof(key_shown));
	if (p->in == IN_LARDER)
		snprintf(sect, sizeof(sect), "[larder]");
	else if (p->in == IN_INDEX)
		snprintf(sect, sizeof(sect), "[index \"%s\"]",
		         p->c->index[p->ix].name);
	else if (p->in == IN_WEBHOOK)
		snprintf(sect, sizeof(sect), "[webhook \"%s\"]",
		         p->c->webhook[p->wx].name);
	else if (p->in == IN_POLICY)
		snprintf(sect, sizeof(sect), "[policy \"%s\"]",
		         p->c->policy[p->px].name);
	else
		snprintf(sect, sizeof(sect), "[registry \"%s\"]",
		         p->c->registry[p->rx].name);
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
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		if (!strcmp(sections[i].section, section) ||
		    !conf_find_key(sections[i].section, key))
			continue;
		n += (size_t)snprintf(hint + n, sizeof(hint) - n, "%s%s",
		                      n ? " or " : " (it belongs in ",
		                      sections[i].named);
		last = sections[i].section;
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
	enum conf_in in = p->in;
	size_t ix = p->ix, rx = p->rx, wx = p->wx;
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
	p->in = IN_NONE;
	p->where[0] = '\0';
	p->depth++;
	rc = parse_text(p, text, len);
	p->depth--;
	if (rc)
		return rc; /* the message names the included file's line */
	p->line = line;
	p->in = in;
	p->ix = ix;
	p->rx = rx;
	p->wx = wx;
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
	if (p->in == IN_NONE)
		return conf_fail(
		    p, p->line,
		    "\"%s\" is outside any section: expected " SECTIONS
		    " before it",
		    line_shown);
	section = p->in == IN_LARDER    ? "larder"
	          : p->in == IN_INDEX   ? "index"
	          : p->in == IN_WEBHOOK ? "webhook"
	          : p->in == IN_POLICY  ? "policy"
	                                : "registry";
	k = conf_find_key(section, key);
	if (!k)
		return unknown_key(p, section, key);
	err = read_value(eq + 1, &value, &why);
	if (err)
		return conf_fail(p, p->line, "%s%s: %s", p->where, key, why);
	shown(value, 1, value_shown, sizeof(value_shown));
	if (p->in == IN_LARDER) {
		base = p->c;
		line = &p->larder_line[k - conf_keys];
	} else if (p->in == IN_INDEX) {
		base = &p->c->index[p->ix];
		line = &p->index_line[p->ix][k - conf_keys];
	} else if (p->in == IN_WEBHOOK) {
		base = &p->c->webhook[p->wx];
		line = &p->webhook_line[p->wx][k - conf_keys];
	} else if (p->in == IN_POLICY) {
		base = &p->c->policy[p->px];
		line = &p->policy_line[p->px][k - conf_keys];
	} else {
		base = &p->c->registry[p->rx];
		line = &p->registry_line[p->rx][k - conf_keys];
	}
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
	if (!rc && p->declared)
		rc = conf_check_indexes(p);
	if (!rc && p->declared_registries)
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
