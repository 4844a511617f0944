/* libFuzzer target: an Authorization value, a glob list and an action
 * list from one input (split at the first two NUL bytes). Parsing never
 * crashes; a token it finds formats back to the same id and secret; a
 * normalised glob list normalises to itself and matching it terminates;
 * a parsed action list formats to a list that parses to the same mask. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/http/token.h"
#include "common/names.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char id[TOKEN_ID_HEX + 1], secret[TOKEN_SECRET_HEX + 1];
	char text[TOKEN_TEXT_LEN + 1], id2[TOKEN_ID_HEX + 1];
	char secret2[TOKEN_SECRET_HEX + 1], globs[512], again[512];
	char err[256], list[64];
	const char *auth, *glob_in, *actions;
	unsigned mask, mask2;
	char *s = malloc(n + 3);

	if (!s)
		return 0;
	memcpy(s, d, n);
	s[n] = s[n + 1] = s[n + 2] = '\0';
	auth = s;
	glob_in = auth + strlen(auth) + 1;
	if (glob_in > s + n)
		glob_in = s + n + 1;
	actions = glob_in + strlen(glob_in) + 1;
	if (actions > s + n + 1)
		actions = s + n + 2;

	if (token_from_authorization(auth, id, secret) == 0) {
		if (token_format(id, secret, text, sizeof(text)) != 0 ||
		    token_parse(text, strlen(text), id2, secret2) != 0 ||
		    strcmp(id, id2) != 0 || strcmp(secret, secret2) != 0)
			abort();
	}
	if (names_globs_normalize(glob_in, globs, sizeof(globs), err,
	                          sizeof(err)) == 0) {
		if (names_globs_normalize(globs, again, sizeof(again), err,
		                          sizeof(err)) != 0 ||
		    strcmp(globs, again) != 0)
			abort();
		/* a glob matches what it spells when it has no wildcards */
		if (!strpbrk(globs, "*? ") && !names_globs_match(globs, globs))
			abort();
		names_globs_match(globs, auth);
		if (!names_globs_match("*", globs))
			abort();
	}
	if (token_actions_parse(actions, &mask, err, sizeof(err)) == 0) {
		if (!mask || (mask & ~TOKEN_ANY_ACTIONS) ||
		    token_actions_format(mask, list, sizeof(list)) != 0 ||
		    token_actions_parse(list, &mask2, err, sizeof(err)) != 0 ||
		    mask != mask2)
			abort();
	}
	free(s);
	return 0;
}
