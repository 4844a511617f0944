/* libFuzzer target: image rules of a policy. Whatever the text, it is
 * taken or refused with a reason; what is taken has repository globs of
 * the grammar's bytes, and deciding any image with it names a rule of it
 * or the default. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/oci/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct oci_policy pol;
	struct oci_policy_verdict v;
	char *text = malloc(n + 1);
	const char *why;

	if (!text)
		return 0;
	memcpy(text, d, n);
	text[n] = 0;
	memset(&pol, 0, sizeof(pol));
	pol.name = "f";
	why = oci_policy_parse_rules(text, n & 1, &pol);
	if (why && (pol.nrules != 0 || !*why))
		abort();
	for (size_t i = 0; i < pol.nrules; i++)
		if (!*pol.rule[i].repo ||
		    strspn(pol.rule[i].repo, "abcdefghijklmnopqrstuvwxyz"
		                             "0123456789._-/*?") !=
		        strlen(pol.rule[i].repo))
			abort();
	oci_policy_decide(&pol, "library/nginx", "1.25", &v);
	if (v.rule < -1 || v.rule >= (int)pol.nrules || !*v.reason)
		abort();
	oci_policy_decide(&pol, "a", NULL, &v);
	if (v.rule < -1 || v.rule >= (int)pol.nrules || !*v.reason)
		abort();
	free(text);
	return 0;
}
