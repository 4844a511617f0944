/* policy: which files of a cache index's pages a [policy "NAME"] section
 * lets in (docs/policy.md). Rules allow or deny by project name glob, PEP
 * 440 specifiers, file kind, platform tag, yanked status, license and
 * known advisories; the first rule that matches a file decides, and
 * default decides what none matches. An index may name several policies:
 * a file comes in when every one of them lets it in.
 *
 * The rule grammar, one rule (rules are separated by ','; a ',' followed
 * by an operator continues the rule's specifiers):
 *     GLOB [SPECIFIERS] [QUALIFIER...]
 *     GLOB        a project name glob ('*' any run, '?' one character)
 *     SPECIFIERS  PEP 440 clauses: <2.20, ==1.26.5, >=1,<2, ==1.4.*
 *     QUALIFIER   sdist | wheel | tag=GLOB (a wheel's platform tag) |
 *                 yanked | vulnerable | license=GLOB
 * I/O-free: what larder knows of a file (its advisories, its license) is
 * the caller's to give. */
#ifndef LARDER_POLICY_H
#define LARDER_POLICY_H

#include <stddef.h>

#include "common/conf/conf.h"
#include "common/pypi/simple.h"

#define POLICY_MAX_RULES 64
#define POLICY_REASON_MAX 384

enum policy_kind {
	POLICY_KIND_ANY = 0,
	POLICY_KIND_SDIST,
	POLICY_KIND_WHEEL,
};

struct policy_rule {
	int allow;          /* 1 allow, 0 deny */
	char glob[128];     /* one normalised project glob */
	char spec[160];     /* PEP 440 specifier set, "" any version */
	int kind;           /* enum policy_kind */
	char tag[64];       /* glob on a wheel's platform tag, "" any */
	int yanked;         /* 1: only a yanked file */
	int vulnerable;     /* 1: only a version an advisory names */
	char license[64];   /* glob on the license (caseless), "" any */
	char text[200];     /* as written, for messages */
};

/* One [policy] section, compiled. */
struct policy {
	const char *name;   /* points into the conf */
	int default_deny;
	int deny_vulnerable;
	struct policy_rule rule[POLICY_MAX_RULES];
	size_t nrules;
};

/* An advisory's affected range for one project: versions from introduced
 * ("" or "0": every one) up to fixed (excluded) or last_affected
 * (included); both "": no end. A single affected version is introduced =
 * last_affected. */
struct policy_vuln {
	char id[64];
	char introduced[64];
	char fixed[64];
	char last_affected[64];
};

/* What a decision looks at of a file. */
struct policy_file {
	const char *project;  /* normalised */
	const char *filename;
	int yanked;
	const char *license;  /* License-Expression or License ::
	                         classifier text, NULL when larder does not
	                         know it (then no license= rule matches) */
	const struct policy_vuln *vulns; /* the project's advisories */
	size_t nvulns;
};

/* One policy's word on one file. */
struct policy_verdict {
	int deny;            /* 1: denied */
	int rule;            /* the rule that decided, -1 default, -2
	                        deny_vulnerable */
	char reason[POLICY_REASON_MAX]; /* "denied by policy \"strict\": deny
	                                   = requests <2.20", or why allowed */
};

/* Parses rules (as an allow or deny key holds them) into the rules of
 * pol, each allow as said, appending. Returns NULL, or what is wrong (a
 * static string) with pol's rules then as they were. */
const char *policy_parse_rules(const char *rules, int allow,
                               struct policy *pol);

/* Checks rules alone: what conf_policy_rules_check is set to. Returns
 * NULL or what is wrong. */
const char *policy_check_rules(const char *rules);

/* Sets conf_policy_rules_check, so a config's rules are checked as it is
 * read. Call before conf_load(). */
void policy_conf_hook(void);

/* Compiles the [policy] section d into *pol (which points into d).
 * Returns 0, or EINVAL when its rules do not parse (the conf check
 * refused them already when the hook was set). */
int policy_compile(const struct conf_policy_def *d, struct policy *pol);

/* Compiles the policies index ix names into *out, a malloc'd array of
 * *n (NULL and 0 for none; the caller frees it). Returns 0, ENOMEM or
 * EINVAL. */
int policy_of(const struct conf *c, const struct conf_index *ix,
              struct policy **out, size_t *n);

/* Whether any of the n policies has a rule that looks at advisories. */
int policy_wants_vulns(const struct policy *pols, size_t n);

/* Whether any of the n policies has a license= rule. */
int policy_wants_license(const struct policy *pols, size_t n);

/* Whether rule r matches f (its kind and version read off its file
 * name). Returns 1 or 0. */
int policy_rule_matches(const struct policy_rule *r,
                        const struct policy_file *f);

/* What pol decides of f, into *v. Returns 1 when it denies, else 0. */
int policy_decide(const struct policy *pol, const struct policy_file *f,
                  struct policy_verdict *v);

/* Whether one of the n policies denies f (every one must let a file
 * in), the first denial's reason in *v. Returns 1 or 0. */
int policy_denied(const struct policy *pols, size_t n,
                  const struct policy_file *f, struct policy_verdict *v);

/* Whether version (any spelling) lies in the range of vuln. */
int policy_vuln_affects(const struct policy_vuln *vuln, const char *version);

/* Moves the files of page (of project, normalised) that one of the n
 * policies denies into held->files (held zeroed first; free it with
 * simple_page_free()), keeping page's order; reasons[i] (malloc'd array
 * of held->nfiles strings, the caller's to free with
 * policy_reasons_free()) says why the i-th was. vulns as for
 * policy_file; licenses, when not NULL, holds each file's license (as
 * policy_file has it, NULL unknown) by its position in page before the
 * split. Returns 0 or ENOMEM (page then as it was). */
int policy_split(const struct policy *pols, size_t n, const char *project,
                 const struct policy_vuln *vulns, size_t nvulns,
                 const char *const *licenses, struct simple_page *page,
                 struct simple_page *held, char ***reasons);

/* A project every file of which a policy denied (page, after
 * policy_split(), lists none; held lists the denied ones, reasons as it
 * gave them) is marked quarantined the PEP 792 way, with the first
 * denial as the reason, so that an installer that reads statuses can say
 * why nothing installs. The page's api-version is raised to 1.4 for it
 * (with an empty "versions" list where the upstream gave none, as 1.1
 * wants). A page that still lists a file, or had none denied, is left
 * as it was. Returns 1 when it marked the page, 0 when not, or -ENOMEM. */
int policy_mark_project(struct simple_page *page,
                        const struct simple_page *held, char **reasons);

/* Whether reason (as policy_decide() writes a denial) names a policy of
 * policies (space-separated names, as an index's policies key holds
 * them): a denial recorded when a page was rendered stands only while
 * its policy is still the index's. Returns 1 or 0. */
int policy_reason_current(const char *reason, const char *policies);

/* Frees reasons as policy_split() made it, of n strings. */
void policy_reasons_free(char **reasons, size_t n);

#endif
