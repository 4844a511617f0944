/* conf: larder's configuration, from one table of keys.
 *
 * The table (in conf_keys.c) gives each key its section, type, default,
 * check and one line of help; the parser, the start-up validation, `larder
 * config check` and the larder.conf(5) man page are all generated from it.
 *
 * The file is INI with git-config-like sections:
 *     [larder]            global keys
 *     [index "NAME"]      one package index (NAME may contain '/')
 *     [registry "NAME"]   one OCI registry, served under /v2/NAME/
 *     [webhook "NAME"]    a receiver of signed events (docs/webhooks.md)
 *     [policy "NAME"]     rules on what may come in (docs/policy.md)
 * '#' and ';' start comments; values may be quoted with "".
 */
#ifndef LARDER_CONF_H
#define LARDER_CONF_H

#include <stddef.h>

#include "common/buf.h"

#define CONF_MAX_INDEXES 32
#define CONF_MAX_LAYERS 8
#define CONF_MAX_REGISTRIES 16
#define CONF_MAX_WEBHOOKS 16
#define CONF_MAX_POLICIES 16

enum conf_sendfile {
	CONF_SENDFILE_ACCEL,     /* "x-accel-redirect" (nginx) */
	CONF_SENDFILE_XSENDFILE, /* "x-sendfile" (lighttpd, Apache) */
	CONF_SENDFILE_STREAM,    /* "stream": larder writes the bytes itself */
};

enum conf_index_type {
	CONF_INDEX_CACHE,   /* "cache": pull-through cache of an upstream */
	CONF_INDEX_VIRTUAL, /* "virtual": layers over other indexes */
	CONF_INDEX_HOSTED,  /* "hosted": packages uploaded to larder */
};

/* How a virtual index merges its layers (docs/hosting.md). */
enum conf_policy {
	CONF_POLICY_PRIVATE_FIRST, /* "private-first": a project some hosted
	                              layer has comes from hosted layers only */
	CONF_POLICY_FALLBACK,      /* "fallback": every layer, merged */
	CONF_POLICY_NO_FALLBACK,   /* "no-fallback": hosted layers only */
};

/* What larder makes of a wheel whose upstream advertises no PEP 658
 * metadata (docs/reliability.md, "What larder vouches for"). */
enum conf_synth {
	CONF_SYNTH_RANGES,   /* "ranges": read by range requests, provisional
	                        until the whole wheel is fetched and verified */
	CONF_SYNTH_VERIFIED, /* "verified": from the whole wheel, verified */
	CONF_SYNTH_NO,       /* "no": none, a 404 as PyPI answers */
};

/* Who may read an index. */
/* What a [registry] is. */
enum conf_registry_type {
	CONF_REGISTRY_CACHE,  /* "cache": pull-through cache of an upstream */
	CONF_REGISTRY_HOSTED, /* "hosted": images pushed to larder */
	CONF_REGISTRY_VIRTUAL, /* "virtual": hosted and cache layers */
};

enum conf_read {
	CONF_READ_ANONYMOUS, /* "anonymous": anyone */
	CONF_READ_TOKEN,     /* "token": a token with the read action */
};

struct conf_index {
	char *name;                     /* "pypi", "root/pypi" */
	enum conf_index_type type;
	char *upstream;                 /* cache: absolute http(s) URL, ends in '/' */
	char *layers;                   /* virtual: names as written, space-separated */
	size_t layer[CONF_MAX_LAYERS];  /* virtual: resolved positions in conf.index */
	size_t nlayers;
	char *trusted_hosts;            /* cache: hosts files may come from, besides
	                                   the upstream's own; space-separated */
	int is_volatile;                /* hosted: 0/1, files may be replaced
	                                   and deleted */
	long max_upload_size;           /* hosted: bytes */
	enum conf_policy policy;        /* virtual */
	char *protected_names;          /* virtual: globs of normalised names
	                                   never served from a cache layer */
	enum conf_read read;            /* who may read it */
	/* cache: as [larder]'s keys of the same names; -1 (NULL for the
	 * list) when the section sets none: conf_inherit() */
	long min_release_age;           /* seconds */
	long exclude_newer;             /* unix seconds, 0 none */
	char *release_age_exempt;       /* normalised project globs */
	int offline;                    /* 0/1 */
	long stale_while_revalidate;    /* seconds */
	int synthesize_metadata;        /* enum conf_synth */
	char *policies;                 /* cache: [policy] names, space-
	                                   separated, "" none */
};

enum conf_library {
	CONF_LIBRARY_AUTO, /* "auto": yes when the upstream is Docker Hub */
	CONF_LIBRARY_YES,  /* "yes": a one-component name gets "library/" */
	CONF_LIBRARY_NO,   /* "no": names go upstream as they came */
};

struct conf_registry {
	char *name;             /* "hub": the first component of a name under
	                           /v2/ that picks this registry */
	char *upstream;         /* absolute http(s) URL, ends in '/' */
	long cache_ttl;         /* seconds a tag or a tag list is fresh */
	long max_stale;         /* seconds past that it may be served while
	                           the upstream fails */
	char *trusted_hosts;    /* hosts blob redirects may go to, besides the
	                           upstream's own; "*.example.com" matches
	                           any name under example.com */
	char *username;         /* "" anonymous */
	char *password_file;    /* "" none; read when a token is fetched */
	enum conf_library library_prefix;
	int is_default;         /* 0/1: serves names with no registry prefix */
	int offline;            /* 0/1, -1: as [larder] (conf_inherit) */
	enum conf_registry_type type;
	enum conf_read read;    /* token: pulls need a token with pull */
	long upload_ttl;        /* hosted: seconds an upload session lives
	                           without a request */
	long max_upload_size;   /* hosted: bytes of one blob or manifest */
	int allow_delete;       /* hosted, 0/1: DELETE of manifests, tags and
	                           blobs ("delete" in the file) */
	char *layers;           /* virtual: registry names, space-separated */
	size_t layer[CONF_MAX_LAYERS]; /* virtual: resolved positions */
	size_t nlayers;
	char *policies;         /* [policy] names, space-separated; "" none
	                           (common/oci/policy.c) */
};

/* A receiver of signed events (docs/webhooks.md). */
struct conf_webhook {
	char *name;
	char *url;              /* absolute http(s) URL, as written */
	char *secret_file;      /* its first line is the HMAC key */
	char *events;           /* upload yank remove push new-release
	                           policy-denied, space-separated */
	char *indexes;          /* NULL: every index; names, space-separated */
	char *registries;       /* NULL: every registry; names */
	long retry_min;         /* seconds before the first retry */
	long retry_max;         /* the longest wait between two tries */
	long retry_for;         /* seconds an event is retried before it is
	                           given up */
};

/* A [policy "NAME"] section: the rules as written, for
 * common/pypi/policy.c to compile (docs/policy.md). */
struct conf_policy_def {
	char *name;
	char *allow;           /* rules, ',' between them; "" none */
	char *deny;            /* likewise */
	int allow_first;       /* allow = was written before deny = */
	int default_deny;      /* 0/1: what no rule decides is denied */
	int deny_vulnerable;   /* 0/1: a version with a known OSV advisory
	                          is denied before any other rule */
};

struct conf {
	char *data_dir;
	enum conf_sendfile sendfile;
	char *sendfile_prefix;  /* starts and ends with '/' */
	long cache_ttl;         /* seconds */
	long max_stale;         /* seconds */
	long negative_ttl;      /* seconds an upstream 404 is remembered */
	long error_ttl;         /* seconds a failed fetch is remembered */
	long gc_grace;          /* seconds a replaced rendering is kept */
	long connect_timeout;   /* seconds */
	long fetch_timeout;     /* seconds without a byte before a fetch fails */
	long first_byte_timeout; /* seconds to wait for upstream's answer */
	long fetch_retries;     /* extra tries after a transient failure */
	long max_page_size;     /* bytes */
	long max_size;          /* bytes the blob store may hold; 0 = no limit */
	long min_free;          /* percent of the file system kept free */
	int prefetch_metadata;  /* 0/1: fetch the likely next .metadata */
	long prefetch_max;      /* dependency pages prefetched at once; 0 off */
	long prefetch_wheel_size; /* the biggest likely wheel of a prefetched
				     page fetched with it, bytes; 0 off */
	int synthesize_metadata; /* enum conf_synth */
	int trust_forwarded;    /* 0/1 */
	long max_requests;      /* per worker before it is recycled; 0 = never */
	long workers;           /* kept on a listening socket */
	long max_workers;       /* at most on a listening socket */
	char *log_file;         /* "": standard error */
	long min_release_age;   /* seconds a file must have been upstream */
	long exclude_newer;     /* unix seconds; files uploaded later are held
	                           back; 0 none */
	char *release_age_exempt; /* normalised project globs never held back */
	int offline;            /* 0/1: never contact an upstream */
	long stale_while_revalidate; /* seconds past its ttl a page is answered
	                                at once while it is refreshed */
	struct conf_index index[CONF_MAX_INDEXES];
	size_t nindex;
	struct conf_registry registry[CONF_MAX_REGISTRIES];
	size_t nregistry;
	struct conf_webhook webhook[CONF_MAX_WEBHOOKS];
	size_t nwebhook;
	struct conf_policy_def policy[CONF_MAX_POLICIES];
	size_t npolicy;
	char *source;           /* the file it came from, or NULL for defaults */
};

/* Fills c with the built-in defaults: every key's default, the indexes
 * "pypi" (cache of https://pypi.org/simple/) and "root/pypi" (virtual over
 * pypi), and the registry "hub" (Docker Hub, the default one). Returns 0
 * or ENOMEM. Free with conf_free(). */
int conf_defaults(struct conf *c);

/* Parses INI text into c, which conf_defaults() prepared; name is used in
 * messages (a path, or "-"). When the text declares any [index] section the
 * default indexes are replaced by the declared ones, and likewise for
 * [registry] sections. Then validates the whole: unknown sections or keys,
 * bad values, a cache without upstream, a virtual index naming an unknown
 * layer or itself, a registry without upstream, username without
 * password_file or the reverse, more than one default registry.
 * Returns 0, or EINVAL with a one-line message in err (errlen bytes) that
 * names the file and line, the key, the value and the expected form, e.g.
 *   larder.conf:4: cache_ttl = "soon": expected seconds (300, 5m, 2h, 1d)
 * Does no I/O. */
int conf_parse(struct conf *c, const char *name, const char *text, size_t len,
	       char *err, size_t errlen);

/* Finds the file: path if given, else $LARDER_CONFIG, else
 * SYSCONFDIR/larder/larder.conf; a missing default file means built-in
 * defaults (a missing -c or $LARDER_CONFIG file is an error). Reads and
 * parses it into c (which this initialises). Returns 0 or an errno with a
 * message in err; on error c holds nothing to free. */
int conf_load(struct conf *c, const char *path, char *err, size_t errlen);

/* Frees everything c owns. */
void conf_free(struct conf *c);

/* Appends the effective configuration, as a valid config file, to out.
 * Returns 0 or an errno from buf. */
int conf_dump(const struct conf *c, struct buf *out);

/* Appends the larder.conf(5) man page (roff), made from the key table.
 * Returns 0 or an errno from buf. */
int conf_man(struct buf *out);

/* An index's or registry's value of a key it shares with [larder]: its
 * own when its section sets it (own >= 0), else [larder]'s. */
static inline long conf_inherit(long own, long global)
{
	return own >= 0 ? own : global;
}

/* Returns the position of the index called name, or -1. */
int conf_index_find(const struct conf *c, const char *name);

/* Returns the position of the registry called name (n bytes of it), or
 * -1. */
int conf_registry_find(const struct conf *c, const char *name, size_t n);

/* Returns the position of the webhook called name, or -1. */
int conf_webhook_find(const struct conf *c, const char *name);

/* Returns 1 when word is one of the space-separated words of list, else
 * 0. */
int conf_list_has(const char *list, const char *word);

/* Returns the position of the [policy] called name (n bytes of it), or
 * -1. */
int conf_policy_find(const struct conf *c, const char *name, size_t n);

/* Compiles each [policy] that list (space-separated names, as an index's
 * or registry's policies key holds them) names, with compile, into a
 * malloc'd array of elements of size bytes, *out (the caller's to free;
 * NULL and *n 0 for an empty list). Returns 0, ENOMEM, EINVAL for a name
 * no section has, or what compile returned (nothing is kept then). */
int conf_policies_compile(const struct conf *c, const char *list,
                          size_t size,
                          int (*compile)(const struct conf_policy_def *d,
                                         void *out),
                          void **out, size_t *n);

/* Returns the position of the registry with default = yes, or -1. */
int conf_registry_default(const struct conf *c);

#endif
