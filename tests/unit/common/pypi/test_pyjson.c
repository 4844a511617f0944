#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pypi/pyjson.h"
#include "tests/unit/t.h"

#define H1 "1111111111111111111111111111111111111111111111111111111111111111"
#define H2 "2222222222222222222222222222222222222222222222222222222222222222"
#define H3 "3333333333333333333333333333333333333333333333333333333333333333"
#define H4 "4444444444444444444444444444444444444444444444444444444444444444"
#define H5 "5555555555555555555555555555555555555555555555555555555555555555"

static const char page_json[] =
	"{\"meta\": {\"api-version\": \"1.1\"}, \"name\": \"Corp.Lib\","
	" \"versions\": [\"0.9\", \"1.0\", \"1.1rc1\", \"2.0\"],"
	" \"files\": ["
	"{\"filename\": \"corp_lib-1.0-py3-none-any.whl\","
	" \"url\": \"https://files.example/a.whl\","
	" \"hashes\": {\"sha256\": \"" H1 "\", \"md5\": \"abcd\"},"
	" \"requires-python\": \">=3.8\", \"core-metadata\": true,"
	" \"size\": 100, \"upload-time\": \"2024-01-02T03:04:05.123456Z\"},"
	"{\"filename\": \"corp.lib-1.0.tar.gz\","
	" \"url\": \"https://files.example/a.tgz\","
	" \"hashes\": {\"sha256\": \"" H2 "\"}, \"size\": 50},"
	"{\"filename\": \"corp_lib-1.1rc1-cp312-cp312-manylinux_2_17_x86_64.whl\","
	" \"url\": \"https://files.example/b.whl\","
	" \"hashes\": {\"sha256\": \"" H3 "\"}},"
	"{\"filename\": \"corp_lib-2.0-py3-none-any.whl\","
	" \"url\": \"https://files.example/c.whl\","
	" \"hashes\": {\"sha256\": \"" H4 "\"},"
	" \"yanked\": \"broken\", \"core-metadata\": true},"
	"{\"filename\": \"corp_lib-notaversion.tar.gz\","
	" \"url\": \"https://files.example/d.tgz\","
	" \"hashes\": {\"sha256\": \"" H5 "\"}}"
	"]}";

static const char meta[] =
	"Metadata-Version: 2.4\n"
	"Name: Corp.Lib\n"
	"Version: 1.0\n"
	"Summary: the \"corp\" lib\n"
	"Author-email: A <a@example.org>\n"
	"License-Expression: MIT\n"
	"Classifier: Programming Language :: Python\n"
	"Classifier: Typing :: Typed\n"
	"Requires-Dist: requests>=2\n"
	"Provides-Extra: fast\n"
	"Project-URL: Source, https://example.org/src\n"
	"Requires-Python: >=3.8\n"
	"Description-Content-Type: text/markdown\n"
	"\n"
	"# Corp lib\n\nIt is caf\xe9.\n";

static struct simple_page page;
static struct pyjson j;

static void load(void)
{
	struct simple_opts o = {.base_url = "https://up.example/simple/corp-lib/",
				.trusted = "files.example"};
	char err[256] = "";

	CHECK_INT(simple_parse_json(page_json, strlen(page_json), &o, 0, &page,
				    err, sizeof(err)), 0);
	CHECK_INT(pyjson_group(&page, "corp-lib", &j), 0);
}

static void unload(void)
{
	pyjson_free(&j);
	simple_page_free(&page);
}

T(group_and_pick)
{
	load();
	CHECK_INT(j.nrel, 4);
	CHECK_INT(j.dropped, 1);
	CHECK_STR(j.rel[0].version, "0.9");
	CHECK_INT(j.rel[0].nfiles, 0);
	CHECK_STR(j.rel[1].version, "1.0");
	CHECK_INT(j.rel[1].nfiles, 2);
	/* by file name */
	CHECK_STR(page.files[j.rel[1].files[0]].filename,
		  "corp.lib-1.0.tar.gz");
	CHECK_STR(j.rel[2].version, "1.1rc1");
	CHECK_STR(j.rel[3].version, "2.0");
	CHECK_INT(j.rel[3].yanked, 1);
	/* 2.0 is yanked, 1.1rc1 a pre-release: the latest is 1.0 */
	CHECK_INT(pyjson_pick(&j, NULL), 1);
	CHECK_INT(pyjson_pick(&j, "2.0.0"), 3);
	CHECK_INT(pyjson_pick(&j, "1.1-RC1"), 2);
	CHECK_INT(pyjson_pick(&j, "0.9"), 0);
	CHECK_INT(pyjson_pick(&j, "3.0"), -1);
	CHECK_INT(pyjson_pick(&j, "bogus"), -1);
	/* the wheel's metadata, though the sdist sorts first */
	CHECK_INT(pyjson_meta_file(&page, &j, 1), 0);
	CHECK_INT(pyjson_meta_file(&page, &j, 2), -1);
	CHECK_INT(pyjson_meta_file(&page, &j, 0), -1);
	unload();
}

T(pick_fallbacks)
{
	struct pyjson_release rel[2];
	struct pyjson jj = {.rel = rel, .nrel = 2};
	size_t f = 0;

	memset(rel, 0, sizeof(rel));
	CHECK_INT(pep440_parse("1.0", &rel[0].v), 0);
	CHECK_INT(pep440_parse("2.0b1", &rel[1].v), 0);
	rel[0].files = rel[1].files = &f;
	rel[0].nfiles = rel[1].nfiles = 1;
	/* a pre-release that is not yanked beats a yanked final */
	rel[0].yanked = 1;
	CHECK_INT(pyjson_pick(&jj, NULL), 1);
	rel[1].yanked = 1;
	CHECK_INT(pyjson_pick(&jj, NULL), 0);
	rel[0].yanked = rel[1].yanked = 0;
	CHECK_INT(pyjson_pick(&jj, NULL), 0);
	rel[0].nfiles = 0; /* no files: never the latest */
	CHECK_INT(pyjson_pick(&jj, NULL), 1);
	rel[1].nfiles = 0;
	CHECK_INT(pyjson_pick(&jj, NULL), -1);
}

T(render)
{
	struct pyjson_opts o = {
		.files_url = "http://h:1/m/pypi/files/",
		.project_url = "http://h:1/m/pypi/simple/corp-lib/",
		.api_url = "http://h:1/m/pypi/pypi/corp-lib/",
		.metadata = meta, .metalen = sizeof(meta) - 1,
		.all_releases = 1,
	};
	struct buf b;
	const char *s;

	load();
	buf_init(&b, 1 << 20);
	CHECK_INT(pyjson_render(&page, "corp-lib", &j, 1, &o, &b), 0);
	s = buf_str(&b);
	if (getenv("DUMP"))
		puts(s);
	CHECK_CONTAINS(s, "{\"info\": {\"author\": null, \"author_email\": "
		       "\"A <a@example.org>\", \"bugtrack_url\": null, "
		       "\"classifiers\": [\"Programming Language :: Python\", "
		       "\"Typing :: Typed\"], \"description\": \"# Corp lib\\n"
		       "\\nIt is caf\xc3\xa9.\\n\", \"description_content_type\": "
		       "\"text/markdown\"");
	CHECK_CONTAINS(s, "\"license_expression\": \"MIT\"");
	CHECK_CONTAINS(s, "\"name\": \"Corp.Lib\"");
	CHECK_CONTAINS(s, "\"project_urls\": {\"Source\": "
		       "\"https://example.org/src\"}");
	CHECK_CONTAINS(s, "\"provides_extra\": [\"fast\"]");
	CHECK_CONTAINS(s, "\"release_url\": "
		       "\"http://h:1/m/pypi/pypi/corp-lib/1.0/json\"");
	CHECK_CONTAINS(s, "\"requires_dist\": [\"requests>=2\"]");
	CHECK_CONTAINS(s, "\"summary\": \"the \\\"corp\\\" lib\"");
	CHECK_CONTAINS(s, "\"version\": \"1.0\", \"yanked\": false, "
		       "\"yanked_reason\": null}");
	CHECK_CONTAINS(s, "\"dynamic\": null");
	CHECK_CONTAINS(s, "\"releases\": {\"0.9\": [], \"1.0\": [");
	CHECK_CONTAINS(s, "\"digests\": {\"md5\": \"abcd\", \"sha256\": \"" H1
		       "\"}, \"downloads\": -1, \"filename\": "
		       "\"corp_lib-1.0-py3-none-any.whl\", \"has_sig\": false, "
		       "\"md5_digest\": \"abcd\", \"packagetype\": "
		       "\"bdist_wheel\", \"python_version\": \"py3\", "
		       "\"requires_python\": \">=3.8\", \"size\": 100, "
		       "\"upload_time\": \"2024-01-02T03:04:05\", "
		       "\"upload_time_iso_8601\": "
		       "\"2024-01-02T03:04:05.123456Z\", \"url\": "
		       "\"http://h:1/m/pypi/files/" H1
		       "/corp_lib-1.0-py3-none-any.whl\", \"yanked\": false, "
		       "\"yanked_reason\": null}");
	CHECK_CONTAINS(s, "\"packagetype\": \"sdist\", \"python_version\": "
		       "\"source\", \"requires_python\": null, \"size\": 50, "
		       "\"upload_time\": null");
	CHECK_CONTAINS(s, "\"yanked\": true, \"yanked_reason\": \"broken\"}");
	CHECK_CONTAINS(s, "\"urls\": [{\"comment_text\": \"\", \"digests\": "
		       "{\"sha256\": \"" H2 "\"}");
	CHECK(strstr(s, "notaversion") == NULL);
	/* the release's document: no "releases" */
	buf_reset(&b);
	o.all_releases = 0;
	o.metadata = NULL;
	CHECK_INT(pyjson_render(&page, "corp-lib", &j, 3, &o, &b), 0);
	s = buf_str(&b);
	CHECK(strstr(s, "\"releases\"") == NULL);
	/* no metadata: the page's name and the release's version */
	CHECK_CONTAINS(s, "\"name\": \"Corp.Lib\"");
	CHECK_CONTAINS(s, "\"summary\": null, \"version\": \"2.0\", "
		       "\"yanked\": true, \"yanked_reason\": \"broken\"}");
	CHECK_CONTAINS(s, "\"classifiers\": []");
	/* a bound too small is an error, not a cut document */
	buf_free(&b);
	buf_init(&b, 100);
	CHECK_INT(pyjson_render(&page, "corp-lib", &j, 1, &o, &b), E2BIG);
	CHECK_INT(pyjson_render(&page, "corp-lib", &j, 9, &o, &b), EINVAL);
	buf_free(&b);
	unload();
}

T(packagetype)
{
	char py[64];

	CHECK_STR(pyjson_packagetype("a-1.0-py2.py3-none-any.whl", py,
				     sizeof(py)), "bdist_wheel");
	CHECK_STR(py, "py2.py3");
	CHECK_STR(pyjson_packagetype("a-1.0-1-cp312-cp312-win_amd64.whl", py,
				     sizeof(py)), "bdist_wheel");
	CHECK_STR(py, "cp312");
	CHECK_STR(pyjson_packagetype("a-1.0.zip", py, sizeof(py)), "sdist");
	CHECK_STR(py, "source");
	CHECK_STR(pyjson_packagetype("a-1.0-py2.7.egg", py, sizeof(py)),
		  "bdist_egg");
	CHECK_STR(py, "py2.7");
	CHECK_STR(pyjson_packagetype("a-1.0-py2.7-linux-x86_64.egg", py,
				     sizeof(py)), "bdist_egg");
	CHECK_STR(py, "py2.7");
	CHECK(pyjson_packagetype("a-1.0.exe", py, sizeof(py)) == NULL);
}

int main(void)
{
	RUN(group_and_pick);
	RUN(pick_fallbacks);
	RUN(render);
	RUN(packagetype);
	return t_done();
}
