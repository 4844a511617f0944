/* conf_value: the parsing of one value of a key (conf_keys.c holds the
 * table that says which type each key has), the character classes the
 * parser shares, and the fields a key names. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/conf/conf.h"
#include "common/conf/keys.h"
#include "common/isotime.h"

int conf_is_ws(int ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' ||
	       ch == '\f';
}

int conf_is_ctl(int ch)
{
	return (unsigned char)ch < 0x20 || ch == 0x7f;
}

int conf_is_lower_digit(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

int conf_is_alnum(int ch)
{
	return conf_is_lower_digit(ch) || (ch >= 'A' && ch <= 'Z');
}

void *conf_field(void *base, const struct conf_key *k)
{
	return (char *)base + k->off;
}

const void *conf_cfield(const void *base, const struct conf_key *k)
{
	return (const char *)base + k->off;
}

int conf_is_string(enum conf_type t)
{
	return t == T_STRING || t == T_PATH || t == T_URL || t == T_LIST ||
	       t == T_URLPATH;
}


/* Parses a non-negative decimal number at *s, moving *s past it.
 * Returns 0, EINVAL (no digits) or ERANGE. */
static int parse_number(const char **s, long *out)
{
	const char *p = *s;
	long n = 0;

	if (*p < '0' || *p > '9')
		return EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (n > (LONG_MAX - (*p - '0')) / 10)
			return ERANGE;
		n = n * 10 + (*p - '0');
	}
	*s = p;
	*out = n;
	return 0;
}

/* A number followed by at most one unit letter from units, each worth the
 * matching entry of mult. Returns 0, EINVAL or ERANGE. */
static int parse_scaled(const char *s, const char *units, const long *mult,
                        long *out)
{
	const char *u;
	long n, m = 1;
	int err;

	err = parse_number(&s, &n);
	if (err)
		return err;
	if (*s) {
		u = strchr(units, *s);
		if (!u || s[1])
			return EINVAL;
		m = mult[u - units];
	}
	if (n > LONG_MAX / m)
		return ERANGE;
	*out = n * m;
	return 0;
}

static int parse_count(const char *s, long *out)
{
	int err = parse_number(&s, out);

	return !err && *s ? EINVAL : err;
}

static int parse_seconds(const char *s, long *out)
{
	static const long mult[] = {1, 60, 3600, 86400};

	return parse_scaled(s, "smhd", mult, out);
}

static int parse_size(const char *s, long *out)
{
	static const long mult[] = {1L << 10, 1L << 10, 1L << 20,
	                            1L << 20, 1L << 30, 1L << 30};

	return parse_scaled(s, "kKmMgG", mult, out);
}

/* "5%": a whole number below 100 followed by '%'. */
static int parse_percent(const char *s, long *out)
{
	int err = parse_number(&s, out);

	if (err == ERANGE || (!err && *out > 99))
		return ERANGE;
	return !err && strcmp(s, "%") ? EINVAL : err;
}

/* An RFC 3339 time after 1970, or "" for none (0). */
static int parse_time(const char *s, long *out)
{
	long long t;

	if (!*s) {
		*out = 0;
		return 0;
	}
	if (isotime_parse(s, strlen(s), &t) || t <= 0 || t > LONG_MAX)
		return EINVAL;
	*out = (long)t;
	return 0;
}

static int parse_bool(const char *s, int *out)
{
	static const char *const yes[] = {"yes", "true", "on", "1", NULL};
	static const char *const no[] = {"no", "false", "off", "0", NULL};

	for (size_t i = 0; yes[i]; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return EINVAL;
}

/* Checks an absolute http(s) URL and returns a copy with the scheme in
 * lowercase and a '/' at the end, in *out. Returns 0, EINVAL with *why set
 * when there is more to say than the type's form, or ENOMEM. */
static int norm_url(const char *s, char **out, const char **why)
{
	const char *auth, *end, *host, *p;
	size_t skip, len;
	char *u;

	*why = NULL;
	if (!strncasecmp(s, "https://", 8))
		skip = 8;
	else if (!strncasecmp(s, "http://", 7))
		skip = 7;
	else
		return EINVAL;
	for (p = s; *p; p++) {
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f ||
		    strchr("\"<>\\^`{|}", *p))
			return EINVAL;
		if (*p == '?' || *p == '#') {
			*why = "a query or fragment is not allowed";
			return EINVAL;
		}
	}
	auth = s + skip;
	end = auth + strcspn(auth, "/");
	host = auth;
	for (p = auth; p < end; p++)
		if (*p == '@')
			host = p + 1; /* after any user:password@ */
	if (*host == '[') {
		p = memchr(host, ']', (size_t)(end - host));
		if (!p || p == host + 1)
			return EINVAL;
		p++;
	} else {
		for (p = host; p < end && *p != ':'; p++)
			;
		if (p == host)
			return EINVAL;
	}
	if (p < end) {
		long n = 0;

		if (*p != ':' || p + 1 == end)
			return EINVAL;
		for (p++; p < end; p++) {
			if (*p < '0' || *p > '9' || n > 65535)
				return EINVAL;
			n = n * 10 + (*p - '0');
		}
		if (n < 1 || n > 65535)
			return EINVAL;
	}
	len = strlen(s);
	u = malloc(len + 2);
	if (!u)
		return ENOMEM;
	memcpy(u, s, len + 1);
	for (size_t i = 0; i < skip; i++)
		if (u[i] >= 'A' && u[i] <= 'Z')
			u[i] = (char)(u[i] - 'A' + 'a');
	if (u[len - 1] != '/') {
		u[len] = '/';
		u[len + 1] = '\0';
	}
	*out = u;
	return 0;
}

static int is_urlpath(const char *s)
{
	const char *seg;
	size_t n;

	if (s[0] != '/' || s[1] == '\0')
		return 0;
	for (seg = s + 1; *seg; seg += n + 1) {
		n = strcspn(seg, "/");
		if (seg[n] != '/')
			return 0; /* does not end with '/' */
		if (n == 0 || (n == 1 && seg[0] == '.') ||
		    (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return 0;
		for (size_t i = 0; i < n; i++)
			if (!conf_is_alnum(seg[i]) && !strchr("._~+-", seg[i]))
				return 0;
	}
	return 1;
}

/* Copies the words of s, separated by single spaces, into *out. */
static int norm_list(const char *s, char **out)
{
	char *l = malloc(strlen(s) + 1);
	size_t n = 0;

	if (!l)
		return ENOMEM;
	while (*s) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		if (n)
			l[n++] = ' ';
		while (*s && *s != ' ' && *s != '\t')
			l[n++] = *s++;
	}
	l[n] = '\0';
	*out = l;
	return 0;
}

int conf_is_inherited(const void *base, const struct conf_key *k)
{
	const void *f = conf_cfield(base, k);

	if (!k->inherit)
		return 0;
	if (conf_is_string(k->type))
		return *(char *const *)f == NULL;
	if (k->type == T_BOOL || k->type == T_ENUM)
		return *(const int *)f < 0;
	return *(const long *)f < 0;
}

void conf_set_inherited(void *base, const char *section)
{
	for (size_t i = 0; i < CONF_NKEYS; i++) {
		const struct conf_key *k = &conf_keys[i];
		void *f = conf_field(base, k);

		if (!k->inherit || strcmp(k->section, section))
			continue;
		if (conf_is_string(k->type))
			*(char **)f = NULL;
		else if (k->type == T_BOOL || k->type == T_ENUM)
			*(int *)f = -1;
		else
			*(long *)f = -1;
	}
}

/* Parses v as key k into base (a struct conf or struct conf_index).
 * Returns 0, ENOMEM, or EINVAL with *why set to what went wrong beyond
 * "not the expected form" (or NULL) and *form to a specific form
 * expected (or NULL for the key's own). */
int conf_set_value(void *base, const struct conf_key *k, const char *v,
                   const char **why, const char **form)
{
	void *f = conf_field(base, k);
	char *s = NULL;
	long n = 0;
	int err = 0, b = 0;

	*why = NULL;
	*form = NULL;
	for (const char *p = v; *p; p++) {
		if (conf_is_ctl(*p) && !(k->type == T_LIST && *p == '\t')) {
			*why = "control character";
			return EINVAL;
		}
	}
	switch (k->type) {
	case T_STRING:
	case T_URLPATH:
		if (k->type == T_URLPATH && !is_urlpath(v))
			return EINVAL;
		s = strdup(v);
		err = s ? 0 : ENOMEM;
		break;
	case T_PATH:
		/* "" is none, for a key that is none unless set */
		if (v[0] != '/' && !(!v[0] && k->def && !k->def[0]))
			return EINVAL;
		s = strdup(v);
		if (!s)
			return ENOMEM;
		for (size_t len = strlen(s); len > 1 && s[len - 1] == '/';)
			s[--len] = '\0';
		break;
	case T_URL:
		err = norm_url(v, &s, why);
		break;
	case T_LIST:
		err = norm_list(v, &s);
		break;
	case T_ENUM:
		for (n = 0; k->values[n] && strcmp(k->values[n], v); n++)
			;
		if (!k->values[n])
			return EINVAL;
		*(int *)f = (int)n;
		break;
	case T_SECONDS:
	case T_SIZE:
	case T_COUNT:
	case T_PERCENT:
		if (k->type == T_SECONDS)
			err = parse_seconds(v, &n);
		else if (k->type == T_SIZE)
			err = parse_size(v, &n);
		else if (k->type == T_PERCENT)
			err = parse_percent(v, &n);
		else
			err = parse_count(v, &n);
		if (err == ERANGE) {
			*why = "too large";
			err = EINVAL;
		}
		if (err)
			return err;
		*(long *)f = n;
		break;
	case T_TIME:
		err = parse_time(v, &n);
		if (err)
			return err;
		*(long *)f = n;
		break;
	case T_BOOL:
		err = parse_bool(v, &b);
		if (err)
			return err;
		*(int *)f = b;
		break;
	}
	if (err)
		return err;
	if (conf_is_string(k->type)) {
		free(*(char **)f);
		*(char **)f = s;
	}
	if (k->check)
		*form = k->check(f);
	return *form ? EINVAL : 0;
}
