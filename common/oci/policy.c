/* oci_policy: which images a [policy] section lets in (oci/policy.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf/keys.h"
#include "common/names.h"
#include "common/oci/policy.h"
#include "common/rulelist.h"

static const char form[] = "an image rule is REPO-GLOB or "
                           "REPO-GLOB:TAG-GLOB, like library/nginx:1.*, "
                           "team/* or *:latest";

static int is_blank(int ch)
{
	return ch == ' ' || ch == '\t';
}

static int repo_char(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '_' || ch == '-' || ch == '/' || ch == '*' ||
	       ch == '?';
}

static int tag_char(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
	       ch == '-' || ch == '*' || ch == '?';
}

/* Whether the word after a blank in a rule is a part of the PyPI grammar
 * (a specifier or a qualifier). */
static int pypi_part(const char *w)
{
	return strchr("<>=!~", *w) || (*w >= '0' && *w <= '9') ||
	       !strncmp(w, "sdist", 5) || !strncmp(w, "wheel", 5) ||
	       !strncmp(w, "tag=", 4) || !strncmp(w, "license=", 8) ||
	       !strncmp(w, "yanked", 6) || !strncmp(w, "vulnerable", 10);
}

/* Reads one rule, text (n bytes), into r. Returns NULL or what is
 * wrong. */
static const char *parse_rule(const char *text, size_t n, int allow,
                              void *slot)
{
	struct oci_policy_rule *r = slot;
	const char *colon;
	size_t rn, tn;

	memset(r, 0, sizeof(*r));
	r->allow = allow;
	while (n && is_blank(*text))
		text++, n--;
	while (n && is_blank(text[n - 1]))
		n--;
	if (!n)
		return "an empty rule: an image rule is REPO-GLOB or "
		       "REPO-GLOB:TAG-GLOB";
	if (n >= sizeof(r->text))
		return "a rule longer than 199 bytes";
	memcpy(r->text, text, n);
	for (size_t i = 0; i < n; i++) {
		if (!is_blank(text[i]))
			continue;
		while (i < n && is_blank(text[i]))
			i++;
		if (pypi_part(r->text + i))
			return "a PyPI-only part (PEP 440 specifiers, sdist, "
			       "wheel, tag=, license=, yanked, vulnerable) in "
			       "a policy a registry names: an image rule is "
			       "REPO-GLOB or REPO-GLOB:TAG-GLOB";
		return form;
	}
	colon = memchr(text, ':', n);
	rn = colon ? (size_t)(colon - text) : n;
	tn = colon ? n - rn - 1 : 0;
	if (!rn || rn > OCI_MAX_NAME)
		return form;
	for (size_t i = 0; i < rn; i++) {
		if (text[i] >= 'A' && text[i] <= 'Z')
			return "a repository glob in lower case, as OCI "
			       "names are (library/nginx, team/*)";
		if (!repo_char(text[i]))
			return "a repository glob of a-z 0-9 . _ - / * ? "
			       "(library/nginx, team/*)";
	}
	if (colon && (!tn || tn > OCI_MAX_TAG))
		return "a tag glob after ':' of 1 to 128 characters "
		       "(library/nginx:1.*, *:latest)";
	for (size_t i = 0; i < tn; i++)
		if (!tag_char(colon[1 + i]))
			return "a tag glob of A-Z a-z 0-9 . _ - * ? after ':' "
			       "(library/nginx:1.*, *:latest)";
	memcpy(r->repo, text, rn);
	if (tn)
		memcpy(r->tag, colon + 1, tn);
	return NULL;
}

const char *oci_policy_parse_rules(const char *rules, int allow,
                                   struct oci_policy *pol)
{
	struct rulelist_into into = {pol->rule, sizeof(pol->rule[0]),
	                             OCI_POLICY_MAX_RULES, &pol->nrules,
	                             parse_rule, NULL};

	return rulelist_parse(rules, allow, &into);
}

const char *oci_policy_check_rules(const char *rules)
{
	struct oci_policy *pol = calloc(1, sizeof(*pol));
	const char *why;

	if (!pol)
		return "memory for the rules";
	why = oci_policy_parse_rules(rules, 0, pol);
	free(pol);
	return why;
}

const char *oci_policy_check_def(const struct conf_policy_def *d,
                                 const char **key)
{
	const char *why;

	*key = "deny_vulnerable";
	if (d->deny_vulnerable == 1)
		return "PyPI-only (advisories name PyPI versions) in a policy "
		       "a registry names";
	*key = "allow";
	why = oci_policy_check_rules(d->allow);
	if (why)
		return why;
	*key = "deny";
	return oci_policy_check_rules(d->deny);
}

void oci_policy_conf_hook(void)
{
	conf_image_rules_check = oci_policy_check_rules;
}

int oci_policy_compile(const struct conf_policy_def *d,
                       struct oci_policy *pol)
{
	const char *first = d->allow_first ? d->allow : d->deny;
	const char *then = d->allow_first ? d->deny : d->allow;

	memset(pol, 0, sizeof(*pol));
	pol->name = d->name;
	pol->default_deny = d->default_deny == 1;
	if (d->deny_vulnerable == 1 ||
	    oci_policy_parse_rules(first, d->allow_first, pol) ||
	    oci_policy_parse_rules(then, !d->allow_first, pol))
		return EINVAL;
	return 0;
}

static int compile_one(const struct conf_policy_def *d, void *out)
{
	return oci_policy_compile(d, out);
}

int oci_policy_of(const struct conf *c, const struct conf_registry *reg,
                  struct oci_policy **out, size_t *n)
{
	void *pols;
	int err = conf_policies_compile(c, reg->policies, sizeof(**out),
	                                compile_one, &pols, n);

	*out = pols;
	return err;
}

int oci_policy_rule_matches(const struct oci_policy_rule *r,
                            const char *repo, const char *tag)
{
	if (!names_glob_match(r->repo, strlen(r->repo), repo))
		return 0;
	if (!*r->tag)
		return 1;
	if (!tag)
		return r->allow;
	return names_glob_match(r->tag, strlen(r->tag), tag);
}

int oci_policy_decide(const struct oci_policy *pol, const char *repo,
                      const char *tag, struct oci_policy_verdict *v)
{
	memset(v, 0, sizeof(*v));
	for (size_t i = 0; i < pol->nrules; i++) {
		const struct oci_policy_rule *r = &pol->rule[i];

		if (!oci_policy_rule_matches(r, repo, tag))
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

int oci_policy_denies(const struct oci_policy *pols, size_t n,
                      const char *repo, const char *tag,
                      struct oci_policy_verdict *v)
{
	memset(v, 0, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		if (oci_policy_decide(&pols[i], repo, tag, v))
			return 1;
	return 0;
}

int oci_policy_tags_matter(const struct oci_policy *pols, size_t n,
                           const char *repo)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < pols[i].nrules; j++) {
			const struct oci_policy_rule *r = &pols[i].rule[j];

			if (!r->allow && *r->tag &&
			    names_glob_match(r->repo, strlen(r->repo), repo))
				return 1;
		}
	return 0;
}
