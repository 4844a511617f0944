/* libFuzzer target: the merge of a virtual index's pages, glob matching and
 * the project names a file name may be of. Input: two JSON pages and a
 * line of globs and a file name, separated by NUL bytes. What merges
 * renders and parses again; every file name is listed once, the first
 * page's files as the first page has them. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/names.h"
#include "common/pypi/simple.h"
#include "common/pypi/simple_merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

/* The next NUL-terminated part of d[*at..n), copied. */
static char *part(const uint8_t *d, size_t n, size_t *at, size_t *len)
{
	size_t start = *at, end = start;
	char *s;

	while (end < n && d[end])
		end++;
	*len = end - start;
	s = malloc(*len + 1);
	if (!s)
		abort();
	memcpy(s, d + start, *len);
	s[*len] = '\0';
	*at = end < n ? end + 1 : n;
	return s;
}

static void check_names(const char *filename)
{
	char out[SIMPLE_MERGE_MAX_NAMES][NAMES_MAX_PROJECT + 1];
	char again[NAMES_MAX_PROJECT + 1];
	size_t k = simple_merge_names(filename, out, SIMPLE_MERGE_MAX_NAMES);

	for (size_t i = 0; i < k; i++)
		if (names_normalize(out[i], again, sizeof(again)) ||
		    strcmp(again, out[i]) != 0)
			abort();
}

static void check_merge(const struct simple_page *in, const char *globs)
{
	struct simple_opts back = {.base_url = "http://h/v/simple/x/",
				   .max_files = 100000};
	struct simple_page m, q;
	struct buf json;
	char err[256];

	if (simple_merge(in, 2, &m))
		return; /* ENOMEM only: both are of one kind */
	if (m.nfiles > in[0].nfiles + in[1].nfiles)
		abort();
	/* each name of the first page as its first entry of it has it */
	for (size_t i = 0; i < in[0].nfiles && i < 256; i++) {
		const struct simple_file *f = &in[0].files[i], *g = NULL;

		for (size_t j = 0; j < i && !g; j++)
			if (strcmp(in[0].files[j].filename, f->filename) == 0)
				g = f; /* a repeat: the earlier one counts */
		for (size_t j = 0; !g && j < m.nfiles; j++)
			if (strcmp(m.files[j].filename, f->filename) == 0) {
				g = &m.files[j];
				if (strcmp(g->sha256, f->sha256))
					abort();
			}
		if (!g)
			abort();
	}
	for (size_t i = 0; i < m.nfiles; i++)
		for (size_t j = i + 1; j < m.nfiles && j < i + 64; j++)
			if (strcmp(m.files[i].filename, m.files[j].filename) ==
			    0)
				abort();
	if (m.nprojects > in[0].nprojects + in[1].nprojects)
		abort();
	simple_merge_drop(&m, globs);
	buf_init(&json, 64 << 20);
	if (simple_render_json(&m, &json))
		abort();
	if (simple_parse_json(json.data, json.len, &back, m.is_list, &q, err,
			      sizeof(err)))
		abort();
	if (q.nfiles != m.nfiles)
		abort();
	simple_page_free(&q);
	buf_free(&json);
	simple_page_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct simple_opts o = {.base_url = "https://pypi.org/simple/x/",
				.trusted = "files.pythonhosted.org",
				.max_files = 10000};
	struct simple_page in[2];
	char *a, *b, *globs, *filename, err[256];
	size_t at = 0, alen, blen, glen, flen;
	int list;

	a = part(d, n, &at, &alen);
	list = strstr(a, "\"projects\"") != NULL;
	b = part(d, n, &at, &blen);
	globs = part(d, n, &at, &glen);
	filename = part(d, n, &at, &flen);
	check_names(filename);
	names_globs_match(globs, filename);
	if (simple_parse_json(a, alen, &o, list, &in[0], err, sizeof(err)))
		goto out;
	if (simple_parse_json(b, blen, &o, list, &in[1], err, sizeof(err))) {
		simple_page_free(&in[0]);
		goto out;
	}
	check_merge(in, globs);
	simple_page_free(&in[0]);
	simple_page_free(&in[1]);
out:
	free(a);
	free(b);
	free(globs);
	free(filename);
	return 0;
}
