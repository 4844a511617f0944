/* conf_check: the checks that need the whole file, run after parsing: each
 * declared index has the keys its type needs, virtual indexes' layers name
 * declared indexes and form no cycle, and the declared registries have
 * what they need and one default at most. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/conf/conf.h"
#include "common/conf/keys.h"

/* Index i's line for key name, or its section's line. */
static unsigned key_line(const struct conf_parser *p, size_t i,
                         const char *name)
{
	const struct conf_key *k = conf_find_key("index", name);
	unsigned line = p->index_line[i][k - conf_keys];

	return line ? line : p->section_line[i];
}

static int is_set(const struct conf_parser *p, size_t i, const char *name)
{
	return p->index_line[i][conf_find_key("index", name) - conf_keys] != 0;
}

/* "cache", "virtual", "hosted" or a list of them, for a key's types. */
static void type_names(unsigned types, char *out, size_t len)
{
	static const char *const names[] = {"cache", "virtual", "hosted"};
	size_t n = 0;

	*out = '\0';
	for (size_t t = 0; t < sizeof(names) / sizeof(names[0]); t++) {
		if (!(types & CONF_FOR(t)))
			continue;
		n += (size_t)snprintf(out + n, len - n, "%s%s", n ? " or " : "",
		                      names[t]);
		if (n >= len)
			return;
	}
}

/* Checks one declared index on its own: type, the keys it needs, and no
 * key the table says is for another type. */
static int check_index(struct conf_parser *p, size_t i)
{
	struct conf_index *ix = &p->c->index[i];
	unsigned line = p->section_line[i];
	char types[64];

	snprintf(p->where, sizeof(p->where), "[index \"%s\"]: ", ix->name);
	if (!is_set(p, i, "type"))
		return conf_fail(p, line,
		                 "%smissing type (expected one of cache, "
		                 "virtual, hosted)",
		                 p->where);
	for (size_t k = 0; k < CONF_NKEYS; k++) {
		const struct conf_key *key = &conf_keys[k];

		if (strcmp(key->section, "index") || !key->types ||
		    (key->types & CONF_FOR(ix->type)) ||
		    !p->index_line[i][k])
			continue;
		type_names(key->types, types, sizeof(types));
		return conf_fail(p, p->index_line[i][k],
		                 "%s%s is only for type = %s", p->where,
		                 key->name, types);
	}
	if (ix->type == CONF_INDEX_CACHE && !ix->upstream)
		return conf_fail(p, line,
		                 "%smissing upstream (a cache index needs "
		                 "the URL of its upstream simple index)",
		                 p->where);
	if (ix->type == CONF_INDEX_VIRTUAL && !ix->layers)
		return conf_fail(p, line,
		                 "%smissing layers (a virtual index needs the "
		                 "names of the indexes it serves)",
		                 p->where);
	return 0;
}

static int resolve_layers(struct conf_parser *p, size_t i)
{
	struct conf_index *ix = &p->c->index[i];
	char name[CONF_MAX_NAME + 1];
	size_t n;
	int j;

	ix->nlayers = 0;
	for (const char *w = ix->layers; *w; w += n + (w[n] == ' ')) {
		n = strcspn(w, " ");
		memcpy(name, w, n); /* check_layers saw n <= CONF_MAX_NAME */
		name[n] = '\0';
		j = conf_index_find(p->c, name);
		if (j < 0 || (size_t)j == i)
			return conf_fail(
			    p, key_line(p, i, "layers"),
			    "%slayers = \"%s\": %s \"%s\"", p->where,
			    ix->layers,
			    j < 0 ? "unknown index"
			          : "an index cannot be its own layer:",
			    name);
		ix->layer[ix->nlayers++] = (size_t)j;
	}
	return 0;
}

/* Reports the cycle stack[start..depth-1] -> stack[start]. */
static int report_cycle(struct conf_parser *p, const size_t *stack,
                        size_t start, size_t depth)
{
	const struct conf_index *ix = &p->c->index[stack[start]];
	char path[1024];
	size_t n = 0;
	int w;

	for (size_t d = start; d < depth && n < sizeof(path); d++) {
		w = snprintf(path + n, sizeof(path) - n, "%s -> ",
		             p->c->index[stack[d]].name);
		n += w < 0 ? 0 : (size_t)w;
	}
	if (n < sizeof(path))
		snprintf(path + n, sizeof(path) - n, "%s", ix->name);
	snprintf(p->where, sizeof(p->where), "[index \"%s\"]: ", ix->name);
	return conf_fail(p, key_line(p, stack[start], "layers"),
	                 "%slayers form a cycle: %s", p->where, path);
}

/* Depth-first walk from index i; state is 0 (not seen), 1 (on the path in
 * stack[0..depth-1]) or 2 (done). Returns EINVAL on a cycle. */
static int visit(struct conf_parser *p, size_t i, unsigned char *state,
                 size_t *stack, size_t depth)
{
	const struct conf_index *ix = &p->c->index[i];
	size_t start;
	int err;

	if (state[i] == 2 || ix->type != CONF_INDEX_VIRTUAL)
		return 0;
	if (state[i] == 1) {
		for (start = 0; stack[start] != i; start++)
			;
		return report_cycle(p, stack, start, depth);
	}
	state[i] = 1;
	stack[depth] = i;
	for (size_t l = 0; l < ix->nlayers; l++) {
		err = visit(p, ix->layer[l], state, stack, depth + 1);
		if (err)
			return err;
	}
	state[i] = 2;
	return 0;
}

/* Checks the declared indexes as a whole. */
int conf_check_indexes(struct conf_parser *p)
{
	unsigned char state[CONF_MAX_INDEXES] = {0};
	size_t stack[CONF_MAX_INDEXES];
	int err;

	for (size_t i = 0; i < p->c->nindex; i++) {
		err = check_index(p, i);
		if (err)
			return err;
	}
	for (size_t i = 0; i < p->c->nindex; i++) {
		p->c->index[i].nlayers = 0;
		if (p->c->index[i].type != CONF_INDEX_VIRTUAL)
			continue;
		snprintf(p->where, sizeof(p->where),
		         "[index \"%s\"]: ", p->c->index[i].name);
		err = resolve_layers(p, i);
		if (err)
			return err;
	}
	for (size_t i = 0; i < p->c->nindex; i++) {
		err = visit(p, i, state, stack, 0);
		if (err)
			return err;
	}
	return 0;
}

/* Registry i's line for key name, or its section's line. */
static unsigned registry_key_line(const struct conf_parser *p, size_t i,
                                  const char *name)
{
	const struct conf_key *k = conf_find_key("registry", name);
	unsigned line = p->registry_line[i][k - conf_keys];

	return line ? line : p->registry_section_line[i];
}

/* Resolves the layers of virtual registry i into its layer[]. Returns 0,
 * or EINVAL with the failure said. */
static int registry_layers(struct conf_parser *p, size_t i)
{
	struct conf_registry *r = &p->c->registry[i];
	unsigned line = registry_key_line(p, i, "layers");
	const char *s = r->layers, *e;
	int j;

	r->nlayers = 0;
	for (;;) {
		while (*s == ' ')
			s++;
		if (!*s)
			break;
		e = s + strcspn(s, " ");
		j = conf_registry_find(p->c, s, (size_t)(e - s));
		if (j < 0 || (size_t)j == i ||
		    p->c->registry[j].type == CONF_REGISTRY_VIRTUAL)
			return conf_fail(p, line,
			                 "%slayer \"%.*s\" is not a hosted or "
			                 "cache registry of this file",
			                 p->where, (int)(e - s), s);
		/* what a layer keeps to token holders, the virtual
		 * registry must not hand out to anyone */
		if (p->c->registry[j].read == CONF_READ_TOKEN &&
		    r->read != CONF_READ_TOKEN)
			return conf_fail(p, line,
			                 "%slayer \"%.*s\" has read = token, so "
			                 "%s needs read = token too",
			                 p->where, (int)(e - s), s, r->name);
		if (r->nlayers >= CONF_MAX_LAYERS)
			return conf_fail(p, line, "%sat most %d layers",
			                 p->where, CONF_MAX_LAYERS);
		r->layer[r->nlayers++] = (size_t)j;
		s = e;
	}
	if (!r->nlayers)
		return conf_fail(p, line, "%sno layers", p->where);
	return 0;
}

/* Checks the declared registries; by their values, not by which keys were
 * written, so that a dump (which writes every key) parses again. */
int conf_check_registries(struct conf_parser *p)
{
	const char *set, *unset;
	char ref[PATH_MAX + 32];
	int def = -1;

	for (size_t i = 0; i < p->c->nregistry; i++) {
		const struct conf_registry *r = &p->c->registry[i];
		unsigned line = p->registry_section_line[i];

		snprintf(p->where, sizeof(p->where),
		         "[registry \"%s\"]: ", r->name);
		if (r->type == CONF_REGISTRY_CACHE && !r->upstream)
			return conf_fail(
			    p, line,
			    "%sregistry %s has no upstream (expected "
			    "the URL of the registry it caches, like "
			    "upstream = https://registry-1.docker.io)",
			    p->where, r->name);
		if (r->type != CONF_REGISTRY_CACHE && r->upstream)
			return conf_fail(p, registry_key_line(p, i, "upstream"),
			                 "%sa %s registry has no upstream",
			                 p->where,
			                 r->type == CONF_REGISTRY_HOSTED
			                     ? "hosted" : "virtual");
		if ((r->type == CONF_REGISTRY_VIRTUAL) != (r->layers != NULL))
			return conf_fail(p, registry_key_line(p, i, "layers"),
			                 "%s%s", p->where,
			                 r->layers ? "only a virtual registry has "
			                             "layers"
			                           : "a virtual registry needs "
			                             "layers = REGISTRY...");
		if (r->layers) {
			int err = registry_layers(p, i);

			if (err)
				return err;
		}
		/* the token service wants both or neither */
		if (!*r->username != !*r->password_file) {
			set = *r->username ? "username" : "password_file";
			unset = *r->username ? "password_file" : "username";
			return conf_fail(p, registry_key_line(p, i, set),
			                 "%susername and password_file go "
			                 "together: %s is set but %s is not",
			                 p->where, set, unset);
		}
		if (!r->is_default)
			continue;
		if (def >= 0)
			return conf_fail(
			    p, registry_key_line(p, i, "default"),
			    "%sdefault = yes, but so is [registry \"%s\"] "
			    "(%s): at most one registry may be the "
			    "default",
			    p->where, p->c->registry[def].name,
			    conf_line_ref(p, registry_key_line(p, i, "default"),
			                  p->registry_section_line[def], ref,
			                  sizeof(ref)));
		def = (int)i;
	}
	return 0;
}

/* Where key name of webhook i was set, else its section's line. */
static unsigned webhook_key_line(const struct conf_parser *p, size_t i,
                                 const char *name)
{
	const struct conf_key *k = conf_find_key("webhook", name);
	unsigned line = p->webhook_line[i][k - conf_keys];

	return line ? line : p->webhook_section_line[i];
}

/* The first word of list that names nothing find() knows, or NULL. */
static const char *unknown_name(const struct conf *c, const char *list,
                                int registries, char *out, size_t outlen)
{
	size_t n;

	for (const char *w = list; w && *w; w += n + (w[n] == ' ')) {
		n = strcspn(w, " ");
		snprintf(out, outlen, "%.*s", (int)n, w);
		if (registries ? conf_registry_find(c, w, n) < 0
		               : conf_index_find(c, out) < 0)
			return out;
	}
	return NULL;
}

int conf_check_webhooks(struct conf_parser *p)
{
	char name[CONF_MAX_NAME + 1];

	for (size_t i = 0; i < p->c->nwebhook; i++) {
		const struct conf_webhook *h = &p->c->webhook[i];
		unsigned line = p->webhook_section_line[i];

		snprintf(p->where, sizeof(p->where), "[webhook \"%s\"]: ",
		         h->name);
		if (!h->url)
			return conf_fail(p, line, "%swebhook %s has no url "
			                 "(expected url = https://host/path)",
			                 p->where, h->name);
		if (!*h->secret_file)
			return conf_fail(p, line, "%swebhook %s has no "
			                 "secret_file (expected the path of a "
			                 "file whose first line is the secret)",
			                 p->where, h->name);
		if (unknown_name(p->c, h->indexes, 0, name, sizeof(name)))
			return conf_fail(p, webhook_key_line(p, i, "indexes"),
			                 "%sindexes: no index is called %s",
			                 p->where, name);
		if (unknown_name(p->c, h->registries, 1, name, sizeof(name)))
			return conf_fail(p, webhook_key_line(p, i, "registries"),
			                 "%sregistries: no registry is called %s",
			                 p->where, name);
	}
	return 0;
}

/* Checks policy j's rules in the grammar its user needs: image rules for
 * a registry (and no deny_vulnerable), PyPI rules for an index. Returns
 * 0, or EINVAL with the message from conf_fail() naming the key's line. */
static int policy_for(struct conf_parser *p, size_t j, int image,
                      const char *what, const char *user)
{
	const struct conf_policy_def *d = &p->c->policy[j];
	const char *(*check)(const char *) =
	    image ? conf_image_rules_check : conf_policy_rules_check;
	const char *keys[] = {"allow", "deny"};
	const char *vals[] = {d->allow, d->deny};

	if (image && d->deny_vulnerable == 1) {
		const struct conf_key *kv =
		    conf_find_key("policy", "deny_vulnerable");

		return conf_fail(p, p->policy_line[j][kv - conf_keys],
		                 "[policy \"%s\"]: deny_vulnerable = yes: "
		                 "PyPI-only (advisories name PyPI versions), and "
		                 "[%s \"%s\"] names this policy", d->name, what,
		                 user);
	}
	for (size_t i = 0; check && i < 2; i++) {
		const struct conf_key *kr = conf_find_key("policy", keys[i]);
		const char *why = vals[i] ? check(vals[i]) : NULL;

		if (why)
			return conf_fail(p, p->policy_line[j][kr - conf_keys],
			                 "[policy \"%s\"]: %s = \"%.120s\": %s "
			                 "([%s \"%s\"] names this policy)",
			                 d->name, keys[i], vals[i], why, what,
			                 user);
	}
	return 0;
}

/* The policies registries name: declared, and image rules. */
static int check_registry_policies(struct conf_parser *p)
{
	const struct conf_key *k = conf_find_key("registry", "policies");

	for (size_t i = 0; i < p->c->nregistry; i++) {
		const char *s = p->c->registry[i].policies;
		unsigned line = p->registry_line[i][k - conf_keys];

		while (s && *s) {
			size_t n = strcspn(s, " ");
			int j = conf_policy_find(p->c, s, n);

			if (j < 0)
				return conf_fail(p, line ? line :
				                 p->registry_section_line[i],
				                 "[registry \"%s\"]: policies: no "
				                 "[policy \"%.*s\"] in this file",
				                 p->c->registry[i].name, (int)n, s);
			if (policy_for(p, (size_t)j, 1, "registry",
			               p->c->registry[i].name))
				return EINVAL;
			s += n;
			s += *s == ' ';
		}
	}
	return 0;
}

int conf_check_policies(struct conf_parser *p)
{
	const struct conf_key *k = conf_find_key("index", "policies");
	const struct conf_key *ka = conf_find_key("policy", "allow");
	const struct conf_key *kd = conf_find_key("policy", "deny");

	for (size_t i = 0; i < p->c->npolicy; i++) {
		unsigned la = p->policy_line[i][ka - conf_keys];
		unsigned ld = p->policy_line[i][kd - conf_keys];

		/* the first rule that matches decides: the key written first
		 * is read first */
		p->c->policy[i].allow_first = la && (!ld || la < ld);
	}
	for (size_t i = 0; i < p->c->nindex; i++) {
		const char *s = p->c->index[i].policies;
		unsigned line = p->index_line[i][k - conf_keys];

		while (s && *s) {
			size_t n = strcspn(s, " ");
			int j = conf_policy_find(p->c, s, n);

			if (j < 0)
				return conf_fail(p, line ? line :
				                 p->section_line[i],
				                 "[index \"%s\"]: policies: no "
				                 "[policy \"%.*s\"] in this file",
				                 p->c->index[i].name, (int)n, s);
			if (policy_for(p, (size_t)j, 0, "index",
			               p->c->index[i].name))
				return EINVAL;
			s += n;
			s += *s == ' ';
		}
	}
	return check_registry_policies(p);
}
