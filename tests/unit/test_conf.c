#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "common/buf.h"
#include "common/conf.h"
#include "common/url.h"
#include "tests/unit/t.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif
#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#ifndef LOCALSTATEDIR
#define LOCALSTATEDIR "/var"
#endif

static char errbuf[1024];

/* A registry's trusted_hosts unless set. */
#define REGISTRY_HOSTS                                                         \
	"production.cloudflare.docker.com *.cloudflarestorage.com "            \
	"*.cloudfront.net pkg-containers.githubusercontent.com *.quay.io "     \
	"storage.googleapis.com"

/* Parses text over the defaults into c (which the caller frees). */
static int parse(struct conf *c, const char *text)
{
	int rc = conf_defaults(c);

	errbuf[0] = '\0';
	if (rc)
		return rc;
	return conf_parse(c, "larder.conf", text, strlen(text), errbuf,
	                  sizeof(errbuf));
}

/* Parses text over the defaults, expecting EINVAL; returns the message. */
static const char *fails(const char *text)
{
	struct conf c;
	int rc = parse(&c, text);

	if (rc != EINVAL) {
		fprintf(stderr, "  parse gave %d, want EINVAL, for:\n%s\n", rc,
		        text);
		t_failed++;
	}
	conf_free(&c);
	return errbuf;
}

/* Parses "[larder]\nKEY = VALUE\n", expecting success, into c. */
static int parse_larder(struct conf *c, const char *key, const char *value)
{
	char text[512];
	int rc;

	snprintf(text, sizeof(text), "[larder]\n%s = %s\n", key, value);
	rc = parse(c, text);
	if (rc)
		fprintf(stderr, "  %s: %s\n", text, errbuf);
	return rc;
}

static const char *fails_larder(const char *key, const char *value)
{
	char text[512];

	snprintf(text, sizeof(text), "[larder]\n%s = %s\n", key, value);
	return fails(text);
}

/* A cache index "c" with upstream value; expects success. */
static int parse_upstream(struct conf *c, const char *value)
{
	char text[512];
	int rc;

	snprintf(text, sizeof(text),
	         "[index \"c\"]\ntype = cache\nupstream = %s\n", value);
	rc = parse(c, text);
	if (rc)
		fprintf(stderr, "  %s: %s\n", text, errbuf);
	return rc;
}

static const char *dump(const struct conf *c, struct buf *b)
{
	buf_init(b, 1 << 20);
	CHECK_INT(conf_dump(c, b), 0);
	return buf_str(b);
}

static char *read_all(const char *path)
{
	struct buf b;
	char chunk[4096];
	size_t n;
	FILE *f = fopen(path, "r");

	buf_init(&b, 1 << 20);
	if (!f)
		return NULL;
	for (;;) {
		n = fread(chunk, 1, sizeof(chunk), f);
		if (n == 0)
			break;
		if (buf_add(&b, chunk, n))
			break;
	}
	fclose(f);
	return buf_steal(&b);
}

/* Writes text to a new temp file; returns its path (to free). */
static char *temp_file(const char *text)
{
	char *path = strdup("/tmp/test_conf.XXXXXX");
	int fd;

	if (!path)
		return NULL;
	fd = mkstemp(path);
	if (fd < 0) {
		free(path);
		return NULL;
	}
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		t_failed++;
	close(fd);
	return path;
}

T(defaults)
{
	struct conf c;

	CHECK_INT(conf_defaults(&c), 0);
	CHECK_STR(c.data_dir, LOCALSTATEDIR "/lib/larder");
	CHECK_INT(c.sendfile, CONF_SENDFILE_ACCEL);
	CHECK_STR(c.sendfile_prefix, "/_larder/");
	CHECK_INT(c.cache_ttl, 300);
	CHECK_INT(c.max_stale, 86400);
	CHECK_INT(c.negative_ttl, 30);
	CHECK_INT(c.connect_timeout, 10);
	CHECK_INT(c.fetch_timeout, 60);
	CHECK_INT(c.max_page_size, 64L * 1024 * 1024);
	CHECK_INT(c.trust_forwarded, 0);
	CHECK_INT(c.max_requests, 10000);
	CHECK_INT(c.workers, 4);
	CHECK(c.source == NULL);
	CHECK_INT(c.nindex, 2);
	CHECK_STR(c.index[0].name, "pypi");
	CHECK_INT(c.index[0].type, CONF_INDEX_CACHE);
	CHECK_STR(c.index[0].upstream, "https://pypi.org/simple/");
	CHECK_STR(c.index[0].trusted_hosts, "files.pythonhosted.org");
	CHECK(c.index[0].layers == NULL);
	CHECK_INT(c.index[0].nlayers, 0);
	CHECK_STR(c.index[1].name, "root/pypi");
	CHECK_INT(c.index[1].type, CONF_INDEX_VIRTUAL);
	CHECK_STR(c.index[1].layers, "pypi");
	CHECK_INT(c.index[1].nlayers, 1);
	CHECK_INT(c.index[1].layer[0], 0);
	CHECK(c.index[1].upstream == NULL);
	CHECK_INT(c.nregistry, 1);
	CHECK_STR(c.registry[0].name, "hub");
	CHECK_STR(c.registry[0].upstream, "https://registry-1.docker.io/");
	CHECK_INT(c.registry[0].cache_ttl, 300);
	CHECK_INT(c.registry[0].max_stale, 7 * 86400);
	CHECK_STR(c.registry[0].trusted_hosts, REGISTRY_HOSTS);
	CHECK_STR(c.registry[0].username, "");
	CHECK_STR(c.registry[0].password_file, "");
	CHECK_INT(c.registry[0].library_prefix, CONF_LIBRARY_AUTO);
	CHECK_INT(c.registry[0].is_default, 1);
	conf_free(&c);
	conf_free(&c); /* conf_free leaves nothing behind */
	CHECK_INT(c.nregistry, 0);
}

T(empty_text_keeps_defaults)
{
	struct conf c;
	struct buf a, b;

	CHECK_INT(conf_defaults(&c), 0);
	dump(&c, &a);
	CHECK_INT(conf_parse(&c, "x", "", 0, errbuf, sizeof(errbuf)), 0);
	CHECK_INT(conf_parse(&c, "x", "\n# only\n\n  ; comments\n", 22, errbuf,
	                     sizeof(errbuf)),
	          0);
	CHECK_STR(dump(&c, &b), buf_str(&a));
	buf_free(&a);
	buf_free(&b);
	conf_free(&c);
}

T(index_find)
{
	struct conf c;

	CHECK_INT(conf_defaults(&c), 0);
	CHECK_INT(conf_index_find(&c, "pypi"), 0);
	CHECK_INT(conf_index_find(&c, "root/pypi"), 1);
	CHECK_INT(conf_index_find(&c, "root"), -1);
	CHECK_INT(conf_index_find(&c, "pypi/"), -1);
	CHECK_INT(conf_index_find(&c, ""), -1);
	conf_free(&c);
}

T(seconds_good)
{
	static const struct {
		const char *v;
		long want;
	} cases[] = {
	    {"300", 300},   {"300s", 300},        {"5m", 300},
	    {"2h", 7200},   {"1d", 86400},        {"0", 0},
	    {"0d", 0},      {"007", 7},           {"\"90\"", 90},
	    {"  45  ", 45}, {"1000d", 86400000L},
	};
	struct conf c;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_INT(parse_larder(&c, "cache_ttl", cases[i].v), 0);
		CHECK_INT(c.cache_ttl, cases[i].want);
		conf_free(&c);
	}
	CHECK_INT(parse_larder(&c, "max_stale", "1d"), 0);
	CHECK_INT(c.max_stale, 86400);
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "negative_ttl", "0"), 0);
	CHECK_INT(c.negative_ttl, 0);
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "connect_timeout", "3s"), 0);
	CHECK_INT(c.connect_timeout, 3);
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "fetch_timeout", "2m"), 0);
	CHECK_INT(c.fetch_timeout, 120);
	conf_free(&c);
}

T(seconds_bad)
{
	static const char *const bad[] = {
	    "soon", "-1", "+5",  "5x",    "\"\"", "5 m", "1.5h",
	    "5M",   "m",  "5mm", "1h30m", "0x10", "5S",
	};
	char want[200];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *v = bad[i];
		char shown[64];

		snprintf(shown, sizeof(shown), "%s",
		         !strcmp(v, "\"\"") ? "" : v);
		snprintf(want, sizeof(want),
		         "larder.conf:2: cache_ttl = \"%s\": expected seconds "
		         "(300, 5m, 2h, 1d)",
		         shown);
		CHECK_STR(fails_larder("cache_ttl", v), want);
	}
	CHECK_STR(fails_larder("max_stale", "99999999999999999999"),
	          "larder.conf:2: max_stale = \"99999999999999999999\": too "
	          "large: expected seconds (300, 5m, 2h, 1d)");
	/* fits as a number, overflows once multiplied */
	CHECK_CONTAINS(fails_larder("fetch_timeout", "106751991167301d"),
	               "too large");
	CHECK_CONTAINS(fails_larder("connect_timeout", "ten"),
	               "connect_timeout = \"ten\"");
	CHECK_CONTAINS(fails_larder("negative_ttl", "-30"),
	               "negative_ttl = \"-30\": expected seconds");
}

T(size_good)
{
	static const struct {
		const char *v;
		long want;
	} cases[] = {
	    {"64M", 64L << 20},   {"64m", 64L << 20},
	    {"1G", 1L << 30},     {"2g", 2L << 30},
	    {"512k", 512L << 10}, {"512K", 512L << 10},
	    {"65536", 65536},     {"0", 0},
	};
	struct conf c;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_INT(parse_larder(&c, "max_page_size", cases[i].v), 0);
		CHECK_INT(c.max_page_size, cases[i].want);
		conf_free(&c);
	}
}

/* The disk budget: max_size holds 50G (a long of 64 bits), min_free is a
 * percentage; both have their defaults without a file. */
T(budget_keys)
{
	static const struct {
		const char *v;
		long want;
	} pct[] = {{"5%", 5}, {"0%", 0}, {"99%", 99}, {"10%", 10}};
	static const char *const bad[] = {"5",   "%",    "5 %", "-1%",
	                                  "5%%", "1.5%", "x%"};
	char want[200];
	struct conf c;

	CHECK_INT(conf_defaults(&c), 0);
	CHECK_INT(c.max_size, 0);
	CHECK_INT(c.min_free, 5);
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "max_size", "50G"), 0);
	CHECK_INT(c.max_size, 50LL << 30);
	conf_free(&c);
	for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
		CHECK_INT(parse_larder(&c, "min_free", pct[i].v), 0);
		CHECK_INT(c.min_free, pct[i].want);
		conf_free(&c);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(want, sizeof(want),
		         "larder.conf:2: min_free = \"%s\": expected a "
		         "percentage (0%% to 99%%)",
		         bad[i]);
		CHECK_STR(fails_larder("min_free", bad[i]), want);
	}
	CHECK_CONTAINS(fails_larder("min_free", "100%"),
	               "min_free = \"100%\": too large: expected a "
	               "percentage");
}

T(size_bad)
{
	static const char *const bad[] = {"64MB", "1T",  "-1",   "1.5M",
	                                  "M",    "big", "64 M", "0x40"};
	char want[200];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(want, sizeof(want),
		         "larder.conf:2: max_page_size = \"%s\": expected a "
		         "size in bytes (65536, 512k, 64M, 1G)",
		         bad[i]);
		CHECK_STR(fails_larder("max_page_size", bad[i]), want);
	}
	CHECK_CONTAINS(fails_larder("max_page_size", "9999999999G"),
	               "max_page_size = \"9999999999G\": too large: expected a "
	               "size in bytes");
	CHECK_CONTAINS(fails_larder("max_page_size", "\"\""),
	               "max_page_size = \"\": expected a size in bytes");
}

T(bool_good_and_bad)
{
	static const struct {
		const char *v;
		int want;
	} cases[] = {
	    {"yes", 1}, {"no", 0},  {"true", 1},   {"false", 0},
	    {"on", 1},  {"off", 0}, {"1", 1},      {"0", 0},
	    {"YES", 1}, {"Off", 0}, {"\"on\"", 1},
	};
	static const char *const bad[] = {"maybe", "2",       "y",
	                                  "n",     "enabled", "yes please"};
	struct conf c;
	char want[200];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_INT(parse_larder(&c, "trust_forwarded", cases[i].v), 0);
		CHECK_INT(c.trust_forwarded, cases[i].want);
		conf_free(&c);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(want, sizeof(want),
		         "larder.conf:2: trust_forwarded = \"%s\": expected "
		         "yes or no (also true/false, on/off, 1/0)",
		         bad[i]);
		CHECK_STR(fails_larder("trust_forwarded", bad[i]), want);
	}
}

T(count_good_and_bad)
{
	struct conf c;

	CHECK_INT(parse_larder(&c, "max_requests", "0"), 0);
	CHECK_INT(c.max_requests, 0);
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "max_requests", "123"), 0);
	CHECK_INT(c.max_requests, 123);
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "max_requests", "9223372036854775807"), 0);
	CHECK_INT(c.max_requests, LONG_MAX);
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "workers", "1"), 0);
	CHECK_INT(c.workers, 1);
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "workers", "16"), 0);
	CHECK_INT(c.workers, 16);
	conf_free(&c);

	CHECK_STR(fails_larder("max_requests", "-1"),
	          "larder.conf:2: max_requests = \"-1\": expected a whole "
	          "number (0, 1, 2, ...)");
	CHECK_CONTAINS(fails_larder("max_requests", "1k"),
	               "max_requests = \"1k\": expected a whole number");
	CHECK_CONTAINS(fails_larder("max_requests", "1.0"),
	               "expected a whole number");
	CHECK_CONTAINS(fails_larder("max_requests", "\"\""),
	               "expected a whole number");
	CHECK_CONTAINS(fails_larder("max_requests", "9223372036854775808"),
	               "too large: expected a whole number");
	CHECK_STR(fails_larder("workers", "0"),
	          "larder.conf:2: workers = \"0\": expected a whole number of "
	          "at least 1");
	CHECK_CONTAINS(fails_larder("workers", "many"),
	               "workers = \"many\": expected a whole number");
}

T(enum_good_and_bad)
{
	struct conf c;

	CHECK_INT(parse_larder(&c, "sendfile", "x-sendfile"), 0);
	CHECK_INT(c.sendfile, CONF_SENDFILE_XSENDFILE);
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "sendfile", "stream"), 0);
	CHECK_INT(c.sendfile, CONF_SENDFILE_STREAM);
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "sendfile", "\"x-accel-redirect\""), 0);
	CHECK_INT(c.sendfile, CONF_SENDFILE_ACCEL);
	conf_free(&c);
	CHECK_STR(fails_larder("sendfile", "nginx"),
	          "larder.conf:2: sendfile = \"nginx\": expected one of "
	          "x-accel-redirect, x-sendfile, stream");
	CHECK_CONTAINS(fails_larder("sendfile", "X-Sendfile"),
	               "sendfile = \"X-Sendfile\": expected one of");
	CHECK_CONTAINS(fails_larder("sendfile", "\"\""),
	               "sendfile = \"\": expected one of");
}

T(path_good_and_bad)
{
	struct conf c;

	CHECK_INT(parse_larder(&c, "data_dir", "/srv/larder"), 0);
	CHECK_STR(c.data_dir, "/srv/larder");
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "data_dir", "/srv/larder//"), 0);
	CHECK_STR(c.data_dir, "/srv/larder");
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "data_dir", "/"), 0);
	CHECK_STR(c.data_dir, "/");
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "data_dir", "\"/srv/my cache\""), 0);
	CHECK_STR(c.data_dir, "/srv/my cache");
	conf_free(&c);

	CHECK_STR(fails_larder("data_dir", "var/lib/larder"),
	          "larder.conf:2: data_dir = \"var/lib/larder\": expected an "
	          "absolute path");
	CHECK_CONTAINS(fails_larder("data_dir", "./x"),
	               "expected an absolute path");
	CHECK_CONTAINS(fails_larder("data_dir", "~/x"),
	               "expected an absolute path");
	CHECK_CONTAINS(fails_larder("data_dir", ""),
	               "data_dir = \"\": expected an absolute path");
}

T(url_good)
{
	static const struct {
		const char *v, *want;
	} cases[] = {
	    {"https://pypi.org/simple/", "https://pypi.org/simple/"},
	    {"https://pypi.org/simple", "https://pypi.org/simple/"},
	    {"http://h", "http://h/"},
	    {"HTTPS://Pypi.org/simple/", "https://Pypi.org/simple/"},
	    {"http://h:8080/x/", "http://h:8080/x/"},
	    {"https://user:tok%40en@h.example/simple/",
	     "https://user:tok%40en@h.example/simple/"},
	    {"https://[::1]:3141/root/pypi/", "https://[::1]:3141/root/pypi/"},
	    {"\"https://a.example/s/\"", "https://a.example/s/"},
	};
	struct conf c;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_INT(parse_upstream(&c, cases[i].v), 0);
		CHECK_STR(c.index[0].upstream, cases[i].want);
		conf_free(&c);
	}
}

T(url_bad)
{
	static const char *const bad[] = {
	    "ftp://h/",        "pypi.org/simple/",
	    "https://",        "https:///x",
	    "https://h:0/",    "https://h:99999/",
	    "https://h:/x",    "https://h:x/",
	    "https://[::1/",   "https://@/x",
	    "//h/x",           "https://h/a|b/",
	    "https://h/\"x\"", "https://h/é/",
	};
	char text[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
		         "[index \"c\"]\ntype = cache\nupstream = %s\n",
		         bad[i]);
		CHECK_CONTAINS(fails(text), "larder.conf:3: [index \"c\"]: "
		                            "upstream = \"");
		CHECK_CONTAINS(errbuf, "\": expected an absolute http:// or "
		                       "https:// URL");
	}
	/* a message quoting an upstream never shows its password, even
	 * one longer than the part of a value a message quotes */
	CHECK_CONTAINS(fails("[index \"c\"]\ntype = cache\n"
	                     "upstream = https://__token__:pypi-AgEIcHlwaS5vcmcCJ"
	                     "DA4NjQ2ZTI4@h:99999/simple/\n"),
	               "upstream = \"https://__token__:***@h:99999/simple/\"");
	CHECK_INT(strstr(errbuf, "pypi-AgE") != NULL, 0);
	CHECK_CONTAINS(fails("[index \"c\"]\ntype = cache\n"
	                     "upstream = https://u:a-very-long-password-that-is-"
	                     "cut-in-the-message-at-sixty-bytes@h/s/?x\n"),
	               "https://u:***@h/s/?x");
	CHECK_INT(strstr(errbuf, "a-very") != NULL, 0);
	CHECK_CONTAINS(fails("[index \"c\"]\ntype = cache\n"
	                     "upstream: https://u:pw@h/\n"), "u:***@h");
	CHECK_INT(strstr(errbuf, "u:pw") != NULL, 0);
	CHECK_STR(fails("[index \"c\"]\ntype = cache\n"
	                "upstream = https://h/simple/?x=1\n"),
	          "larder.conf:3: [index \"c\"]: upstream = "
	          "\"https://h/simple/?x=1\": a query or fragment is not "
	          "allowed: expected an absolute http:// or https:// URL");
	CHECK_CONTAINS(fails("[index \"c\"]\ntype = cache\n"
	                     "upstream = \"https://h/simple/#top\"\n"),
	               "a query or fragment is not allowed");
	CHECK_CONTAINS(fails("[index \"c\"]\ntype = cache\n"
	                     "upstream = \"https://h/a b/\"\n"),
	               "upstream = \"https://h/a b/\": expected an absolute");
}

T(urlpath_good_and_bad)
{
	static const char *const bad[] = {
	    "/",     "_larder/",  "/_larder", "/a//b/", "/../",
	    "/a/./", "\"/a b/\"", "/a%2f/",   "//",     "/a/../b/",
	};
	struct conf c;
	char want[200];

	CHECK_INT(parse_larder(&c, "sendfile_prefix", "/internal/files/"), 0);
	CHECK_STR(c.sendfile_prefix, "/internal/files/");
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "sendfile_prefix", "/a-b.c~d+e_f/"), 0);
	CHECK_STR(c.sendfile_prefix, "/a-b.c~d+e_f/");
	conf_free(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *v = bad[i];
		char shown[64];

		snprintf(shown, sizeof(shown), "%.*s",
		         v[0] == '"' ? (int)strlen(v) - 2 : (int)strlen(v),
		         v[0] == '"' ? v + 1 : v);
		snprintf(want, sizeof(want),
		         "larder.conf:2: sendfile_prefix = \"%s\": expected a "
		         "URL path that starts and ends with '/', like "
		         "/_larder/",
		         shown);
		CHECK_STR(fails_larder("sendfile_prefix", v), want);
	}
}

T(list_trusted_hosts)
{
	struct conf c;

	CHECK_INT(parse(&c, "[index \"c\"]\ntype = cache\nupstream = "
	                    "https://h/\ntrusted_hosts =   A.Example\t "
	                    "b.example  \n"),
	          0);
	CHECK_STR(c.index[0].trusted_hosts, "a.example b.example");
	conf_free(&c);
	CHECK_INT(parse(&c, "[index \"c\"]\ntype = cache\nupstream = "
	                    "https://h/\ntrusted_hosts = \"\"\n"),
	          0);
	CHECK_STR(c.index[0].trusted_hosts, "");
	conf_free(&c);
	/* unset: the default */
	CHECK_INT(parse(&c, "[index \"c\"]\ntype = cache\nupstream = "
	                    "https://h/\n"),
	          0);
	CHECK_STR(c.index[0].trusted_hosts, "files.pythonhosted.org");
	conf_free(&c);

	CHECK_STR(fails("[index \"c\"]\ntype = cache\nupstream = https://h/\n"
	                "trusted_hosts = a.example https://b.example/\n"),
	          "larder.conf:4: [index \"c\"]: trusted_hosts = \"a.example "
	          "https://b.example/\": expected host names separated by "
	          "spaces");
	CHECK_CONTAINS(fails("[index \"c\"]\ntype = cache\n"
	                     "upstream = https://h/\ntrusted_hosts = a_b\n"),
	               "expected host names separated by spaces");
}

T(list_layers)
{
	struct conf c;

	CHECK_INT(parse(&c, "[index \"a\"]\ntype = cache\nupstream = "
	                    "https://a/\n"
	                    "[index \"b\"]\ntype = cache\nupstream = "
	                    "https://b/\n"
	                    "[index \"v\"]\ntype = virtual\n"
	                    "layers =  b\t a \n"),
	          0);
	CHECK_STR(c.index[2].layers, "b a");
	CHECK_INT(c.index[2].nlayers, 2);
	CHECK_INT(c.index[2].layer[0], 1);
	CHECK_INT(c.index[2].layer[1], 0);
	conf_free(&c);

	CHECK_STR(
	    fails("[index \"v\"]\ntype = virtual\nlayers = \"\"\n"),
	    "larder.conf:3: [index \"v\"]: layers = \"\": expected 1 to 8 "
	    "index names separated by spaces, each at most once");
	CHECK_CONTAINS(fails("[index \"a\"]\ntype = cache\nupstream = "
	                     "https://a/\n[index \"v\"]\ntype = virtual\n"
	                     "layers = a a\n"),
	               "layers = \"a a\": expected 1 to 8 index names");
	CHECK_CONTAINS(fails("[index \"v\"]\ntype = virtual\n"
	                     "layers = a b c d e f g h i\n"),
	               "layers = \"a b c d e f g h i\": expected 1 to 8");
	CHECK_CONTAINS(fails("[index \"v\"]\ntype = virtual\n"
	                     "layers = Pypi\n"),
	               "layers = \"Pypi\": expected 1 to 8 index names");
}

T(max_layers)
{
	struct buf b;
	struct conf c;

	buf_init(&b, 1 << 16);
	for (int i = 0; i < CONF_MAX_LAYERS; i++)
		buf_addf(&b,
		         "[index \"i%d\"]\ntype = cache\n"
		         "upstream = https://h%d/\n",
		         i, i);
	buf_adds(&b, "[index \"v\"]\ntype = virtual\n"
	             "layers = i0 i1 i2 i3 i4 i5 i6 i7\n");
	CHECK_INT(parse(&c, buf_str(&b)), 0);
	CHECK_INT(c.index[CONF_MAX_LAYERS].nlayers, CONF_MAX_LAYERS);
	CHECK_INT(c.index[CONF_MAX_LAYERS].layer[7], 7);
	conf_free(&c);
	buf_free(&b);
}

T(error_forms)
{
	/* the three forms the header promises, exactly */
	CHECK_STR(fails("# larder\n\n[larder]\ncache_ttl = soon\n"),
	          "larder.conf:4: cache_ttl = \"soon\": expected seconds (300, "
	          "5m, 2h, 1d)");
	CHECK_STR(
	    fails("\n\n\n\n\n[larder]\ncach_ttl = 5\n"),
	    "larder.conf:7: unknown key \"cach_ttl\" in [larder] (did you "
	    "mean cache_ttl?)");
	CHECK_STR(fails("[larder]\n\n\n\n\n\n\n[index \"x\"]\ntype = mirror\n"),
	          "larder.conf:9: [index \"x\"]: type = \"mirror\": expected "
	          "one of cache, virtual, hosted");
	/* the name given is the one used */
	{
		struct conf c;
		const char *t = "[larder]\nworkers = 0\n";

		CHECK_INT(conf_defaults(&c), 0);
		CHECK_INT(conf_parse(&c, "/etc/larder/x.conf", t, strlen(t),
		                     errbuf, sizeof(errbuf)),
		          EINVAL);
		CHECK_CONTAINS(errbuf, "/etc/larder/x.conf:2: workers = \"0\"");
		conf_free(&c);
	}
}

T(unknown_keys_and_hints)
{
	CHECK_STR(fails("[larder]\nfoo = 1\n"),
	          "larder.conf:2: unknown key \"foo\" in [larder]");
	CHECK_STR(fails("[larder]\nCache_TTL = 1\n"),
	          "larder.conf:2: unknown key \"Cache_TTL\" in [larder] (did "
	          "you mean cache_ttl?)");
	CHECK_STR(fails("[larder]\nupstream = https://h/\n"),
	          "larder.conf:2: unknown key \"upstream\" in [larder] (it "
	          "belongs in [index \"NAME\"] or [registry \"NAME\"] "
	          "sections)");
	CHECK_STR(fails("[larder]\nlayers = a\n"),
	          "larder.conf:2: unknown key \"layers\" in [larder] (it "
	          "belongs in [index \"NAME\"] or [registry \"NAME\"] "
	          "sections)");
	CHECK_STR(fails("[index \"p\"]\ntype = cache\ncache_ttl = 5\n"),
	          "larder.conf:3: unknown key \"cache_ttl\" in [index \"p\"] "
	          "(it belongs in [larder] or [registry \"NAME\"] sections)");
	CHECK_STR(fails("[index \"p\"]\ntype = cache\ndata_dir = /x\n"),
	          "larder.conf:3: unknown key \"data_dir\" in [index \"p\"] "
	          "(it belongs in [larder])");
	CHECK_STR(fails("[index \"p\"]\ntype = cache\nupstrem = x\n"),
	          "larder.conf:3: unknown key \"upstrem\" in [index \"p\"] "
	          "(did you mean upstream?)");
	CHECK_CONTAINS(fails("[larder]\ncache ttl = 5\n"),
	               "unknown key \"cache ttl\" in [larder]");
}

T(comments_and_quoting)
{
	struct conf c;
	const char *text =
	    "# a comment\n"
	    "; another\n"
	    "   # indented comment\n"
	    "[larder]   # after a header\n"
	    "data_dir = /srv/a#b;c     # '#' with no blank before is kept\n"
	    "sendfile_prefix = /x/ ; comment\n"
	    "cache_ttl = \"5m\"   # after quotes\n"
	    "max_stale=1d\n"
	    "\tnegative_ttl\t=\t7\t\n"
	    "[index \"q\"] ; comment\n"
	    "type = cache #c\n"
	    "upstream = \"https://h/simple/\";c\n"
	    "trusted_hosts = \"a.example  b.example\" ; c\n";

	CHECK_INT(parse(&c, text), 0);
	CHECK_STR(errbuf, "");
	CHECK_STR(c.data_dir, "/srv/a#b;c");
	CHECK_STR(c.sendfile_prefix, "/x/");
	CHECK_INT(c.cache_ttl, 300);
	CHECK_INT(c.max_stale, 86400);
	CHECK_INT(c.negative_ttl, 7);
	CHECK_INT(c.nindex, 1);
	CHECK_STR(c.index[0].upstream, "https://h/simple/");
	CHECK_STR(c.index[0].trusted_hosts, "a.example b.example");
	conf_free(&c);

	/* escapes, and '#' and ';' inside quotes */
	CHECK_INT(parse(&c, "[larder]\ndata_dir = \"/srv/q \\\"x\\\" \\\\ # ;"
	                    "\"\n"),
	          0);
	CHECK_STR(c.data_dir, "/srv/q \"x\" \\ # ;");
	conf_free(&c);
	/* an unquoted backslash is just a backslash */
	CHECK_INT(parse(&c, "[larder]\ndata_dir = /srv/a\\b\n"), 0);
	CHECK_STR(c.data_dir, "/srv/a\\b");
	conf_free(&c);
	/* a comment where the value would be leaves it empty */
	CHECK_STR(fails("[larder]\ndata_dir = # nothing\n"),
	          "larder.conf:2: data_dir = \"\": expected an absolute path");

	CHECK_STR(fails("[larder]\ndata_dir = \"/srv\n"),
	          "larder.conf:2: data_dir: unterminated quoted value");
	CHECK_STR(fails("[larder]\ndata_dir = \"/srv\" x\n"),
	          "larder.conf:2: data_dir: unexpected text after the closing "
	          "quote");
	CHECK_STR(fails("[larder]\ndata_dir = \"/srv\\n\"\n"),
	          "larder.conf:2: data_dir: unknown escape in quoted value "
	          "(only \\\" and \\\\)");
	CHECK_CONTAINS(fails("[index \"p\"]\ntype = \"cache\n"),
	               "larder.conf:2: [index \"p\"]: type: unterminated");
}

T(line_endings_and_odd_bytes)
{
	struct conf c;
	char text[8192];

	CHECK_INT(parse(&c, "\xef\xbb\xbf[larder]\r\ncache_ttl = 5m\r\n"
	                    "workers = 2\r\n"),
	          0);
	CHECK_INT(c.cache_ttl, 300);
	CHECK_INT(c.workers, 2);
	conf_free(&c);
	/* no newline at the end */
	CHECK_INT(parse(&c, "[larder]\nworkers = 3"), 0);
	CHECK_INT(c.workers, 3);
	conf_free(&c);

	CHECK_INT(conf_defaults(&c), 0);
	CHECK_INT(conf_parse(&c, "larder.conf", "[larder]\nworkers = 2\0x\n",
	                     23, errbuf, sizeof(errbuf)),
	          EINVAL);
	CHECK_STR(errbuf, "larder.conf:2: NUL byte in line");
	conf_free(&c);

	CHECK_STR(fails("[larder]\ndata_dir = \"/a\x01\"\n"),
	          "larder.conf:2: data_dir = \"/a\\x01\": control character: "
	          "expected an absolute path");

	memset(text, 'x', sizeof(text));
	memcpy(text, "[larder]\n#", 10);
	text[sizeof(text) - 1] = '\0';
	CHECK_STR(fails(text), "larder.conf:2: line too long (at most 4096 "
	                       "bytes)");

	/* a long value is cut short in the message */
	memset(text, 'a', 1000);
	memcpy(text, "[larder]\ndata_dir = ", 20);
	text[1000] = '\0';
	CHECK_CONTAINS(fails(text), "aaa...\": expected an absolute path");
	CHECK(strlen(errbuf) < 200);
}

T(syntax_errors)
{
	CHECK_STR(fails("cache_ttl = 5\n"),
	          "larder.conf:1: \"cache_ttl = 5\" is outside any section: "
	          "expected [larder], [index \"NAME\"] or [registry \"NAME\"] "
	          "before it");
	CHECK_STR(fails("[larder]\njust words\n"),
	          "larder.conf:2: expected key = value, [larder], [index "
	          "\"NAME\"] or [registry \"NAME\"], got \"just words\"");
	CHECK_CONTAINS(fails("[larder]\n= 5\n"), "larder.conf:2: expected "
	                                         "key = value");
	CHECK_STR(fails("[larder\n"),
	          "larder.conf:1: bad section header [larder: expected "
	          "[larder], [index \"NAME\"] or [registry \"NAME\"]");
	CHECK_CONTAINS(fails("[index pypi]\n"),
	               "larder.conf:1: bad section header [index pypi]");
	CHECK_CONTAINS(fails("[index \"pypi\" x]\n"), "bad section header");
	CHECK_CONTAINS(fails("[index \"pypi\"] x\n"), "bad section header");
	CHECK_CONTAINS(fails("[index \"pypi]\n"), "bad section header");
	CHECK_CONTAINS(fails("[larder] x\n"), "bad section header");
	CHECK_STR(fails("[registries \"hub\"]\n"),
	          "larder.conf:1: unknown section [registries \"hub\"]: "
	          "expected [larder], [index \"NAME\"] or [registry "
	          "\"NAME\"]");
	CHECK_CONTAINS(fails("[registry hub]\n"),
	               "larder.conf:1: bad section header [registry hub]");
	CHECK_CONTAINS(fails("[registry \"hub\"] x\n"), "bad section header");
	CHECK_CONTAINS(fails("[registry \"hub]\n"), "bad section header");
	CHECK_CONTAINS(fails("[Larder]\n"), "unknown section [Larder]");
	CHECK_CONTAINS(fails("[]\n"), "bad section header []");
}

T(sections_with_blanks)
{
	struct conf c;

	CHECK_INT(parse(&c, "[ larder ]\nworkers = 2\n"
	                    "[ index   \"p\" ]\ntype = cache\n"
	                    "upstream = https://h/\n"),
	          0);
	CHECK_INT(c.workers, 2);
	CHECK_STR(c.index[0].name, "p");
	conf_free(&c);
}

T(duplicates)
{
	struct conf c;

	CHECK_STR(fails("[larder]\ncache_ttl = 5\n\ncache_ttl = 6\n"),
	          "larder.conf:4: cache_ttl given twice (first at line 2)");
	CHECK_STR(fails("[larder]\ncache_ttl = 5\n[larder]\ncache_ttl = 6\n"),
	          "larder.conf:4: cache_ttl given twice (first at line 2)");
	CHECK_STR(fails("[index \"p\"]\ntype = cache\ntype = virtual\n"),
	          "larder.conf:3: [index \"p\"]: type given twice (first at "
	          "line 2)");
	CHECK_STR(fails("[index \"p\"]\ntype = cache\nupstream = https://h/\n"
	                "[index \"p\"]\n"),
	          "larder.conf:4: duplicate section [index \"p\"] (first at "
	          "line 1)");
	/* [larder] may come back, with other keys */
	CHECK_INT(parse(&c, "[larder]\ncache_ttl = 5\n[index \"p\"]\n"
	                    "type = cache\nupstream = https://h/\n"
	                    "[larder]\nworkers = 9\n"),
	          0);
	CHECK_INT(c.cache_ttl, 5);
	CHECK_INT(c.workers, 9);
	conf_free(&c);
}

T(too_many_indexes)
{
	struct buf b;
	struct conf c;

	buf_init(&b, 1 << 16);
	for (int i = 0; i < CONF_MAX_INDEXES; i++)
		buf_addf(&b,
		         "[index \"i%d\"]\ntype = cache\n"
		         "upstream = https://h/\n",
		         i);
	CHECK_INT(parse(&c, buf_str(&b)), 0);
	CHECK_INT(c.nindex, CONF_MAX_INDEXES);
	CHECK_INT(conf_index_find(&c, "i31"), 31);
	conf_free(&c);
	buf_adds(&b, "[index \"one-more\"]\n");
	CHECK_STR(fails(buf_str(&b)),
	          "larder.conf:97: [index \"one-more\"]: too many indexes (at "
	          "most 32)");
	buf_free(&b);
}

T(index_names)
{
	static const char *const good[] = {
	    "a",    "root/pypi", "a.b_c-d/e", "v2x",     "metricsx",
	    "x/v2", "x/metrics", "0",         "a/b/c/d", "x_",
	    "a..b", "-",         "a/_b",
	};
	static const struct {
		const char *name, *why;
	} bad[] = {
	    {"", "expected 1 to 100 characters"},
	    {"A", "expected a-z, 0-9"},
	    {"a b", "expected a-z, 0-9"},
	    {"a//b", "empty segment"},
	    {"/a", "empty segment"},
	    {"a/", "empty segment"},
	    {"a/./b", "'.' and '..' segments are not allowed"},
	    {"a/../b", "'.' and '..' segments are not allowed"},
	    {"..", "'.' and '..' segments are not allowed"},
	    {".", "'.' and '..' segments are not allowed"},
	    {"_x", "must not start with '+' or '_'"},
	    {"+x", "must not start with '+' or '_'"},
	    {"v2", "reserved"},
	    {"v2/library", "reserved"},
	    {"+health", "reserved"},
	    {"+stats", "reserved"},
	    {"metrics", "reserved"},
	    {"metrics/x", "reserved"},
	    {"_larder", "reserved"},
	    {"_larder/x", "reserved"},
	    {"a\\b", "expected a-z, 0-9"},
	};
	char text[512], name101[102], want[300];
	struct conf c;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(
		    text, sizeof(text),
		    "[index \"%s\"]\ntype = cache\nupstream = https://h/\n",
		    good[i]);
		CHECK_INT(parse(&c, text), 0);
		CHECK_INT(conf_index_find(&c, good[i]), 0);
		conf_free(&c);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "[index \"%s\"]\ntype = cache\n",
		         bad[i].name);
		CHECK_CONTAINS(fails(text), "larder.conf:1: [index \"");
		CHECK_CONTAINS(errbuf, "]: bad index name: ");
		CHECK_CONTAINS(errbuf, bad[i].why);
	}
	CHECK_STR(
	    fails("[index \"v2\"]\n"),
	    "larder.conf:1: [index \"v2\"]: bad index name: reserved: v2, "
	    "+health, +stats, metrics and _larder are larder's own URLs");

	memset(name101, 'n', 101);
	name101[101] = '\0';
	snprintf(text, sizeof(text), "[index \"%s\"]\n", name101);
	CHECK_CONTAINS(fails(text), "expected 1 to 100 characters");
	name101[100] = '\0';
	snprintf(text, sizeof(text),
	         "[index \"%s\"]\ntype = cache\nupstream = https://h/\n",
	         name101);
	CHECK_INT(parse(&c, text), 0);
	snprintf(want, sizeof(want), "%s", name101);
	CHECK_STR(c.index[0].name, want);
	conf_free(&c);
}

T(replaces_default_indexes)
{
	const char *text;
	struct conf c;

	CHECK_INT(parse(&c, "[index \"only\"]\ntype = cache\n"
	                    "upstream = https://mirror.example/simple\n"),
	          0);
	CHECK_INT(c.nindex, 1);
	CHECK_INT(conf_index_find(&c, "pypi"), -1);
	CHECK_INT(conf_index_find(&c, "root/pypi"), -1);
	CHECK_STR(c.index[0].upstream, "https://mirror.example/simple/");

	/* a later text without [index] keeps what there is */
	CHECK_INT(conf_parse(&c, "b.conf", "[larder]\nworkers = 2\n", 21,
	                     errbuf, sizeof(errbuf)),
	          0);
	CHECK_INT(c.nindex, 1);
	CHECK_STR(c.index[0].name, "only");
	CHECK_INT(c.workers, 2);

	/* and a later one with [index] replaces them again, and may reuse a
	 * name it replaces */
	text = "[index \"only\"]\ntype = cache\nupstream = https://other/\n";
	CHECK_INT(conf_parse(&c, "c.conf", text, strlen(text), errbuf,
	                     sizeof(errbuf)),
	          0);
	CHECK_INT(c.nindex, 1);
	CHECK_STR(c.index[0].upstream, "https://other/");
	conf_free(&c);

	/* without [index]: the defaults, untouched */
	CHECK_INT(parse(&c, "[larder]\ncache_ttl = 1\n"), 0);
	CHECK_INT(c.nindex, 2);
	CHECK_INT(c.index[1].nlayers, 1);
	CHECK_INT(c.index[1].layer[0], 0);
	conf_free(&c);
}

T(index_rules)
{
	CHECK_STR(fails("[index \"p\"]\nupstream = https://h/\n"),
	          "larder.conf:1: [index \"p\"]: missing type (expected one of "
	          "cache, virtual, hosted)");
	CHECK_STR(
	    fails("[larder]\n[index \"p\"]\ntype = cache\n"),
	    "larder.conf:2: [index \"p\"]: missing upstream (a cache index "
	    "needs the URL of its upstream simple index)");
	CHECK_STR(fails("[index \"a\"]\ntype = cache\nupstream = https://h/\n"
	                "[index \"p\"]\nlayers = a\ntype = cache\n"
	                "upstream = https://h/\n"),
	          "larder.conf:5: [index \"p\"]: layers is only for type = "
	          "virtual");
	CHECK_STR(
	    fails("[index \"v\"]\ntype = virtual\n"),
	    "larder.conf:1: [index \"v\"]: missing layers (a virtual index "
	    "needs the names of the indexes it serves)");
	CHECK_STR(fails("[index \"a\"]\ntype = cache\nupstream = https://h/\n"
	                "[index \"v\"]\ntype = virtual\nlayers = a\n"
	                "upstream = https://h/\n"),
	          "larder.conf:7: [index \"v\"]: upstream is only for type = "
	          "cache");
	CHECK_CONTAINS(
	    fails("[index \"a\"]\ntype = cache\n"
	          "upstream = https://h/\n"
	          "[index \"v\"]\ntype = virtual\nlayers = a\n"
	          "trusted_hosts = x.example\n"),
	    "larder.conf:7: [index \"v\"]: trusted_hosts is only for "
	    "type = cache");
	CHECK_STR(fails("[index \"h\"]\ntype = hosted\nupstream = https://h/\n"),
	          "larder.conf:3: [index \"h\"]: upstream is only for type = "
	          "cache");
	CHECK_STR(fails("[index \"a\"]\ntype = cache\nupstream = https://h/\n"
	                "volatile = yes\n"),
	          "larder.conf:4: [index \"a\"]: volatile is only for type = "
	          "hosted");
	CHECK_STR(fails("[index \"h\"]\ntype = hosted\npolicy = fallback\n"),
	          "larder.conf:3: [index \"h\"]: policy is only for type = "
	          "virtual");
	CHECK_CONTAINS(fails("[index \"h\"]\ntype = hosted\n"
	                     "[index \"v\"]\ntype = virtual\nlayers = h\n"
	                     "protected_names = corp/*\n"),
	               "protected_names = \"corp/*\": expected project name "
	               "globs");
}

T(hosted_and_policies)
{
	struct conf c;

	CHECK_INT(parse(&c, "[index \"root/private\"]\ntype = hosted\n"
	                    "volatile = yes\nmax_upload_size = 1G\n"
	                    "read = token\n"
	                    "[index \"pypi\"]\ntype = cache\n"
	                    "upstream = https://pypi.org/simple/\n"
	                    "[index \"root/pypi\"]\ntype = virtual\n"
	                    "layers = root/private pypi\n"
	                    "protected_names = Corp_* internal.?\n"),
	          0);
	CHECK_INT(c.index[0].type, CONF_INDEX_HOSTED);
	CHECK_INT(c.index[0].is_volatile, 1);
	CHECK_INT(c.index[0].max_upload_size, 1L << 30);
	CHECK_INT(c.index[0].read, CONF_READ_TOKEN);
	CHECK_INT(c.index[1].read, CONF_READ_ANONYMOUS);
	CHECK_INT(c.index[1].max_upload_size, 100L << 20);
	CHECK_INT(c.index[2].policy, CONF_POLICY_PRIVATE_FIRST);
	CHECK_STR(c.index[2].protected_names, "corp-* internal-?");
	CHECK_INT(c.index[2].nlayers, 2);
	conf_free(&c);
	CHECK_INT(parse(&c, "[index \"h\"]\ntype = hosted\n"
	                    "[index \"v\"]\ntype = virtual\nlayers = h\n"
	                    "policy = no-fallback\n"),
	          0);
	CHECK_INT(c.index[1].policy, CONF_POLICY_NO_FALLBACK);
	CHECK_INT(c.index[0].is_volatile, 0);
	conf_free(&c);
}

T(layers_resolution)
{
	struct conf c;

	/* forward references, virtual over virtual, any order */
	CHECK_INT(parse(&c, "[index \"top\"]\ntype = virtual\n"
	                    "layers = mid hosted\n"
	                    "[index \"mid\"]\ntype = virtual\nlayers = pypi\n"
	                    "[index \"pypi\"]\ntype = cache\n"
	                    "upstream = https://pypi.org/simple/\n"
	                    "[index \"hosted\"]\ntype = cache\n"
	                    "upstream = https://h/\n"),
	          0);
	CHECK_INT(c.nindex, 4);
	CHECK_INT(c.index[0].nlayers, 2);
	CHECK_INT(c.index[0].layer[0], 1);
	CHECK_INT(c.index[0].layer[1], 3);
	CHECK_INT(c.index[1].nlayers, 1);
	CHECK_INT(c.index[1].layer[0], 2);
	CHECK_INT(c.index[2].nlayers, 0);
	conf_free(&c);

	/* a diamond is not a cycle */
	CHECK_INT(parse(&c, "[index \"p\"]\ntype = cache\nupstream = "
	                    "https://h/\n"
	                    "[index \"l\"]\ntype = virtual\nlayers = p\n"
	                    "[index \"r\"]\ntype = virtual\nlayers = p\n"
	                    "[index \"top\"]\ntype = virtual\nlayers = l r\n"),
	          0);
	conf_free(&c);
}

T(unknown_and_self_layer)
{
	CHECK_STR(fails("[index \"pypi\"]\ntype = cache\n"
	                "upstream = https://pypi.org/simple/\n"
	                "[index \"root/pypi\"]\ntype = virtual\n"
	                "layers = hosted pypi\n"),
	          "larder.conf:6: [index \"root/pypi\"]: layers = \"hosted "
	          "pypi\": unknown index \"hosted\"");
	CHECK_STR(fails("[index \"p\"]\ntype = cache\nupstream = https://h/\n"
	                "[index \"v\"]\ntype = virtual\nlayers = p v\n"),
	          "larder.conf:6: [index \"v\"]: layers = \"p v\": an index "
	          "cannot be its own layer: \"v\"");
	/* the defaults are gone once any [index] is declared */
	CHECK_CONTAINS(fails("[index \"v\"]\ntype = virtual\nlayers = pypi\n"),
	               "unknown index \"pypi\"");
}

T(cycles)
{
	CHECK_STR(
	    fails("[index \"a\"]\ntype = virtual\nlayers = b\n"
	          "[index \"b\"]\ntype = virtual\nlayers = a\n"),
	    "larder.conf:3: [index \"a\"]: layers form a cycle: a -> b -> "
	    "a");
	CHECK_STR(
	    fails("[index \"p\"]\ntype = cache\nupstream = https://h/\n"
	          "[index \"x\"]\ntype = virtual\nlayers = p y\n"
	          "[index \"y\"]\ntype = virtual\nlayers = z\n"
	          "[index \"z\"]\ntype = virtual\nlayers = p x\n"),
	    "larder.conf:6: [index \"x\"]: layers form a cycle: x -> y -> "
	    "z -> x");
	/* a cycle reached from outside it is still named from where it
	 * closes */
	CHECK_CONTAINS(fails("[index \"top\"]\ntype = virtual\nlayers = a\n"
	                     "[index \"a\"]\ntype = virtual\nlayers = b\n"
	                     "[index \"b\"]\ntype = virtual\nlayers = a\n"),
	               "layers form a cycle: a -> b -> a");
}

/* "[registry "r"]\nupstream = ...\nKEY = VALUE\n": KEY is on line 3. */
static void registry_text(char *text, size_t len, const char *key,
                          const char *value)
{
	snprintf(text, len,
	         "[registry \"r\"]\nupstream = https://r.example\n%s = %s\n",
	         key, value);
}

/* Parses one registry with KEY = VALUE, expecting success, into c. */
static int parse_registry(struct conf *c, const char *key, const char *value)
{
	char text[512];
	int rc;

	registry_text(text, sizeof(text), key, value);
	rc = parse(c, text);
	if (rc)
		fprintf(stderr, "  %s: %s\n", text, errbuf);
	return rc;
}

static const char *fails_registry(const char *key, const char *value)
{
	char text[512];

	registry_text(text, sizeof(text), key, value);
	return fails(text);
}

T(registry_find_and_default)
{
	struct conf c;

	CHECK_INT(conf_defaults(&c), 0);
	CHECK_INT(conf_registry_find(&c, "hub", 3), 0);
	/* n bytes of a longer string: the first component of a name */
	CHECK_INT(conf_registry_find(&c, "hub/library/alpine", 3), 0);
	CHECK_INT(conf_registry_find(&c, "hub/library/alpine", 4), -1);
	CHECK_INT(conf_registry_find(&c, "hu", 2), -1);
	CHECK_INT(conf_registry_find(&c, "hubx", 4), -1);
	CHECK_INT(conf_registry_find(&c, "", 0), -1);
	CHECK_INT(conf_registry_default(&c), 0);
	conf_free(&c);

	CHECK_INT(parse(&c, "[registry \"a\"]\nupstream = https://a/\n"
	                    "[registry \"b\"]\nupstream = https://b/\n"
	                    "default = yes\n"
	                    "[registry \"c\"]\nupstream = https://c/\n"),
	          0);
	CHECK_INT(c.nregistry, 3);
	CHECK_INT(conf_registry_find(&c, "c", 1), 2);
	CHECK_INT(conf_registry_find(&c, "hub", 3), -1);
	CHECK_INT(conf_registry_default(&c), 1);
	conf_free(&c);
	/* no default at all is allowed: prefixless names are not served */
	CHECK_INT(parse(&c, "[registry \"a\"]\nupstream = https://a/\n"), 0);
	CHECK_INT(conf_registry_default(&c), -1);
	conf_free(&c);
}

T(registry_replaces_default)
{
	const char *text;
	struct conf c;

	CHECK_INT(
	    parse(&c, "[registry \"ghcr\"]\nupstream = https://ghcr.io\n"), 0);
	CHECK_INT(c.nregistry, 1);
	CHECK_STR(c.registry[0].name, "ghcr");
	CHECK_STR(c.registry[0].upstream, "https://ghcr.io/");
	CHECK_INT(c.registry[0].is_default, 0);
	CHECK_INT(conf_registry_find(&c, "hub", 3), -1);
	/* the indexes are another matter */
	CHECK_INT(c.nindex, 2);

	/* a later text without [registry] keeps what there is */
	CHECK_INT(conf_parse(&c, "b.conf", "[larder]\nworkers = 2\n", 21,
	                     errbuf, sizeof(errbuf)),
	          0);
	CHECK_INT(c.nregistry, 1);
	CHECK_STR(c.registry[0].name, "ghcr");

	/* and one with [registry] replaces them, reusing a name or not */
	text = "[registry \"ghcr\"]\nupstream = https://other/\n"
	       "[registry \"hub\"]\nupstream = https://registry-1.docker.io\n";
	CHECK_INT(conf_parse(&c, "c.conf", text, strlen(text), errbuf,
	                     sizeof(errbuf)),
	          0);
	CHECK_INT(c.nregistry, 2);
	CHECK_STR(c.registry[0].upstream, "https://other/");
	CHECK_INT(conf_registry_default(&c), -1);
	conf_free(&c);

	/* declaring indexes leaves the built-in registry alone */
	CHECK_INT(parse(&c, "[index \"only\"]\ntype = cache\n"
	                    "upstream = https://h/\n"),
	          0);
	CHECK_INT(c.nindex, 1);
	CHECK_INT(c.nregistry, 1);
	CHECK_STR(c.registry[0].name, "hub");
	CHECK_INT(conf_registry_default(&c), 0);
	conf_free(&c);
}

T(registry_upstream)
{
	struct conf c;

	CHECK_INT(parse(&c, "[registry \"r\"]\n"
	                    "upstream = HTTPS://Registry.Example:5000/v\n"),
	          0);
	CHECK_STR(c.registry[0].upstream, "https://Registry.Example:5000/v/");
	conf_free(&c);
	CHECK_STR(fails("[registry \"r\"]\nupstream = ftp://r.example/\n"),
	          "larder.conf:2: [registry \"r\"]: upstream = "
	          "\"ftp://r.example/\": expected an absolute http:// or "
	          "https:// URL");
	CHECK_CONTAINS(fails("[registry \"r\"]\n"
	                     "upstream = https://r/?x=1\n"),
	               "a query or fragment is not allowed");
	CHECK_STR(fails("[larder]\n[registry \"quay\"]\ncache_ttl = 1m\n"),
	          "larder.conf:2: [registry \"quay\"]: registry quay has no "
	          "upstream (expected the URL of the registry it caches, like "
	          "upstream = https://registry-1.docker.io)");
}

T(registry_times)
{
	struct conf c;

	CHECK_INT(parse_registry(&c, "cache_ttl", "1h"), 0);
	CHECK_INT(c.registry[0].cache_ttl, 3600);
	CHECK_INT(c.registry[0].max_stale, 7 * 86400);
	/* the [larder] keys of the same names are not these */
	CHECK_INT(c.cache_ttl, 300);
	conf_free(&c);
	CHECK_INT(parse_registry(&c, "cache_ttl", "0"), 0);
	CHECK_INT(c.registry[0].cache_ttl, 0);
	conf_free(&c);
	CHECK_INT(parse_registry(&c, "max_stale", "30d"), 0);
	CHECK_INT(c.registry[0].max_stale, 30 * 86400);
	CHECK_INT(c.max_stale, 86400);
	conf_free(&c);
	CHECK_INT(parse_registry(&c, "max_stale", "0"), 0);
	CHECK_INT(c.registry[0].max_stale, 0);
	conf_free(&c);

	CHECK_STR(fails_registry("cache_ttl", "soon"),
	          "larder.conf:3: [registry \"r\"]: cache_ttl = \"soon\": "
	          "expected seconds (300, 5m, 2h, 1d)");
	CHECK_STR(fails_registry("max_stale", "-1"),
	          "larder.conf:3: [registry \"r\"]: max_stale = \"-1\": "
	          "expected seconds (300, 5m, 2h, 1d)");
	CHECK_CONTAINS(fails_registry("max_stale", "99999999999999999999"),
	               "too large");
}

T(registry_trusted_hosts)
{
	static const char *const bad[] = {
	    "*example.com", "a.*.example.com",
	    "*.",           "*",
	    "**.example",   "*.*.example",
	    "x*.a",         "*.[::1]",
	    "https://a/",   "a_b",
	    "*-a.example",
	};
	struct conf c;
	char want[300];

	CHECK_INT(parse_registry(&c, "trusted_hosts",
	                         "  *.CDN.example\tcdn.example:8443 "),
	          0);
	CHECK_STR(c.registry[0].trusted_hosts,
	          "*.cdn.example cdn.example:8443");
	conf_free(&c);
	CHECK_INT(parse_registry(&c, "trusted_hosts", "\"\""), 0);
	CHECK_STR(c.registry[0].trusted_hosts, "");
	conf_free(&c);
	CHECK_INT(parse_registry(&c, "trusted_hosts", "*.a *.b:444 c"), 0);
	CHECK_STR(c.registry[0].trusted_hosts, "*.a *.b:444 c");
	conf_free(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(want, sizeof(want),
		         "larder.conf:3: [registry \"r\"]: trusted_hosts = "
		         "\"%s\": expected host names separated by spaces",
		         bad[i]);
		CHECK_STR(fails_registry("trusted_hosts", bad[i]), want);
	}
	/* an index may use the wildcard too: it is the same check */
	CHECK_INT(parse(&c, "[index \"c\"]\ntype = cache\nupstream = "
	                    "https://h/\ntrusted_hosts = *.pythonhosted.org\n"),
	          0);
	CHECK_STR(c.index[0].trusted_hosts, "*.pythonhosted.org");
	conf_free(&c);
}

T(registry_credentials)
{
	struct conf c;

	CHECK_INT(parse(&c, "[registry \"r\"]\nupstream = https://r/\n"
	                    "username = \"larder bot\"\n"
	                    "password_file = /etc/larder/r.token/\n"),
	          0);
	CHECK_STR(c.registry[0].username, "larder bot");
	CHECK_STR(c.registry[0].password_file, "/etc/larder/r.token");
	conf_free(&c);
	/* both empty is anonymous, as unset */
	CHECK_INT(parse(&c, "[registry \"r\"]\nupstream = https://r/\n"
	                    "username = \"\"\npassword_file = \"\"\n"),
	          0);
	CHECK_STR(c.registry[0].username, "");
	CHECK_STR(c.registry[0].password_file, "");
	conf_free(&c);

	CHECK_STR(fails_registry("password_file", "etc/token"),
	          "larder.conf:3: [registry \"r\"]: password_file = "
	          "\"etc/token\": expected an absolute path");
	CHECK_STR(fails_registry("username", "\"a\x01\""),
	          "larder.conf:3: [registry \"r\"]: username = \"a\\x01\": "
	          "control character: expected text without control "
	          "characters");
	/* "" is none only where none is the default */
	CHECK_CONTAINS(fails_larder("data_dir", "\"\""),
	               "data_dir = \"\": expected an absolute path");

	CHECK_STR(fails("[registry \"r\"]\nupstream = https://r/\n\n"
	                "username = bot\n"),
	          "larder.conf:4: [registry \"r\"]: username and "
	          "password_file go together: username is set but "
	          "password_file is not");
	CHECK_STR(fails("[registry \"r\"]\npassword_file = /t\n"
	                "upstream = https://r/\n"),
	          "larder.conf:2: [registry \"r\"]: username and "
	          "password_file go together: password_file is set but "
	          "username is not");
	CHECK_CONTAINS(fails("[registry \"r\"]\nupstream = https://r/\n"
	                     "username = bot\npassword_file = \"\"\n"),
	               "username is set but password_file is not");
}

T(registry_library_prefix)
{
	static const struct {
		const char *v;
		int want;
	} cases[] = {
	    {"auto", CONF_LIBRARY_AUTO},
	    {"yes", CONF_LIBRARY_YES},
	    {"no", CONF_LIBRARY_NO},
	    {"\"no\"", CONF_LIBRARY_NO},
	};
	struct conf c;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_INT(parse_registry(&c, "library_prefix", cases[i].v), 0);
		CHECK_INT(c.registry[0].library_prefix, cases[i].want);
		conf_free(&c);
	}
	CHECK_STR(fails_registry("library_prefix", "true"),
	          "larder.conf:3: [registry \"r\"]: library_prefix = \"true\": "
	          "expected one of auto, yes, no");
	CHECK_CONTAINS(fails_registry("library_prefix", "Auto"),
	               "expected one of auto, yes, no");
}

T(registry_default_key)
{
	struct conf c;

	CHECK_INT(parse_registry(&c, "default", "yes"), 0);
	CHECK_INT(c.registry[0].is_default, 1);
	conf_free(&c);
	CHECK_INT(parse_registry(&c, "default", "off"), 0);
	CHECK_INT(c.registry[0].is_default, 0);
	conf_free(&c);
	CHECK_STR(fails_registry("default", "maybe"),
	          "larder.conf:3: [registry \"r\"]: default = \"maybe\": "
	          "expected yes or no (also true/false, on/off, 1/0)");

	CHECK_STR(fails("[registry \"a\"]\nupstream = https://a/\n"
	                "default = yes\n"
	                "[registry \"b\"]\nupstream = https://b/\n"
	                "default = no\n"
	                "[registry \"c\"]\nupstream = https://c/\n\n"
	                "default = yes\n"),
	          "larder.conf:10: [registry \"c\"]: default = yes, but so is "
	          "[registry \"a\"] (line 1): at most one registry may be the "
	          "default");
}

T(registry_names)
{
	static const char *const good[] = {
	    "hub",     "ghcr",      "quay-io", "a",         "0",
	    "a.b_c-d", "docker.io", "v2x",     "libraries", "x1",
	};
	static const struct {
		const char *name, *why;
	} bad[] = {
	    {"", "expected 1 to 64 characters"},
	    {"Hub", "expected a-z and 0-9"},
	    {"a b", "expected a-z and 0-9"},
	    {"a/b", "expected a-z and 0-9"},
	    {"a..b", "expected a-z and 0-9"},
	    {"a--b", "expected a-z and 0-9"},
	    {"a__b", "expected a-z and 0-9"},
	    {"a.-b", "expected a-z and 0-9"},
	    {"-a", "expected a-z and 0-9"},
	    {"a-", "expected a-z and 0-9"},
	    {".", "expected a-z and 0-9"},
	    {"_x", "expected a-z and 0-9"},
	    {"+x", "expected a-z and 0-9"},
	    {"v2", "reserved"},
	    {"library", "reserved"},
	};
	char text[512], name65[66];
	struct conf c;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text),
		         "[registry \"%s\"]\nupstream = https://h/\n", good[i]);
		CHECK_INT(parse(&c, text), 0);
		CHECK_INT(conf_registry_find(&c, good[i], strlen(good[i])), 0);
		conf_free(&c);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
		         "[registry \"%s\"]\nupstream = https://h/\n",
		         bad[i].name);
		CHECK_CONTAINS(fails(text), "larder.conf:1: [registry \"");
		CHECK_CONTAINS(errbuf, "]: bad registry name: ");
		CHECK_CONTAINS(errbuf, bad[i].why);
	}
	CHECK_STR(fails("[registry \"quay io\"]\n"),
	          "larder.conf:1: [registry \"quay io\"]: bad registry name: "
	          "expected a-z and 0-9, with single '.', '_' or '-' between "
	          "them (like hub, ghcr, quay-io)");

	memset(name65, 'n', 65);
	name65[65] = '\0';
	snprintf(text, sizeof(text), "[registry \"%s\"]\n", name65);
	CHECK_CONTAINS(fails(text), "expected 1 to 64 characters");
	name65[64] = '\0';
	snprintf(text, sizeof(text),
	         "[registry \"%s\"]\nupstream = https://h/\n", name65);
	CHECK_INT(parse(&c, text), 0);
	CHECK_STR(c.registry[0].name, name65);
	conf_free(&c);
}

T(registry_duplicates_and_limits)
{
	struct buf b;
	struct conf c;

	CHECK_STR(fails("[registry \"r\"]\nupstream = https://a/\n"
	                "[index \"p\"]\ntype = cache\nupstream = https://h/\n"
	                "[registry \"r\"]\n"),
	          "larder.conf:6: duplicate section [registry \"r\"] (first at "
	          "line 1)");
	CHECK_STR(fails("[registry \"r\"]\nupstream = https://a/\n"
	                "upstream = https://b/\n"),
	          "larder.conf:3: [registry \"r\"]: upstream given twice "
	          "(first at line 2)");
	/* an index and a registry may share a name: /NAME/ and /v2/NAME/ */
	CHECK_INT(parse(&c, "[index \"hub\"]\ntype = cache\n"
	                    "upstream = https://h/\n"
	                    "[registry \"hub\"]\nupstream = https://r/\n"),
	          0);
	conf_free(&c);

	buf_init(&b, 1 << 16);
	for (int i = 0; i < CONF_MAX_REGISTRIES; i++)
		buf_addf(&b, "[registry \"r%d\"]\nupstream = https://h/\n", i);
	CHECK_INT(parse(&c, buf_str(&b)), 0);
	CHECK_INT(c.nregistry, CONF_MAX_REGISTRIES);
	CHECK_INT(conf_registry_find(&c, "r15", 3), 15);
	conf_free(&c);
	buf_adds(&b, "[registry \"one-more\"]\n");
	CHECK_STR(
	    fails(buf_str(&b)),
	    "larder.conf:33: [registry \"one-more\"]: too many registries "
	    "(at most 16)");
	buf_free(&b);
}

T(registry_unknown_keys)
{
	CHECK_STR(fails("[registry \"r\"]\nupstream = https://r/\n"
	                "upstrem = x\n"),
	          "larder.conf:3: unknown key \"upstrem\" in [registry \"r\"] "
	          "(did you mean upstream?)");
	CHECK_STR(fails("[registry \"r\"]\ndefualt = yes\n"),
	          "larder.conf:2: unknown key \"defualt\" in [registry \"r\"] "
	          "(did you mean default?)");
	CHECK_STR(fails("[registry \"r\"]\npolicy = fallback\n"),
	          "larder.conf:2: unknown key \"policy\" in [registry \"r\"] (it "
	          "belongs in [index \"NAME\"] sections)");
	CHECK_STR(fails("[registry \"r\"]\nworkers = 2\n"),
	          "larder.conf:2: unknown key \"workers\" in [registry \"r\"] "
	          "(it belongs in [larder])");
	CHECK_STR(fails("[registry \"r\"]\nis_default = yes\n"),
	          "larder.conf:2: unknown key \"is_default\" in [registry "
	          "\"r\"]");
	CHECK_STR(fails("[larder]\ndefault = yes\n"),
	          "larder.conf:2: unknown key \"default\" in [larder] (it "
	          "belongs in [registry \"NAME\"] sections)");
	CHECK_STR(
	    fails("[index \"p\"]\ntype = cache\nusername = x\n"),
	    "larder.conf:3: unknown key \"username\" in [index \"p\"] (it "
	    "belongs in [registry \"NAME\"] sections)");
}

static void round_trip(const struct conf *c);

/* type = hosted: no upstream, pushes; read, upload_ttl, max_upload_size. */
T(registry_hosted)
{
	struct conf c;

	CHECK_INT(parse(&c, "[registry \"mine\"]\ntype = hosted\n"
	                    "read = token\nupload_ttl = 10m\n"
	                    "max_upload_size = 64M\ndelete = yes\n"),
	          0);
	CHECK_INT(c.registry[0].allow_delete, 1);
	CHECK_INT(c.registry[0].type, CONF_REGISTRY_HOSTED);
	CHECK_INT(c.registry[0].read, CONF_READ_TOKEN);
	CHECK_INT((int)c.registry[0].upload_ttl, 600);
	CHECK_INT((int)(c.registry[0].max_upload_size >> 20), 64);
	round_trip(&c);
	conf_free(&c);
	CHECK_INT(parse(&c, "[registry \"r\"]\nupstream = https://r/\n"), 0);
	CHECK_INT(c.registry[0].type, CONF_REGISTRY_CACHE);
	CHECK_INT(c.registry[0].read, CONF_READ_ANONYMOUS);
	conf_free(&c);
	CHECK_STR(fails("[registry \"r\"]\ntype = hosted\n"
	                "upstream = https://r/\n"),
	          "larder.conf:3: [registry \"r\"]: a hosted registry has no "
	          "upstream");
	CHECK_CONTAINS(fails("[registry \"r\"]\ntype = cache\n"),
	               "registry r has no upstream");
	CHECK_CONTAINS(fails("[registry \"r\"]\ntype = virtual\n"),
	               "a virtual registry needs layers");
	CHECK_INT(parse(&c, "[registry \"h\"]\ntype = hosted\n"
	                    "[registry \"c\"]\nupstream = https://r/\n"
	                    "[registry \"v\"]\ntype = virtual\n"
	                    "layers = h c\ndefault = yes\n"),
	          0);
	CHECK_INT(c.registry[2].type, CONF_REGISTRY_VIRTUAL);
	CHECK_INT((int)c.registry[2].nlayers, 2);
	CHECK_INT((int)c.registry[2].layer[0], 0);
	CHECK_INT((int)c.registry[2].layer[1], 1);
	round_trip(&c);
	conf_free(&c);
	CHECK_CONTAINS(fails("[registry \"h\"]\ntype = hosted\n"
	                     "[registry \"v\"]\ntype = virtual\n"
	                     "layers = h nope\n"),
	               "layer \"nope\" is not a hosted or cache registry");
	CHECK_CONTAINS(fails("[registry \"v\"]\ntype = virtual\nlayers = v\n"),
	               "layer \"v\"");
	CHECK_CONTAINS(fails("[registry \"h\"]\ntype = hosted\nread = token\n"
	                     "[registry \"v\"]\ntype = virtual\nlayers = h\n"),
	               "so v needs read = token too");
	CHECK_CONTAINS(fails("[registry \"h\"]\ntype = hosted\nlayers = h\n"),
	               "only a virtual registry has layers");
	CHECK_CONTAINS(fails("[registry \"h\"]\ntype = hosted\n"
	                     "[registry \"v\"]\ntype = virtual\nlayers = h\n"
	                     "upstream = https://x/\n"),
	               "a virtual registry has no upstream");
	CHECK_CONTAINS(fails("[registry \"r\"]\ntype = hosted\nread = some\n"),
	               "larder.conf:3:");
}

T(registry_failed_parse_changes_nothing)
{
	struct conf c;
	struct buf before, after;
	const char *text = "[registry \"a\"]\nupstream = https://a/\n"
	                   "default = yes\n"
	                   "[registry \"b\"]\nupstream = https://b/\n"
	                   "default = yes\n";

	CHECK_INT(conf_defaults(&c), 0);
	dump(&c, &before);
	CHECK_INT(conf_parse(&c, "bad.conf", text, strlen(text), errbuf,
	                     sizeof(errbuf)),
	          EINVAL);
	CHECK_CONTAINS(errbuf, "bad.conf:6: [registry \"b\"]: default = yes");
	CHECK_STR(dump(&c, &after), buf_str(&before));
	CHECK_INT(c.nregistry, 1);
	CHECK_STR(c.registry[0].name, "hub");
	buf_free(&before);
	buf_free(&after);
	conf_free(&c);
}

T(failed_parse_changes_nothing)
{
	struct conf c;
	struct buf before, after;

	const char *text = "[larder]\ncache_ttl = 1\nworkers = 7\n"
	                   "[index \"x\"]\ntype = cache\n"
	                   "upstream = https://x/\nnope = 1\n";

	CHECK_INT(conf_defaults(&c), 0);
	dump(&c, &before);
	CHECK_INT(conf_parse(&c, "bad.conf", text, strlen(text), errbuf,
	                     sizeof(errbuf)),
	          EINVAL);
	CHECK_CONTAINS(errbuf, "bad.conf:7: unknown key \"nope\"");
	CHECK_STR(dump(&c, &after), buf_str(&before));
	CHECK_INT(c.nindex, 2);
	buf_free(&before);
	buf_free(&after);
	conf_free(&c);
}

T(small_or_missing_err_buffer)
{
	struct conf c;
	char tiny[8];

	CHECK_INT(conf_defaults(&c), 0);
	CHECK_INT(conf_parse(&c, "larder.conf", "[larder]\nworkers = x\n", 21,
	                     tiny, sizeof(tiny)),
	          EINVAL);
	CHECK_STR(tiny, "larder.");
	CHECK_INT(conf_parse(&c, "larder.conf", "[larder]\nworkers = x\n", 21,
	                     NULL, 0),
	          EINVAL);
	CHECK_INT(conf_parse(&c, NULL, "[larder]\nworkers = x\n", 21, errbuf,
	                     sizeof(errbuf)),
	          EINVAL);
	CHECK_CONTAINS(errbuf, "-:2: workers");
	conf_free(&c);
}

/* An upstream URL as the dump writes it: its password masked. */
static const char *shown_url(const char *url)
{
	static char out[4096];

	return url ? url_redact(url, out, sizeof(out)) : NULL;
}

/* Checks that dumping c, parsing that and dumping again gives the same
 * text and the same values (an upstream's password reads back as ***). */
static void round_trip(const struct conf *c)
{
	struct conf d;
	struct buf one, two;

	dump(c, &one);
	CHECK_INT(parse(&d, buf_str(&one)), 0);
	CHECK_STR(errbuf, "");
	/* the dump of a parse has no source; give it c's to compare */
	if (c->source)
		d.source = strdup(c->source);
	CHECK_STR(dump(&d, &two), buf_str(&one));

	CHECK_STR(d.data_dir, c->data_dir);
	CHECK_INT(d.sendfile, c->sendfile);
	CHECK_STR(d.sendfile_prefix, c->sendfile_prefix);
	CHECK_INT(d.cache_ttl, c->cache_ttl);
	CHECK_INT(d.max_stale, c->max_stale);
	CHECK_INT(d.negative_ttl, c->negative_ttl);
	CHECK_INT(d.connect_timeout, c->connect_timeout);
	CHECK_INT(d.fetch_timeout, c->fetch_timeout);
	CHECK_INT(d.max_page_size, c->max_page_size);
	CHECK_INT(d.trust_forwarded, c->trust_forwarded);
	CHECK_INT(d.max_requests, c->max_requests);
	CHECK_INT(d.workers, c->workers);
	CHECK_INT(d.nindex, c->nindex);
	for (size_t i = 0; i < d.nindex && i < c->nindex; i++) {
		const struct conf_index *x = &c->index[i], *y = &d.index[i];

		CHECK_STR(y->name, x->name);
		CHECK_INT(y->type, x->type);
		if (x->type == CONF_INDEX_CACHE) {
			CHECK_STR(y->upstream, shown_url(x->upstream));
			CHECK_STR(y->trusted_hosts, x->trusted_hosts);
		} else {
			CHECK_STR(y->layers, x->layers);
			CHECK_INT(y->nlayers, x->nlayers);
			for (size_t l = 0; l < y->nlayers; l++)
				CHECK_INT(y->layer[l], x->layer[l]);
		}
	}
	CHECK_INT(d.nregistry, c->nregistry);
	for (size_t i = 0; i < d.nregistry && i < c->nregistry; i++) {
		const struct conf_registry *x = &c->registry[i];
		const struct conf_registry *y = &d.registry[i];

		CHECK_STR(y->name, x->name);
		if (x->upstream)
			CHECK_STR(y->upstream, shown_url(x->upstream));
		else
			CHECK_INT(y->upstream == NULL, 1);
		CHECK_INT(y->type, x->type);
		CHECK_INT(y->read, x->read);
		CHECK_INT(y->upload_ttl, x->upload_ttl);
		CHECK_INT(y->max_upload_size, x->max_upload_size);
		CHECK_INT(y->allow_delete, x->allow_delete);
		CHECK_INT(y->nlayers, x->nlayers);
		CHECK_INT(y->cache_ttl, x->cache_ttl);
		CHECK_INT(y->max_stale, x->max_stale);
		CHECK_STR(y->trusted_hosts, x->trusted_hosts);
		CHECK_STR(y->username, x->username);
		CHECK_STR(y->password_file, x->password_file);
		CHECK_INT(y->library_prefix, x->library_prefix);
		CHECK_INT(y->is_default, x->is_default);
	}
	buf_free(&one);
	buf_free(&two);
	conf_free(&d);
}

T(dump_round_trip)
{
	struct conf c;
	struct buf b;

	CHECK_INT(conf_defaults(&c), 0);
	CHECK_CONTAINS(dump(&c, &b), "built-in");
	CHECK_CONTAINS(buf_str(&b),
	               "\n[larder]\ndata_dir = " LOCALSTATEDIR "/lib/larder\n");
	CHECK_CONTAINS(buf_str(&b), "\n[index \"root/pypi\"]\ntype = virtual\n"
	                            "layers = pypi\n");
	buf_free(&b);
	round_trip(&c);
	conf_free(&c);

	/* values that need quoting, units, every enum */
	CHECK_INT(parse(&c,
	                "[larder]\n"
	                "data_dir = \"/srv/odd #dir ;x \\\"q\\\" \\\\\"\n"
	                "sendfile = stream\n"
	                "sendfile_prefix = /files/\n"
	                "cache_ttl = 1d\nmax_stale = 0\n"
	                "negative_ttl = 90s\nconnect_timeout = 1\n"
	                "fetch_timeout = 2h\nmax_page_size = 1536k\n"
	                "trust_forwarded = on\nmax_requests = 0\n"
	                "workers = 32\n"
	                "[index \"hosted/x\"]\ntype = cache\n"
	                "upstream = https://u:p@h:8443/s\n"
	                "trusted_hosts = \"\"\n"
	                "[index \"v\"]\ntype = virtual\n"
	                "layers = w hosted/x\n"
	                "[index \"w\"]\ntype = virtual\nlayers = hosted/x\n"),
	          0);
	CHECK_CONTAINS(dump(&c, &b), "max_page_size = 1536k\n");
	CHECK_CONTAINS(buf_str(&b), "cache_ttl = 86400\n");
	CHECK_CONTAINS(buf_str(&b), "trusted_hosts = \"\"\n");
	/* larder config check never prints an upstream's password */
	CHECK_CONTAINS(buf_str(&b), "upstream = https://u:***@h:8443/s/\n");
	CHECK_INT(strstr(buf_str(&b), "u:p@") != NULL, 0);
	CHECK_CONTAINS(buf_str(&b), "data_dir = \"/srv/odd #dir ;x \\\"q\\\" "
	                            "\\\\\"\n");
	buf_free(&b);
	round_trip(&c);
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "max_page_size", "3"), 0);
	round_trip(&c);
	conf_free(&c);

	/* the built-in registry, and declared ones with every key */
	CHECK_INT(conf_defaults(&c), 0);
	CHECK_CONTAINS(dump(&c, &b),
	               "\n[registry \"hub\"]\n"
	               "upstream = https://registry-1.docker.io/\n"
	               "cache_ttl = 300\nmax_stale = 604800\n"
	               "trusted_hosts = " REGISTRY_HOSTS "\n"
	               "username = \"\"\npassword_file = \"\"\n"
	               "library_prefix = auto\ndefault = yes\n");
	buf_free(&b);
	conf_free(&c);
	CHECK_INT(parse(&c, "[registry \"ghcr\"]\n"
	                    "upstream = https://ghcr.io\n"
	                    "cache_ttl = 1m\nmax_stale = 0\n"
	                    "trusted_hosts = \"\"\n"
	                    "username = \"bot #1; \\\"x\\\"\"\n"
	                    "password_file = /etc/larder/ghcr.token\n"
	                    "library_prefix = no\n"
	                    "[registry \"quay-io\"]\n"
	                    "upstream = http://127.0.0.1:5000/\n"
	                    "trusted_hosts = *.cdn.example a.example:8443\n"
	                    "library_prefix = yes\ndefault = on\n"),
	          0);
	CHECK_CONTAINS(dump(&c, &b), "username = \"bot #1; \\\"x\\\"\"\n");
	CHECK_CONTAINS(buf_str(&b), "\n[registry \"quay-io\"]\n");
	CHECK_CONTAINS(buf_str(&b), "default = yes\n");
	CHECK_CONTAINS(buf_str(&b), "library_prefix = no\n");
	buf_free(&b);
	round_trip(&c);
	conf_free(&c);

	/* the source goes in the header, and a control character in it
	 * cannot break the file */
	CHECK_INT(conf_defaults(&c), 0);
	c.source = strdup("/etc/larder/a\nb.conf");
	CHECK_CONTAINS(dump(&c, &b), "read from\n# /etc/larder/a?b.conf\n");
	buf_free(&b);
	round_trip(&c);
	conf_free(&c);
}

T(dump_buffer_limit)
{
	struct conf c;
	struct buf b;

	CHECK_INT(conf_defaults(&c), 0);
	buf_init(&b, 64);
	CHECK_INT(conf_dump(&c, &b), E2BIG);
	buf_free(&b);
	buf_init(&b, 64);
	CHECK_INT(conf_man(&b), E2BIG);
	buf_free(&b);
	conf_free(&c);
}

/* Undoes the roff escapes conf_man uses, for reading text back. */
static void unroff(char *s)
{
	char *w = s;

	while (*s) {
		if (s[0] == '\\' && s[1] == '-') {
			*w++ = '-';
			s += 2;
		} else if (s[0] == '\\' && s[1] == 'e') {
			*w++ = '\\';
			s += 2;
		} else if (s[0] == '\\' && s[1] == '&') {
			s += 2;
		} else {
			*w++ = *s++;
		}
	}
	*w = '\0';
}

static const char *const registry_keys[] = {
    "upstream", "cache_ttl",     "max_stale",      "trusted_hosts",
    "username", "password_file", "library_prefix", "default",
};

T(man_page)
{
	static const char *const index_keys[] = {"type", "upstream", "layers",
	                                         "trusted_hosts"};
	static const char *const parts[] = {
	    ".TH LARDER.CONF 5",
	    ".SH NAME",
	    ".SH SYNOPSIS",
	    ".SH DESCRIPTION",
	    ".SH \"THE [larder] SECTION\"",
	    "SECTIONS\"",
	    ".SH \"DEFAULT INDEXES\"",
	    ".SH EXAMPLE",
	    ".SH FILES",
	    ".SH \"SEE ALSO\"",
	    ".BR larder (8)",
	    "LARDER_CONFIG",
	    SYSCONFDIR "/larder/larder.conf",
	    "x\\-accel\\-redirect",
	    "seconds",
	    "default \\fB300\\fR",
	    "default \\fB64M\\fR",
	    "files.pythonhosted.org",
	    "https://pypi.org/simple/",
	    "v2",
	    "+health",
	    "_larder",
	    ".SH \"[registry \\(dqNAME\\(dq] SECTIONS\"",
	    ".SH \"DEFAULT REGISTRIES\"",
	    "https://registry\\-1.docker.io",
	    "default \\fB5m\\fR",
	    "default \\fB7d\\fR",
	    "default \\fB\\(dq\\(dq\\fR",
	    "\\fIauto\\fR | \\fIyes\\fR | \\fIno\\fR",
	    "*.cloudfront.net",
	    "registry\\-mirrors",
	    "library",
	};
	struct conf c;
	struct buf man, d;
	char *ex, *end, key[64];
	const char *line;

	buf_init(&man, 1 << 20);
	CHECK_INT(conf_man(&man), 0);
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		CHECK_CONTAINS(buf_str(&man), parts[i]);

	/* every key, taken from a dump so none is missed */
	CHECK_INT(conf_defaults(&c), 0);
	dump(&c, &d);
	for (line = buf_str(&d); line && *line; line = strchr(line, '\n')) {
		if (*line == '\n')
			line++;
		if (sscanf(line, "%63[a-z_] = ", key) == 1 &&
		    strstr(line, " = ")) {
			char want[80];

			snprintf(want, sizeof(want), ".B %s\n", key);
			CHECK_CONTAINS(buf_str(&man), want);
		}
	}
	for (size_t i = 0; i < 4; i++) {
		char want[80];

		snprintf(want, sizeof(want), ".TP\n.B %s\n", index_keys[i]);
		CHECK_CONTAINS(buf_str(&man), want);
	}
	/* and the registry keys, after the registry part begins */
	line = strstr(buf_str(&man), "[registry \\(dqNAME\\(dq] SECTIONS");
	CHECK(line != NULL);
	for (size_t i = 0; line && i < 8; i++) {
		char want[80];

		snprintf(want, sizeof(want), ".TP\n.B %s\n", registry_keys[i]);
		CHECK_CONTAINS(line, want);
	}
	buf_free(&d);
	conf_free(&c);

	/* the EXAMPLE is a valid configuration */
	ex = strstr(buf_str(&man), ".SH EXAMPLE\n");
	CHECK(ex != NULL);
	if (ex) {
		ex = strstr(ex, ".nf\n");
		CHECK(ex != NULL);
	}
	if (ex) {
		ex = strdup(ex + 4);
		end = ex ? strstr(ex, ".fi\n") : NULL;
		CHECK(end != NULL);
		if (end) {
			*end = '\0';
			unroff(ex);
			CHECK_INT(parse(&c, ex), 0);
			CHECK_STR(errbuf, "");
			CHECK_INT(c.nindex, 4);
			CHECK_INT(c.index[3].policy, CONF_POLICY_PRIVATE_FIRST);
			CHECK_INT(c.sendfile, CONF_SENDFILE_XSENDFILE);
			CHECK_INT(c.nregistry, 2);
			CHECK_INT(conf_registry_default(&c), 0);
			CHECK_INT(conf_registry_find(&c, "ghcr", 4), 1);
			conf_free(&c);
		}
		free(ex);
	}
	/* no line starts with the other roff control character */
	CHECK(buf_str(&man)[0] == '.');
	CHECK(strstr(buf_str(&man), "\n'") == NULL);
	buf_free(&man);
}

T(load_from_env)
{
	struct conf c;
	char *path, *real;
	int rc;

	path = temp_file("[larder]\ncache_ttl = 2m\n"
	                 "[index \"mine\"]\ntype = cache\n"
	                 "upstream = https://m/\n");
	CHECK(path != NULL);
	if (!path)
		return;
	setenv("LARDER_CONFIG", path, 1);
	rc = conf_load(&c, NULL, errbuf, sizeof(errbuf));
	CHECK_INT(rc, 0);
	if (!rc) {
		real = realpath(path, NULL);
		CHECK_STR(c.source, real);
		CHECK(c.source && c.source[0] == '/');
		free(real);
		CHECK_INT(c.cache_ttl, 120);
		CHECK_INT(c.nindex, 1);
		CHECK_STR(c.index[0].name, "mine");
		conf_free(&c);
	}

	/* a path given wins over $LARDER_CONFIG, and source is canonical
	 * even when the name given is not */
	setenv("LARDER_CONFIG", "/nonexistent/larder.conf", 1);
	{
		char rel[PATH_MAX];

		snprintf(rel, sizeof(rel), "/tmp/.//%s", path + 5);
		rc = conf_load(&c, rel, errbuf, sizeof(errbuf));
		CHECK_INT(rc, 0);
		if (!rc) {
			CHECK_STR(c.source, path);
			conf_free(&c);
		}
	}
	unsetenv("LARDER_CONFIG");
	unlink(path);
	free(path);
}

T(load_missing_files)
{
	struct conf c;

	setenv("LARDER_CONFIG", "/nonexistent/larder.conf", 1);
	memset(&c, 0x5a, sizeof(c));
	CHECK_INT(conf_load(&c, NULL, errbuf, sizeof(errbuf)), ENOENT);
	CHECK_STR(errbuf, "/nonexistent/larder.conf (from $LARDER_CONFIG): "
	                  "No such file or directory (2)");
	/* nothing to free, and freeing it anyway is harmless */
	CHECK(c.data_dir == NULL);
	CHECK_INT(c.nindex, 0);
	conf_free(&c);
	unsetenv("LARDER_CONFIG");

	CHECK_INT(
	    conf_load(&c, "/nonexistent/given.conf", errbuf, sizeof(errbuf)),
	    ENOENT);
	CHECK_STR(errbuf, "/nonexistent/given.conf: No such file or directory "
	                  "(2)");

	CHECK_INT(conf_load(&c, "/tmp", errbuf, sizeof(errbuf)), EISDIR);
	CHECK_CONTAINS(errbuf, "/tmp: Is a directory");
}

T(load_default_file)
{
	struct conf c;
	int rc;

	/* only when this machine has no default file */
	if (access(SYSCONFDIR "/larder/larder.conf", F_OK) == 0 ||
	    errno != ENOENT) {
		printf("# skipped: " SYSCONFDIR "/larder/larder.conf exists\n");
		return;
	}
	unsetenv("LARDER_CONFIG");
	rc = conf_load(&c, NULL, errbuf, sizeof(errbuf));
	CHECK_INT(rc, 0);
	CHECK(c.source == NULL);
	CHECK_INT(c.nindex, 2);
	CHECK_INT(c.cache_ttl, 300);
	conf_free(&c);
	/* an empty $LARDER_CONFIG is no $LARDER_CONFIG */
	setenv("LARDER_CONFIG", "", 1);
	rc = conf_load(&c, NULL, errbuf, sizeof(errbuf));
	CHECK_INT(rc, 0);
	CHECK(c.source == NULL);
	conf_free(&c);
	unsetenv("LARDER_CONFIG");
}

T(load_bad_files)
{
	struct conf c;
	struct buf big;
	char *path;

	path = temp_file("[larder]\n\nworkers = none\n");
	CHECK(path != NULL);
	if (!path)
		return;
	CHECK_INT(conf_load(&c, path, errbuf, sizeof(errbuf)), EINVAL);
	CHECK_CONTAINS(errbuf, path);
	CHECK_CONTAINS(errbuf, ":3: workers = \"none\": expected a whole");
	CHECK(c.data_dir == NULL);
	unlink(path);
	free(path);

	/* bigger than 1 MiB, even if it is all comment */
	buf_init(&big, 2 << 20);
	while (big.len <= 1024 * 1024)
		buf_adds(&big, "# padding padding padding padding padding\n");
	path = temp_file(buf_str(&big));
	buf_free(&big);
	CHECK(path != NULL);
	if (!path)
		return;
	CHECK_INT(conf_load(&c, path, errbuf, sizeof(errbuf)), EFBIG);
	CHECK_CONTAINS(errbuf, "bigger than 1048576 bytes");
	unlink(path);
	free(path);
}

T(sample_config)
{
	static const char *const index_keys[] = {"type", "upstream", "layers",
	                                         "trusted_hosts"};
	struct conf c, def;
	struct buf want, got, on;
	char *text, lkeys[32][64], pat[80];
	const char *line;
	size_t n, nkeys = 0;
	int in_larder = 0;

	text = read_all(SRCDIR "/conf/larder.conf");
	CHECK(text != NULL);
	if (!text)
		return;
	/* read as larder reads it: its include of conf.d/ finds nothing */
	CHECK_INT(conf_load(&c, SRCDIR "/conf/larder.conf", errbuf,
	                    sizeof(errbuf)), 0);
	CHECK_STR(errbuf, "");
	CHECK_CONTAINS(text, "\ninclude = conf.d/*.conf\n");
	free(c.source); /* the dump names its source */
	c.source = NULL;
	/* as shipped it is exactly the defaults */
	CHECK_INT(conf_defaults(&def), 0);
	CHECK_STR(dump(&c, &got), dump(&def, &want));
	buf_free(&got);
	conf_free(&c);

	/* the [larder] keys, from the dump so none is missed */
	for (line = buf_str(&want); *line; line += n + (line[n] == '\n')) {
		n = strcspn(line, "\n");
		if (line[0] == '[')
			in_larder = !strncmp(line, "[larder]", 8);
		else if (in_larder && nkeys < 32 &&
		         sscanf(line, "%63[a-z_] = ", lkeys[nkeys]) == 1)
			nkeys++;
	}
	CHECK_INT(nkeys, 27);
	for (size_t i = 0; i < nkeys; i++) {
		snprintf(pat, sizeof(pat), "\n# %s = ", lkeys[i]);
		CHECK_CONTAINS(text, pat);
	}
	for (size_t i = 0; i < 4; i++) {
		snprintf(pat, sizeof(pat), "%s = ", index_keys[i]);
		CHECK_CONTAINS(text, pat);
	}
	/* each registry key is described, and there is an example of
	 * another registry */
	for (size_t i = 0; i < 8; i++) {
		snprintf(pat, sizeof(pat), "\n#   %s = ", registry_keys[i]);
		CHECK_CONTAINS(text, pat);
	}
	CHECK_CONTAINS(text, "\n[registry \"hub\"]\n");
	CHECK_CONTAINS(text, "\n# [registry \"ghcr\"]\n");

	/* uncommenting each "# key = default" line changes nothing (but
	 * data_dir, which depends on the build) */
	buf_init(&on, 1 << 20);
	for (line = text; *line; line += n + (line[n] == '\n')) {
		int uncomment = 0;

		n = strcspn(line, "\n");
		for (size_t i = 0; i < nkeys && !strncmp(line, "# ", 2); i++) {
			snprintf(pat, sizeof(pat), "# %s = ", lkeys[i]);
			if (!strncmp(line, pat, strlen(pat)))
				uncomment = 1;
		}
		if (!strncmp(line, "# trusted_hosts = files.pythonhosted.org\n",
		             41))
			uncomment = 1;
		if (!strncmp(line, "include = ", 10))
			continue; /* text, not a file: it includes nothing */
		buf_add(&on, line + (uncomment ? 2 : 0),
		        n - (uncomment ? 2 : 0));
		buf_adds(&on, "\n");
	}
	CHECK_CONTAINS(buf_str(&on), "\ncache_ttl = 300\n");
	CHECK_CONTAINS(buf_str(&on), "\nworkers = 4\n");
	CHECK_CONTAINS(buf_str(&on), "\ntrusted_hosts = files.python");
	CHECK_INT(parse(&c, buf_str(&on)), 0);
	CHECK_STR(errbuf, "");
	free(c.data_dir);
	c.data_dir = strdup(def.data_dir);
	CHECK_STR(dump(&c, &got), buf_str(&want));
	buf_free(&got);
	buf_free(&want);
	buf_free(&on);
	conf_free(&c);
	conf_free(&def);
	free(text);
}

/* synthesize_metadata: ranges by default; an index's own value wins over
 * [larder]'s, which it follows when unset; a word outside the three is
 * refused. */
T(synthesize_metadata_key)
{
	struct conf c;
	int pypi, own;

	CHECK_INT(conf_defaults(&c), 0);
	CHECK_INT(c.synthesize_metadata, CONF_SYNTH_RANGES);
	pypi = conf_index_find(&c, "pypi");
	CHECK(pypi >= 0);
	CHECK_INT(c.index[pypi].synthesize_metadata, -1);
	conf_free(&c);

	CHECK_INT(parse(&c, "[index \"own\"]\ntype = cache\n"
	                    "upstream = https://u.example/simple/\n"
	                    "synthesize_metadata = verified\n"
	                    "[index \"other\"]\ntype = cache\n"
	                    "upstream = https://v.example/simple/\n"
	                    "[larder]\nsynthesize_metadata = no\n"),
	          0);
	CHECK_STR(errbuf, "");
	own = conf_index_find(&c, "own");
	pypi = conf_index_find(&c, "other");
	CHECK(own >= 0 && pypi >= 0);
	CHECK_INT(conf_inherit(c.index[own].synthesize_metadata,
	                       c.synthesize_metadata),
	          CONF_SYNTH_VERIFIED);
	CHECK_INT(conf_inherit(c.index[pypi].synthesize_metadata,
	                       c.synthesize_metadata),
	          CONF_SYNTH_NO);
	conf_free(&c);
	CHECK(parse(&c, "[larder]\nsynthesize_metadata = sometimes\n") != 0);
	CHECK_CONTAINS(errbuf, "synthesize_metadata");
	conf_free(&c);
}

/* min_release_age, exclude_newer, release_age_exempt, offline and
 * stale_while_revalidate: [larder] keys that a cache index (and, for
 * offline, a registry) may set for itself; unset, it follows [larder],
 * whichever order the sections come in. */
T(cooldown_keys)
{
	struct conf c;
	struct buf b;
	int pypi;

	CHECK_INT(conf_defaults(&c), 0);
	CHECK_INT(c.min_release_age, 0);
	CHECK_INT(c.exclude_newer, 0);
	CHECK_STR(c.release_age_exempt, "");
	CHECK_INT(c.offline, 0);
	CHECK_INT(c.stale_while_revalidate, 0);
	pypi = conf_index_find(&c, "pypi");
	CHECK(pypi >= 0);
	CHECK_INT(c.index[pypi].min_release_age, -1);
	CHECK_INT(c.index[pypi].offline, -1);
	CHECK(c.index[pypi].release_age_exempt == NULL);
	CHECK_INT(c.registry[0].offline, -1);
	conf_free(&c);

	/* the built-in indexes follow a [larder] that comes after them */
	CHECK_INT(parse(&c, "[larder]\nmin_release_age = 7d\n"
	                    "exclude_newer = 2026-01-01T00:00:00Z\n"
	                    "release_age_exempt = Cert_Ifi corp-*\n"
	                    "offline = yes\nstale_while_revalidate = 1m\n"),
	          0);
	CHECK_STR(errbuf, "");
	pypi = conf_index_find(&c, "pypi");
	CHECK_INT(conf_inherit(c.index[pypi].min_release_age,
	                       c.min_release_age),
	          7 * 86400);
	CHECK_INT(conf_inherit(c.index[pypi].exclude_newer, c.exclude_newer),
	          1767225600);
	CHECK_STR(c.release_age_exempt, "cert-ifi corp-*");
	CHECK_INT(conf_inherit(c.index[pypi].offline, c.offline), 1);
	CHECK_INT(conf_inherit(c.registry[0].offline, c.offline), 1);
	CHECK_INT(conf_inherit(c.index[pypi].stale_while_revalidate,
	                       c.stale_while_revalidate),
	          60);
	/* a dump says what follows [larder], and reads back the same */
	CHECK_CONTAINS(dump(&c, &b), "\n# min_release_age: as in [larder]\n");
	CHECK_CONTAINS(buf_str(&b), "\nexclude_newer = 2026-01-01T00:00:00Z\n");
	CHECK_CONTAINS(buf_str(&b), "\nmin_release_age = 604800\n");
	{
		struct conf again;
		struct buf b2;

		CHECK_INT(parse(&again, buf_str(&b)), 0);
		CHECK_STR(errbuf, "");
		CHECK_STR(dump(&again, &b2), buf_str(&b));
		buf_free(&b2);
		conf_free(&again);
	}
	buf_free(&b);
	conf_free(&c);

	/* an index's own value wins, 0 and "" included */
	CHECK_INT(parse(&c, "[index \"c\"]\ntype = cache\n"
	                    "upstream = https://u.example/simple/\n"
	                    "min_release_age = 0\nexclude_newer = 2025-06-01\n"
	                    "release_age_exempt = \"\"\noffline = no\n"
	                    "[larder]\nmin_release_age = 7d\noffline = yes\n"
	                    "release_age_exempt = certifi\n"),
	          0);
	CHECK_STR(errbuf, "");
	CHECK_INT(conf_inherit(c.index[0].min_release_age, c.min_release_age),
	          0);
	CHECK_INT(c.index[0].exclude_newer, 1748736000);
	CHECK_STR(c.index[0].release_age_exempt, "");
	CHECK_INT(conf_inherit(c.index[0].offline, c.offline), 0);
	CHECK_CONTAINS(dump(&c, &b), "\n[index \"c\"]\n");
	CHECK_CONTAINS(buf_str(&b), "\nmin_release_age = 0\n");
	CHECK_CONTAINS(buf_str(&b), "\nexclude_newer = 2025-06-01T00:00:00Z\n");
	CHECK_CONTAINS(buf_str(&b), "\nrelease_age_exempt = \"\"\n");
	buf_free(&b);
	conf_free(&c);

	/* exclude_newer = "" is none */
	CHECK_INT(parse_larder(&c, "exclude_newer", "\"\""), 0);
	CHECK_INT(c.exclude_newer, 0);
	CHECK_CONTAINS(dump(&c, &b), "\nexclude_newer = \"\"\n");
	buf_free(&b);
	conf_free(&c);
}

T(cooldown_key_errors)
{
	CHECK_CONTAINS(fails_larder("exclude_newer", "2026-13-01"),
	               "larder.conf:2: exclude_newer = \"2026-13-01\": "
	               "expected an RFC 3339 time in UTC");
	CHECK_CONTAINS(fails_larder("exclude_newer", "yesterday"),
	               "expected an RFC 3339 time");
	CHECK_CONTAINS(fails_larder("exclude_newer", "1969-12-31"),
	               "expected an RFC 3339 time");
	CHECK_CONTAINS(fails_larder("exclude_newer", "2026-01-01T00:00:00"
	                                             "+25:00"),
	               "expected an RFC 3339 time");
	CHECK_CONTAINS(fails_larder("min_release_age", "a week"),
	               "min_release_age = \"a week\": expected seconds");
	CHECK_CONTAINS(fails_larder("min_release_age", "-1"),
	               "expected seconds");
	CHECK_CONTAINS(fails_larder("stale_while_revalidate", "1w"),
	               "expected seconds");
	CHECK_CONTAINS(fails_larder("offline", "maybe"), "expected yes or no");
	CHECK_CONTAINS(fails_larder("release_age_exempt", "corp/*"),
	               "expected project name globs");
	/* cache indexes only: a virtual one shows its layers' pages, a
	 * hosted one's files are its users' */
	CHECK_CONTAINS(fails("[index \"c\"]\ntype = cache\n"
	                     "upstream = https://u.example/simple/\n"
	                     "[index \"v\"]\ntype = virtual\nlayers = c\n"
	                     "min_release_age = 7d\n"),
	               "larder.conf:7: [index \"v\"]: min_release_age is only "
	               "for type = cache");
	CHECK_CONTAINS(fails("[index \"h\"]\ntype = hosted\noffline = yes\n"),
	               "offline is only for type = cache");
	CHECK_CONTAINS(fails("[index \"c\"]\ntype = cache\n"
	                     "upstream = https://u.example/simple/\n"
	                     "exclude_newer = 2026-01-01\n"
	                     "exclude_newer = 2026-02-01\n"),
	               "exclude_newer given twice (first at line 4)");
	CHECK_CONTAINS(fails("[registry \"r\"]\n"
	                     "upstream = https://r.example\n"
	                     "min_release_age = 7d\n"),
	               "unknown key \"min_release_age\" in [registry \"r\"]");
}

/* Writes text to dir/name. Returns 0 or -1. */
static int put(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	rc = fputs(text, f) < 0 ? -1 : 0;
	return fclose(f) ? -1 : rc;
}

T(include_directive)
{
	char dir[] = "/tmp/test_conf_inc.XXXXXX", main_conf[PATH_MAX];
	char sub[PATH_MAX], cmd[PATH_MAX + 16], want[PATH_MAX + 200];
	struct conf c;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(sub, sizeof(sub), "%s/conf.d", dir);
	CHECK_INT(mkdir(sub, 0755), 0);
	snprintf(main_conf, sizeof(main_conf), "%s/larder.conf", dir);
	/* the include in [larder]: cache_ttl after it is [larder]'s again;
	 * the files in sorted order, each with its own sections */
	CHECK_INT(put(dir, "larder.conf",
	              "[larder]\nmax_stale = 1h\ninclude = conf.d/*.conf\n"
	              "cache_ttl = 2m\n[index \"pypi\"]\ntype = cache\n"
	              "upstream = https://up/\n"), 0);
	CHECK_INT(put(sub, "20-b.conf",
	              "[index \"b\"]\ntype = virtual\nlayers = a pypi\n"), 0);
	CHECK_INT(put(sub, "10-a.conf", "[index \"a\"]\ntype = hosted\n"), 0);
	CHECK_INT(put(sub, "notes.txt", "not a config\n"), 0);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), 0);
	if (!errbuf[0]) {
		CHECK_INT(c.cache_ttl, 120);
		CHECK_INT(c.max_stale, 3600);
		CHECK_INT(c.nindex, 3);
		CHECK_STR(c.index[0].name, "a");
		CHECK_STR(c.index[1].name, "b");
		CHECK_STR(c.index[2].name, "pypi");
		conf_free(&c);
	}

	/* an error in an included file names it and its line */
	CHECK_INT(put(sub, "30-c.conf", "[larder]\ncache_ttl = soon\n"), 0);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), EINVAL);
	snprintf(want, sizeof(want), "%s/30-c.conf:2: cache_ttl = \"soon\"",
	         sub);
	CHECK_CONTAINS(errbuf, want);
	/* a key given in the main file and an included one */
	CHECK_INT(put(sub, "30-c.conf", "[index \"pypi\"]\n"), 0);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), EINVAL);
	snprintf(want, sizeof(want), "larder.conf:5: duplicate section "
	         "[index \"pypi\"] (first at %s/30-c.conf:1)", sub);
	CHECK_CONTAINS(errbuf, want);
	snprintf(cmd, sizeof(cmd), "%s/30-c.conf", sub);
	unlink(cmd);

	/* an empty conf.d is fine; a missing plain file is not */
	snprintf(cmd, sizeof(cmd), "%s/10-a.conf", sub);
	unlink(cmd);
	snprintf(cmd, sizeof(cmd), "%s/20-b.conf", sub);
	unlink(cmd);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), 0);
	if (!errbuf[0])
		conf_free(&c);
	snprintf(cmd, sizeof(cmd), "%s/notes.txt", sub);
	unlink(cmd);
	CHECK_INT(rmdir(sub), 0);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), 0);
	if (!errbuf[0])
		conf_free(&c);
	CHECK_INT(put(dir, "larder.conf", "include = nothere.conf\n"), 0);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), EINVAL);
	CHECK_CONTAINS(errbuf, "larder.conf:1: include = \"nothere.conf\": ");
	CHECK_CONTAINS(errbuf, "No such file");
	/* a file that includes itself stops, with a reason */
	CHECK_INT(put(dir, "larder.conf", "include = larder.conf\n"), 0);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), EINVAL);
	CHECK_CONTAINS(errbuf, "nested deeper than 8");
	/* text not read from a file includes nothing */
	CHECK_INT(conf_defaults(&c), 0);
	CHECK_INT(conf_parse(&c, "-", "include = /etc/x.conf\n", 22, errbuf,
	                     sizeof(errbuf)), EINVAL);
	CHECK_CONTAINS(errbuf, "only a config file read from disk");
	conf_free(&c);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_INT(system(cmd), 0);
}

int main(void)
{
	RUN(defaults);
	RUN(include_directive);
	RUN(empty_text_keeps_defaults);
	RUN(cooldown_keys);
	RUN(cooldown_key_errors);
	RUN(index_find);
	RUN(seconds_good);
	RUN(seconds_bad);
	RUN(size_good);
	RUN(size_bad);
	RUN(budget_keys);
	RUN(bool_good_and_bad);
	RUN(count_good_and_bad);
	RUN(enum_good_and_bad);
	RUN(path_good_and_bad);
	RUN(url_good);
	RUN(url_bad);
	RUN(urlpath_good_and_bad);
	RUN(list_trusted_hosts);
	RUN(list_layers);
	RUN(max_layers);
	RUN(error_forms);
	RUN(unknown_keys_and_hints);
	RUN(comments_and_quoting);
	RUN(line_endings_and_odd_bytes);
	RUN(syntax_errors);
	RUN(sections_with_blanks);
	RUN(duplicates);
	RUN(too_many_indexes);
	RUN(index_names);
	RUN(replaces_default_indexes);
	RUN(index_rules);
	RUN(hosted_and_policies);
	RUN(layers_resolution);
	RUN(unknown_and_self_layer);
	RUN(cycles);
	RUN(registry_find_and_default);
	RUN(registry_replaces_default);
	RUN(registry_upstream);
	RUN(registry_times);
	RUN(registry_trusted_hosts);
	RUN(registry_credentials);
	RUN(registry_library_prefix);
	RUN(registry_default_key);
	RUN(registry_names);
	RUN(registry_duplicates_and_limits);
	RUN(registry_unknown_keys);
	RUN(registry_hosted);
	RUN(registry_failed_parse_changes_nothing);
	RUN(failed_parse_changes_nothing);
	RUN(small_or_missing_err_buffer);
	RUN(dump_round_trip);
	RUN(dump_buffer_limit);
	RUN(man_page);
	RUN(load_from_env);
	RUN(load_missing_files);
	RUN(load_default_file);
	RUN(load_bad_files);
	RUN(sample_config);
	RUN(synthesize_metadata_key);
	return t_done();
}
