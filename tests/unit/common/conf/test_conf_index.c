/* test_conf_index: index sections: names, types, rules, layers and their
 * cycles. */
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

int main(void)
{
	RUN(too_many_indexes);
	RUN(index_names);
	RUN(replaces_default_indexes);
	RUN(index_rules);
	RUN(hosted_and_policies);
	RUN(layers_resolution);
	RUN(unknown_and_self_layer);
	RUN(cycles);
	return t_done();
}
