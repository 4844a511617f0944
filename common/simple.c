#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/names.h"
#include "common/simple.h"
#include "common/url.h"

#define MAX_HASHES 16       /* per file; more are ignored */
#define HASH_NAME_MAX 32
#define HASH_VALUE_MAX 256  /* hex digits */
#define URL_MAX 8192

static void fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int is_hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (c >= 'A' && c <= 'F');
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c + ('a' - 'A')) : c;
}

/* Returns 1 when s is well-formed UTF-8 (no overlong forms, surrogates or
 * code points past U+10FFFF), else 0. NULL is fine. */
static int utf8_ok(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	if (!s)
		return 1;
	while (*u) {
		unsigned int c = *u, cp;
		int n;

		if (c < 0x80) {
			u++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		for (int i = 1; i <= n; i++) {
			if ((u[i] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (u[i] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return 0;
		u += n + 1;
	}
	return 1;
}

static void file_free(struct simple_file *f)
{
	free(f->filename);
	free(f->url);
	for (size_t i = 0; i < f->nhashes; i++) {
		free(f->hashes[i].name);
		free(f->hashes[i].value);
	}
	free(f->hashes);
	free(f->requires_python);
	free(f->yanked_reason);
	free(f->upload_time);
	memset(f, 0, sizeof(*f));
}

static const struct simple_hash *hash_find(const struct simple_file *f,
					   const char *name)
{
	for (size_t i = 0; i < f->nhashes; i++)
		if (strcmp(f->hashes[i].name, name) == 0)
			return &f->hashes[i];
	return NULL;
}

/* Adds the hash name[0..nlen) = value[0..vlen) to f, both lowercased,
 * unless f has one of that name already. A name that is not a short
 * [A-Za-z0-9_-] word or a value that is not hex is skipped. Returns 0 or
 * ENOMEM. */
static int hash_add(struct simple_file *f, const char *name, size_t nlen,
		    const char *value, size_t vlen)
{
	char n[HASH_NAME_MAX + 1];
	struct simple_hash *h;
	char *v;

	if (nlen == 0 || nlen > HASH_NAME_MAX || vlen == 0 ||
	    vlen > HASH_VALUE_MAX || f->nhashes >= MAX_HASHES)
		return 0;
	for (size_t i = 0; i < nlen; i++) {
		char c = name[i];

		if (!is_hex(c) && !(c >= 'g' && c <= 'z') &&
		    !(c >= 'G' && c <= 'Z') && c != '_' && c != '-')
			return 0;
		n[i] = lower(c);
	}
	n[nlen] = '\0';
	for (size_t i = 0; i < vlen; i++)
		if (!is_hex(value[i]))
			return 0;
	if (hash_find(f, n))
		return 0;
	h = realloc(f->hashes, (f->nhashes + 1) * sizeof(*h));
	if (!h)
		return ENOMEM;
	f->hashes = h;
	v = malloc(vlen + 1);
	h[f->nhashes].name = strdup(n);
	if (!v || !h[f->nhashes].name) {
		free(v);
		free(h[f->nhashes].name);
		return ENOMEM;
	}
	for (size_t i = 0; i < vlen; i++)
		v[i] = lower(value[i]);
	v[vlen] = '\0';
	h[f->nhashes].value = v;
	f->nhashes++;
	return 0;
}

/* Adds the "name=hex" pairs of a URL fragment ('&'-separated) to f. */
static int frag_hashes(struct simple_file *f, const char *s, size_t n)
{
	const char *end = s + n;
	int err;

	while (s < end) {
		const char *amp = memchr(s, '&', (size_t)(end - s));
		const char *stop = amp ? amp : end;
		const char *eq = memchr(s, '=', (size_t)(stop - s));

		if (eq) {
			err = hash_add(f, s, (size_t)(eq - s), eq + 1,
				       (size_t)(stop - eq - 1));
			if (err)
				return err;
		}
		s = stop + (amp ? 1 : 0);
	}
	return 0;
}

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	return lower(c) - 'a' + 10;
}

/* Sets *out to the percent-decoded last path segment of url (which has no
 * fragment). Returns 0 or ENOMEM. */
static int last_segment(const char *url, char **out)
{
	size_t end = strcspn(url, "?");
	size_t start = end;
	char *s;
	size_t n = 0;

	while (start > 0 && url[start - 1] != '/')
		start--;
	s = malloc(end - start + 1);
	if (!s)
		return ENOMEM;
	for (size_t i = start; i < end; i++) {
		if (url[i] == '%' && i + 2 < end && is_hex(url[i + 1]) &&
		    is_hex(url[i + 2])) {
			s[n++] = (char)(hex_val(url[i + 1]) * 16 +
					hex_val(url[i + 2]));
			i += 2;
		} else {
			s[n++] = url[i];
		}
	}
	s[n] = '\0';
	*out = s;
	return 0;
}

int simple_api_version(const char *claimed, char out[16])
{
	const char *s = claimed;
	size_t n;
	int minor = 0;

	if (!s) {
		memcpy(out, "1.0", 4);
		return 0;
	}
	s += strspn(s, " \t\r\n");
	n = strspn(s, "0123456789");
	if (n == 0 || n > 9)
		return EINVAL;
	while (n > 1 && *s == '0') {
		s++;
		n--;
	}
	if (n != 1 || *s != '1')
		return EINVAL;
	s++;
	if (*s == '.') {
		s++;
		n = strspn(s, "0123456789");
		if (n == 0 || n > 9)
			return EINVAL;
		minor = strspn(s, "0") < n;
		s += n;
	}
	s += strspn(s, " \t\r\n");
	if (*s)
		return EINVAL;
	memcpy(out, minor ? "1.1" : "1.0", 4);
	return 0;
}

int simple_file_accept(struct simple_file *f, const char *href,
		       const char *base, const struct simple_opts *o)
{
	struct buf url, frag;
	const struct simple_hash *h;
	int err = EINVAL;

	buf_init(&url, URL_MAX);
	buf_init(&frag, URL_MAX);
	if (!href || !o || !o->base_url || f->url)
		goto out;
	err = url_resolve(base ? base : o->base_url, href, &url, &frag);
	if (err == E2BIG)
		err = EINVAL;
	if (err)
		goto out;
	err = EINVAL;
	if (!url_host_trusted(buf_str(&url), o->base_url, o->trusted))
		goto out;
	err = frag_hashes(f, buf_str(&frag), frag.len);
	if (err)
		goto out;
	f->url = buf_steal(&url);
	if (!f->url) {
		err = ENOMEM;
		goto out;
	}
	if (!f->filename) {
		err = last_segment(f->url, &f->filename);
		if (err)
			goto out;
	}
	err = EINVAL;
	if (!names_is_filename(f->filename))
		goto out;
	h = hash_find(f, "sha256");
	if (!h || !names_is_sha256(h->value))
		goto out;
	memcpy(f->sha256, h->value, sizeof(f->sha256));
	if (!utf8_ok(f->requires_python) || !utf8_ok(f->yanked_reason) ||
	    !utf8_ok(f->upload_time))
		goto out;
	if (!f->yanked) {
		free(f->yanked_reason);
		f->yanked_reason = NULL;
	}
	if (f->meta_sha256[0] && !names_is_sha256(f->meta_sha256))
		f->core_metadata = 0;
	if (!f->core_metadata)
		f->meta_sha256[0] = '\0';
	if (f->size < 0)
		f->size = -1;
	err = 0;
out:
	buf_free(&url);
	buf_free(&frag);
	if (err)
		file_free(f);
	return err;
}

/* Copies the JSON string v to *out (left NULL when v is not a string). */
static int dup_string(const json_t *v, char **out)
{
	if (!json_is_string(v))
		return 0;
	*out = strdup(json_string_value(v));
	return *out ? 0 : ENOMEM;
}

/* Reads PEP 658/714 metadata: true, false, or a dict of hashes. */
static void json_core_metadata(const json_t *v, struct simple_file *f)
{
	const json_t *h;
	const char *s;

	if (json_is_true(v)) {
		f->core_metadata = 1;
		return;
	}
	if (!json_is_object(v))
		return;
	h = json_object_get(v, "sha256");
	if (!h) {
		f->core_metadata = 1;
		return;
	}
	s = json_string_value(h);
	if (!s || strlen(s) != 64)
		return;
	for (int i = 0; i < 64; i++)
		f->meta_sha256[i] = lower(s[i]);
	f->meta_sha256[64] = '\0';
	f->core_metadata = names_is_sha256(f->meta_sha256);
	if (!f->core_metadata)
		f->meta_sha256[0] = '\0';
}

/* Reads one PEP 691 file entry into f and decides on it. Returns 0 (keep),
 * EINVAL (drop) or ENOMEM; f holds nothing unless 0. */
static int json_file(const json_t *jf, const struct simple_opts *o,
		     struct simple_file *f)
{
	json_t *hashes;
	const json_t *v;
	int err;

	memset(f, 0, sizeof(*f));
	f->size = -1;
	if (!json_is_object(jf) || !json_is_string(json_object_get(jf, "url")))
		return EINVAL;
	err = dup_string(json_object_get(jf, "filename"), &f->filename);
	if (err)
		goto out;
	hashes = json_object_get(jf, "hashes");
	/* sha256 first, so that a page of junk hashes cannot crowd it out */
	v = json_object_get(hashes, "sha256");
	if (json_is_string(v))
		err = hash_add(f, "sha256", 6, json_string_value(v),
			       json_string_length(v));
	for (void *it = json_object_iter(hashes); !err && it;
	     it = json_object_iter_next(hashes, it)) {
		const char *key = json_object_iter_key(it);

		v = json_object_iter_value(it);
		if (json_is_string(v))
			err = hash_add(f, key, strlen(key),
				       json_string_value(v),
				       json_string_length(v));
	}
	if (!err)
		err = dup_string(json_object_get(jf, "requires-python"),
				 &f->requires_python);
	if (err)
		goto out;
	v = json_object_get(jf, "yanked");
	if (json_is_true(v)) {
		f->yanked = 1;
	} else if (json_is_string(v) && json_string_length(v) > 0) {
		/* like pip, an empty reason is no yank at all */
		f->yanked = 1;
		err = dup_string(v, &f->yanked_reason);
		if (err)
			goto out;
	}
	v = json_object_get(jf, "core-metadata");
	if (!v)
		v = json_object_get(jf, "dist-info-metadata");
	if (!v) /* PyPI's name for it before PEP 714 */
		v = json_object_get(jf, "data-dist-info-metadata");
	json_core_metadata(v, f);
	v = json_object_get(jf, "size");
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		f->size = json_integer_value(v);
	err = dup_string(json_object_get(jf, "upload-time"), &f->upload_time);
	if (err)
		goto out;
	v = json_object_get(jf, "url");
	return simple_file_accept(f, json_string_value(v), NULL, o);
out:
	file_free(f);
	return err;
}

static int json_project(const json_t *root, const struct simple_opts *o,
			size_t max, struct simple_page *p, char *err,
			size_t errlen)
{
	char norm[NAMES_MAX_PROJECT + 1];
	const json_t *files, *versions, *v;
	size_t i, n;
	int e;

	v = json_object_get(root, "name");
	if (json_is_string(v) &&
	    !names_normalize(json_string_value(v), norm, sizeof(norm))) {
		e = dup_string(v, &p->name);
		if (e)
			goto nomem;
	}
	files = json_object_get(root, "files");
	if (!json_is_array(files)) {
		fail(err, errlen, "json: \"files\" is not an array");
		return EINVAL;
	}
	n = json_array_size(files);
	if (n > max) {
		fail(err, errlen, "json: %zu files, more than %zu", n, max);
		return EINVAL;
	}
	p->files = calloc(n ? n : 1, sizeof(*p->files));
	if (!p->files)
		goto nomem;
	for (i = 0; i < n; i++) {
		e = json_file(json_array_get(files, i), o,
			      &p->files[p->nfiles]);
		if (e == EINVAL)
			p->dropped++;
		else if (e)
			goto nomem;
		else
			p->nfiles++;
	}
	versions = json_object_get(root, "versions");
	if (!json_is_array(versions))
		return 0;
	n = json_array_size(versions);
	p->versions = calloc(n ? n : 1, sizeof(*p->versions));
	if (!p->versions)
		goto nomem;
	for (i = 0; i < n; i++) {
		v = json_array_get(versions, i);
		if (!json_is_string(v))
			continue;
		e = dup_string(v, &p->versions[p->nversions]);
		if (e)
			goto nomem;
		p->nversions++;
	}
	return 0;
nomem:
	fail(err, errlen, "json: out of memory");
	return ENOMEM;
}

static int json_list(const json_t *root, size_t max, struct simple_page *p,
		     char *err, size_t errlen)
{
	char norm[NAMES_MAX_PROJECT + 1];
	const json_t *projects, *v;
	size_t n;

	projects = json_object_get(root, "projects");
	if (!json_is_array(projects)) {
		fail(err, errlen, "json: \"projects\" is not an array");
		return EINVAL;
	}
	n = json_array_size(projects);
	if (n > max) {
		fail(err, errlen, "json: %zu projects, more than %zu", n, max);
		return EINVAL;
	}
	p->projects = calloc(n ? n : 1, sizeof(*p->projects));
	if (!p->projects)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		v = json_object_get(json_array_get(projects, i), "name");
		if (!json_is_string(v) ||
		    names_normalize(json_string_value(v), norm, sizeof(norm))) {
			p->dropped++;
			continue;
		}
		if (dup_string(v, &p->projects[p->nprojects]))
			goto nomem;
		p->nprojects++;
	}
	return 0;
nomem:
	fail(err, errlen, "json: out of memory");
	return ENOMEM;
}

int simple_parse_json(const char *data, size_t len, const struct simple_opts *o,
		      int is_list, struct simple_page *p, char *err,
		      size_t errlen)
{
	json_t *root = NULL;
	const json_t *meta, *v = NULL;
	json_error_t jerr;
	size_t max;
	int e = EINVAL;

	memset(p, 0, sizeof(*p));
	p->is_list = is_list ? 1 : 0;
	if (!o || !o->base_url) {
		fail(err, errlen, "json: no base URL");
		goto out;
	}
	max = o->max_files ? o->max_files : SIMPLE_DEFAULT_MAX_FILES;
	root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		if (json_error_code(&jerr) == json_error_out_of_memory)
			e = ENOMEM;
		fail(err, errlen, "json: %s (line %d, column %d)", jerr.text,
		     jerr.line, jerr.column);
		goto out;
	}
	if (!json_is_object(root)) {
		fail(err, errlen, "json: the document is not an object");
		goto out;
	}
	meta = json_object_get(root, "meta");
	if (meta && !json_is_object(meta)) {
		fail(err, errlen, "json: \"meta\" is not an object");
		goto out;
	}
	if (meta)
		v = json_object_get(meta, "api-version");
	if (v && !json_is_string(v)) {
		fail(err, errlen, "json: \"api-version\" is not a string");
		goto out;
	}
	if (simple_api_version(json_string_value(v), p->api_version)) {
		fail(err, errlen, "json: unsupported api-version \"%.20s\"",
		     json_string_value(v));
		goto out;
	}
	if (is_list)
		e = json_list(root, max, p, err, errlen);
	else
		e = json_project(root, o, max, p, err, errlen);
out:
	json_decref(root);
	if (e)
		simple_page_free(p);
	return e;
}

/* Hands JSON text from json_dump_callback() to a buf. */
struct sink {
	struct buf *b;
	int err;
};

static int sink_add(const char *s, size_t n, void *data)
{
	struct sink *k = data;

	k->err = buf_add(k->b, s, n);
	return k->err ? -1 : 0;
}

/* Sets obj[key] to v, taking v (which may be NULL after a failed make). */
static int jset(json_t *obj, const char *key, json_t *v)
{
	if (!v)
		return ENOMEM;
	return json_object_set_new(obj, key, v) ? ENOMEM : 0;
}

static int jset_str(json_t *obj, const char *key, const char *s)
{
	if (!utf8_ok(s))
		return EINVAL;
	return jset(obj, key, json_string(s));
}

static int japp(json_t *arr, json_t *v)
{
	if (!v)
		return ENOMEM;
	return json_array_append_new(arr, v) ? ENOMEM : 0;
}

/* The version a rendered page claims: p's, "1.0" when p has none. */
static const char *api_version(const struct simple_page *p)
{
	static const char *const known[] = {"1.0", "1.1"};
	char norm[16];

	if (!p->api_version[0] || simple_api_version(p->api_version, norm))
		return known[0];
	return strcmp(norm, "1.1") == 0 ? known[1] : known[0];
}

/* Whether a file is fit to be linked: a page built by hand may hold
 * anything, and what it holds ends up in a path. */
static int renderable(const struct simple_file *f)
{
	return f->filename && names_is_filename(f->filename) &&
	       names_is_sha256(f->sha256);
}

static int json_render_file(const struct simple_file *f, int pep700,
			    json_t *files)
{
	char url[sizeof("../../files//") + 64 + NAMES_MAX_FILENAME];
	json_t *jf = json_object(), *h = json_object(), *m;
	int err = ENOMEM;

	if (!jf || !h)
		goto out;
	snprintf(url, sizeof(url), "../../files/%s/%s", f->sha256,
		 f->filename);
	err = jset_str(jf, "filename", f->filename);
	if (!err)
		err = jset_str(jf, "url", url);
	for (size_t i = 0; !err && i < f->nhashes; i++)
		err = jset_str(h, f->hashes[i].name, f->hashes[i].value);
	if (!err) {
		err = jset(jf, "hashes", h);
		h = NULL;
	}
	if (!err && f->requires_python)
		err = jset_str(jf, "requires-python", f->requires_python);
	if (err)
		goto out;
	if (f->yanked && f->yanked_reason && f->yanked_reason[0])
		err = jset_str(jf, "yanked", f->yanked_reason);
	else
		err = jset(jf, "yanked", json_boolean(f->yanked));
	if (err)
		goto out;
	/* false rather than left out, as upstreams send it: a client that
	 * compares pages sees nothing lost */
	if (!f->core_metadata)
		m = json_false();
	else if (f->meta_sha256[0])
		m = json_pack("{ss}", "sha256", f->meta_sha256);
	else
		m = json_true();
	err = jset(jf, "core-metadata", m);
	if (!err && pep700 && f->size >= 0)
		err = jset(jf, "size", json_integer(f->size));
	if (!err && pep700 && f->upload_time)
		err = jset_str(jf, "upload-time", f->upload_time);
	if (!err) {
		err = japp(files, jf);
		jf = NULL;
	}
out:
	json_decref(h);
	json_decref(jf);
	return err;
}

/* Adds the project list's "projects" to root. */
static int json_list_doc(const struct simple_page *p, json_t *root)
{
	json_t *arr = json_array(), *o;
	int err = arr ? 0 : ENOMEM;

	for (size_t i = 0; !err && i < p->nprojects; i++) {
		o = json_object();
		err = o ? jset_str(o, "name", p->projects[i]) : ENOMEM;
		if (!err)
			err = japp(arr, o);
		else
			json_decref(o);
	}
	if (!err) {
		err = jset(root, "projects", arr);
		arr = NULL;
	}
	json_decref(arr);
	return err;
}

/* Adds a project page's "name", "files" and (PEP 700) "versions" to
 * root. */
static int json_project_doc(const struct simple_page *p, int pep700,
			    json_t *root)
{
	json_t *files = json_array(), *versions = NULL;
	int err = files ? 0 : ENOMEM;

	if (!err)
		err = jset_str(root, "name", p->name ? p->name : "");
	for (size_t i = 0; !err && i < p->nfiles; i++)
		if (renderable(&p->files[i]))
			err = json_render_file(&p->files[i], pep700, files);
	if (!err) {
		err = jset(root, "files", files);
		files = NULL;
	}
	if (!err && pep700 && p->versions) {
		versions = json_array();
		err = versions ? 0 : ENOMEM;
		for (size_t i = 0; !err && i < p->nversions; i++) {
			err = utf8_ok(p->versions[i]) ? 0 : EINVAL;
			if (!err)
				err = japp(versions,
					   json_string(p->versions[i]));
		}
		if (!err) {
			err = jset(root, "versions", versions);
			versions = NULL;
		}
	}
	json_decref(files);
	json_decref(versions);
	return err;
}

int simple_render_json(const struct simple_page *p, struct buf *out)
{
	const char *v = api_version(p);
	int pep700 = strcmp(v, "1.1") == 0; /* size, upload-time, versions */
	json_t *root = json_object();
	struct sink k = {out, 0};
	size_t start = out->len;
	int err = ENOMEM;

	if (!root)
		goto out;
	err = jset(root, "meta", json_pack("{ss}", "api-version", v));
	if (err)
		goto out;
	if (p->is_list)
		err = json_list_doc(p, root);
	else
		err = json_project_doc(p, pep700, root);
	if (!err && json_dump_callback(root, sink_add, &k, JSON_COMPACT))
		err = k.err ? k.err : ENOMEM;
out:
	json_decref(root);
	if (err && out->data) {
		out->len = start;
		out->data[start] = '\0';
	}
	return err;
}

/* Appends ` name="value"` with value escaped. */
static int add_attr(struct buf *b, const char *name, const char *prefix,
		    const char *value)
{
	int err = buf_addf(b, " %s=\"%s", name, prefix);

	if (!err)
		err = buf_add_html(b, value);
	if (!err)
		err = buf_adds(b, "\"");
	return err;
}

static int html_render_file(const struct simple_file *f, struct buf *b)
{
	static const char *const meta_attrs[] = {"data-core-metadata",
						 "data-dist-info-metadata"};
	int err;

	err = buf_adds(b, "<a href=\"../../files/");
	if (!err)
		err = buf_add_html(b, f->sha256);
	if (!err)
		err = buf_adds(b, "/");
	if (!err)
		err = buf_add_html(b, f->filename);
	if (!err)
		err = buf_adds(b, "#sha256=");
	if (!err)
		err = buf_add_html(b, f->sha256);
	if (!err)
		err = buf_adds(b, "\"");
	if (!err && f->requires_python)
		err = add_attr(b, "data-requires-python", "",
			       f->requires_python);
	if (!err && f->yanked)
		err = add_attr(b, "data-yanked", "",
			       f->yanked_reason ? f->yanked_reason : "");
	for (int i = 0; !err && f->core_metadata && i < 2; i++) {
		if (f->meta_sha256[0])
			err = add_attr(b, meta_attrs[i], "sha256=",
				       f->meta_sha256);
		else
			err = add_attr(b, meta_attrs[i], "", "true");
	}
	if (!err)
		err = buf_adds(b, ">");
	if (!err)
		err = buf_add_html(b, f->filename);
	if (!err)
		err = buf_adds(b, "</a><br>\n");
	return err;
}

int simple_render_html(const struct simple_page *p, struct buf *out)
{
	char norm[NAMES_MAX_PROJECT + 1];
	const char *name = p->name ? p->name : "";
	size_t start = out->len;
	int err;

	err = buf_addf(out,
		       "<!DOCTYPE html>\n<html>\n<head>\n"
		       "<meta name=\"pypi:repository-version\" "
		       "content=\"%s\">\n<title>",
		       api_version(p));
	if (err)
		goto out;
	if (p->is_list) {
		err = buf_adds(out, "Simple index</title>\n</head>\n<body>\n");
		for (size_t i = 0; !err && i < p->nprojects; i++) {
			if (names_normalize(p->projects[i], norm, sizeof(norm)))
				continue;
			err = buf_addf(out, "<a href=\"%s/\">", norm);
			if (!err)
				err = buf_add_html(out, p->projects[i]);
			if (!err)
				err = buf_adds(out, "</a><br>\n");
		}
	} else {
		err = buf_adds(out, "Links for ");
		if (!err)
			err = buf_add_html(out, name);
		if (!err)
			err = buf_adds(out, "</title>\n</head>\n<body>\n"
					    "<h1>Links for ");
		if (!err)
			err = buf_add_html(out, name);
		if (!err)
			err = buf_adds(out, "</h1>\n");
		for (size_t i = 0; !err && i < p->nfiles; i++)
			if (renderable(&p->files[i]))
				err = html_render_file(&p->files[i], out);
	}
	if (!err)
		err = buf_adds(out, "</body>\n</html>\n");
out:
	if (err && out->data) {
		out->len = start;
		out->data[start] = '\0';
	}
	return err;
}

void simple_page_free(struct simple_page *p)
{
	free(p->name);
	for (size_t i = 0; i < p->nfiles; i++)
		file_free(&p->files[i]);
	free(p->files);
	for (size_t i = 0; i < p->nversions; i++)
		free(p->versions[i]);
	free(p->versions);
	for (size_t i = 0; i < p->nprojects; i++)
		free(p->projects[i]);
	free(p->projects);
	memset(p, 0, sizeof(*p));
}
