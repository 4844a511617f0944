/* conf lookup: finding a parsed config's sections by name, and words in
 * its lists (conf.h). Apart from the parser (conf.c): what a config's
 * readers use. */
#include "config.h"

#include <string.h>

#include "common/conf/conf.h"

int conf_policy_find(const struct conf *c, const char *name, size_t n)
{
	for (size_t i = 0; i < c->npolicy; i++)
		if (strlen(c->policy[i].name) == n &&
		    !memcmp(c->policy[i].name, name, n))
			return (int)i;
	return -1;
}

int conf_index_find(const struct conf *c, const char *name)
{
	for (size_t i = 0; i < c->nindex; i++)
		if (c->index[i].name && !strcmp(c->index[i].name, name))
			return (int)i;
	return -1;
}

int conf_registry_find(const struct conf *c, const char *name, size_t n)
{
	for (size_t i = 0; i < c->nregistry; i++) {
		const char *r = c->registry[i].name;

		if (r && strlen(r) == n && !memcmp(r, name, n))
			return (int)i;
	}
	return -1;
}

int conf_webhook_find(const struct conf *c, const char *name)
{
	for (size_t i = 0; i < c->nwebhook; i++)
		if (!strcmp(c->webhook[i].name, name))
			return (int)i;
	return -1;
}

int conf_list_has(const char *list, const char *word)
{
	size_t n, len = strlen(word);

	for (const char *w = list; w && *w; w += n + (w[n] == ' ')) {
		n = strcspn(w, " ");
		if (n == len && !strncmp(w, word, n))
			return 1;
	}
	return 0;
}

int conf_registry_default(const struct conf *c)
{
	for (size_t i = 0; i < c->nregistry; i++)
		if (c->registry[i].is_default)
			return (int)i;
	return -1;
}
