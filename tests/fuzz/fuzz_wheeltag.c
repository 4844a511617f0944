/* libFuzzer target: wheel and sdist names of any shape are read without
 * crashing; a rank is a position in the target's list; the first line of
 * the input as a platform tag makes a target or EINVAL. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/wheeltag.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct wheeltag_target t;
	static int ready;
	struct wheeltag_target u;
	char name[64], ver[64], tags[256], *s, *nl;
	long r;
	int rc;

	if (!ready) {
		if (wheeltag_target_init(&t, "3.12", "manylinux_2_17_x86_64"))
			abort();
		ready = 1;
	}
	s = malloc(n + 1);
	if (!s)
		return 0;
	memcpy(s, d, n);
	s[n] = '\0';
	r = wheeltag_rank(&t, s);
	if (r < -1 || (r >= 0 && (size_t)r >= t.n))
		abort();
	if (wheeltag_split(s, name, sizeof(name), ver, sizeof(ver), tags,
	                   sizeof(tags)) == 0 &&
	    (!name[0] || !ver[0] || strchr(name, '-')))
		abort();
	(void)wheeltag_sdist_version(s, "foo-bar", ver, sizeof(ver));
	(void)wheeltag_version_eq(s, "1.0");
	nl = strchr(s, '\n');
	if (nl) {
		*nl = '\0';
		rc = wheeltag_target_init(&u, "3.11", s);
		if (rc == 0) {
			(void)wheeltag_rank(&u, nl + 1);
			wheeltag_target_free(&u);
		} else if (rc != EINVAL) {
			abort();
		}
	}
	free(s);
	return 0;
}
