#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/dist/requirements.h"
#include "common/log.h"

#define MAX_LINE (1 << 20)

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static int is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

static char *skip_space(char *s)
{
	while (is_space(*s))
		s++;
	return s;
}

static void trim_end(char *s)
{
	size_t n = strlen(s);

	while (n && is_space(s[n - 1]))
		s[--n] = '\0';
}

/* Cuts a comment off s: '#' at the start or after white space. */
static void cut_comment(char *s)
{
	for (char *p = s; *p; p++)
		if (*p == '#' && (p == s || is_space(p[-1]))) {
			*p = '\0';
			return;
		}
}

static struct req_entry *push(struct requirements *r, int line)
{
	struct req_entry *v;

	if (r->n >= REQ_MAX_LINES)
		return NULL;
	v = realloc(r->v, (r->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	r->v = v;
	memset(&v[r->n], 0, sizeof(v[0]));
	v[r->n].line = line;
	return &v[r->n++];
}

/* Whether option word w (after its dashes) is opt, as "-r X", "-rX",
 * "--requirement X" or "--requirement=X"; *arg is then the argument. */
static int option(char *s, const char *shrt, const char *lng, char **arg)
{
	size_t n;

	if (s[0] == '-' && s[1] == shrt[0] && s[1] != '-') {
		*arg = skip_space(s + 2);
		if (**arg == '=')
			*arg = skip_space(*arg + 1);
		return 1;
	}
	n = strlen(lng);
	if (strncmp(s, lng, n) == 0 &&
	    (s[n] == '\0' || s[n] == '=' || is_space(s[n]))) {
		*arg = skip_space(s + n + (s[n] == '='));
		return 1;
	}
	return 0;
}

/* Reads the --hash options in opts into e. */
static int hashes(struct req_entry *e, char *opts, char *err, size_t errlen)
{
	char *p = opts;

	while (*(p = skip_space(p))) {
		char *word = p, *val;
		size_t n;

		while (*p && !is_space(*p))
			p++;
		if (*p)
			*p++ = '\0';
		if (strncmp(word, "--hash", 6) != 0 ||
		    (word[6] != '=' && word[6] != '\0')) {
			log_reason(err, errlen, "line %d: unknown option %s",
			           e->line, word);
			return EINVAL;
		}
		if (word[6] == '=') {
			val = word + 7;
		} else {
			val = p = skip_space(p);
			while (*p && !is_space(*p))
				p++;
			if (*p)
				*p++ = '\0';
		}
		n = strlen(val);
		if (strncmp(val, "sha256:", 7) != 0 || n != 7 + 64 ||
		    strspn(val + 7, "0123456789abcdefABCDEF") != 64) {
			log_reason(err, errlen,
			           "line %d: --hash %s: expected sha256:HEX "
			           "(64 digits)",
			           e->line, val);
			return EINVAL;
		}
		if (e->nhashes >= REQ_MAX_HASHES)
			return E2BIG;
		if (!e->hashes) {
			e->hashes =
			    calloc(REQ_MAX_HASHES, sizeof(e->hashes[0]));
			if (!e->hashes)
				return ENOMEM;
		}
		for (int i = 0; i < 64; i++) {
			char c = val[7 + i];

			e->hashes[e->nhashes][i] =
			    (c >= 'A' && c <= 'F') ? (char)(c - 'A' + 'a') : c;
		}
		e->hashes[e->nhashes++][64] = '\0';
	}
	return 0;
}

/* A requirement line s: name[extras] ==version [; marker] [options]. */
static int requirement(struct req_entry *e, char *s, char *err, size_t errlen)
{
	char *opts = NULL, *marker, *p = s, *name, *ver;
	char save;
	int rc;

	for (char *q = s; *q; q++)
		if (is_space(*q) && q[1] == '-' && q[2] == '-') {
			opts = q + 1;
			*q = '\0';
			break;
		}
	marker = strchr(s, ';');
	if (marker) {
		*marker = '\0';
		marker = skip_space(marker + 1);
		trim_end(marker);
	}
	trim_end(s);
	e->kind = REQ_UNPINNED;
	name = p;
	while (is_name_char(*p))
		p++;
	save = *p;
	*p = '\0';
	rc = names_normalize(name, e->name, sizeof(e->name));
	*p = save;
	if (rc || strstr(s, "://"))
		return 0; /* a path or URL: not pinned */
	p = skip_space(p);
	if (*p == '[') {
		p = strchr(p, ']');
		if (!p) {
			log_reason(err, errlen, "line %d: unclosed [extras]",
			           e->line);
			return EINVAL;
		}
		p = skip_space(p + 1);
	}
	if (strncmp(p, "===", 3) == 0)
		p += 3;
	else if (strncmp(p, "==", 2) == 0)
		p += 2;
	else
		return 0;
	ver = p = skip_space(p);
	while (*p && !is_space(*p) && *p != ',')
		p++;
	if (p == ver || *skip_space(p) ||
	    (size_t)(p - ver) >= sizeof(e->version))
		return 0;
	if (p[-1] == '*')
		return 0; /* ==1.* is a range */
	memcpy(e->version, ver, (size_t)(p - ver));
	e->version[p - ver] = '\0';
	e->kind = REQ_PIN;
	if (marker && *marker) {
		e->marker = strdup(marker);
		if (!e->marker)
			return ENOMEM;
	}
	return opts ? hashes(e, opts, err, errlen) : 0;
}

static int logical_line(struct requirements *r, char *s, int line, char *err,
                        size_t errlen)
{
	struct req_entry *e;
	char *arg = NULL;

	cut_comment(s);
	s = skip_space(s);
	trim_end(s);
	if (!*s)
		return 0;
	e = push(r, line);
	if (!e)
		return r->n >= REQ_MAX_LINES ? E2BIG : ENOMEM;
	if (option(s, "r", "--requirement", &arg))
		e->kind = REQ_INCLUDE;
	else if (option(s, "c", "--constraint", &arg))
		e->kind = REQ_CONSTRAINT;
	else if (option(s, "e", "--editable", &arg))
		e->kind = REQ_UNPINNED;
	else if (s[0] == '-')
		e->kind = REQ_OPTION;
	else {
		e->text = strdup(s);
		if (!e->text)
			return ENOMEM;
		return requirement(e, s, err, errlen);
	}
	if (e->kind == REQ_INCLUDE || e->kind == REQ_CONSTRAINT) {
		if (!*arg) {
			log_reason(err, errlen, "line %d: %s without a file",
			           line, s);
			return EINVAL;
		}
		s = arg;
	}
	e->text = strdup(s);
	return e->text ? 0 : ENOMEM;
}

int requirements_parse(const char *data, size_t len, struct requirements *out,
                       char *err, size_t errlen)
{
	struct buf line;
	int rc = 0, lineno = 1, start = 1;

	memset(out, 0, sizeof(*out));
	buf_init(&line, MAX_LINE);
	if (memchr(data, '\0', len)) {
		log_reason(err, errlen, "a NUL byte: not a requirements file");
		return EINVAL;
	}
	for (size_t i = 0; i <= len && !rc; i++) {
		if (i < len && data[i] != '\n') {
			rc = buf_add(&line, &data[i], 1);
			continue;
		}
		if (line.len && line.data[line.len - 1] == '\r')
			line.data[--line.len] = '\0';
		if (line.len && line.data[line.len - 1] == '\\') {
			/* a continuation: keep going on the next line */
			line.data[line.len - 1] = ' ';
			if (i < len) {
				lineno++;
				continue;
			}
		}
		if (line.len)
			rc = logical_line(out, line.data, start, err, errlen);
		buf_reset(&line);
		start = ++lineno;
	}
	if (rc == E2BIG && err && !*err)
		log_reason(err, errlen, "line %d: too many lines or hashes",
		           start);
	buf_free(&line);
	return rc;
}

void requirements_free(struct requirements *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].marker);
		free(r->v[i].hashes);
		free(r->v[i].text);
	}
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

/* Markers: a recursive descent over or / and / ( ) / comparisons, in three
 * values: 1 true, 0 false, -1 unknown. A syntax error stops the parse. */
struct mk {
	const char *p;
	const struct req_env *env;
	int bad;
};

static void mk_space(struct mk *m)
{
	while (is_space(*m->p) || *m->p == '\n')
		m->p++;
}

static int mk_word(struct mk *m, const char *w)
{
	size_t n = strlen(w);

	mk_space(m);
	if (strncmp(m->p, w, n) != 0 || is_name_char(m->p[n]))
		return 0;
	m->p += n;
	return 1;
}

/* A value: a quoted string or a variable (its value, NULL if unknown).
 * *isver says whether it is one compared as a version. */
static int mk_value(struct mk *m, char *out, size_t len, int *known, int *isver)
{
	static const char *const vars[] = {
	    "python_version",  "python_full_version", "sys_platform",
	    "platform_system", "platform_machine",    "implementation_name",
	    "os_name",
	};
	const struct req_env *e = m->env;
	const char *vals[] = {e->python_version,   e->python_full_version,
	                      e->sys_platform,     e->platform_system,
	                      e->platform_machine, e->implementation_name,
	                      e->os_name};
	const char *start;
	size_t n;

	mk_space(m);
	*known = 1;
	*isver = 0;
	if (*m->p == '"' || *m->p == '\'') {
		char q = *m->p++;

		start = m->p;
		while (*m->p && *m->p != q)
			m->p++;
		if (!*m->p || (size_t)(m->p - start) >= len)
			return -1;
		memcpy(out, start, (size_t)(m->p - start));
		out[m->p - start] = '\0';
		m->p++;
		return 0;
	}
	start = m->p;
	while (is_name_char(*m->p))
		m->p++;
	n = (size_t)(m->p - start);
	if (!n)
		return -1;
	*known = 0;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (strlen(vars[i]) == n && strncmp(start, vars[i], n) == 0 &&
		    vals[i] && strlen(vals[i]) < len) {
			strcpy(out, vals[i]);
			*known = 1;
			*isver = i < 2;
		}
	return 0;
}

/* Compares dotted numbers a and b: <0, 0, >0; 2 when either is not one.
 * With prefix, only b's segments count ("3.1" matches "3.1.4"). */
static int vcmp(const char *a, const char *b, int prefix)
{
	while (*a || *b) {
		char *ea, *eb;
		unsigned long x, y;

		if (prefix && !*b)
			return 0;
		x = *a ? strtoul(a, &ea, 10) : 0;
		y = *b ? strtoul(b, &eb, 10) : 0;
		if ((*a && (ea == a || (*ea && *ea != '.'))) ||
		    (*b && (eb == b || (*eb && *eb != '.'))))
			return 2;
		if (x != y)
			return x < y ? -1 : 1;
		a = *a ? ea + (*ea == '.') : a;
		b = *b ? eb + (*eb == '.') : b;
	}
	return 0;
}

static int compare(const char *l, const char *op, const char *r, int isver)
{
	char pre[128];
	size_t n = strlen(r);
	int c;

	if (strcmp(op, "in") == 0)
		return strstr(r, l) != NULL;
	if (strcmp(op, "not in") == 0)
		return strstr(r, l) == NULL;
	if (strcmp(op, "===") == 0)
		return strcmp(l, r) == 0;
	if (!isver)
		return strcmp(op, "==") == 0   ? strcmp(l, r) == 0
		       : strcmp(op, "!=") == 0 ? strcmp(l, r) != 0
		                               : -1;
	if ((op[0] == '=' || op[0] == '!') && n > 2 &&
	    strcmp(r + n - 2, ".*") == 0 && n - 2 < sizeof(pre)) {
		memcpy(pre, r, n - 2);
		pre[n - 2] = '\0';
		c = vcmp(l, pre, 1);
		return c == 2 ? -1 : (op[0] == '=') == (c == 0);
	}
	c = vcmp(l, r, 0);
	if (c == 2)
		return -1;
	if (strcmp(op, "~=") == 0) {
		const char *dot = strrchr(r, '.');

		if (!dot || (size_t)(dot - r) >= sizeof(pre))
			return -1;
		memcpy(pre, r, (size_t)(dot - r));
		pre[dot - r] = '\0';
		return c >= 0 && vcmp(l, pre, 1) == 0;
	}
	if (strcmp(op, "==") == 0)
		return c == 0;
	if (strcmp(op, "!=") == 0)
		return c != 0;
	if (strcmp(op, "<=") == 0)
		return c <= 0;
	if (strcmp(op, ">=") == 0)
		return c >= 0;
	if (strcmp(op, "<") == 0)
		return c < 0;
	return c > 0; /* ">" */
}

static int mk_or(struct mk *m, int depth);

static int mk_atom(struct mk *m, int depth)
{
	static const char *const ops[] = {
	    "===", "==", "!=", "<=", ">=", "~=", "<", ">"};
	char l[128], r[128];
	const char *op = NULL;
	int lk, rk, lv, rv, v;

	mk_space(m);
	if (*m->p == '(') {
		m->p++;
		v = mk_or(m, depth + 1);
		mk_space(m);
		if (*m->p != ')')
			m->bad = 1;
		else
			m->p++;
		return v;
	}
	if (mk_value(m, l, sizeof(l), &lk, &lv)) {
		m->bad = 1;
		return -1;
	}
	mk_space(m);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]) && !op; i++)
		if (strncmp(m->p, ops[i], strlen(ops[i])) == 0) {
			op = ops[i];
			m->p += strlen(op);
		}
	if (!op && mk_word(m, "in"))
		op = "in";
	else if (!op && mk_word(m, "not") && mk_word(m, "in"))
		op = "not in";
	if (!op || mk_value(m, r, sizeof(r), &rk, &rv)) {
		m->bad = 1;
		return -1;
	}
	if (!lk || !rk)
		return -1;
	return compare(l, op, r, lv || rv);
}

static int mk_and(struct mk *m, int depth)
{
	int v = mk_atom(m, depth);

	while (!m->bad && mk_word(m, "and")) {
		int w = mk_atom(m, depth);

		v = (v == 0 || w == 0) ? 0 : (v < 0 || w < 0) ? -1 : 1;
	}
	return v;
}

static int mk_or(struct mk *m, int depth)
{
	int v;

	if (depth > 32) {
		m->bad = 1;
		return -1;
	}
	v = mk_and(m, depth);
	while (!m->bad && mk_word(m, "or")) {
		int w = mk_and(m, depth);

		v = (v == 1 || w == 1) ? 1 : (v < 0 || w < 0) ? -1 : 0;
	}
	return v;
}

int requirements_marker(const char *marker, const struct req_env *env)
{
	struct mk m = {marker, env, 0};
	int v;

	if (!marker)
		return 1;
	v = mk_or(&m, 0);
	mk_space(&m);
	if (m.bad || *m.p)
		return 1;
	return v != 0;
}
