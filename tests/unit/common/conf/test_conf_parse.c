/* test_conf_parse: the parser: sections, keys, quoting, errors. */
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
	          "expected [larder], [index \"NAME\"], [registry \"NAME\"], "
	          "[webhook \"NAME\"] or [policy \"NAME\"] before it");
	CHECK_STR(fails("[larder]\njust words\n"),
	          "larder.conf:2: expected key = value, [larder], [index "
	          "\"NAME\"], [registry \"NAME\"], [webhook \"NAME\"] or "
	          "[policy \"NAME\"], got "
	          "\"just words\"");
	CHECK_CONTAINS(fails("[larder]\n= 5\n"), "larder.conf:2: expected "
	                                         "key = value");
	CHECK_STR(fails("[larder\n"),
	          "larder.conf:1: bad section header [larder: expected "
	          "[larder], [index \"NAME\"], [registry \"NAME\"], "
	          "[webhook \"NAME\"] or [policy \"NAME\"]");
	CHECK_CONTAINS(fails("[index pypi]\n"),
	               "larder.conf:1: bad section header [index pypi]");
	CHECK_CONTAINS(fails("[index \"pypi\" x]\n"), "bad section header");
	CHECK_CONTAINS(fails("[index \"pypi\"] x\n"), "bad section header");
	CHECK_CONTAINS(fails("[index \"pypi]\n"), "bad section header");
	CHECK_CONTAINS(fails("[larder] x\n"), "bad section header");
	CHECK_STR(fails("[registries \"hub\"]\n"),
	          "larder.conf:1: unknown section [registries \"hub\"]: "
	          "expected [larder], [index \"NAME\"], [registry "
	          "\"NAME\"], [webhook \"NAME\"] or [policy \"NAME\"]");
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

int main(void)
{
	RUN(defaults);
	RUN(empty_text_keeps_defaults);
	RUN(index_find);
	RUN(error_forms);
	RUN(unknown_keys_and_hints);
	RUN(comments_and_quoting);
	RUN(line_endings_and_odd_bytes);
	RUN(syntax_errors);
	RUN(sections_with_blanks);
	RUN(duplicates);
	RUN(failed_parse_changes_nothing);
	RUN(small_or_missing_err_buffer);
	return t_done();
}
