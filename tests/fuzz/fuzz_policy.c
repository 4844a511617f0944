/* libFuzzer target: the policy rule parser never crashes, every rule it
 * takes has a project glob and specifiers that check, and a decision on
 * any file name is made without a crash. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/pep440.h"
#include "common/pypi/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct policy pol;
	static const struct policy_vuln vu = {"X-1", "1.0", "2.0", ""};
	struct policy_file f = {.project = "foo", .vulns = &vu, .nvulns = 1};
	struct policy_verdict v;
	char *s = malloc(n + 1);
	const char *files[] = {"foo-1.5.tar.gz",
	                       "foo-2.0-cp312-cp312-win_amd64.whl",
	                       "foo-1.0rc1.zip"};

	if (!s)
		return 0;
	memcpy(s, d, n);
	s[n] = 0;
	memset(&pol, 0, sizeof(pol));
	pol.name = "fuzz";
	if (policy_parse_rules(s, n & 1, &pol) == NULL) {
		for (size_t i = 0; i < pol.nrules; i++)
			if (!pol.rule[i].glob[0] ||
			    (pol.rule[i].spec[0] &&
			     pep440_spec_check(pol.rule[i].spec)))
				abort();
		for (size_t i = 0; i < 3; i++) {
			f.filename = files[i];
			f.yanked = (int)i & 1;
			f.license = i ? "MIT" : NULL;
			policy_decide(&pol, &f, &v);
		}
	} else if (pol.nrules) {
		abort(); /* a refusal leaves the rules as they were */
	}
	free(s);
	return 0;
}
