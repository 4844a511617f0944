#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/dist/distname.h"
#include "common/hex.h"
#include "common/json.h"
#include "common/names.h"
#include "common/pypi/simple.h"
#include "common/url.h"

#define MAX_HASHES 16       /* per file; more are ignored */
#define HASH_NAME_MAX 32
#define HASH_VALUE_MAX 256  /* hex digits */
#define URL_MAX 8192
#define STATUS_REASON_MAX 4096  /* bytes of a PEP 792 reason kept */

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c + ('a' - 'A')) : c;
}

void simple_file_free(struct simple_file *f)
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
	free(f->provenance);
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

int simple_hash_add(struct simple_file *f, const char *name, size_t nlen,
		    const char *value, size_t vlen)
{
	char n[HASH_NAME_MAX + 1];
	struct simple_hash *h;
	char *v;

	/* sha256 whatever came first: a page of junk hashes cannot crowd
	 * it out */
	if (nlen == 0 || nlen > HASH_NAME_MAX || vlen == 0 ||
	    vlen > HASH_VALUE_MAX ||
	    (f->nhashes >= MAX_HASHES &&
	     !(nlen == 6 && strncasecmp(name, "sha256", 6) == 0)))
		return 0;
	for (size_t i = 0; i < nlen; i++) {
		char c = name[i];

		if (hex_value((unsigned char)c) < 0 &&
		    !(c >= 'g' && c <= 'z') &&
		    !(c >= 'G' && c <= 'Z') && c != '_' && c != '-')
			return 0;
		n[i] = lower(c);
	}
	n[nlen] = '\0';
	for (size_t i = 0; i < vlen; i++)
		if (hex_value((unsigned char)value[i]) < 0)
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
			err = simple_hash_add(f, s, (size_t)(eq - s), eq + 1,
				       (size_t)(stop - eq - 1));
			if (err)
				return err;
		}
		s = stop + (amp ? 1 : 0);
	}
	return 0;
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
		int hi = -1, lo = -1;

		if (url[i] == '%' && i + 2 < end) {
			hi = hex_value((unsigned char)url[i + 1]);
			lo = hex_value((unsigned char)url[i + 2]);
		}
		if (hi >= 0 && lo >= 0) {
			s[n++] = (char)(hi * 16 + lo);
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
	unsigned long minor = 0;

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
		minor = strtoul(s, NULL, 10);
		s += n;
	}
	s += strspn(s, " \t\r\n");
	if (*s)
		return EINVAL;
	if (minor > SIMPLE_MINOR_MAX)
		minor = SIMPLE_MINOR_MAX;
	snprintf(out, 16, "1.%lu", minor);
	return 0;
}

int simple_minor(const char *version)
{
	return version && version[0] == '1' && version[1] == '.' &&
			       version[2] >= '0' && version[2] <= '9' ?
		       version[2] - '0' :
		       0;
}

int simple_status_set(struct simple_page *p, const char *status, size_t slen,
		      const char *reason, size_t rlen)
{
	static const char *const known[] = {"active", "archived",
					    "quarantined", "deprecated"};
	char *r = NULL;
	size_t k;

	for (k = 0; k < sizeof(known) / sizeof(known[0]); k++)
		if (status && strlen(known[k]) == slen &&
		    strncasecmp(known[k], status, slen) == 0)
			break;
	if (k == sizeof(known) / sizeof(known[0]))
		return 0;
	if (reason && rlen <= STATUS_REASON_MAX &&
	    !memchr(reason, '\0', rlen)) {
		r = strndup(reason, rlen);
		if (!r)
			return ENOMEM;
		if (!json_utf8_valid(r)) {
			free(r);
			r = NULL;
		}
	}
	snprintf(p->status, sizeof(p->status), "%s", known[k]);
	free(p->status_reason);
	p->status_reason = r;
	return 0;
}

int simple_quarantined(const struct simple_page *p)
{
	return strcmp(p->status, "quarantined") == 0;
}

void simple_status_apply(struct simple_page *p)
{
	if (!simple_quarantined(p))
		return;
	for (size_t i = 0; i < p->nfiles; i++)
		simple_file_free(&p->files[i]);
	p->nfiles = 0;
}

/* Resolves a PEP 740 provenance URL as the page wrote it into f: kept
 * only when it is http(s) on a host the file itself could be on, as a
 * URL larder fetches must be. Returns 0 or ENOMEM. */
static int accept_provenance(struct simple_file *f, const char *base,
			     const struct simple_opts *o)
{
	struct buf url;
	char *href = f->provenance;
	int err;

	f->provenance = NULL;
	if (!href || !*href || !json_utf8_valid(href)) {
		free(href);
		return 0;
	}
	buf_init(&url, URL_MAX);
	err = url_resolve(base ? base : o->base_url, href, &url, NULL);
	if (!err && url_host_trusted(buf_str(&url), o->base_url, o->trusted)) {
		f->provenance = buf_steal(&url);
		err = f->provenance ? 0 : ENOMEM;
	} else {
		err = err == ENOMEM ? ENOMEM : 0;
	}
	buf_free(&url);
	free(href);
	return err;
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
	if (!json_utf8_valid(f->requires_python) ||
	    !json_utf8_valid(f->yanked_reason) ||
	    !json_utf8_valid(f->upload_time))
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
	err = accept_provenance(f, base, o);
out:
	buf_free(&url);
	buf_free(&frag);
	if (err)
		simple_file_free(f);
	return err;
}

const char *simple_rendered_version(const struct simple_page *p)
{
	static const char *const known[SIMPLE_MINOR_MAX + 1] = {
		"1.0", "1.1", "1.2", "1.3", "1.4"};
	char norm[16];

	if (!p->api_version[0] || simple_api_version(p->api_version, norm))
		return known[0];
	return known[simple_minor(norm)];
}

int simple_renderable(const struct simple_file *f)
{
	return f->filename && names_is_filename(f->filename) &&
	       names_is_sha256(f->sha256);
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

/* Writes f's URL relative to the page, escaped, with suffix after it
 * ("" for the file, ".provenance" for its provenance). */
static int add_files_url(struct buf *b, const struct simple_file *f,
			 const char *suffix)
{
	int err = buf_adds(b, "../../files/");

	if (!err)
		err = buf_add_html(b, f->sha256);
	if (!err)
		err = buf_adds(b, "/");
	if (!err)
		err = buf_add_html(b, f->filename);
	if (!err)
		err = buf_adds(b, suffix);
	return err;
}

static int html_render_file(const struct simple_file *f, int provenance,
			    struct buf *b)
{
	static const char *const meta_attrs[] = {"data-core-metadata",
						 "data-dist-info-metadata"};
	int err;

	err = buf_adds(b, "<a href=\"");
	if (!err)
		err = add_files_url(b, f, "#sha256=");
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
	/* larder's own URL, never the upstream's: the bytes come through
	 * the cache like the file's */
	if (!err && provenance && f->provenance) {
		err = buf_adds(b, " data-provenance=\"");
		if (!err)
			err = add_files_url(b, f, ".provenance\"");
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
	int minor = simple_minor(simple_rendered_version(p));
	size_t start = out->len;
	int err;

	err = buf_addf(out,
		       "<!DOCTYPE html>\n<html>\n<head>\n"
		       "<meta name=\"pypi:repository-version\" "
		       "content=\"%s\">\n",
		       simple_rendered_version(p));
	if (!err && !p->is_list && minor >= 4 && p->status[0])
		err = buf_addf(out, "<meta name=\"pypi:project-status\" "
			       "content=\"%s\">\n", p->status);
	if (!err && !p->is_list && minor >= 4 && p->status[0] &&
	    p->status_reason) {
		err = buf_adds(out, "<meta name=\"pypi:project-status-reason\" "
			       "content=\"");
		if (!err)
			err = buf_add_html(out, p->status_reason);
		if (!err)
			err = buf_adds(out, "\">\n");
	}
	if (!err)
		err = buf_adds(out, "<title>");
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
		for (size_t i = 0; !err && !simple_quarantined(p) &&
				   i < p->nfiles;
		     i++)
			if (simple_renderable(&p->files[i]))
				err = html_render_file(&p->files[i],
						       minor >= 3, out);
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

/* The most release numbers a version compared here has (1.2.3.4...). */
#define RELEASE_MAX 8

/* Reads the version of wheel file name fn (name-VERSION-[build-]py-abi-
 * platform.whl) into rel when it is a final release, and checks its tags
 * are universal. Returns the count of numbers, 0 when it is not such a
 * wheel. */
static size_t universal_release(const char *fn, unsigned long rel[RELEASE_MAX])
{
	static const char *const tags[] = {"-py3-none-any.whl",
					   "-py2.py3-none-any.whl"};
	const char *v = strchr(fn, '-');
	size_t len = strlen(fn), n = 0;
	int universal = 0;

	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		size_t t = strlen(tags[i]);

		if (len > t && strcmp(fn + len - t, tags[i]) == 0)
			universal = 1;
	}
	if (!universal || !v)
		return 0;
	for (v++; n < RELEASE_MAX; v++) {
		char *end;

		if (*v < '0' || *v > '9')
			return 0;
		rel[n++] = strtoul(v, &end, 10);
		v = end;
		if (*v == '-')
			return n;
		if (*v != '.')
			return 0;
	}
	return 0;
}

/* Compares two releases as PEP 440 does (missing numbers are 0). */
static int release_cmp(const unsigned long *a, size_t na,
		       const unsigned long *b, size_t nb)
{
	for (size_t i = 0; i < na || i < nb; i++) {
		unsigned long x = i < na ? a[i] : 0, y = i < nb ? b[i] : 0;

		if (x != y)
			return x < y ? -1 : 1;
	}
	return 0;
}

/* The universal wheel of the highest final release, not yanked, with its
 * metadata advertised when need_meta; -1 when none. */
static int likely(const struct simple_page *p, int need_meta)
{
	unsigned long best[RELEASE_MAX], rel[RELEASE_MAX];
	size_t nbest = 0, n;
	int at = -1;

	for (size_t i = 0; i < p->nfiles && i < INT_MAX; i++) {
		const struct simple_file *f = &p->files[i];

		if (f->yanked || (need_meta && !f->core_metadata) ||
		    !f->filename)
			continue;
		n = universal_release(f->filename, rel);
		if (!n || (at >= 0 && release_cmp(rel, n, best, nbest) <= 0))
			continue;
		memcpy(best, rel, n * sizeof(rel[0]));
		nbest = n;
		at = (int)i;
	}
	return at;
}

int simple_likely_metadata(const struct simple_page *p)
{
	return likely(p, 1);
}

int simple_likely_wheel(const struct simple_page *p)
{
	return likely(p, 0);
}

/* The version in file name fn of project (NULL when unknown) into out:
 * an sdist's name part is the project's when it reads as it, so that
 * "corp-lib-1.0.tar.gz" is 1.0, else what precedes its last '-'. */
static int file_version(const char *fn, const char *project,
			char out[DISTNAME_VERSION_MAX])
{
	char want[NAMES_MAX_PROJECT + 1], raw[NAMES_MAX_PROJECT + 1];
	char got[NAMES_MAX_PROJECT + 1];
	struct distname d;
	size_t n, len = strlen(fn);

	if (distname_parse(fn, &d))
		return EINVAL;
	memcpy(out, d.version, sizeof(d.version));
	if (d.kind == DISTNAME_WHEEL || !project ||
	    names_normalize(project, want, sizeof(want)))
		return 0;
	n = strlen(project);
	if (n >= sizeof(raw) || n + 1 >= len || fn[n] != '-')
		return 0;
	memcpy(raw, fn, n);
	raw[n] = '\0';
	if (names_normalize(raw, got, sizeof(got)) || strcmp(got, want) != 0)
		return 0;
	len -= d.kind == DISTNAME_SDIST_TGZ ? 7 : 4;
	if (len <= n + 1 || len - n - 1 >= DISTNAME_VERSION_MAX)
		return 0;
	memcpy(out, fn + n + 1, len - n - 1);
	out[len - n - 1] = '\0';
	return 0;
}

int simple_derive_versions(struct simple_page *p)
{
	char v[DISTNAME_VERSION_MAX];
	size_t k;

	if (p->is_list || p->versions)
		return 0;
	p->versions = calloc(p->nfiles ? p->nfiles : 1, sizeof(*p->versions));
	if (!p->versions)
		return ENOMEM;
	for (size_t i = 0; i < p->nfiles; i++) {
		if (!p->files[i].filename ||
		    file_version(p->files[i].filename, p->name, v))
			continue;
		/* files come grouped by version: the last one first */
		if (p->nversions &&
		    strcmp(p->versions[p->nversions - 1], v) == 0)
			continue;
		for (k = 0; k < p->nversions; k++)
			if (strcmp(p->versions[k], v) == 0)
				break;
		if (k < p->nversions)
			continue;
		p->versions[p->nversions] = strdup(v);
		if (!p->versions[p->nversions])
			return ENOMEM;
		p->nversions++;
	}
	return 0;
}

int simple_name_set(struct simple_page *p, const char *project)
{
	char norm[NAMES_MAX_PROJECT + 1];
	char *name;

	if (names_normalize(project, norm, sizeof(norm)) ||
	    strcmp(norm, project) != 0)
		return EINVAL;
	name = strdup(project);
	if (!name)
		return ENOMEM;
	free(p->name);
	p->name = name;
	return 0;
}

void simple_page_free(struct simple_page *p)
{
	free(p->name);
	free(p->status_reason);
	for (size_t i = 0; i < p->nfiles; i++)
		simple_file_free(&p->files[i]);
	free(p->files);
	for (size_t i = 0; i < p->nversions; i++)
		free(p->versions[i]);
	free(p->versions);
	for (size_t i = 0; i < p->nprojects; i++)
		free(p->projects[i]);
	free(p->projects);
	memset(p, 0, sizeof(*p));
}
