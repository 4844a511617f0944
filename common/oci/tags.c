#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "common/oci/tags.h"

static int fail(struct json_reader *r, char *err, size_t errlen,
                const char *what)
{
	log_reason(err, errlen, "tag list: %s", *r->err ? r->err : what);
	return EINVAL;
}

static int push(struct oci_tags *t, const char *s, size_t n)
{
	char **more;

	if (t->n == OCI_TAGS_MAX)
		return EFBIG;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;

		more = realloc(t->tag, cap * sizeof(*more));
		if (!more)
			return ENOMEM;
		t->tag = more;
		t->cap = cap;
	}
	t->tag[t->n] = strndup(s, n);
	if (!t->tag[t->n])
		return ENOMEM;
	t->n++;
	return 0;
}

/* Reads the "tags" array (entered). */
static int tag_array(struct json_reader *r, struct oci_tags *t, char *err,
                     size_t errlen)
{
	int v, rc;

	while ((v = json_value(r)) == JSON_STRING) {
		const char *s = buf_str(&r->str);
		size_t n = r->str.len;

		if (!oci_tag_valid(s, n))
			return fail(r, err, errlen, "a tag the grammar refuses");
		rc = push(t, s, n);
		if (rc) {
			log_reason(err, errlen, "tag list: %s",
			           rc == EFBIG ? "too many tags" : "no memory");
			return rc;
		}
	}
	return v == JSON_END ? 0 : fail(r, err, errlen, "a tag is no string");
}

int oci_tags_add(struct oci_tags *t, const char *data, size_t len, char *err,
                 size_t errlen)
{
	struct json_reader r;
	int k = 0, v, rc = 0;

	log_reason(err, errlen, "%s", "");
	json_init(&r, data, len, 64 * 1024);
	if (json_value(&r) != JSON_OBJECT) {
		rc = fail(&r, err, errlen, "not a JSON object");
		goto out;
	}
	while (!rc && (k = json_key(&r)) == 1) {
		int is_tags = !strcmp(buf_str(&r.str), "tags");
		int is_name = !strcmp(buf_str(&r.str), "name");

		v = json_value(&r);
		if (v == JSON_ERROR)
			rc = fail(&r, err, errlen, "bad JSON");
		else if (is_tags && v == JSON_ARRAY)
			rc = tag_array(&r, t, err, errlen);
		else if (is_tags && v != JSON_NULL)
			rc = fail(&r, err, errlen, "tags is no array");
		else if (is_name && v == JSON_STRING && !*t->name &&
		         oci_name_valid(buf_str(&r.str), r.str.len))
			memcpy(t->name, buf_str(&r.str), r.str.len + 1);
		else if ((v == JSON_OBJECT || v == JSON_ARRAY) && json_skip(&r))
			rc = fail(&r, err, errlen, "bad JSON");
	}
	if (!rc && (k < 0 || json_end(&r)))
		rc = fail(&r, err, errlen, "bad JSON");
out:
	json_free(&r);
	return rc;
}

static int by_bytes(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void oci_tags_sort(struct oci_tags *t)
{
	size_t kept = 0;

	if (t->n)
		qsort(t->tag, t->n, sizeof(*t->tag), by_bytes);
	for (size_t i = 0; i < t->n; i++) {
		if (kept && !strcmp(t->tag[kept - 1], t->tag[i])) {
			free(t->tag[i]);
			continue;
		}
		t->tag[kept++] = t->tag[i];
	}
	t->n = kept;
}

int oci_tags_render(const struct oci_tags *t, const char *last, long n,
                    struct buf *out, char *next)
{
	size_t i = 0, written = 0;
	int err;

	next[0] = '\0';
	if (last && *last)
		while (i < t->n && strcmp(t->tag[i], last) <= 0)
			i++;
	err = buf_adds(out, "{\"name\":");
	if (!err)
		err = json_put_string(out, t->name);
	if (!err)
		err = buf_adds(out, ",\"tags\":[");
	for (; !err && i < t->n && (n < 0 || (long)written < n); i++) {
		if (written++)
			err = buf_add(out, ",", 1);
		if (!err)
			err = json_put_string(out, t->tag[i]);
	}
	if (!err)
		err = buf_adds(out, "]}");
	if (!err && i < t->n && written)
		memcpy(next, t->tag[i - 1], strlen(t->tag[i - 1]) + 1);
	return err;
}

void oci_tags_free(struct oci_tags *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->tag[i]);
	free(t->tag);
	t->tag = NULL;
	t->n = t->cap = 0;
}
