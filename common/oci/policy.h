/* oci_policy: which images of a registry a [policy "NAME"] section lets
 * in (docs/policy.md, "Registries"). I/O-free.
 *
 * An image rule, one of those an allow or deny key holds (',' between
 * them):
 *     REPO-GLOB              every tag and digest of the repositories
 *     REPO-GLOB:TAG-GLOB     those tags of them
 * Globs: '*' any run (including '/'), '?' one character; a repository
 * glob is lower case, as OCI names are. The first rule that matches
 * decides, in the order the keys are written; default decides what none
 * matches. A registry may name several policies: an image comes in when
 * every one of them lets it in. The PyPI-only parts of the PyPI grammar
 * (specifiers, sdist/wheel, tag=, license=, yanked, vulnerable,
 * deny_vulnerable) are refused. */
#ifndef LARDER_OCI_POLICY_H
#define LARDER_OCI_POLICY_H

#include <stddef.h>

#include "common/conf/conf.h"
#include "common/oci/ref.h"

#define OCI_POLICY_MAX_RULES 64
#define OCI_POLICY_REASON_MAX 384

struct oci_policy_rule {
	int allow;                  /* 1 allow, 0 deny */
	char repo[OCI_MAX_NAME + 1];/* repository glob */
	char tag[OCI_MAX_TAG + 1];  /* tag glob, "" every tag and digest */
	char text[200];             /* as written, for messages */
};

/* One [policy] section, compiled as image rules. */
struct oci_policy {
	const char *name;           /* points into the conf */
	int default_deny;
	struct oci_policy_rule rule[OCI_POLICY_MAX_RULES];
	size_t nrules;
};

/* One policy's word on one image. */
struct oci_policy_verdict {
	int deny;                   /* 1: denied */
	int rule;                   /* the rule that decided, -1 default */
	char reason[OCI_POLICY_REASON_MAX]; /* "denied by policy \"p\": deny
	                                       = library/nginx:1.*" */
};

/* Parses rules (as an allow or deny key holds them) as image rules into
 * pol, each allow as said, appending. Returns NULL, or what is wrong (a
 * static string, one line) with pol's rules then as they were. */
const char *oci_policy_parse_rules(const char *rules, int allow,
                                   struct oci_policy *pol);

/* Checks rules alone. Returns NULL or what is wrong. */
const char *oci_policy_check_rules(const char *rules);

/* Checks the [policy] section d as one a registry names. Returns NULL, or
 * what is wrong with *key set to the key at fault ("allow", "deny" or
 * "deny_vulnerable"). */
const char *oci_policy_check_def(const struct conf_policy_def *d,
                                 const char **key);

/* Sets conf_image_rules_check (to oci_policy_check_rules), so the
 * policies a config's registries name are checked as it is read. Call before conf_load(). */
void oci_policy_conf_hook(void);

/* Compiles the [policy] section d into *pol (which points into d).
 * Returns 0, or EINVAL when its rules are no image rules. */
int oci_policy_compile(const struct conf_policy_def *d,
                       struct oci_policy *pol);

/* Compiles the policies registry reg names into *out, a malloc'd array of
 * *n (NULL and 0 for none; the caller frees it). Returns 0, ENOMEM or
 * EINVAL. Compile once per config load, not per request. */
int oci_policy_of(const struct conf *c, const struct conf_registry *reg,
                  struct oci_policy **out, size_t *n);

/* Whether rule r matches repository repo, tag tag (NULL: a manifest by
 * digest that no tag names; then only a rule without a tag part, or an
 * allow rule whose repository glob matches, matches). Returns 1 or 0. */
int oci_policy_rule_matches(const struct oci_policy_rule *r,
                            const char *repo, const char *tag);

/* What pol decides of repo:tag (tag NULL as above), into *v. Returns 1
 * when it denies, else 0. */
int oci_policy_decide(const struct oci_policy *pol, const char *repo,
                      const char *tag, struct oci_policy_verdict *v);

/* Whether one of the n policies denies repo:tag; the first denial's
 * reason in *v. Returns 1 or 0. */
int oci_policy_denies(const struct oci_policy *pols, size_t n,
                      const char *repo, const char *tag,
                      struct oci_policy_verdict *v);

/* Whether one of the n policies has a deny rule with a tag part whose
 * repository glob matches repo: only then can the tags that point at a
 * digest change what is decided of it. Returns 1 or 0. */
int oci_policy_tags_matter(const struct oci_policy *pols, size_t n,
                           const char *repo);

#endif
