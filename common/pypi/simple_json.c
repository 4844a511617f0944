/* PEP 691 JSON pages: the streaming parser and the renderer of the simple
 * page model (common/pypi/simple.h). The parser walks the document with the
 * pull reader (common/json.h) and keeps only what the model holds, so its
 * memory is the page's entries, whatever the document's shape; the
 * renderer writes straight into a buf. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "common/names.h"
#include "common/pypi/simple.h"

/* The longest string kept from a page (a URL, a reason); longer is an
 * error, as the HTML parser's caps are. */
#define MAX_STRING (64 * 1024)

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* The reader's string, copied. */
static int dup_str(const struct json_reader *r, char **out)
{
	free(*out);
	*out = strdup(buf_str(&r->str));
	return *out ? 0 : ENOMEM;
}

/* Known keys of an object, seen at most once each (a page with the same
 * key twice means two different things to two readers). */
static int once(unsigned *seen, int bit, struct json_reader *r)
{
	if (*seen & (1u << bit)) {
		snprintf(r->err, sizeof(r->err), "json: duplicate key \"%.40s\"",
			 buf_str(&r->str));
		return -1;
	}
	*seen |= 1u << bit;
	return 0;
}

/* Skips a value just begun (t its type) when the caller has no use for
 * it. Returns 0 or -1. */
static int skip_value(struct json_reader *r, int t)
{
	if (t == JSON_ERROR)
		return -1;
	if (t == JSON_OBJECT || t == JSON_ARRAY)
		return json_skip(r);
	return 0;
}

/* PEP 658/714 metadata: true, false, or an object of hashes. */
static int core_metadata(struct json_reader *r, int t, struct simple_file *f)
{
	int k;

	f->core_metadata = 0;
	f->meta_sha256[0] = '\0';
	if (t == JSON_TRUE)
		f->core_metadata = 1;
	if (t != JSON_OBJECT)
		return skip_value(r, t);
	f->core_metadata = 1; /* advertised, with no hash unless one comes */
	while ((k = json_key(r)) == 1) {
		int is_sha = strcmp(buf_str(&r->str), "sha256") == 0;

		t = json_value(r);
		if (!is_sha)
			goto skip;
		f->core_metadata = 0;
		if (t == JSON_STRING && r->str.len == 64) {
			for (int i = 0; i < 64; i++)
				f->meta_sha256[i] = lower(r->str.data[i]);
			f->meta_sha256[64] = '\0';
			f->core_metadata = names_is_sha256(f->meta_sha256);
			if (!f->core_metadata)
				f->meta_sha256[0] = '\0';
		}
skip:
		if (skip_value(r, t))
			return -1;
	}
	return k;
}

static int hashes(struct json_reader *r, struct simple_file *f)
{
	char name[64];
	int k, t, err;

	while ((k = json_key(r)) == 1) {
		snprintf(name, sizeof(name), "%s", buf_str(&r->str));
		t = json_value(r);
		if (t == JSON_STRING) {
			err = simple_hash_add(f, name, strlen(name),
					      r->str.data, r->str.len);
			if (err)
				return err == ENOMEM ? -2 : -1;
		} else if (skip_value(r, t)) {
			return -1;
		}
	}
	return k;
}

enum file_key {
	K_URL, K_FILENAME, K_HASHES, K_REQUIRES, K_YANKED, K_META, K_META_OLD,
	K_META_PYPI, K_SIZE, K_UPLOAD, K_PROVENANCE, K_COUNT
};

/* Reads one PEP 691 file entry (its object entered) into f and decides on
 * it. Returns 0 (keep), EINVAL (drop), ENOMEM, or -1 (the document is
 * broken: r->err). f holds nothing unless 0. */
static int file_entry(struct json_reader *r, const struct simple_opts *o,
		      struct simple_file *f)
{
	static const char *const names[K_COUNT] = {
		"url", "filename", "hashes", "requires-python", "yanked",
		"core-metadata", "dist-info-metadata",
		"data-dist-info-metadata", "size", "upload-time",
		"provenance",
	};
	/* metadata under its PEP 714 name wins over the older ones */
	struct simple_file meta[3];
	char *url = NULL;
	unsigned seen = 0;
	long long size;
	int k, t, i, rc = -1;

	memset(f, 0, sizeof(*f));
	memset(meta, 0, sizeof(meta));
	f->size = -1;
	while ((k = json_key(r)) == 1) {
		for (i = 0; i < K_COUNT; i++)
			if (strcmp(buf_str(&r->str), names[i]) == 0)
				break;
		if (i < K_COUNT && once(&seen, i, r))
			goto out;
		t = json_value(r);
		switch (i) {
		case K_URL:
		case K_FILENAME:
		case K_REQUIRES:
		case K_UPLOAD:
		case K_PROVENANCE: /* a string or null (PEP 740) */
			if (t != JSON_STRING)
				break;
			if (dup_str(r, i == K_URL ? &url :
				       i == K_FILENAME ? &f->filename :
				       i == K_REQUIRES ? &f->requires_python :
				       i == K_UPLOAD ? &f->upload_time :
						       &f->provenance))
				goto nomem;
			continue;
		case K_HASHES:
			if (t != JSON_OBJECT)
				break;
			k = hashes(r, f);
			if (k == -2)
				goto nomem;
			if (k < 0)
				goto out;
			continue;
		case K_YANKED:
			if (t == JSON_TRUE) {
				f->yanked = 1;
			} else if (t == JSON_STRING && r->str.len > 0) {
				/* like pip, an empty reason is no yank */
				f->yanked = 1;
				if (dup_str(r, &f->yanked_reason))
					goto nomem;
			}
			break;
		case K_META:
		case K_META_OLD:
		case K_META_PYPI:
			if (core_metadata(r, t, &meta[i - K_META]) < 0)
				goto out;
			meta[i - K_META].nhashes = 1; /* present */
			continue;
		case K_SIZE:
			if (t == JSON_NUMBER && json_integer(r, &size) == 0 &&
			    size >= 0)
				f->size = size;
			break;
		}
		if (skip_value(r, t))
			goto out;
	}
	if (k < 0)
		goto out;
	for (i = 0; i < 3; i++)
		if (meta[i].nhashes) {
			f->core_metadata = meta[i].core_metadata;
			memcpy(f->meta_sha256, meta[i].meta_sha256, 65);
			break;
		}
	if (!url) {
		simple_file_free(f);
		return EINVAL;
	}
	rc = simple_file_accept(f, url, NULL, o);
	free(url);
	return rc;
nomem:
	snprintf(r->err, sizeof(r->err), "json: out of memory");
	rc = ENOMEM;
out:
	free(url);
	simple_file_free(f);
	return rc;
}

/* Grows an array of n items of size sz to hold one more. */
static int grow(void **arr, size_t n, size_t *cap, size_t sz)
{
	void *p;
	size_t want;

	if (n < *cap)
		return 0;
	want = *cap ? *cap * 2 : 16;
	p = realloc(*arr, want * sz);
	if (!p)
		return ENOMEM;
	*arr = p;
	*cap = want;
	return 0;
}

/* Steps to the next object of an array of them: 1 at an object, 0 at the
 * end of the array, -1 on error or once kept and dropped items pass max.
 * Anything else in the array is skipped and counted in *dropped. */
static int next_object(struct json_reader *r, size_t kept, size_t *dropped,
		       size_t max, const char *what)
{
	int t;

	while ((t = json_value(r)) != JSON_END) {
		if (kept + *dropped >= max) {
			snprintf(r->err, sizeof(r->err),
				 "json: more than %zu %s", max, what);
			return -1;
		}
		if (t == JSON_OBJECT)
			return 1;
		if (skip_value(r, t))
			return -1;
		(*dropped)++;
	}
	return 0;
}

static int files(struct json_reader *r, const struct simple_opts *o,
		 size_t max, struct simple_page *p)
{
	size_t cap = 0;
	int t, e;

	while ((t = next_object(r, p->nfiles, &p->dropped, max, "files")) ==
	       1) {
		if (grow((void **)&p->files, p->nfiles, &cap, sizeof(*p->files)))
			return ENOMEM;
		e = file_entry(r, o, &p->files[p->nfiles]);
		if (e == EINVAL)
			p->dropped++;
		else if (e)
			return e;
		else
			p->nfiles++;
	}
	return t;
}

/* Reads an array of strings into *out (others are left out). */
static int strings(struct json_reader *r, size_t max, char ***out, size_t *n)
{
	size_t cap = 0;
	int t;

	while ((t = json_value(r)) != JSON_END) {
		if (t != JSON_STRING) {
			if (skip_value(r, t))
				return -1;
			continue;
		}
		if (*n >= max) {
			snprintf(r->err, sizeof(r->err),
				 "json: more than %zu versions", max);
			return -1;
		}
		if (grow((void **)out, *n, &cap, sizeof(**out)))
			return ENOMEM;
		(*out)[*n] = NULL;
		if (dup_str(r, &(*out)[*n]))
			return ENOMEM;
		(*n)++;
	}
	return 0;
}

/* The project list's "projects": objects with a "name". */
static int projects(struct json_reader *r, size_t max, struct simple_page *p)
{
	char norm[NAMES_MAX_PROJECT + 1];
	char *name;
	size_t cap = 0;
	int t, k;

	while ((t = next_object(r, p->nprojects, &p->dropped, max,
				"projects")) == 1) {
		name = NULL;
		while ((k = json_key(r)) == 1) {
			int is_name = strcmp(buf_str(&r->str), "name") == 0;

			t = json_value(r);
			if (is_name && t == JSON_STRING && !name &&
			    !names_normalize(buf_str(&r->str), norm,
					     sizeof(norm))) {
				if (dup_str(r, &name))
					return ENOMEM;
			} else if (skip_value(r, t)) {
				free(name);
				return -1;
			}
		}
		if (k < 0) {
			free(name);
			return -1;
		}
		if (!name) {
			p->dropped++;
			continue;
		}
		if (grow((void **)&p->projects, p->nprojects, &cap,
			 sizeof(*p->projects))) {
			free(name);
			return ENOMEM;
		}
		p->projects[p->nprojects++] = name;
	}
	return t;
}

/* "meta": its "api-version". */
static int meta(struct json_reader *r, struct simple_page *p, int *claimed,
		char *err, size_t errlen)
{
	int k, t;

	while ((k = json_key(r)) == 1) {
		int is_version = strcmp(buf_str(&r->str), "api-version") == 0;

		t = json_value(r);
		if (!is_version) {
			if (skip_value(r, t))
				return -1;
			continue;
		}
		if (t != JSON_STRING) {
			log_reason(err, errlen, "json: \"api-version\" is not a string");
			return EINVAL;
		}
		if (simple_api_version(buf_str(&r->str), p->api_version)) {
			log_reason(err, errlen, "json: unsupported api-version \"%.20s\"",
			     buf_str(&r->str));
			return EINVAL;
		}
		*claimed = 1;
	}
	return k < 0 ? -1 : 0;
}

/* PEP 792 "project-status": {"status": ..., "reason": ...}. Anything
 * but strings there is ignored, as an unknown status is. */
static int project_status(struct json_reader *r, struct simple_page *p)
{
	char *status = NULL, *reason = NULL;
	int k, t, e = 0;

	while ((k = json_key(r)) == 1) {
		int which = strcmp(buf_str(&r->str), "status") == 0 ? 1 :
			    strcmp(buf_str(&r->str), "reason") == 0 ? 2 : 0;

		t = json_value(r);
		if (which && t == JSON_STRING) {
			if (dup_str(r, which == 1 ? &status : &reason)) {
				e = ENOMEM;
				goto out;
			}
		} else if (skip_value(r, t)) {
			e = -1;
			goto out;
		}
	}
	if (k < 0) {
		e = -1;
		goto out;
	}
	if (status)
		e = simple_status_set(p, status, strlen(status), reason,
				      reason ? strlen(reason) : 0);
out:
	free(status);
	free(reason);
	return e;
}

enum top_key { T_META, T_NAME, T_LIST, T_VERSIONS, T_STATUS, T_COUNT };

int simple_parse_json(const char *data, size_t len, const struct simple_opts *o,
		      int is_list, struct simple_page *p, char *err,
		      size_t errlen)
{
	static const char *const names[T_COUNT] = {"meta", "name", NULL,
						   "versions",
						   "project-status"};
	char norm[NAMES_MAX_PROJECT + 1];
	struct json_reader r;
	unsigned seen = 0;
	int claimed = 0, k, t, i, e = EINVAL;
	size_t max;

	memset(p, 0, sizeof(*p));
	p->is_list = is_list ? 1 : 0;
	json_init(&r, data, len, MAX_STRING);
	if (!o || !o->base_url) {
		log_reason(err, errlen, "json: no base URL");
		goto out;
	}
	max = o->max_files ? o->max_files : SIMPLE_DEFAULT_MAX_FILES;
	t = json_value(&r);
	if (t != JSON_OBJECT) {
		if (t != JSON_ERROR)
			log_reason(err, errlen, "json: the document is not an object");
		goto broken;
	}
	while ((k = json_key(&r)) == 1) {
		const char *key = buf_str(&r.str);

		for (i = 0; i < T_COUNT; i++)
			if (strcmp(key, i == T_LIST ? (is_list ? "projects" :
							    "files") :
						   names[i]) == 0)
				break;
		if (i < T_COUNT && once(&seen, i, &r))
			goto broken;
		t = json_value(&r);
		e = 0;
		if (i == T_META && t == JSON_OBJECT) {
			e = meta(&r, p, &claimed, err, errlen);
		} else if (i == T_META) {
			log_reason(err, errlen, "json: \"meta\" is not an object");
			e = EINVAL;
		} else if (i == T_NAME && t == JSON_STRING && !is_list) {
			if (!names_normalize(buf_str(&r.str), norm,
					     sizeof(norm)) &&
			    dup_str(&r, &p->name))
				e = ENOMEM;
		} else if (i == T_LIST && t == JSON_ARRAY) {
			e = is_list ? projects(&r, max, p) :
				      files(&r, o, max, p);
		} else if (i == T_LIST) {
			log_reason(err, errlen, "json: \"%s\" is not an array",
			     is_list ? "projects" : "files");
			e = EINVAL;
		} else if (i == T_VERSIONS && t == JSON_ARRAY && !is_list) {
			e = strings(&r, max, &p->versions, &p->nversions);
		} else if (i == T_STATUS && t == JSON_OBJECT && !is_list) {
			e = project_status(&r, p);
		} else if (skip_value(&r, t)) {
			e = -1;
		}
		if (e == -1)
			goto broken;
		if (e)
			goto out;
	}
	if (k < 0 || json_end(&r))
		goto broken;
	if (!(seen & (1u << T_LIST))) {
		log_reason(err, errlen, "json: no \"%s\" array",
		     is_list ? "projects" : "files");
		e = EINVAL;
		goto out;
	}
	if (!claimed)
		simple_api_version(NULL, p->api_version);
	/* a 1.1 page must have its versions list (PEP 700): one that left
	 * it out gets its files' */
	e = 0;
	if (!is_list && simple_minor(p->api_version) >= 1)
		e = simple_derive_versions(p);
	if (!e)
		simple_status_apply(p);
	goto out;
broken:
	e = EINVAL;
	if (strstr(r.err, "out of memory"))
		e = ENOMEM;
	log_reason(err, errlen, "%s", r.err[0] ? r.err : "json: malformed page");
out:
	json_free(&r);
	if (e == ENOMEM)
		log_reason(err, errlen, "json: out of memory");
	if (e)
		simple_page_free(p);
	return e;
}

/* ---- rendering ---------------------------------------------------------- */

/* File names, hashes and normalised project names are plain ASCII with no
 * quote or backslash (names_is_filename, simple_hash_add): they go into
 * the JSON as they are. The free-form strings go through
 * json_put_string(). */

/* Appends ,"key": and s as a JSON string. */
static int put_str(struct buf *b, const char *key, const char *s)
{
	int err = buf_addf(b, ",\"%s\":", key);

	return err ? err : json_put_string(b, s);
}

static int render_file(const struct simple_file *f, int minor, int first,
		       struct buf *b)
{
	int err;

	err = buf_addf(b, "%s{\"filename\":\"%s\",\"url\":"
		       "\"../../files/%s/%s\",\"hashes\":{",
		       first ? "" : ",", f->filename, f->sha256, f->filename);
	for (size_t i = 0; !err && i < f->nhashes; i++)
		err = buf_addf(b, "%s\"%s\":\"%s\"", i ? "," : "",
			       f->hashes[i].name, f->hashes[i].value);
	if (!err)
		err = buf_adds(b, "}");
	if (!err && f->requires_python)
		err = put_str(b, "requires-python", f->requires_python);
	if (!err && f->yanked && f->yanked_reason && f->yanked_reason[0])
		err = put_str(b, "yanked", f->yanked_reason);
	else if (!err)
		err = buf_addf(b, ",\"yanked\":%s", f->yanked ? "true" : "false");
	/* false rather than left out, as upstreams send it: a client that
	 * compares pages sees nothing lost */
	if (!err && !f->core_metadata)
		err = buf_adds(b, ",\"core-metadata\":false");
	else if (!err && f->meta_sha256[0])
		err = buf_addf(b, ",\"core-metadata\":{\"sha256\":\"%s\"}",
			       f->meta_sha256);
	else if (!err)
		err = buf_adds(b, ",\"core-metadata\":true");
	if (!err && minor >= 1 && f->size >= 0)
		err = buf_addf(b, ",\"size\":%lld", f->size);
	if (!err && minor >= 1 && f->upload_time)
		err = put_str(b, "upload-time", f->upload_time);
	/* PEP 740: served by larder, as the file is */
	if (!err && minor >= 3 && f->provenance)
		err = buf_addf(b, ",\"provenance\":\"../../files/%s/%s"
			       ".provenance\"", f->sha256, f->filename);
	if (!err)
		err = buf_adds(b, "}");
	return err;
}

static int render_list(const struct simple_page *p, struct buf *b)
{
	char norm[NAMES_MAX_PROJECT + 1];
	int err = buf_adds(b, ",\"projects\":[");
	size_t n = 0;

	for (size_t i = 0; !err && i < p->nprojects; i++) {
		if (names_normalize(p->projects[i], norm, sizeof(norm)))
			continue; /* not a name: it cannot be linked */
		err = buf_addf(b, "%s{\"name\":\"%s\"}", n++ ? "," : "",
			       p->projects[i]);
	}
	return err ? err : buf_adds(b, "]");
}

static int render_project(const struct simple_page *p, int minor,
			  struct buf *b)
{
	char norm[NAMES_MAX_PROJECT + 1];
	int err, first = 1;

	/* PEP 691: "name" is the normalised name, whatever the page said */
	if (!p->name || names_normalize(p->name, norm, sizeof(norm)))
		norm[0] = '\0';
	err = put_str(b, "name", norm);
	if (!err && minor >= 4 && p->status[0]) {
		err = buf_addf(b, ",\"project-status\":{\"status\":\"%s\"",
			       p->status);
		if (!err && p->status_reason)
			err = put_str(b, "reason", p->status_reason);
		if (!err)
			err = buf_adds(b, "}");
	}
	if (!err)
		err = buf_adds(b, ",\"files\":[");
	/* a quarantined project's page lists no files (PEP 792) */
	for (size_t i = 0; !err && !simple_quarantined(p) && i < p->nfiles;
	     i++) {
		if (!simple_renderable(&p->files[i]))
			continue;
		err = render_file(&p->files[i], minor, first, b);
		first = 0;
	}
	if (!err)
		err = buf_adds(b, "]");
	if (!err && minor >= 1 && p->versions) {
		err = buf_adds(b, ",\"versions\":[");
		for (size_t i = 0; !err && i < p->nversions; i++) {
			if (i)
				err = buf_adds(b, ",");
			if (!err)
				err = json_put_string(b, p->versions[i]);
		}
		if (!err)
			err = buf_adds(b, "]");
	}
	return err;
}

int simple_render_json(const struct simple_page *p, struct buf *out)
{
	const char *v = simple_rendered_version(p);
	int minor = simple_minor(v); /* 1: size, upload-time, versions */
	size_t start = out->len;
	int err;

	err = buf_addf(out, "{\"meta\":{\"api-version\":\"%s\"}", v);
	if (!err)
		err = p->is_list ? render_list(p, out) :
				   render_project(p, minor, out);
	if (!err)
		err = buf_adds(out, "}");
	if (err && out->data) {
		out->len = start;
		out->data[start] = '\0';
	}
	return err;
}
