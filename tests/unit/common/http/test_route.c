#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/http/route.h"
#include "tests/unit/t.h"

#define SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define WHL "requests-2.31.0-py3-none-any.whl"
#define SHA_A "e3b0c44298fc1c149afbf4c8996fb924" /* SHA's two halves */
#define SHA_B "27ae41e4649b934ca495991b7852b855"

/* The default indexes, made by hand so the test needs no conf.c. */
static void make_conf(struct conf *c)
{
	memset(c, 0, sizeof(*c));
	c->index[0].name = "pypi";
	c->index[0].type = CONF_INDEX_CACHE;
	c->index[0].upstream = "https://pypi.org/simple/";
	c->index[1].name = "root/pypi";
	c->index[1].type = CONF_INDEX_VIRTUAL;
	c->index[1].layers = "pypi";
	c->index[1].layer[0] = 0;
	c->index[1].nlayers = 1;
	c->nindex = 2;
}

struct parse_case {
	const char *method;
	const char *path;
	enum route_kind kind;
	int status;
	const char *reason;   /* errors only */
	int index;
	const char *project;  /* SIMPLE_PROJECT */
	const char *filename; /* FILE */
	int metadata;         /* 1 .metadata, 2 .provenance */
	const char *location; /* REDIRECT */
};

#define E(m, p, st, why) \
	{ m, p, ROUTE_ERROR, st, why, -2, NULL, NULL, 0, NULL }
#define EI(m, p, st, why, i) \
	{ m, p, ROUTE_ERROR, st, why, i, NULL, NULL, 0, NULL }
#define REDIR(p, i, loc) \
	{ "GET", p, ROUTE_REDIRECT, 301, NULL, i, NULL, NULL, 0, loc }
#define LIST(m, p, i) \
	{ m, p, ROUTE_SIMPLE_LIST, 200, NULL, i, NULL, NULL, 0, NULL }
#define PROJ(p, i, name) \
	{ "GET", p, ROUTE_SIMPLE_PROJECT, 200, NULL, i, name, NULL, 0, NULL }
#define FILE_(p, i, fn, md) \
	{ "GET", p, ROUTE_FILE, 200, NULL, i, NULL, fn, md, NULL }

static void check_case(const struct conf *c, const struct parse_case *tc,
		       size_t i)
{
	struct route r;
	int before = t_failed;

	route_parse(c, tc->method, tc->path, &r);
	CHECK_INT(r.kind, tc->kind);
	CHECK_INT(r.status, tc->status);
	CHECK(r.reason != NULL);
	if (tc->reason)
		CHECK_STR(r.reason, tc->reason);
	if (tc->index != -2)
		CHECK_INT(r.index, tc->index);
	if (tc->project)
		CHECK_STR(r.project, tc->project);
	if (tc->kind == ROUTE_FILE) {
		CHECK_STR(r.sha256, SHA);
		CHECK_STR(r.filename, tc->filename);
		CHECK_INT(r.metadata, tc->metadata == 1);
		CHECK_INT(r.provenance, tc->metadata == 2);
	} else {
		CHECK_INT(r.metadata, 0);
		CHECK_INT(r.provenance, 0);
	}
	if (tc->location)
		CHECK_STR(r.location, tc->location);
	else
		CHECK_STR(r.location, "");
	if (t_failed != before)
		fprintf(stderr, "  case %zu: %s \"%s\"\n", i,
			tc->method ? tc->method : "(null)",
			tc->path ? tc->path : "(null)");
}

static void run_cases(const struct conf *c, const struct parse_case *tc,
		      size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		check_case(c, &tc[i], i);
}

#define RUN_CASES(c, a) run_cases(c, a, sizeof(a) / sizeof(a[0]))

T(parse_pages)
{
	static const struct parse_case cases[] = {
		{ "GET", "/+health", ROUTE_HEALTH, 200, NULL, -1, NULL, NULL,
		  0, NULL },
		{ "HEAD", "/+health", ROUTE_HEALTH, 200, NULL, -1, NULL, NULL,
		  0, NULL },
		E("GET", "/+health/", 404, "no such index"),
		E("GET", "/+Health", 404, "no such index"),
		{ "GET", "/metrics", ROUTE_METRICS, 200, NULL, -1, NULL, NULL,
		  0, NULL },
		{ "HEAD", "/metrics", ROUTE_METRICS, 200, NULL, -1, NULL, NULL,
		  0, NULL },
		{ "GET", "/+stats", ROUTE_STATS, 200, NULL, -1, NULL, NULL,
		  0, NULL },
		{ "GET", "/+status", ROUTE_STATUS, 200, NULL, -1, NULL, NULL,
		  0, NULL },
		E("GET", "/metrics/", 404, "no such index"),
		E("GET", "/+stats/", 404, "no such index"),
		E("GET", "/+Status", 404, "no such index"),
		E("GET", "/+statu", 404, "no such index"),
		E("GET", "/+statuses", 404, "no such index"),
		LIST("GET", "/pypi/simple/", 0),
		LIST("HEAD", "/pypi/simple/", 0),
		LIST("GET", "/root/pypi/simple/", 1),
		LIST("HEAD", "/root/pypi/simple/", 1),
		PROJ("/pypi/simple/requests/", 0, "requests"),
		PROJ("/root/pypi/simple/requests/", 1, "requests"),
		PROJ("/pypi/simple/foo-bar-baz/", 0, "foo-bar-baz"),
		PROJ("/pypi/simple/a/", 0, "a"),
		PROJ("/pypi/simple/0/", 0, "0"),
	};
	struct conf c;

	make_conf(&c);
	RUN_CASES(&c, cases);
}

T(parse_redirects)
{
	static const struct parse_case cases[] = {
		REDIR("/pypi/simple", 0, "/pypi/simple/"),
		REDIR("/root/pypi/simple", 1, "/root/pypi/simple/"),
		REDIR("/pypi/simple/requests", 0, "/pypi/simple/requests/"),
		REDIR("/pypi/simple/Requests", 0, "/pypi/simple/requests/"),
		REDIR("/pypi/simple/Requests/", 0, "/pypi/simple/requests/"),
		REDIR("/pypi/simple/Foo.Bar__baz/", 0,
		      "/pypi/simple/foo-bar-baz/"),
		REDIR("/pypi/simple/Foo.Bar__baz", 0,
		      "/pypi/simple/foo-bar-baz/"),
		REDIR("/pypi/simple/zope.interface/", 0,
		      "/pypi/simple/zope-interface/"),
		REDIR("/pypi/simple/foo--bar/", 0, "/pypi/simple/foo-bar/"),
		REDIR("/root/pypi/simple/Foo_Bar/", 1,
		      "/root/pypi/simple/foo-bar/"),
		REDIR("/root/pypi/simple/foo", 1, "/root/pypi/simple/foo/"),
		{ "HEAD", "/pypi/simple/Django/", ROUTE_REDIRECT, 301, NULL,
		  0, NULL, NULL, 0, "/pypi/simple/django/" },
	};
	struct conf c;

	make_conf(&c);
	RUN_CASES(&c, cases);
}

T(parse_not_found)
{
	static const struct parse_case cases[] = {
		EI("GET", "/nope", 404, "no such index", -1),
		EI("GET", "/nope/simple/", 404, "no such index", -1),
		EI("GET", "/simple/", 404, "no such index", -1),
		EI("GET", "/root", 404, "no such index", -1),
		EI("GET", "/root/", 404, "no such index", -1),
		EI("GET", "/root/simple/", 404, "no such index", -1),
		EI("GET", "/root/simple/requests/", 404, "no such index", -1),
		EI("GET", "/Pypi/simple/", 404, "no such index", -1),
		EI("GET", "/pypix/simple/", 404, "no such index", -1),
		EI("GET", "/root/pypix/simple/", 404, "no such index", -1),
		EI("GET", "/pypi/Simple/", 404, "no such page", 0),
		EI("GET", "/pypi/simplex/", 404, "no such page", 0),
		EI("GET", "/pypi/requests/json", 404, "no such page", 0),
		EI("GET", "/pypi/pypi/requests", 404, "no such page", 0),
		EI("GET", "/pypi/pypi/requests/", 404, "no such page", 0),
		EI("GET", "/pypi/pypi/requests/json/", 404, "no such page", 0),
		EI("GET", "/pypi/pypi/requests/1.0/json/", 404, "no such page",
		   0),
		EI("GET", "/pypi/pypi/requests/1.0/x/json", 404, "no such page",
		   0),
		EI("GET", "/pypi/pypi/requests/1.0", 404, "no such page", 0),
		EI("GET", "/pypi/pypi/-x/json", 404, "no such project", 0),
		EI("GET", "/pypi/pypi/json", 404, "no such page", 0),
		EI("GET", "/pypi/pypi/requests/1%200/json", 400, "bad version",
		   0),
		EI("GET", "/+api/", 404, "no such index", -1),
		EI("GET", "/+API", 404, "no such index", -1),
		EI("GET", "/pypi/simple/requests/json", 404, "no such page", 0),
		EI("GET", "/pypi/simple/requests/x/", 404, "no such page", 0),
		EI("GET", "/pypi/simple/Requests/x", 404, "no such page", 0),
		EI("GET", "/pypi/files", 404, "no such page", 0),
		EI("GET", "/pypi/files/", 404, "no such page", 0),
		EI("GET", "/pypi/files/" SHA, 404, "no such page", 0),
		EI("GET", "/pypi/files/" SHA "/", 404, "no such page", 0),
		EI("GET", "/pypi/files/" SHA "/a/b", 404, "no such page", 0),
		EI("GET", "/pypi/files/" SHA "/" WHL "/", 404, "no such page",
		   0),
		EI("GET", "/pypi/files/nothex", 404, "no such page", 0),
		EI("GET", "/pypi/simple/-x/", 404, "no such project", 0),
		EI("GET", "/pypi/simple/x-/", 404, "no such project", 0),
		EI("GET", "/pypi/simple/-x", 404, "no such project", 0),
		EI("GET", "/pypi/simple/.../", 404, "no such project", 0),
		EI("GET", "/pypi/simple/%2e%2e/", 404, "no such project", 0),
		EI("GET", "/pypi/simple/a%2fb/", 404, "no such project", 0),
		EI("GET", "/pypi/simple/a b/", 404, "no such project", 0),
		EI("GET", "/pypi/simple/a\\b/", 404, "no such project", 0),
		EI("GET", "/pypi/simple/caf\xc3\xa9/", 404, "no such project",
		   0),
		EI("GET", "/pypi/simple/<script>/", 404, "no such project", 0),
		EI("GET", "/%2e%2e/pypi/simple/", 404, "no such index", -1),
	};
	struct conf c;

	make_conf(&c);
	RUN_CASES(&c, cases);
}

T(parse_bad_paths)
{
	static const struct parse_case cases[] = {
		E("GET", NULL, 400, "bad path"),
		E("GET", "", 400, "bad path"),
		E("GET", "pypi/simple/", 400, "bad path"),
		E("GET", "//", 400, "bad path"),
		E("GET", "//pypi/simple/", 400, "bad path"),
		E("GET", "/pypi//simple/", 400, "bad path"),
		E("GET", "/pypi/simple//", 400, "bad path"),
		E("GET", "/pypi/simple//requests/", 400, "bad path"),
		E("GET", "/pypi/files//" WHL, 400, "bad path"),
		E("GET", "/.", 400, "bad path"),
		E("GET", "/..", 400, "bad path"),
		E("GET", "/./pypi/simple/", 400, "bad path"),
		E("GET", "/../pypi/simple/", 400, "bad path"),
		E("GET", "/pypi/./simple/", 400, "bad path"),
		E("GET", "/pypi/../pypi/simple/", 400, "bad path"),
		E("GET", "/root/./pypi/simple/", 400, "bad path"),
		E("GET", "/root/../root/pypi/simple/", 400, "bad path"),
		E("GET", "/pypi/simple/.", 400, "bad path"),
		E("GET", "/pypi/simple/./", 400, "bad path"),
		E("GET", "/pypi/simple/..", 400, "bad path"),
		E("GET", "/pypi/simple/../", 400, "bad path"),
		E("GET", "/pypi/simple/requests/..", 400, "bad path"),
		E("GET", "/pypi/files/../" WHL, 400, "bad path"),
		E("GET", "/pypi/files/" SHA "/..", 400, "bad path"),
		E("GET", "/pypi/files/" SHA "/.", 400, "bad path"),
		E("GET", "/pypi/files/" SHA "/../../etc/passwd", 400,
		  "bad path"),
		E("GET", "/pypi/simple/a\rb/", 400, "bad path"),
		E("GET", "/pypi/simple/a\nb/", 400, "bad path"),
		E("GET", "/pypi/simple/a\tb/", 400, "bad path"),
		E("GET", "/pypi/simple/a\x7f/", 400, "bad path"),
		E("GET", "/pypi/files/" SHA "/x\r\n.whl", 400, "bad path"),
		/* a bad path is a 400 whatever the method */
		E("POST", "/pypi/../x", 400, "bad path"),
		E("DELETE", "//", 400, "bad path"),
	};
	struct conf c;

	make_conf(&c);
	RUN_CASES(&c, cases);
}

T(parse_files)
{
	static const struct parse_case cases[] = {
		FILE_("/pypi/files/" SHA "/" WHL, 0, WHL, 0),
		FILE_("/root/pypi/files/" SHA "/" WHL, 1, WHL, 0),
		FILE_("/pypi/files/" SHA "/" WHL ".metadata", 0, WHL, 1),
		FILE_("/root/pypi/files/" SHA "/" WHL ".metadata", 1, WHL, 1),
		FILE_("/pypi/files/" SHA "/requests-2.31.0.tar.gz", 0,
		      "requests-2.31.0.tar.gz", 0),
		FILE_("/pypi/files/" SHA "/torch-2.2.0+cpu-cp311-none-any.whl",
		      0, "torch-2.2.0+cpu-cp311-none-any.whl", 0),
		FILE_("/pypi/files/" SHA "/x.metadata", 0, "x", 1),
		FILE_("/pypi/files/" SHA "/a.whl.metadata.metadata", 0,
		      "a.whl.metadata", 1),
		FILE_("/pypi/files/" SHA "/a.METADATA", 0, "a.METADATA", 0),
		FILE_("/pypi/files/" SHA "/metadata", 0, "metadata", 0),
		FILE_("/pypi/files/" SHA "/" WHL ".provenance", 0, WHL, 2),
		FILE_("/root/pypi/files/" SHA "/" WHL ".provenance", 1, WHL, 2),
		FILE_("/pypi/files/" SHA "/a.whl.metadata.provenance", 0,
		      "a.whl.metadata", 2),
		FILE_("/pypi/files/" SHA "/a.whl.provenance.metadata", 0,
		      "a.whl.provenance", 1),
		FILE_("/pypi/files/" SHA "/provenance", 0, "provenance", 0),
	};
	static const struct parse_case bad[] = {
		EI("GET", "/pypi/files/" SHA "/.metadata", 400,
		   "bad file name", 0),
		EI("GET", "/pypi/files/" SHA "/..metadata", 400,
		   "bad file name", 0),
		EI("GET", "/pypi/files/" SHA "/.hidden", 400, "bad file name",
		   0),
		EI("GET", "/pypi/files/" SHA "/...", 400, "bad file name", 0),
		EI("GET", "/pypi/files/" SHA "/a b.whl", 400, "bad file name",
		   0),
		EI("GET", "/pypi/files/" SHA "/a%2e%2e", 400, "bad file name",
		   0),
		EI("GET", "/pypi/files/" SHA "/%2e%2e", 400, "bad file name",
		   0),
		EI("GET", "/pypi/files/" SHA "/a\\b", 400, "bad file name", 0),
		EI("GET", "/pypi/files/" SHA "/caf\xc3\xa9.whl", 400,
		   "bad file name", 0),
		EI("GET", "/pypi/files/" SHA "/a\"b.whl", 400, "bad file name",
		   0),
		EI("GET", "/pypi/files/" SHA "/a<b>.whl.metadata", 400,
		   "bad file name", 0),
		EI("GET", "/pypi/files/" SHA "/.provenance", 400,
		   "bad file name", 0),
		EI("GET", "/pypi/files/" SHA "/a<b>.whl.provenance", 400,
		   "bad file name", 0),
	};
	struct conf c;

	make_conf(&c);
	RUN_CASES(&c, cases);
	RUN_CASES(&c, bad);
}

T(parse_bad_sha256)
{
	static const char *const shas[] = {
		/* 63 and 65 digits */
		SHA_A "27ae41e4649b934ca495991b7852b85",
		SHA_A "27ae41e4649b934ca495991b7852b8550",
		/* uppercase */
		("E3B0C44298FC1C149AFBF4C8996FB924"
		 "27AE41E4649B934CA495991B7852B855"),
		"E3b0c44298fc1c149afbf4c8996fb924" SHA_B,
		/* not hex */
		"g3b0c44298fc1c149afbf4c8996fb924" SHA_B,
		SHA_A "27ae41e4649b934ca495991b7852b85z",
		SHA_A "27ae41e4649b934ca495991b7852b8 5",
		SHA_A "+7ae41e4649b934ca495991b7852b855",
		"%2e%2e",
		"...",
		"x",
		"sha256=" SHA,
		/* far longer than the field */
		SHA SHA,
	};
	struct conf c;
	struct route r;
	char path[512];
	size_t i;

	make_conf(&c);
	for (i = 0; i < sizeof(shas) / sizeof(shas[0]); i++) {
		snprintf(path, sizeof(path), "/pypi/files/%s/%s", shas[i],
			 WHL);
		route_parse(&c, "GET", path, &r);
		CHECK_INT(r.kind, ROUTE_ERROR);
		CHECK_INT(r.status, 400);
		CHECK_STR(r.reason, "bad sha256");
		CHECK_STR(r.sha256, "");
		/* also when the file name is bad: the hash is checked first */
		snprintf(path, sizeof(path), "/pypi/files/%s/.x", shas[i]);
		route_parse(&c, "GET", path, &r);
		CHECK_STR(r.reason, "bad sha256");
		/* and a POST is still told about its hash */
		snprintf(path, sizeof(path), "/pypi/files/%s/%s", shas[i],
			 WHL);
		route_parse(&c, "POST", path, &r);
		CHECK_INT(r.status, 400);
	}
}

T(parse_methods)
{
	static const char *const bad[] = {
		"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE",
		"CONNECT", "get", "Get", "head", "", "GET ", " GET", "GETX",
	};
	static const char *const paths[] = {
		"/+health",
		"/metrics",
		"/+stats",
		"/+status",
		"/pypi/simple/",
		"/root/pypi/simple/",
		"/pypi/simple/requests/",
		"/pypi/simple/Requests/",  /* a POST is not redirected */
		"/pypi/simple",
		"/pypi/files/" SHA "/" WHL,
		"/pypi/files/" SHA "/" WHL ".metadata",
		"/+api",
		"/",
		"/pypi/pypi/requests/json",
		"/pypi/pypi/requests/1.0/json",
	};
	struct conf c;
	struct route r;
	size_t i, j;

	make_conf(&c);
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		for (j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			route_parse(&c, bad[j], paths[i], &r);
			CHECK_INT(r.kind, ROUTE_ERROR);
			CHECK_INT(r.status, 405);
			CHECK_STR(r.reason, "method not allowed");
			CHECK_STR(r.location, "");
		}
		route_parse(&c, NULL, paths[i], &r);
		CHECK_INT(r.status, 405);
	}
	/* not found stays not found */
	route_parse(&c, "POST", "/nope/simple/", &r);
	CHECK_INT(r.status, 404);
	route_parse(&c, "POST", "/pypi/simple/-x/", &r);
	CHECK_INT(r.status, 404);
	/* the index root takes reads and uploads, nothing else */
	route_parse(&c, "PATCH", "/pypi/", &r);
	CHECK_INT(r.status, 405);
	route_parse(&c, NULL, "/pypi/", &r);
	CHECK_INT(r.status, 405);
}

T(parse_uploads_and_releases)
{
	struct conf c;
	struct route r;

	make_conf(&c);
	route_parse(&c, "POST", "/root/pypi/", &r);
	CHECK_INT(r.kind, ROUTE_UPLOAD);
	CHECK_INT(r.index, 1);
	route_parse(&c, "POST", "/pypi", &r);
	CHECK_INT(r.kind, ROUTE_UPLOAD);
	CHECK_INT(r.index, 0);
	route_parse(&c, "PUT", "/pypi/", &r);
	CHECK_INT(r.status, 405);
	CHECK_STR(r.allow, "GET, HEAD, POST");

	route_parse(&c, "POST", "/pypi/+yank/Corp_Lib/1.0rc1", &r);
	CHECK_INT(r.kind, ROUTE_YANK);
	CHECK_STR(r.project, "corp-lib");
	CHECK_STR(r.version, "1.0rc1");
	route_parse(&c, "POST", "/pypi/+unyank/corp-lib/2!1.0+local.7", &r);
	CHECK_INT(r.kind, ROUTE_UNYANK);
	CHECK_STR(r.version, "2!1.0+local.7");
	route_parse(&c, "GET", "/pypi/+yank/corp-lib/1.0", &r);
	CHECK_INT(r.status, 405);
	CHECK_STR(r.allow, "POST");
	route_parse(&c, "POST", "/pypi/+yank/corp-lib/1.0/x.whl", &r);
	CHECK_INT(r.status, 404);
	route_parse(&c, "POST", "/pypi/+yank/corp-lib", &r);
	CHECK_INT(r.status, 404);
	route_parse(&c, "POST", "/pypi/+yank/corp-lib/1 0", &r);
	CHECK_INT(r.status, 400);
	CHECK_STR(r.reason, "bad version");
	route_parse(&c, "POST", "/pypi/+yank/-/1.0", &r);
	CHECK_INT(r.status, 404);

	route_parse(&c, "DELETE", "/pypi/+release/corp-lib/1.0", &r);
	CHECK_INT(r.kind, ROUTE_REMOVE);
	CHECK_STR(r.filename, "");
	route_parse(&c, "DELETE",
		    "/pypi/+release/corp-lib/1.0/corp_lib-1.0-py3-none-any.whl",
		    &r);
	CHECK_INT(r.kind, ROUTE_REMOVE);
	CHECK_STR(r.filename, "corp_lib-1.0-py3-none-any.whl");
	route_parse(&c, "DELETE", "/pypi/+release/corp-lib/1.0/..x", &r);
	CHECK_INT(r.status, 400);
	route_parse(&c, "POST", "/pypi/+release/corp-lib/1.0", &r);
	CHECK_INT(r.status, 405);
	CHECK_STR(r.allow, "DELETE");
	/* reads say what they take */
	route_parse(&c, "POST", "/pypi/simple/", &r);
	CHECK_STR(r.allow, "GET, HEAD");
}

T(parse_api_and_landing)
{
	static const struct parse_case cases[] = {
		{ "GET", "/", ROUTE_HOME, 200, NULL, -1, NULL, NULL, 0, NULL },
		{ "HEAD", "/", ROUTE_HOME, 200, NULL, -1, NULL, NULL, 0, NULL },
		{ "GET", "/+api", ROUTE_API, 200, NULL, -1, NULL, NULL, 0,
		  NULL },
		{ "GET", "/pypi/", ROUTE_INDEX_HOME, 200, NULL, 0, NULL, NULL,
		  0, NULL },
		{ "HEAD", "/root/pypi/", ROUTE_INDEX_HOME, 200, NULL, 1, NULL,
		  NULL, 0, NULL },
		REDIR("/pypi", 0, "/pypi/"),
		REDIR("/root/pypi", 1, "/root/pypi/"),
		E("POST", "/", 405, "method not allowed"),
		E("DELETE", "/+api", 405, "method not allowed"),
		REDIR("/pypi/pypi/Requests/json", 0, "/pypi/pypi/requests/json"),
		REDIR("/root/pypi/pypi/Zope.Interface/5.0/json", 1,
		      "/root/pypi/pypi/zope-interface/5.0/json"),
		E("POST", "/pypi/pypi/requests/json", 405,
		  "method not allowed"),
	};
	struct conf c;
	struct route r;

	make_conf(&c);
	RUN_CASES(&c, cases);
	route_parse(&c, "GET", "/root/pypi/pypi/requests/json", &r);
	CHECK_INT(r.kind, ROUTE_JSON);
	CHECK_INT(r.index, 1);
	CHECK_STR(r.project, "requests");
	CHECK_STR(r.version, "");
	route_parse(&c, "HEAD", "/pypi/pypi/requests/2.31.0/json", &r);
	CHECK_INT(r.kind, ROUTE_JSON);
	CHECK_STR(r.project, "requests");
	CHECK_STR(r.version, "2.31.0");
	route_parse(&c, "GET", "/pypi/pypi/requests/1!2.0+local_x/json", &r);
	CHECK_INT(r.kind, ROUTE_JSON);
	CHECK_STR(r.version, "1!2.0+local_x");
	/* an upload still goes to the root, slashed or not */
	route_parse(&c, "POST", "/pypi/", &r);
	CHECK_INT(r.kind, ROUTE_UPLOAD);
	route_parse(&c, "PUT", "/", &r);
	CHECK_STR(r.allow, "GET, HEAD");
}

T(parse_long_names)
{
	char name[6000], path[6100];
	struct conf c;
	struct route r;

	make_conf(&c);
	/* 200 characters: the limit */
	memset(name, 'a', NAMES_MAX_PROJECT);
	name[NAMES_MAX_PROJECT] = '\0';
	snprintf(path, sizeof(path), "/pypi/simple/%s/", name);
	route_parse(&c, "GET", path, &r);
	CHECK_INT(r.kind, ROUTE_SIMPLE_PROJECT);
	CHECK_STR(r.project, name);
	name[0] = 'A';
	snprintf(path, sizeof(path), "/root/pypi/simple/%s/", name);
	route_parse(&c, "GET", path, &r);
	CHECK_INT(r.kind, ROUTE_REDIRECT);
	name[0] = 'a';
	CHECK_INT(strncmp(r.location, "/root/pypi/simple/aaa", 21), 0);
	CHECK_INT(strlen(r.location), 18 + NAMES_MAX_PROJECT + 1);

	/* 201 and 5000 */
	memset(name, 'a', NAMES_MAX_PROJECT + 1);
	name[NAMES_MAX_PROJECT + 1] = '\0';
	snprintf(path, sizeof(path), "/pypi/simple/%s/", name);
	route_parse(&c, "GET", path, &r);
	CHECK_INT(r.status, 404);
	CHECK_STR(r.reason, "no such project");
	snprintf(path, sizeof(path), "/pypi/simple/%s", name);
	route_parse(&c, "GET", path, &r);
	CHECK_INT(r.status, 404);
	memset(name, 'a', 5000);
	name[5000] = '\0';
	snprintf(path, sizeof(path), "/pypi/simple/%s/", name);
	route_parse(&c, "GET", path, &r);
	CHECK_INT(r.status, 404);

	/* file names: 255 is the limit, the .metadata suffix aside */
	memset(name, 'a', NAMES_MAX_FILENAME);
	name[NAMES_MAX_FILENAME] = '\0';
	snprintf(path, sizeof(path), "/pypi/files/%s/%s", SHA, name);
	route_parse(&c, "GET", path, &r);
	CHECK_INT(r.kind, ROUTE_FILE);
	CHECK_STR(r.filename, name);
	snprintf(path, sizeof(path), "/pypi/files/%s/%s.metadata", SHA, name);
	route_parse(&c, "GET", path, &r);
	CHECK_INT(r.kind, ROUTE_FILE);
	CHECK_INT(r.metadata, 1);
	CHECK_STR(r.filename, name);
	strcat(name, "a");
	snprintf(path, sizeof(path), "/pypi/files/%s/%s", SHA, name);
	route_parse(&c, "GET", path, &r);
	CHECK_INT(r.status, 400);
	CHECK_STR(r.reason, "bad file name");
	snprintf(path, sizeof(path), "/pypi/files/%s/%s.metadata", SHA, name);
	route_parse(&c, "GET", path, &r);
	CHECK_INT(r.status, 400);
	memset(name, 'a', 5000);
	name[5000] = '\0';
	snprintf(path, sizeof(path), "/pypi/files/%s/%s", SHA, name);
	route_parse(&c, "GET", path, &r);
	CHECK_INT(r.status, 400);
}

T(parse_longest_index)
{
	struct conf c;
	struct route r;

	memset(&c, 0, sizeof(c));
	c.index[0].name = "root";
	c.index[1].name = "root/pypi";
	c.index[2].name = "pypi";
	c.index[3].name = "pypiextra";
	c.index[4].name = "root/pypi/deep";
	c.nindex = 5;

	route_parse(&c, "GET", "/root/pypi/simple/", &r);
	CHECK_INT(r.kind, ROUTE_SIMPLE_LIST);
	CHECK_INT(r.index, 1);
	route_parse(&c, "GET", "/root/simple/", &r);
	CHECK_INT(r.kind, ROUTE_SIMPLE_LIST);
	CHECK_INT(r.index, 0);
	route_parse(&c, "GET", "/root/pypi/deep/simple/x/", &r);
	CHECK_INT(r.kind, ROUTE_SIMPLE_PROJECT);
	CHECK_INT(r.index, 4);
	route_parse(&c, "GET", "/root/pypi/deeper/simple/", &r);
	CHECK_INT(r.status, 404);
	CHECK_INT(r.index, 1);
	route_parse(&c, "GET", "/pypiextra/simple/", &r);
	CHECK_INT(r.index, 3);
	route_parse(&c, "GET", "/pypiextra/simple", &r);
	CHECK_STR(r.location, "/pypiextra/simple/");
	route_parse(&c, "GET", "/pypi/simple/", &r);
	CHECK_INT(r.index, 2);

	/* the order in the table does not matter */
	c.index[0].name = "root/pypi";
	c.index[1].name = "root";
	route_parse(&c, "GET", "/root/pypi/simple/", &r);
	CHECK_INT(r.index, 0);
	route_parse(&c, "GET", "/root/simple/", &r);
	CHECK_INT(r.index, 1);

	/* with only "root", root/pypi is a page under root: none */
	c.index[0].name = "root";
	c.nindex = 1;
	route_parse(&c, "GET", "/root/pypi/simple/", &r);
	CHECK_INT(r.kind, ROUTE_ERROR);
	CHECK_INT(r.status, 404);
	CHECK_STR(r.reason, "no such page");
	CHECK_INT(r.index, 0);

	/* unnamed slots are skipped */
	c.index[0].name = NULL;
	c.index[1].name = "";
	c.index[2].name = "pypi";
	c.nindex = 3;
	route_parse(&c, "GET", "/pypi/simple/", &r);
	CHECK_INT(r.index, 2);
	route_parse(&c, "GET", "//simple/", &r);
	CHECK_INT(r.status, 400);

	/* no configuration at all */
	route_parse(NULL, "GET", "/pypi/simple/", &r);
	CHECK_INT(r.status, 404);
	CHECK_STR(r.reason, "no such index");
	route_parse(NULL, "GET", "/+health", &r);
	CHECK_INT(r.kind, ROUTE_HEALTH);
	c.nindex = 0;
	route_parse(&c, "GET", "/pypi/simple/", &r);
	CHECK_INT(r.status, 404);
}

T(parse_overlong_location)
{
	static char name[ROUTE_MAX_PATH + 16];
	char path[ROUTE_MAX_PATH + 64];
	struct conf c;
	struct route r;

	memset(&c, 0, sizeof(c));
	memset(name, 'i', ROUTE_MAX_PATH);
	name[ROUTE_MAX_PATH] = '\0';
	c.index[0].name = name;
	c.nindex = 1;
	snprintf(path, sizeof(path), "/%s/simple", name);
	route_parse(&c, "GET", path, &r);
	CHECK_INT(r.kind, ROUTE_ERROR);
	CHECK_INT(r.status, 400);
	CHECK_STR(r.location, "");
	snprintf(path, sizeof(path), "/%s/simple/", name);
	route_parse(&c, "GET", path, &r);
	CHECK_INT(r.kind, ROUTE_SIMPLE_LIST);
}

/* route_request_path */

struct rp_case {
	const char *script_name;
	const char *path_info;
	const char *request_uri;
	int err;
	const char *path;
	const char *mount;
};

static void run_rp(const struct rp_case *tc, size_t n)
{
	char path[ROUTE_MAX_PATH], mount[ROUTE_MAX_PATH];
	size_t i;

	for (i = 0; i < n; i++) {
		int before = t_failed, err;

		strcpy(path, "stale");
		strcpy(mount, "stale");
		err = route_request_path(tc[i].script_name, tc[i].path_info,
					 tc[i].request_uri, path, sizeof(path),
					 mount, sizeof(mount));
		CHECK_INT(err, tc[i].err);
		CHECK_STR(path, tc[i].path);
		CHECK_STR(mount, tc[i].mount);
		if (t_failed != before)
			fprintf(stderr, "  case %zu: \"%s\" \"%s\" \"%s\"\n", i,
				tc[i].script_name ? tc[i].script_name : "-",
				tc[i].path_info ? tc[i].path_info : "-",
				tc[i].request_uri ? tc[i].request_uri : "-");
	}
}

#define RUN_RP(a) run_rp(a, sizeof(a) / sizeof(a[0]))

T(request_path_servers)
{
	static const struct rp_case cases[] = {
		/* nginx at the root, SCRIPT_NAME "" and no PATH_INFO */
		{ "", NULL, "/pypi/simple/requests/?format=json", 0,
		  "/pypi/simple/requests/", "" },
		{ "", "", "/pypi/simple/", 0, "/pypi/simple/", "" },
		{ NULL, NULL, "/pypi/simple/", 0, "/pypi/simple/", "" },
		/* nginx under a prefix */
		{ "/larder", NULL, "/larder/pypi/simple/?x=1", 0,
		  "/pypi/simple/", "/larder" },
		{ "/larder", NULL, "/larder", 0, "/", "/larder" },
		{ "/larder", NULL, "/larder/", 0, "/", "/larder" },
		{ "/larder", NULL, "/larder?x", 0, "/", "/larder" },
		{ "/larder/", NULL, "/larder/pypi/", 0, "/pypi/", "/larder" },
		{ "/a/b", NULL, "/a/b/pypi/", 0, "/pypi/", "/a/b" },
		/* a prefix only counts at a '/' boundary */
		{ "/larder", NULL, "/larderx/pypi/", 0, "/larderx/pypi/", "" },
		{ "/larder", NULL, "/other/pypi/", 0, "/other/pypi/", "" },
		{ "/larder", NULL, "/lard", 0, "/lard", "" },
		{ "/larder", NULL, "/Larder/pypi/", 0, "/Larder/pypi/", "" },
		/* the prefix is compared decoded */
		{ "/larder", NULL, "/%6carder/pypi/", 0, "/pypi/", "/larder" },
		{ "/lar der", NULL, "/lar%20der/pypi/", 0, "/pypi/",
		  "/lar der" },
		/* lighttpd with a prefix */
		{ "/larder", "/root/pypi/simple/", "/larder/root/pypi/simple/",
		  0, "/root/pypi/simple/", "/larder" },
		/* PATH_INFO wins even when REQUEST_URI disagrees */
		{ "/larder", "/pypi/simple/", "/elsewhere", 0, "/pypi/simple/",
		  "/larder" },
		{ "/larder", "/pypi/simple/", NULL, 0, "/pypi/simple/",
		  "/larder" },
		/* Apache ScriptAlias / */
		{ "", "/pypi/simple/", "/pypi/simple/", 0, "/pypi/simple/",
		  "" },
		{ "/", "/pypi/simple/", "/pypi/simple/", 0, "/pypi/simple/",
		  "" },
		{ "/", NULL, "/pypi/simple/", 0, "/pypi/simple/", "" },
		{ "//", NULL, "/pypi/simple/", 0, "/pypi/simple/", "" },
		/* plain CGI: /cgi-bin/larder.cgi/pypi/... */
		{ "/cgi-bin/larder.cgi", "/pypi/simple/",
		  "/cgi-bin/larder.cgi/pypi/simple/", 0, "/pypi/simple/",
		  "/cgi-bin/larder.cgi" },
		{ "/cgi-bin/larder.cgi", NULL, "/cgi-bin/larder.cgi", 0, "/",
		  "/cgi-bin/larder.cgi" },
		/* PATH_INFO is taken as the server decoded it */
		{ "", "/pypi/simple/%2e%2e/", NULL, 0, "/pypi/simple/%2e%2e/",
		  "" },
		{ "", "/pypi/simple/a b/", NULL, 0, "/pypi/simple/a b/", "" },
		/* nothing at all */
		{ NULL, NULL, NULL, 0, "/", "" },
		{ "", "", "", 0, "/", "" },
		{ "", NULL, "?format=json", 0, "/", "" },
		/* absolute-form request targets */
		{ "", NULL, "http://example.com/pypi/simple/?x", 0,
		  "/pypi/simple/", "" },
		{ "", NULL, "HTTPS://example.com:443/pypi/", 0, "/pypi/", "" },
		{ "", NULL, "http://example.com", 0, "/", "" },
		{ "", NULL, "http://example.com?x=/y", 0, "/", "" },
		{ "/larder", NULL, "https://h/larder/pypi/", 0, "/pypi/",
		  "/larder" },
	};

	RUN_RP(cases);
}

T(request_path_decoding)
{
	static const struct rp_case cases[] = {
		{ "", NULL, "/pypi/simple/re%71uests/", 0,
		  "/pypi/simple/requests/", "" },
		{ "", NULL, "/pypi/simple/%52equests/", 0,
		  "/pypi/simple/Requests/", "" },
		{ "", NULL, "/%41%4a%4A", 0, "/AJJ", "" },
		{ "", NULL, "/a+b", 0, "/a+b", "" },
		{ "", NULL, "/a%2bb", 0, "/a+b", "" },
		{ "", NULL, "/%25", 0, "/%", "" },
		{ "", NULL, "/caf%C3%A9", 0, "/caf\xc3\xa9", "" },
		{ "", NULL, "/%ff", 0, "/\xff", "" },
		{ "", NULL, "/a%3fb?c", 0, "/a?b", "" },
		{ "", NULL, "/a#b", 0, "/a#b", "" },
		{ "", NULL, "/%2e%2e/", 0, "/../", "" },
		{ "", NULL, "/%2E%2e/", 0, "/../", "" },
		/* decoded once only */
		{ "", NULL, "/pypi/simple/%252e%252e/", 0,
		  "/pypi/simple/%2e%2e/", "" },
		{ "", NULL, "/%252F", 0, "/%2F", "" },
		{ "", NULL, "/%2500", 0, "/%00", "" },
		/* a raw backslash is just a byte; names refuse it later */
		{ "", NULL, "/a\\b", 0, "/a\\b", "" },
	};
	static const char *const bad[] = {
		"/a%00b", "/%00", "/a%2Fb", "/a%2fb", "/a%5Cb", "/a%5cb",
		"/%2e%2e%2f", "/a%0d%0ab", "/a%0Db", "/a%0ab", "/a%09b",
		"/a%1fb", "/a%7fb", "/a%7Fb", "/a%01", "/a%", "/a%4",
		"/a%4?x", "/a%?x", "/a%zz", "/a%g0", "/a%0g", "/a% 1",
		"/a%-1", "/a%+1", "/a\rb", "/a\nb", "/a\tb", "/a\x7f",
		"/a\x01", "a/b", "*", "pypi/simple/", "ftp://h/x",
		"/%2e%2e%5c", "/..%2f..%2fetc%2fpasswd",
	};
	char path[64], mount[64];
	size_t i;

	RUN_RP(cases);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err;

		strcpy(path, "stale");
		strcpy(mount, "stale");
		err = route_request_path("", NULL, bad[i], path, sizeof(path),
					 mount, sizeof(mount));
		CHECK_INT(err, EINVAL);
		CHECK_STR(path, "");
		CHECK_STR(mount, "");
		if (err != EINVAL)
			fprintf(stderr, "  bad %zu: \"%s\"\n", i, bad[i]);
	}
}

T(request_path_rejects)
{
	static const struct rp_case cases[] = {
		/* PATH_INFO must be a path, without control bytes */
		{ "", "pypi/simple/", NULL, EINVAL, "", "" },
		{ "", "/pypi/a\rb/", NULL, EINVAL, "", "" },
		{ "", "/pypi/a\nb/", NULL, EINVAL, "", "" },
		{ "", "/pypi/a\x7f", NULL, EINVAL, "", "" },
		{ "", "/pypi/a\x1b", NULL, EINVAL, "", "" },
		/* so must SCRIPT_NAME, which ends up in Location */
		{ "/lar\r\nder", "/pypi/", NULL, EINVAL, "", "" },
		{ "/lar\nder", NULL, "/pypi/", EINVAL, "", "" },
		/* a bad escape after the mount */
		{ "/larder", NULL, "/larder/a%00", EINVAL, "", "" },
		/* a bad escape inside what looks like the mount */
		{ "/larder", NULL, "/lar%00der/", EINVAL, "", "" },
	};

	RUN_RP(cases);
}

T(request_path_lengths)
{
	char path[8], mount[8];
	char big[ROUTE_MAX_PATH + 8], out[ROUTE_MAX_PATH], m[4];

	CHECK_INT(route_request_path("", NULL, "/234567", path, sizeof(path),
				     mount, sizeof(mount)),
		  0);
	CHECK_STR(path, "/234567");
	CHECK_INT(route_request_path("", NULL, "/2345678", path, sizeof(path),
				     mount, sizeof(mount)),
		  ENAMETOOLONG);
	CHECK_STR(path, "");
	CHECK_INT(route_request_path("", "/2345678", NULL, path, sizeof(path),
				     mount, sizeof(mount)),
		  ENAMETOOLONG);
	CHECK_STR(path, "");
	/* the limit is on the decoded path */
	CHECK_INT(route_request_path("", NULL, "/%41%41%41%41%41%41", path,
				     sizeof(path), mount, sizeof(mount)),
		  0);
	CHECK_STR(path, "/AAAAAA");
	/* and on what is left once the mount is gone */
	CHECK_INT(route_request_path("/larder", NULL, "/larder/pypi/x", path,
				     sizeof(path), mount, sizeof(mount)),
		  0);
	CHECK_STR(path, "/pypi/x");
	CHECK_STR(mount, "/larder");
	/* the mount must fit too */
	CHECK_INT(route_request_path("/larder", "/x", NULL, path, sizeof(path),
				     m, sizeof(m)),
		  ENAMETOOLONG);
	CHECK_STR(path, "");
	CHECK_STR(m, "");
	CHECK_INT(route_request_path("/larder", NULL, "/larder/x", path,
				     sizeof(path), m, sizeof(m)),
		  ENAMETOOLONG);
	CHECK_INT(route_request_path("/ab/", "/x", NULL, path, sizeof(path), m,
				     sizeof(m)),
		  0);
	CHECK_STR(m, "/ab");
	/* a "/" that nothing is left of still needs two bytes */
	CHECK_INT(route_request_path("", NULL, "/", path, 1, mount,
				     sizeof(mount)),
		  ENAMETOOLONG);
	CHECK_INT(route_request_path("", NULL, "/", path, 0, mount, 0),
		  ENAMETOOLONG);

	/* ROUTE_MAX_PATH - 1 bytes fit, ROUTE_MAX_PATH do not */
	big[0] = '/';
	memset(big + 1, 'a', ROUTE_MAX_PATH - 2);
	big[ROUTE_MAX_PATH - 1] = '\0';
	CHECK_INT(route_request_path("", NULL, big, out, sizeof(out), mount,
				     sizeof(mount)),
		  0);
	CHECK_INT(strlen(out), ROUTE_MAX_PATH - 1);
	big[ROUTE_MAX_PATH - 1] = 'a';
	big[ROUTE_MAX_PATH] = '\0';
	CHECK_INT(route_request_path("", NULL, big, out, sizeof(out), mount,
				     sizeof(mount)),
		  ENAMETOOLONG);
	CHECK_INT(route_request_path("", big, NULL, out, sizeof(out), mount,
				     sizeof(mount)),
		  ENAMETOOLONG);
}

/* The whole trip a request makes: REQUEST_URI to route. A decoding error
 * is what the caller answers with a 400. Returns the status. */
static int trip(const char *method, const char *uri, struct route *r)
{
	char path[ROUTE_MAX_PATH], mount[ROUTE_MAX_PATH];
	struct conf c;

	make_conf(&c);
	memset(r, 0, sizeof(*r));
	if (route_request_path("/larder", NULL, uri, path, sizeof(path),
			       mount, sizeof(mount)) != 0)
		return 400;
	route_parse(&c, method, path, r);
	return r->status;
}

struct trip_case {
	const char *uri;
	int status;
};

T(end_to_end_traversal)
{
	static const struct trip_case cases[] = {
		/* the good ones, for contrast */
		{ "/larder/pypi/simple/requests/", 200 },
		{ "/larder/pypi/simple/requests/?format=json", 200 },
		{ "/larder/pypi/simple/%52equests/", 301 },
		{ "/larder/pypi/files/" SHA "/" WHL, 200 },
		{ "/larder/%2bhealth", 200 },
		/* the index segment */
		{ "/larder/../pypi/simple/", 400 },
		{ "/larder/%2e%2e/pypi/simple/", 400 },
		{ "/larder/%2E%2E/pypi/simple/", 400 },
		{ "/larder/.%2e/pypi/simple/", 400 },
		{ "/larder/%2e./pypi/simple/", 400 },
		{ "/larder/%252e%252e/pypi/simple/", 404 },
		{ "/larder/%2e%2e%00/pypi/simple/", 400 },
		{ "/larder/..%00/pypi/simple/", 400 },
		{ "/larder/%00/pypi/simple/", 400 },
		{ "/larder/pypi%2fsimple/", 400 },
		{ "/larder/root%2fpypi/simple/", 400 },
		{ "/larder/root/../pypi/simple/", 400 },
		{ "/larder/root/%2e%2e/pypi/simple/", 400 },
		{ "/larder/root/%252e%252e/pypi/simple/", 404 },
		{ "/larder/root/pypi/%2e%2e/simple/", 400 },
		{ "/larder/./pypi/simple/", 400 },
		{ "/larder/%2e/pypi/simple/", 400 },
		/* the "simple" segment */
		{ "/larder/pypi/../simple/", 400 },
		{ "/larder/pypi/%2e%2e/simple/", 400 },
		{ "/larder/pypi/%252e%252e/simple/", 404 },
		{ "/larder/pypi/simple%00/", 400 },
		{ "/larder/pypi/%2e/simple/", 400 },
		/* the project segment */
		{ "/larder/pypi/simple/../", 400 },
		{ "/larder/pypi/simple/..", 400 },
		{ "/larder/pypi/simple/%2e%2e/", 400 },
		{ "/larder/pypi/simple/%2e%2e", 400 },
		{ "/larder/pypi/simple/%252e%252e/", 404 },
		{ "/larder/pypi/simple/%252e%252e", 404 },
		{ "/larder/pypi/simple/%2e%2e%2f%2e%2e/", 400 },
		{ "/larder/pypi/simple/..%2f..%2f/", 400 },
		{ "/larder/pypi/simple/..%5c..%5c/", 400 },
		{ "/larder/pypi/simple/requests%00/", 400 },
		{ "/larder/pypi/simple/%00requests/", 400 },
		{ "/larder/pypi/simple/%2e/", 400 },
		{ "/larder/pypi/simple/./", 400 },
		/* CR/LF smuggled into names */
		{ "/larder/pypi/simple/foo%0d%0aSet-Cookie:%20x/", 400 },
		{ "/larder/pypi/simple/foo%0a/", 400 },
		{ "/larder/pypi/simple/foo%0D/", 400 },
		{ "/larder/pypi/simple/foo%250d%250a/", 404 },
		{ "/larder/pypi/files/" SHA "/x%0d%0a.whl", 400 },
		{ "/larder/pypi/files/" SHA "%0a/x.whl", 400 },
		/* the files segments */
		{ "/larder/pypi/files/../" SHA "/x.whl", 400 },
		{ "/larder/pypi/files/%2e%2e/x.whl", 400 },
		{ "/larder/pypi/files/%252e%252e/x.whl", 400 },
		{ "/larder/pypi/files/%00/x.whl", 400 },
		{ "/larder/pypi/files/" SHA "/..", 400 },
		{ "/larder/pypi/files/" SHA "/%2e%2e", 400 },
		{ "/larder/pypi/files/" SHA "/%252e%252e", 400 },
		{ "/larder/pypi/files/" SHA "/..%2f..%2fetc%2fpasswd", 400 },
		{ "/larder/pypi/files/" SHA "/..%5c..%5cetc", 400 },
		{ "/larder/pypi/files/" SHA "/x.whl%00", 400 },
		{ "/larder/pypi/files/" SHA "/x.whl%00.metadata", 400 },
		{ "/larder/pypi/files/" SHA "/%2e%2e.metadata", 400 },
		{ "/larder/pypi/files/" SHA "/%2ex.whl", 400 },
		/* outside the mount (a rewrite): the whole path is routed */
		{ "/pypi/simple/", 200 },
		{ "/nope/simple/", 404 },
		{ "/larder%2fpypi/simple/", 400 },
	};
	struct route r;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = trip("GET", cases[i].uri, &r);

		CHECK_INT(got, cases[i].status);
		if (got != cases[i].status)
			fprintf(stderr, "  case %zu: \"%s\" (%s)\n", i,
				cases[i].uri, r.reason ? r.reason : "-");
	}
	/* POST: still 400 for a bad path, 405 for a good one */
	CHECK_INT(trip("POST", "/larder/pypi/simple/%2e%2e/", &r), 400);
	CHECK_INT(trip("POST", "/larder/pypi/simple/requests/", &r), 405);
}

int main(void)
{
	RUN(parse_pages);
	RUN(parse_redirects);
	RUN(parse_not_found);
	RUN(parse_bad_paths);
	RUN(parse_files);
	RUN(parse_bad_sha256);
	RUN(parse_methods);
	RUN(parse_long_names);
	RUN(parse_longest_index);
	RUN(parse_overlong_location);
	RUN(request_path_servers);
	RUN(request_path_decoding);
	RUN(parse_uploads_and_releases);
	RUN(parse_api_and_landing);
	RUN(request_path_rejects);
	RUN(request_path_lengths);
	RUN(end_to_end_traversal);
	return t_done();
}
