#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/dist/coremeta.h"
#include "common/dist/wheeltag.h"
#include "common/json.h"
#include "common/pypi/pyjson.h"

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n > m && strcmp(s + n - m, suffix) == 0;
}

static const char *const sdist_ext[] = {".tar.gz", ".zip", ".tar.bz2",
					".tgz", ".tar.xz", ".tar"};

const char *pyjson_packagetype(const char *filename, char *py, size_t pylen)
{
	char tags[128];
	const char *dash;
	size_t n;

	if (wheeltag_split(filename, NULL, 0, NULL, 0, tags,
			   sizeof(tags)) == 0) {
		snprintf(py, pylen, "%.*s", (int)strcspn(tags, "-"), tags);
		return "bdist_wheel";
	}
	for (size_t i = 0; i < sizeof(sdist_ext) / sizeof(sdist_ext[0]); i++) {
		if (ends_with(filename, sdist_ext[i])) {
			snprintf(py, pylen, "source");
			return "sdist";
		}
	}
	if (ends_with(filename, ".egg")) {
		/* name-version-pyX.Y[-platform].egg */
		dash = strchr(filename, '-');
		dash = dash ? strchr(dash + 1, '-') : NULL;
		n = dash ? strcspn(dash + 1, "-") : 0;
		if (dash && n > 4)
			n -= ends_with(dash + 1, ".egg") &&
			     !strchr(dash + 1, '-') ? 4 : 0;
		snprintf(py, pylen, "%.*s", (int)n, dash ? dash + 1 : "");
		return "bdist_egg";
	}
	return NULL;
}

/* The version file f's name gives, in normal form. Returns 0 or EINVAL. */
static int file_version(const char *filename, const char *project,
			char *out, size_t outlen)
{
	char v[DISTNAME_VERSION_MAX];
	const char *dash, *end;

	if (wheeltag_split(filename, NULL, 0, v, sizeof(v), NULL, 0) == 0 ||
	    wheeltag_sdist_version(filename, project, v, sizeof(v)) == 0)
		return distname_version_canon(v, out, outlen) ? EINVAL : 0;
	if (!ends_with(filename, ".egg") || !(dash = strchr(filename, '-')))
		return EINVAL;
	end = strchr(dash + 1, '-');
	if (!end)
		end = filename + strlen(filename) - 4;
	if ((size_t)(end - dash - 1) >= sizeof(v))
		return EINVAL;
	snprintf(v, sizeof(v), "%.*s", (int)(end - dash - 1), dash + 1);
	return distname_version_canon(v, out, outlen) ? EINVAL : 0;
}

/* The release of version (normal form) in j, added when add. Returns its
 * position, -1 when absent, or -2 on ENOMEM. */
static long release_of(struct pyjson *j, const char *version, int add)
{
	struct pyjson_release *r;

	for (size_t i = 0; i < j->nrel; i++)
		if (strcmp(j->rel[i].version, version) == 0)
			return (long)i;
	if (!add)
		return -1;
	r = realloc(j->rel, (j->nrel + 1) * sizeof(*r));
	if (!r)
		return -2;
	j->rel = r;
	r = &j->rel[j->nrel];
	memset(r, 0, sizeof(*r));
	snprintf(r->version, sizeof(r->version), "%s", version);
	if (pep440_parse(version, &r->v))
		return -1;
	return (long)j->nrel++;
}

static const struct simple_page *sort_page;

static int by_filename(const void *a, const void *b)
{
	return strcmp(sort_page->files[*(const size_t *)a].filename,
		      sort_page->files[*(const size_t *)b].filename);
}

static int by_version(const void *a, const void *b)
{
	return pep440_cmp(&((const struct pyjson_release *)a)->v,
			  &((const struct pyjson_release *)b)->v);
}

int pyjson_group(const struct simple_page *p, const char *project,
		 struct pyjson *j)
{
	char v[DISTNAME_VERSION_MAX];
	size_t *files;
	long at;

	memset(j, 0, sizeof(*j));
	for (size_t i = 0; i < p->nfiles; i++) {
		const struct simple_file *f = &p->files[i];
		struct pyjson_release *r;

		if (!simple_renderable(f) ||
		    file_version(f->filename, project, v, sizeof(v))) {
			j->dropped++;
			continue;
		}
		at = release_of(j, v, 1);
		if (at == -2)
			return ENOMEM;
		if (at < 0) {
			j->dropped++;
			continue;
		}
		r = &j->rel[at];
		files = realloc(r->files, (r->nfiles + 1) * sizeof(*files));
		if (!files)
			return ENOMEM;
		r->files = files;
		r->files[r->nfiles++] = i;
	}
	for (size_t i = 0; i < p->nversions; i++)
		if (distname_version_canon(p->versions[i], v, sizeof(v)) == 0 &&
		    release_of(j, v, 1) == -2)
			return ENOMEM;
	for (size_t i = 0; i < j->nrel; i++) {
		struct pyjson_release *r = &j->rel[i];

		r->yanked = r->nfiles > 0;
		for (size_t k = 0; k < r->nfiles; k++)
			if (!p->files[r->files[k]].yanked)
				r->yanked = 0;
		sort_page = p;
		if (r->nfiles > 1)
			qsort(r->files, r->nfiles, sizeof(*r->files),
			      by_filename);
	}
	if (j->nrel > 1)
		qsort(j->rel, j->nrel, sizeof(*j->rel), by_version);
	return 0;
}

void pyjson_free(struct pyjson *j)
{
	for (size_t i = 0; i < j->nrel; i++)
		free(j->rel[i].files);
	free(j->rel);
	memset(j, 0, sizeof(*j));
}

long pyjson_pick(const struct pyjson *j, const char *version)
{
	struct pep440 want;
	long best = -1;
	int best_rank = 0;

	if (version) {
		if (pep440_parse(version, &want))
			return -1;
		for (size_t i = 0; i < j->nrel; i++)
			if (pep440_cmp(&j->rel[i].v, &want) == 0)
				return (long)i;
		return -1;
	}
	/* releases run lowest first: the last of the best rank wins */
	for (size_t i = 0; i < j->nrel; i++) {
		const struct pyjson_release *r = &j->rel[i];
		int rank = 4 - 2 * r->yanked - pep440_is_prerelease(&r->v);

		if (r->nfiles && rank >= best_rank) {
			best = (long)i;
			best_rank = rank;
		}
	}
	return best;
}

long pyjson_meta_file(const struct simple_page *p, const struct pyjson *j,
		      long r)
{
	long any = -1;

	if (r < 0 || (size_t)r >= j->nrel)
		return -1;
	for (size_t k = 0; k < j->rel[r].nfiles; k++) {
		const struct simple_file *f = &p->files[j->rel[r].files[k]];

		if (!f->core_metadata)
			continue;
		if (ends_with(f->filename, ".whl"))
			return (long)j->rel[r].files[k];
		if (any < 0)
			any = (long)j->rel[r].files[k];
	}
	return any;
}

/* --- info, from the metadata --- */

enum {
	F_NAME, F_VERSION, F_SUMMARY, F_DESCRIPTION, F_DCT, F_AUTHOR,
	F_AUTHOR_EMAIL, F_MAINTAINER, F_MAINTAINER_EMAIL, F_LICENSE,
	F_LICENSE_EXPRESSION, F_KEYWORDS, F_HOME_PAGE, F_DOWNLOAD_URL,
	F_REQUIRES_PYTHON, F_PLATFORM, NSINGLE
};
enum { L_CLASSIFIER, L_REQUIRES_DIST, L_PROJECT_URL, L_PROVIDES_EXTRA,
       L_DYNAMIC, L_LICENSE_FILE, NLIST };

static const struct {
	const char *header;
	int single, list;  /* -1: not that kind */
} headers[] = {
	{"Name", F_NAME, -1},
	{"Version", F_VERSION, -1},
	{"Summary", F_SUMMARY, -1},
	{"Description", F_DESCRIPTION, -1},
	{"Description-Content-Type", F_DCT, -1},
	{"Author", F_AUTHOR, -1},
	{"Author-email", F_AUTHOR_EMAIL, -1},
	{"Maintainer", F_MAINTAINER, -1},
	{"Maintainer-email", F_MAINTAINER_EMAIL, -1},
	{"License", F_LICENSE, -1},
	{"License-Expression", F_LICENSE_EXPRESSION, -1},
	{"Keywords", F_KEYWORDS, -1},
	{"Home-page", F_HOME_PAGE, -1},
	{"Download-URL", F_DOWNLOAD_URL, -1},
	{"Requires-Python", F_REQUIRES_PYTHON, -1},
	{"Platform", F_PLATFORM, -1},
	{"Classifier", -1, L_CLASSIFIER},
	{"Requires-Dist", -1, L_REQUIRES_DIST},
	{"Project-URL", -1, L_PROJECT_URL},
	{"Provides-Extra", -1, L_PROVIDES_EXTRA},
	{"Dynamic", -1, L_DYNAMIC},
	{"License-File", -1, L_LICENSE_FILE},
};

struct info {
	char *single[NSINGLE];
	char **list[NLIST];
	size_t nlist[NLIST];
};

/* A copy of s as UTF-8: as it is when it is valid, else read as Latin-1
 * (what old metadata was written in). NULL on ENOMEM. */
static char *utf8_dup(const char *s)
{
	size_t n = 0;
	char *out;

	if (json_utf8_valid(s))
		return strdup(s);
	out = malloc(strlen(s) * 2 + 1);
	if (!out)
		return NULL;
	for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
		if (*u < 0x80) {
			out[n++] = (char)*u;
		} else {
			out[n++] = (char)(0xC0 | (*u >> 6));
			out[n++] = (char)(0x80 | (*u & 0x3F));
		}
	}
	out[n] = '\0';
	return out;
}

static int keep(const char *name, size_t nlen, const char *value, void *ctx)
{
	struct info *in = ctx;
	char **l, *v;

	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
		if (strlen(headers[i].header) != nlen ||
		    strncasecmp(headers[i].header, name, nlen) != 0)
			continue;
		/* a repeated single header: the first counts (Platform) */
		if (headers[i].single >= 0 && in->single[headers[i].single])
			return 0;
		v = utf8_dup(value);
		if (!v)
			return ENOMEM;
		if (headers[i].single >= 0) {
			in->single[headers[i].single] = v;
			return 0;
		}
		l = realloc(in->list[headers[i].list],
			    (in->nlist[headers[i].list] + 1) * sizeof(*l));
		if (!l) {
			free(v);
			return ENOMEM;
		}
		in->list[headers[i].list] = l;
		l[in->nlist[headers[i].list]++] = v;
		return 0;
	}
	return 0;
}

static void info_free(struct info *in)
{
	for (size_t i = 0; i < NSINGLE; i++)
		free(in->single[i]);
	for (size_t i = 0; i < NLIST; i++) {
		for (size_t k = 0; k < in->nlist[i]; k++)
			free(in->list[i][k]);
		free(in->list[i]);
	}
}

/* Reads the metadata into in; the body, when there is one, is the
 * description (metadata 2.1). Unreadable metadata leaves in empty. */
static int info_read(const struct pyjson_opts *o, struct info *in)
{
	size_t body = 0;
	char *text;
	int rc;

	memset(in, 0, sizeof(*in));
	if (!o->metadata)
		return 0;
	rc = coremeta_each(o->metadata, o->metalen, keep, in, &body);
	if (rc == EINVAL) {
		info_free(in);
		memset(in, 0, sizeof(*in));
		return 0;
	}
	if (rc || body >= o->metalen)
		return rc;
	text = malloc(o->metalen - body + 1);
	if (!text)
		return ENOMEM;
	memcpy(text, o->metadata + body, o->metalen - body);
	text[o->metalen - body] = '\0';
	free(in->single[F_DESCRIPTION]);
	in->single[F_DESCRIPTION] = utf8_dup(text);
	free(text);
	return in->single[F_DESCRIPTION] ? 0 : ENOMEM;
}

/* --- writing: a buf and the first error, so a document is written
 * straight through and checked once --- */

struct out {
	struct buf *b;
	int err;
};

static void add(struct out *w, const char *s)
{
	if (!w->err)
		w->err = buf_adds(w->b, s);
}

static void addf(struct out *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void addf(struct out *w, const char *fmt, ...)
{
	va_list ap;

	if (w->err)
		return;
	va_start(ap, fmt);
	w->err = buf_vaddf(w->b, fmt, ap);
	va_end(ap);
}

/* s as a JSON string, or null. */
static void str(struct out *w, const char *s)
{
	if (!w->err)
		w->err = s ? json_put_string(w->b, s) : buf_adds(w->b, "null");
}

/* ", "key": " (no comma for the first). */
static void key(struct out *w, const char *k, int first)
{
	addf(w, "%s\"%s\": ", first ? "" : ", ", k);
}

static void list(struct out *w, char **v, size_t n, int null_if_empty)
{
	if (!n && null_if_empty) {
		add(w, "null");
		return;
	}
	add(w, "[");
	for (size_t i = 0; i < n; i++) {
		add(w, i ? ", " : "");
		str(w, v[i]);
	}
	add(w, "]");
}

/* Project-URL "Label, URL" lines as an object, null when there are none. */
static void project_urls(struct out *w, char **v, size_t n)
{
	int any = 0;

	for (size_t i = 0; i < n; i++) {
		const char *comma = strchr(v[i], ','), *url;
		char *label;

		if (!comma)
			continue;
		for (url = comma + 1; *url == ' ' || *url == '\t'; url++)
			;
		label = strndup(v[i], (size_t)(comma - v[i]));
		if (!label) {
			w->err = w->err ? w->err : ENOMEM;
			return;
		}
		add(w, any ? ", " : "{");
		str(w, label);
		add(w, ": ");
		str(w, url);
		free(label);
		any = 1;
	}
	add(w, any ? "}" : "null");
}

static const char *hash_of(const struct simple_file *f, const char *name)
{
	for (size_t i = 0; i < f->nhashes; i++)
		if (strcmp(f->hashes[i].name, name) == 0)
			return f->hashes[i].value;
	return NULL;
}

/* One file as pypi.org lists it. Hashes and the file name are safe to
 * write as they are (hex; names_is_filename's characters). */
static void file(struct out *w, const struct simple_file *f,
		 const struct pyjson_opts *o)
{
	const char *md5 = hash_of(f, "md5"), *b2 = hash_of(f, "blake2b_256");
	const char *t = f->upload_time, *type;
	char py[64] = "", when[32] = "", url[4096];

	type = pyjson_packagetype(f->filename, py, sizeof(py));
	if (t && strlen(t) >= 19 && t[4] == '-' && t[10] == 'T')
		snprintf(when, sizeof(when), "%.19s", t);
	add(w, "{\"comment_text\": \"\", \"digests\": {");
	if (b2)
		addf(w, "\"blake2b_256\": \"%s\", ", b2);
	if (md5)
		addf(w, "\"md5\": \"%s\", ", md5);
	addf(w, "\"sha256\": \"%s\"}, \"downloads\": -1", f->sha256);
	addf(w, ", \"filename\": \"%s\", \"has_sig\": false", f->filename);
	key(w, "md5_digest", 0);
	str(w, md5);
	key(w, "packagetype", 0);
	str(w, type);
	key(w, "python_version", 0);
	str(w, type ? py : NULL);
	key(w, "requires_python", 0);
	str(w, f->requires_python);
	if (f->size >= 0)
		addf(w, ", \"size\": %lld", f->size);
	else
		add(w, ", \"size\": null");
	key(w, "upload_time", 0);
	str(w, *when ? when : NULL);
	key(w, "upload_time_iso_8601", 0);
	str(w, *when ? t : NULL);
	snprintf(url, sizeof(url), "%s%s/%s", o->files_url, f->sha256,
		 f->filename);
	key(w, "url", 0);
	str(w, url);
	addf(w, ", \"yanked\": %s", f->yanked ? "true" : "false");
	key(w, "yanked_reason", 0);
	str(w, f->yanked && f->yanked_reason && *f->yanked_reason ?
		       f->yanked_reason : NULL);
	add(w, "}");
}

static void files(struct out *w, const struct simple_page *p,
		  const struct pyjson_release *r, const struct pyjson_opts *o)
{
	add(w, "[");
	for (size_t k = 0; k < r->nfiles; k++) {
		add(w, k ? ", " : "");
		file(w, &p->files[r->files[k]], o);
	}
	add(w, "]");
}

static void release_url(struct out *w, const char *api_url,
			const char *version)
{
	char url[4096];

	snprintf(url, sizeof(url), "%s%s/json", api_url, version);
	str(w, url);
}

/* The keys of "info" that are one metadata header each (or always null),
 * in pypi.org's order, with where the others go. */
static const struct {
	const char *key;
	int field;  /* F_*, -1: null, -2: something else */
} info_keys[] = {
	{"author", F_AUTHOR}, {"author_email", F_AUTHOR_EMAIL},
	{"bugtrack_url", -1}, {"classifiers", -2},
	{"description", F_DESCRIPTION}, {"description_content_type", F_DCT},
	{"docs_url", -1}, {"download_url", F_DOWNLOAD_URL},
	{"downloads", -2}, {"dynamic", -2}, {"home_page", F_HOME_PAGE},
	{"keywords", F_KEYWORDS}, {"license", F_LICENSE},
	{"license_expression", F_LICENSE_EXPRESSION}, {"license_files", -2},
	{"maintainer", F_MAINTAINER}, {"maintainer_email", F_MAINTAINER_EMAIL},
	{"name", -2}, {"package_url", -2}, {"platform", F_PLATFORM},
	{"project_url", -2}, {"project_urls", -2}, {"provides_extra", -2},
	{"release_url", -2}, {"requires_dist", -2}, {"requires_python", -2},
	{"summary", F_SUMMARY}, {"version", -2}, {"yanked", -2},
	{"yanked_reason", -2},
};

/* "info" of release r. */
static void info(struct out *w, const struct simple_page *p,
		 const char *project, const struct pyjson_release *r,
		 const struct info *in, const struct pyjson_opts *o)
{
	const char *rp = in->single[F_REQUIRES_PYTHON], *yr = NULL, *k;

	/* with no metadata, what the page says of the release's files */
	for (size_t i = 0; !rp && !in->single[F_NAME] && i < r->nfiles; i++)
		rp = p->files[r->files[i]].requires_python;
	for (size_t i = 0; r->yanked && !yr && i < r->nfiles; i++)
		yr = p->files[r->files[i]].yanked_reason;
	add(w, "{");
	for (size_t i = 0; i < sizeof(info_keys) / sizeof(info_keys[0]); i++) {
		k = info_keys[i].key;
		key(w, k, i == 0);
		if (info_keys[i].field >= 0)
			str(w, in->single[info_keys[i].field]);
		else if (info_keys[i].field == -1)
			add(w, "null");
		else if (!strcmp(k, "classifiers"))
			list(w, in->list[L_CLASSIFIER], in->nlist[L_CLASSIFIER],
			     0);
		else if (!strcmp(k, "downloads"))
			add(w, "{\"last_day\": -1, \"last_month\": -1, "
			       "\"last_week\": -1}");
		else if (!strcmp(k, "dynamic"))
			list(w, in->list[L_DYNAMIC], in->nlist[L_DYNAMIC], 1);
		else if (!strcmp(k, "license_files"))
			list(w, in->list[L_LICENSE_FILE],
			     in->nlist[L_LICENSE_FILE], 1);
		else if (!strcmp(k, "name"))
			str(w, in->single[F_NAME] ? in->single[F_NAME] :
			       p->name && *p->name ? p->name : project);
		else if (!strcmp(k, "package_url") || !strcmp(k, "project_url"))
			str(w, o->project_url);
		else if (!strcmp(k, "project_urls"))
			project_urls(w, in->list[L_PROJECT_URL],
				     in->nlist[L_PROJECT_URL]);
		else if (!strcmp(k, "provides_extra"))
			list(w, in->list[L_PROVIDES_EXTRA],
			     in->nlist[L_PROVIDES_EXTRA], 1);
		else if (!strcmp(k, "release_url"))
			release_url(w, o->api_url, r->version);
		else if (!strcmp(k, "requires_dist"))
			list(w, in->list[L_REQUIRES_DIST],
			     in->nlist[L_REQUIRES_DIST], 1);
		else if (!strcmp(k, "requires_python"))
			str(w, rp);
		else if (!strcmp(k, "version"))
			str(w, in->single[F_VERSION] ? in->single[F_VERSION] :
						       r->version);
		else if (!strcmp(k, "yanked"))
			add(w, r->yanked ? "true" : "false");
		else if (!strcmp(k, "yanked_reason"))
			str(w, yr && *yr ? yr : NULL);
	}
	add(w, "}");
}

int pyjson_render(const struct simple_page *p, const char *project,
		  const struct pyjson *j, long r, const struct pyjson_opts *o,
		  struct buf *b)
{
	struct out w = {.b = b};
	struct info in;

	if (r < 0 || (size_t)r >= j->nrel)
		return EINVAL;
	w.err = info_read(o, &in);
	add(&w, "{\"info\": ");
	info(&w, p, project, &j->rel[r], &in, o);
	if (o->all_releases) {
		add(&w, ", \"releases\": {");
		for (size_t i = 0; i < j->nrel; i++) {
			add(&w, i ? ", " : "");
			str(&w, j->rel[i].version);
			add(&w, ": ");
			files(&w, p, &j->rel[i], o);
		}
		add(&w, "}");
	}
	add(&w, ", \"urls\": ");
	files(&w, p, &j->rel[r], o);
	add(&w, "}\n");
	info_free(&in);
	return w.err;
}
