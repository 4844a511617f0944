/* test_conf_registry: registry sections. */
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
	          "belongs in [registry \"NAME\"] or [policy \"NAME\"] "
	          "sections)");
	CHECK_STR(
	    fails("[index \"p\"]\ntype = cache\nusername = x\n"),
	    "larder.conf:3: unknown key \"username\" in [index \"p\"] (it "
	    "belongs in [registry \"NAME\"] sections)");
}

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
	CHECK_CONTAINS(fails("[registry \"r\"]\ntype = hosted\nupload_ttl = 0\n"),
	               "more than 0");
	CHECK_CONTAINS(fails("[registry \"r\"]\ntype = hosted\n"
	                     "max_upload_size = 0\n"),
	               "more than 0");
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

int main(void)
{
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
	return t_done();
}
