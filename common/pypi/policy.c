/* policy: which files a [policy] section lets in. */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf/keys.h"
#include "common/dist/distname.h"
#include "common/dist/pep440.h"
#include "common/names.h"
#include "common/pypi/policy.h"
#include "common/rulelist.h"

static int is_blank(int ch)
{
	return ch == ' ' || ch == '\t';
}

static int is_op(int ch)
{
	return ch == '<' || ch == '>' || ch == '=' || ch == '!' || ch == '~';
}

/* Appends word (n bytes) to out (len bytes) after a space. Returns 0 or
 * 1 when it does not fit. */
static int append(char *out, size_t len, const char *word, size_t n)
{
	size_t have = strlen(out);

	if (have + (have ? 1 : 0) + n >= len)
		return 1;
	if (have)
		out[have++] = ' ';
	memcpy(out + have, word, n);
	out[have + n] = 0;
	return 0;
}

/* Reads one rule, text (n bytes), into r. Returns NULL or what is
 * wrong. */
static const char *parse_rule(const char *text, size_t n, int allow,
                              void *slot)
{
	struct policy_rule *r = slot;
	char word[200], err[160];
	size_t i = 0, first = 1;

	memset(r, 0, sizeof(*r));
	r->allow = allow;
	while (n && is_blank(*text))
		text++, n--;
	while (n && is_blank(text[n - 1]))
		n--;
	if (!n)
		return "an empty rule (a project glob, then optionally "
		       "specifiers and qualifiers)";
	if (n >= sizeof(r->text))
		return "a rule longer than 199 bytes";
	memcpy(r->text, text, n);
	r->text[n] = 0;
	while (i < n) {
		size_t s, len;

		while (i < n && is_blank(text[i]))
			i++;
		s = i;
		while (i < n && !is_blank(text[i]))
			i++;
		len = i - s;
		if (!len)
			break;
		memcpy(word, text + s, len);
		word[len] = 0;
		if (first) {
			first = 0;
			if (is_op(*word))
				return "a rule starts with a project glob, "
				       "like requests or * (before any "
				       "specifier)";
			if (names_globs_normalize(word, r->glob,
			                          sizeof(r->glob), err,
			                          sizeof(err)))
				return "a project glob of letters, digits, "
				       "- _ . * ?";
			continue;
		}
		if (!strcmp(word, "sdist") || !strcmp(word, "wheel")) {
			if (r->kind)
				return "at most one of sdist and wheel in a "
				       "rule";
			r->kind = *word == 's' ? POLICY_KIND_SDIST
			                       : POLICY_KIND_WHEEL;
		} else if (!strcmp(word, "yanked")) {
			r->yanked = 1;
		} else if (!strcmp(word, "vulnerable")) {
			r->vulnerable = 1;
		} else if (!strncmp(word, "tag=", 4)) {
			if (!word[4] || len - 4 >= sizeof(r->tag))
				return "tag=GLOB, a platform tag glob "
				       "(tag=win*, tag=*manylinux*)";
			memcpy(r->tag, word + 4, len - 3);
		} else if (!strncmp(word, "license=", 8)) {
			if (!word[8] || len - 8 >= sizeof(r->license))
				return "license=GLOB, a license glob "
				       "(license=GPL*, license=MIT)";
			memcpy(r->license, word + 8, len - 7);
		} else if (is_op(*word) || (*word >= '0' && *word <= '9') ||
		           *word == ',' || *word == '*') {
			if (append(r->spec, sizeof(r->spec), word, len))
				return "specifiers longer than 159 bytes";
		} else {
			return "a qualifier: sdist, wheel, tag=GLOB, yanked, "
			       "vulnerable or license=GLOB";
		}
	}
	if (*r->spec && pep440_spec_check(r->spec))
		return "PEP 440 specifiers, like <2.20, ==1.26.5, "
		       ">=1,<2 or ==1.4.*";
	return NULL;
}

const char *policy_parse_rules(const char *rules, int allow,
                               struct policy *pol)
{
	/* a ',' before an operator joins two specifiers */
	struct rulelist_into into = {pol->rule, sizeof(pol->rule[0]),
	                             POLICY_MAX_RULES, &pol->nrules,
	                             parse_rule, is_op};

	return rulelist_parse(rules, allow, &into);
}

const char *policy_check_rules(const char *rules)
{
	struct policy *pol = calloc(1, sizeof(*pol));
	const char *why;

	if (!pol)
		return "memory for the rules";
	why = policy_parse_rules(rules, 0, pol);
	free(pol);
	return why;
}

void policy_conf_hook(void)
{
	conf_policy_rules_check = policy_check_rules;
}

int policy_compile(const struct conf_policy_def *d, struct policy *pol)
{
	const char *first = d->allow_first ? d->allow : d->deny;
	const char *then = d->allow_first ? d->deny : d->allow;

	memset(pol, 0, sizeof(*pol));
	pol->name = d->name;
	pol->default_deny = d->default_deny;
	pol->deny_vulnerable = d->deny_vulnerable;
	if (policy_parse_rules(first, d->allow_first, pol) ||
	    policy_parse_rules(then, !d->allow_first, pol))
		return EINVAL;
	return 0;
}

static int compile_one(const struct conf_policy_def *d, void *out)
{
	return policy_compile(d, out);
}

int policy_of(const struct conf *c, const struct conf_index *ix,
              struct policy **out, size_t *n)
{
	void *pols;
	int err;

	*out = NULL;
	*n = 0;
	if (ix->type != CONF_INDEX_CACHE)
		return 0;
	err = conf_policies_compile(c, ix->policies, sizeof(**out),
	                            compile_one, &pols, n);
	*out = pols;
	return err;
}

int policy_wants_vulns(const struct policy *pols, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (pols[i].deny_vulnerable)
			return 1;
		for (size_t j = 0; j < pols[i].nrules; j++)
			if (pols[i].rule[j].vulnerable)
				return 1;
	}
	return 0;
}

int policy_wants_license(const struct policy *pols, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < pols[i].nrules; j++)
			if (pols[i].rule[j].license[0])
				return 1;
	return 0;
}

int policy_vuln_affects(const struct policy_vuln *vuln, const char *version)
{
	struct pep440 v, b;

	if (pep440_parse(version, &v))
		return 0;
	if (*vuln->introduced && strcmp(vuln->introduced, "0") &&
	    (pep440_parse(vuln->introduced, &b) || pep440_cmp(&v, &b) < 0))
		return 0;
	if (*vuln->fixed &&
	    (pep440_parse(vuln->fixed, &b) || pep440_cmp(&v, &b) >= 0))
		return 0;
	if (*vuln->last_affected &&
	    (pep440_parse(vuln->last_affected, &b) || pep440_cmp(&v, &b) > 0))
		return 0;
	return 1;
}

/* The first advisory of f that names version, or NULL. */
static const struct policy_vuln *vuln_of(const struct policy_file *f,
                                         const char *version)
{
	for (size_t i = 0; version && i < f->nvulns; i++)
		if (policy_vuln_affects(&f->vulns[i], version))
			return &f->vulns[i];
	return NULL;
}

/* A wheel's platform tag: what follows its last '-', without ".whl". */
static void platform_tag(const char *filename, char *out, size_t len)
{
	const char *dash = strrchr(filename, '-');
	size_t n;

	*out = 0;
	if (!dash)
		return;
	n = strlen(dash + 1);
	if (n > 4 && !strcmp(dash + 1 + n - 4, ".whl"))
		n -= 4;
	if (n < len) {
		memcpy(out, dash + 1, n);
		out[n] = 0;
	}
}

/* Whether r matches f, of kind and version (canonical, or NULL when the
 * file name gives none). */
static int matches(const struct policy_rule *r, const struct policy_file *f,
                   const struct distname *d, const char *version)
{
	char tag[128];
	struct pep440 v;

	if (!names_globs_match(r->glob, f->project))
		return 0;
	if (*r->spec && (!version || pep440_parse(version, &v) ||
	                 !pep440_spec_match(r->spec, &v)))
		return 0;
	if (r->kind == POLICY_KIND_WHEEL && (!d || d->kind != DISTNAME_WHEEL))
		return 0;
	if (r->kind == POLICY_KIND_SDIST && (!d || d->kind == DISTNAME_WHEEL))
		return 0;
	if (*r->tag) {
		if (!d || d->kind != DISTNAME_WHEEL)
			return 0;
		platform_tag(f->filename, tag, sizeof(tag));
		if (fnmatch(r->tag, tag, 0))
			return 0;
	}
	if (r->yanked && !f->yanked)
		return 0;
	if (*r->license &&
	    (!f->license || fnmatch(r->license, f->license, FNM_CASEFOLD)))
		return 0;
	if (r->vulnerable && !vuln_of(f, version))
		return 0;
	return 1;
}

int policy_rule_matches(const struct policy_rule *r,
                        const struct policy_file *f)
{
	struct distname d;
	int named = distname_parse(f->filename, &d) == 0;

	if (named && distname_version_canon(d.version, d.canon,
	                                    sizeof(d.canon)))
		named = 0;
	return matches(r, f, named ? &d : NULL, named ? d.canon : NULL);
}

int policy_decide(const struct policy *pol, const struct policy_file *f,
                  struct policy_verdict *v)
{
	struct distname d;
	const struct policy_vuln *vu;
	const char *version = NULL;
	int named = distname_parse(f->filename, &d) == 0;

	if (named && distname_version_canon(d.version, d.canon,
	                                    sizeof(d.canon)) == 0)
		version = d.canon;
	memset(v, 0, sizeof(*v));
	if (pol->deny_vulnerable && (vu = vuln_of(f, version))) {
		v->deny = 1;
		v->rule = -2;
		snprintf(v->reason, sizeof(v->reason),
		         "denied by policy \"%s\": deny_vulnerable = yes: %s "
		         "affects %s %s", pol->name, vu->id, f->project, version);
		return 1;
	}
	for (size_t i = 0; i < pol->nrules; i++) {
		const struct policy_rule *r = &pol->rule[i];

		if (!matches(r, f, named ? &d : NULL, version))
			continue;
		v->deny = !r->allow;
		v->rule = (int)i;
		snprintf(v->reason, sizeof(v->reason),
		         "%s by policy \"%s\": %s = %s",
		         r->allow ? "allowed" : "denied", pol->name,
		         r->allow ? "allow" : "deny", r->text);
		return v->deny;
	}
	v->deny = pol->default_deny;
	v->rule = -1;
	snprintf(v->reason, sizeof(v->reason), "%s by policy \"%s\": %s",
	         v->deny ? "denied" : "allowed", pol->name,
	         v->deny ? "default = deny (no rule allows it)"
	                 : "no rule denies it");
	return v->deny;
}

int policy_denied(const struct policy *pols, size_t n,
                  const struct policy_file *f, struct policy_verdict *v)
{
	for (size_t i = 0; i < n; i++)
		if (policy_decide(&pols[i], f, v))
			return 1;
	return 0;
}

int policy_reason_current(const char *reason, const char *policies)
{
	static const char lead[] = "denied by policy \"";
	const char *name, *end, *s = policies;
	size_t n;

	if (!reason || !policies || strncmp(reason, lead, sizeof(lead) - 1))
		return 0;
	name = reason + sizeof(lead) - 1;
	end = strchr(name, '"');
	if (!end)
		return 0;
	n = (size_t)(end - name);
	while (*s) {
		size_t len = strcspn(s, " ");

		if (len == n && !memcmp(s, name, n))
			return 1;
		s += len;
		s += *s == ' ';
	}
	return 0;
}

void policy_reasons_free(char **reasons, size_t n)
{
	for (size_t i = 0; reasons && i < n; i++)
		free(reasons[i]);
	free(reasons);
}

int policy_split(const struct policy *pols, size_t n, const char *project,
                 const struct policy_vuln *vulns, size_t nvulns,
                 const char *const *licenses, struct simple_page *page,
                 struct simple_page *held, char ***reasons)
{
	struct policy_file f = {.project = project, .vulns = vulns,
	                        .nvulns = nvulns};
	struct policy_verdict v;
	unsigned char *deny = NULL;
	size_t k = 0, w = 0;
	char **why = NULL;
	int err = ENOMEM;

	memset(held, 0, sizeof(*held));
	*reasons = NULL;
	if (!n || page->is_list || !page->nfiles)
		return 0;
	deny = calloc(page->nfiles, 1);
	if (!deny)
		return ENOMEM;
	for (size_t i = 0; i < page->nfiles; i++) {
		f.filename = page->files[i].filename;
		f.yanked = page->files[i].yanked;
		f.license = licenses ? licenses[i] : NULL;
		deny[i] = (unsigned char)policy_denied(pols, n, &f, &v);
		k += deny[i];
	}
	if (!k) {
		err = 0;
		goto out;
	}
	held->files = malloc(k * sizeof(*held->files));
	why = calloc(k, sizeof(*why));
	if (!held->files || !why)
		goto fail;
	for (size_t i = 0; i < page->nfiles; i++) {
		if (!deny[i])
			continue;
		f.filename = page->files[i].filename;
		f.yanked = page->files[i].yanked;
		f.license = licenses ? licenses[i] : NULL;
		policy_denied(pols, n, &f, &v);
		why[held->nfiles] = strdup(v.reason);
		if (!why[held->nfiles++])
			goto fail;
	}
	held->nfiles = 0;
	for (size_t i = 0; i < page->nfiles; i++) {
		if (deny[i])
			held->files[held->nfiles++] = page->files[i];
		else
			page->files[w++] = page->files[i];
	}
	page->nfiles = w;
	*reasons = why;
	err = 0;
	goto out;
fail:
	policy_reasons_free(why, k);
	free(held->files);
	memset(held, 0, sizeof(*held));
out:
	free(deny);
	return err;
}

int policy_mark_project(struct simple_page *page,
                        const struct simple_page *held, char **reasons)
{
	if (page->is_list || page->nfiles || !held->nfiles || !reasons ||
	    !reasons[0])
		return 0;
	if (!page->versions) {
		page->versions = calloc(1, sizeof(*page->versions));
		if (!page->versions)
			return -ENOMEM;
		page->nversions = 0;
	}
	if (simple_status_set(page, "quarantined", strlen("quarantined"),
	                      reasons[0], strlen(reasons[0])))
		return -ENOMEM;
	if (simple_minor(simple_rendered_version(page)) < 4)
		snprintf(page->api_version, sizeof(page->api_version), "1.4");
	return 1;
}
