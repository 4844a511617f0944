/* libFuzzer target: whatever the words, search_match() either refuses
 * them or writes a query that is only FTS5 strings ("..." with each '"'
 * doubled, an optional '*' after one), separated by single spaces: no
 * operator, column filter or parenthesis of FTS5 can come out of it. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/search.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

/* Whether s is strings as above, and how many. */
static int only_strings(const char *s, size_t *terms)
{
	*terms = 0;
	while (*s) {
		if (*terms && *s++ != ' ')
			return 0;
		if (*s++ != '"')
			return 0;
		for (;;) {
			if (!*s)
				return 0;
			if (*s == '"') {
				if (s[1] != '"')
					break;
				s += 2;
				continue;
			}
			s++;
		}
		s++; /* the closing quote */
		if (*s == '*')
			s++;
		(*terms)++;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char out[SEARCH_MAX_MATCH], err[256];
	char *q = malloc(n + 1);
	size_t terms;
	int rc;

	if (!q)
		return 0;
	memcpy(q, d, n);
	q[n] = '\0';
	rc = search_match(q, out, sizeof(out), err, sizeof(err));
	if (rc != 0 && rc != EINVAL)
		abort(); /* SEARCH_MAX_MATCH is always enough */
	if (rc == 0 && (!only_strings(out, &terms) ||
			terms > SEARCH_MAX_TERMS))
		abort();
	if (rc == EINVAL && (!err[0] || strchr(err, '\n')))
		abort();
	free(q);
	return 0;
}
