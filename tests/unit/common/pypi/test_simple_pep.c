/* The newer keys of the simple API through both parsers and both
 * renderers: PEP 700 (1.1), PEP 740 provenance (1.3), PEP 792 project
 * status (1.4), and the merge of a status. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pypi/html.h"
#include "common/pypi/simple.h"
#include "common/pypi/simple_merge.h"
#include "tests/unit/t.h"

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

#define BASE "https://pypi.org/simple/demo/"
#define TRUSTED "files.pythonhosted.org"
#define PROV "https://pypi.org/integrity/demo/1.0/demo-1.0.tar.gz/provenance"

/* As pypi.org writes a 1.4 page: status, provenance, PEP 700 keys. */
static const char json_page[] =
	"{\"meta\":{\"api-version\":\"1.4\"},"
	"\"project-status\":{\"status\":\"archived\","
	"\"reason\":\"moved to \\\"demo2\\\"\"},"
	"\"name\":\"demo\",\"files\":["
	"{\"filename\":\"demo-1.0.tar.gz\","
	"\"url\":\"https://files.pythonhosted.org/p/demo-1.0.tar.gz\","
	"\"hashes\":{\"sha256\":\"" SHA_A "\"},"
	"\"provenance\":\"" PROV "\","
	"\"size\":10,\"upload-time\":\"2024-01-02T03:04:05.123456Z\"},"
	"{\"filename\":\"demo-1.0-py3-none-any.whl\","
	"\"url\":\"https://files.pythonhosted.org/p/demo-1.0-py3-none-any.whl\","
	"\"hashes\":{\"sha256\":\"" SHA_B "\"},\"provenance\":null,"
	"\"size\":20}"
	"],\"versions\":[\"1.0\"]}";

static const char html_page[] =
	"<!DOCTYPE html><html><head>"
	"<meta name=\"pypi:repository-version\" content=\"1.4\">"
	"<meta name=\"pypi:project-status\" content=\"Deprecated\">"
	"<meta name=\"pypi:project-status-reason\" content=\"use &lt;x&gt;\">"
	"<title>Links for demo</title></head><body>"
	"<a href=\"https://files.pythonhosted.org/p/demo-1.0.tar.gz#sha256="
	SHA_A "\" data-provenance=\"" PROV "\">demo-1.0.tar.gz</a>"
	"<a href=\"https://files.pythonhosted.org/p/demo-1.0-py3-none-any.whl"
	"#sha256=" SHA_B "\" data-provenance=\"https://evil.example/p\">"
	"demo-1.0-py3-none-any.whl</a>"
	"</body></html>";

static int parse(const char *s, int html, struct simple_page *p)
{
	struct simple_opts o = {BASE, TRUSTED, 0};
	char err[200] = "";
	int e;

	e = html ? html_parse_simple(s, strlen(s), &o, 0, p, err, sizeof(err))
		 : simple_parse_json(s, strlen(s), &o, 0, p, err, sizeof(err));
	CHECK(!e || err[0]);
	return e;
}

static char *render(const struct simple_page *p, int html)
{
	struct buf b;

	buf_init(&b, 1 << 20);
	if (html ? simple_render_html(p, &b) : simple_render_json(p, &b)) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

T(json_status_and_provenance)
{
	struct simple_page p;
	char *s;

	CHECK_INT(parse(json_page, 0, &p), 0);
	CHECK_STR(p.api_version, "1.4");
	CHECK_STR(p.status, "archived");
	CHECK_STR(p.status_reason, "moved to \"demo2\"");
	CHECK_INT(p.nfiles, 2);
	if (p.nfiles != 2)
		goto out;
	CHECK_STR(p.files[0].provenance, PROV);
	CHECK(p.files[1].provenance == NULL); /* null: none */
	s = render(&p, 0);
	CHECK_CONTAINS(s, "{\"meta\":{\"api-version\":\"1.4\"},"
			  "\"name\":\"demo\",\"project-status\":"
			  "{\"status\":\"archived\","
			  "\"reason\":\"moved to \\\"demo2\\\"\"},");
	/* larder's URL, never the upstream's */
	CHECK_CONTAINS(s, "\"size\":10,\"upload-time\":"
			  "\"2024-01-02T03:04:05.123456Z\",\"provenance\":"
			  "\"../../files/" SHA_A "/demo-1.0.tar.gz.provenance\"}");
	CHECK(s && !strstr(s, "integrity"));
	CHECK_CONTAINS(s, "\"size\":20}");
	CHECK_CONTAINS(s, "\"versions\":[\"1.0\"]");
	free(s);
	s = render(&p, 1);
	CHECK_CONTAINS(s, "<meta name=\"pypi:repository-version\" "
			  "content=\"1.4\">\n"
			  "<meta name=\"pypi:project-status\" "
			  "content=\"archived\">\n"
			  "<meta name=\"pypi:project-status-reason\" "
			  "content=\"moved to &quot;demo2&quot;\">\n<title>");
	CHECK_CONTAINS(s, " data-provenance=\"../../files/" SHA_A
			  "/demo-1.0.tar.gz.provenance\">demo-1.0.tar.gz</a>");
	CHECK(s && !strstr(s, "integrity"));
	free(s);
	/* at 1.2 neither may be claimed: status needs 1.4, provenance 1.3 */
	memcpy(p.api_version, "1.2", 4);
	s = render(&p, 0);
	CHECK(s && !strstr(s, "project-status") && !strstr(s, "provenance"));
	CHECK_CONTAINS(s, "\"size\":10,"); /* PEP 700 keys stay */
	free(s);
	s = render(&p, 1);
	CHECK(s && !strstr(s, "project-status") && !strstr(s, "provenance"));
	free(s);
	memcpy(p.api_version, "1.3", 4);
	s = render(&p, 0);
	CHECK(s && !strstr(s, "project-status"));
	CHECK_CONTAINS(s, ".provenance\"");
	free(s);
out:
	simple_page_free(&p);
}

T(html_status_and_provenance)
{
	struct simple_page p, q;
	char errbuf[200];
	char *s;

	CHECK_INT(parse(html_page, 1, &p), 0);
	CHECK_STR(p.api_version, "1.4");
	CHECK_STR(p.status, "deprecated");
	CHECK_STR(p.status_reason, "use <x>");
	CHECK_INT(p.nfiles, 2);
	if (p.nfiles != 2)
		goto out;
	CHECK_STR(p.files[0].provenance, PROV);
	/* an untrusted host: the file stays, its provenance goes */
	CHECK(p.files[1].provenance == NULL);
	s = render(&p, 0);
	CHECK_CONTAINS(s, "\"project-status\":{\"status\":\"deprecated\","
			  "\"reason\":\"use <x>\"}");
	/* and back: the JSON rendering parses to the same status */
	CHECK_INT(simple_parse_json(s ? s : "", s ? strlen(s) : 0,
				    &(struct simple_opts){BASE, TRUSTED, 0},
				    0, &q, errbuf, sizeof(errbuf)),
		  0);
	CHECK_STR(q.status, "deprecated");
	CHECK_STR(q.status_reason, "use <x>");
	CHECK(q.nfiles == 2 && q.files[0].provenance &&
	      strstr(q.files[0].provenance, ".provenance"));
	CHECK(q.nfiles == 2 && !q.files[1].provenance);
	simple_page_free(&q);
	free(s);
out:
	simple_page_free(&p);
}

T(quarantined_lists_nothing)
{
	static const char json[] =
		"{\"meta\":{\"api-version\":\"1.4\"},\"name\":\"demo\","
		"\"project-status\":{\"status\":\"quarantined\","
		"\"reason\":\"the project is haunted\"},\"files\":["
		"{\"filename\":\"demo-1.0.tar.gz\","
		"\"url\":\"https://files.pythonhosted.org/p/demo-1.0.tar.gz\","
		"\"hashes\":{\"sha256\":\"" SHA_A "\"}}],"
		"\"versions\":[\"1.0\"]}";
	static const char html[] =
		"<meta name=\"pypi:repository-version\" content=\"1.4\">"
		"<meta name=\"pypi:project-status\" content=\"quarantined\">"
		"<a href=\"https://files.pythonhosted.org/p/demo-1.0.tar.gz"
		"#sha256=" SHA_A "\">demo-1.0.tar.gz</a>";
	struct simple_page p;
	char *s;

	for (int h = 0; h < 2; h++) {
		CHECK_INT(parse(h ? html : json, h, &p), 0);
		CHECK_STR(p.status, "quarantined");
		CHECK_INT(p.nfiles, 0);
		s = render(&p, 0);
		CHECK_CONTAINS(s, "\"project-status\":{\"status\":"
				  "\"quarantined\"");
		CHECK_CONTAINS(s, "\"files\":[]");
		free(s);
		s = render(&p, 1);
		CHECK_CONTAINS(s, "content=\"quarantined\"");
		CHECK(s && !strstr(s, "<a "));
		free(s);
		simple_page_free(&p);
	}
}

T(status_values)
{
	struct simple_page p;

	memset(&p, 0, sizeof(p));
	CHECK_INT(simple_status_set(&p, "haunted", 7, "x", 1), 0);
	CHECK_STR(p.status, ""); /* not one of the PEP's: unsaid */
	CHECK(p.status_reason == NULL);
	CHECK_INT(simple_status_set(&p, "ACTIVE", 6, NULL, 0), 0);
	CHECK_STR(p.status, "active");
	CHECK_INT(simple_status_set(&p, "archivedX", 8, "\xff\xfe", 2), 0);
	CHECK_STR(p.status, "archived");
	CHECK(p.status_reason == NULL); /* not UTF-8 */
	CHECK_INT(simple_status_set(&p, "quarantined", 11, "a\0b", 3), 0);
	CHECK(p.status_reason == NULL); /* a NUL */
	CHECK(simple_quarantined(&p));
	simple_page_free(&p);
	/* a status that is not an object, or not a string: ignored */
	CHECK_INT(parse("{\"project-status\":\"quarantined\",\"files\":[]}", 0,
			&p),
		  0);
	CHECK_STR(p.status, "");
	simple_page_free(&p);
	CHECK_INT(parse("{\"project-status\":{\"status\":1,\"reason\":[]},"
			"\"files\":[]}",
			0, &p),
		  0);
	CHECK_STR(p.status, "");
	simple_page_free(&p);
	CHECK_INT(parse("{\"project-status\":{},\"project-status\":{},"
			"\"files\":[]}",
			0, &p),
		  EINVAL);
	/* the first meta tag of a name counts */
	CHECK_INT(parse("<meta name=\"pypi:project-status\" content=\"archived\">"
			"<meta name=\"pypi:project-status\" "
			"content=\"quarantined\">",
			1, &p),
		  0);
	CHECK_STR(p.status, "archived");
	simple_page_free(&p);
}

/* PEP 700 (1.1): versions, size and upload-time as upstream writes them;
 * none of them in HTML; a page without a versions list (HTML) gets its
 * files' versions, as a 1.1 JSON rendering must list them. */
T(pep700_keys)
{
	static const char json[] =
		"{\"meta\":{\"api-version\":\"1.1\"},\"name\":\"demo\","
		"\"files\":[{\"filename\":\"demo-1.0.tar.gz\","
		"\"url\":\"https://files.pythonhosted.org/p/demo-1.0.tar.gz\","
		"\"hashes\":{\"sha256\":\"" SHA_A "\"},\"size\":0,"
		"\"upload-time\":\"2024-01-02T03:04:05Z\"}],"
		"\"versions\":[\"0.5\",\"1.0\",\"0.9\"]}";
	static const char html[] =
		"<meta name=\"pypi:repository-version\" content=\"1.1\">"
		"<title>Links for Corp.Lib</title>"
		"<a href=\"/p/corp-lib-1.0-1.tar.gz#sha256=" SHA_A "\">"
		"corp-lib-1.0-1.tar.gz</a>"
		"<a href=\"/p/corp_lib-1.0-py3-none-any.whl#sha256=" SHA_B "\">"
		"corp_lib-1.0-py3-none-any.whl</a>"
		"<a href=\"/p/corp_lib-2.0rc1-1-py3-none-any.whl#sha256=" SHA_B
		"\">corp_lib-2.0rc1-1-py3-none-any.whl</a>"
		"<a href=\"/p/corp-lib-1.0.tar.gz#sha256=" SHA_A "\">"
		"corp-lib-1.0.tar.gz</a>"
		"<a href=\"/p/corp-lib-1.0.exe#sha256=" SHA_A "\">"
		"corp-lib-1.0.exe</a>";
	struct simple_page p;
	char *s;

	CHECK_INT(parse(json, 0, &p), 0);
	s = render(&p, 0);
	/* the list as given, a version without files too; a size of 0 */
	CHECK_CONTAINS(s, "\"versions\":[\"0.5\",\"1.0\",\"0.9\"]");
	CHECK_CONTAINS(s, "\"size\":0,\"upload-time\":"
			  "\"2024-01-02T03:04:05Z\"}");
	free(s);
	s = render(&p, 1);
	CHECK(s && !strstr(s, "size") && !strstr(s, "upload") &&
	      !strstr(s, "versions"));
	free(s);
	simple_page_free(&p);

	CHECK_INT(parse(html, 1, &p), 0);
	CHECK_INT(p.nfiles, 5);
	CHECK_INT(p.nversions, 3);
	s = render(&p, 0);
	CHECK_CONTAINS(s, "\"versions\":[\"1.0-1\",\"1.0\",\"2.0rc1\"]");
	free(s);
	simple_page_free(&p);
}

/* A page of one file and the given status. */
static void status_page(struct simple_page *p, const char *status,
			const char *fn)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->api_version, "1.4", 4);
	if (status)
		CHECK_INT(simple_status_set(p, status, strlen(status), status,
					    strlen(status)),
			  0);
	if (!fn || simple_quarantined(p))
		return;
	p->files = calloc(1, sizeof(*p->files));
	if (!p->files)
		return;
	p->files[0].filename = strdup(fn);
	p->files[0].provenance = strdup(PROV);
	memcpy(p->files[0].sha256, SHA_A, 65);
	p->files[0].size = -1;
	p->nfiles = 1;
}

T(merge_status)
{
	struct simple_page in[3], out;

	status_page(&in[0], NULL, "a-1.tar.gz");
	status_page(&in[1], "quarantined", "b-1.tar.gz");
	status_page(&in[2], "archived", "c-1.tar.gz");
	CHECK_INT(simple_merge(in, 3, &out), 0);
	/* the quarantine is the second layer's own: its files are gone from
	 * its page, the others' stay, and the page says archived */
	CHECK_STR(out.status, "archived");
	CHECK_STR(out.status_reason, "archived");
	CHECK_INT(out.nfiles, 2);
	CHECK(out.nfiles == 2 && out.files[0].provenance &&
	      strcmp(out.files[0].provenance, PROV) == 0);
	simple_page_free(&out);
	CHECK_INT(simple_merge(in, 2, &out), 0);
	CHECK_STR(out.status, "");
	simple_page_free(&out);
	CHECK_INT(simple_merge(&in[1], 1, &out), 0);
	CHECK_STR(out.status, "quarantined");
	CHECK_INT(out.nfiles, 0);
	simple_page_free(&out);
	for (int i = 0; i < 3; i++)
		simple_page_free(&in[i]);
}

/* issue 21 item 9: PEP 691's "name" is the normalised project name, from
 * an HTML page with no <title> (it was "") or one spelt otherwise */
T(json_name_normalised)
{
	static const char untitled[] =
		"<a href=\"/p/corp_lib-1.0-py3-none-any.whl#sha256=" SHA_B
		"\">corp_lib-1.0-py3-none-any.whl</a>";
	static const char spelt[] =
		"<title>Links for Corp.Lib</title>"
		"<a href=\"/p/corp_lib-1.0-py3-none-any.whl#sha256=" SHA_B
		"\">corp_lib-1.0-py3-none-any.whl</a>";
	struct simple_page p;
	char *s;

	CHECK_INT(parse(untitled, 1, &p), 0);
	CHECK(p.name == NULL);
	CHECK_INT(simple_name_set(&p, "corp-lib"), 0);
	s = render(&p, 0);
	CHECK_CONTAINS(s, "\"name\":\"corp-lib\"");
	free(s);
	s = render(&p, 1);
	CHECK_CONTAINS(s, "<title>Links for corp-lib</title>");
	free(s);
	/* only a normalised name is taken */
	CHECK_INT(simple_name_set(&p, "Corp.Lib"), EINVAL);
	CHECK_INT(simple_name_set(&p, "bad name"), EINVAL);
	CHECK_STR(p.name, "corp-lib");
	simple_page_free(&p);

	CHECK_INT(parse(spelt, 1, &p), 0);
	CHECK_STR(p.name, "Corp.Lib");
	s = render(&p, 0);
	CHECK_CONTAINS(s, "\"name\":\"corp-lib\"");
	free(s);
	simple_page_free(&p);
}

int main(void)
{
	RUN(json_status_and_provenance);
	RUN(html_status_and_provenance);
	RUN(quarantined_lists_nothing);
	RUN(status_values);
	RUN(merge_status);
	RUN(pep700_keys);
	RUN(json_name_normalised);
	return t_done();
}
