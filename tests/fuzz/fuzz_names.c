/* libFuzzer target: normalisation is idempotent and its output is always
 * a valid, normalised name; the checks never crash. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/names.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char out[NAMES_MAX_PROJECT + 1], again[NAMES_MAX_PROJECT + 1];
	char *s = malloc(n + 1);

	if (!s)
		return 0;
	memcpy(s, d, n);
	s[n] = '\0';
	if (names_normalize(s, out, sizeof(out)) == 0) {
		if (names_normalize(out, again, sizeof(again)) != 0 ||
		    strcmp(out, again) != 0)
			abort();
		for (const char *p = out; *p; p++)
			if (!((*p >= 'a' && *p <= 'z') ||
			      (*p >= '0' && *p <= '9') || *p == '-'))
				abort();
	}
	if (names_is_sha256(s) && strlen(s) != 64)
		abort();
	if (names_is_filename(s) && (strchr(s, '/') || s[0] == '.'))
		abort();
	free(s);
	return 0;
}
