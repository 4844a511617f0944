#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/conf/keys.h"
#include "common/dist/pep440.h"
#include "common/pypi/policy.h"
#include "common/pypi/policy_osv.h"
#include "common/pypi/simple.h"
#include "tests/unit/t.h"

static int spec(const char *s, const char *v)
{
	struct pep440 p;

	if (pep440_parse(v, &p))
		return -1;
	return pep440_spec_match(s, &p);
}

T(specifiers)
{
	CHECK_INT(spec("<2.20", "2.19.1"), 1);
	CHECK_INT(spec("<2.20", "2.20"), 0);
	CHECK_INT(spec("<2.20", "2.20.0"), 0);
	/* "<V" leaves out V's own pre-releases, as packaging does */
	CHECK_INT(spec("<2.20", "2.20rc1"), 0);
	CHECK_INT(spec("<2.20", "2.19rc1"), 1);
	CHECK_INT(spec("==1.26.5", "1.26.5"), 1);
	CHECK_INT(spec("==1.26.5", "1.26.5+local"), 1);
	CHECK_INT(spec("==1.26.5", "1.26.50"), 0);
	CHECK_INT(spec(">=1, <2", "1.5"), 1);
	CHECK_INT(spec(">=1,<2", "2.0"), 0);
	CHECK_INT(spec("==1.4.*", "1.4.7"), 1);
	CHECK_INT(spec("==1.4.*", "1.40"), 0);
	CHECK_INT(spec("!=1.4.*", "1.5"), 1);
	CHECK_INT(spec("~=1.4.2", "1.4.9"), 1);
	CHECK_INT(spec("~=1.4.2", "1.5"), 0);
	CHECK_INT(spec("~=1.4.2", "1.4.1"), 0);
	CHECK_INT(spec(">1.0", "1.0.post1"), 1);
	CHECK_INT(spec("<=1.0", "1.0"), 1);
	CHECK_INT(spec("", "9"), 1);
	CHECK_INT(pep440_spec_check("<2.20"), 0);
	CHECK_INT(pep440_spec_check(">=1,<2"), 0);
	CHECK(pep440_spec_check("<") != 0);
	CHECK(pep440_spec_check("2.0") != 0);
	CHECK(pep440_spec_check("===1.0") != 0);
	CHECK(pep440_spec_check(">=1.*") != 0);
	CHECK(pep440_spec_check("~=1") != 0);
	CHECK(pep440_spec_check(">=1,") != 0);
}

T(rules)
{
	struct policy *p = calloc(1, sizeof(*p));

	CHECK(policy_parse_rules("requests <2.20, urllib3 ==1.26.5", 0, p) ==
	      NULL);
	CHECK_INT(p->nrules, 2);
	CHECK_STR(p->rule[0].glob, "requests");
	CHECK_STR(p->rule[0].spec, "<2.20");
	CHECK_STR(p->rule[0].text, "requests <2.20");
	CHECK_STR(p->rule[1].glob, "urllib3");
	CHECK_STR(p->rule[1].spec, "==1.26.5");
	/* a ',' before an operator goes on with the specifiers */
	CHECK(policy_parse_rules("Foo_Bar >=1, <2 sdist, * tag=win*  yanked",
	                         1, p) == NULL);
	CHECK_INT(p->nrules, 4);
	CHECK_STR(p->rule[2].glob, "foo-bar");
	CHECK_STR(p->rule[2].spec, ">=1, <2");
	CHECK_INT(p->rule[2].kind, POLICY_KIND_SDIST);
	CHECK_INT(p->rule[2].allow, 1);
	CHECK_STR(p->rule[3].tag, "win*");
	CHECK_INT(p->rule[3].yanked, 1);
	CHECK(policy_parse_rules("* license=GPL* vulnerable", 0, p) == NULL);
	CHECK_STR(p->rule[4].license, "GPL*");
	CHECK_INT(p->rule[4].vulnerable, 1);
	/* refusals leave the rules as they were */
	CHECK(policy_parse_rules("a, <2", 0, p) != NULL);
	CHECK(policy_parse_rules("a <2 bogus", 0, p) != NULL);
	CHECK(policy_parse_rules("a, ", 0, p) != NULL);
	CHECK(policy_parse_rules("a sdist wheel", 0, p) != NULL);
	CHECK(policy_parse_rules("a <banana", 0, p) != NULL);
	CHECK(policy_parse_rules("a/b", 0, p) != NULL);
	CHECK_INT(p->nrules, 5);
	CHECK(policy_parse_rules("", 0, p) == NULL);
	CHECK_INT(p->nrules, 5);
	free(p);
}

/* A policy made from the text of its keys. */
static struct policy *make(const char *allow, const char *deny,
                           int allow_first, int default_deny, int vuln)
{
	struct conf_policy_def d = {.name = "strict", .allow = (char *)allow,
	                            .deny = (char *)deny,
	                            .allow_first = allow_first,
	                            .default_deny = default_deny,
	                            .deny_vulnerable = vuln};
	struct policy *p = calloc(1, sizeof(*p));

	if (p && policy_compile(&d, p)) {
		free(p);
		p = NULL;
	}
	return p;
}

static int deny(const struct policy *p, const char *project,
                const char *filename, struct policy_verdict *v)
{
	struct policy_file f = {.project = project, .filename = filename};

	return policy_decide(p, &f, v);
}

T(decide)
{
	struct policy *p = make("", "requests <2.20, urllib3 ==1.26.5", 0, 0,
	                        0);
	struct policy_verdict v;

	CHECK(p != NULL);
	CHECK_INT(deny(p, "requests", "requests-2.19.1-py2.py3-none-any.whl",
	               &v), 1);
	CHECK_STR(v.reason,
	          "denied by policy \"strict\": deny = requests <2.20");
	CHECK_INT(v.rule, 0);
	CHECK_INT(deny(p, "requests", "requests-2.20.0.tar.gz", &v), 0);
	CHECK_INT(v.rule, -1);
	CHECK_INT(deny(p, "urllib3", "urllib3-1.26.5.tar.gz", &v), 1);
	CHECK_INT(deny(p, "urllib3", "urllib3-1.26.6.tar.gz", &v), 0);
	free(p);

	/* an exclusive allow list: the first matching rule wins */
	p = make("numpy, requests", "requests <2", 0, 1, 0);
	CHECK_INT(deny(p, "requests", "requests-1.0.tar.gz", &v), 1);
	CHECK_INT(deny(p, "requests", "requests-2.1.tar.gz", &v), 0);
	CHECK_STR(v.reason, "allowed by policy \"strict\": allow = requests");
	CHECK_INT(deny(p, "flask", "flask-3.0.tar.gz", &v), 1);
	CHECK_STR(v.reason, "denied by policy \"strict\": default = deny (no "
	                    "rule allows it)");
	free(p);
	/* allow written first: read first */
	p = make("numpy, requests", "requests <2", 1, 1, 0);
	CHECK_INT(deny(p, "requests", "requests-1.0.tar.gz", &v), 0);
	free(p);

	/* kinds and tags */
	p = make("", "* sdist, * tag=win*", 0, 0, 0);
	CHECK_INT(deny(p, "foo", "foo-1.0.tar.gz", &v), 1);
	CHECK_INT(deny(p, "foo", "foo-1.0.zip", &v), 1);
	CHECK_INT(deny(p, "foo", "foo-1.0-cp312-cp312-win_amd64.whl", &v), 1);
	CHECK_INT(deny(p, "foo", "foo-1.0-cp312-cp312-manylinux_2_17_x86_64."
	                         "whl", &v), 0);
	free(p);
}

T(yanked_license_vulns)
{
	struct policy *p = make("", "* yanked, * license=GPL*, * vulnerable", 0,
	                        0, 0);
	struct policy_vuln vu[] = {
	    {"GHSA-1", "1.2", "1.4", ""},
	    {"PYSEC-2", "", "", "2.0"},
	};
	struct policy_file f = {.project = "foo",
	                        .filename = "foo-1.0.tar.gz"};
	struct policy_verdict v;

	CHECK_INT(policy_decide(p, &f, &v), 0);
	f.yanked = 1;
	CHECK_INT(policy_decide(p, &f, &v), 1);
	f.yanked = 0;
	f.license = "gpl-3.0-only";
	CHECK_INT(policy_decide(p, &f, &v), 1);
	f.license = "MIT";
	CHECK_INT(policy_decide(p, &f, &v), 0);
	f.vulns = vu;
	f.nvulns = 1;
	f.filename = "foo-1.3.tar.gz";
	CHECK_INT(policy_decide(p, &f, &v), 1);
	f.filename = "foo-1.4.tar.gz";
	CHECK_INT(policy_decide(p, &f, &v), 0);
	f.filename = "foo-1.1.tar.gz";
	CHECK_INT(policy_decide(p, &f, &v), 0);
	free(p);
	CHECK_INT(policy_vuln_affects(&vu[1], "2.0"), 1);
	CHECK_INT(policy_vuln_affects(&vu[1], "2.0.1"), 0);
	CHECK_INT(policy_vuln_affects(&vu[1], "0.1"), 1);

	p = make("", "", 0, 0, 1);
	f.vulns = vu;
	f.nvulns = 2;
	f.filename = "foo-1.2.tar.gz";
	CHECK_INT(policy_decide(p, &f, &v), 1);
	CHECK_STR(v.reason, "denied by policy \"strict\": deny_vulnerable = "
	                    "yes: GHSA-1 affects foo 1.2");
	CHECK(policy_wants_vulns(p, 1));
	free(p);
}

static void add(struct simple_page *pg, const char *name)
{
	struct simple_file *f = &pg->files[pg->nfiles++];

	memset(f, 0, sizeof(*f));
	f->filename = strdup(name);
}

T(split)
{
	struct policy *p = make("", "foo <2", 0, 0, 0);
	struct simple_page pg, held;
	char **why;

	memset(&pg, 0, sizeof(pg));
	pg.files = calloc(4, sizeof(*pg.files));
	add(&pg, "foo-1.0.tar.gz");
	add(&pg, "foo-2.0.tar.gz");
	add(&pg, "foo-1.5-py3-none-any.whl");
	add(&pg, "foo-3.0-py3-none-any.whl");
	CHECK_INT(policy_split(p, 1, "foo", NULL, 0, NULL, &pg, &held, &why), 0);
	CHECK_INT(pg.nfiles, 2);
	CHECK_INT(held.nfiles, 2);
	CHECK_STR(pg.files[0].filename, "foo-2.0.tar.gz");
	CHECK_STR(pg.files[1].filename, "foo-3.0-py3-none-any.whl");
	CHECK_STR(held.files[1].filename, "foo-1.5-py3-none-any.whl");
	CHECK_STR(why[0], "denied by policy \"strict\": deny = foo <2");
	/* some files left: the project is not marked */
	CHECK_INT(policy_mark_project(&pg, &held, why), 0);
	CHECK_STR(pg.status, "");
	policy_reasons_free(why, held.nfiles);
	simple_page_free(&held);
	/* every file denied: quarantined (PEP 792), the first rule the
	 * reason, the page raised to 1.4 with an empty versions list */
	{
		struct simple_page all;
		struct buf js;

		memset(&all, 0, sizeof(all));
		all.files = calloc(2, sizeof(*all.files));
		add(&all, "foo-1.0.tar.gz");
		add(&all, "foo-1.5-py3-none-any.whl");
		CHECK_INT(policy_split(p, 1, "foo", NULL, 0, NULL, &all, &held,
		                       &why), 0);
		CHECK_INT(all.nfiles, 0);
		CHECK_INT(policy_mark_project(&all, &held, why), 1);
		CHECK_STR(all.status, "quarantined");
		CHECK_STR(all.status_reason,
		          "denied by policy \"strict\": deny = foo <2");
		buf_init(&js, 1 << 16);
		CHECK_INT(simple_render_json(&all, &js), 0);
		CHECK_STR(buf_str(&js),
		          "{\"meta\":{\"api-version\":\"1.4\"},\"name\":\"\","
		          "\"project-status\":{\"status\":\"quarantined\","
		          "\"reason\":\"denied by policy \\\"strict\\\": deny = "
		          "foo <2\"},\"files\":[],\"versions\":[]}");
		buf_free(&js);
		/* nothing denied: not marked */
		policy_reasons_free(why, held.nfiles);
		simple_page_free(&held);
		CHECK_INT(policy_split(p, 1, "foo", NULL, 0, NULL, &all, &held,
		                       &why), 0);
		CHECK_INT(policy_mark_project(&all, &held, why), 0);
		simple_page_free(&all);
	}
	/* nothing denied: held empty */
	CHECK_INT(policy_split(p, 1, "bar", NULL, 0, NULL, &pg, &held, &why), 0);
	CHECK_INT(held.nfiles, 0);
	CHECK(why == NULL);
	simple_page_free(&pg);
	free(p);
	CHECK_INT(policy_reason_current("denied by policy \"strict\": deny = "
	                                "foo <2", "base strict"), 1);
	CHECK_INT(policy_reason_current("denied by policy \"strict\": deny = "
	                                "foo <2", "base stricter"), 0);
	CHECK_INT(policy_reason_current("", "strict"), 0);
}

T(split_license)
{
	struct policy *p = make("", "* license=GPL*", 0, 0, 0);
	const char *licenses[] = {"GPL-3.0-only", NULL, "MIT"};
	struct simple_page pg, held;
	char **why;

	CHECK(p != NULL);
	CHECK_INT(policy_wants_license(p, 1), 1);
	memset(&pg, 0, sizeof(pg));
	pg.files = calloc(3, sizeof(*pg.files));
	add(&pg, "foo-1.0-py3-none-any.whl");
	add(&pg, "foo-1.1-py3-none-any.whl");
	add(&pg, "foo-1.2-py3-none-any.whl");
	/* a license not known matches no license= rule */
	CHECK_INT(policy_split(p, 1, "foo", NULL, 0, licenses, &pg, &held,
	                       &why), 0);
	CHECK_INT(pg.nfiles, 2);
	CHECK_INT(held.nfiles, 1);
	CHECK_STR(held.files[0].filename, "foo-1.0-py3-none-any.whl");
	CHECK_STR(why[0], "denied by policy \"strict\": deny = * "
	                  "license=GPL*");
	CHECK_STR(pg.files[0].filename, "foo-1.1-py3-none-any.whl");
	CHECK_STR(pg.files[1].filename, "foo-1.2-py3-none-any.whl");
	policy_reasons_free(why, held.nfiles);
	simple_page_free(&held);
	simple_page_free(&pg);
	free(p);
	p = make("", "foo <2", 0, 0, 0);
	CHECK_INT(policy_wants_license(p, 1), 0);
	free(p);
}

T(conf)
{
	static const char text[] =
	    "[policy \"strict\"]\n"
	    "allow = numpy\n"
	    "deny = requests <2.20, urllib3 ==1.26.5\n"
	    "default = deny\n"
	    "deny_vulnerable = yes\n"
	    "[index \"pypi\"]\n"
	    "type = cache\n"
	    "upstream = https://pypi.org/simple/\n"
	    "policies = strict\n";
	struct conf c;
	struct policy *pols;
	size_t n;
	char err[512];

	policy_conf_hook();
	CHECK_INT(conf_defaults(&c), 0);
	CHECK_INT(conf_parse(&c, "t.conf", text, strlen(text), err,
	                     sizeof(err)), 0);
	CHECK_INT(c.npolicy, 1);
	CHECK_INT(c.policy[0].allow_first, 1);
	CHECK_INT(c.policy[0].default_deny, 1);
	CHECK_INT(policy_of(&c, &c.index[0], &pols, &n), 0);
	CHECK_INT(n, 1);
	CHECK_INT(pols[0].nrules, 3);
	CHECK_INT(pols[0].rule[0].allow, 1);
	free(pols);
	conf_free(&c);

	/* a bad rule is refused where it is written */
	CHECK_INT(conf_defaults(&c), 0);
	CHECK_INT(conf_parse(&c, "t.conf",
	                     "[policy \"p\"]\ndeny = requests <banana\n", 37,
	                     err, sizeof(err)), EINVAL);
	CHECK_CONTAINS(err, "t.conf:2:");
	CHECK_CONTAINS(err, "PEP 440");
	conf_free(&c);
	/* an index naming no declared policy */
	CHECK_INT(conf_defaults(&c), 0);
	CHECK_INT(conf_parse(&c, "t.conf",
	                     "[index \"a\"]\ntype = cache\nupstream = "
	                     "https://x/\npolicies = nope\n", 63, err,
	                     sizeof(err)), EINVAL);
	CHECK_CONTAINS(err, "no [policy \"nope\"]");
	conf_free(&c);
}

struct got {
	int calls;
	char ids[128];
	struct policy_vuln r[8];
	char project[8][NAMES_MAX_PROJECT + 1];
	size_t n;
};

static int got_one(const struct policy_osv *adv, void *ctx)
{
	struct got *g = ctx;

	g->calls++;
	strcat(g->ids, adv->id);
	strcat(g->ids, " ");
	for (size_t i = 0; i < adv->n && g->n < 8; i++, g->n++) {
		g->r[g->n] = adv->range[i];
		memcpy(g->project[g->n], adv->project[i],
		       sizeof(g->project[0]));
	}
	return 0;
}

T(osv)
{
	static const char one[] =
	    "{\"schema_version\": \"1.6.0\", \"id\": \"GHSA-aaaa\","
	    " \"aliases\": [\"CVE-1\"], \"affected\": ["
	    "  {\"package\": {\"ecosystem\": \"PyPI\", \"name\": \"Foo_Bar\"},"
	    "   \"ranges\": [{\"type\": \"ECOSYSTEM\", \"events\": ["
	    "     {\"introduced\": \"0\"}, {\"fixed\": \"1.4\"},"
	    "     {\"introduced\": \"2.0\"}, {\"last_affected\": \"2.1\"}]},"
	    "    {\"type\": \"GIT\", \"repo\": \"x\", \"events\": ["
	    "     {\"introduced\": \"abc\"}]}],"
	    "   \"versions\": [\"1.0\"]},"
	    "  {\"package\": {\"ecosystem\": \"npm\", \"name\": \"left\"},"
	    "   \"versions\": [\"1.0\"]}]}";
	static const char two[] =
	    "[{\"id\": \"A\", \"withdrawn\": \"2024-01-01T00:00:00Z\","
	    "  \"affected\": [{\"package\": {\"ecosystem\": \"PyPI\","
	    "  \"name\": \"x\"}, \"versions\": [\"1\"]}]}, {\"id\": \"B\"}]";
	struct got g;
	char err[256];

	memset(&g, 0, sizeof(g));
	CHECK_INT(policy_osv_parse(one, strlen(one), got_one, &g, err,
	                           sizeof(err)), 0);
	CHECK_INT(g.calls, 1);
	CHECK_INT(g.n, 3);
	CHECK_STR(g.project[0], "foo-bar");
	CHECK_STR(g.r[0].id, "GHSA-aaaa");
	CHECK_STR(g.r[0].introduced, "0");
	CHECK_STR(g.r[0].fixed, "1.4");
	CHECK_STR(g.r[1].introduced, "2.0");
	CHECK_STR(g.r[1].last_affected, "2.1");
	CHECK_STR(g.r[2].introduced, "1.0");
	CHECK_STR(g.r[2].last_affected, "1.0");
	CHECK_INT(policy_vuln_affects(&g.r[0], "1.3.9"), 1);
	CHECK_INT(policy_vuln_affects(&g.r[0], "1.4"), 0);
	CHECK_INT(policy_vuln_affects(&g.r[1], "2.1"), 1);
	CHECK_INT(policy_vuln_affects(&g.r[1], "2.2"), 0);

	/* an array; a withdrawn advisory keeps no range */
	memset(&g, 0, sizeof(g));
	CHECK_INT(policy_osv_parse(two, strlen(two), got_one, &g, err,
	                           sizeof(err)), 0);
	CHECK_INT(g.calls, 2);
	CHECK_STR(g.ids, "A B ");
	CHECK_INT(g.n, 0);

	CHECK_INT(policy_osv_parse("{}", 2, got_one, &g, err, sizeof(err)),
	          EINVAL);
	CHECK_STR(err, "an advisory without an id");
	CHECK_INT(policy_osv_parse("{\"id\": ", 7, got_one, &g, err,
	                           sizeof(err)), EINVAL);
	CHECK_CONTAINS(err, "not an OSV advisory");
	CHECK_INT(policy_osv_parse("7", 1, got_one, &g, err, sizeof(err)),
	          EINVAL);
}

int main(void)
{
	RUN(osv);
	RUN(specifiers);
	RUN(rules);
	RUN(decide);
	RUN(yanked_license_vulns);
	RUN(split);
	RUN(split_license);
	RUN(conf);
	return t_done();
}
