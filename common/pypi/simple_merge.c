/* The merge of a virtual index's pages (common/pypi/simple_merge.h). Files and
 * names are deduplicated by sorting pointers to them, not by comparing
 * every pair: a merge of pages of tens of thousands of files, or of
 * project lists of hundreds of thousands of names, costs n log n. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pypi/simple_merge.h"

/* One file or name of one of the pages, where it came from. */
struct item {
	const char *key;  /* file name, or normalised project name */
	size_t page;      /* position of its page in the input */
	size_t pos;       /* its position on that page */
	const void *what; /* the struct simple_file, or the name as spelt */
	char *norm;       /* the normalised name (lists), owned */
};

static int by_key(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	if (x->page != y->page)
		return x->page < y->page ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int by_origin(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->page != y->page)
		return x->page < y->page ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Copies s (NULL stays NULL) into *out. Returns 0 or ENOMEM. */
static int copy_str(const char *s, char **out)
{
	*out = NULL;
	if (!s)
		return 0;
	*out = strdup(s);
	return *out ? 0 : ENOMEM;
}

/* Copies f into a zeroed to. Returns 0 or ENOMEM (to then holds what it
 * got, for simple_file_free). */
static int copy_file(const struct simple_file *f, struct simple_file *to)
{
	int err;

	to->yanked = f->yanked;
	to->core_metadata = f->core_metadata;
	to->size = f->size;
	memcpy(to->sha256, f->sha256, sizeof(to->sha256));
	memcpy(to->meta_sha256, f->meta_sha256, sizeof(to->meta_sha256));
	err = copy_str(f->filename, &to->filename);
	if (!err)
		err = copy_str(f->url, &to->url);
	if (!err)
		err = copy_str(f->requires_python, &to->requires_python);
	if (!err)
		err = copy_str(f->yanked_reason, &to->yanked_reason);
	if (!err)
		err = copy_str(f->upload_time, &to->upload_time);
	if (!err)
		err = copy_str(f->provenance, &to->provenance);
	if (err || !f->nhashes)
		return err;
	to->hashes = calloc(f->nhashes, sizeof(*to->hashes));
	if (!to->hashes)
		return ENOMEM;
	for (size_t i = 0; i < f->nhashes; i++) {
		to->nhashes++;
		if (copy_str(f->hashes[i].name, &to->hashes[i].name) ||
		    copy_str(f->hashes[i].value, &to->hashes[i].value))
			return ENOMEM;
	}
	return 0;
}

/* The files of every page, each file name once (the earliest page's), in
 * order of appearance. */
static int merge_files(const struct simple_page *in, size_t n,
		       struct simple_page *out)
{
	struct item *it;
	size_t total = 0, k = 0, kept = 0;
	int err = 0;

	for (size_t i = 0; i < n; i++)
		total += in[i].nfiles;
	if (!total)
		return 0;
	it = calloc(total, sizeof(*it));
	if (!it)
		return ENOMEM;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < in[i].nfiles; j++) {
			const struct simple_file *f = &in[i].files[j];

			it[k++] = (struct item){.key = f->filename ? f->filename
								   : "",
						.page = i, .pos = j, .what = f};
		}
	qsort(it, total, sizeof(*it), by_key);
	for (size_t i = 0; i < total; i++)
		if (i == 0 || strcmp(it[i].key, it[kept - 1].key) != 0)
			it[kept++] = it[i];
	qsort(it, kept, sizeof(*it), by_origin);
	out->files = calloc(kept, sizeof(*out->files));
	if (!out->files) {
		err = ENOMEM;
		goto out;
	}
	for (size_t i = 0; !err && i < kept; i++) {
		err = copy_file(it[i].what, &out->files[i]);
		out->nfiles++;
	}
out:
	free(it);
	return err;
}

/* The versions of every page, each once, in order of appearance. */
static int merge_versions(const struct simple_page *in, size_t n,
			  struct simple_page *out)
{
	size_t total = 0, k = 0, kept = 0;
	struct item *it;
	int any = 0, err = 0;

	for (size_t i = 0; i < n; i++) {
		total += in[i].nversions;
		any |= in[i].versions != NULL;
	}
	if (!any)
		return 0;
	out->versions = calloc(total ? total : 1, sizeof(*out->versions));
	it = calloc(total ? total : 1, sizeof(*it));
	if (!out->versions || !it) {
		err = ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < in[i].nversions; j++)
			it[k++] = (struct item){.key = in[i].versions[j],
						.page = i, .pos = j};
	qsort(it, total, sizeof(*it), by_key);
	for (size_t i = 0; i < total; i++)
		if (i == 0 || strcmp(it[i].key, it[kept - 1].key) != 0)
			it[kept++] = it[i];
	qsort(it, kept, sizeof(*it), by_origin);
	for (size_t i = 0; !err && i < kept; i++) {
		err = copy_str(it[i].key, &out->versions[i]);
		out->nversions++;
	}
out:
	free(it);
	return err;
}

/* The names of every list, each normalised name once (spelt as the
 * earliest list spells it), sorted by normalised name. */
static int merge_names(const struct simple_page *in, size_t n,
		       struct simple_page *out)
{
	char norm[NAMES_MAX_PROJECT + 1];
	size_t total = 0, k = 0, kept = 0;
	struct item *it;
	int err = 0;

	for (size_t i = 0; i < n; i++)
		total += in[i].nprojects;
	if (!total)
		return 0;
	it = calloc(total, sizeof(*it));
	if (!it)
		return ENOMEM;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < in[i].nprojects; j++) {
			const char *name = in[i].projects[j];

			/* a name that is not one cannot be linked anyway */
			if (names_normalize(name, norm, sizeof(norm)))
				continue;
			it[k].norm = strdup(norm);
			if (!it[k].norm) {
				err = ENOMEM;
				goto out;
			}
			it[k].key = it[k].norm;
			it[k].page = i;
			it[k].pos = j;
			it[k++].what = name;
		}
	qsort(it, k, sizeof(*it), by_key);
	out->projects = calloc(k ? k : 1, sizeof(*out->projects));
	if (!out->projects) {
		err = ENOMEM;
		goto out;
	}
	for (size_t i = 0; !err && i < k; i++) {
		if (kept && strcmp(it[i].key, it[kept - 1].key) == 0)
			continue;
		it[kept++].key = it[i].key;
		err = copy_str(it[i].what, &out->projects[out->nprojects]);
		if (!err)
			out->nprojects++;
	}
out:
	for (size_t i = 0; i < k; i++)
		free(it[i].norm);
	free(it);
	return err;
}

/* The merged page's PEP 792 status: the first page's (in layer order)
 * that states one other than active, leaving out quarantined pages unless
 * every page is quarantined. A quarantine is of one index's project: its
 * page lists no files, and the other layers' files of the name stay on
 * offer, which a quarantined merged page would contradict. */
static int merge_status(const struct simple_page *in, size_t n,
			struct simple_page *out)
{
	const struct simple_page *from = NULL;
	size_t quarantined = 0;

	for (size_t i = 0; i < n; i++) {
		if (simple_quarantined(&in[i])) {
			quarantined++;
			continue;
		}
		if (!from && in[i].status[0] &&
		    strcmp(in[i].status, "active") != 0)
			from = &in[i];
	}
	if (quarantined == n)
		from = &in[0];
	if (!from || !from->status[0])
		return 0;
	return simple_status_set(out, from->status, strlen(from->status),
				 from->status_reason,
				 from->status_reason ?
					 strlen(from->status_reason) : 0);
}

int simple_merge(const struct simple_page *in, size_t n,
		 struct simple_page *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	if (n == 0)
		return EINVAL;
	for (size_t i = 1; i < n; i++)
		if (in[i].is_list != in[0].is_list)
			return EINVAL;
	out->is_list = in[0].is_list;
	snprintf(out->api_version, sizeof(out->api_version), "%s",
		 simple_rendered_version(&in[0]));
	for (size_t i = 0; i < n; i++) {
		const char *v = simple_rendered_version(&in[i]);

		/* "1.0" < "1.4": one digit each, as simple_api_version()
		 * caps claims */
		if (strcmp(v, out->api_version) < 0)
			snprintf(out->api_version, sizeof(out->api_version),
				 "%s", v);
		out->dropped += in[i].dropped;
	}
	if (out->is_list) {
		err = merge_names(in, n, out);
		goto out;
	}
	for (size_t i = 0; i < n && !out->name; i++)
		if (in[i].name && copy_str(in[i].name, &out->name)) {
			err = ENOMEM;
			goto out;
		}
	err = merge_files(in, n, out);
	if (!err)
		err = merge_versions(in, n, out);
	if (!err)
		err = merge_status(in, n, out);
out:
	if (err)
		simple_page_free(out);
	return err;
}

size_t simple_merge_drop(struct simple_page *p, const char *globs)
{
	char norm[NAMES_MAX_PROJECT + 1];
	size_t kept = 0, gone;

	if (!globs || !*globs)
		return 0;
	for (size_t i = 0; i < p->nprojects; i++) {
		if (names_normalize(p->projects[i], norm, sizeof(norm)) == 0 &&
		    names_globs_match(globs, norm)) {
			free(p->projects[i]);
			continue;
		}
		p->projects[kept++] = p->projects[i];
	}
	gone = p->nprojects - kept;
	p->nprojects = kept;
	return gone;
}

size_t simple_merge_names(const char *filename,
			  char out[][NAMES_MAX_PROJECT + 1], size_t max)
{
	char part[NAMES_MAX_PROJECT + 1];
	size_t len = strlen(filename), n = 0, k;
	int wheel = len > 4 && strcmp(filename + len - 4, ".whl") == 0;

	if (max > SIMPLE_MERGE_MAX_NAMES)
		max = SIMPLE_MERGE_MAX_NAMES;
	for (size_t i = 1; i + 1 < len && n < max; i++) {
		if (filename[i] != '-')
			continue;
		if (i <= NAMES_MAX_PROJECT) {
			memcpy(part, filename, i);
			part[i] = '\0';
			if (names_normalize(part, out[n],
					    NAMES_MAX_PROJECT + 1) == 0) {
				for (k = 0; k < n; k++)
					if (strcmp(out[k], out[n]) == 0)
						break;
				if (k == n)
					n++;
			}
		}
		if (wheel)
			break;
	}
	return n;
}
