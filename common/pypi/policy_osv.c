/* policy_osv: OSV advisories read into affected ranges. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/pypi/policy_osv.h"

#define MAX_STRING 65536

struct adv {
	struct policy_osv o;
	size_t cap;
	char project[NAMES_MAX_PROJECT + 1]; /* the affected entry's */
	int pypi;                            /* its ecosystem is PyPI */
	int withdrawn;
};

/* Adds a range to a; returns it, or NULL with *err E2BIG (too many) or
 * ENOMEM. */
static struct policy_vuln *add(struct adv *a, int *err)
{
	if (a->o.n == POLICY_OSV_MAX_RANGES) {
		*err = E2BIG;
		return NULL;
	}
	if (a->o.n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 8;
		struct policy_vuln *r = realloc(a->o.range, cap * sizeof(*r));
		char(*p)[NAMES_MAX_PROJECT + 1];

		if (!r) {
			*err = ENOMEM;
			return NULL;
		}
		a->o.range = r;
		p = realloc(a->o.project, cap * sizeof(*p));
		if (!p) {
			*err = ENOMEM;
			return NULL;
		}
		a->o.project = p;
		a->cap = cap;
	}
	memset(&a->o.range[a->o.n], 0, sizeof(a->o.range[0]));
	snprintf(a->o.range[a->o.n].id, sizeof(a->o.range[0].id), "%s",
	         a->o.id);
	memcpy(a->o.project[a->o.n], a->project, sizeof(a->project));
	return &a->o.range[a->o.n++];
}

/* Copies r's string into out, when it fits. */
static int take(struct json_reader *r, char *out, size_t len)
{
	if (r->str.len >= len)
		return EINVAL;
	memcpy(out, r->str.data, r->str.len);
	out[r->str.len] = 0;
	return 0;
}

/* "package": {"ecosystem": ..., "name": ...}, entered. */
static int package(struct json_reader *r, struct adv *a)
{
	char name[NAMES_MAX_PROJECT + 1];
	int k;

	a->pypi = 0;
	a->project[0] = 0;
	while ((k = json_key(r)) == 1) {
		int eco = !strcmp(r->str.data, "ecosystem");
		int nm = !strcmp(r->str.data, "name");
		int t = json_value(r);

		if (t == JSON_OBJECT || t == JSON_ARRAY) {
			if (json_skip(r) < 0)
				return EINVAL;
		} else if (t == JSON_ERROR) {
			return EINVAL;
		} else if (t == JSON_STRING && eco) {
			a->pypi = !strcmp(r->str.data, "PyPI");
		} else if (t == JSON_STRING && nm && !take(r, name, sizeof(name))) {
			if (names_normalize(name, a->project,
			                    sizeof(a->project)))
				a->project[0] = 0;
		}
	}
	return k < 0 ? EINVAL : 0;
}

/* "events": [...], entered: introduced opens a range, fixed and
 * last_affected close it. Ranges are added only for a PyPI package. */
static int events(struct json_reader *r, struct adv *a, int keep)
{
	struct policy_vuln *open = NULL;
	int t, k, err = 0;

	while ((t = json_value(r)) != JSON_END) {
		if (t == JSON_ERROR)
			return EINVAL;
		if (t != JSON_OBJECT) {
			if (t == JSON_ARRAY && json_skip(r) < 0)
				return EINVAL;
			continue;
		}
		while ((k = json_key(r)) == 1) {
			char what[16];
			int v;

			snprintf(what, sizeof(what), "%s", r->str.data);
			v = json_value(r);
			if (v == JSON_OBJECT || v == JSON_ARRAY) {
				if (json_skip(r) < 0)
					return EINVAL;
				continue;
			}
			if (v != JSON_STRING)
				continue;
			if (!keep)
				continue;
			if (!strcmp(what, "introduced")) {
				open = add(a, &err);
				if (!open)
					return err;
				if (take(r, open->introduced,
				         sizeof(open->introduced)))
					return EINVAL;
			} else if (open && !strcmp(what, "fixed")) {
				if (take(r, open->fixed, sizeof(open->fixed)))
					return EINVAL;
				open = NULL;
			} else if (open && !strcmp(what, "last_affected")) {
				if (take(r, open->last_affected,
				         sizeof(open->last_affected)))
					return EINVAL;
				open = NULL;
			}
		}
		if (k < 0)
			return EINVAL;
	}
	return 0;
}

/* "ranges": [...], entered. */
static int ranges(struct json_reader *r, struct adv *a)
{
	int t, k, err;

	while ((t = json_value(r)) != JSON_END) {
		int eco = 0;

		if (t == JSON_ERROR)
			return EINVAL;
		if (t != JSON_OBJECT) {
			if (t == JSON_ARRAY && json_skip(r) < 0)
				return EINVAL;
			continue;
		}
		/* "type" may come after "events": events are kept only for
		 * an ECOSYSTEM range, so a SEMVER or GIT one that comes
		 * first is read as a range of its own and dropped */
		{
			size_t had = a->o.n;
			int seen_type = 0;

			while ((k = json_key(r)) == 1) {
				int ty = !strcmp(r->str.data, "type");
				int ev = !strcmp(r->str.data, "events");
				int v = json_value(r);

				if (v == JSON_ERROR)
					return EINVAL;
				if (ty && v == JSON_STRING) {
					seen_type = 1;
					eco = !strcmp(r->str.data, "ECOSYSTEM");
				} else if (ev && v == JSON_ARRAY) {
					err = events(r, a, a->pypi &&
					             *a->project);
					if (err)
						return err;
				} else if (v == JSON_OBJECT || v == JSON_ARRAY) {
					if (json_skip(r) < 0)
						return EINVAL;
				}
			}
			if (k < 0)
				return EINVAL;
			if (!seen_type || !eco)
				a->o.n = had;
		}
	}
	return 0;
}

/* "versions": [...], entered: each an affected version of its own. */
static int versions(struct json_reader *r, struct adv *a)
{
	struct policy_vuln *v;
	int t, err = 0;

	while ((t = json_value(r)) != JSON_END) {
		if (t == JSON_ERROR)
			return EINVAL;
		if (t == JSON_OBJECT || t == JSON_ARRAY) {
			if (json_skip(r) < 0)
				return EINVAL;
			continue;
		}
		if (t != JSON_STRING || !a->pypi || !*a->project)
			continue;
		v = add(a, &err);
		if (!v)
			return err;
		if (take(r, v->introduced, sizeof(v->introduced)))
			return EINVAL;
		memcpy(v->last_affected, v->introduced,
		       sizeof(v->last_affected));
	}
	return 0;
}

/* "affected": [...], entered. Ranges are kept for the package named
 * before them, as OSV writes it ("package" first); ranges read before
 * any package are dropped. */
static int affected(struct json_reader *r, struct adv *a)
{
	int t, k, err;

	while ((t = json_value(r)) != JSON_END) {
		if (t == JSON_ERROR)
			return EINVAL;
		if (t != JSON_OBJECT) {
			if (t == JSON_ARRAY && json_skip(r) < 0)
				return EINVAL;
			continue;
		}
		a->pypi = 0;
		a->project[0] = 0;
		while ((k = json_key(r)) == 1) {
			int pk = !strcmp(r->str.data, "package");
			int rg = !strcmp(r->str.data, "ranges");
			int vs = !strcmp(r->str.data, "versions");
			int v = json_value(r);

			if (v == JSON_ERROR)
				return EINVAL;
			err = 0;
			if (pk && v == JSON_OBJECT)
				err = package(r, a);
			else if (rg && v == JSON_ARRAY)
				err = ranges(r, a);
			else if (vs && v == JSON_ARRAY)
				err = versions(r, a);
			else if ((v == JSON_OBJECT || v == JSON_ARRAY) &&
			         json_skip(r) < 0)
				err = EINVAL;
			if (err)
				return err;
		}
		if (k < 0)
			return EINVAL;
	}
	return 0;
}

/* One advisory object, entered; calls fn with it. */
static int advisory(struct json_reader *r, struct adv *a,
                    int (*fn)(const struct policy_osv *, void *), void *ctx,
                    char *err, size_t errlen)
{
	int k, rc = 0;

	a->o.id[0] = 0;
	a->o.n = 0;
	a->withdrawn = 0;
	while ((k = json_key(r)) == 1) {
		int id = !strcmp(r->str.data, "id");
		int af = !strcmp(r->str.data, "affected");
		int wd = !strcmp(r->str.data, "withdrawn");
		int v = json_value(r);

		if (v == JSON_ERROR)
			goto bad;
		if (id && v == JSON_STRING) {
			if (take(r, a->o.id, sizeof(a->o.id))) {
				snprintf(err, errlen, "an id longer than 63 "
				         "bytes");
				return EINVAL;
			}
			/* the ranges get it below, wherever it came */
		} else if (af && v == JSON_ARRAY) {
			rc = affected(r, a);
			if (rc == E2BIG) {
				snprintf(err, errlen, "more than %d affected "
				         "ranges", POLICY_OSV_MAX_RANGES);
				return EINVAL;
			}
			if (rc)
				goto fail;
		} else if (wd && v == JSON_STRING) {
			a->withdrawn = 1;
		} else if ((v == JSON_OBJECT || v == JSON_ARRAY) &&
		           json_skip(r) < 0) {
			goto bad;
		}
	}
	if (k < 0)
		goto bad;
	if (!*a->o.id) {
		snprintf(err, errlen, "an advisory without an id");
		return EINVAL;
	}
	for (size_t i = 0; i < a->o.n; i++)
		snprintf(a->o.range[i].id, sizeof(a->o.range[i].id), "%s",
		         a->o.id);
	if (a->withdrawn)
		a->o.n = 0;
	return fn(&a->o, ctx);
bad:
	rc = EINVAL;
fail:
	if (rc == EINVAL)
		snprintf(err, errlen, "not an OSV advisory: %s",
		         *r->err ? r->err : "a value too long");
	return rc;
}

int policy_osv_parse(const char *data, size_t len,
                     int (*fn)(const struct policy_osv *adv, void *ctx),
                     void *ctx, char *err, size_t errlen)
{
	struct json_reader r;
	struct adv a;
	int t, rc = 0;

	memset(&a, 0, sizeof(a));
	json_init(&r, data, len, MAX_STRING);
	t = json_value(&r);
	if (t == JSON_OBJECT) {
		rc = advisory(&r, &a, fn, ctx, err, errlen);
	} else if (t == JSON_ARRAY) {
		while (!rc && (t = json_value(&r)) == JSON_OBJECT)
			rc = advisory(&r, &a, fn, ctx, err, errlen);
		if (!rc && t != JSON_END) {
			snprintf(err, errlen, "not an OSV advisory: %s",
			         *r.err ? r.err : "an array of other than "
			                          "advisories");
			rc = EINVAL;
		}
	} else {
		snprintf(err, errlen, "not an OSV advisory: %s",
		         *r.err ? r.err : "expected an object");
		rc = EINVAL;
	}
	if (!rc && json_end(&r)) {
		snprintf(err, errlen, "not an OSV advisory: %s", r.err);
		rc = EINVAL;
	}
	json_free(&r);
	free(a.o.range);
	free(a.o.project);
	return rc;
}
