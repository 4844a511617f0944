#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/hex.h"
#include "common/http/route.h"

static int bad_byte(unsigned char ch)
{
	return ch < 0x20 || ch == 0x7f;
}

static int has_bad_byte(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (bad_byte((unsigned char)s[i]))
			return 1;
	}
	return 0;
}

/* Copies n bytes of s and a NUL to out (outlen bytes). */
static int copy(char *out, size_t outlen, const char *s, size_t n)
{
	if (n >= outlen)
		return ENAMETOOLONG;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

/* Decodes the byte at *p (before end) and moves *p past it. A request path
 * may not smuggle in a '/' or '\\', a NUL or another control byte, and
 * every '%' must start a two-digit hex escape. */
static int next_byte(const char **p, const char *end, unsigned char *ch)
{
	const char *s = *p;
	int hi, lo;

	if (*s != '%') {
		*ch = (unsigned char)*s;
		*p = s + 1;
		return bad_byte(*ch) ? EINVAL : 0;
	}
	if (end - s < 3)
		return EINVAL;
	hi = hex_value((unsigned char)s[1]);
	lo = hex_value((unsigned char)s[2]);
	if (hi < 0 || lo < 0)
		return EINVAL;
	*ch = (unsigned char)(hi * 16 + lo);
	*p = s + 3;
	if (*ch == '/' || *ch == '\\' || bad_byte(*ch))
		return EINVAL;
	return 0;
}

/* Percent-decodes [s, end) into out (outlen bytes), once. */
static int decode(const char *s, const char *end, char *out, size_t outlen)
{
	size_t n = 0;
	unsigned char ch;
	int err;

	while (s < end) {
		err = next_byte(&s, end, &ch);
		if (err)
			return err;
		if (n + 1 >= outlen)
			return ENAMETOOLONG;
		out[n++] = (char)ch;
	}
	if (n >= outlen)
		return ENAMETOOLONG;
	out[n] = '\0';
	return 0;
}

/* Returns how many raw bytes at the start of [s, end) decode to the mount
 * (mlen bytes) and end at a '/' or the end of the path; 0 when they do
 * not. Decoding errors are left for decode() to report. */
static size_t mount_prefix(const char *s, const char *end, const char *mount,
			   size_t mlen)
{
	const char *p = s;
	unsigned char ch;
	size_t i;

	for (i = 0; i < mlen; i++) {
		if (p >= end || next_byte(&p, end, &ch) != 0)
			return 0;
		if (ch != (unsigned char)mount[i])
			return 0;
	}
	if (p < end && *p != '/')
		return 0;
	return (size_t)(p - s);
}

/* Skips the "http://host" of an absolute-form request target, so that only
 * its path is left. Anything else is returned as it is. */
static const char *skip_authority(const char *uri)
{
	size_t n;

	if (strncasecmp(uri, "http://", 7) == 0)
		n = 7;
	else if (strncasecmp(uri, "https://", 8) == 0)
		n = 8;
	else
		return uri;
	uri += n;
	return uri + strcspn(uri, "/?#");
}

/*
 * With PATH_INFO the server has already split and decoded the URL: the path
 * is PATH_INFO and the mount is SCRIPT_NAME. Otherwise the path is
 * REQUEST_URI's, decoded once here; the mount is SCRIPT_NAME when the
 * decoded path starts with it (at a '/' boundary) and "" when it does not,
 * so that mount + path is always the URL the client asked for. An empty
 * path is "/". On error path and mount are "".
 */
int route_request_path(const char *script_name, const char *path_info,
		       const char *request_uri, char *path, size_t pathlen,
		       char *mount, size_t mountlen)
{
	const char *sn = script_name ? script_name : "";
	const char *uri, *end;
	size_t snlen = strlen(sn), skip;
	int err;

	if (pathlen)
		path[0] = '\0';
	if (mountlen)
		mount[0] = '\0';
	/* "/" (Apache's ScriptAlias /) and "/larder/" name the same mounts
	 * as "" and "/larder". */
	while (snlen && sn[snlen - 1] == '/')
		snlen--;
	if (has_bad_byte(sn, snlen))
		return EINVAL;

	if (path_info && *path_info) {
		size_t n = strlen(path_info);

		if (path_info[0] != '/' || has_bad_byte(path_info, n))
			return EINVAL;
		err = copy(path, pathlen, path_info, n);
		if (!err)
			err = copy(mount, mountlen, sn, snlen);
		goto out;
	}

	uri = request_uri ? skip_authority(request_uri) : "";
	end = uri + strcspn(uri, "?");
	if (uri < end && uri[0] != '/')
		return EINVAL;
	skip = mount_prefix(uri, end, sn, snlen);
	if (skip) {
		err = copy(mount, mountlen, sn, snlen);
		if (err)
			goto out;
		uri += skip;
	}
	if (uri == end)
		err = copy(path, pathlen, "/", 1);
	else
		err = decode(uri, end, path, pathlen);
out:
	if (err) {
		if (pathlen)
			path[0] = '\0';
		if (mountlen)
			mount[0] = '\0';
	}
	return err;
}

static void fail(struct route *r, int status, const char *reason)
{
	r->kind = ROUTE_ERROR;
	r->status = status;
	r->reason = reason;
}

static void found(struct route *r, enum route_kind kind)
{
	r->kind = kind;
	r->status = 200;
	r->reason = "ok";
}

/* Makes r a 301 to the path fmt makes (a 400 when it does not fit). */
static void moved(struct route *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void moved(struct route *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(r->location, sizeof(r->location), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(r->location)) {
		r->location[0] = '\0';
		fail(r, 400, "path too long");
		return;
	}
	r->kind = ROUTE_REDIRECT;
	r->status = 301;
	r->reason = "moved permanently";
}

/* Makes r a 301 to /{index}/simple/{project}/ (project may be ""). */
static void redirect(struct route *r, const char *index, const char *project)
{
	moved(r, "/%s/simple/%s%s", index, project, *project ? "/" : "");
}

/* A path is '/' and segments without control bytes, none of them "." or
 * "..", none empty except the last (a trailing '/'). */
static int path_ok(const char *path)
{
	const char *seg, *end;
	size_t n;

	if (!path || path[0] != '/' || has_bad_byte(path, strlen(path)))
		return 0;
	seg = path + 1;
	for (;;) {
		end = strchrnul(seg, '/');
		n = (size_t)(end - seg);
		if (n == 0 && *end)
			return 0;
		if ((n == 1 && seg[0] == '.') ||
		    (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return 0;
		if (!*end)
			return 1;
		seg = end + 1;
	}
}

/* Returns the position of the longest index name that is made of whole
 * leading segments of rel (the path without its first '/'), or -1. */
static int find_index(const struct conf *c, const char *rel, size_t *namelen)
{
	size_t i, n, best_len = 0;
	int best = -1;

	for (i = 0; c && i < c->nindex && i < CONF_MAX_INDEXES; i++) {
		const char *name = c->index[i].name;

		if (!name || !*name)
			continue;
		n = strlen(name);
		if (strncmp(rel, name, n) != 0)
			continue;
		if (rel[n] != '/' && rel[n] != '\0')
			continue;
		if (n > best_len) {
			best = (int)i;
			best_len = n;
		}
	}
	*namelen = best_len;
	return best;
}

/* rest is what follows "/{index}/simple/". */
static void route_simple(struct route *r, const char *index, const char *rest)
{
	const char *slash = strchr(rest, '/');
	char name[NAMES_MAX_PROJECT + 1];
	size_t n;

	if (!*rest) {
		found(r, ROUTE_SIMPLE_LIST);
		return;
	}
	if (slash && slash[1]) {
		fail(r, 404, "no such page");
		return;
	}
	n = slash ? (size_t)(slash - rest) : strlen(rest);
	if (copy(name, sizeof(name), rest, n) != 0 ||
	    names_normalize(name, r->project, sizeof(r->project)) != 0) {
		r->project[0] = '\0';
		fail(r, 404, "no such project");
		return;
	}
	if (!slash || strcmp(name, r->project) != 0) {
		redirect(r, index, r->project);
		return;
	}
	found(r, ROUTE_SIMPLE_PROJECT);
}

/* rest is what follows "/{index}/files/". */
static void route_file(struct route *r, const char *rest)
{
	/* the siblings of a file: PEP 658 metadata, PEP 740 provenance */
	static const char *const suffix[] = {".metadata", ".provenance"};
	const char *slash = strchr(rest, '/');
	const char *fn;
	size_t n;

	if (!slash || !slash[1] || strchr(slash + 1, '/')) {
		fail(r, 404, "no such page");
		return;
	}
	if (copy(r->sha256, sizeof(r->sha256), rest,
		 (size_t)(slash - rest)) != 0 ||
	    !names_is_sha256(r->sha256)) {
		r->sha256[0] = '\0';
		fail(r, 400, "bad sha256");
		return;
	}
	fn = slash + 1;
	n = strlen(fn);
	for (int k = 0; k < 2; k++) {
		size_t slen = strlen(suffix[k]);

		if (n > slen && strcmp(fn + n - slen, suffix[k]) == 0 &&
		    copy(r->filename, sizeof(r->filename), fn, n - slen) == 0 &&
		    names_is_filename(r->filename)) {
			r->metadata = k == 0;
			r->provenance = k == 1;
			found(r, ROUTE_FILE);
			return;
		}
	}
	if (copy(r->filename, sizeof(r->filename), fn, n) != 0 ||
	    !names_is_filename(r->filename)) {
		r->filename[0] = '\0';
		fail(r, 400, "bad file name");
		return;
	}
	found(r, ROUTE_FILE);
}

/* Whether s is a version as a route takes it: PEP 440 characters only
 * (letters, digits, . + ! _ -), 1 to ROUTE_MAX_VERSION of them. */
static int version_ok(const char *s, size_t n)
{
	if (n == 0 || n > ROUTE_MAX_VERSION)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || strchr(".+!_-", ch)))
			return 0;
	}
	return 1;
}

/* rest is what follows "/{index}/+yank/", "+unyank/" or "+release/":
 * {project}/{version}, and for a removal optionally /{filename}. */
static void route_release(struct route *r, enum route_kind kind,
			  const char *rest)
{
	const char *slash = strchr(rest, '/'), *vend;
	char name[NAMES_MAX_PROJECT + 1];

	if (!slash) {
		fail(r, 404, "no such page");
		return;
	}
	if (copy(name, sizeof(name), rest, (size_t)(slash - rest)) != 0 ||
	    names_normalize(name, r->project, sizeof(r->project)) != 0) {
		r->project[0] = '\0';
		fail(r, 404, "no such project");
		return;
	}
	rest = slash + 1;
	vend = strchr(rest, '/');
	if (!vend)
		vend = rest + strlen(rest);
	if (!version_ok(rest, (size_t)(vend - rest))) {
		fail(r, 400, "bad version");
		return;
	}
	memcpy(r->version, rest, (size_t)(vend - rest));
	r->version[vend - rest] = '\0';
	if (*vend && kind == ROUTE_REMOVE && vend[1]) {
		if (copy(r->filename, sizeof(r->filename), vend + 1,
			 strlen(vend + 1)) != 0 ||
		    !names_is_filename(r->filename)) {
			r->filename[0] = '\0';
			fail(r, 400, "bad file name");
			return;
		}
	} else if (*vend && vend[1]) {
		fail(r, 404, "no such page");
		return;
	}
	found(r, kind);
}

/* rest is what follows "/{index}/pypi/": {project}/json or
 * {project}/{version}/json, as pypi.org lays out its JSON API. */
static void route_json(struct route *r, const char *index, const char *rest)
{
	const char *slash = strchr(rest, '/'), *vend = NULL;
	char name[NAMES_MAX_PROJECT + 1];

	if (!slash) {
		fail(r, 404, "no such page");
		return;
	}
	if (strcmp(slash + 1, "json") != 0) {
		vend = strchr(slash + 1, '/');
		if (!vend || strcmp(vend + 1, "json") != 0) {
			fail(r, 404, "no such page");
			return;
		}
	}
	if (copy(name, sizeof(name), rest, (size_t)(slash - rest)) != 0 ||
	    names_normalize(name, r->project, sizeof(r->project)) != 0) {
		r->project[0] = '\0';
		fail(r, 404, "no such project");
		return;
	}
	if (vend) {
		if (!version_ok(slash + 1, (size_t)(vend - slash - 1))) {
			fail(r, 400, "bad version");
			return;
		}
		memcpy(r->version, slash + 1, (size_t)(vend - slash - 1));
		r->version[vend - slash - 1] = '\0';
	}
	if (strcmp(name, r->project) != 0) {
		moved(r, "/%s/pypi/%s/%s%sjson", index, r->project, r->version,
		      *r->version ? "/" : "");
		return;
	}
	found(r, ROUTE_JSON);
}

/* Whether the path takes method: the methods of each kind of route. */
static int method_ok(struct route *r, const char *method)
{
	switch (r->kind) {
	case ROUTE_UPLOAD:
		/* the index's root: its landing page, and uploads */
		r->allow = "GET, HEAD, POST";
		return method && (strcmp(method, "GET") == 0 ||
				  strcmp(method, "HEAD") == 0 ||
				  strcmp(method, "POST") == 0);
	case ROUTE_YANK:
	case ROUTE_UNYANK:
		r->allow = "POST";
		break;
	case ROUTE_REMOVE:
		r->allow = "DELETE";
		break;
	default:
		r->allow = "GET, HEAD";
		return method && (strcmp(method, "GET") == 0 ||
				  strcmp(method, "HEAD") == 0);
	}
	return method && strcmp(method, r->allow) == 0;
}

/*
 * Order of checks: the path's shape (400 "bad path"), then where it leads
 * (404, or 400 for a bad sha256 or file name), and only for a path that
 * leads somewhere the method (405). So a bad path is a 400 whatever the
 * method, and a POST is never redirected. Non-errors have status 200 (301
 * for a redirect) and a non-NULL reason too.
 */
void route_parse(const struct conf *c, const char *method, const char *path,
		 struct route *r)
{
	const char *index = "", *rest = "";
	size_t namelen;

	memset(r, 0, sizeof(*r));
	r->index = -1;
	fail(r, 404, "no such index");

	if (!path_ok(path)) {
		fail(r, 400, "bad path");
		return;
	}
	if (strcmp(path, "/+health") == 0 || strcmp(path, "/+api") == 0 ||
	    strcmp(path, "/") == 0) {
		found(r, path[1] == '+' && path[2] == 'h' ? ROUTE_HEALTH :
			 path[1] == '+'                   ? ROUTE_API :
							    ROUTE_HOME);
		goto method;
	}
	if (strcmp(path, "/+search") == 0) {
		found(r, ROUTE_SEARCH);
		goto method;
	}
	if (strcmp(path, "/metrics") == 0 || strcmp(path, "/+stats") == 0 ||
	    strcmp(path, "/+status") == 0) {
		found(r, path[1] == 'm'                  ? ROUTE_METRICS :
			 strcmp(path, "/+stats") == 0 ? ROUTE_STATS :
							ROUTE_STATUS);
		goto method;
	}
	r->index = find_index(c, path + 1, &namelen);
	if (r->index < 0)
		return;
	index = c->index[r->index].name;
	rest = path + 1 + namelen;
	if (strcmp(rest, "/simple") == 0)
		redirect(r, index, "");
	else if (strncmp(rest, "/simple/", 8) == 0)
		route_simple(r, index, rest + 8);
	else if (strncmp(rest, "/files/", 7) == 0)
		route_file(r, rest + 7);
	else if (strncmp(rest, "/pypi/", 6) == 0)
		route_json(r, index, rest + 6);
	else if (strcmp(rest, "/") == 0 || !*rest)
		found(r, ROUTE_UPLOAD);
	else if (strncmp(rest, "/+yank/", 7) == 0)
		route_release(r, ROUTE_YANK, rest + 7);
	else if (strncmp(rest, "/+unyank/", 9) == 0)
		route_release(r, ROUTE_UNYANK, rest + 9);
	else if (strncmp(rest, "/+release/", 10) == 0)
		route_release(r, ROUTE_REMOVE, rest + 10);
	else
		fail(r, 404, "no such page");
method:
	if (r->kind == ROUTE_ERROR)
		return;
	if (!method_ok(r, method)) {
		r->location[0] = '\0';
		fail(r, 405, "method not allowed");
		return;
	}
	/* a read of the index's root is its landing page, at the slashed
	 * path (an upload takes either) */
	if (r->kind == ROUTE_UPLOAD && strcmp(method, "POST") != 0) {
		if (*rest)
			found(r, ROUTE_INDEX_HOME);
		else
			moved(r, "/%s/", index);
	}
}
