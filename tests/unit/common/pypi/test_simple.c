#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pypi/simple.h"
#include "tests/unit/t.h"

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define SHA_C "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define SHA_C_UPPER \
	"0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"

#define PYPI_BASE "https://pypi.org/simple/demo/"
#define TRUSTED "files.pythonhosted.org"

/* A page shaped like pypi.org's, with four entries that must go. */
static const char pypi_page[] =
	"{\"meta\":{\"_last-serial\":42,\"api-version\":\"1.1\"},"
	"\"name\":\"demo\",\"files\":["
	"{\"filename\":\"demo-1.0.tar.gz\","
	"\"url\":\"https://files.pythonhosted.org/packages/aa/"
	"demo-1.0.tar.gz\","
	"\"hashes\":{\"sha256\":\"" SHA_C_UPPER "\",\"md5\":\"0123ABCD\"},"
	"\"requires-python\":\">=3.8\",\"yanked\":\"broken build\","
	"\"core-metadata\":{\"sha256\":\"" SHA_B "\"},"
	"\"data-dist-info-metadata\":{\"sha256\":\"" SHA_B "\"},"
	"\"size\":1234,\"upload-time\":\"2023-01-02T03:04:05.000000Z\"},"
	"{\"filename\":\"demo-1.0-py3-none-any.whl\","
	"\"url\":\"../../packages/demo-1.0-py3-none-any.whl#sha256=" SHA_A "\","
	"\"hashes\":{},\"dist-info-metadata\":true,\"yanked\":false,"
	"\"size\":99},"
	"{\"filename\":\"demo-0.9.tar.gz\","
	"\"url\":\"https://files.pythonhosted.org/x\","
	"\"hashes\":{\"md5\":\"abcd\"}},"
	"{\"filename\":\"../evil\","
	"\"url\":\"https://files.pythonhosted.org/x\","
	"\"hashes\":{\"sha256\":\"" SHA_A "\"}},"
	"{\"filename\":\"demo-0.8.tar.gz\",\"url\":\"https://evil.example/x\","
	"\"hashes\":{\"sha256\":\"" SHA_A "\"}},"
	"{\"filename\":\"demo-0.7.tar.gz\",\"url\":\"javascript:alert(1)\","
	"\"hashes\":{\"sha256\":\"" SHA_A "\"}}"
	"],\"versions\":[\"0.7\",\"0.8\",\"0.9\",\"1.0\"]}";

static int parse(const char *json, const char *base, int is_list,
		 size_t max, struct simple_page *p)
{
	struct simple_opts o = {base, TRUSTED, max};
	char err[200] = "";
	int e;

	e = simple_parse_json(json, strlen(json), &o, is_list, p, err,
			      sizeof(err));
	CHECK(!e || err[0]); /* a failure always says why */
	return e;
}

/* Renders p as JSON (html 0) or HTML (html 1); the caller frees. */
static char *render(const struct simple_page *p, int html)
{
	struct buf b;
	int e;

	buf_init(&b, 1 << 20);
	e = html ? simple_render_html(p, &b) : simple_render_json(p, &b);
	if (e) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

T(parse_pypi)
{
	struct simple_page p;
	const struct simple_file *f;

	CHECK_INT(parse(pypi_page, PYPI_BASE, 0, 0, &p), 0);
	CHECK_STR(p.api_version, "1.1");
	CHECK_STR(p.name, "demo");
	CHECK_INT(p.is_list, 0);
	CHECK_INT(p.nfiles, 2);
	CHECK_INT(p.dropped, 4);
	CHECK_INT(p.nversions, 4);
	if (p.nfiles != 2 || p.nversions != 4)
		goto out;
	CHECK_STR(p.versions[3], "1.0");
	f = &p.files[0];
	CHECK_STR(f->filename, "demo-1.0.tar.gz");
	CHECK_STR(f->url,
		  "https://files.pythonhosted.org/packages/aa/demo-1.0.tar.gz");
	CHECK_STR(f->sha256, SHA_C);
	CHECK_INT(f->nhashes, 2);
	CHECK_STR(f->hashes[0].name, "sha256");
	CHECK_STR(f->hashes[1].name, "md5");
	CHECK_STR(f->hashes[1].value, "0123abcd");
	CHECK_STR(f->requires_python, ">=3.8");
	CHECK_INT(f->yanked, 1);
	CHECK_STR(f->yanked_reason, "broken build");
	CHECK_INT(f->core_metadata, 1);
	CHECK_STR(f->meta_sha256, SHA_B);
	CHECK_INT(f->size, 1234);
	CHECK_STR(f->upload_time, "2023-01-02T03:04:05.000000Z");
	f = &p.files[1];
	CHECK_STR(f->filename, "demo-1.0-py3-none-any.whl");
	CHECK_STR(f->url,
		  "https://pypi.org/packages/demo-1.0-py3-none-any.whl");
	CHECK_STR(f->sha256, SHA_A);
	CHECK_INT(f->nhashes, 1);
	CHECK(f->requires_python == NULL);
	CHECK_INT(f->yanked, 0);
	CHECK(f->yanked_reason == NULL);
	CHECK_INT(f->core_metadata, 1);
	CHECK_STR(f->meta_sha256, "");
	CHECK_INT(f->size, 99);
	CHECK(f->upload_time == NULL);
out:
	simple_page_free(&p);
	CHECK(p.files == NULL && p.nfiles == 0);
}

T(render_json_11)
{
	struct simple_page p;
	char *s;

	CHECK_INT(parse(pypi_page, PYPI_BASE, 0, 0, &p), 0);
	s = render(&p, 0);
	CHECK(s != NULL);
	CHECK_CONTAINS(s, "{\"meta\":{\"api-version\":\"1.1\"},"
			  "\"name\":\"demo\",\"files\":[{");
	CHECK_CONTAINS(s, "\"filename\":\"demo-1.0.tar.gz\","
			  "\"url\":\"../../files/" SHA_C "/demo-1.0.tar.gz\","
			  "\"hashes\":{\"sha256\":\"" SHA_C
			  "\",\"md5\":\"0123abcd\"},"
			  "\"requires-python\":\">=3.8\","
			  "\"yanked\":\"broken build\","
			  "\"core-metadata\":{\"sha256\":\"" SHA_B "\"},"
			  "\"size\":1234,"
			  "\"upload-time\":\"2023-01-02T03:04:05.000000Z\"}");
	CHECK_CONTAINS(s, "\"yanked\":false,\"core-metadata\":true,"
			  "\"size\":99}");
	CHECK_CONTAINS(s, "\"versions\":[\"0.7\",\"0.8\",\"0.9\",\"1.0\"]}");
	/* PEP 714: the legacy key breaks pip 22.3 to 23.1 in JSON */
	CHECK(s && !strstr(s, "dist-info-metadata"));
	free(s);
	simple_page_free(&p);
}

T(render_json_10)
{
	struct simple_page p;
	char *s;

	CHECK_INT(parse(pypi_page, PYPI_BASE, 0, 0, &p), 0);
	memcpy(p.api_version, "1.0", 4);
	s = render(&p, 0);
	CHECK_CONTAINS(s, "{\"meta\":{\"api-version\":\"1.0\"}");
	CHECK_CONTAINS(s, "\"core-metadata\":true}");
	p.files[1].core_metadata = 0;
	free(s);
	s = render(&p, 0);
	CHECK_CONTAINS(s, "\"yanked\":false,\"core-metadata\":false}");
	CHECK(s && !strstr(s, "\"size\""));
	CHECK(s && !strstr(s, "upload-time"));
	CHECK(s && !strstr(s, "versions"));
	free(s);
	simple_page_free(&p);
}

T(api_versions)
{
	struct simple_page p;
	char v[16];

	CHECK_INT(parse("{\"files\":[]}", PYPI_BASE, 0, 0, &p), 0);
	CHECK_STR(p.api_version, "1.0");
	simple_page_free(&p);
	CHECK_INT(parse("{\"meta\":{},\"files\":[]}", PYPI_BASE, 0, 0, &p), 0);
	CHECK_STR(p.api_version, "1.0");
	simple_page_free(&p);
	CHECK_INT(parse("{\"meta\":{\"api-version\":\"1.3\"},\"files\":[]}",
			PYPI_BASE, 0, 0, &p),
		  0);
	CHECK_STR(p.api_version, "1.3");
	simple_page_free(&p);
	CHECK_INT(parse("{\"meta\":{\"api-version\":\"1.5\"},\"files\":[]}",
			PYPI_BASE, 0, 0, &p),
		  0);
	CHECK_STR(p.api_version, "1.4");
	simple_page_free(&p);
	CHECK_INT(parse("{\"meta\":{\"api-version\":\"2.0\"},\"files\":[]}",
			PYPI_BASE, 0, 0, &p),
		  EINVAL);
	CHECK_INT(parse("{\"meta\":{\"api-version\":1.0},\"files\":[]}",
			PYPI_BASE, 0, 0, &p),
		  EINVAL);
	CHECK_INT(simple_api_version(NULL, v), 0);
	CHECK_STR(v, "1.0");
	CHECK_INT(simple_api_version("1.0", v), 0);
	CHECK_STR(v, "1.0");
	CHECK_INT(simple_api_version(" 1.00 ", v), 0);
	CHECK_STR(v, "1.0");
	CHECK_INT(simple_api_version("1", v), 0);
	CHECK_STR(v, "1.0");
	CHECK_INT(simple_api_version("1.1", v), 0);
	CHECK_STR(v, "1.1");
	CHECK_INT(simple_api_version("1.10", v), 0);
	CHECK_STR(v, "1.4");
	CHECK_INT(simple_api_version("1.02", v), 0);
	CHECK_STR(v, "1.2");
	CHECK_INT(simple_api_version("0.9", v), EINVAL);
	CHECK_INT(simple_api_version("10.0", v), EINVAL);
	CHECK_INT(simple_api_version("1.x", v), EINVAL);
	CHECK_INT(simple_api_version("", v), EINVAL);
}

/* Files compare equal as far as a round trip carries them. */
static void same_file(const struct simple_file *a, const struct simple_file *b,
		      int all_hashes)
{
	CHECK_STR(a->filename, b->filename);
	CHECK_STR(a->sha256, b->sha256);
	CHECK_STR(a->requires_python ? a->requires_python : "(none)",
		  b->requires_python ? b->requires_python : "(none)");
	CHECK_INT(a->yanked, b->yanked);
	CHECK_STR(a->yanked_reason ? a->yanked_reason : "(none)",
		  b->yanked_reason ? b->yanked_reason : "(none)");
	CHECK_INT(a->core_metadata, b->core_metadata);
	CHECK_STR(a->meta_sha256, b->meta_sha256);
	if (!all_hashes)
		return;
	CHECK_INT(a->nhashes, b->nhashes);
	for (size_t i = 0; i < a->nhashes && i < b->nhashes; i++) {
		CHECK_STR(a->hashes[i].name, b->hashes[i].name);
		CHECK_STR(a->hashes[i].value, b->hashes[i].value);
	}
	CHECK_INT(a->size, b->size);
	CHECK_STR(a->upload_time ? a->upload_time : "(none)",
		  b->upload_time ? b->upload_time : "(none)");
}

T(json_round_trip)
{
	struct simple_page p, q;
	char want[300];
	char *s;

	CHECK_INT(parse(pypi_page, PYPI_BASE, 0, 0, &p), 0);
	s = render(&p, 0);
	CHECK(s != NULL);
	CHECK_INT(parse(s ? s : "", "http://h/root/pypi/simple/demo/", 0, 0,
			&q),
		  0);
	CHECK_INT(q.nfiles, p.nfiles);
	CHECK_INT(q.dropped, 0);
	CHECK_STR(q.api_version, p.api_version);
	CHECK_STR(q.name, p.name);
	for (size_t i = 0; i < p.nfiles && i < q.nfiles; i++) {
		same_file(&p.files[i], &q.files[i], 1);
		snprintf(want, sizeof(want), "http://h/root/pypi/files/%s/%s",
			 p.files[i].sha256, p.files[i].filename);
		CHECK_STR(q.files[i].url, want);
	}
	CHECK_INT(q.nversions, p.nversions);
	for (size_t i = 0; i < p.nversions && i < q.nversions; i++)
		CHECK_STR(q.versions[i], p.versions[i]);
	free(s);
	simple_page_free(&p);
	simple_page_free(&q);
}

T(render_html_page)
{
	struct simple_page p;
	char *s;

	CHECK_INT(parse(pypi_page, PYPI_BASE, 0, 0, &p), 0);
	s = render(&p, 1);
	CHECK_STR(s,
		  "<!DOCTYPE html>\n<html>\n<head>\n"
		  "<meta name=\"pypi:repository-version\" content=\"1.1\">\n"
		  "<title>Links for demo</title>\n</head>\n<body>\n"
		  "<h1>Links for demo</h1>\n"
		  "<a href=\"../../files/" SHA_C
		  "/demo-1.0.tar.gz#sha256=" SHA_C
		  "\" data-requires-python=\"&gt;=3.8\""
		  " data-yanked=\"broken build\""
		  " data-core-metadata=\"sha256=" SHA_B "\""
		  " data-dist-info-metadata=\"sha256=" SHA_B "\""
		  ">demo-1.0.tar.gz</a><br>\n"
		  "<a href=\"../../files/" SHA_A
		  "/demo-1.0-py3-none-any.whl#sha256=" SHA_A
		  "\" data-core-metadata=\"true\""
		  " data-dist-info-metadata=\"true\""
		  ">demo-1.0-py3-none-any.whl</a><br>\n"
		  "</body>\n</html>\n");
	free(s);
	simple_page_free(&p);
}

T(hostile_strings_escaped)
{
	static const char page[] =
		"{\"name\":\"demo\",\"files\":[{\"filename\":\"d-1.tar.gz\","
		"\"url\":\"d-1.tar.gz\",\"hashes\":{\"sha256\":\"" SHA_A "\"},"
		"\"requires-python\":\"\\\">=3\\\"><script>alert(1)</script>\","
		"\"yanked\":\"'<b>&\"}]}";
	struct simple_page p;
	char *s;

	CHECK_INT(parse(page, PYPI_BASE, 0, 0, &p), 0);
	CHECK_INT(p.nfiles, 1);
	s = render(&p, 1);
	CHECK_CONTAINS(s, " data-requires-python=\"&quot;&gt;=3&quot;&gt;"
			  "&lt;script&gt;alert(1)&lt;/script&gt;\"");
	CHECK_CONTAINS(s, " data-yanked=\"&#39;&lt;b&gt;&amp;\"");
	CHECK(s && !strstr(s, "<script"));
	CHECK(s && !strstr(s, "<b>"));
	free(s);
	s = render(&p, 0);
	CHECK_CONTAINS(s, "\"requires-python\":\"\\\">=3\\\"><script>");
	free(s);
	simple_page_free(&p);
}

T(hash_sources)
{
	static const char page[] =
		"{\"files\":["
		/* the fragment supplies what hashes lacks */
		"{\"filename\":\"a-1.tar.gz\","
		"\"url\":\"a-1.tar.gz#sha256=" SHA_C_UPPER "\",\"hashes\":{}},"
		/* hashes wins over the fragment */
		"{\"filename\":\"b-1.tar.gz\","
		"\"url\":\"b-1.tar.gz#sha256=" SHA_B "\","
		"\"hashes\":{\"sha256\":\"" SHA_A "\"}},"
		/* a bad sha256 is not made good by the fragment */
		"{\"filename\":\"c-1.tar.gz\","
		"\"url\":\"c-1.tar.gz#sha256=" SHA_B "\","
		"\"hashes\":{\"sha256\":\"abc\"}},"
		/* no filename: the URL's last segment, decoded */
		"{\"url\":\"https://pypi.org/p/d-1%2Bcpu.tar.gz?x=1\","
		"\"hashes\":{\"sha256\":\"" SHA_A "\"}},"
		/* not hex, not a string */
		"{\"filename\":\"e-1.tar.gz\",\"url\":\"e\","
		"\"hashes\":{\"sha256\":\"" SHA_A "\",\"md5\":\"xyz\","
		"\"blake2b\":7}},"
		/* no url at all */
		"{\"filename\":\"f-1.tar.gz\","
		"\"hashes\":{\"sha256\":\"" SHA_A "\"}},"
		"17"
		"]}";
	struct simple_page p;

	CHECK_INT(parse(page, PYPI_BASE, 0, 0, &p), 0);
	CHECK_INT(p.nfiles, 4);
	CHECK_INT(p.dropped, 3);
	if (p.nfiles == 4) {
		CHECK_STR(p.files[0].sha256, SHA_C);
		CHECK_STR(p.files[0].url, PYPI_BASE "a-1.tar.gz");
		CHECK_STR(p.files[1].sha256, SHA_A);
		CHECK_STR(p.files[2].filename, "d-1+cpu.tar.gz");
		CHECK_STR(p.files[2].url,
			  "https://pypi.org/p/d-1%2Bcpu.tar.gz?x=1");
		CHECK_INT(p.files[3].nhashes, 1);
	}
	simple_page_free(&p);
}

T(yank_and_metadata_forms)
{
	static const char page[] =
		"{\"files\":["
		"{\"filename\":\"a-1.tar.gz\",\"url\":\"a\","
		"\"hashes\":{\"sha256\":\"" SHA_A "\"},\"yanked\":\"\","
		"\"core-metadata\":false,\"dist-info-metadata\":true},"
		"{\"filename\":\"b-1.tar.gz\",\"url\":\"b\","
		"\"hashes\":{\"sha256\":\"" SHA_A "\"},\"yanked\":true,"
		"\"core-metadata\":{\"sha256\":\"nothex\"}},"
		"{\"filename\":\"c-1.tar.gz\",\"url\":\"c\","
		"\"hashes\":{\"sha256\":\"" SHA_A "\"},\"yanked\":1,"
		"\"core-metadata\":{\"md5\":\"00\"},\"size\":-5}"
		"]}";
	struct simple_page p;

	CHECK_INT(parse(page, PYPI_BASE, 0, 0, &p), 0);
	CHECK_INT(p.nfiles, 3);
	if (p.nfiles == 3) {
		/* like pip: an empty reason is no yank; core-metadata wins */
		CHECK_INT(p.files[0].yanked, 0);
		CHECK_INT(p.files[0].core_metadata, 0);
		CHECK_INT(p.files[1].yanked, 1);
		CHECK(p.files[1].yanked_reason == NULL);
		CHECK_INT(p.files[1].core_metadata, 0);
		CHECK_INT(p.files[2].yanked, 0);
		CHECK_INT(p.files[2].core_metadata, 1);
		CHECK_STR(p.files[2].meta_sha256, "");
		CHECK_INT(p.files[2].size, -1);
	}
	simple_page_free(&p);
}

T(project_list)
{
	static const char list[] =
		"{\"meta\":{\"api-version\":\"1.1\"},\"projects\":["
		"{\"name\":\"Foo.Bar\"},{\"name\":\"-bad\"},{\"name\":5},\"x\","
		"{\"name\":\"a<b\"},{\"name\":\"requests\"}]}";
	struct simple_page p;
	char *s;

	CHECK_INT(parse(list, PYPI_BASE, 1, 0, &p), 0);
	CHECK_INT(p.is_list, 1);
	CHECK_INT(p.nprojects, 2);
	CHECK_INT(p.dropped, 4);
	if (p.nprojects == 2) {
		CHECK_STR(p.projects[0], "Foo.Bar");
		CHECK_STR(p.projects[1], "requests");
	}
	s = render(&p, 1);
	CHECK_STR(s, "<!DOCTYPE html>\n<html>\n<head>\n"
		     "<meta name=\"pypi:repository-version\" content=\"1.1\">\n"
		     "<title>Simple index</title>\n</head>\n<body>\n"
		     "<a href=\"foo-bar/\">Foo.Bar</a><br>\n"
		     "<a href=\"requests/\">requests</a><br>\n"
		     "</body>\n</html>\n");
	free(s);
	s = render(&p, 0);
	CHECK_STR(s, "{\"meta\":{\"api-version\":\"1.1\"},\"projects\":["
		     "{\"name\":\"Foo.Bar\"},{\"name\":\"requests\"}]}");
	free(s);
	simple_page_free(&p);
	CHECK_INT(parse("{\"files\":[]}", PYPI_BASE, 1, 0, &p), EINVAL);
	CHECK_INT(parse("{\"projects\":[]}", PYPI_BASE, 0, 0, &p), EINVAL);
}

T(max_files)
{
	static const char three[] =
		"{\"files\":[{},{},{}]}";
	static const char list[] =
		"{\"projects\":[{\"name\":\"a\"},{\"name\":\"b\"}]}";
	struct simple_page p;

	CHECK_INT(parse(three, PYPI_BASE, 0, 2, &p), EINVAL);
	CHECK(p.files == NULL && p.nfiles == 0 && p.dropped == 0);
	CHECK_INT(parse(three, PYPI_BASE, 0, 3, &p), 0);
	CHECK_INT(p.dropped, 3);
	simple_page_free(&p);
	CHECK_INT(parse(list, PYPI_BASE, 1, 1, &p), EINVAL);
	CHECK_INT(parse(list, PYPI_BASE, 1, 0, &p), 0);
	simple_page_free(&p);
}

T(malformed)
{
	struct simple_opts o = {PYPI_BASE, NULL, 0};
	struct simple_page p;
	char err[100];

	CHECK_INT(parse("{\"files\":[{\"filename\":", PYPI_BASE, 0, 0, &p),
		  EINVAL);
	CHECK_INT(parse("[]", PYPI_BASE, 0, 0, &p), EINVAL);
	CHECK_INT(parse("\"files\"", PYPI_BASE, 0, 0, &p), EINVAL);
	CHECK_INT(parse("{\"files\":{}}", PYPI_BASE, 0, 0, &p), EINVAL);
	CHECK_INT(parse("{\"files\":\"x\"}", PYPI_BASE, 0, 0, &p), EINVAL);
	CHECK_INT(parse("{}", PYPI_BASE, 0, 0, &p), EINVAL);
	CHECK_INT(parse("{\"meta\":1,\"files\":[]}", PYPI_BASE, 0, 0, &p),
		  EINVAL);
	CHECK_INT(parse("{\"files\":[],\"files\":[]}", PYPI_BASE, 0, 0, &p),
		  EINVAL);
	CHECK_INT(parse("", PYPI_BASE, 0, 0, &p), EINVAL);
	CHECK_INT(parse("{\"files\":[]} x", PYPI_BASE, 0, 0, &p), EINVAL);
	CHECK_INT(parse("{\"files\":[\"\\u0000\"]}", PYPI_BASE, 0, 0, &p),
		  EINVAL);
	CHECK(p.files == NULL && p.name == NULL);
	/* a length that stops short of the NUL is honoured */
	CHECK_INT(simple_parse_json("{\"files\":[]}", 5, &o, 0, &p, err,
				    sizeof(err)),
		  EINVAL);
	CHECK(strlen(err) > 0);
	/* no room for a message is fine */
	CHECK_INT(simple_parse_json("[", 1, &o, 0, &p, NULL, 0), EINVAL);
}

T(deep_nesting)
{
	size_t n = 200000, k;
	char *s = malloc(2 * n + 64);
	struct simple_page p;

	if (!s)
		return;
	memset(s, '[', n);
	memset(s + n, ']', n);
	s[2 * n] = '\0';
	CHECK_INT(parse(s, PYPI_BASE, 0, 0, &p), EINVAL);
	free(s);
	/* nesting inside a file entry, where the parser looks */
	s = malloc(5 * n + 64);
	if (!s)
		return;
	strcpy(s, "{\"files\":[{\"hashes\":");
	k = strlen(s);
	for (size_t i = 0; i < n; i++)
		memcpy(s + k + 5 * i, "{\"a\":", 5);
	s[k + 5 * n] = '\0';
	CHECK_INT(parse(s, PYPI_BASE, 0, 0, &p), EINVAL);
	free(s);
}

T(render_limit)
{
	struct simple_page p;
	struct buf b;

	CHECK_INT(parse(pypi_page, PYPI_BASE, 0, 0, &p), 0);
	buf_init(&b, 300);
	CHECK_INT(buf_adds(&b, "keep"), 0);
	CHECK_INT(simple_render_json(&p, &b), E2BIG);
	CHECK_STR(buf_str(&b), "keep");
	CHECK_INT(simple_render_html(&p, &b), E2BIG);
	CHECK_STR(buf_str(&b), "keep");
	buf_free(&b);
	simple_page_free(&p);
}

/* Frees a lone file through the only public way: a page that owns it. */
static void free_file(struct simple_file *f)
{
	struct simple_page p;

	memset(&p, 0, sizeof(p));
	p.files = malloc(sizeof(*f));
	if (p.files) {
		memcpy(p.files, f, sizeof(*f));
		p.nfiles = 1;
	}
	simple_page_free(&p);
	memset(f, 0, sizeof(*f));
}

T(accept_direct)
{
	struct simple_opts o = {"https://pypi.org/simple/x/", NULL, 0};
	struct simple_file f;

	memset(&f, 0, sizeof(f));
	f.size = -1;
	CHECK_INT(simple_file_accept(&f, "../../p/x-1.0.tar.gz#md5=00&sha256="
					 SHA_A "&egg=x",
				     NULL, &o),
		  0);
	CHECK_STR(f.filename, "x-1.0.tar.gz");
	CHECK_STR(f.url, "https://pypi.org/p/x-1.0.tar.gz");
	CHECK_STR(f.sha256, SHA_A);
	CHECK_INT(f.nhashes, 2);
	if (f.nhashes == 2)
		CHECK_STR(f.hashes[0].name, "md5");
	free_file(&f);

	/* untrusted host: dropped, and f is emptied */
	f.filename = strdup("x-1.0.tar.gz");
	CHECK_INT(simple_file_accept(&f, "https://other/x#sha256=" SHA_A,
				     NULL, &o),
		  EINVAL);
	CHECK(f.filename == NULL && f.url == NULL && f.hashes == NULL);

	/* a <base> elsewhere resolves, but trust is still o->base_url's */
	f.filename = strdup("x-1.0.tar.gz");
	CHECK_INT(simple_file_accept(&f, "x#sha256=" SHA_A,
				     "https://other/base/", &o),
		  EINVAL);
	f.filename = strdup("x-1.0.tar.gz");
	CHECK_INT(simple_file_accept(&f, "x#sha256=" SHA_A,
				     "https://pypi.org/elsewhere/", &o),
		  0);
	CHECK_STR(f.url, "https://pypi.org/elsewhere/x");
	free_file(&f);

	/* not UTF-8 */
	f.filename = strdup("x-1.0.tar.gz");
	f.requires_python = strdup(">=3\xff");
	CHECK_INT(simple_file_accept(&f, "x#sha256=" SHA_A, NULL, &o), EINVAL);
	CHECK(f.requires_python == NULL);

	/* no filename and a URL ending in '/' */
	CHECK_INT(simple_file_accept(&f, "dir/#sha256=" SHA_A, NULL, &o),
		  EINVAL);
}

/* Cheap fuzzing: pages with bytes changed parse or fail cleanly, and what
 * parses renders both ways (ASan and UBSan watch). */
T(mangled_pages)
{
	static const char junk[] = "{}[]\",:\\0-1tfn ";
	struct simple_opts o = {PYPI_BASE, TRUSTED, 0};
	size_t n = strlen(pypi_page);
	unsigned int seed = 4242;
	struct simple_page p;
	struct buf b;
	char *s = malloc(n);

	if (!s)
		return;
	buf_init(&b, 1 << 20);
	for (int round = 0; round < 3000; round++) {
		memcpy(s, pypi_page, n);
		for (int k = 0; k < 3; k++) {
			seed = seed * 1103515245u + 12345u;
			s[(seed >> 8) % n] = junk[(seed >> 20) % 16];
		}
		if (simple_parse_json(s, n, &o, round & 1, &p, NULL, 0))
			continue;
		buf_reset(&b);
		CHECK_INT(simple_render_json(&p, &b), 0);
		buf_reset(&b);
		CHECK_INT(simple_render_html(&p, &b), 0);
		simple_page_free(&p);
	}
	buf_free(&b);
	free(s);
}

/* A page of the given file names, each with metadata but those marked
 * "!nometa", yanked when marked "!yanked". */
static void fake_page(struct simple_page *p, struct simple_file *files,
		      const char *const *names, size_t n)
{
	static char kept[16][128];

	memset(p, 0, sizeof(*p));
	memset(files, 0, n * sizeof(*files));
	for (size_t i = 0; i < n && i < 16; i++) {
		const char *bang = strchr(names[i], '!');

		snprintf(kept[i], sizeof(kept[i]), "%.*s",
			 (int)(bang ? (size_t)(bang - names[i]) :
				      strlen(names[i])),
			 names[i]);
		files[i].filename = kept[i];
		files[i].core_metadata = !(bang && !strcmp(bang, "!nometa"));
		files[i].yanked = bang && !strcmp(bang, "!yanked");
	}
	p->files = files;
	p->nfiles = n;
}

T(likely_metadata)
{
	static const char *const pure[] = {
		"demo-1.9.tar.gz", "demo-1.9-py3-none-any.whl",
		"demo-1.10-py3-none-any.whl", "demo-1.10.1-py2.py3-none-any.whl",
		"demo-1.2.0-py3-none-any.whl", "demo-2.0rc1-py3-none-any.whl",
		"demo-2.0.dev3-py3-none-any.whl", "demo-1.11+local-py3-none-any.whl",
		"demo-1.10.0.0-1-py3-none-any.whl"};
	static const char *const yanked[] = {
		"demo-1.0-py3-none-any.whl", "demo-3.0-py3-none-any.whl!yanked",
		"demo-2.0-py3-none-any.whl!nometa"};
	static const char *const platform[] = {
		"numeric-1.26.4-cp311-cp311-manylinux_2_17_x86_64.whl",
		"numeric-1.26.4.tar.gz", "numeric-1.26.4-py3-none-any.whl.bak",
		"numeric-py3-none-any.whl", "numeric--py3-none-any.whl"};
	struct simple_file files[16];
	struct simple_page p;

	/* 1.10.1 beats 1.10, 1.9 and 1.2.0 (numbers, not strings); no
	 * pre-, dev or local release; a build tag is read past */
	fake_page(&p, files, pure, sizeof(pure) / sizeof(pure[0]));
	CHECK_INT(simple_likely_metadata(&p), 3);
	fake_page(&p, files, yanked, sizeof(yanked) / sizeof(yanked[0]));
	CHECK_INT(simple_likely_metadata(&p), 0);
	fake_page(&p, files, platform, sizeof(platform) / sizeof(platform[0]));
	CHECK_INT(simple_likely_metadata(&p), -1);
	fake_page(&p, files, pure, 0);
	CHECK_INT(simple_likely_metadata(&p), -1);
	/* the likely wheel: the same pick, with or without its metadata */
	fake_page(&p, files, pure, sizeof(pure) / sizeof(pure[0]));
	CHECK_INT(simple_likely_wheel(&p), 3);
	fake_page(&p, files, yanked, sizeof(yanked) / sizeof(yanked[0]));
	CHECK_INT(simple_likely_wheel(&p), 2);
	fake_page(&p, files, platform, sizeof(platform) / sizeof(platform[0]));
	CHECK_INT(simple_likely_wheel(&p), -1);
}

int main(void)
{
	RUN(parse_pypi);
	RUN(render_json_11);
	RUN(render_json_10);
	RUN(api_versions);
	RUN(json_round_trip);
	RUN(render_html_page);
	RUN(hostile_strings_escaped);
	RUN(hash_sources);
	RUN(yank_and_metadata_forms);
	RUN(project_list);
	RUN(max_files);
	RUN(malformed);
	RUN(deep_nesting);
	RUN(render_limit);
	RUN(accept_direct);
	RUN(mangled_pages);
	RUN(likely_metadata);
	return t_done();
}
