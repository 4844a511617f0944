#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/conf.h"

#ifndef LOCALSTATEDIR
#define LOCALSTATEDIR "/var"
#endif
#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION ""
#endif

#define DEFAULT_FILE SYSCONFDIR "/larder/larder.conf"
#define MAX_FILE     (1024 * 1024) /* bytes of config file conf_load reads */
#define MAX_LINE     4096          /* bytes in one line, comments included */
#define MAX_NAME     100           /* bytes in an index name */
#define MAX_SHOWN    60            /* bytes of a value quoted in a message */

/* Enum keys are stored through an int. */
_Static_assert(sizeof(enum conf_sendfile) == sizeof(int), "enum size");
_Static_assert(sizeof(enum conf_index_type) == sizeof(int), "enum size");
_Static_assert(CONF_SENDFILE_ACCEL == 0 && CONF_SENDFILE_XSENDFILE == 1 &&
                   CONF_SENDFILE_STREAM == 2,
               "sendfile_values order");
_Static_assert(CONF_INDEX_CACHE == 0 && CONF_INDEX_VIRTUAL == 1,
               "type_values order");

enum type {
	T_STRING,  /* any text without control characters */
	T_PATH,    /* absolute path; trailing '/' dropped */
	T_URL,     /* absolute http(s) URL; made to end with '/' */
	T_ENUM,    /* one of key.values, stored as int */
	T_SECONDS, /* 300, 300s, 5m, 2h, 1d; stored as long */
	T_SIZE,    /* 65536, 512k, 64M, 1G; stored as long */
	T_BOOL,    /* yes/no and friends; stored as int */
	T_COUNT,   /* non-negative integer; stored as long */
	T_LIST,    /* space-separated words; stored with single spaces */
	T_URLPATH, /* /like/this/ */
};

/* What each type is called in the man page, the form an error expects, and
 * the paragraph the man page gives it. */
static const struct {
	const char *name;
	const char *expect;
	const char *doc;
} types[] = {
    [T_STRING] = {"text", "text without control characters",
                  "Any text without control characters."},
    [T_PATH] = {"path", "an absolute path",
                "An absolute file system path, starting with '/'. "
                "A trailing '/' is dropped."},
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
};

/* A key's check runs after the value is stored in field; it may tidy the
 * value in place. Returns NULL, or the form that was expected instead. */
typedef const char *(*check_fn)(void *field);

struct key {
	const char *section; /* "larder" or "index" */
	const char *name;
	size_t off; /* in struct conf or struct conf_index */
	enum type type;
	const char *def; /* as text, through the same parser; NULL = none */
	const char *const *values; /* T_ENUM, in enum order */
	check_fn check;
	const char *help;
};

static const char *const sendfile_values[] = {"x-accel-redirect", "x-sendfile",
                                              "stream", NULL};
static const char *const type_values[] = {"cache", "virtual", NULL};

static const char *at_least_one(void *field);
static const char *check_layers(void *field);
static const char *check_hosts(void *field);

#define LARDER(n) "larder", #n, offsetof(struct conf, n)
#define INDEX(n)  "index", #n, offsetof(struct conf_index, n)

/* The one table of keys. */
static const struct key keys[] = {
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
             "without asking upstream again."},
    {LARDER(max_stale), T_SECONDS, "86400",
     .help = "How long past cache_ttl a page may still be served while "
             "upstream cannot be reached."},
    {LARDER(negative_ttl), T_SECONDS, "30",
     .help = "How long an upstream 404 is remembered."},
    {LARDER(error_ttl), T_SECONDS, "10",
     .help = "How long a failed upstream fetch is remembered: a page that "
             "could not be refreshed, an upstream host that cannot be "
             "reached or does not answer. Meanwhile a stale page is served "
             "at once, a virtual index answers from its other layers, and "
             "a fetch from that host fails at once with the reason instead "
             "of waiting on it again. 0 remembers nothing."},
    {LARDER(gc_grace), T_SECONDS, "60",
     .help = "How long a page rendering that a refresh replaced stays in "
             "the store before it is deleted, so that a reader just handed "
             "it can still open it."},
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
    {INDEX(type), T_ENUM, NULL, .values = type_values,
     .help = "Required. cache: a pull-through cache of one upstream "
             "simple index. virtual: serves the indexes named in layers, "
             "looked up in the order given."},
    {INDEX(upstream), T_URL, NULL,
     .help = "The upstream simple index (PEP 503/691) a cache index "
             "fetches from, e.g. https://pypi.org/simple/. Required for "
             "a cache index, not allowed for a virtual one."},
    {INDEX(layers), T_LIST, NULL, .check = check_layers,
     .help = "The indexes a virtual index serves, by name, in order: "
             "each declared in the same file and not the index itself, "
             "at most 8. A layer may itself be virtual, but layers must "
             "not form a cycle. Required for a virtual index, not allowed "
             "for a cache one."},
    {INDEX(trusted_hosts), T_LIST, "files.pythonhosted.org",
     .check = check_hosts,
     .help = "Host names a cache index may fetch files from, besides its "
             "upstream's own host, when an upstream page links there. "
             "Not allowed for a virtual index."},
};

#undef LARDER
#undef INDEX

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* The indexes larder serves with no [index] section: parsed like a file, and
 * printed in the man page. */
static const char default_indexes[] = "[index \"pypi\"]\n"
                                      "type = cache\n"
                                      "upstream = https://pypi.org/simple/\n"
                                      "\n"
                                      "[index \"root/pypi\"]\n"
                                      "type = virtual\n"
                                      "layers = pypi\n";

static const char *const reserved[] = {"v2",      "+health", "+stats",
                                       "metrics", "_larder", NULL};

static const char example[] =
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
    "# pip install --index-url https://larder.example.com/root/pypi/simple/\n"
    "[index \"root/pypi\"]\n"
    "type = virtual\n"
    "layers = corp pypi\n";

struct parser {
	struct conf *c;
	const char *name; /* for messages */
	char *err;
	size_t errlen;
	unsigned line;
	enum { IN_NONE, IN_LARDER, IN_INDEX } in;
	size_t ix;       /* the current index, IN_INDEX */
	int declared;    /* an [index] section was seen */
	char where[160]; /* "" or "[index \"NAME\"]: " for messages */
	unsigned larder_line[NKEYS]; /* where each was set */
	unsigned index_line[CONF_MAX_INDEXES][NKEYS];
	unsigned section_line[CONF_MAX_INDEXES];
};

static int is_ws(int ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' ||
	       ch == '\f';
}

static int is_ctl(int ch)
{
	return (unsigned char)ch < 0x20 || ch == 0x7f;
}

static int is_lower_digit(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

static int is_alnum(int ch)
{
	return is_lower_digit(ch) || (ch >= 'A' && ch <= 'Z');
}

static char *skip_ws(char *s)
{
	while (is_ws(*s))
		s++;
	return s;
}

static char *trim(char *s)
{
	size_t n;

	s = skip_ws(s);
	n = strlen(s);
	while (n && is_ws(s[n - 1]))
		n--;
	s[n] = '\0';
	return s;
}

/* True when what is left of a line is blank or a comment. */
static int rest_is_comment(char *s)
{
	s = skip_ws(s);
	return *s == '\0' || *s == '#' || *s == ';';
}

static void *field(void *base, const struct key *k)
{
	return (char *)base + k->off;
}

static const void *cfield(const void *base, const struct key *k)
{
	return (const char *)base + k->off;
}

static int is_string(enum type t)
{
	return t == T_STRING || t == T_PATH || t == T_URL || t == T_LIST ||
	       t == T_URLPATH;
}

static const struct key *find_key(const char *section, const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].section, section) &&
		    !strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

/* Writes s to out for a message: control characters as \xNN, quotes and
 * backslashes escaped when quoted, cut to MAX_SHOWN bytes with "...". */
static void shown(const char *s, int quoted, char *out, size_t outlen)
{
	size_t n = 0, i;

	for (i = 0; s[i] && n + 8 < outlen; i++) {
		if (i == MAX_SHOWN) {
			memcpy(out + n, "...", 3);
			n += 3;
			break;
		}
		if (is_ctl(s[i])) {
			n += (size_t)snprintf(out + n, outlen - n, "\\x%02x",
			                      (unsigned char)s[i]);
			continue;
		}
		if (quoted && (s[i] == '"' || s[i] == '\\'))
			out[n++] = '\\';
		out[n++] = s[i];
	}
	out[n] = '\0';
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int fail(struct parser *p, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes "NAME:LINE: message" to the error buffer; returns EINVAL. */
static int fail(struct parser *p, unsigned line, const char *fmt, ...)
{
	va_list ap;
	size_t n;
	int k;

	if (!p->err || !p->errlen)
		return EINVAL;
	k = snprintf(p->err, p->errlen, "%s:%u: ", p->name, line);
	n = k < 0 ? 0 : (size_t)k;
	if (n < p->errlen) {
		va_start(ap, fmt);
		vsnprintf(p->err + n, p->errlen - n, fmt, ap);
		va_end(ap);
	}
	return EINVAL;
}

/* The form a key's value takes, for messages: the type's, or the enum's
 * words. */
static const char *expected(const struct key *k, char *out, size_t outlen)
{
	size_t n;
	int w;

	if (k->type != T_ENUM)
		return types[k->type].expect;
	w = snprintf(out, outlen, "one of");
	n = w < 0 ? 0 : (size_t)w;
	for (size_t i = 0; k->values[i] && n < outlen; i++) {
		w = snprintf(out + n, outlen - n, "%s %s", i ? "," : "",
		             k->values[i]);
		n += w < 0 ? 0 : (size_t)w;
	}
	return out;
}

/* Parses a non-negative decimal number at *s, moving *s past it.
 * Returns 0, EINVAL (no digits) or ERANGE. */
static int parse_number(const char **s, long *out)
{
	const char *p = *s;
	long n = 0;

	if (*p < '0' || *p > '9')
		return EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (n > (LONG_MAX - (*p - '0')) / 10)
			return ERANGE;
		n = n * 10 + (*p - '0');
	}
	*s = p;
	*out = n;
	return 0;
}

/* A number followed by at most one unit letter from units, each worth the
 * matching entry of mult. Returns 0, EINVAL or ERANGE. */
static int parse_scaled(const char *s, const char *units, const long *mult,
                        long *out)
{
	const char *u;
	long n, m = 1;
	int err;

	err = parse_number(&s, &n);
	if (err)
		return err;
	if (*s) {
		u = strchr(units, *s);
		if (!u || s[1])
			return EINVAL;
		m = mult[u - units];
	}
	if (n > LONG_MAX / m)
		return ERANGE;
	*out = n * m;
	return 0;
}

static int parse_count(const char *s, long *out)
{
	int err = parse_number(&s, out);

	return !err && *s ? EINVAL : err;
}

static int parse_seconds(const char *s, long *out)
{
	static const long mult[] = {1, 60, 3600, 86400};

	return parse_scaled(s, "smhd", mult, out);
}

static int parse_size(const char *s, long *out)
{
	static const long mult[] = {1L << 10, 1L << 10, 1L << 20,
	                            1L << 20, 1L << 30, 1L << 30};

	return parse_scaled(s, "kKmMgG", mult, out);
}

static int parse_bool(const char *s, int *out)
{
	static const char *const yes[] = {"yes", "true", "on", "1", NULL};
	static const char *const no[] = {"no", "false", "off", "0", NULL};

	for (size_t i = 0; yes[i]; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return EINVAL;
}

/* Checks an absolute http(s) URL and returns a copy with the scheme in
 * lowercase and a '/' at the end, in *out. Returns 0, EINVAL with *why set
 * when there is more to say than the type's form, or ENOMEM. */
static int norm_url(const char *s, char **out, const char **why)
{
	const char *auth, *end, *host, *p;
	size_t skip, len;
	char *u;

	*why = NULL;
	if (!strncasecmp(s, "https://", 8))
		skip = 8;
	else if (!strncasecmp(s, "http://", 7))
		skip = 7;
	else
		return EINVAL;
	for (p = s; *p; p++) {
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f ||
		    strchr("\"<>\\^`{|}", *p))
			return EINVAL;
		if (*p == '?' || *p == '#') {
			*why = "a query or fragment is not allowed";
			return EINVAL;
		}
	}
	auth = s + skip;
	end = auth + strcspn(auth, "/");
	host = auth;
	for (p = auth; p < end; p++)
		if (*p == '@')
			host = p + 1; /* after any user:password@ */
	if (*host == '[') {
		p = memchr(host, ']', (size_t)(end - host));
		if (!p || p == host + 1)
			return EINVAL;
		p++;
	} else {
		for (p = host; p < end && *p != ':'; p++)
			;
		if (p == host)
			return EINVAL;
	}
	if (p < end) {
		long n = 0;

		if (*p != ':' || p + 1 == end)
			return EINVAL;
		for (p++; p < end; p++) {
			if (*p < '0' || *p > '9' || n > 65535)
				return EINVAL;
			n = n * 10 + (*p - '0');
		}
		if (n < 1 || n > 65535)
			return EINVAL;
	}
	len = strlen(s);
	u = malloc(len + 2);
	if (!u)
		return ENOMEM;
	memcpy(u, s, len + 1);
	for (size_t i = 0; i < skip; i++)
		if (u[i] >= 'A' && u[i] <= 'Z')
			u[i] = (char)(u[i] - 'A' + 'a');
	if (u[len - 1] != '/') {
		u[len] = '/';
		u[len + 1] = '\0';
	}
	*out = u;
	return 0;
}

static int is_urlpath(const char *s)
{
	const char *seg;
	size_t n;

	if (s[0] != '/' || s[1] == '\0')
		return 0;
	for (seg = s + 1; *seg; seg += n + 1) {
		n = strcspn(seg, "/");
		if (seg[n] != '/')
			return 0; /* does not end with '/' */
		if (n == 0 || (n == 1 && seg[0] == '.') ||
		    (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return 0;
		for (size_t i = 0; i < n; i++)
			if (!is_alnum(seg[i]) && !strchr("._~+-", seg[i]))
				return 0;
	}
	return 1;
}

/* Returns NULL when name is a good index name, else what is wrong. */
static const char *bad_index_name(const char *name)
{
	size_t n = strlen(name), first = strcspn(name, "/");
	const char *seg;
	size_t len;

	for (size_t i = 0; reserved[i]; i++)
		if (first == strlen(reserved[i]) &&
		    !strncmp(name, reserved[i], first))
			return "reserved: v2, +health, +stats, metrics and "
			       "_larder are larder's own URLs";
	if (n < 1 || n > MAX_NAME)
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
			if (!is_lower_digit(seg[i]) && !strchr("._-", seg[i]))
				return "expected a-z, 0-9, '.', '_' and '-' in "
				       "segments separated by '/'";
		if (!seg[len])
			break;
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

static const char *check_layers(void *f)
{
	static const char form[] = "1 to 8 index names separated by spaces, "
	                           "each at most once";
	char *list = *(char **)f, name[MAX_NAME + 1];
	size_t n;

	if (count_words(list) < 1 || count_words(list) > CONF_MAX_LAYERS)
		return form;
	for (char *w = list; *w; w += n + (w[n] == ' ')) {
		n = strcspn(w, " ");
		if (n > MAX_NAME || seen_before(list, w, n))
			return form;
		memcpy(name, w, n);
		name[n] = '\0';
		if (bad_index_name(name))
			return form;
	}
	return NULL;
}

static const char *check_hosts(void *f)
{
	char *list = *(char **)f;

	for (char *p = list; *p; p++) {
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
		if (*p != ' ' && !is_lower_digit(*p) && !strchr(".-:[]", *p))
			return "host names separated by spaces";
	}
	return NULL;
}

/* Copies the words of s, separated by single spaces, into *out. */
static int norm_list(const char *s, char **out)
{
	char *l = malloc(strlen(s) + 1);
	size_t n = 0;

	if (!l)
		return ENOMEM;
	while (*s) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		if (n)
			l[n++] = ' ';
		while (*s && *s != ' ' && *s != '\t')
			l[n++] = *s++;
	}
	l[n] = '\0';
	*out = l;
	return 0;
}

/* Parses v as key k into base (a struct conf or struct conf_index).
 * Returns 0, ENOMEM, or EINVAL with *why set to what went wrong beyond
 * "not the expected form" (or NULL) and *form to a specific form
 * expected (or NULL for the key's own). */
static int set_value(void *base, const struct key *k, const char *v,
                     const char **why, const char **form)
{
	void *f = field(base, k);
	char *s = NULL;
	long n = 0;
	int err = 0, b = 0;

	*why = NULL;
	*form = NULL;
	for (const char *p = v; *p; p++) {
		if (is_ctl(*p) && !(k->type == T_LIST && *p == '\t')) {
			*why = "control character";
			return EINVAL;
		}
	}
	switch (k->type) {
	case T_STRING:
	case T_URLPATH:
		if (k->type == T_URLPATH && !is_urlpath(v))
			return EINVAL;
		s = strdup(v);
		err = s ? 0 : ENOMEM;
		break;
	case T_PATH:
		if (v[0] != '/')
			return EINVAL;
		s = strdup(v);
		if (!s)
			return ENOMEM;
		for (size_t len = strlen(s); len > 1 && s[len - 1] == '/';)
			s[--len] = '\0';
		break;
	case T_URL:
		err = norm_url(v, &s, why);
		break;
	case T_LIST:
		err = norm_list(v, &s);
		break;
	case T_ENUM:
		for (n = 0; k->values[n] && strcmp(k->values[n], v); n++)
			;
		if (!k->values[n])
			return EINVAL;
		*(int *)f = (int)n;
		break;
	case T_SECONDS:
	case T_SIZE:
	case T_COUNT:
		if (k->type == T_SECONDS)
			err = parse_seconds(v, &n);
		else if (k->type == T_SIZE)
			err = parse_size(v, &n);
		else
			err = parse_count(v, &n);
		if (err == ERANGE) {
			*why = "too large";
			err = EINVAL;
		}
		if (err)
			return err;
		*(long *)f = n;
		break;
	case T_BOOL:
		err = parse_bool(v, &b);
		if (err)
			return err;
		*(int *)f = b;
		break;
	}
	if (err)
		return err;
	if (is_string(k->type)) {
		free(*(char **)f);
		*(char **)f = s;
	}
	if (k->check)
		*form = k->check(f);
	return *form ? EINVAL : 0;
}

static void free_index(struct conf_index *ix)
{
	for (size_t i = 0; i < NKEYS; i++) {
		if (!strcmp(keys[i].section, "index") &&
		    is_string(keys[i].type)) {
			free(*(char **)field(ix, &keys[i]));
			*(char **)field(ix, &keys[i]) = NULL;
		}
	}
	free(ix->name);
	ix->name = NULL;
}

void conf_free(struct conf *c)
{
	for (size_t i = 0; i < NKEYS; i++) {
		if (!strcmp(keys[i].section, "larder") &&
		    is_string(keys[i].type)) {
			free(*(char **)field(c, &keys[i]));
			*(char **)field(c, &keys[i]) = NULL;
		}
	}
	for (size_t i = 0; i < c->nindex; i++)
		free_index(&c->index[i]);
	c->nindex = 0;
	free(c->source);
	c->source = NULL;
}

static int dup_str(char **dst, const char *src)
{
	*dst = NULL;
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : ENOMEM;
}

/* Makes dst a deep copy of src. Returns 0 or ENOMEM (dst then empty). */
static int copy_conf(struct conf *dst, const struct conf *src)
{
	int err = 0;

	*dst = *src;
	/* Forget src's strings first, so a failure frees only our own. */
	for (size_t i = 0; i < NKEYS; i++) {
		if (!is_string(keys[i].type))
			continue;
		if (!strcmp(keys[i].section, "larder")) {
			*(char **)field(dst, &keys[i]) = NULL;
			continue;
		}
		for (size_t j = 0; j < src->nindex; j++)
			*(char **)field(&dst->index[j], &keys[i]) = NULL;
	}
	for (size_t j = 0; j < src->nindex; j++)
		dst->index[j].name = NULL;
	dst->source = NULL;

	for (size_t i = 0; i < NKEYS && !err; i++) {
		if (!is_string(keys[i].type))
			continue;
		if (!strcmp(keys[i].section, "larder")) {
			err = dup_str(field(dst, &keys[i]),
			              *(char *const *)cfield(src, &keys[i]));
			continue;
		}
		for (size_t j = 0; j < src->nindex && !err; j++)
			err = dup_str(
			    field(&dst->index[j], &keys[i]),
			    *(char *const *)cfield(&src->index[j], &keys[i]));
	}
	for (size_t j = 0; j < src->nindex && !err; j++)
		err = dup_str(&dst->index[j].name, src->index[j].name);
	if (!err)
		err = dup_str(&dst->source, src->source);
	if (err)
		conf_free(dst);
	return err;
}

int conf_index_find(const struct conf *c, const char *name)
{
	for (size_t i = 0; i < c->nindex; i++)
		if (c->index[i].name && !strcmp(c->index[i].name, name))
			return (int)i;
	return -1;
}

static int start_index(struct parser *p, const char *name)
{
	struct conf *c = p->c;
	char name_shown[MAX_SHOWN + 16];
	const char *why;
	int j;

	shown(name, 1, name_shown, sizeof(name_shown));
	snprintf(p->where, sizeof(p->where), "[index \"%s\"]: ", name_shown);
	why = bad_index_name(name);
	if (why)
		return fail(p, p->line, "%sbad index name: %s", p->where, why);
	if (!p->declared) {
		/* The first [index] replaces the indexes there were. */
		for (size_t i = 0; i < c->nindex; i++)
			free_index(&c->index[i]);
		c->nindex = 0;
		p->declared = 1;
	}
	j = conf_index_find(c, name);
	if (j >= 0)
		return fail(p, p->line,
		            "duplicate section [index \"%s\"] (first at line "
		            "%u)",
		            name, p->section_line[j]);
	if (c->nindex >= CONF_MAX_INDEXES)
		return fail(p, p->line, "%stoo many indexes (at most %d)",
		            p->where, CONF_MAX_INDEXES);
	p->ix = c->nindex;
	memset(&c->index[p->ix], 0, sizeof(c->index[p->ix]));
	memset(p->index_line[p->ix], 0, sizeof(p->index_line[p->ix]));
	p->section_line[p->ix] = p->line;
	c->index[p->ix].name = strdup(name);
	if (!c->index[p->ix].name)
		return ENOMEM;
	c->nindex++;
	p->in = IN_INDEX;
	for (size_t i = 0; i < NKEYS; i++) {
		const char *form;
		int err;

		if (strcmp(keys[i].section, "index") || !keys[i].def)
			continue;
		err = set_value(&c->index[p->ix], &keys[i], keys[i].def, &why,
		                &form);
		if (err)
			return err;
	}
	return 0;
}

/* "[larder]" or "[index "NAME"]", with an optional trailing comment. */
static int parse_section(struct parser *p, char *s)
{
	char line_shown[MAX_SHOWN + 16];
	char *q = skip_ws(s + 1), *name, *close;
	size_t word;

	shown(s, 0, line_shown, sizeof(line_shown));
	word = strspn(q, "abcdefghijklmnopqrstuvwxyz"
	                 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.");
	if (word == 6 && !strncmp(q, "larder", 6)) {
		q = skip_ws(q + 6);
		if (*q != ']' || !rest_is_comment(q + 1))
			goto syntax;
		p->in = IN_LARDER;
		p->where[0] = '\0';
		return 0;
	}
	if (word == 5 && !strncmp(q, "index", 5)) {
		q = skip_ws(q + 5);
		if (*q != '"')
			goto syntax;
		name = q + 1;
		close = strchr(name, '"');
		if (!close)
			goto syntax;
		*close = '\0';
		q = skip_ws(close + 1);
		if (*q != ']' || !rest_is_comment(q + 1))
			goto syntax;
		return start_index(p, name);
	}
	if (word && (is_ws(q[word]) || q[word] == ']' || q[word] == '"'))
		return fail(p, p->line,
		            "unknown section %s: expected [larder] or "
		            "[index \"NAME\"]",
		            line_shown);
syntax:
	return fail(p, p->line,
	            "bad section header %s: expected [larder] or "
	            "[index \"NAME\"]",
	            line_shown);
}

/* The value after '=': unquoted up to a " #" or " ;" comment, or in double
 * quotes with \" and \\. Sets *out (inside v), or *why and EINVAL. */
static int read_value(char *v, char **out, const char **why)
{
	char *r, *w;

	v = skip_ws(v);
	if (*v != '"') {
		/* v[-1] is '=' or blank, so q[-1] is always there */
		for (char *q = v; *q; q++) {
			if ((*q == '#' || *q == ';') && is_ws(q[-1])) {
				*q = '\0';
				break;
			}
		}
		*out = trim(v);
		return 0;
	}
	for (r = v + 1, w = v; *r != '"'; w++) {
		if (!*r) {
			*why = "unterminated quoted value";
			return EINVAL;
		}
		if (*r == '\\' && r[1] != '"' && r[1] != '\\') {
			*why = "unknown escape in quoted value (only \\\" and "
			       "\\\\)";
			return EINVAL;
		}
		if (*r == '\\')
			r++;
		*w = *r++;
	}
	*w = '\0';
	if (!rest_is_comment(r + 1)) {
		*why = "unexpected text after the closing quote";
		return EINVAL;
	}
	*out = v;
	return 0;
}

/* Edit distance of two short strings, capped at 9. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[32], prev, tmp;

	if (la >= 31 || lb >= 31)
		return 9;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			tmp = row[j];
			row[j] = prev + (a[i - 1] != b[j - 1]);
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			if (tmp + 1 < row[j])
				row[j] = tmp + 1;
			prev = tmp;
		}
	}
	return row[lb];
}

static int unknown_key(struct parser *p, const char *section, const char *key)
{
	char key_shown[MAX_SHOWN + 16], sect[200], hint[120] = "";
	size_t best = 3;
	const char *other = strcmp(section, "larder") ? "larder" : "index";

	shown(key, 1, key_shown, sizeof(key_shown));
	if (p->in == IN_LARDER)
		snprintf(sect, sizeof(sect), "[larder]");
	else
		snprintf(sect, sizeof(sect), "[index \"%s\"]",
		         p->c->index[p->ix].name);
	for (size_t i = 0; i < NKEYS; i++) {
		size_t d = distance(key, keys[i].name);

		if (!strcmp(keys[i].section, section) &&
		    (d < best || !strcasecmp(key, keys[i].name))) {
			best = !strcasecmp(key, keys[i].name) ? 0 : d;
			snprintf(hint, sizeof(hint), " (did you mean %s?)",
			         keys[i].name);
		}
	}
	if (find_key(other, key))
		snprintf(hint, sizeof(hint), " (it belongs in %s)",
		         strcmp(other, "larder") ? "[index \"NAME\"] sections"
		                                 : "[larder]");
	return fail(p, p->line, "unknown key \"%s\" in %s%s", key_shown, sect,
	            hint);
}

/* "key = value" in the current section. */
static int parse_assignment(struct parser *p, char *s)
{
	char line_shown[MAX_SHOWN + 16], value_shown[MAX_SHOWN + 16];
	char form_buf[200];
	const char *section, *why = NULL, *form;
	const struct key *k;
	unsigned *line;
	char *eq, *key, *value;
	void *base;
	int err;

	shown(s, 1, line_shown, sizeof(line_shown));
	eq = strchr(s, '=');
	if (!eq || eq == s)
		return fail(p, p->line,
		            "expected key = value, [larder] or [index "
		            "\"NAME\"], got \"%s\"",
		            line_shown);
	*eq = '\0';
	key = trim(s);
	if (p->in == IN_NONE)
		return fail(p, p->line,
		            "\"%s\" is outside any section: expected [larder] "
		            "or [index \"NAME\"] before it",
		            line_shown);
	section = p->in == IN_LARDER ? "larder" : "index";
	k = find_key(section, key);
	if (!k)
		return unknown_key(p, section, key);
	err = read_value(eq + 1, &value, &why);
	if (err)
		return fail(p, p->line, "%s%s: %s", p->where, key, why);
	shown(value, 1, value_shown, sizeof(value_shown));
	if (p->in == IN_LARDER) {
		base = p->c;
		line = &p->larder_line[k - keys];
	} else {
		base = &p->c->index[p->ix];
		line = &p->index_line[p->ix][k - keys];
	}
	if (*line)
		return fail(p, p->line, "%s%s given twice (first at line %u)",
		            p->where, key, *line);
	err = set_value(base, k, value, &why, &form);
	if (err == EINVAL)
		return fail(
		    p, p->line, "%s%s = \"%s\": %s%sexpected %s", p->where, key,
		    value_shown, why ? why : "", why ? ": " : "",
		    form ? form : expected(k, form_buf, sizeof(form_buf)));
	if (err)
		return err;
	*line = p->line;
	return 0;
}

static int parse_line(struct parser *p, char *s)
{
	s = trim(s);
	if (*s == '\0' || *s == '#' || *s == ';')
		return 0;
	if (*s == '[')
		return parse_section(p, s);
	return parse_assignment(p, s);
}

static int parse_text(struct parser *p, const char *text, size_t len)
{
	char line[MAX_LINE + 1];
	size_t pos = 0, end, n;
	int err;

	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		pos = 3; /* a UTF-8 byte order mark */
	while (pos < len) {
		p->line++;
		end = pos;
		while (end < len && text[end] != '\n')
			end++;
		n = end - pos;
		if (memchr(text + pos, '\0', n))
			return fail(p, p->line, "NUL byte in line");
		if (n > MAX_LINE)
			return fail(p, p->line,
			            "line too long (at most %d "
			            "bytes)",
			            MAX_LINE);
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos = end + 1;
		err = parse_line(p, line);
		if (err)
			return err;
	}
	return 0;
}

/* Index i's line for key name, or its section's line. */
static unsigned key_line(const struct parser *p, size_t i, const char *name)
{
	const struct key *k = find_key("index", name);
	unsigned line = p->index_line[i][k - keys];

	return line ? line : p->section_line[i];
}

static int is_set(const struct parser *p, size_t i, const char *name)
{
	return p->index_line[i][find_key("index", name) - keys] != 0;
}

/* Checks one declared index on its own: type, and the keys it needs or
 * must not have. */
static int check_index(struct parser *p, size_t i)
{
	struct conf_index *ix = &p->c->index[i];
	unsigned line = p->section_line[i];

	snprintf(p->where, sizeof(p->where), "[index \"%s\"]: ", ix->name);
	if (!is_set(p, i, "type"))
		return fail(p, line,
		            "%smissing type (expected one of cache, virtual)",
		            p->where);
	if (ix->type == CONF_INDEX_CACHE) {
		if (!ix->upstream)
			return fail(p, line,
			            "%smissing upstream (a cache index needs "
			            "the URL of its upstream simple index)",
			            p->where);
		if (is_set(p, i, "layers"))
			return fail(p, key_line(p, i, "layers"),
			            "%slayers is only for type = virtual",
			            p->where);
		return 0;
	}
	if (!ix->layers)
		return fail(p, line,
		            "%smissing layers (a virtual index needs the "
		            "names of the indexes it serves)",
		            p->where);
	if (is_set(p, i, "upstream"))
		return fail(p, key_line(p, i, "upstream"),
		            "%supstream is only for type = cache", p->where);
	if (is_set(p, i, "trusted_hosts"))
		return fail(p, key_line(p, i, "trusted_hosts"),
		            "%strusted_hosts is only for type = cache (a "
		            "virtual index trusts what its layers trust)",
		            p->where);
	return 0;
}

/* Turns index i's layer names into positions. */
static int resolve_layers(struct parser *p, size_t i)
{
	struct conf_index *ix = &p->c->index[i];
	char name[MAX_NAME + 1];
	size_t n;
	int j;

	ix->nlayers = 0;
	for (const char *w = ix->layers; *w; w += n + (w[n] == ' ')) {
		n = strcspn(w, " ");
		memcpy(name, w, n); /* check_layers saw n <= MAX_NAME */
		name[n] = '\0';
		j = conf_index_find(p->c, name);
		if (j < 0 || (size_t)j == i)
			return fail(p, key_line(p, i, "layers"),
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
static int report_cycle(struct parser *p, const size_t *stack, size_t start,
                        size_t depth)
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
	return fail(p, key_line(p, stack[start], "layers"),
	            "%slayers form a cycle: %s", p->where, path);
}

/* Depth-first walk from index i; state is 0 (not seen), 1 (on the path in
 * stack[0..depth-1]) or 2 (done). Returns EINVAL on a cycle. */
static int visit(struct parser *p, size_t i, unsigned char *state,
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
static int validate(struct parser *p)
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

/* Parses text into c in place; c may be left half-changed on error. */
static int parse_into(struct conf *c, const char *name, const char *text,
                      size_t len, char *err, size_t errlen)
{
	struct parser *p;
	int rc;

	p = calloc(1, sizeof(*p));
	if (!p) {
		rc = ENOMEM;
		goto out;
	}
	p->c = c;
	p->name = name ? name : "-";
	p->err = err;
	p->errlen = errlen;
	rc = parse_text(p, text, len);
	if (!rc && p->declared)
		rc = validate(p);
out:
	if (rc == ENOMEM)
		set_err(err, errlen, "%s: out of memory", name ? name : "-");
	free(p);
	return rc;
}

int conf_defaults(struct conf *c)
{
	const char *why, *form;
	int err = 0;

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NKEYS && !err; i++)
		if (!strcmp(keys[i].section, "larder"))
			err = set_value(c, &keys[i], keys[i].def, &why, &form);
	if (!err)
		err = parse_into(c, "(built-in defaults)", default_indexes,
		                 strlen(default_indexes), NULL, 0);
	if (err)
		conf_free(c);
	return err;
}

int conf_parse(struct conf *c, const char *name, const char *text, size_t len,
               char *err, size_t errlen)
{
	struct conf tmp;
	int rc;

	set_err(err, errlen, "%s", "");
	rc = copy_conf(&tmp, c);
	if (rc) {
		set_err(err, errlen, "%s: out of memory", name ? name : "-");
		return rc;
	}
	rc = parse_into(&tmp, name, text, len, err, errlen);
	if (rc) {
		conf_free(&tmp);
		return rc;
	}
	conf_free(c);
	*c = tmp;
	return 0;
}

/* Reads at most MAX_FILE bytes of path into out. Returns 0 or an errno
 * (EFBIG when the file is bigger). */
static int read_file(const char *path, struct buf *out)
{
	char chunk[8192];
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno;
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = errno;
		if (n <= 0)
			break;
		err = buf_add(out, chunk, (size_t)n);
		if (err == E2BIG)
			err = EFBIG;
		if (err)
			break;
	}
	close(fd);
	return err;
}

int conf_load(struct conf *c, const char *path, char *err, size_t errlen)
{
	const char *from = "";
	struct buf text;
	int rc, optional = 0;

	buf_init(&text, MAX_FILE);
	set_err(err, errlen, "%s", "");
	if (!path || !*path) {
		path = getenv("LARDER_CONFIG");
		from = " (from $LARDER_CONFIG)";
	}
	if (!path || !*path) {
		path = DEFAULT_FILE;
		from = "";
		optional = 1;
	}
	rc = conf_defaults(c);
	if (rc) {
		set_err(err, errlen, "%s: out of memory", path);
		goto out;
	}
	rc = read_file(path, &text);
	if (rc == ENOENT && optional) {
		rc = 0; /* no file: the built-in defaults */
		goto out;
	}
	if (rc == EFBIG) {
		set_err(err, errlen, "%s%s: bigger than %d bytes", path, from,
		        MAX_FILE);
		goto out;
	}
	if (rc) {
		set_err(err, errlen, "%s%s: %s (%d)", path, from, strerror(rc),
		        rc);
		goto out;
	}
	rc = conf_parse(c, path, buf_str(&text), text.len, err, errlen);
	if (rc)
		goto out;
	c->source = realpath(path, NULL);
	if (!c->source)
		c->source = strdup(path); /* read it, but it has no name */
	if (!c->source) {
		rc = ENOMEM;
		set_err(err, errlen, "%s: out of memory", path);
	}
out:
	buf_free(&text);
	if (rc) {
		conf_free(c);
		memset(c, 0, sizeof(*c));
	}
	return rc;
}

/* Appends a value so the parser reads it back unchanged: bare when it
 * can be, else in quotes. */
static int add_value(struct buf *out, const char *v)
{
	size_t n = strlen(v);
	int quote =
	    n == 0 || strchr("\"#;", v[0]) || is_ws(v[0]) || is_ws(v[n - 1]);
	int err = 0;

	for (size_t i = 1; i < n && !quote; i++)
		quote = (v[i] == '#' || v[i] == ';') && is_ws(v[i - 1]);
	if (!quote)
		return buf_adds(out, v);
	err = buf_adds(out, "\"");
	for (; *v && !err; v++) {
		if (*v == '"' || *v == '\\')
			err = buf_adds(out, "\\");
		if (!err)
			err = buf_add(out, v, 1);
	}
	return err ? err : buf_adds(out, "\"");
}

/* Appends key k of base as "name = value\n". */
static int dump_key(struct buf *out, const void *base, const struct key *k)
{
	const void *f = cfield(base, k);
	const char *unit = "";
	long n;
	int err;

	err = buf_addf(out, "%s = ", k->name);
	if (err)
		return err;
	switch (k->type) {
	case T_ENUM:
		err = buf_adds(out, k->values[*(const int *)f]);
		break;
	case T_BOOL:
		err = buf_adds(out, *(const int *)f ? "yes" : "no");
		break;
	case T_SIZE:
		n = *(const long *)f;
		for (int i = 0; i < 3 && n && n % 1024 == 0; i++) {
			n /= 1024;
			unit = i == 0 ? "k" : i == 1 ? "M" : "G";
		}
		err = buf_addf(out, "%ld%s", n, unit);
		break;
	case T_SECONDS:
	case T_COUNT:
		err = buf_addf(out, "%ld", *(const long *)f);
		break;
	default:
		err =
		    add_value(out, *(char *const *)f ? *(char *const *)f : "");
		break;
	}
	return err ? err : buf_adds(out, "\n");
}

int conf_dump(const struct conf *c, struct buf *out)
{
	int err;

	err = buf_adds(out, "# larder configuration: the effective values, ");
	if (!err && c->source) {
		err = buf_adds(out, "read from\n# ");
		for (const char *s = c->source; *s && !err; s++)
			err = buf_add(out, is_ctl(*s) ? "?" : s, 1);
		err = err ? err : buf_adds(out, "\n");
	} else if (!err) {
		err = buf_adds(out, "from the built-in\n# defaults "
		                    "(no configuration file)\n");
	}
	err = err ? err : buf_adds(out, "\n[larder]\n");
	for (size_t i = 0; i < NKEYS && !err; i++)
		if (!strcmp(keys[i].section, "larder"))
			err = dump_key(out, c, &keys[i]);
	for (size_t j = 0; j < c->nindex && !err; j++) {
		const struct conf_index *ix = &c->index[j];

		err = buf_addf(out, "\n[index \"%s\"]\n", ix->name);
		for (size_t i = 0; i < NKEYS && !err; i++) {
			const char *name = keys[i].name;

			if (strcmp(keys[i].section, "index"))
				continue;
			if (ix->type == CONF_INDEX_CACHE &&
			    !strcmp(name, "layers"))
				continue;
			if (ix->type == CONF_INDEX_VIRTUAL &&
			    (!strcmp(name, "upstream") ||
			     !strcmp(name, "trusted_hosts")))
				continue;
			err = dump_key(out, ix, &keys[i]);
		}
	}
	return err;
}

/* Appends s escaped for roff: backslashes, hyphens, and a '.' or '\''
 * that would start a line. */
static int add_roff(struct buf *out, const char *s)
{
	int err = 0;

	for (; *s && !err; s++) {
		if (*s == '\\')
			err = buf_adds(out, "\\e");
		else if (*s == '-')
			err = buf_adds(out, "\\-");
		else if ((*s == '.' || *s == '\'') &&
		         (out->len == 0 || out->data[out->len - 1] == '\n'))
			err = buf_addf(out, "\\&%c", *s);
		else
			err = buf_add(out, s, 1);
	}
	return err;
}

static int type_used(enum type t)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].type == t)
			return 1;
	return 0;
}

/* Appends lines of text as a roff no-fill block. */
static int add_roff_block(struct buf *out, const char *text)
{
	int err = buf_adds(out, ".PP\n.RS 4\n.nf\n");

	err = err ? err : add_roff(out, text);
	return err ? err : buf_adds(out, ".fi\n.RE\n");
}

static int man_keys(struct buf *out, const char *section)
{
	int err = 0;

	for (size_t i = 0; i < NKEYS && !err; i++) {
		const struct key *k = &keys[i];

		if (strcmp(k->section, section))
			continue;
		err = buf_addf(out, ".TP\n.B %s\n", k->name);
		if (!err && k->type == T_ENUM) {
			for (size_t v = 0; k->values[v] && !err; v++) {
				err = buf_adds(out, v ? " | \\fI" : "\\fI");
				err = err ? err : add_roff(out, k->values[v]);
				err = err ? err : buf_adds(out, "\\fR");
			}
		} else if (!err) {
			err = buf_addf(out, "\\fI%s\\fR", types[k->type].name);
		}
		if (!err && k->def) {
			err = buf_adds(out, ", default \\fB");
			err = err ? err : add_roff(out, k->def);
			err = err ? err : buf_adds(out, "\\fR");
		}
		err = err ? err : buf_adds(out, "\n.br\n");
		err = err ? err : add_roff(out, k->help);
		err = err ? err : buf_adds(out, "\n");
	}
	return err;
}

int conf_man(struct buf *out)
{
	int err;

	err = buf_adds(
	    out, ".\\\" larder.conf(5), made by `larder config man' from the "
	         "table of keys.\n"
	         ".TH LARDER.CONF 5 \"\" \"larder " PACKAGE_VERSION "\" "
	         "\"File Formats Manual\"\n"
	         ".SH NAME\n"
	         "larder.conf \\- configuration file of larder, the "
	         "pull\\-through PyPI cache\n"
	         ".SH SYNOPSIS\n"
	         ".B " SYSCONFDIR "/larder/larder.conf\n"
	         ".PP\n"
	         "larder reads one configuration file, the first of:\n"
	         ".IP 1. 4\n"
	         "the file given with\n"
	         ".B \\-c\n"
	         ".IR FILE ;\n"
	         ".IP 2. 4\n"
	         "the file named by the environment variable\n"
	         ".BR LARDER_CONFIG ;\n"
	         ".IP 3. 4\n"
	         ".IR " SYSCONFDIR "/larder/larder.conf .\n"
	         ".PP\n"
	         "A file named by\n"
	         ".B \\-c\n"
	         "or\n"
	         ".B LARDER_CONFIG\n"
	         "must exist. When the default file does not exist larder runs "
	         "on its built\\-in defaults: every key at its default and the "
	         "indexes under\n"
	         ".BR \"DEFAULT INDEXES\" .\n"
	         ".SH DESCRIPTION\n"
	         "The file is INI, with git\\-config\\-like sections:\n"
	         ".B [larder]\n"
	         "holds the global keys and each\n"
	         ".B [index \\(dq\\fINAME\\fB\\(dq]\n"
	         "declares one package index. Every other line is\n"
	         ".IB key \" = \" value\\fR.\n"
	         "Leading and trailing blanks are ignored. A line that starts "
	         "with\n"
	         ".B #\n"
	         "or\n"
	         ".B ;\n"
	         "is a comment, and so is the rest of a line after a blank "
	         "followed by\n"
	         ".B #\n"
	         "or\n"
	         ".B ;\n"
	         "(in an unquoted value). A value may be put in double quotes, "
	         "inside which\n"
	         ".B \\e\"\n"
	         "and\n"
	         ".B \\e\\e\n"
	         "stand for a quote and a backslash and\n"
	         ".B #\n"
	         "and\n"
	         ".B ;\n"
	         "are plain characters. A key may appear once per section. An "
	         "error names the file, the line, the key, the value and the "
	         "form that was expected, and larder will not start.\n"
	         ".PP\n"
	         "Values have these types:\n");
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]) && !err; t++) {
		if (!type_used((enum type)t))
			continue;
		err = buf_addf(out, ".TP\n.I %s\n", types[t].name);
		err = err ? err : add_roff(out, types[t].doc);
		err = err ? err : buf_adds(out, "\n");
	}
	err = err ? err : buf_adds(out, ".SH \"THE [larder] SECTION\"\n");
	err = err ? err : man_keys(out, "larder");
	err = err ? err
	          : buf_adds(out, ".SH \"[index \\(dqNAME\\(dq] SECTIONS\"\n"
	                          "Each declares a package index, served at\n"
	                          ".IB /NAME /simple/\\fR.\n"
	                          "A name is 1 to 100 characters: segments of "
	                          "a\\-z, 0\\-9,\n"
	                          ".BR . \", \" _ \" and \" \\- ,\n"
	                          "separated by single\n"
	                          ".BR / ,\n"
	                          "none of them\n"
	                          ".BR . \" or \" .. ;\n"
	                          "it may not start with\n"
	                          ".B +\n"
	                          "or\n"
	                          ".BR _ ,\n"
	                          "and its first segment may not be\n"
	                          ".BR v2 \", \" +health \", \" +stats \", \" "
	                          "metrics \" or \" "
	                          "_larder ,\n"
	                          "which are larder's own URLs. At most 32 "
	                          "indexes. A file that "
	                          "declares any index replaces all the default "
	                          "indexes with the "
	                          "ones it declares.\n");
	err = err ? err : man_keys(out, "index");
	err = err ? err
	          : buf_adds(out, ".SH \"DEFAULT INDEXES\"\n"
	                          "With no [index] section larder serves "
	                          "these, a cache of PyPI "
	                          "and a virtual index over it:\n");
	err = err ? err : add_roff_block(out, default_indexes);
	err = err ? err : buf_adds(out, ".SH EXAMPLE\n");
	err = err ? err : add_roff_block(out, example);
	err = err ? err
	          : buf_adds(out, ".SH ENVIRONMENT\n"
	                          ".TP\n"
	                          ".B LARDER_CONFIG\n"
	                          "The configuration file to read when\n"
	                          ".B \\-c\n"
	                          "is not given.\n"
	                          ".SH FILES\n"
	                          ".TP\n"
	                          ".I " SYSCONFDIR "/larder/larder.conf\n"
	                          "The default configuration file.\n"
	                          ".TP\n"
	                          ".I " LOCALSTATEDIR "/lib/larder\n"
	                          "The default\n"
	                          ".BR data_dir .\n"
	                          ".SH \"SEE ALSO\"\n"
	                          ".BR larder (8)\n");
	return err;
}
