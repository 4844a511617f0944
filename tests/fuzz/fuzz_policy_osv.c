/* libFuzzer target: the OSV reader never crashes, and every range it
 * hands out has an id, a normalised project and strings that end. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/pypi/policy_osv.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

static int check(const struct policy_osv *adv, void *ctx)
{
	(void)ctx;
	if (!adv->id[0] || adv->n > POLICY_OSV_MAX_RANGES)
		abort();
	for (size_t i = 0; i < adv->n; i++) {
		if (strcmp(adv->range[i].id, adv->id) || !adv->project[i][0] ||
		    strlen(adv->range[i].introduced) >=
		        sizeof(adv->range[i].introduced))
			abort();
		policy_vuln_affects(&adv->range[i], "1.0");
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char err[256];

	policy_osv_parse((const char *)d, n, check, NULL, err, sizeof(err));
	return 0;
}
