/* rulelist: splitting a policy's rule lists (rulelist.h). */
#include "config.h"

#include <string.h>

#include "common/rulelist.h"

const char *rulelist_each(const char *rules, int (*continues)(int ch),
                          const char *(*fn)(const char *rule, size_t n,
                                            void *ctx),
                          void *ctx)
{
	size_t start = 0, n;
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
		if (continues && i < n && j < n && continues(rules[j]))
			continue;
		why = fn(rules + start, i - start, ctx);
		start = i + 1;
	}
	return why;
}
