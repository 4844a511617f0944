#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf/keys.h"
#include "common/oci/policy.h"
#include "common/pypi/policy.h"
#include "tests/unit/t.h"

static struct oci_policy pol;

static const char *parse(const char *allow, const char *deny, int dflt)
{
	const char *why;

	memset(&pol, 0, sizeof(pol));
	pol.name = "p";
	pol.default_deny = dflt;
	why = oci_policy_parse_rules(deny, 0, &pol);
	if (!why)
		why = oci_policy_parse_rules(allow, 1, &pol);
	return why;
}

static const char *decide(const char *repo, const char *tag)
{
	static struct oci_policy_verdict v;

	oci_policy_decide(&pol, repo, tag, &v);
	return v.reason;
}

/* The brief's example: first match wins, '*' spans '/'. */
T(tags_and_repos)
{
	CHECK(!parse("team/*", "library/nginx:1.*, */*:latest", 0));
	CHECK_INT(pol.nrules, 3);
	CHECK_STR(pol.rule[0].repo, "library/nginx");
	CHECK_STR(pol.rule[0].tag, "1.*");
	CHECK_STR(pol.rule[1].text, "*/*:latest");
	CHECK_STR(decide("library/nginx", "1.25"),
	          "denied by policy \"p\": deny = library/nginx:1.*");
	CHECK_STR(decide("library/nginx", "2.0"),
	          "allowed by policy \"p\": no rule denies it");
	CHECK_STR(decide("team/a/b", "latest"),
	          "denied by policy \"p\": deny = */*:latest");
	CHECK_STR(decide("team/a/b", "v1"),
	          "allowed by policy \"p\": allow = team/*");
	/* '?' one character, the tag whole */
	CHECK(!parse("", "alpin?:3.1?", 0));
	CHECK_STR(decide("alpine", "3.19"),
	          "denied by policy \"p\": deny = alpin?:3.1?");
	CHECK_STR(decide("alpine", "3.1"),
	          "allowed by policy \"p\": no rule denies it");
	CHECK_STR(decide("alpines", "3.19"),
	          "allowed by policy \"p\": no rule denies it");
}

/* default = deny makes the allow list exclusive. */
T(exclusive)
{
	CHECK(!parse("team/*, library/alpine:3.*", "", 1));
	CHECK_STR(decide("team/x", "anything"),
	          "allowed by policy \"p\": allow = team/*");
	CHECK_STR(decide("library/alpine", "3.20"),
	          "allowed by policy \"p\": allow = library/alpine:3.*");
	CHECK_STR(decide("library/alpine", "edge"),
	          "denied by policy \"p\": default = deny (no rule allows it)");
	CHECK_STR(decide("library/nginx", "1"),
	          "denied by policy \"p\": default = deny (no rule allows it)");
}

/* A digest no tag names: repository rules decide, a deny rule with a tag
 * part does not match, an allow rule with one lets the repository's
 * untagged manifests (an index's children) in. */
T(untagged_digest)
{
	CHECK(!parse("library/alpine:3.*", "*:latest, library/nginx", 1));
	CHECK_STR(decide("library/alpine", NULL),
	          "allowed by policy \"p\": allow = library/alpine:3.*");
	CHECK_STR(decide("library/nginx", NULL),
	          "denied by policy \"p\": deny = library/nginx");
	CHECK_STR(decide("other", NULL),
	          "denied by policy \"p\": default = deny (no rule allows it)");
	CHECK_INT(oci_policy_tags_matter(&pol, 1, "library/alpine"), 1);
	CHECK(!parse("", "library/nginx:1.*", 0));
	CHECK_INT(oci_policy_tags_matter(&pol, 1, "library/alpine"), 0);
	CHECK_INT(oci_policy_tags_matter(&pol, 1, "library/nginx"), 1);
}

/* Several policies: the first denial is the one named. */
T(several)
{
	struct oci_policy two[2];
	struct oci_policy_verdict v;

	memset(two, 0, sizeof(two));
	two[0].name = "a";
	two[1].name = "b";
	CHECK(!oci_policy_parse_rules("x/*", 0, &two[0]));
	CHECK(!oci_policy_parse_rules("*:latest", 0, &two[1]));
	CHECK_INT(oci_policy_denies(two, 2, "x/y", "latest", &v), 1);
	CHECK_STR(v.reason, "denied by policy \"a\": deny = x/*");
	CHECK_INT(oci_policy_denies(two, 2, "z", "latest", &v), 1);
	CHECK_STR(v.reason, "denied by policy \"b\": deny = *:latest");
	CHECK_INT(oci_policy_denies(two, 2, "z", "1", &v), 0);
}

T(bad_rules)
{
	static const char *const bad[] = {
	    "requests <2.20", "numpy sdist", "* yanked", "* tag=win*",
	    "* vulnerable", "* license=GPL*", "Library/nginx", "a:",
	    ":latest", "a b", "a, , b", "a:b:c", "a:b/c", "a$",
	};
	const char *why;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = oci_policy_check_rules(bad[i]);
		if (!why)
			fprintf(stderr, "# taken: %s\n", bad[i]);
		CHECK(why != NULL);
	}
	CHECK(strstr(oci_policy_check_rules("requests <2.20"), "PyPI-only"));
	CHECK(strstr(oci_policy_check_rules("Library/x"), "lower case"));
	/* plain name globs serve an index and a registry alike */
	CHECK(!oci_policy_check_rules("corp-*, numpy"));
	CHECK(!policy_check_rules("corp-*, numpy"));
	/* an empty list is no rule */
	CHECK(!oci_policy_check_rules(""));
	CHECK(!parse("", "a", 0));
	CHECK(parse("x", "a b", 0) != NULL);
	CHECK_INT(pol.nrules, 0);
}

static const char *load(const char *text, struct conf *c, char *err,
                        size_t n)
{
	int rc;

	*err = 0;
	CHECK_INT(conf_defaults(c), 0);
	rc = conf_parse(c, "t.conf", text, strlen(text), err, n);
	return rc ? err : NULL;
}

/* The config: a registry's policies are declared and image rules; one
 * policy may serve an index and a registry when both grammars take it. */
T(config)
{
	struct conf c;
	struct oci_policy *pols;
	char err[512];
	size_t n;

	policy_conf_hook();
	oci_policy_conf_hook();
	CHECK(!load("[registry \"hub\"]\nupstream = https://r.example/\n"
	            "policies = img both\n"
	            "[index \"pypi\"]\ntype = cache\n"
	            "upstream = https://p.example/simple/\npolicies = both\n"
	            "[policy \"img\"]\nallow = team/*\n"
	            "deny = library/nginx:1.*, */*:latest\ndefault = deny\n"
	            "[policy \"both\"]\ndeny = corp-*\n",
	            &c, err, sizeof(err)));
	CHECK_INT(oci_policy_of(&c, &c.registry[0], &pols, &n), 0);
	CHECK_INT(n, 2);
	/* allow written first is read first */
	CHECK_STR(pols[0].rule[0].text, "team/*");
	CHECK_INT(pols[0].default_deny, 1);
	CHECK_STR(pols[1].rule[0].repo, "corp-*");
	free(pols);
	conf_free(&c);

	CHECK(load("[registry \"hub\"]\nupstream = https://r.example/\n"
	           "policies = p\n[policy \"p\"]\n"
	           "deny = requests <2.20\n", &c, err, sizeof(err)));
	CHECK(strstr(err, "t.conf:5:"));
	CHECK(strstr(err, "PyPI-only"));
	CHECK(strstr(err, "[registry \"hub\"] names this policy"));
	conf_free(&c);

	CHECK(load("[registry \"hub\"]\nupstream = https://r.example/\n"
	           "policies = p\n[policy \"p\"]\n"
	           "deny_vulnerable = yes\n", &c, err, sizeof(err)));
	CHECK(strstr(err, "t.conf:5:"));
	CHECK(strstr(err, "deny_vulnerable"));
	conf_free(&c);

	CHECK(load("[registry \"hub\"]\nupstream = https://r.example/\n"
	           "policies = nope\n", &c, err, sizeof(err)));
	CHECK(strstr(err, "t.conf:3:"));
	CHECK(strstr(err, "no [policy \"nope\"]"));
	conf_free(&c);

	/* an image rule in a policy an index names */
	CHECK(load("[index \"pypi\"]\ntype = cache\n"
	           "upstream = https://p.example/simple/\npolicies = p\n"
	           "[policy \"p\"]\ndeny = library/nginx:1.*\n",
	           &c, err, sizeof(err)));
	CHECK(strstr(err, "t.conf:6:"));
	CHECK(strstr(err, "[index \"pypi\"] names this policy"));
	conf_free(&c);

	/* neither grammar: refused as the key is read */
	CHECK(load("[policy \"p\"]\ndeny = requests <banana\n",
	           &c, err, sizeof(err)));
	CHECK(strstr(err, "t.conf:2:"));
	conf_free(&c);
}

int main(void)
{
	RUN(tags_and_repos);
	RUN(exclusive);
	RUN(untagged_digest);
	RUN(several);
	RUN(bad_rules);
	RUN(config);
	return t_done();
}
