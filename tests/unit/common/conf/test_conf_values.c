/* test_conf_values: the key table's values: durations, sizes, booleans,
 * counts, enums, paths, URLs, lists. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "common/buf.h"
#include "common/conf/conf.h"
#include "common/url.h"
#include "tests/unit/common/conf/conf_t.h"
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
	/* prefetch slots: 0 (off) to 64, 4 by default */
	CHECK_INT(parse_larder(&c, "workers", "1"), 0);
	CHECK_INT(c.prefetch_max, 4);
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "prefetch_max", "0"), 0);
	CHECK_INT(c.prefetch_max, 0);
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "prefetch_max", "64"), 0);
	CHECK_INT(c.prefetch_max, 64);
	conf_free(&c);
	CHECK_STR(fails_larder("prefetch_max", "65"),
	          "larder.conf:2: prefetch_max = \"65\": expected a whole "
	          "number from 0 to 64");
	CHECK_CONTAINS(fails_larder("prefetch_max", "-1"),
	               "expected a whole number");
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

int main(void)
{
	RUN(cooldown_keys);
	RUN(cooldown_key_errors);
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
	RUN(synthesize_metadata_key);
	return t_done();
}
