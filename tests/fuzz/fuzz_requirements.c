/* libFuzzer target: the requirements parser and the marker evaluator never
 * crash; every pinned entry has a normalised name, a version and lowercase
 * 64-digit hashes. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/requirements.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static const struct req_env env = {
	    "3.12", "3.12.0", "linux", "Linux", "x86_64", "cpython", "posix"};
	struct requirements r;
	char err[256], *s;

	if (requirements_parse((const char *)d, n, &r, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < r.n; i++) {
			const struct req_entry *e = &r.v[i];

			if (e->kind != REQ_PIN)
				continue;
			if (!e->name[0] || !e->version[0])
				abort();
			for (size_t k = 0; k < e->nhashes; k++)
				if (strlen(e->hashes[k]) != 64 ||
				    strspn(e->hashes[k], "0123456789abcdef") !=
				        64)
					abort();
			(void)requirements_marker(e->marker, &env);
		}
	}
	requirements_free(&r);
	s = malloc(n + 1);
	if (!s)
		return 0;
	memcpy(s, d, n);
	s[n] = '\0';
	(void)requirements_marker(s, &env);
	free(s);
	return 0;
}
