/* test_conf_webhook: [webhook "NAME"] sections. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/buf.h"
#include "common/conf/conf.h"
#include "common/url.h"
#include "tests/unit/common/conf/conf_t.h"
#include "tests/unit/t.h"

T(defaults_and_filters)
{
	struct conf c;

	CHECK_INT(parse(&c, "[webhook \"ci\"]\n"
	                    "url = http://127.0.0.1:9/hook?x=1\n"
	                    "secret_file = /etc/larder/ci.secret\n"
	                    "[webhook \"audit\"]\n"
	                    "url = https://audit.example/in\n"
	                    "secret_file = /s\n"
	                    "events = push upload\n"
	                    "indexes = pypi\n"
	                    "registries = hub\n"
	                    "retry_min = 1s\n"
	                    "retry_max = 4s\n"
	                    "retry_for = 1m\n"),
	          0);
	CHECK_STR(errbuf, "");
	CHECK_INT(c.nwebhook, 2);
	CHECK_INT(conf_webhook_find(&c, "audit"), 1);
	CHECK_INT(conf_webhook_find(&c, "nope"), -1);
	/* the URL is kept as written: no '/' added */
	CHECK_STR(c.webhook[0].url, "http://127.0.0.1:9/hook?x=1");
	CHECK_STR(c.webhook[0].events, "upload yank remove push new-release "
	                               "policy-denied");
	CHECK(c.webhook[0].indexes == NULL);
	CHECK_INT(c.webhook[0].retry_min, 30);
	CHECK_INT(c.webhook[0].retry_max, 3600);
	CHECK_INT(c.webhook[0].retry_for, 3 * 86400);
	CHECK_INT(c.webhook[1].retry_min, 1);
	CHECK_INT(c.webhook[1].retry_for, 60);
	CHECK(conf_list_has(c.webhook[1].events, "push"));
	CHECK(!conf_list_has(c.webhook[1].events, "yank"));
	CHECK(!conf_list_has(c.webhook[1].events, "pus"));
	CHECK(conf_list_has(c.webhook[1].indexes, "pypi"));
	CHECK(!conf_list_has(NULL, "pypi"));
	conf_free(&c);
}

/* The dump writes the sections back, and they parse to the same. */
T(dump_round_trip)
{
	struct conf c, d;
	struct buf b;

	CHECK_INT(parse(&c, "[webhook \"ci\"]\nurl = https://h/x\n"
	                    "secret_file = /s\nindexes = pypi root/pypi\n"),
	          0);
	buf_init(&b, 1 << 20);
	CHECK_INT(conf_dump(&c, &b), 0);
	CHECK(b.data && strstr(b.data, "[webhook \"ci\"]\n"
	                                            "url = https://h/x\n"));
	CHECK(!strstr(b.data, "registries ="));
	CHECK_INT(parse(&d, b.data), 0);
	CHECK_STR(errbuf, "");
	CHECK_INT(d.nwebhook, 1);
	CHECK_STR(d.webhook[0].indexes, "pypi root/pypi");
	CHECK(d.webhook[0].registries == NULL);
	buf_free(&b);
	conf_free(&d);
	conf_free(&c);
}

T(errors)
{
	CHECK_STR(fails("[webhook \"ci\"]\nsecret_file = /s\n"),
	          "larder.conf:1: [webhook \"ci\"]: webhook ci has no url "
	          "(expected url = https://host/path)");
	CHECK_STR(fails("[webhook \"ci\"]\nurl = https://h/\n"),
	          "larder.conf:1: [webhook \"ci\"]: webhook ci has no "
	          "secret_file (expected the path of a file whose first line "
	          "is the secret)");
	CHECK_STR(fails("[webhook \"ci\"]\nurl = ftp://h/\n"),
	          "larder.conf:2: [webhook \"ci\"]: url = \"ftp://h/\": "
	          "expected an absolute http:// or https:// URL without "
	          "fragment");
	CHECK_STR(fails("[webhook \"ci\"]\nurl = http:///x\n"),
	          "larder.conf:2: [webhook \"ci\"]: url = \"http:///x\": "
	          "expected an absolute http:// or https:// URL without "
	          "fragment");
	CHECK_STR(fails("[webhook \"ci\"]\nevents = upload pull\n"),
	          "larder.conf:2: [webhook \"ci\"]: events = \"upload pull\": "
	          "expected events among upload yank remove push new-release "
	          "policy-denied");
	CHECK_STR(fails("[webhook \"ci\"]\nurl = https://h/\nsecret_file = /s\n"
	                "indexes = pypi private\n"),
	          "larder.conf:4: [webhook \"ci\"]: indexes: no index is "
	          "called private");
	CHECK_STR(fails("[webhook \"ci\"]\nurl = https://h/\nsecret_file = /s\n"
	                "registries = ghcr\n"),
	          "larder.conf:4: [webhook \"ci\"]: registries: no registry "
	          "is called ghcr");
	CHECK_STR(fails("[webhook \"Bad Name\"]\n"),
	          "larder.conf:1: [webhook \"Bad Name\"]: bad webhook name: "
	          "expected 1 to 64 of a-z 0-9 - _ .");
	CHECK_STR(fails("[webhook \"a\"]\nurl = https://h/\nsecret_file = /s\n"
	                "[webhook \"a\"]\n"),
	          "larder.conf:4: duplicate section [webhook \"a\"] (first at "
	          "line 1)");
	CHECK_STR(fails("[webhook \"a\"]\nurls = https://h/\n"),
	          "larder.conf:2: unknown key \"urls\" in [webhook \"a\"] "
	          "(did you mean url?)");
}

int main(void)
{
	RUN(defaults_and_filters);
	RUN(dump_round_trip);
	RUN(errors);
	return t_done();
}
