#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "common/pypi/html.h"
#include "common/pypi/simple.h"
#include "tests/unit/t.h"

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define SHA_C "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define SHA_C_UPPER \
	"0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"

#define BASE "https://pypi.org/simple/demo/"
#define TRUSTED "files.pythonhosted.org"

static int parse_n(const char *html, size_t len, const char *base,
		   int is_list, size_t max, struct simple_page *p)
{
	struct simple_opts o = {base, TRUSTED, max};
	char err[200] = "";
	int e;

	e = html_parse_simple(html, len, &o, is_list, p, err, sizeof(err));
	CHECK(!e || err[0]); /* a failure always says why */
	return e;
}

static int parse(const char *html, int is_list, struct simple_page *p)
{
	return parse_n(html, strlen(html), BASE, is_list, 0, p);
}

/* Decodes s with html_unescape; returns a static copy. */
static const char *unescape(const char *s)
{
	static char out[256];
	struct buf b;

	buf_init(&b, sizeof(out) - 1);
	if (html_unescape(s, strlen(s), &b))
		snprintf(out, sizeof(out), "(error)");
	else
		snprintf(out, sizeof(out), "%s", buf_str(&b));
	buf_free(&b);
	return out;
}

T(unescape_refs)
{
	CHECK_STR(unescape("a&amp;b&lt;c&gt;d&quot;e&apos;f&#39;g"),
		  "a&b<c>d\"e'f'g");
	CHECK_STR(unescape("1.0&#x2B;cpu &#43; &#X2b;"), "1.0+cpu + +");
	CHECK_STR(unescape("&nbsp;"), "\xc2\xa0");
	CHECK_STR(unescape("&#x20AC;&#128512;"),
		  "\xe2\x82\xac\xf0\x9f\x98\x80");
	CHECK_STR(unescape("&AMP;&plus;&equals;"), "&+=");
	/* kept as written */
	CHECK_STR(unescape("&#0;&#x0;"), "&#0;&#x0;");
	CHECK_STR(unescape("&#xD800;&#57343;"), "&#xD800;&#57343;");
	CHECK_STR(unescape("&#x110000;&#99999999999999999999;"),
		  "&#x110000;&#99999999999999999999;");
	CHECK_STR(unescape("&#;&#x;&#12a;&amp &bogus; & &"),
		  "&#;&#x;&#12a;&amp &bogus; & &");
	CHECK_STR(unescape("&"), "&");
	CHECK_STR(unescape("x&#65"), "x&#65");
	CHECK_STR(unescape(""), "");
}

static const char pypi_page[] =
	"<!DOCTYPE html>\n<html>\n  <head>\n"
	"    <meta name=\"pypi:repository-version\" content=\"1.1\">\n"
	"    <title>Links for demo</title>\n  </head>\n  <body>\n"
	"    <h1>Links for demo</h1>\n"
	"    <a href=\"https://files.pythonhosted.org/packages/aa/"
	"demo-1.0.tar.gz#sha256=" SHA_C_UPPER "\" "
	"data-requires-python=\"&gt;=3.8\" "
	"data-dist-info-metadata=\"sha256=" SHA_A "\" "
	"data-core-metadata=\"sha256=" SHA_B "\">demo-1.0.tar.gz</a><br />\n"
	"    <a href=\"../../packages/demo-1.0%2Bcpu-py3-none-any.whl?a=1&amp;"
	"b=2#sha256=" SHA_A "\" data-yanked=\"bad &amp; broken\">\n"
	"      demo-1.0&#x2B;cpu-py3-none-any.whl\n    </a><br />\n"
	"    <a href='../../packages/demo-0.9.tar.gz#sha256=" SHA_A "' "
	"data-requires-python=&gt;=3.7 data-yanked>demo-0.9&#43;x.tar.gz</a>\n"
	"    <!-- moved -> <a href=\"../../packages/evil.tar.gz#sha256=" SHA_A
	"\">"
	"evil.tar.gz</a> -->\n"
	"    <A HREF=\"../../packages/demo-0.8.tar.gz#SHA256=" SHA_A "\" "
	"DATA-DIST-INFO-METADATA=\"true\">demo-0.8.tar.gz</A>\n"
	"    <a href=\"../../packages/demo-0.7.tar.gz#md5=0123\">"
	"demo-0.7.tar.gz</a>\n"
	"    <a href=\"https://evil.example/demo-0.6.tar.gz#sha256=" SHA_A "\">"
	"demo-0.6.tar.gz</a>\n"
	"    <a href=\"javascript:alert(1)#sha256=" SHA_A "\">"
	"demo-0.5.tar.gz</a>\n"
	"    <a href=\"../../packages/x#sha256=" SHA_A "\">"
	"../../etc/passwd</a>\n"
	"    <a name=\"no-href\">not a link</a>\n"
	"  </body>\n</html>\n";

T(parse_pypi_page)
{
	struct simple_page p;
	const struct simple_file *f;

	CHECK_INT(parse(pypi_page, 0, &p), 0);
	CHECK_STR(p.api_version, "1.1");
	CHECK_STR(p.name, "demo");
	CHECK_INT(p.nfiles, 4);
	CHECK_INT(p.dropped, 4);
	if (p.nfiles != 4)
		goto out;
	f = &p.files[0];
	CHECK_STR(f->filename, "demo-1.0.tar.gz");
	CHECK_STR(f->url,
		  "https://files.pythonhosted.org/packages/aa/demo-1.0.tar.gz");
	CHECK_STR(f->sha256, SHA_C);
	CHECK_STR(f->requires_python, ">=3.8");
	CHECK_INT(f->yanked, 0);
	CHECK_INT(f->core_metadata, 1);
	CHECK_STR(f->meta_sha256, SHA_B); /* data-core-metadata wins */
	CHECK_INT(f->size, -1);
	f = &p.files[1];
	CHECK_STR(f->filename, "demo-1.0+cpu-py3-none-any.whl");
	CHECK_STR(f->url, "https://pypi.org/packages/"
			  "demo-1.0%2Bcpu-py3-none-any.whl?a=1&b=2");
	CHECK_INT(f->yanked, 1);
	CHECK_STR(f->yanked_reason, "bad & broken");
	CHECK_INT(f->core_metadata, 0);
	f = &p.files[2];
	CHECK_STR(f->filename, "demo-0.9+x.tar.gz");
	CHECK_STR(f->url, "https://pypi.org/packages/demo-0.9.tar.gz");
	CHECK_STR(f->requires_python, ">=3.7");
	CHECK_INT(f->yanked, 1);
	CHECK_STR(f->yanked_reason, "");
	f = &p.files[3];
	CHECK_STR(f->filename, "demo-0.8.tar.gz");
	CHECK_STR(f->sha256, SHA_A);
	CHECK_INT(f->core_metadata, 1);
	CHECK_STR(f->meta_sha256, "");
out:
	simple_page_free(&p);
}

T(hashes_from_fragment)
{
	static const char page[] =
		"<a href=\"a-1.tar.gz#md5=ABCD\">a-1.tar.gz</a>"
		"<a href=\"b-1.tar.gz#sha256=" SHA_A "&amp;md5=00\">b-1.tar.gz"
		"</a>"
		"<a href=\"c-1.tar.gz#sha256=abc\">c-1.tar.gz</a>"
		"<a href=\"d-1.tar.gz\">d-1.tar.gz</a>";
	struct simple_page p;

	CHECK_INT(parse(page, 0, &p), 0);
	CHECK_INT(p.nfiles, 1);
	CHECK_INT(p.dropped, 3);
	if (p.nfiles == 1) {
		CHECK_INT(p.files[0].nhashes, 2);
		CHECK_STR(p.files[0].hashes[1].name, "md5");
		CHECK_STR(p.files[0].hashes[1].value, "00");
	}
	simple_page_free(&p);
}

T(filename_fallback)
{
	static const char page[] =
		"<a href=\"pkg/demo-2.0.tar.gz#sha256=" SHA_A "\"></a>"
		"<a href=\"pkg/demo-2.1%2Bx.tar.gz?q=1#sha256=" SHA_A "\">"
		"  \n </a>"
		"<a href=\"pkg/#sha256=" SHA_A "\"></a>";
	struct simple_page p;

	CHECK_INT(parse(page, 0, &p), 0);
	CHECK_INT(p.nfiles, 2);
	CHECK_INT(p.dropped, 1);
	if (p.nfiles == 2) {
		CHECK_STR(p.files[0].filename, "demo-2.0.tar.gz");
		CHECK_STR(p.files[1].filename, "demo-2.1+x.tar.gz");
	}
	simple_page_free(&p);
}

T(tolerant_markup)
{
	static const char page[] =
		"<?xml version=\"1.0\"?><!doctype html>"
		"<title>Links for &#68;emo</title>"
		"<script>var s = '<a href=\"x.whl#sha256=" SHA_A "\">"
		"x.whl</a>';"
		"</script >"
		"<style>a{} <a href=y.whl#sha256=" SHA_A ">y.whl</a></style>"
		"<!--> <a href=\"z1.whl#sha256=" SHA_A "\">z1.whl</a>"
		"<!---> <a href=\"z2.whl#sha256=" SHA_A "\">z2.whl</a>"
		"<a\thref\n=\n\"a-1.tar.gz#sha256=" SHA_A "\"\t/>a-1<b>.tar</b>"
		".gz</a >"
		/* an <a> inside an <a> ends the first */
		"<a href=b-1.tar.gz#sha256=" SHA_A ">b-1.tar.gz"
		"<a href=c-1.tar.gz#sha256=" SHA_A " data-yanked=>c-1.tar.gz"
		"</p></a>"
		"<a href=\"1 < 2.whl#sha256=" SHA_A "\">1 < 2.whl</a>"
		"</ junk><a href=\"d-1.tar.gz#sha256=" SHA_A "\" >d-1.tar.gz";
	struct simple_page p;

	CHECK_INT(parse(page, 0, &p), 0);
	CHECK_STR(p.name, "Demo");
	CHECK_INT(p.nfiles, 6);
	CHECK_INT(p.dropped, 1);
	if (p.nfiles == 6) {
		CHECK_STR(p.files[0].filename, "z1.whl");
		CHECK_STR(p.files[1].filename, "z2.whl");
		CHECK_STR(p.files[2].filename, "a-1.tar.gz");
		CHECK_STR(p.files[3].filename, "b-1.tar.gz");
		CHECK_STR(p.files[4].filename, "c-1.tar.gz");
		CHECK_INT(p.files[4].yanked, 1);
		CHECK_STR(p.files[5].filename, "d-1.tar.gz");
	}
	simple_page_free(&p);
}

T(page_ends_inside_markup)
{
#define LINK "<a href=\"x-1.tar.gz#sha256=" SHA_A "\">x-1.tar.gz</a>"
	static const char *const pages[] = {
		LINK "<a href=\"", LINK "<a hr",     LINK "<!-- x",
		LINK "<",          LINK "</",        LINK "<title>x",
		LINK "<script",    LINK "<a href='", LINK "<a href=x",
	};
#undef LINK
	struct simple_page p;

	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		CHECK_INT(parse(pages[i], 0, &p), 0);
		CHECK_INT(p.nfiles, 1);
		simple_page_free(&p);
	}
	CHECK_INT(parse("", 0, &p), 0);
	CHECK_INT(p.nfiles, 0);
	CHECK_STR(p.api_version, "1.0");
	simple_page_free(&p);
}

T(nul_bytes)
{
	static const char page[] =
		"<title>Links for demo\0x</title>"
		"<a href=\"a-1.whl#sha256=" SHA_A "\">a-1.whl\0evil</a>"
		"<a href=\"b-1.whl#sha256=" SHA_A "\0\">b-1.whl</a>"
		"<a href=\"c-1.whl#sha256=" SHA_A "\">c-1.whl</a>"
		"<a href=\"/simple/d/\">d\0</a>";
	struct simple_page p;

	CHECK_INT(parse_n(page, sizeof(page) - 1, BASE, 0, 0, &p), 0);
	CHECK(p.name == NULL);
	CHECK_INT(p.nfiles, 1);
	CHECK_INT(p.dropped, 3);
	simple_page_free(&p);
	/* as a list only the text counts: "b-1.whl" and "c-1.whl" */
	CHECK_INT(parse_n(page, sizeof(page) - 1, BASE, 1, 0, &p), 0);
	CHECK_INT(p.nprojects, 2);
	CHECK_INT(p.dropped, 2);
	simple_page_free(&p);
}

T(metadata_attrs)
{
	static const char page[] =
		"<a href=\"a-1.whl#sha256=" SHA_A "\""
		" data-core-metadata=\"true\""
		" data-dist-info-metadata=\"sha256=" SHA_B "\">a-1.whl</a>"
		"<a href=\"b-1.whl#sha256=" SHA_A "\""
		" data-dist-info-metadata=\"SHA256=" SHA_C_UPPER "\">"
		"b-1.whl</a>"
		"<a href=\"c-1.whl#sha256=" SHA_A "\""
		" data-core-metadata=\"sha256=nothex\">c-1.whl</a>"
		"<a href=\"d-1.whl#sha256=" SHA_A "\""
		" data-core-metadata=\"false\">d-1.whl</a>"
		"<a href=\"e-1.whl#sha256=" SHA_A "\""
		" data-core-metadata>e-1.whl</a>";
	struct simple_page p;

	CHECK_INT(parse(page, 0, &p), 0);
	CHECK_INT(p.nfiles, 5);
	if (p.nfiles == 5) {
		CHECK_INT(p.files[0].core_metadata, 1);
		CHECK_STR(p.files[0].meta_sha256, "");
		CHECK_INT(p.files[1].core_metadata, 1);
		CHECK_STR(p.files[1].meta_sha256, SHA_C);
		CHECK_INT(p.files[2].core_metadata, 0);
		CHECK_INT(p.files[3].core_metadata, 0);
		CHECK_INT(p.files[4].core_metadata, 1);
	}
	simple_page_free(&p);
}

T(repository_version)
{
	struct simple_page p;

	CHECK_INT(parse("<meta name=\"pypi:repository-version\""
			" content=\"1.7\">",
			0, &p),
		  0);
	CHECK_STR(p.api_version, "1.4");
	simple_page_free(&p);
	CHECK_INT(parse("<META NAME='PyPI:Repository-Version' CONTENT=1.0>"
			"<meta name=\"pypi:repository-version\" content=\"2\">",
			0, &p),
		  0);
	CHECK_STR(p.api_version, "1.0");
	simple_page_free(&p);
	CHECK_INT(parse("<meta name=\"pypi:repository-version\""
			" content=\"2.0\">"
			"<a href=\"x-1.whl#sha256=" SHA_A "\">x-1.whl</a>",
			0, &p),
		  EINVAL);
	CHECK(p.files == NULL && p.nfiles == 0);
	CHECK_INT(parse("<meta name=\"description\" content=\"9\">", 0, &p), 0);
	CHECK_STR(p.api_version, "1.0");
	simple_page_free(&p);
}

T(base_element)
{
	static const char page[] =
		"<base href=\"../../packages/\">"
		"<a href=\"a-1.whl#sha256=" SHA_A "\">a-1.whl</a>"
		"<base href=\"https://evil.example/\">"
		"<a href=\"b-1.whl#sha256=" SHA_A "\">b-1.whl</a>";
	struct simple_page p;

	CHECK_INT(parse(page, 0, &p), 0);
	CHECK_INT(p.nfiles, 2);
	if (p.nfiles == 2) {
		CHECK_STR(p.files[0].url, "https://pypi.org/packages/a-1.whl");
		CHECK_STR(p.files[1].url, "https://pypi.org/packages/b-1.whl");
	}
	simple_page_free(&p);
	CHECK_INT(parse("<base href=\"https://evil.example/\">"
			"<a href=\"a-1.whl#sha256=" SHA_A "\">a-1.whl</a>",
			0, &p),
		  0);
	CHECK_INT(p.nfiles, 0);
	CHECK_INT(p.dropped, 1);
	simple_page_free(&p);
}

T(project_list)
{
	static const char page[] =
		"<!DOCTYPE html><html><head>"
		"<meta name=\"pypi:repository-version\" content=\"1.1\">"
		"<title>Simple index</title></head><body>"
		"<a href=\"/simple/foo-bar/\">Foo.Bar</a>\n"
		"<a href=\"/simple/requests/\">\n  requests\n</a>\n"
		"<a href=\"/simple/x/\">-bad-</a>\n"
		"<a href=\"/simple/y/\"></a>\n"
		"<a href=\"/simple/z/\">a&lt;b</a>\n"
		"<a href=\"/simple/zope-interface/\">zope&#46;interface</a>\n"
		"</body></html>";
	struct simple_page p;
	struct buf b;

	CHECK_INT(parse(page, 1, &p), 0);
	CHECK_INT(p.is_list, 1);
	CHECK(p.name == NULL);
	CHECK_INT(p.nprojects, 3);
	CHECK_INT(p.dropped, 3);
	if (p.nprojects == 3) {
		CHECK_STR(p.projects[0], "Foo.Bar");
		CHECK_STR(p.projects[1], "requests");
		CHECK_STR(p.projects[2], "zope.interface");
	}
	buf_init(&b, 1 << 16);
	CHECK_INT(simple_render_html(&p, &b), 0);
	CHECK_CONTAINS(buf_str(&b),
		       "<a href=\"zope-interface/\">zope.interface</a><br>\n");
	buf_free(&b);
	simple_page_free(&p);
}

T(max_files)
{
	static const char page[] =
		"<a href=\"a-1.whl#sha256=" SHA_A "\">a-1.whl</a>"
		"<a name=x>no href: not counted</a>"
		"<a href=\"b-1.whl\">b-1.whl</a>"
		"<a href=\"c-1.whl#sha256=" SHA_A "\">c-1.whl</a>";
	struct simple_page p;

	CHECK_INT(parse_n(page, strlen(page), BASE, 0, 2, &p), EINVAL);
	CHECK(p.files == NULL && p.nfiles == 0);
	CHECK_INT(parse_n(page, strlen(page), BASE, 0, 3, &p), 0);
	CHECK_INT(p.nfiles, 2);
	CHECK_INT(p.dropped, 1);
	simple_page_free(&p);
	CHECK_INT(parse_n(page, strlen(page), BASE, 1, 2, &p), EINVAL);
}

/* Same files as far as HTML carries them. */
static void same_files(const struct simple_page *a, const struct simple_page *b)
{
	CHECK_INT(a->nfiles, b->nfiles);
	for (size_t i = 0; i < a->nfiles && i < b->nfiles; i++) {
		const struct simple_file *x = &a->files[i], *y = &b->files[i];
		char want[400];

		CHECK_STR(x->filename, y->filename);
		CHECK_STR(x->sha256, y->sha256);
		CHECK_STR(x->requires_python ? x->requires_python : "(none)",
			  y->requires_python ? y->requires_python : "(none)");
		CHECK_INT(x->yanked, y->yanked);
		CHECK_STR(x->yanked_reason ? x->yanked_reason : "(none)",
			  y->yanked_reason ? y->yanked_reason : "(none)");
		CHECK_INT(x->core_metadata, y->core_metadata);
		CHECK_STR(x->meta_sha256, y->meta_sha256);
		snprintf(want, sizeof(want), "http://h/root/pypi/files/%s/%s",
			 x->sha256, x->filename);
		CHECK_STR(y->url, want);
	}
}

T(round_trip)
{
	static const char hostile[] =
		"<a href=\"h-1.tar.gz#sha256=" SHA_A "\" "
		"data-requires-python='&quot;&gt;=3&quot;&gt;&lt;script&gt;"
		"alert(1)&lt;/script&gt; &amp;&#39;' "
		"data-yanked=\"&lt;/a&gt;&lt;a href=javascript:x&gt;\">"
		"h-1.tar.gz</a>";
	const char *base = "http://h/root/pypi/simple/proj/";
	struct simple_page p, q, r;
	struct buf b;

	buf_init(&b, 1 << 20);
	CHECK_INT(parse(pypi_page, 0, &p), 0);
	CHECK_INT(simple_render_html(&p, &b), 0);
	CHECK_INT(parse_n(b.data, b.len, base, 0, 0, &q), 0);
	CHECK_INT(q.dropped, 0);
	CHECK_STR(q.name, "demo");
	CHECK_STR(q.api_version, "1.1");
	same_files(&p, &q);
	simple_page_free(&p);
	simple_page_free(&q);

	buf_reset(&b);
	CHECK_INT(parse(hostile, 0, &p), 0);
	CHECK_INT(p.nfiles, 1);
	if (p.nfiles == 1)
		CHECK_STR(p.files[0].requires_python,
			  "\">=3\"><script>alert(1)</script> &'");
	CHECK_INT(simple_render_html(&p, &b), 0);
	CHECK(!strstr(buf_str(&b), "<script"));
	CHECK(!strstr(buf_str(&b), "</a><a"));
	CHECK_INT(parse_n(b.data, b.len, base, 0, 0, &q), 0);
	same_files(&p, &q);
	/* and through JSON */
	buf_reset(&b);
	CHECK_INT(simple_render_json(&q, &b), 0);
	{
		struct simple_opts o = {base, NULL, 0};
		char err[100];

		CHECK_INT(simple_parse_json(b.data, b.len, &o, 0, &r, err,
					    sizeof(err)),
			  0);
		same_files(&p, &r);
		simple_page_free(&r);
	}
	simple_page_free(&p);
	simple_page_free(&q);
	buf_free(&b);
}

/* Cheap fuzzing: every prefix of a page, and pages with bytes changed,
 * must parse or fail cleanly. Each copy is exactly as long as it says and
 * has no NUL after it, so ASan sees any read past the end. */
static void parse_copy(const char *src, size_t n, int is_list)
{
	struct simple_opts o = {BASE, TRUSTED, 0};
	struct simple_page p;
	char *s = malloc(n ? n : 1);

	if (!s)
		return;
	memcpy(s, src, n);
	if (html_parse_simple(s, n, &o, is_list, &p, NULL, 0) == 0)
		simple_page_free(&p);
	free(s);
}

T(mangled_pages)
{
	static const char junk[] = "<>\"'&#;=/ !-ax\0\xff";
	size_t n = strlen(pypi_page);
	char *s = malloc(n);
	unsigned int seed = 12345;

	if (!s)
		return;
	for (size_t i = 0; i <= n; i++)
		parse_copy(pypi_page, i, (int)(i & 1));
	for (int round = 0; round < 3000; round++) {
		memcpy(s, pypi_page, n);
		for (int k = 0; k < 4; k++) {
			seed = seed * 1103515245u + 12345u;
			s[(seed >> 8) % n] = junk[(seed >> 20) % 16];
		}
		parse_copy(s, n, round & 1);
	}
	free(s);
	CHECK(1);
}

int main(void)
{
	RUN(unescape_refs);
	RUN(parse_pypi_page);
	RUN(hashes_from_fragment);
	RUN(filename_fallback);
	RUN(tolerant_markup);
	RUN(page_ends_inside_markup);
	RUN(nul_bytes);
	RUN(metadata_attrs);
	RUN(repository_version);
	RUN(base_element);
	RUN(project_list);
	RUN(max_files);
	RUN(round_trip);
	RUN(mangled_pages);
	return t_done();
}
