#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "fcgi/admin/landing.h"
#include "fcgi/admin/out.h"
#include "fcgi/pypi/hosted.h"

/* The most bytes a landing page or /+api may take. */
#define MAX_LANDING (1 << 20)

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
	out_add(&o, "{\"larder\": {\"version\": \"" PACKAGE_VERSION "\"");
	out_add(&o, ", \"url\": ");
	out_jstr(&o, b);
	out_add(&o, "}, \"indexes\": [");
	for (size_t i = 0; i < c->nindex; i++) {
		const struct conf_index *ix = &c->index[i];
		int target = hosted_target(c, (int)i);

		out_add(&o, i ? ", {\"name\": " : "{\"name\": ");
		out_jstr(&o, ix->name);
		out_addf(&o, ", \"type\": \"%s\"", type_name(ix->type));
		out_addf(&o, ", \"read\": \"%s\"",
		     ix->read == CONF_READ_TOKEN ? "token" : "anonymous");
		if (ix->type == CONF_INDEX_CACHE) {
			public_url(ix->upstream, up, sizeof(up));
			out_add(&o, ", \"upstream\": ");
			out_jstr(&o, up);
		}
		if (ix->type == CONF_INDEX_VIRTUAL) {
			out_add(&o, ", \"layers\": [");
			for (size_t k = 0; k < ix->nlayers; k++) {
				out_add(&o, k ? ", " : "");
				out_jstr(&o, c->index[ix->layer[k]].name);
			}
			out_addf(&o, "], \"policy\": \"%s\"",
			     policy_name(ix->policy));
		}
		if (ix->type == CONF_INDEX_HOSTED)
			out_addf(&o, ", \"volatile\": %s",
			     ix->is_volatile ? "true" : "false");
		out_add(&o, ", \"url\": ");
		out_addf(&o, "\"%s/%s/\"", b, ix->name);
		out_addf(&o, ", \"simple_url\": \"%s/%s/simple/\"", b, ix->name);
		out_addf(&o, ", \"json_url\": \"%s/%s/pypi/\"", b, ix->name);
		if (target >= 0)
			out_addf(&o, ", \"upload_url\": \"%s/%s/\"", b, ix->name);
		out_add(&o, "}");
	}
	out_add(&o, "], \"registries\": [");
	for (size_t i = 0; i < c->nregistry; i++) {
		const struct conf_registry *rg = &c->registry[i];

		out_add(&o, i ? ", {\"name\": " : "{\"name\": ");
		out_jstr(&o, rg->name);
		public_url(rg->upstream, up, sizeof(up));
		out_add(&o, ", \"upstream\": ");
		out_jstr(&o, up);
		out_addf(&o, ", \"default\": %s", rg->is_default ? "true" : "false");
		out_addf(&o, ", \"image_prefix\": \"%s/%s/\"", image_host(b),
		     rg->name);
		out_add(&o, "}");
	}
	out_add(&o, "]}\n");
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
	out_add(o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
	       "<meta charset=\"utf-8\">\n<title>");
	out_html(o, title);
	out_add(o, "</title>\n");
	out_add(o, style);
	out_add(o, "</head>\n<body>\n<h1>");
	out_html(o, title);
	out_add(o, "</h1>\n");
}

static void foot(struct out *o, const char *b)
{
	out_add(o, "<p><a href=\"");
	out_html(o, b);
	out_add(o, "/\">all indexes</a> &middot; <a href=\"");
	out_html(o, b);
	out_add(o, "/+search\">search</a> &middot; <a href=\"");
	out_html(o, b);
	out_add(o, "/+status\">status</a> &middot; <a href=\"");
	out_html(o, b);
	out_add(o, "/+api\">/+api</a> &middot; larder " PACKAGE_VERSION
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
		out_add(o, "a cache of <code>");
		out_html(o, up);
		out_add(o, "</code>");
		break;
	case CONF_INDEX_HOSTED:
		out_add(o, ix->is_volatile ? "a hosted index (volatile: files may "
			 "be replaced and deleted)" : "a hosted index");
		break;
	case CONF_INDEX_VIRTUAL:
		out_add(o, "a virtual index over ");
		for (size_t k = 0; k < ix->nlayers; k++) {
			out_add(o, k ? ", <code>" : "<code>");
			out_html(o, c->index[ix->layer[k]].name);
			out_add(o, "</code>");
		}
		out_addf(o, " (policy %s)", policy_name(ix->policy));
		break;
	}
	if (ix->read == CONF_READ_TOKEN)
		out_add(o, "; reading it takes a token");
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
	out_add(&o, "<p>A caching proxy for Python package indexes and container "
		"registries.</p>\n<h2>Python package indexes</h2>\n<table>\n"
		"<tr><th>index</th><th>what</th><th>index URL</th></tr>\n");
	for (size_t i = 0; i < c->nindex; i++) {
		const struct conf_index *ix = &c->index[i];

		out_add(&o, "<tr><td><a href=\"");
		out_html(&o, b);
		out_add(&o, "/");
		out_html(&o, ix->name);
		out_add(&o, "/\">");
		out_html(&o, ix->name);
		out_add(&o, "</a></td><td>");
		what(&o, c, ix);
		out_add(&o, "</td><td><code>");
		out_html(&o, b);
		out_add(&o, "/");
		out_html(&o, ix->name);
		out_add(&o, "/simple/</code></td></tr>\n");
	}
	out_add(&o, "</table>\n");
	if (c->nregistry)
		out_add(&o, "<h2>Container registries</h2>\n<table>\n<tr><th>"
			"registry</th><th>upstream</th><th>pull</th></tr>\n");
	for (size_t i = 0; i < c->nregistry; i++) {
		const struct conf_registry *rg = &c->registry[i];
		char up[2048];

		public_url(rg->upstream, up, sizeof(up));
		if (rg->is_default)
			def = (int)i;
		out_add(&o, "<tr><td>");
		out_html(&o, rg->name);
		out_add(&o, rg->is_default ? " (default)" : "");
		out_add(&o, "</td><td><code>");
		out_html(&o, up);
		out_add(&o, "</code></td><td><code>docker pull ");
		out_html(&o, image_host(b));
		out_add(&o, "/");
		out_html(&o, rg->name);
		out_add(&o, "/IMAGE:TAG</code></td></tr>\n");
	}
	if (c->nregistry) {
		out_add(&o, "</table>\n");
		if (plain) {
			/* every client assumes https for a registry */
			out_add(&o, "<p>This larder speaks plain http: docker "
				"needs <code>");
			out_html(&o, host);
			out_add(&o, "</code> among its <code>insecure-registries"
				"</code> (below), podman and skopeo "
				"<code>--tls-verify=false</code>, containerd "
				"an <code>http://</code> server in its "
				"<code>hosts.toml</code>.</p>\n");
		}
		out_add(&o, "<p>With skopeo:</p>\n<pre>skopeo copy ");
		out_add(&o, plain ? "--src-tls-verify=false docker://" :
				"docker://");
		out_html(&o, image_host(b));
		out_add(&o, "/");
		out_html(&o, c->registry[def >= 0 ? def : 0].name);
		out_add(&o, "/library/alpine:latest dir:alpine</pre>\n");
	}
	if (def >= 0) {
		out_add(&o, "<p>As Docker's mirror (the default registry), in "
			"<code>/etc/docker/daemon.json</code>:</p>\n<pre>"
			"{&quot;registry-mirrors&quot;: [&quot;");
		out_html(&o, b);
		out_add(&o, "&quot;]");
		if (plain) {
			out_add(&o, ",\n &quot;insecure-registries&quot;: "
				"[&quot;");
			out_html(&o, host);
			out_add(&o, "&quot;]");
		}
		out_add(&o, "}</pre>\n");
	} else if (plain && c->nregistry) {
		out_add(&o, "<p>For docker, in <code>/etc/docker/daemon.json"
			"</code>:</p>\n<pre>{&quot;insecure-registries&quot;: "
			"[&quot;");
		out_html(&o, host);
		out_add(&o, "&quot;]}</pre>\n");
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
	out_add(o, "<h3>");
	out_html(o, title);
	out_add(o, "</h3>\n<pre>");
	for (size_t i = 0; lines[i]; i++) {
		const char *s = lines[i], *mark;

		while ((mark = strstr(s, "{URL}")) != NULL) {
			char part[256];

			snprintf(part, sizeof(part), "%.*s", (int)(mark - s), s);
			out_html(o, part);
			out_html(o, url);
			s = mark + 5;
		}
		out_html(o, s);
		out_add(o, "\n");
	}
	out_add(o, "</pre>\n");
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
	out_add(&o, "<p>");
	what(&o, c, ix);
	out_add(&o, ".</p>\n<p>Index URL: <code>");
	out_html(&o, buf_str(&url));
	out_add(&o, "</code> (PEP 503 and PEP 691); the JSON API is under "
		"<code>");
	out_html(&o, buf_str(&up));
	out_add(&o, "pypi/PROJECT/json</code>.</p>\n<h2>Installing</h2>\n");
	setup(&o, "pip", buf_str(&url), pip);
	setup(&o, "uv", buf_str(&url), uv);
	setup(&o, "pdm", buf_str(&url), pdm);
	setup(&o, "poetry", buf_str(&url), poetry);
	if (hosted_target(c, idx) >= 0) {
		out_add(&o, "<h2>Uploading</h2>\n<p>With a token from "
			"<code>larder token add --index ");
		out_html(&o, c->index[hosted_target(c, idx)].name);
		out_add(&o, " --actions upload</code>:</p>\n");
		setup(&o, "twine, uv publish", buf_str(&up), pypirc);
	}
	foot(&o, b);
	reply(r, &o, "text/html; charset=utf-8");
	buf_free(&o.b);
	buf_free(&url);
	buf_free(&up);
	buf_free(&base);
}
