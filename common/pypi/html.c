#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/names.h"
#include "common/pypi/html.h"
#include "common/url.h"

#define URL_MAX 8192

/* The attributes the parser looks at, on whatever tag they come. */
enum attr_id {
	A_HREF,
	A_REQUIRES_PYTHON,
	A_YANKED,
	A_CORE_METADATA,
	A_DIST_INFO_METADATA,
	A_NAME,
	A_CONTENT,
	A_PROVENANCE,
	A_COUNT
};

static const char *const attr_names[A_COUNT] = {
	[A_HREF] = "href",
	[A_REQUIRES_PYTHON] = "data-requires-python",
	[A_YANKED] = "data-yanked",
	[A_CORE_METADATA] = "data-core-metadata",
	[A_DIST_INFO_METADATA] = "data-dist-info-metadata",
	[A_NAME] = "name",
	[A_CONTENT] = "content",
	[A_PROVENANCE] = "data-provenance",
};

/* An attribute as written, entities not yet decoded; v points into the
 * page. A boolean attribute (no "=value") is set with n 0. */
struct attr {
	const char *v;
	size_t n;
	int set;
};

struct tag {
	const char *name; /* NULL when the tag ran off the end of the page */
	size_t nlen;
	int end;          /* </name> */
	struct attr a[A_COUNT];
};

struct parser {
	const char *d;
	size_t len;
	const struct simple_opts *o;
	struct simple_page *p;
	size_t max;       /* links allowed */
	size_t links;     /* links seen */
	size_t cap;       /* room in p->files or p->projects */
	int in_a;         /* inside <a>: a and text are the link's */
	struct tag a;
	struct buf text;
	struct buf tmp;
	char *base;       /* <base href>, resolved, or NULL */
	int have_version;
	char *status;     /* pypi:project-status, first one, or NULL */
	char *reason;     /* pypi:project-status-reason, or NULL */
	char *err;
	size_t errlen;
};

static void fail(struct parser *ps, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(struct parser *ps, const char *fmt, ...)
{
	va_list ap;

	if (!ps->err || !ps->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(ps->err, ps->errlen, fmt, ap);
	va_end(ap);
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_alnum(char c)
{
	return is_alpha(c) || (c >= '0' && c <= '9');
}

static int digit_value(char c, int hex)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (hex && c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (hex && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Writes code point cp as UTF-8 to u; returns its length. */
static size_t utf8_put(unsigned long cp, char u[4])
{
	if (cp < 0x80) {
		u[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	u[0] = (char)(0xf0 | (cp >> 18));
	u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	u[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static const struct {
	const char *name;
	const char *text;
} named_refs[] = {
	{"amp", "&"},     {"AMP", "&"},     {"lt", "<"},      {"LT", "<"},
	{"gt", ">"},      {"GT", ">"},      {"quot", "\""},   {"QUOT", "\""},
	{"apos", "'"},    {"nbsp", "\xc2\xa0"}, {"plus", "+"}, {"equals", "="},
	{"num", "#"},     {"sol", "/"},     {"percnt", "%"},  {"colon", ":"},
	{"quest", "?"},   {"commat", "@"},  {"period", "."},  {"lowbar", "_"},
	{"excl", "!"},    {"semi", ";"},    {"comma", ","},
};

/* Decodes the character reference at s[0] == '&' (n bytes available) into
 * u (*ulen bytes). Returns the length of the reference, or 0 when there is
 * none to decode there. */
static size_t char_ref(const char *s, size_t n, char u[4], size_t *ulen)
{
	unsigned long cp = 0;
	size_t i, digits = 0;

	if (n >= 3 && s[1] == '#') {
		int hex = s[2] == 'x' || s[2] == 'X';

		for (i = hex ? 3 : 2; i < n; i++, digits++) {
			int d = digit_value(s[i], hex);

			if (d < 0)
				break;
			if (cp <= 0x10ffff)
				cp = cp * (hex ? 16 : 10) + (unsigned long)d;
		}
		if (!digits || i >= n || s[i] != ';')
			return 0;
		/* NUL, surrogates and beyond Unicode stay as written */
		if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		*ulen = utf8_put(cp, u);
		return i + 1;
	}
	for (i = 1; i < n && i <= 8 && is_alnum(s[i]); i++)
		;
	if (i >= n || s[i] != ';')
		return 0;
	for (size_t k = 0; k < sizeof(named_refs) / sizeof(named_refs[0]);
	     k++) {
		const char *name = named_refs[k].name;

		if (strlen(name) == i - 1 && memcmp(name, s + 1, i - 1) == 0) {
			*ulen = strlen(named_refs[k].text);
			memcpy(u, named_refs[k].text, *ulen);
			return i + 1;
		}
	}
	return 0;
}

int html_unescape(const char *s, size_t len, struct buf *out)
{
	size_t i = 0, run = 0;
	int err = 0;

	while (!err && i < len) {
		char u[4];
		size_t ulen = 0, n;

		if (s[i] != '&') {
			i++;
			continue;
		}
		n = char_ref(s + i, len - i, u, &ulen);
		if (!n) {
			i++;
			continue;
		}
		err = buf_add(out, s + run, i - run);
		if (!err)
			err = buf_add(out, u, ulen);
		i += n;
		run = i;
	}
	if (!err)
		err = buf_add(out, s + run, len - run);
	return err;
}

static int tag_is(const struct tag *t, const char *name)
{
	return t->nlen == strlen(name) &&
	       strncasecmp(t->name, name, t->nlen) == 0;
}

/* Reads the tag at d[i] == '<' (an '<' then a letter, or "</" then a
 * letter) into t: its name and the attributes of attr_names, the first of
 * each name winning. Values may be double-quoted, single-quoted or bare.
 * Returns the index after the tag's '>'. */
static size_t read_tag(const char *d, size_t len, size_t i, struct tag *t)
{
	memset(t, 0, sizeof(*t));
	i++;
	if (d[i] == '/') {
		t->end = 1;
		i++;
	}
	t->name = d + i;
	while (i < len && !is_space(d[i]) && d[i] != '/' && d[i] != '>')
		i++;
	t->nlen = (size_t)(d + i - t->name);
	for (;;) {
		const char *name, *v = NULL;
		size_t nlen, vn = 0;

		while (i < len && (is_space(d[i]) || d[i] == '/'))
			i++;
		if (i >= len)
			break;
		if (d[i] == '>')
			return i + 1;
		name = d + i++;
		while (i < len && !is_space(d[i]) && d[i] != '/' &&
		       d[i] != '>' && d[i] != '=')
			i++;
		nlen = (size_t)(d + i - name);
		while (i < len && is_space(d[i]))
			i++;
		if (i < len && d[i] == '=') {
			i++;
			while (i < len && is_space(d[i]))
				i++;
			if (i < len && (d[i] == '"' || d[i] == '\'')) {
				const char *q = memchr(d + i + 1, d[i],
						       len - i - 1);

				if (!q)
					break;
				v = d + i + 1;
				vn = (size_t)(q - v);
				i = (size_t)(q - d) + 1;
			} else {
				v = d + i;
				while (i < len && !is_space(d[i]) &&
				       d[i] != '>')
					i++;
				vn = (size_t)(d + i - v);
			}
		}
		for (int k = 0; k < A_COUNT; k++) {
			if (t->a[k].set || strlen(attr_names[k]) != nlen ||
			    strncasecmp(attr_names[k], name, nlen) != 0)
				continue;
			t->a[k].v = v ? v : name;
			t->a[k].n = vn;
			t->a[k].set = 1;
		}
	}
	/* a tag the page ends inside is no tag */
	t->name = NULL;
	return len;
}

/* Returns the index of the "</name" that ends a raw-text element whose
 * content starts at d[i], or len. */
static size_t find_end_tag(const char *d, size_t len, size_t i,
			   const char *name)
{
	size_t n = strlen(name);

	for (;;) {
		const char *lt = memchr(d + i, '<', len - i);

		if (!lt)
			return len;
		i = (size_t)(lt - d);
		if (len - i >= n + 3 && d[i + 1] == '/' &&
		    strncasecmp(d + i + 2, name, n) == 0 &&
		    (is_space(d[i + n + 2]) || d[i + n + 2] == '/' ||
		     d[i + n + 2] == '>'))
			return i;
		i++;
	}
}

static void trim(const char **s, size_t *n)
{
	while (*n && is_space(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && is_space((*s)[*n - 1]))
		(*n)--;
}

/* Decodes s[0..n), trims white space off it, and sets *out to a copy (or
 * to NULL when trimming leaves nothing and empty_null is set). Returns 0,
 * ENOMEM, or EINVAL when the text holds a NUL byte, which would cut the
 * copy short. */
static int decode(struct parser *ps, const char *s, size_t n, int empty_null,
		  char **out)
{
	const char *t;
	size_t tn;
	int err;

	*out = NULL;
	buf_reset(&ps->tmp);
	err = html_unescape(s, n, &ps->tmp);
	if (err)
		return err;
	t = buf_str(&ps->tmp);
	tn = ps->tmp.len;
	if (memchr(t, '\0', tn))
		return EINVAL;
	trim(&t, &tn);
	if (!tn && empty_null)
		return 0;
	*out = strndup(t, tn);
	return *out ? 0 : ENOMEM;
}

static int decode_attr(struct parser *ps, const struct attr *a, char **out)
{
	return decode(ps, a->v, a->n, 0, out);
}

/* Reads data-core-metadata or data-dist-info-metadata: absent or "false",
 * not advertised; "sha256=<hex>", advertised with that hash (not at all
 * when the hash is malformed); anything else, such as "true", advertised
 * without one. */
static int core_metadata(struct parser *ps, const struct attr *a,
			 struct simple_file *f)
{
	char *v;
	int err = decode_attr(ps, a, &v);

	if (err)
		return err;
	if (strcasecmp(v, "false") == 0) {
		/* not advertised */
	} else if (strncasecmp(v, "sha256=", 7) == 0) {
		if (strlen(v + 7) == 64) {
			for (int i = 0; i < 64; i++) {
				char c = v[7 + i];

				f->meta_sha256[i] =
					c >= 'A' && c <= 'Z' ? c - 'A' + 'a'
							     : c;
			}
			f->meta_sha256[64] = '\0';
			f->core_metadata = names_is_sha256(f->meta_sha256);
		}
		if (!f->core_metadata)
			f->meta_sha256[0] = '\0';
	} else {
		f->core_metadata = 1;
	}
	free(v);
	return 0;
}

/* Makes room for one more entry in an array of cap elements of size sz. */
static int grow(void **arr, size_t *cap, size_t used, size_t sz)
{
	size_t ncap;
	void *n;

	if (used < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	if (ncap > SIZE_MAX / sz)
		return ENOMEM;
	n = realloc(*arr, ncap * sz);
	if (!n)
		return ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

static int file_link(struct parser *ps)
{
	const struct attr *a = ps->a.a, *meta = NULL;
	struct simple_file f;
	char *href = NULL;
	int err;

	memset(&f, 0, sizeof(f));
	f.size = -1;
	err = decode_attr(ps, &a[A_HREF], &href);
	if (!err)
		err = decode(ps, buf_str(&ps->text), ps->text.len, 1,
			     &f.filename);
	if (!err && a[A_REQUIRES_PYTHON].set)
		err = decode_attr(ps, &a[A_REQUIRES_PYTHON],
				  &f.requires_python);
	if (!err && a[A_YANKED].set) {
		f.yanked = 1;
		err = decode_attr(ps, &a[A_YANKED], &f.yanked_reason);
	}
	if (a[A_CORE_METADATA].set)
		meta = &a[A_CORE_METADATA];
	else if (a[A_DIST_INFO_METADATA].set)
		meta = &a[A_DIST_INFO_METADATA];
	if (!err && meta)
		err = core_metadata(ps, meta, &f);
	if (!err && a[A_PROVENANCE].set)
		err = decode(ps, a[A_PROVENANCE].v, a[A_PROVENANCE].n, 1,
			     &f.provenance);
	if (!err)
		err = grow((void **)&ps->p->files, &ps->cap, ps->p->nfiles,
			   sizeof(f));
	if (err) {
		free(f.filename);
		free(f.requires_python);
		free(f.yanked_reason);
		free(f.provenance);
		if (err == EINVAL) /* a NUL byte in the link */
			ps->p->dropped++;
		err = err == EINVAL ? 0 : err;
		goto out;
	}
	err = simple_file_accept(&f, href, ps->base, ps->o);
	if (err == EINVAL) {
		ps->p->dropped++;
		err = 0;
	} else if (!err) {
		ps->p->files[ps->p->nfiles++] = f;
	}
out:
	free(href);
	return err;
}

static int project_link(struct parser *ps)
{
	char norm[NAMES_MAX_PROJECT + 1];
	char *name;
	int err;

	err = decode(ps, buf_str(&ps->text), ps->text.len, 0, &name);
	if (err == EINVAL || (!err && names_normalize(name, norm,
						      sizeof(norm)))) {
		ps->p->dropped++;
		free(name);
		return 0;
	}
	if (err)
		return err;
	err = grow((void **)&ps->p->projects, &ps->cap, ps->p->nprojects,
		   sizeof(*ps->p->projects));
	if (err) {
		free(name);
		return err;
	}
	ps->p->projects[ps->p->nprojects++] = name;
	return 0;
}

/* Ends the open <a>: a link when it has an href. */
static int close_link(struct parser *ps)
{
	ps->in_a = 0;
	if (!ps->a.a[A_HREF].set)
		return 0;
	if (++ps->links > ps->max) {
		fail(ps, "html: more than %zu links", ps->max);
		return EINVAL;
	}
	return ps->p->is_list ? project_link(ps) : file_link(ps);
}

/* <meta name="pypi:repository-version" content="1.x"> (PEP 629), and the
 * PEP 792 pypi:project-status and pypi:project-status-reason; the first
 * of each name counts. */
static int on_meta(struct parser *ps, const struct tag *t)
{
	char *name = NULL, *content = NULL, **keep = NULL;
	int err;

	if (!t->a[A_NAME].set || !t->a[A_CONTENT].set)
		return 0;
	err = decode_attr(ps, &t->a[A_NAME], &name);
	if (err == EINVAL)
		err = 0;
	if (err || !name)
		goto out;
	if (strcasecmp(name, "pypi:project-status") == 0)
		keep = &ps->status;
	else if (strcasecmp(name, "pypi:project-status-reason") == 0)
		keep = &ps->reason;
	if (keep) {
		if (*keep)
			goto out;
		err = decode_attr(ps, &t->a[A_CONTENT], keep);
		/* a NUL in it: as if it were not there */
		err = err == EINVAL ? 0 : err;
		goto out;
	}
	if (ps->have_version ||
	    strcasecmp(name, "pypi:repository-version") != 0)
		goto out;
	ps->have_version = 1;
	err = decode_attr(ps, &t->a[A_CONTENT], &content);
	if (!err)
		err = simple_api_version(content, ps->p->api_version);
	if (err == EINVAL)
		fail(ps, "html: unsupported repository-version \"%.20s\"",
		     content ? content : "");
out:
	free(name);
	free(content);
	return err;
}

/* <base href>: links after it resolve against it, as in pip. */
static int on_base(struct parser *ps, const struct tag *t)
{
	struct buf b;
	char *href;
	int err;

	if (ps->base || !t->a[A_HREF].set)
		return 0;
	err = decode_attr(ps, &t->a[A_HREF], &href);
	if (err)
		return err == EINVAL ? 0 : err;
	buf_init(&b, URL_MAX);
	/* an unusable <base> is ignored, as browsers do */
	if (!url_resolve(ps->o->base_url, href, &b, NULL)) {
		ps->base = buf_steal(&b);
		if (!ps->base)
			err = ENOMEM;
	}
	buf_free(&b);
	free(href);
	return err;
}

/* <title>Links for NAME</title> names a project page. */
static int on_title(struct parser *ps, const char *s, size_t n)
{
	static const char prefix[] = "Links for ";
	char norm[NAMES_MAX_PROJECT + 1];
	char *title, *name;
	int err;

	if (ps->p->is_list || ps->p->name)
		return 0;
	err = decode(ps, s, n, 0, &title);
	if (err)
		return err == EINVAL ? 0 : err;
	name = title;
	if (strncmp(name, prefix, sizeof(prefix) - 1) == 0)
		name += sizeof(prefix) - 1;
	name += strspn(name, " \t\r\n\f");
	if (name != title && !names_normalize(name, norm, sizeof(norm))) {
		ps->p->name = strdup(name);
		if (!ps->p->name)
			err = ENOMEM;
	}
	free(title);
	return err;
}

/* Acts on a tag; *i is just after it and moves past the content of a
 * raw-text element. */
static int on_tag(struct parser *ps, const struct tag *t, size_t *i)
{
	static const char *const raw[] = {"title", "script", "style",
					  "textarea"};
	int err = 0;

	if (tag_is(t, "a")) {
		if (ps->in_a)
			err = close_link(ps);
		if (!err && !t->end) {
			ps->in_a = 1;
			ps->a = *t;
			buf_reset(&ps->text);
		}
		return err;
	}
	if (t->end)
		return 0;
	if (tag_is(t, "meta"))
		return on_meta(ps, t);
	if (tag_is(t, "base"))
		return on_base(ps, t);
	for (size_t k = 0; k < sizeof(raw) / sizeof(raw[0]); k++) {
		size_t start = *i, end;
		const char *gt;

		if (!tag_is(t, raw[k]))
			continue;
		end = find_end_tag(ps->d, ps->len, start, raw[k]);
		gt = memchr(ps->d + end, '>', ps->len - end);
		*i = gt ? (size_t)(gt - ps->d) + 1 : ps->len;
		if (k == 0)
			err = on_title(ps, ps->d + start, end - start);
		break;
	}
	return err;
}

/* Handles the markup at d[i] == '<'; returns the index after it. */
static size_t markup(struct parser *ps, size_t i, int *err)
{
	const char *d = ps->d;
	size_t rest = ps->len - i;
	const char *end;
	struct tag t;

	if (rest >= 4 && memcmp(d + i, "<!--", 4) == 0) {
		/* from i + 2, so that "<!-->" and "<!--->" end at once */
		end = memmem(d + i + 2, rest - 2, "-->", 3);
		return end ? (size_t)(end - d) + 3 : ps->len;
	}
	if (rest >= 2 && (is_alpha(d[i + 1]) || (rest >= 3 && d[i + 1] == '/' &&
						 is_alpha(d[i + 2])))) {
		i = read_tag(d, ps->len, i, &t);
		if (t.name)
			*err = on_tag(ps, &t, &i);
		return i;
	}
	if (rest >= 2 &&
	    (d[i + 1] == '!' || d[i + 1] == '?' || d[i + 1] == '/')) {
		/* <!DOCTYPE>, <?xml?>, </ bogus>: skipped */
		end = memchr(d + i, '>', rest);
		return end ? (size_t)(end - d) + 1 : ps->len;
	}
	/* a '<' that starts no markup is text */
	if (ps->in_a)
		*err = buf_add(&ps->text, "<", 1);
	return i + 1;
}

int html_parse_simple(const char *data, size_t len,
		      const struct simple_opts *o, int is_list,
		      struct simple_page *p, char *err, size_t errlen)
{
	struct parser ps;
	size_t i = 0;
	int e = EINVAL;

	memset(p, 0, sizeof(*p));
	p->is_list = is_list ? 1 : 0;
	memcpy(p->api_version, "1.0", 4);
	memset(&ps, 0, sizeof(ps));
	ps.d = data;
	ps.len = len;
	ps.o = o;
	ps.p = p;
	ps.err = err;
	ps.errlen = errlen;
	buf_init(&ps.text, len + 1);
	buf_init(&ps.tmp, len + 1);
	if (!o || !o->base_url) {
		fail(&ps, "html: no base URL");
		goto out;
	}
	ps.max = o->max_files ? o->max_files : SIMPLE_DEFAULT_MAX_FILES;
	e = 0;
	while (!e && i < len) {
		const char *lt = memchr(data + i, '<', len - i);
		size_t j = lt ? (size_t)(lt - data) : len;

		if (j > i && ps.in_a)
			e = buf_add(&ps.text, data + i, j - i);
		i = j;
		if (!e && i < len)
			i = markup(&ps, i, &e);
	}
	if (!e && ps.in_a)
		e = close_link(&ps);
	/* PEP 700: HTML has no versions list; JSON from 1.1 must */
	if (!e)
		e = simple_derive_versions(p);
	if (!e && ps.status && !is_list)
		e = simple_status_set(p, ps.status, strlen(ps.status),
				      ps.reason,
				      ps.reason ? strlen(ps.reason) : 0);
	if (!e)
		simple_status_apply(p);
	if (e == ENOMEM)
		fail(&ps, "html: out of memory");
out:
	buf_free(&ps.text);
	buf_free(&ps.tmp);
	free(ps.base);
	free(ps.status);
	free(ps.reason);
	if (e)
		simple_page_free(p);
	return e;
}
