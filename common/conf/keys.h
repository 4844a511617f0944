/* conf_keys: the internals the conf_*.c files share; nothing else includes it.
 *
 * conf_keys.c holds the table of keys and the types of their values, the
 * checks the table names and the rules for index and registry names;
 * conf_value.c the parsing of one value; conf.c the parser; conf_check.c
 * the checks on the declared indexes and registries as a whole;
 * conf_man.c conf_dump() and conf_man(). They all work from the one table.
 */
#ifndef LARDER_CONF_KEYS_H
#define LARDER_CONF_KEYS_H

#include <stddef.h>

#include "common/conf/conf.h"

#define CONF_MAX_NAME          100 /* bytes in an index name */
#define CONF_MAX_REGISTRY_NAME 64  /* bytes in a registry name */

enum conf_type {
	T_STRING,  /* any text without control characters */
	T_PATH,    /* absolute path; trailing '/' dropped; "" when the
	              default is "" */
	T_URL,     /* absolute http(s) URL; made to end with '/' */
	T_ENUM,    /* one of key.values, stored as int */
	T_SECONDS, /* 300, 300s, 5m, 2h, 1d; stored as long */
	T_SIZE,    /* 65536, 512k, 64M, 1G; stored as long */
	T_BOOL,    /* yes/no and friends; stored as int */
	T_COUNT,   /* non-negative integer; stored as long */
	T_LIST,    /* space-separated words; stored with single spaces */
	T_URLPATH, /* /like/this/ */
	T_PERCENT, /* 0% to 99%; stored as long */
	T_TIME,    /* RFC 3339 UTC time or ""; unix seconds (0: "") as long */
};

#define CONF_NTYPES (T_TIME + 1)

/* What each type is called in the man page, the form an error expects, and
 * the paragraph the man page gives it. */
struct conf_type_info {
	const char *name;
	const char *expect;
	const char *doc;
};

extern const struct conf_type_info conf_types[CONF_NTYPES];

struct conf_key {
	const char *section; /* "larder", "index", "registry", "webhook" or
	                        "policy" */
	const char *name;
	size_t off; /* in struct conf, conf_index or conf_registry */
	enum conf_type type;
	const char *def; /* as text, through the same parser; NULL = none */
	const char *const *values; /* T_ENUM, in enum order */
	/* Runs after the value is stored in field; it may tidy the value in
	 * place. Returns NULL, or the form that was expected instead. */
	const char *(*check)(void *field);
	const char *help;
	unsigned types; /* index keys: the types that may set it, as
	                   CONF_FOR() bits; 0: every type */
	int inherit;    /* index and registry keys: unset, the [larder] key of
	                   the same name applies (conf_inherit); stored as -1,
	                   or NULL for a list, and def is NULL */
};

/* The bit of an index type in conf_key.types. */
#define CONF_FOR(t) (1u << (t))

#define CONF_NKEYS 73 /* entries in conf_keys; conf/keys.c checks the count */

/* The one table of keys, in the order of the man page and of conf_dump. */
extern const struct conf_key conf_keys[CONF_NKEYS];

/* The indexes larder serves with no [index] section, as a config file. */
extern const char conf_default_indexes[];

/* The registry larder serves with no [registry] section, likewise. */
extern const char conf_default_registries[];

/* The man page's EXAMPLE, as a config file. */
extern const char conf_example[];

/* True for a blank: space, tab, '\r', '\v' or '\f'. */
int conf_is_ws(int ch);

/* True for a control character (below 0x20, or DEL). */
int conf_is_ctl(int ch);

/* True for a-z or 0-9; conf_is_alnum() takes A-Z too. */
int conf_is_lower_digit(int ch);
int conf_is_alnum(int ch);

/* Returns key k's field in base (a struct conf, conf_index or
 * conf_registry, as k's section says). */
void *conf_field(void *base, const struct conf_key *k);

/* conf_field() for a const base. */
const void *conf_cfield(const void *base, const struct conf_key *k);

/* True when a value of type t is stored as a char * that the conf owns. */
int conf_is_string(enum conf_type t);

/* Returns the key called name in section ("larder", "index" or
 * "registry"), or NULL. */
const struct conf_key *conf_find_key(const char *section, const char *name);

/* Returns NULL when name is a good index name, else what is wrong. */
const char *conf_bad_index_name(const char *name);

/* What checks a [policy]'s allow and deny rules: NULL (no check, as in
 * common/conf's own tests), or a function that returns NULL when rules
 * are good, else what is wrong. The PyPI room sets it
 * (policy_conf_hook(), common/pypi/policy.h): common/conf knows no
 * PEP 440. */
extern const char *(*conf_policy_rules_check)(const char *rules);
/* Checks a policy's rules as image rules (common/oci/policy.c sets it):
 * NULL or what is wrong. A rule is taken as it is read when either
 * grammar takes it; who names the policy says which must. */
extern const char *(*conf_image_rules_check)(const char *rules);

/* Returns NULL when name is a good registry name, else what is wrong. */
const char *conf_bad_registry_name(const char *name);

/* Whether key k in base is unset and so inherits [larder]'s value. */
int conf_is_inherited(const void *base, const struct conf_key *k);

/* Marks base's inheriting keys of section unset (conf_key.inherit). */
void conf_set_inherited(void *base, const char *section);

/* Parses v as key k into base; returns 0, ENOMEM or EINVAL (conf_value.c). */
int conf_set_value(void *base, const struct conf_key *k, const char *v,
                   const char **why, const char **form);

/* A line number carries its file: line / CONF_LINE_SPAN is 0 for the file
 * conf_parse() was given, else 1 + its place in conf_parser.files. */
#define CONF_LINE_SPAN (1u << 24)
#define CONF_MAX_FILES 128 /* files one config includes, all told */
#define CONF_MAX_DEPTH 8   /* includes within includes */

/* The parser's state; conf_check.c reads it to name lines in messages. */
struct conf_parser {
	struct conf *c;
	const char *name; /* for messages */
	char *err;
	size_t errlen;
	unsigned line;
	/* the section being read (conf.c's table; NULL outside any) and
	 * which of its kind it is */
	const struct conf_kind *in;
	size_t at;
	unsigned seen;   /* the kinds of section seen, a bit each */
	char where[160]; /* "", "[index \"NAME\"]: " or "[registry ...]: " */
	unsigned larder_line[CONF_NKEYS]; /* where each was set */
	unsigned index_line[CONF_MAX_INDEXES][CONF_NKEYS];
	unsigned section_line[CONF_MAX_INDEXES];
	unsigned registry_line[CONF_MAX_REGISTRIES][CONF_NKEYS];
	unsigned registry_section_line[CONF_MAX_REGISTRIES];
	unsigned webhook_line[CONF_MAX_WEBHOOKS][CONF_NKEYS];
	unsigned webhook_section_line[CONF_MAX_WEBHOOKS];
	unsigned policy_line[CONF_MAX_POLICIES][CONF_NKEYS];
	unsigned policy_section_line[CONF_MAX_POLICIES];
	/* include = GLOB: reads and parses the files it names (conf_load's;
	 * NULL for text that is not a file on disk) */
	int (*include)(struct conf_parser *p, const char *pattern);
	char *files[CONF_MAX_FILES]; /* the included files' names, owned */
	unsigned nfiles;
	unsigned depth;              /* includes open */
};

/* The name of the file line (as conf_parser keeps it) is in. */
const char *conf_file_of(const struct conf_parser *p, unsigned line);

/* conf_parse(), with include lines read through include (NULL: refused,
 * for text that is not a file on disk). Same returns. */
int conf_parse_with(struct conf *c, const char *name, const char *text,
                    size_t len, int (*include)(struct conf_parser *,
                                               const char *),
                    char *err, size_t errlen);

/* Where line (as conf_parser keeps it) is, said in a message about line
 * here: "line 4" in the same file, else "conf.d/a.conf:4". Returns out. */
const char *conf_line_ref(const struct conf_parser *p, unsigned here,
                          unsigned line, char *out, size_t outlen);

/* Parses text, the whole of the file path, into p's config as if it stood
 * where the include line is: it starts outside any section, and the
 * section the include was in goes on after it. Returns 0 or EINVAL /
 * ENOMEM (with p's message). Does no I/O. */
int conf_parse_included(struct conf_parser *p, const char *path,
                        const char *text, size_t len);

/* Writes "NAME:LINE: message" to p's error buffer; returns EINVAL. */
int conf_fail(struct conf_parser *p, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Checks the declared indexes as a whole and resolves virtual indexes'
 * layers; returns 0, or EINVAL with the message from conf_fail(). */
int conf_check_indexes(struct conf_parser *p);

/* Checks the [policy] sections and the names indexes give in policies.
 * Returns 0, or EINVAL with the message from conf_fail(). */
int conf_check_policies(struct conf_parser *p);

/* Checks the declared registries: each has an upstream, username and
 * password_file come together, at most one is the default. Returns 0, or
 * EINVAL with the message from conf_fail(). */
int conf_check_registries(struct conf_parser *p);

/* Checks the webhooks: each has a url and a secret_file, and the indexes
 * and registries they name are declared. Returns 0, or EINVAL with the
 * message from conf_fail(). */
int conf_check_webhooks(struct conf_parser *p);

#endif
