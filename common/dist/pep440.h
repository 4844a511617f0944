/* pep440: PEP 440 versions, read and ordered as packaging orders them
 * (what "latest release" means to pip and to pypi.org's JSON API).
 * I/O-free.
 *
 * A version is read in its normal form (distname_version_canon()):
 * [N!]N(.N)*[{a|b|rc}N][.postN][.devN][+local]. Ordering: epoch, then
 * release (trailing zeros ignored), then 1.0.dev1 < 1.0a1 < 1.0a1.post1
 * < 1.0 < 1.0+local < 1.0.post1; a local part orders numeric segments
 * above alphabetic ones and a longer one after its prefix.
 */
#ifndef LARDER_PEP440_H
#define LARDER_PEP440_H

#include <stddef.h>

#define PEP440_MAX_RELEASE 16
#define PEP440_MAX_LOCAL   64

enum pep440_pre {
	PEP440_PRE_NONE = 0,
	PEP440_PRE_A,
	PEP440_PRE_B,
	PEP440_PRE_RC,
};

struct pep440 {
	unsigned long long epoch;
	unsigned long long release[PEP440_MAX_RELEASE];
	size_t nrelease;
	enum pep440_pre pre;
	unsigned long long pre_n;
	int has_post, has_dev;
	unsigned long long post, dev;
	char local[PEP440_MAX_LOCAL]; /* normalised, "" when none */
};

/* Reads version v (any spelling distname_version_canon() takes) into out.
 * Returns 0, or EINVAL when v is no PEP 440 version, has more than
 * PEP440_MAX_RELEASE release numbers, a number past 2^64 or a local part
 * too long. */
int pep440_parse(const char *v, struct pep440 *out);

/* Compares a and b: < 0, 0 or > 0 as a orders before, with or after b. */
int pep440_cmp(const struct pep440 *a, const struct pep440 *b);

/* Whether v is a pre-release as packaging says: a dev or pre part. */
int pep440_is_prerelease(const struct pep440 *v);

/* Checks spec, a PEP 440 specifier set: clauses "OP VERSION" separated by
 * ',' (OP one of == != <= >= < > ~=; "==" and "!=" take "V.*";
 * "===" is not taken).
 * Returns 0, or EINVAL when a clause is not one. */
int pep440_spec_check(const char *spec);

/* Whether v satisfies every clause of spec (as pep440_spec_check()
 * takes; "" is satisfied by every version). Pre-releases are matched like
 * any version (a policy names what it means), but "<V" leaves out V's own
 * pre-releases as packaging does. A local part is ignored unless the
 * clause gives one. Returns 1 or 0; 0 for a spec that does not check. */
int pep440_spec_match(const char *spec, const struct pep440 *v);

#endif
