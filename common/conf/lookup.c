/* conf lookup: finding a parsed config's sections by name, and words in
 * its lists (conf.h). Apart from the parser (conf.c): what a config's
 * readers use. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
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

int conf_policies_compile(const struct conf *c, const char *list,
                          size_t size,
                          int (*compile)(const struct conf_policy_def *d,
                                         void *out),
                          void **out, size_t *n)
{
	const char *s = list;
	size_t k = 0, want = 1;
	char *all;
	int err = 0;

	*out = NULL;
	*n = 0;
	if (!s || !*s)
		return 0;
	for (const char *p = s; *p; p++)
		want += *p == ' ';
	all = calloc(want, size);
	if (!all)
		return ENOMEM;
	while (*s && !err) {
		size_t len = strcspn(s, " ");
		int j = conf_policy_find(c, s, len);

		err = j < 0 ? EINVAL : compile(&c->policy[j], all + k++ * size);
		s += len;
		s += *s == ' ';
	}
	if (err) {
		free(all);
		return err;
	}
	*out = all;
	*n = k;
	return 0;
}
