/* conf_keys: the table of keys and the types of their values, the checks
 * the table names, and the rules for index and registry names. The parsing
 * of one value is conf_value.c. */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "common/conf/conf.h"
#include "common/conf/keys.h"
#include "common/names.h"

#ifndef LOCALSTATEDIR
#define LOCALSTATEDIR "/var"
#endif

/* Enum keys are stored through an int. */
_Static_assert(sizeof(enum conf_sendfile) == sizeof(int), "enum size");
_Static_assert(sizeof(enum conf_index_type) == sizeof(int), "enum size");
_Static_assert(sizeof(enum conf_library) == sizeof(int), "enum size");
_Static_assert(CONF_SENDFILE_ACCEL == 0 && CONF_SENDFILE_XSENDFILE == 1 &&
                   CONF_SENDFILE_STREAM == 2,
               "sendfile_values order");
_Static_assert(CONF_INDEX_CACHE == 0 && CONF_INDEX_VIRTUAL == 1 &&
                   CONF_INDEX_HOSTED == 2,
               "type_values order");
_Static_assert(sizeof(enum conf_policy) == sizeof(int), "enum size");
_Static_assert(CONF_POLICY_PRIVATE_FIRST == 0 && CONF_POLICY_FALLBACK == 1 &&
                   CONF_POLICY_NO_FALLBACK == 2,
               "policy_values order");
_Static_assert(sizeof(enum conf_read) == sizeof(int), "enum size");
_Static_assert(CONF_READ_ANONYMOUS == 0 && CONF_READ_TOKEN == 1,
               "read_values order");
_Static_assert(sizeof(enum conf_synth) == sizeof(int), "enum size");
_Static_assert(CONF_SYNTH_RANGES == 0 && CONF_SYNTH_VERIFIED == 1 &&
                   CONF_SYNTH_NO == 2,
               "synth_values order");
_Static_assert(CONF_LIBRARY_AUTO == 0 && CONF_LIBRARY_YES == 1 &&
                   CONF_LIBRARY_NO == 2,
               "library_values order");
_Static_assert(sizeof(enum conf_registry_type) == sizeof(int), "enum size");
_Static_assert(CONF_REGISTRY_CACHE == 0 && CONF_REGISTRY_HOSTED == 1 &&
                   CONF_REGISTRY_VIRTUAL == 2,
               "registry_type_values order");

const struct conf_type_info conf_types[CONF_NTYPES] = {
    [T_STRING] = {"text", "text without control characters",
                  "Any text without control characters."},
    [T_PATH] = {"path", "an absolute path",
                "An absolute file system path, starting with '/'. "
                "A trailing '/' is dropped. A key whose default is "
                "empty may also be set to \"\", for none."},
    [T_URL] = {"url", "an absolute http:// or https:// URL",
               "An absolute http:// or https:// URL without query or "
               "fragment. A '/' is added at the end if it is missing."},
    [T_ENUM] = {"enum", "one of the listed words",
                "One of the words listed for the key."},
    [T_SECONDS] = {"seconds", "seconds (300, 5m, 2h, 1d)",
                   "A whole number of seconds, optionally followed by "
                   "s (seconds), m (minutes), h (hours) or d (days): "
                   "300, 300s, 5m, 2h, 1d."},
    [T_SIZE] = {"size", "a size in bytes (65536, 512k, 64M, 1G)",
                "A whole number of bytes, optionally followed by k, M or G "
                "(powers of 1024, either case): 65536, 512k, 64M, 1G."},
    [T_BOOL] = {"bool", "yes or no (also true/false, on/off, 1/0)",
                "yes or no; true/false, on/off and 1/0 also work."},
    [T_COUNT] = {"count", "a whole number (0, 1, 2, ...)",
                 "A whole number, 0 or more."},
    [T_LIST] = {"list", "words separated by spaces",
                "Words separated by spaces; quote the value or leave it "
                "empty (\"\") for no words."},
    [T_URLPATH] = {"urlpath",
                   "a URL path that starts and ends with '/', like /_larder/",
                   "A URL path that starts and ends with '/', like "
                   "/_larder/, made of letters, digits and . _ ~ + -, "
                   "with no empty, '.' or '..' segment."},
    [T_PERCENT] = {"percent", "a percentage (0% to 99%)",
                   "A whole number from 0 to 99 followed by %: 5%, 10%. "
                   "0% means no such limit."},
    [T_TIME] = {"time",
                "an RFC 3339 time in UTC like 2026-01-01T00:00:00Z, a date "
                "like 2026-01-01, or \"\" for none",
                "An RFC 3339 date and time, 2026-01-01T00:00:00Z, with Z "
                "or a +HH:MM offset (none means UTC), or a date alone, "
                "2026-01-01, for its midnight UTC; \"\" for none."},
};

static const char *const sendfile_values[] = {"x-accel-redirect", "x-sendfile",
                                              "stream", NULL};
static const char *const type_values[] = {"cache", "virtual", "hosted",
                                          NULL};
static const char *const policy_values[] = {"private-first", "fallback",
                                            "no-fallback", NULL};
static const char *const registry_type_values[] = {"cache", "hosted",
                                                   "virtual", NULL};
static const char *const read_values[] = {"anonymous", "token", NULL};
static const char *const default_values[] = {"allow", "deny", NULL};
static const char *const library_values[] = {"auto", "yes", "no", NULL};
static const char *const synth_values[] = {"ranges", "verified", "no", NULL};

static const char *at_least_one(void *field);
static const char *above_zero(void *field);
static const char *prefetch_slots(void *field);
static const char *check_layers(void *field);
static const char *check_hosts(void *field);
static const char *check_globs(void *field);
static const char *check_hook_url(void *field);
static const char *check_events(void *field);
static const char *check_rules(void *field);
static const char *check_policy_names(void *field);

#define LARDER(n) "larder", #n, offsetof(struct conf, n)
#define INDEX(n)  "index", #n, offsetof(struct conf_index, n)
#define REGISTRY(n) "registry", #n, offsetof(struct conf_registry, n)
#define WEBHOOK(n) "webhook", #n, offsetof(struct conf_webhook, n)
#define POLICY(n) "policy", #n, offsetof(struct conf_policy_def, n)

/* The one table of keys. */
const struct conf_key conf_keys[] = {
    {LARDER(data_dir), T_PATH, LOCALSTATEDIR "/lib/larder",
     .help = "Where larder keeps its database, blobs and temporary "
             "files. It must be one file system, writable by the user "
             "larder runs as."},
    {LARDER(sendfile), T_ENUM, "x-accel-redirect", .values = sendfile_values,
     .help = "How a cached file is handed to the web server: "
             "x-accel-redirect for nginx, x-sendfile for lighttpd or "
             "Apache with mod_xsendfile, stream to have larder send the "
             "bytes itself (plain CGI, or a server with neither)."},
    {LARDER(sendfile_prefix), T_URLPATH, "/_larder/",
     .help = "With x-accel-redirect, the internal location of the web "
             "server that maps to data_dir."},
    {LARDER(cache_ttl), T_SECONDS, "300",
     .help = "How long a project page fetched from upstream is served "
             "without asking upstream again. Lowered by a reload, it "
             "applies to the pages already held too (a page is fresh "
             "until its fetch plus the lesser of the ttl it was given and "
             "cache_ttl now); raised, from each page's next fetch."},
    {LARDER(max_stale), T_SECONDS, "86400",
     .help = "How long past cache_ttl a page may still be served while "
             "upstream cannot be reached."},
    {LARDER(stale_while_revalidate), T_SECONDS, "0",
     .help = "How long past cache_ttl a page is still answered at once "
             "from the cache, with one worker refreshing it from upstream "
             "after the answer has gone: a burst on a page that just went "
             "stale waits for nothing and costs the upstream one "
             "revalidation. 0 turns it off: a stale page is refreshed "
             "before it is answered. In CGI mode, where a process may be "
             "killed once its answer is out, it is off. A cache index may "
             "set its own."},
    {LARDER(offline), T_BOOL, "no",
     .help = "Never contact an upstream: every cached page is served "
             "whatever its age (max_stale does not apply), and a page, "
             "file or metadata that is not in the cache is a 503 saying "
             "the index is offline. For a network that is cut off, or to "
             "freeze what a build sees. A cache index or a registry may "
             "set its own."},
    {LARDER(min_release_age), T_SECONDS, "0",
     .help = "How old a file must be, by the upload time its upstream "
             "page gives (PEP 700 upload-time), before a cache index lists "
             "or serves it: 7d keeps a release out of installs for a week, "
             "the time in which compromised releases have been noticed and "
             "pulled. Younger files are left out of pages (installers "
             "pick the newest older release) and refused as files (403); "
             "they appear by themselves once old enough. A file without an "
             "upload time is left out: an upstream that only speaks HTML "
             "(PEP 503) gives none, so its pages are empty under a "
             "cooldown. 0 turns it off. A cache index may set its own."},
    {LARDER(exclude_newer), T_TIME, "",
     .help = "Leave out of pages, and refuse, files uploaded after this "
             "time (RFC 3339 in UTC, like 2026-01-01T00:00:00Z, or a date): "
             "a fixed cut-off, as uv's --exclude-newer, for builds that "
             "must see the index as it was. A file without an upload time "
             "is left out. \"\" for none. A cache index may set its own."},
    {LARDER(release_age_exempt), T_LIST, "", .check = check_globs,
     .help = "Projects that min_release_age and exclude_newer never hold "
             "back, for those that must move fast (a security fix, your "
             "own releases): globs (* any run, ? one character) matched "
             "against the normalised name, e.g. certifi corp-*. A cache "
             "index that sets it replaces this list for its pages."},
    {LARDER(negative_ttl), T_SECONDS, "30",
     .help = "How long an upstream 404 is remembered."},
    {LARDER(error_ttl), T_SECONDS, "10",
     .help = "How long a failed upstream fetch is remembered: a page that "
             "could not be refreshed, an upstream host that cannot be "
             "reached or does not answer. Meanwhile a stale page is served "
             "at once, a virtual index answers from its other layers, and "
             "a fetch from that host fails at once with the reason instead "
             "of waiting on it again, but for one request at a time that "
             "tries it (from 2 s after it failed), so a host that is back "
             "is used at once. 0 remembers nothing."},
    {LARDER(gc_grace), T_SECONDS, "60",
     .help = "How long a page rendering that a refresh replaced stays in "
             "the store before it is deleted, so that a reader just handed "
             "it can still open it; and how long after its last use any "
             "blob is safe from eviction (max_size, min_free), so that a "
             "request that was just told a blob exists is still served."},
    {LARDER(connect_timeout), T_SECONDS, "10",
     .help = "How long to wait for a connection to upstream."},
    {LARDER(fetch_timeout), T_SECONDS, "60",
     .help = "How long a fetch may go without receiving a byte before it "
             "fails."},
    {LARDER(first_byte_timeout), T_SECONDS, "30",
     .help = "How long to wait, once connected, for upstream to start "
             "answering."},
    {LARDER(fetch_retries), T_COUNT, "2",
     .help = "How many more times a fetch is tried after a transient "
             "failure (connection refused or reset, timeout, 5xx, 429), "
             "with backoff and honouring Retry-After up to 10 seconds. An "
             "interrupted file download resumes with a Range request."},
    {LARDER(max_page_size), T_SIZE, "64M",
     .help = "The largest upstream page larder accepts; a bigger one is "
             "an error, not an out-of-memory."},
    {LARDER(max_size), T_SIZE, "0",
     .help = "The most the blob store (package files, their metadata, "
             "image blobs and manifests, page renderings) may hold; 0 "
             "means no limit. Past it, blobs not used for gc_grace are "
             "evicted least recently used first until the store is 5% "
             "under it, by the worker that stored the blob that crossed "
             "it (after its answer) or by `larder gc'. Renderings of "
             "fresh pages, manifests a tag or digest names, and fetches "
             "in progress are never evicted; an evicted file is fetched "
             "again when next asked for."},
    {LARDER(min_free), T_PERCENT, "5%",
     .help = "The share of the data directory's file system to keep "
             "free: when less is free, blobs are evicted as for max_size "
             "until 5 points more than this is free (10% for the "
             "default), or nothing evictable is left. 0% turns it off."},
    {LARDER(prefetch_metadata), T_BOOL, "yes",
     .help = "When a project page comes from upstream, also fetch the PEP "
             "658 metadata an installer most likely asks for next (that of "
             "the newest release's universal wheel), once the page is "
             "answered, so that the request for it finds it here or on "
             "its way. A few kilobytes per page; nothing for projects of "
             "platform wheels only, and nothing in CGI mode."},
    {LARDER(prefetch_max), T_COUNT, "4", .check = prefetch_slots,
     .help = "When larder answers a wheel's PEP 658 metadata, it reads its "
             "Requires-Dist and, once the answer is out, fetches the pages "
             "of those projects (16 at most) that are not fresh here, so "
             "that the installer's request for them finds them here or on "
             "their way: pages only (and, with prefetch_wheel_size, their "
             "likeliest wheels), one level deep (a prefetched page "
             "prefetches nothing), nothing for an offline "
             "index, a requirement whose marker names an extra left out. "
             "This is how many such prefetches the workers of one data "
             "directory run at once (0 to 64); past it a prefetch is "
             "skipped. 0 turns prefetching of pages off. Nothing in CGI "
             "mode. Counted in larder_prefetch_pages_total, "
             "larder_prefetch_skipped_total, larder_prefetch_used_total "
             "and larder_prefetch_unused_pages."},
    {LARDER(prefetch_wheel_size), T_SIZE, "0",
     .help = "With prefetch_max, a dependency page the prefetch fetched "
             "also has its likeliest wheel fetched after it (the universal "
             "wheel of the newest final release, as for prefetch_metadata) "
             "when the page lists its size and it is at most this big; and "
             "the installer's first request for a wheel stored in the last "
             "minute prefetches that wheel's dependencies as a cold one "
             "does. For installers that download a wheel to read its "
             "metadata (pip before 23.1). Not on an index with a policy "
             "(a license rule reads what it fetches). 0, the default, "
             "turns it off. Counted in larder_prefetch_wheels_total."},
    {LARDER(synthesize_metadata), T_ENUM, "ranges", .values = synth_values,
     .help = "What larder serves as a wheel's PEP 658 metadata when the "
             "upstream advertises none. ranges: read with a few range "
             "requests of the upstream wheel, which is quick but not "
             "verified (the wheel's sha256 covers all of it), so it is "
             "served as provisional: X-Larder-Metadata: provisional, no "
             "ETag, fresh for cache_ttl only, and pages advertise it "
             "without a hash; once the whole wheel is fetched and "
             "verified, it is read again from the verified file, which "
             "replaces it (a difference is logged and counted in "
             "larder_metadata_mismatch_total). verified: the whole wheel is "
             "fetched, verified and stored first (what an install would "
             "fetch anyway), and the metadata read from it. no: none is "
             "made, a 404 as PyPI answers, and pages advertise none. A "
             "cache index may set its own."},
    {LARDER(trust_forwarded), T_BOOL, "no",
     .help = "Believe the X-Forwarded-* headers of a request (client "
             "address, scheme, host). Turn it on only behind a proxy you "
             "run that sets them, since clients can forge them."},
    {LARDER(max_requests), T_COUNT, "10000",
     .help = "Requests a worker answers before it exits and a fresh one "
             "takes its place; 0 means never. The listening socket stays "
             "with the pool's supervisor, so nothing queued on it is "
             "lost."},
    {LARDER(workers), T_COUNT, "4", .check = at_least_one,
     .help = "Worker processes kept on a listening socket (`larder "
             "serve' without --workers, or a socket a web server hands "
             "larder on fd 0; $LARDER_WORKERS overrides it there); at "
             "least 1."},
    {LARDER(max_workers), T_COUNT, "64", .check = at_least_one,
     .help = "The most worker processes on one listening socket. When "
             "every worker is busy (a cold download ties one until it "
             "is done), another is started, up to this many, so that a "
             "request never waits behind a slow transfer; extra workers "
             "idle for 30 seconds go again. Each costs about a megabyte "
             "of memory of its own."},
    {LARDER(log_file), T_PATH, "",
     .help = "Where the log goes: a file, opened for appending, that "
             "SIGUSR1 reopens (for logrotate: move it, then signal the "
             "supervisor, which tells its workers). Empty: standard "
             "error, which a web server routes to its error log."},
    {INDEX(type), T_ENUM, NULL, .values = type_values,
     .help = "Required. cache: a pull-through cache of one upstream "
             "simple index. hosted: packages uploaded to larder (twine, "
             "pdm publish, poetry publish, uv publish) by token holders. "
             "virtual: serves the indexes named in layers, merged as "
             "policy says."},
    {INDEX(upstream), T_URL, NULL,
     .help = "The upstream simple index (PEP 503/691) a cache index "
             "fetches from, e.g. https://pypi.org/simple/. Required for "
             "a cache index, not allowed for a virtual one.",
     .types = CONF_FOR(CONF_INDEX_CACHE)},
    {INDEX(layers), T_LIST, NULL, .check = check_layers,
     .help = "The indexes a virtual index serves, by name, in order: "
             "each declared in the same file and not the index itself, "
             "at most 8. A layer may itself be virtual, but layers must "
             "not form a cycle. Required for a virtual index, not allowed "
             "for a cache one.",
     .types = CONF_FOR(CONF_INDEX_VIRTUAL)},
    {INDEX(trusted_hosts), T_LIST, "files.pythonhosted.org",
     .check = check_hosts,
     .help = "Host names a cache index may fetch files from, besides its "
             "upstream's own host, when an upstream page links there; "
             "*.example.com matches any name under example.com (not "
             "example.com itself). Only for a cache index.",
     .types = CONF_FOR(CONF_INDEX_CACHE)},
    {"index", "volatile", offsetof(struct conf_index, is_volatile), T_BOOL,
     "no",
     .help = "Whether a file uploaded to a hosted index may be replaced "
             "by a different one of the same name, or removed. With no, "
             "as on PyPI, a file once uploaded stays what it is: the same "
             "name with other bytes is refused (409), and releases can "
             "only be yanked. Only for a hosted index.",
     .types = CONF_FOR(CONF_INDEX_HOSTED)},
    {INDEX(max_upload_size), T_SIZE, "100M",
     .help = "The largest file a hosted index takes in one upload; a "
             "bigger body is refused (413) before anything is stored. "
             "The web server's own limit (client_max_body_size in nginx) "
             "must allow it too. Only for a hosted index.",
     .types = CONF_FOR(CONF_INDEX_HOSTED)},
    {INDEX(policy), T_ENUM, "private-first", .values = policy_values,
     .help = "How a virtual index merges the pages of its layers; a file "
             "two layers list under the same name comes from the earlier "
             "layer. private-first: when any hosted layer has the project, "
             "its cache layers are not consulted for it at all, so a "
             "public upload of the same name (dependency confusion) never "
             "reaches an installer; otherwise every layer is merged. "
             "fallback: every layer, merged. no-fallback: hosted layers "
             "only. Only for a virtual index.",
     .types = CONF_FOR(CONF_INDEX_VIRTUAL)},
    {INDEX(protected_names), T_LIST, "", .check = check_globs,
     .help = "Project names a virtual index never serves from a cache "
             "layer, whatever policy says and even before anything is "
             "uploaded under them: globs (* any run, ? one character) "
             "matched against the normalised name, e.g. corp-* "
             "internal-*. Only for a virtual index.",
     .types = CONF_FOR(CONF_INDEX_VIRTUAL)},
    {INDEX(read), T_ENUM, "anonymous", .values = read_values,
     .help = "Who may read the index: anonymous, anyone; token, only "
             "clients that send a token with the read action for it "
             "(pip and uv send them from the index URL or a keyring), "
             "and its files are then answered with Cache-Control: "
             "private."},
    {INDEX(min_release_age), T_SECONDS, NULL, .inherit = 1,
     .help = "This cache index's min_release_age; unset, the [larder] "
             "one. A virtual index shows what its cache layers let "
             "through; a hosted index's files are never held back.",
     .types = CONF_FOR(CONF_INDEX_CACHE)},
    {INDEX(exclude_newer), T_TIME, NULL, .inherit = 1,
     .help = "This cache index's exclude_newer; unset, the [larder] one.",
     .types = CONF_FOR(CONF_INDEX_CACHE)},
    {INDEX(release_age_exempt), T_LIST, NULL, .check = check_globs,
     .inherit = 1,
     .help = "This cache index's release_age_exempt; unset, the [larder] "
             "one.",
     .types = CONF_FOR(CONF_INDEX_CACHE)},
    {INDEX(offline), T_BOOL, NULL, .inherit = 1,
     .help = "Whether this cache index is offline; unset, as [larder] "
             "says. A virtual index is offline where its cache layers "
             "are; a hosted index never contacts anything.",
     .types = CONF_FOR(CONF_INDEX_CACHE)},
    {INDEX(stale_while_revalidate), T_SECONDS, NULL, .inherit = 1,
     .help = "This cache index's stale_while_revalidate; unset, the "
             "[larder] one.",
     .types = CONF_FOR(CONF_INDEX_CACHE)},
    {INDEX(synthesize_metadata), T_ENUM, NULL, .values = synth_values,
     .inherit = 1,
     .help = "This cache index's synthesize_metadata; unset, the [larder] "
             "one.",
     .types = CONF_FOR(CONF_INDEX_CACHE)},
    {INDEX(policies), T_LIST, "", .check = check_policy_names,
     .help = "The [policy] sections whose rules decide which of this "
             "cache index's files are served, in order: a file one of "
             "them denies is left out of pages and refused with a 403 "
             "(docs/policy.md). A virtual index shows what its cache "
             "layers let through.",
     .types = CONF_FOR(CONF_INDEX_CACHE)},
    {REGISTRY(upstream), T_URL, NULL,
     .help = "The registry a cache registry caches, e.g. "
             "https://registry-1.docker.io (Docker Hub), https://ghcr.io "
             "or https://quay.io. Required for a cache registry, not "
             "allowed for a hosted one."},
    {REGISTRY(cache_ttl), T_SECONDS, "5m",
     .help = "How long a tag (and a tag list, a referrers list) is served "
             "without asking upstream; after that it is revalidated with a "
             "HEAD request."},
    {REGISTRY(max_stale), T_SECONDS, "7d",
     .help = "How long past cache_ttl a tag may still be served while the "
             "upstream fails: errors, timeouts, 401, 429 and 5xx "
             "answers."},
    {REGISTRY(trusted_hosts), T_LIST,
     "production.cloudflare.docker.com *.cloudflarestorage.com "
     "*.cloudfront.net pkg-containers.githubusercontent.com *.quay.io "
     "storage.googleapis.com",
     .check = check_hosts,
     .help = "Hosts a blob GET may be redirected to, besides the "
             "upstream's own host; the default covers the storage of "
             "Docker Hub, ghcr.io, quay.io and gcr.io/pkg.dev. "
             "*.example.com matches any name under example.com (not "
             "example.com itself). When the upstream is https, redirects "
             "are followed over https only."},
    {REGISTRY(username), T_STRING, "",
     .help = "The upstream account larder logs in to the token service "
             "with; empty for anonymous pulls. It needs password_file."},
    {REGISTRY(password_file), T_PATH, "",
     .help = "A file whose first line is the password or access token of "
             "username. It is read when a token is fetched, not when the "
             "configuration is loaded. It needs username."},
    {REGISTRY(library_prefix), T_ENUM, "auto", .values = library_values,
     .help = "Whether a one-component name gets library/ in front upstream, "
             "as Docker Hub's official images need: alpine is asked for as "
             "library/alpine. auto means yes when the upstream host is "
             "registry-1.docker.io, docker.io or index.docker.io."},
    /* "default" in the file; is_default in the struct */
    {"registry", "default", offsetof(struct conf_registry, is_default), T_BOOL,
     "no",
     .help = "Serve the names under /v2/ that start with no registry's "
             "name from this registry: what Docker's registry-mirrors and "
             "containerd's hosts.toml mirrors send. At most one registry "
             "may be the default."},
    {REGISTRY(offline), T_BOOL, NULL, .inherit = 1,
     .help = "Whether this registry is offline: tags are served whatever "
             "their age and anything not cached is a 503; unset, as "
             "[larder] says."},
    {REGISTRY(type), T_ENUM, "cache", .values = registry_type_values,
     .help = "cache: a pull-through cache of the registry upstream names. "
             "hosted: images pushed to larder (skopeo copy, podman push, "
             "docker push) by holders of a token with the push action "
             "for it; it has no upstream. virtual: serves each repository "
             "from the first of its layers that holds it, hosted layers "
             "before cache ones (a pushed name shadows the upstream's); "
             "pushes to it go to its first hosted layer."},
    {REGISTRY(layers), T_LIST, NULL,
     .help = "The registries a virtual registry serves, by name: each "
             "declared in the same file, hosted or cache (not virtual), "
             "at most 8. Required for a virtual registry, not allowed for "
             "another."},
    {REGISTRY(read), T_ENUM, "anonymous", .values = read_values,
     .help = "Who may pull from the registry: anonymous, anyone; token, "
             "only clients that log in (docker login, podman login, "
             "skopeo --creds) with a token that has the pull action for "
             "it."},
    {REGISTRY(policies), T_LIST, "", .check = check_policy_names,
     .help = "The [policy] sections whose image rules decide which "
             "manifests of this registry are served and pushed, in order: "
             "a manifest (by tag, or by a digest a denied tag points at) "
             "one of them denies is refused with a 403 DENIED, and a "
             "denied tag is left out of tag lists. Their rules must be "
             "image rules (REPO-GLOB or REPO-GLOB:TAG-GLOB); a virtual "
             "registry applies its own and then its member's "
             "(docs/policy.md)."},
    {REGISTRY(upload_ttl), T_SECONDS, "1h", .check = above_zero,
     .help = "How long a hosted registry keeps an unfinished blob upload "
             "after its last request; then the session is forgotten and "
             "its temporary file removed."},
    {REGISTRY(max_upload_size), T_SIZE, "1G", .check = above_zero,
     .help = "The largest blob a hosted registry takes (a manifest: at "
             "most 4M); a bigger one is refused (413 SIZE_INVALID) and "
             "nothing is stored. The web server in front must not limit "
             "request bodies below it: the shipped configs allow 1G."},
    /* "delete" in the file; allow_delete in the struct */
    {"registry", "delete", offsetof(struct conf_registry, allow_delete),
     T_BOOL, "no",
     .help = "Whether a hosted registry takes DELETE of a manifest (by "
             "digest, with every tag that names it), of a tag, and of a "
             "blob of a repository, by holders of a token with the delete "
             "action. What nothing names any more is garbage for larder "
             "gc. Off, a DELETE is a 405 UNSUPPORTED."},
    {WEBHOOK(url), T_STRING, NULL, .check = check_hook_url,
     .help = "Where the events are POSTed, as JSON signed with the secret "
             "(docs/webhooks.md). Required. Redirects are not followed: "
             "a 3xx is a failed delivery."},
    {WEBHOOK(secret_file), T_PATH, "",
     .help = "A file whose first line is the secret the deliveries are "
             "signed with (X-Larder-Signature-256, HMAC-SHA256). Required. "
             "It is read at each delivery, not when the configuration is "
             "loaded."},
    {WEBHOOK(events), T_LIST, "upload yank remove push new-release "
                             "policy-denied", .check = check_events,
     .help = "The events sent: upload (a file uploaded to a hosted index), "
             "yank (yanked or unyanked), remove (files removed), push (a "
             "manifest or tag pushed to a hosted registry), new-release "
             "(a cached page that lists a version it did not list "
             "before), policy-denied (a file a policy kept out)."},
    {WEBHOOK(indexes), T_LIST, NULL,
     .help = "Only the events of these indexes (names, space-separated); "
             "unset, every index's."},
    {WEBHOOK(registries), T_LIST, NULL,
     .help = "Only the events of these registries (names, "
             "space-separated); unset, every registry's."},
    {WEBHOOK(retry_min), T_SECONDS, "30s", .check = above_zero,
     .help = "How long after a failed delivery it is tried again; the "
             "wait doubles at each failure up to retry_max."},
    {WEBHOOK(retry_max), T_SECONDS, "1h", .check = above_zero,
     .help = "The longest wait between two tries of one event."},
    {WEBHOOK(retry_for), T_SECONDS, "3d", .check = above_zero,
     .help = "How long an event is retried before it is given up (and "
             "listed as failed on /+status). The events after it, of the "
             "same index or registry, wait for it until then: they "
             "arrive in order."},
    {POLICY(deny), T_STRING, "", .check = check_rules,
     .help = "Rules that deny, ',' between them: a project name glob, "
             "then optionally PEP 440 specifiers and qualifiers (sdist, "
             "wheel, tag=GLOB, yanked, license=GLOB, vulnerable), e.g. "
             "requests <2.20, urllib3 ==1.26.5, * sdist. The first rule "
             "that matches a file decides, in the order allow and deny "
             "are written (docs/policy.md)."},
    {POLICY(allow), T_STRING, "", .check = check_rules,
     .help = "Rules that allow, in the form deny takes."},
    {"policy", "default", offsetof(struct conf_policy_def, default_deny),
     T_ENUM, "allow", .values = default_values,
     .help = "What happens to a file no rule matches: allow, or deny "
             "(which makes the allow rules a list of all that may "
             "come in)."},
    {POLICY(deny_vulnerable), T_BOOL, "no",
     .help = "Whether a version that an OSV advisory loaded with larder "
             "policy import-osv names as affected is denied, before any "
             "rule."},
};

#undef LARDER
#undef INDEX
#undef REGISTRY
#undef WEBHOOK
#undef POLICY

_Static_assert(sizeof(conf_keys) / sizeof(conf_keys[0]) == CONF_NKEYS,
               "CONF_NKEYS in conf_keys.h");

/* The indexes larder serves with no [index] section: parsed like a file, and
 * printed in the man page. */
const char conf_default_indexes[] = "[index \"pypi\"]\n"
                                    "type = cache\n"
                                    "upstream = https://pypi.org/simple/\n"
                                    "\n"
                                    "[index \"root/pypi\"]\n"
                                    "type = virtual\n"
                                    "layers = pypi\n";

/* The registry larder serves with no [registry] section. */
const char conf_default_registries[] =
    "[registry \"hub\"]\n"
    "upstream = https://registry-1.docker.io\n"
    "default = yes\n";

static const char *const reserved[] = {"v2",      "+health", "+stats",
                                       "+status", "metrics", "_larder",
                                       NULL};

const char conf_example[] =
    "[larder]\n"
    "data_dir = /srv/larder\n"
    "sendfile = x-sendfile\n"
    "cache_ttl = 10m\n"
    "max_page_size = 128M\n"
    "\n"
    "[index \"pypi\"]\n"
    "type = cache\n"
    "upstream = https://pypi.org/simple/\n"
    "\n"
    "# A private index whose pages link to files on another host.\n"
    "[index \"corp\"]\n"
    "type = cache\n"
    "upstream = https://pypi.example.com/simple/\n"
    "trusted_hosts = files.example.com\n"
    "\n"
    "# Packages of our own: twine upload --repository-url\n"
    "# https://larder.example.com/root/private/ (larder token add).\n"
    "[index \"root/private\"]\n"
    "type = hosted\n"
    "\n"
    "# pip install --index-url https://larder.example.com/root/pypi/simple/\n"
    "# corp-* and anything uploaded never come from a cache index.\n"
    "[index \"root/pypi\"]\n"
    "type = virtual\n"
    "layers = root/private corp pypi\n"
    "policy = private-first\n"
    "protected_names = corp-*\n"
    "\n"
    "# docker pull larder.example.com/hub/alpine, and, as the default,\n"
    "# larder.example.com/alpine or a registry-mirrors pull of alpine.\n"
    "[registry \"hub\"]\n"
    "upstream = https://registry-1.docker.io\n"
    "default = yes\n"
    "\n"
    "# docker pull larder.example.com/ghcr/OWNER/IMAGE\n"
    "[registry \"ghcr\"]\n"
    "upstream = https://ghcr.io\n"
    "cache_ttl = 1m\n"
    "username = larder-bot\n"
    "password_file = /etc/larder/ghcr.token\n";


const struct conf_key *conf_find_key(const char *section, const char *name)
{
	for (size_t i = 0; i < CONF_NKEYS; i++)
		if (!strcmp(conf_keys[i].section, section) &&
		    !strcmp(conf_keys[i].name, name))
			return &conf_keys[i];
	return NULL;
}

/* Returns NULL when name is a good index name, else what is wrong. */
const char *conf_bad_index_name(const char *name)
{
	size_t n = strlen(name), first = strcspn(name, "/");
	const char *seg;
	size_t len;

	for (size_t i = 0; reserved[i]; i++)
		if (first == strlen(reserved[i]) &&
		    !strncmp(name, reserved[i], first))
			return "reserved: v2, +health, +stats, metrics and "
			       "_larder are larder's own URLs";
	if (n < 1 || n > CONF_MAX_NAME)
		return "expected 1 to 100 characters";
	if (name[0] == '+' || name[0] == '_')
		return "must not start with '+' or '_'";
	for (seg = name;; seg += len + 1) {
		len = strcspn(seg, "/");
		if (len == 0)
			return "empty segment: segments are separated by "
			       "single '/'";
		if ((len == 1 && seg[0] == '.') ||
		    (len == 2 && seg[0] == '.' && seg[1] == '.'))
			return "'.' and '..' segments are not allowed";
		for (size_t i = 0; i < len; i++)
			if (!conf_is_lower_digit(seg[i]) && !strchr("._-", seg[i]))
				return "expected a-z, 0-9, '.', '_' and '-' in "
				       "segments separated by '/'";
		if (!seg[len])
			break;
	}
	return NULL;
}

/* Returns NULL when name is a good registry name, else what is wrong. It
 * is the first component of an OCI name, [a-z0-9]+ joined by single '.',
 * '_' or '-', since a client puts it in front of the upstream's name. */
const char *conf_bad_registry_name(const char *name)
{
	size_t n = strlen(name);

	if (n < 1 || n > CONF_MAX_REGISTRY_NAME)
		return "expected 1 to 64 characters";
	/* /v2/v2/... reads as a mistake, and library/NAME is how clients ask
	 * the default registry for Docker Hub's official images */
	if (!strcmp(name, "v2") || !strcmp(name, "library"))
		return "reserved: v2 is the API's own prefix, and library/ is "
		       "where clients look for Docker Hub's official images";
	for (size_t i = 0; i < n; i++) {
		if (conf_is_lower_digit(name[i]))
			continue;
		if (i == 0 || i == n - 1 || !strchr("._-", name[i]) ||
		    !conf_is_lower_digit(name[i - 1]))
			return "expected a-z and 0-9, with single '.', '_' or "
			       "'-' between them (like hub, ghcr, quay-io)";
	}
	return NULL;
}

/* Returns the number of words in a normalised list ("" has none). */
static size_t count_words(const char *s)
{
	size_t n = *s ? 1 : 0;

	for (; *s; s++)
		if (*s == ' ')
			n++;
	return n;
}

/* True when the word of length len at w occurs in list before w. */
static int seen_before(const char *list, const char *w, size_t len)
{
	const char *p = list;
	size_t n;

	for (; p < w; p += n + 1) {
		n = strcspn(p, " ");
		if (n == len && !strncmp(p, w, len))
			return 1;
	}
	return 0;
}

static const char *at_least_one(void *f)
{
	return *(long *)f >= 1 ? NULL : "a whole number of at least 1";
}

/* A duration or a size that must not be 0 (a session that expires at
 * once, a registry that refuses every blob). */
static const char *above_zero(void *f)
{
	return *(long *)f > 0 ? NULL : "more than 0";
}

static const char *prefetch_slots(void *f)
{
	return *(long *)f <= 64 ? NULL : "a whole number from 0 to 64";
}

static const char *check_layers(void *f)
{
	static const char form[] = "1 to 8 index names separated by spaces, "
	                           "each at most once";
	char *list = *(char **)f, name[CONF_MAX_NAME + 1];
	size_t n;

	if (count_words(list) < 1 || count_words(list) > CONF_MAX_LAYERS)
		return form;
	for (char *w = list; *w; w += n + (w[n] == ' ')) {
		n = strcspn(w, " ");
		if (n > CONF_MAX_NAME || seen_before(list, w, n))
			return form;
		memcpy(name, w, n);
		name[n] = '\0';
		if (conf_bad_index_name(name))
			return form;
	}
	return NULL;
}

/* Globs of project names, normalised as the names they are matched
 * against are (PEP 503: lowercase, a run of '-', '_', '.' one '-'), as
 * token globs are (names_globs_normalize). */
static const char *check_globs(void *f)
{
	char *list = *(char **)f, out[NAMES_MAX_GLOBS + 1], err[160];

	if (!*list)
		return NULL;
	if (names_globs_normalize(list, out, sizeof(out), err, sizeof(err)))
		return "project name globs (letters, digits, - _ . * ?) "
		       "separated by spaces";
	memcpy(list, out, strlen(out) + 1); /* never longer than list */
	return NULL;
}

const char *(*conf_policy_rules_check)(const char *rules);
const char *(*conf_image_rules_check)(const char *rules);

/* Rules either grammar takes; conf_check_policies() says which one each
 * policy's users need. */
static const char *check_rules(void *f)
{
	const char *rules = *(char **)f;
	const char *why, *img;

	why = conf_policy_rules_check ? conf_policy_rules_check(rules) : NULL;
	if (!why || !conf_image_rules_check)
		return why;
	img = conf_image_rules_check(rules);
	if (!img)
		return NULL;
	/* neither: the reason of the grammar it looks written for (a '/'
	 * or a ':' is no project name's) */
	return strpbrk(rules, "/:") ? img : why;
}

/* Names of [policy] sections: the same words as an index's name's
 * segment; whether each is declared is conf_check_policies()'s. */
static const char *check_policy_names(void *f)
{
	for (const char *p = *(char **)f; *p; p++)
		if (!conf_is_alnum(*p) && !strchr("-_. ", *p))
			return "names of [policy] sections separated by spaces";
	return NULL;
}

static const char *check_hosts(void *f)
{
	char *list = *(char **)f;

	for (char *p = list; *p; p++) {
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
		/* "*.example.com", any name under example.com: the '*' only
		 * as a whole first label */
		if (*p == '*' && (p == list || p[-1] == ' ') && p[1] == '.' &&
		    conf_is_alnum(p[2]))
			continue;
		if (*p != ' ' && !conf_is_lower_digit(*p) && !strchr(".-:[]", *p))
			return "host names separated by spaces";
	}
	return NULL;
}

/* An absolute http:// or https:// URL with a host, kept as written. */
static const char *check_hook_url(void *f)
{
	const char *u = *(char **)f;
	size_t scheme = !strncmp(u, "http://", 7)    ? 7
	                : !strncmp(u, "https://", 8) ? 8
	                                             : 0;

	if (!scheme || !u[scheme] || u[scheme] == '/' ||
	    strpbrk(u, " \t\"<>\\^`{|}#"))
		return "an absolute http:// or https:// URL without fragment";
	return NULL;
}

/* The events a webhook may ask for. */
static const char *const events[] = {"upload", "yank", "remove", "push",
                                     "new-release", "policy-denied", NULL};

static const char *check_events(void *f)
{
	static const char form[] = "events among upload yank remove push "
	                           "new-release policy-denied";
	char *list = *(char **)f;
	size_t n, i;

	if (!*list)
		return form;
	for (char *w = list; *w; w += n + (w[n] == ' ')) {
		n = strcspn(w, " ");
		for (i = 0; events[i]; i++)
			if (strlen(events[i]) == n && !strncmp(events[i], w, n))
				break;
		if (!events[i])
			return form;
	}
	return NULL;
}
