#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/http/accept.h"
#include "tests/unit/t.h"

#define N ACCEPT_NONE
#define J ACCEPT_JSON
#define H ACCEPT_HTML

#define V1J "application/vnd.pypi.simple.v1+json"
#define LJ  "application/vnd.pypi.simple.latest+json"
#define V1H "application/vnd.pypi.simple.v1+html"
#define LH  "application/vnd.pypi.simple.latest+html"

struct accept_case {
	const char *header;
	enum accept_format want;
};

static void run_cases(const struct accept_case *tc, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		enum accept_format got = accept_choose(tc[i].header);

		CHECK_INT(got, tc[i].want);
		if (got != tc[i].want)
			fprintf(stderr, "  case %zu: \"%s\"\n", i,
				tc[i].header ? tc[i].header : "(null)");
	}
}

#define RUN_CASES(a) run_cases(a, sizeof(a) / sizeof(a[0]))

T(real_clients)
{
	static const struct accept_case cases[] = {
		/* pip */
		{ V1J ", " V1H "; q=0.1, text/html; q=0.01", J },
		/* uv */
		{ V1J ", " V1H ";q=0.2, text/html;q=0.01", J },
		/* a browser */
		{ "text/html,application/xhtml+xml,application/xml;q=0.9,"
		  "*/*;q=0.8",
		  H },
		/* Firefox, with image types */
		{ "text/html,application/xhtml+xml,application/xml;q=0.9,"
		  "image/avif,image/webp,*/*;q=0.8",
		  H },
		/* curl, wget */
		{ "*/*", H },
		/* old pip, PEP 503 only */
		{ "text/html", H },
		/* Java's default, whose ".2" is not a qvalue */
		{ "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2", H },
		/* a client that wants only JSON */
		{ V1J, J },
		{ LJ, J },
		/* poetry-ish: JSON preferred, HTML fallback */
		{ V1J ";q=0.9, " V1H ";q=0.5", J },
		/* a client that prefers HTML */
		{ V1J ";q=0.5, " V1H, H },
	};

	RUN_CASES(cases);
}

T(empty_and_null)
{
	static const struct accept_case cases[] = {
		{ NULL, H },
		{ "", H },
		{ " ", H },
		{ "\t", H },
		{ ",", H },
		{ " , ,, ", H },
	};

	RUN_CASES(cases);
}

T(unknown_types)
{
	static const struct accept_case cases[] = {
		{ "application/json", N },
		{ "application/xml", N },
		{ "image/png, application/octet-stream", N },
		{ "application/*", N },
		{ "text/plain", N },
		{ "text/htmlx", N },
		{ "text/htm", N },
		{ "xtext/html", N },
		{ "html", N },
		{ "text", N },
		{ "*", N },
		{ "/", N },
		{ "*/html", N },
		{ "garbage", N },
		{ ";q=1", N },
		{ "application/vnd.pypi.simple.v2+json", N },
		{ "application/vnd.pypi.simple+json", N },
		{ "application/vnd.pypi.simple.v1+json2", N },
		/* unknown types around a known one do not matter */
		{ "image/png, " V1J ", text/plain", J },
		{ "application/json;q=1, text/html;q=0.1", H },
	};

	RUN_CASES(cases);
}

T(q_values)
{
	static const struct accept_case cases[] = {
		{ V1J ";q=1", J },
		{ V1J ";q=1.", J },
		{ V1J ";q=1.0", J },
		{ V1J ";q=1.00", J },
		{ V1J ";q=1.000", J },
		{ V1J ";q=0.5", J },
		{ V1J ";q=0.001", J },
		{ V1J ";q=0.", N },
		{ V1J ";q=0", N },
		{ V1J ";q=0.0", N },
		{ V1J ";q=0.000", N },
		/* invalid: the range is dropped */
		{ V1J ";q=1.5", N },
		{ V1J ";q=1.001", N },
		{ V1J ";q=2", N },
		{ V1J ";q=-1", N },
		{ V1J ";q=-0", N },
		{ V1J ";q=.5", N },
		{ V1J ";q=0.0001", N },
		{ V1J ";q=0.5000", N },
		{ V1J ";q=1.0000", N },
		{ V1J ";q=", N },
		{ V1J ";q", N },
		{ V1J ";q=0.5x", N },
		{ V1J ";q=0,5", N },
		{ V1J ";q=\"0.5\"", N },
		{ V1J ";q=0x1", N },
		{ V1J ";q=1e0", N },
		{ V1J ";q=99999999999999999999", N },
		/* an invalid q drops only its own range */
		{ V1J ";q=1.5, text/html;q=0.1", H },
		{ V1J ", text/html;q=7", J },
		/* the first q counts; a later one is an extension parameter */
		{ V1J ";q=0.5;q=0, text/html;q=0.4", J },
		{ V1J ";q=0;q=1, text/html;q=0.4", H },
		/* three decimals are compared exactly */
		{ V1J ";q=0.501, text/html;q=0.5", J },
		{ V1J ";q=0.499, text/html;q=0.5", H },
		{ V1J ";q=0.01, text/html;q=0.001", J },
		{ V1J ";q=0.001, text/html;q=0.01", H },
	};

	RUN_CASES(cases);
}

T(whitespace_and_case)
{
	static const struct accept_case cases[] = {
		{ "  " V1J "  ", J },
		{ "\t" V1J "\t;\tq=0.5\t,\ttext/html\t;\tq=0.4\t", J },
		{ V1J " ; q = 0.3 , text/html ; q = 0.4", H },
		{ V1J ";Q=0.3, text/html;Q=0.4", H },
		{ "APPLICATION/VND.PYPI.SIMPLE.V1+JSON", J },
		{ "Application/Vnd.Pypi.Simple.Latest+Json", J },
		{ "TEXT/HTML", H },
		{ "Text/*", H },
		{ "text / html", H },
		{ ",,," V1J ",,,", J },
		{ V1J ",text/html;q=0.9", J },
		{ "text/html;q=0.9," V1J, J },
	};

	RUN_CASES(cases);
}

T(parameters)
{
	static const struct accept_case cases[] = {
		/* media type parameters are ignored for matching */
		{ "text/html;charset=utf-8", H },
		{ "text/html; level=1; q=0.5, " V1J "; q=0.4", H },
		{ V1J "; charset=utf-8; q=0.4, text/html;q=0.5", H },
		/* malformed parameters are ignored */
		{ V1J ";;;", J },
		{ V1J "; ; q=0.4, text/html;q=0.5", H },
		{ V1J ";foo, text/html;q=0.5", J },
		{ V1J ";=, text/html;q=0.5", J },
		{ V1J ";=0, text/html;q=0.5", J },
		{ V1J ";qq=0, text/html;q=0.5", J },
		/* quoted values may hold ',' and ';' */
		{ V1J ";foo=\"a,text/html\", text/plain", J },
		{ V1J ";foo=\"a;q=0\";q=0.4, text/html;q=0.5", H },
		{ V1J ";foo=\"a\\\"b,c\";q=0.6, text/html;q=0.5", J },
		{ "text/plain;foo=\"a, " V1J "\"", N },
		/* an unterminated quote swallows the rest */
		{ "text/plain;foo=\"a, " V1J, N },
		{ V1J ";foo=\"", J },
		{ V1J ";foo=\"\\", J },
	};

	RUN_CASES(cases);
}

T(wildcards_and_exclusion)
{
	static const struct accept_case cases[] = {
		{ "text/*", H },
		{ "*/*;q=0.1", H },
		{ "*/*;q=0", N },
		{ "text/*;q=0", N },
		/* a wildcard never gives JSON */
		{ "*/*, text/html;q=0", N },
		/* an explicit q=0 beats a wildcard */
		{ "text/html;q=0, */*", N },
		{ "text/html;q=0, text/*", N },
		{ "text/*;q=0, */*", N },
		{ V1H ";q=0, */*", N },
		{ V1J ";q=0, */*", H },
		{ V1J ";q=0, " LJ ";q=0, */*", H },
		{ "*/*, " V1J ";q=0", H },
		/* another name for the same format still counts */
		{ "text/html;q=0, " V1H ";q=0.5", H },
		{ V1J ";q=0, " LJ ";q=0.5, text/html;q=0.4", J },
		{ V1J ";q=0, " LJ ";q=0.3, text/html;q=0.4", H },
		/* the most specific match decides, not the largest q */
		{ "text/html;q=0.5, */*;q=0.9, " V1J ";q=0.7", J },
		{ "text/*;q=0.5, */*;q=0.9, " V1J ";q=0.7", J },
		{ "text/html;q=0.8, text/*;q=0.1, " V1J ";q=0.7", H },
		{ "*/*;q=0.9, " V1J ";q=0.7", H },
		{ "text/*;q=0.9, " V1J ";q=0.7", H },
		{ "text/html;q=0, " V1J ";q=0", N },
		{ "text/html;q=0, " V1J ";q=0.001", J },
	};

	RUN_CASES(cases);
}

T(ties)
{
	static const struct accept_case cases[] = {
		/* both explicit: JSON */
		{ "text/html, " V1J, J },
		{ V1H ", " V1J, J },
		{ "text/html;q=0.5, " V1J ";q=0.5", J },
		{ LH ";q=0.3, " LJ ";q=0.3", J },
		/* HTML only through a wildcard: JSON */
		{ "*/*, " V1J, J },
		{ "*/*;q=0.5, " V1J ";q=0.5", J },
		{ "text/*;q=0.5, " V1J ";q=0.5", J },
	};

	RUN_CASES(cases);
}

T(long_header)
{
	size_t n = 100000, i;
	char *h = malloc(n + sizeof(V1J));

	CHECK(h != NULL);
	if (!h)
		return;
	for (i = 0; i < n; i++)
		h[i] = (i % 10 == 9) ? ',' : 'x';
	strcpy(h + n, V1J);
	CHECK_INT(accept_choose(h), J);
	memset(h, ' ', n);
	CHECK_INT(accept_choose(h), J);
	memset(h, ';', n);
	h[0] = ',';
	CHECK_INT(accept_choose(h), N);
	free(h);
}

T(from_format)
{
	CHECK_INT(accept_from_format(V1J), J);
	CHECK_INT(accept_from_format(LJ), J);
	CHECK_INT(accept_from_format(V1H), H);
	CHECK_INT(accept_from_format(LH), H);
	CHECK_INT(accept_from_format("text/html"), H);
	CHECK_INT(accept_from_format("Application/VND.pypi.simple.v1+JSON"),
		  J);
	CHECK_INT(accept_from_format("TEXT/HTML"), H);
	CHECK_INT(accept_from_format(NULL), N);
	CHECK_INT(accept_from_format(""), N);
	CHECK_INT(accept_from_format("json"), N);
	CHECK_INT(accept_from_format("*/*"), N);
	CHECK_INT(accept_from_format("text/*"), N);
	CHECK_INT(accept_from_format(V1J ";q=1"), N);
	CHECK_INT(accept_from_format(V1J ", text/html"), N);
	CHECK_INT(accept_from_format(" " V1J), N);
	CHECK_INT(accept_from_format(V1J " "), N);
	CHECK_INT(accept_from_format("application/vnd.pypi.simple.v1+jso"), N);
	CHECK_INT(accept_from_format("application/vnd.pypi.simple.v1+jsonx"),
		  N);
	CHECK_INT(accept_from_format("text/plain"), N);
}

T(content_type)
{
	CHECK_STR(accept_content_type(ACCEPT_JSON), V1J);
	CHECK_STR(accept_content_type(ACCEPT_HTML), "text/html; charset=utf-8");
	CHECK_STR(accept_content_type(ACCEPT_NONE),
		  "text/plain; charset=utf-8");
	CHECK_STR(accept_content_type((enum accept_format)42),
		  "text/plain; charset=utf-8");
}

T(gzip)
{
	static const struct {
		const char *h;
		int want;
	} cases[] = {
		{NULL, 0},
		{"", 0},
		{"identity", 0},
		{"gzip", 1},
		{"gzip, deflate", 1},               /* pip (requests) */
		{"gzip, deflate, br, zstd", 1},     /* uv */
		{"GZip", 1},
		{"x-gzip", 1},
		{"br", 0},
		{"deflate, br", 0},
		{"*", 0},                           /* as nginx's gzip_static */
		{"*;q=0", 0},
		{"br, *;q=0.1", 0},
		{"*, gzip;q=0.1", 1},
		{"gzip;q=0", 0},
		{"gzip; q=0.000", 0},
		{"gzip;q=0.001", 1},
		{"gzip ; Q = 0.5 , br", 1},
		{"gzip;q=0, *", 0},                 /* named beats the wildcard */
		{"*, gzip;q=0", 0},
		{"*;q=0, gzip", 1},
		{"gzip;q=0.5, *;q=0", 1},
		{"gzip;q=0, gzip;q=1", 1},          /* the highest q wins */
		{"gzip;q=2", 0},                    /* no qvalue: left out */
		{"gzip;q=", 0},
		{"gzip;q", 0},
		{"gzip;q=abc, *", 0},
		{"gzip;q=abc, gzip", 1},
		{"gzip;level=\"9;q=0\"", 1},       /* quoted ; is no parameter */
		{"gzipx", 0},
		{"x gzip", 0},
		{",,, gzip ,,", 1},
		{"gzip;q=1;q=0", 1},                /* the first q counts */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = accept_gzip(cases[i].h);

		CHECK_INT(got, cases[i].want);
		if (got != cases[i].want)
			fprintf(stderr, "  case %zu: \"%s\"\n", i,
				cases[i].h ? cases[i].h : "(null)");
	}
}

int main(void)
{
	RUN(real_clients);
	RUN(empty_and_null);
	RUN(unknown_types);
	RUN(q_values);
	RUN(whitespace_and_case);
	RUN(parameters);
	RUN(wildcards_and_exclusion);
	RUN(ties);
	RUN(long_header);
	RUN(from_format);
	RUN(content_type);
	RUN(gzip);
	return t_done();
}
