/* policy_osv: OSV advisories (https://ossf.github.io/osv-schema/), read
 * from the JSON files of an ecosystem's dump, into the affected ranges a
 * policy's deny_vulnerable and vulnerable rules look at. Only PyPI
 * packages and ECOSYSTEM ranges (and explicit versions lists) are kept; a
 * withdrawn advisory keeps none. I/O-free. */
#ifndef LARDER_POLICY_OSV_H
#define LARDER_POLICY_OSV_H

#include <stddef.h>

#include "common/names.h"
#include "common/pypi/policy.h"

#define POLICY_OSV_MAX_RANGES 4096

/* One advisory: n ranges, range i of project[i] (normalised). */
struct policy_osv {
	char id[64];
	struct policy_vuln *range;
	char (*project)[NAMES_MAX_PROJECT + 1];
	size_t n;
};

/* Reads data (len bytes): one advisory object, or an array of them, and
 * calls fn for each (adv and what it points to live until fn returns).
 * Returns 0, fn's non-zero return, ENOMEM, or EINVAL with a one-line
 * reason in err (not JSON, an advisory without an id, more than
 * POLICY_OSV_MAX_RANGES ranges). */
int policy_osv_parse(const char *data, size_t len,
                     int (*fn)(const struct policy_osv *adv, void *ctx),
                     void *ctx, char *err, size_t errlen);

#endif
