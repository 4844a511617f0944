#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/names.h"
#include "common/pypi/simple.h"
#include "common/pypi/simple_merge.h"
#include "tests/unit/t.h"

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define SHA_C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define SHA_D "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"

/* What the glue parses renderings against: larder's own relative links. */
#define BASE "http://larder.invalid/v/simple/demo/"

/* A rendering as larder stores it (simple_render_json's shape). */
#define FILE_JSON(fn, sha, extra)                                            \
	"{\"filename\":\"" fn "\",\"url\":\"../../files/" sha "/" fn "\","   \
	"\"hashes\":{\"sha256\":\"" sha "\"}" extra "}"

static const char first_page[] =
	"{\"meta\":{\"api-version\":\"1.1\"},\"name\":\"Demo\",\"files\":["
	FILE_JSON("demo-1.0.tar.gz", SHA_A, ",\"size\":10") ","
	FILE_JSON("demo-1.0-py3-none-any.whl", SHA_B,
		  ",\"yanked\":\"bad\",\"requires-python\":\">=3.8\","
		  "\"core-metadata\":{\"sha256\":\"" SHA_D "\"}")
	"],\"versions\":[\"1.0\"]}";

static const char second_page[] =
	"{\"meta\":{\"api-version\":\"1.1\"},\"name\":\"demo\",\"files\":["
	/* same name, other bytes: the first page's must win */
	FILE_JSON("demo-1.0-py3-none-any.whl", SHA_C, ",\"size\":99") ","
	FILE_JSON("demo-2.0-py3-none-any.whl", SHA_D,
		  ",\"upload-time\":\"2024-01-02T03:04:05Z\"")
	"],\"versions\":[\"1.0\",\"2.0\"]}";

static const char old_page[] =
	"{\"meta\":{\"api-version\":\"1.0\"},\"name\":\"demo\",\"files\":["
	FILE_JSON("demo-3.0.tar.gz", SHA_C, "") "]}";

static int parse(const char *json, int is_list, struct simple_page *p)
{
	struct simple_opts o = {BASE, NULL, 0};
	char err[200] = "";
	int e;

	e = simple_parse_json(json, strlen(json), &o, is_list, p, err,
			      sizeof(err));
	if (e)
		fprintf(stderr, "  parse: %s\n", err);
	return e;
}

static const struct simple_file *find(const struct simple_page *p,
				      const char *fn)
{
	for (size_t i = 0; i < p->nfiles; i++)
		if (strcmp(p->files[i].filename, fn) == 0)
			return &p->files[i];
	return NULL;
}

T(merge_project_pages)
{
	struct simple_page in[2], out;
	const struct simple_file *f;

	CHECK_INT(parse(first_page, 0, &in[0]), 0);
	CHECK_INT(parse(second_page, 0, &in[1]), 0);
	CHECK_INT(simple_merge(in, 2, &out), 0);
	CHECK_INT(out.is_list, 0);
	CHECK_STR(out.name, "Demo");
	CHECK_STR(out.api_version, "1.1");
	CHECK_INT(out.nfiles, 3);
	/* the first page's files first, in its order, then the new ones */
	CHECK_STR(out.files[0].filename, "demo-1.0.tar.gz");
	CHECK_STR(out.files[1].filename, "demo-1.0-py3-none-any.whl");
	CHECK_STR(out.files[2].filename, "demo-2.0-py3-none-any.whl");
	f = find(&out, "demo-1.0-py3-none-any.whl");
	CHECK(f != NULL);
	if (f) {
		CHECK_STR(f->sha256, SHA_B);
		CHECK_INT(f->yanked, 1);
		CHECK_STR(f->yanked_reason, "bad");
		CHECK_STR(f->requires_python, ">=3.8");
		CHECK_INT(f->core_metadata, 1);
		CHECK_STR(f->meta_sha256, SHA_D);
		CHECK_INT(f->size, -1);
	}
	f = find(&out, "demo-2.0-py3-none-any.whl");
	CHECK(f != NULL && f->upload_time &&
	      strcmp(f->upload_time, "2024-01-02T03:04:05Z") == 0);
	CHECK_INT(out.nversions, 2);
	if (out.nversions == 2) {
		CHECK_STR(out.versions[0], "1.0");
		CHECK_STR(out.versions[1], "2.0");
	}
	/* the inputs are untouched */
	CHECK_INT(in[0].nfiles, 2);
	CHECK_INT(in[1].nfiles, 2);
	CHECK_STR(in[1].files[0].sha256, SHA_C);
	simple_page_free(&in[0]);
	simple_page_free(&in[1]);
	simple_page_free(&out);
}

T(merge_renders_and_parses_again)
{
	struct simple_page in[2], out, again;
	struct buf json, html;

	buf_init(&json, 1 << 20);
	buf_init(&html, 1 << 20);
	CHECK_INT(parse(second_page, 0, &in[0]), 0);
	CHECK_INT(parse(first_page, 0, &in[1]), 0);
	CHECK_INT(simple_merge(in, 2, &out), 0);
	CHECK_INT(simple_render_json(&out, &json), 0);
	CHECK_INT(simple_render_html(&out, &html), 0);
	CHECK_CONTAINS(json.data, "../../files/" SHA_C
		       "/demo-1.0-py3-none-any.whl");
	CHECK(strstr(json.data, SHA_B "/demo-1.0-py3-none-any.whl") == NULL);
	CHECK_CONTAINS(json.data, "\"versions\":[\"1.0\",\"2.0\"]");
	CHECK_CONTAINS(html.data, "demo-1.0.tar.gz");
	CHECK_INT(parse(json.data, 0, &again), 0);
	CHECK_INT(again.nfiles, 3);
	simple_page_free(&again);
	simple_page_free(&in[0]);
	simple_page_free(&in[1]);
	simple_page_free(&out);
	buf_free(&json);
	buf_free(&html);
}

T(merge_lowest_api_version)
{
	struct simple_page in[2], out;
	struct buf json;

	buf_init(&json, 1 << 20);
	CHECK_INT(parse(first_page, 0, &in[0]), 0);
	CHECK_INT(parse(old_page, 0, &in[1]), 0);
	CHECK_INT(simple_merge(in, 2, &out), 0);
	CHECK_STR(out.api_version, "1.0");
	CHECK_INT(out.nfiles, 3);
	CHECK_INT(simple_render_json(&out, &json), 0);
	CHECK_CONTAINS(json.data, "\"api-version\":\"1.0\"");
	/* 1.0 promises no versions list */
	CHECK(strstr(json.data, "\"versions\"") == NULL);
	simple_page_free(&in[0]);
	simple_page_free(&in[1]);
	simple_page_free(&out);
	buf_free(&json);
}

T(merge_one_page_is_a_copy)
{
	struct simple_page in, out;

	CHECK_INT(parse(old_page, 0, &in), 0);
	CHECK_INT(simple_merge(&in, 1, &out), 0);
	CHECK_INT(out.nfiles, 1);
	CHECK(out.versions == NULL);
	CHECK(out.files && out.files[0].filename != in.files[0].filename);
	simple_page_free(&in);
	CHECK_STR(out.files[0].filename, "demo-3.0.tar.gz");
	simple_page_free(&out);
}

T(merge_lists)
{
	static const char a[] = "{\"meta\":{\"api-version\":\"1.0\"},"
				"\"projects\":[{\"name\":\"Zeta\"},"
				"{\"name\":\"corp_lib\"},"
				"{\"name\":\"alpha\"}]}";
	static const char b[] = "{\"meta\":{\"api-version\":\"1.1\"},"
				"\"projects\":[{\"name\":\"Corp.Lib\"},"
				"{\"name\":\"beta\"},{\"name\":\"zeta\"}]}";
	struct simple_page in[2], out;

	CHECK_INT(parse(a, 1, &in[0]), 0);
	CHECK_INT(parse(b, 1, &in[1]), 0);
	CHECK_INT(simple_merge(in, 2, &out), 0);
	CHECK_INT(out.is_list, 1);
	CHECK_INT(out.nprojects, 4);
	if (out.nprojects == 4) {
		CHECK_STR(out.projects[0], "alpha");
		CHECK_STR(out.projects[1], "beta");
		/* the first list's spelling */
		CHECK_STR(out.projects[2], "corp_lib");
		CHECK_STR(out.projects[3], "Zeta");
	}
	CHECK_INT(simple_merge_drop(&out, "corp-* x?z"), 1);
	CHECK_INT(out.nprojects, 3);
	CHECK_STR(out.projects[2], "Zeta");
	CHECK_INT(simple_merge_drop(&out, ""), 0);
	simple_page_free(&in[0]);
	simple_page_free(&in[1]);
	simple_page_free(&out);
}

T(merge_refuses_mixed_or_none)
{
	static const char list[] = "{\"projects\":[{\"name\":\"a\"}]}";
	struct simple_page in[2], out;

	memset(in, 0, sizeof(in));
	CHECK_INT(simple_merge(in, 0, &out), EINVAL);
	CHECK_INT(parse(old_page, 0, &in[0]), 0);
	CHECK_INT(parse(list, 1, &in[1]), 0);
	CHECK_INT(simple_merge(in, 2, &out), EINVAL);
	CHECK_INT(out.nfiles, 0);
	simple_page_free(&in[0]);
	simple_page_free(&in[1]);
}

T(merge_many_files)
{
	/* two pages of 3000 files, half of them shared: n log n, and every
	 * name once */
	enum { N = 3000 };
	struct simple_page in[2], out;
	char name[64];

	memset(in, 0, sizeof(in));
	for (int p = 0; p < 2; p++) {
		in[p].files = calloc(N, sizeof(*in[p].files));
		CHECK(in[p].files != NULL);
		if (!in[p].files)
			return;
		for (int i = 0; i < N; i++) {
			struct simple_file *f = &in[p].files[in[p].nfiles++];

			snprintf(name, sizeof(name), "x-%d.tar.gz",
				 i + p * N / 2);
			f->filename = strdup(name);
			memcpy(f->sha256, p ? SHA_B : SHA_A, 65);
			f->size = -1;
		}
	}
	CHECK_INT(simple_merge(in, 2, &out), 0);
	CHECK_INT(out.nfiles, N + N / 2);
	CHECK_STR(out.files[N / 2].filename, "x-1500.tar.gz");
	CHECK_STR(out.files[N / 2].sha256, SHA_A);
	CHECK_STR(out.files[N].filename, "x-3000.tar.gz");
	CHECK_STR(out.files[N].sha256, SHA_B);
	simple_page_free(&in[0]);
	simple_page_free(&in[1]);
	simple_page_free(&out);
}

T(glob_table)
{
	static const struct {
		const char *globs, *name;
		int want;
	} t[] = {
		{"corp-*", "corp-lib", 1},
		{"corp-*", "corp", 0},
		{"corp-*", "corp-", 1},
		{"corp-*", "xcorp-lib", 0},
		{"internal-* corp-*", "corp-x", 1},
		{"  corp-*  ", "corp-x", 1},
		{"a?c", "abc", 1},
		{"a?c", "ac", 0},
		{"a?c", "abbc", 0},
		{"*", "anything", 1},
		{"*lib", "corp-lib", 1},
		{"*lib", "corp-libx", 0},
		{"a*b*c", "axxbyybzc", 1},
		{"a*b*c", "axxbyyb", 0},
		{"exact", "exact", 1},
		{"exact", "exactly", 0},
		{"", "x", 0},
		{NULL, "x", 0},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (names_globs_match(t[i].globs, t[i].name) != t[i].want)
			fprintf(stderr, "  glob \"%s\" on \"%s\"\n",
				t[i].globs ? t[i].globs : "(null)",
				t[i].name);
		CHECK_INT(names_globs_match(t[i].globs, t[i].name),
			  t[i].want);
	}
}

T(glob_is_not_exponential)
{
	char name[4001];

	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	CHECK_INT(names_globs_match("*a*a*a*a*a*a*a*a*a*a*b", name), 0);
}

T(names_of_files)
{
	char out[SIMPLE_MERGE_MAX_NAMES][NAMES_MAX_PROJECT + 1];

	CHECK_INT(simple_merge_names("corp_lib-1.0-py3-none-any.whl", out, 8),
		  1);
	CHECK_STR(out[0], "corp-lib");
	CHECK_INT(simple_merge_names("Corp.Lib-1.0.tar.gz", out, 8), 1);
	CHECK_STR(out[0], "corp-lib");
	/* a legacy sdist: every split is a candidate */
	CHECK_INT(simple_merge_names("corp-lib-99.0.tar.gz", out, 8), 2);
	CHECK_STR(out[0], "corp");
	CHECK_STR(out[1], "corp-lib");
	CHECK_INT(simple_merge_names("corp-lib-99.0.tar.gz", out, 1), 1);
	CHECK_INT(simple_merge_names("nodash.tar.gz", out, 8), 0);
	CHECK_INT(simple_merge_names("-1.0.tar.gz", out, 8), 0);
	CHECK_INT(simple_merge_names("trailing-", out, 8), 0);
	/* "a_" is no project name; "a_-b" normalises like "a-b" */
	CHECK_INT(simple_merge_names("a_-b-1.zip", out, 8), 1);
	CHECK_STR(out[0], "a-b");
}

int main(void)
{
	RUN(merge_project_pages);
	RUN(merge_renders_and_parses_again);
	RUN(merge_lowest_api_version);
	RUN(merge_one_page_is_a_copy);
	RUN(merge_lists);
	RUN(merge_refuses_mixed_or_none);
	RUN(merge_many_files);
	RUN(glob_table);
	RUN(glob_is_not_exponential);
	RUN(names_of_files);
	return t_done();
}
