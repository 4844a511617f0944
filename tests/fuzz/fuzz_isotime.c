/* libFuzzer target: whatever isotime_parse() accepts formats back to a
 * time that parses to the same value; nothing crashes or reads past len. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/isotime.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char out[ISOTIME_LEN];
	long long t, back;

	if (isotime_parse((const char *)d, n, &t) != 0)
		return 0;
	if (isotime_format(t, out) != 0)
		return 0; /* an offset took it past year 9999 or before 0 */
	if (isotime_parse(out, strlen(out), &back) != 0 || back != t)
		abort();
	return 0;
}
