/* rulelist: splitting a policy's rule lists (rulelist.h). */
#include "config.h"

#include <string.h>

#include "common/rulelist.h"

/* One rule into the next slot. */
static const char *one_rule(const struct rulelist_into *into, int allow,
                            const char *rule, size_t n)
{
	if (*into->n == into->max)
		return "at most 64 rules in a policy";
	return into->parse(rule, n, allow,
	                   (char *)into->rules + (*into->n)++ * into->size);
}

const char *rulelist_parse(const char *rules, int allow,
                           const struct rulelist_into *into)
{
	size_t start = 0, n, had = *into->n;
	const char *why = NULL;

	if (!rules || !*rules)
		return NULL;
	n = strlen(rules);
	for (size_t i = 0; i <= n && !why; i++) {
		size_t j = i + 1;

		if (i < n && rules[i] != ',')
			continue;
		while (i < n && j < n && (rules[j] == ' ' || rules[j] == '\t'))
			j++;
		if (into->continues && i < n && j < n &&
		    into->continues(rules[j]))
			continue;
		why = one_rule(into, allow, rules + start, i - start);
		start = i + 1;
	}
	if (why)
		*into->n = had;
	return why;
}
