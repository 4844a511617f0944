#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "fcgi/admin/landing.h"
#include "fcgi/pypi/hosted.h"

/* The most bytes a landing page or /+api may take. */
#define MAX_LANDING (1 << 20)

/* A buf and its first error: a page is written straight through and
 * checked once. */
struct out {
	struct buf b;
	int err;
};

static void add(struct out *o, const char *s)
{
	if (!o->err)
		o->err = buf_adds(&o->b, s);
}

static void addf(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void addf(struct out *o, const char *fmt, ...)
{
	va_list ap;

	if (o->err)
		return;
	va_start(ap, fmt);
	o->err = buf_vaddf(&o->b, fmt, ap);
	va_end(ap);
}

/* s escaped for HTML. */
static void html(struct out *o, const char *s)
{
	if (!o->err)
		o->err = buf_add_html(&o->b, s ? s : "");
}

/* s as a JSON string, or null. */
static void jstr(struct out *o, const char *s)
{
	if (!o->err)
		o->err = s ? json_put_string(&o->b, s) : buf_adds(&o->b, "null");
}

/* Copies url to out without the user:password@ it may hold (a private
 * upstream's credentials are not for a public page). */
static void public_url(const char *url, char *out, size_t len)
{
	const char *auth, *at, *end;

	if (!url) /* a hosted or virtual registry has none */
		url = "";
	auth = strstr(url, "://");
	if (!auth) {
		snprintf(out, len, "%s", url);
		return;
	}
	auth += 3;
	end = auth + strcspn(auth, "/?#");
	at = memchr(auth, '@', (size_t)(end - auth));
	if (!at) {
		snprintf(out, len, "%s", url);
		return;
	}
	snprintf(out, len, "%.*s%s", (int)(auth - url), url, at + 1);
}

static const char *type_name(enum conf_index_type t)
{
	return t == CONF_INDEX_CACHE  ? "cache" :
	       t == CONF_INDEX_HOSTED ? "hosted" : "virtual";
}

static const char *policy_name(enum conf_policy p)
{
	return p == CONF_POLICY_PRIVATE_FIRST ? "private-first" :
	       p == CONF_POLICY_FALLBACK      ? "fallback" : "no-fallback";
}

/* The absolute URL of larder's root, no trailing '/': "" on error. */
static int base_of(struct worker *w, struct req *r, struct buf *base)
{
	buf_init(base, 2048 + 300);
	return req_url(r, w->conf->trust_forwarded, "", base);
}

/* The host[:port] of base (scheme://host[:port]{mount}), and the mount,
 * as a docker image name starts: "host:port/mount". */
static const char *image_host(const char *base)
{
	const char *s = strstr(base, "://");

	return s ? s + 3 : base;
}

static void reply(struct req *r, struct out *o, const char *type)
{
	if (o->err) {
		req_error(r, 500, o->err == E2BIG ? "too much configuration to "
			  "show" : strerror(o->err));
		return;
	}
	req_header(r, "Cache-Control", "no-cache");
	req_reply(r, 200, type, o->b.data, o->b.len);
}

void landing_api(struct worker *w, struct req *r)
{
	const struct conf *c = w->conf;
	struct out o = {.err = 0};
	struct buf base;
	char up[2048];
	const char *b;

	buf_init(&o.b, MAX_LANDING);
	o.err = base_of(w, r, &base);
	b = buf_str(&base);
	add(&o, "{\"larder\": {\"version\": \"" PACKAGE_VERSION "\"");
	add(&o, ", \"url\": ");
	jstr(&o, b);
	add(&o, "}, \"indexes\": [");
	for (size_t i = 0; i < c->nindex; i++) {
		const struct conf_index *ix = &c->index[i];
		int target = hosted_target(c, (int)i);

		add(&o, i ? ", {\"name\": " : "{\"name\": ");
		jstr(&o, ix->name);
		addf(&o, ", \"type\": \"%s\"", type_name(ix->type));
		addf(&o, ", \"read\": \"%s\"",
		     ix->read == CONF_READ_TOKEN ? "token" : "anonymous");
		if (ix->type == CONF_INDEX_CACHE) {
			public_url(ix->upstream, up, sizeof(up));
			add(&o, ", \"upstream\": ");
			jstr(&o, up);
		}
		if (ix->type == CONF_INDEX_VIRTUAL) {
			add(&o, ", \"layers\": [");
			for (size_t k = 0; k < ix->nlayers; k++) {
				add(&o, k ? ", " : "");
				jstr(&o, c->index[ix->layer[k]].name);
			}
			addf(&o, "], \"policy\": \"%s\"",
			     policy_name(ix->policy));
		}
		if (ix->type == CONF_INDEX_HOSTED)
			addf(&o, ", \"volatile\": %s",
			     ix->is_volatile ? "true" : "false");
		add(&o, ", \"url\": ");
		addf(&o, "\"%s/%s/\"", b, ix->name);
		addf(&o, ", \"simple_url\": \"%s/%s/simple/\"", b, ix->name);
		addf(&o, ", \"json_url\": \"%s/%s/pypi/\"", b, ix->name);
		if (target >= 0)
			addf(&o, ", \"upload_url\": \"%s/%s/\"", b, ix->name);
		add(&o, "}");
	}
	add(&o, "], \"registries\": [");
	for (size_t i = 0; i < c->nregistry; i++) {
		const struct conf_registry *rg = &c->registry[i];

		add(&o, i ? ", {\"name\": " : "{\"name\": ");
		jstr(&o, rg->name);
		public_url(rg->upstream, up, sizeof(up));
		add(&o, ", \"upstream\": ");
		jstr(&o, up);
		addf(&o, ", \"default\": %s", rg->is_default ? "true" : "false");
		addf(&o, ", \"image_prefix\": \"%s/%s/\"", image_host(b),
		     rg->name);
		add(&o, "}");
	}
	add(&o, "]}\n");
	/* the base is a host a client sent: JSON-safe (req_url checks the
	 * host's characters), but the mount is the web server's */
	if (!o.err && !json_utf8_valid(o.b.data))
		o.err = EINVAL;
	reply(r, &o, "application/json");
	buf_free(&o.b);
	buf_free(&base);
}

static const char style[] =
	"<style>body{font-family:sans-serif;max-width:50em;margin:2em auto;"
	"padding:0 1em;line-height:1.4}pre{background:#f4f4f4;padding:.6em;"
	"overflow-x:auto}td,th{text-align:left;padding:.2em .8em .2em 0}"
	"</style>\n";

static void head(struct out *o, const char *title)
{
	add(o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
	       "<meta charset=\"utf-8\">\n<title>");
	html(o, title);
	add(o, "</title>\n");
	add(o, style);
	add(o, "</head>\n<body>\n<h1>");
	html(o, title);
	add(o, "</h1>\n");
}

static void foot(struct out *o, const char *b)
{
	add(o, "<p><a href=\"");
	html(o, b);
	add(o, "/\">all indexes</a> &middot; <a href=\"");
	html(o, b);
	add(o, "/+search\">search</a> &middot; <a href=\"");
	html(o, b);
	add(o, "/+status\">status</a> &middot; <a href=\"");
	html(o, b);
	add(o, "/+api\">/+api</a> &middot; larder " PACKAGE_VERSION
	       "</p>\n</body>\n</html>\n");
}

/* What index ix is, in a sentence. */
static void what(struct out *o, const struct conf *c,
		 const struct conf_index *ix)
{
	char up[2048];

	switch (ix->type) {
	case CONF_INDEX_CACHE:
		public_url(ix->upstream, up, sizeof(up));
		add(o, "a cache of <code>");
		html(o, up);
		add(o, "</code>");
		break;
	case CONF_INDEX_HOSTED:
		add(o, ix->is_volatile ? "a hosted index (volatile: files may "
			 "be replaced and deleted)" : "a hosted index");
		break;
	case CONF_INDEX_VIRTUAL:
		add(o, "a virtual index over ");
		for (size_t k = 0; k < ix->nlayers; k++) {
			add(o, k ? ", <code>" : "<code>");
			html(o, c->index[ix->layer[k]].name);
			add(o, "</code>");
		}
		addf(o, " (policy %s)", policy_name(ix->policy));
		break;
	}
	if (ix->read == CONF_READ_TOKEN)
		add(o, "; reading it takes a token");
}

void landing_home(struct worker *w, struct req *r)
{
	const struct conf *c = w->conf;
	struct out o = {.err = 0};
	struct buf base;
	const char *b;
	char host[512];
	int def = -1, plain;

	buf_init(&o.b, MAX_LANDING);
	o.err = base_of(w, r, &base);
	b = buf_str(&base);
	plain = strncmp(b, "http://", 7) == 0;
	/* host[:port] alone, as insecure-registries takes it */
	snprintf(host, sizeof(host), "%.*s",
		 (int)strcspn(image_host(b), "/"), image_host(b));
	head(&o, "larder");
	add(&o, "<p>A caching proxy for Python package indexes and container "
		"registries.</p>\n<h2>Python package indexes</h2>\n<table>\n"
		"<tr><th>index</th><th>what</th><th>index URL</th></tr>\n");
	for (size_t i = 0; i < c->nindex; i++) {
		const struct conf_index *ix = &c->index[i];

		add(&o, "<tr><td><a href=\"");
		html(&o, b);
		add(&o, "/");
		html(&o, ix->name);
		add(&o, "/\">");
		html(&o, ix->name);
		add(&o, "</a></td><td>");
		what(&o, c, ix);
		add(&o, "</td><td><code>");
		html(&o, b);
		add(&o, "/");
		html(&o, ix->name);
		add(&o, "/simple/</code></td></tr>\n");
	}
	add(&o, "</table>\n");
	if (c->nregistry)
		add(&o, "<h2>Container registries</h2>\n<table>\n<tr><th>"
			"registry</th><th>upstream</th><th>pull</th></tr>\n");
	for (size_t i = 0; i < c->nregistry; i++) {
		const struct conf_registry *rg = &c->registry[i];
		char up[2048];

		public_url(rg->upstream, up, sizeof(up));
		if (rg->is_default)
			def = (int)i;
		add(&o, "<tr><td>");
		html(&o, rg->name);
		add(&o, rg->is_default ? " (default)" : "");
		add(&o, "</td><td><code>");
		html(&o, up);
		add(&o, "</code></td><td><code>docker pull ");
		html(&o, image_host(b));
		add(&o, "/");
		html(&o, rg->name);
		add(&o, "/IMAGE:TAG</code></td></tr>\n");
	}
	if (c->nregistry) {
		add(&o, "</table>\n");
		if (plain) {
			/* every client assumes https for a registry */
			add(&o, "<p>This larder speaks plain http: docker "
				"needs <code>");
			html(&o, host);
			add(&o, "</code> among its <code>insecure-registries"
				"</code> (below), podman and skopeo "
				"<code>--tls-verify=false</code>, containerd "
				"an <code>http://</code> server in its "
				"<code>hosts.toml</code>.</p>\n");
		}
		add(&o, "<p>With skopeo:</p>\n<pre>skopeo copy ");
		add(&o, plain ? "--src-tls-verify=false docker://" :
				"docker://");
		html(&o, image_host(b));
		add(&o, "/");
		html(&o, c->registry[def >= 0 ? def : 0].name);
		add(&o, "/library/alpine:latest dir:alpine</pre>\n");
	}
	if (def >= 0) {
		add(&o, "<p>As Docker's mirror (the default registry), in "
			"<code>/etc/docker/daemon.json</code>:</p>\n<pre>"
			"{&quot;registry-mirrors&quot;: [&quot;");
		html(&o, b);
		add(&o, "&quot;]");
		if (plain) {
			add(&o, ",\n &quot;insecure-registries&quot;: "
				"[&quot;");
			html(&o, host);
			add(&o, "&quot;]");
		}
		add(&o, "}</pre>\n");
	} else if (plain && c->nregistry) {
		add(&o, "<p>For docker, in <code>/etc/docker/daemon.json"
			"</code>:</p>\n<pre>{&quot;insecure-registries&quot;: "
			"[&quot;");
		html(&o, host);
		add(&o, "&quot;]}</pre>\n");
	}
	foot(&o, b);
	reply(r, &o, "text/html; charset=utf-8");
	buf_free(&o.b);
	buf_free(&base);
}

/* A <pre> of one setup: title, then lines with url for each "{URL}" (a
 * mark no setup's own text has: PIP_INDEX_URL stays as it is). */
static void setup(struct out *o, const char *title, const char *url,
		  const char *const *lines)
{
	add(o, "<h3>");
	html(o, title);
	add(o, "</h3>\n<pre>");
	for (size_t i = 0; lines[i]; i++) {
		const char *s = lines[i], *mark;

		while ((mark = strstr(s, "{URL}")) != NULL) {
			char part[256];

			snprintf(part, sizeof(part), "%.*s", (int)(mark - s), s);
			html(o, part);
			html(o, url);
			s = mark + 5;
		}
		html(o, s);
		add(o, "\n");
	}
	add(o, "</pre>\n");
}

void landing_index(struct worker *w, struct req *r, int idx)
{
	static const char *const pip[] = {
		"pip install --index-url {URL} PACKAGE", "",
		"# ~/.config/pip/pip.conf (or PIP_INDEX_URL={URL})", "[global]",
		"index-url = {URL}", NULL};
	static const char *const uv[] = {
		"uv pip install --index-url {URL} PACKAGE", "",
		"# uv.toml, or [[tool.uv.index]] in pyproject.toml "
		"(or UV_DEFAULT_INDEX={URL})",
		"[[index]]", "url = \"{URL}\"", "default = true", NULL};
	static const char *const pdm[] = {
		"pdm config pypi.url {URL}", "", "# or in pyproject.toml",
		"[[tool.pdm.source]]", "name = \"pypi\"", "url = \"{URL}\"",
		NULL};
	static const char *const poetry[] = {
		"poetry source add --priority=primary larder {URL}", "",
		"# which writes to pyproject.toml", "[[tool.poetry.source]]",
		"name = \"larder\"", "url = \"{URL}\"", "priority = \"primary\"",
		NULL};
	static const char *const pypirc[] = {
		"# ~/.pypirc", "[distutils]", "index-servers = larder", "",
		"[larder]", "repository = {URL}", "username = __token__",
		"password = lt_...", "", "twine upload --repository larder "
		"dist/*", "# or: uv publish --publish-url {URL} --username "
		"__token__ --password lt_... dist/*", NULL};
	const struct conf *c = w->conf;
	const struct conf_index *ix = &c->index[idx];
	struct out o = {.err = 0};
	struct buf base, url, up;
	const char *b;

	buf_init(&o.b, MAX_LANDING);
	buf_init(&url, 4096);
	buf_init(&up, 4096);
	o.err = base_of(w, r, &base);
	b = buf_str(&base);
	if (!o.err)
		o.err = buf_addf(&url, "%s/%s/simple/", b, ix->name);
	if (!o.err)
		o.err = buf_addf(&up, "%s/%s/", b, ix->name);
	head(&o, ix->name);
	add(&o, "<p>");
	what(&o, c, ix);
	add(&o, ".</p>\n<p>Index URL: <code>");
	html(&o, buf_str(&url));
	add(&o, "</code> (PEP 503 and PEP 691); the JSON API is under "
		"<code>");
	html(&o, buf_str(&up));
	add(&o, "pypi/PROJECT/json</code>.</p>\n<h2>Installing</h2>\n");
	setup(&o, "pip", buf_str(&url), pip);
	setup(&o, "uv", buf_str(&url), uv);
	setup(&o, "pdm", buf_str(&url), pdm);
	setup(&o, "poetry", buf_str(&url), poetry);
	if (hosted_target(c, idx) >= 0) {
		add(&o, "<h2>Uploading</h2>\n<p>With a token from "
			"<code>larder token add --index ");
		html(&o, c->index[hosted_target(c, idx)].name);
		add(&o, " --actions upload</code>:</p>\n");
		setup(&o, "twine, uv publish", buf_str(&up), pypirc);
	}
	foot(&o, b);
	reply(r, &o, "text/html; charset=utf-8");
	buf_free(&o.b);
	buf_free(&url);
	buf_free(&up);
	buf_free(&base);
}
