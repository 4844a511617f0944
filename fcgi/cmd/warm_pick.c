#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/requirements.h"
#include "common/json.h"
#include "common/log.h"
#include "common/names.h"
#include "common/url.h"
#include "fcgi/cmd/warm_pick.h"

void warm_page_free(struct warm_page *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].filename);
		free(p->v[i].url);
	}
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

/* Copies a sha256 out of a "hashes"-like object (entered). */
static int read_hashes(struct json_reader *r, char out[65])
{
	int k;

	while ((k = json_key(r)) == 1) {
		int is256 = strcmp(buf_str(&r->str), "sha256") == 0;
		int t = json_value(r);

		if (t == JSON_ERROR)
			return -1;
		if (t == JSON_OBJECT || t == JSON_ARRAY) {
			if (json_skip(r))
				return -1;
			continue;
		}
		if (is256 && t == JSON_STRING &&
		    names_is_sha256(buf_str(&r->str)))
			memcpy(out, buf_str(&r->str), 65);
	}
	return k;
}

/* Reads one entry of "files" (entered) into f. */
static int read_file(struct json_reader *r, const char *page_url,
                     struct warm_file *f, struct buf *u)
{
	int k;

	while ((k = json_key(r)) == 1) {
		char key[32];
		int t;

		snprintf(key, sizeof(key), "%s", buf_str(&r->str));
		t = json_value(r);
		if (t == JSON_ERROR)
			return -1;
		if (t == JSON_STRING && strcmp(key, "filename") == 0) {
			free(f->filename);
			f->filename = strdup(buf_str(&r->str));
		} else if (t == JSON_STRING && strcmp(key, "url") == 0) {
			buf_reset(u);
			free(f->url);
			f->url = NULL;
			if (url_resolve(page_url, buf_str(&r->str), u, NULL) ==
			    0)
				f->url = strdup(buf_str(u));
		} else if (t == JSON_STRING &&
		           strcmp(key, "requires-python") == 0) {
			snprintf(f->requires_python, sizeof(f->requires_python),
			         "%s", buf_str(&r->str));
		} else if (t == JSON_OBJECT && strcmp(key, "hashes") == 0) {
			if (read_hashes(r, f->sha256))
				return -1;
		} else if (strcmp(key, "core-metadata") == 0 ||
		           strcmp(key, "dist-info-metadata") == 0) {
			f->has_meta = t == JSON_TRUE || t == JSON_OBJECT;
			if (t == JSON_OBJECT && read_hashes(r, f->meta_sha256))
				return -1;
		} else if (t == JSON_OBJECT || t == JSON_ARRAY) {
			if (json_skip(r))
				return -1;
		}
	}
	return k;
}

int warm_page_parse(const char *data, size_t len, const char *page_url,
                    struct warm_page *p, char *err, size_t errlen)
{
	struct json_reader r;
	struct buf u;
	int k, t, rc = EINVAL;

	memset(p, 0, sizeof(*p));
	json_init(&r, data, len, 1 << 20);
	buf_init(&u, 1 << 16);
	if (json_value(&r) != JSON_OBJECT)
		goto bad;
	while ((k = json_key(&r)) == 1) {
		int files = strcmp(buf_str(&r.str), "files") == 0;

		t = json_value(&r);
		if (t == JSON_ERROR)
			goto bad;
		if (!files || t != JSON_ARRAY) {
			if ((t == JSON_OBJECT || t == JSON_ARRAY) &&
			    json_skip(&r))
				goto bad;
			continue;
		}
		while ((t = json_value(&r)) == JSON_OBJECT) {
			struct warm_file f = {0}, *v;

			if (read_file(&r, page_url, &f, &u) != 0 ||
			    !f.filename || !f.url) {
				free(f.filename);
				free(f.url);
				if (r.err[0])
					goto bad;
				continue; /* an entry we cannot use */
			}
			v = realloc(p->v, (p->n + 1) * sizeof(*v));
			if (!v) {
				free(f.filename);
				free(f.url);
				rc = ENOMEM;
				goto out;
			}
			p->v = v;
			p->v[p->n++] = f;
		}
		if (t != JSON_END)
			goto bad;
	}
	if (k == 0 && json_end(&r) == 0) {
		rc = 0;
		goto out;
	}
bad:
	log_reason(err, errlen, "not a PEP 691 JSON page: %s",
	           r.err[0] ? r.err : "no \"files\" list");
out:
	buf_free(&u);
	json_free(&r);
	return rc;
}

/* Whether f is a file of project at version; *wheel says if a wheel. */
static int of_version(const struct warm_file *f, const char *project,
                      const char *version, int *wheel)
{
	char name[NAMES_MAX_PROJECT + 1], norm[NAMES_MAX_PROJECT + 1];
	char ver[128];

	*wheel = 0;
	if (wheeltag_split(f->filename, name, sizeof(name), ver, sizeof(ver),
	                   NULL, 0) == 0) {
		*wheel = 1;
		return names_normalize(name, norm, sizeof(norm)) == 0 &&
		       strcmp(norm, project) == 0 &&
		       wheeltag_version_eq(ver, version);
	}
	return wheeltag_sdist_version(f->filename, project, ver, sizeof(ver)) ==
	           0 &&
	       wheeltag_version_eq(ver, version);
}

static int hash_listed(const char *h, const char (*hashes)[65], size_t n)
{
	if (!*h)
		return 0; /* the page gives none: it cannot match */
	for (size_t i = 0; i < n; i++)
		if (strcmp(h, hashes[i]) == 0)
			return 1;
	return 0;
}

/* Whether Requires-Python spec takes Python X.Y: each clause becomes a
 * marker on python_full_version, so the comparison is the markers' one. */
static int python_ok(const char *spec, const char *python)
{
	struct req_env env = {0};
	char full[24], marker[1024], clause[128];
	const char *p = spec;
	size_t n = 0;

	if (!*spec || strpbrk(spec, "'\"\\"))
		return 1;
	snprintf(full, sizeof(full), "%s.0", python);
	env.python_full_version = full;
	marker[0] = '\0';
	while (*p) {
		size_t len = strcspn(p, ","), op;
		char *c = clause;

		if (len >= sizeof(clause))
			return 1;
		memcpy(clause, p, len);
		clause[len] = '\0';
		p += len + (p[len] == ',');
		while (len && clause[len - 1] == ' ')
			clause[--len] = '\0';
		while (*c == ' ')
			c++;
		op = strspn(c, "<>=!~");
		if (!op || !c[op])
			return 1;
		n += (size_t)snprintf(marker + n, sizeof(marker) - n,
		                      "%spython_full_version %.*s '%s'",
		                      n ? " and " : "", (int)op, c,
		                      c + op + strspn(c + op, " "));
		if (n >= sizeof(marker))
			return 1;
	}
	return requirements_marker(marker, &env);
}

long warm_pick(const struct warm_page *p, const char *project,
               const char *version, const char (*hashes)[65], size_t nhashes,
               const struct wheeltag_target *t)
{
	long best = -1, best_rank = -1, sdist = -1;
	int any = 0, hashed = 0, python = 0;

	for (size_t i = 0; i < p->n; i++) {
		const struct warm_file *f = &p->v[i];
		int wheel;
		long r;

		if (!of_version(f, project, version, &wheel))
			continue;
		any = 1;
		if (nhashes && !hash_listed(f->sha256, hashes, nhashes))
			continue;
		hashed = 1;
		if (!python_ok(f->requires_python, t->python))
			continue;
		python = 1;
		if (!wheel) {
			/* pip prefers a .tar.gz among sdists */
			if (sdist < 0 || strstr(f->filename, ".tar.gz"))
				sdist = (long)i;
			continue;
		}
		r = wheeltag_rank(t, f->filename);
		if (r >= 0 && (best < 0 || r < best_rank)) {
			best = (long)i;
			best_rank = r;
		}
	}
	if (!any)
		return WARM_PICK_NO_VERSION;
	if (!hashed)
		return WARM_PICK_NO_HASH;
	if (!python)
		return WARM_PICK_NO_PYTHON;
	if (best >= 0)
		return best;
	return sdist >= 0 ? sdist : WARM_PICK_NO_FIT;
}
