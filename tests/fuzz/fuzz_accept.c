/* libFuzzer target: the Accept negotiator never crashes and always picks
 * one of the three answers; the Accept-Encoding one says yes or no. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/http/accept.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char *s = malloc(n + 1);
	enum accept_format f;

	if (!s)
		return 0;
	memcpy(s, d, n);
	s[n] = '\0';
	f = accept_choose(s);
	if (f != ACCEPT_NONE && f != ACCEPT_JSON && f != ACCEPT_HTML)
		abort();
	if (accept_gzip(s) != 0 && accept_gzip(s) != 1)
		abort();
	f = accept_from_format(s);
	if (f != ACCEPT_NONE && f != ACCEPT_JSON && f != ACCEPT_HTML)
		abort();
	free(s);
	return 0;
}
