#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/http/token.h"
#include "common/oci/manifest.h"
#include "common/oci/ref.h"
#include "common/oci/tags.h"
#include "common/url.h"
#include "fcgi/oci/access.h"
#include "fcgi/oci/bearer.h"
#include "fcgi/oci/gate.h"
#include "fcgi/oci/hosted.h"
#include "fcgi/oci/oci.h"
#include "fcgi/oci/push.h"
#include "fcgi/oci/refs.h"
#include "fcgi/server/fetcher.h"
#include "fcgi/server/send.h"
#include "storage/blob.h"
#include "storage/flight.h"
#include "storage/stats.h"

/* Manifests and tag lists smaller than this go out from larder itself
 * (fcgi/server/send.h, inline_under): most manifests are a few KiB. */
#define SMALL_BODY (64 * 1024)

/* What larder asks a registry for, before what the client asked for:
 * every kind of manifest it can read, so that a tag is stored once, as
 * the upstream's richest form (an index where there is one). */
static const char manifest_accept[] =
    "application/vnd.oci.image.index.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.v2+json";

/* One request's registry and repository. */
struct oci_ctx {
	const struct conf_registry *reg;
	int named_ri, ri; /* the registry the client named, and the one
	                     that serves (a virtual one's layer) */
	const char *name; /* as the client named it, registry prefix
	                     included (for Link headers) */
	struct oci_route rt;
	struct oci_up up;
};

void oci_fail(struct req *r, int status, const char *code,
              const char *message)
{
	char shown[2048];
	struct buf b;

	if (r->started) {
		req_abort(r);
		return;
	}
	/* a message naming an upstream URL: never its credentials */
	message = url_redact(message, shown, sizeof(shown));
	buf_init(&b, 4096);
	if (oci_error_body(&b, code, message)) {
		buf_free(&b);
		req_error(r, status, message);
		return;
	}
	req_header(r, "Cache-Control", "no-store");
	req_reply(r, status, OCI_JSON_TYPE, b.data, b.len);
	buf_free(&b);
}

/* Answers a failed lookup (rc from oci_ref_get) with the spec's error. */
static void fail_rc(struct req *r, int rc, const char *unknown_code,
                    const char *err)
{
	switch (rc) {
	case ENOENT:
		oci_fail(r, 404, unknown_code,
		     *err ? err : "unknown to the registry");
		break;
	case EACCES:
		oci_fail(r, 401, "UNAUTHORIZED", err);
		break;
	case EBUSY:
		oci_fail(r, 429, "TOOMANYREQUESTS", err);
		break;
	case ENETDOWN:
		oci_fail(r, 503, "UNAVAILABLE", err);
		break;
	case EBADMSG:
	case ETIMEDOUT:
	default:
		oci_fail(r, rc == ETIMEDOUT ? 504 : 502, "UNKNOWN", err);
		break;
	}
}

/* Reads a stored blob of at most max bytes into b (the caller frees it,
 * whatever happens). */
static int read_blob(struct worker *w, const char *sha, size_t max,
                     struct buf *b)
{
	buf_init(b, max);
	return blob_read(w->conf->data_dir, sha, b);
}

/* How send_row answers: a row by digest (immutable), with its
 * Docker-Content-Digest, and whether an nginx in front may keep the answer
 * for every client (not when it hangs on this client's Accept lines, which
 * nginx 1.22 cannot key on whole). */
enum {
	ROW_BY_DIGEST = 1,
	ROW_DIGEST = 2,
	ROW_SHARED = 4,
};

/* Sends the stored body a row names. A by-digest row never changes; any
 * other is fresh until its row goes stale, which an nginx in front that
 * keeps these answers (conf/nginx.conf, LARDER_PAGE_CACHE) is told. */
static void send_row(struct worker *w, struct req *r,
                     const struct conf_registry *reg,
                     const struct db_oci_ref *row, int how)
{
	int by_digest = how & ROW_BY_DIGEST;
	struct send_opts o = {.content_type = row->media_type,
	                      .inline_under = SMALL_BODY};

	o.cache_control = by_digest ? SEND_IMMUTABLE : "no-cache";
	/* by digest nginx keeps it for the registry's cache_ttl, not the
	 * year the client may: a policy added by a reload denies it that
	 * soon (docs/policy.md) */
	o.expires = by_digest ? (long long)time(NULL) + reg->cache_ttl :
	                        row->fetched_at + row->ttl;
	if (o.expires <= time(NULL))
		o.expires = 1; /* stale: a date in the past */
	if (!(how & ROW_SHARED))
		o.expires = 0; /* (this client's: no-cache says it all) */
	o.inline_body = o.front_cache = req_env_on(r, "LARDER_PAGE_CACHE");
	/* a stale one whole: nginx revalidating its copy would keep its own
	 * headers from a 304 (X-Larder-Cache: STALE among them) */
	o.whole = r->cache && strcmp(r->cache, "STALE") == 0;
	/* a HEAD's answer only where the web server's key holds the method
	 * (another location's cache would hand the empty answer to a GET) */
	o.front_head = req_env_on(r, "LARDER_HEAD_KEYED");
	if (how & ROW_DIGEST)
		req_header(r, "Docker-Content-Digest", "sha256:%s",
		           row->sha256);
	if (send_blob(w, r, row->sha256, &o))
		oci_fail(r, 500, "UNKNOWN", "the stored body is missing");
}

/* Looks up manifest ref (a tag, or a sha256 digest) into row, asking the
 * upstream with accept on a miss. Returns 0, or -1 when it answered r
 * with the error. */
static int get_manifest(struct worker *w, struct req *r, struct oci_ctx *x,
                        const char *ref, int by_digest, const char *accept,
                        struct db_oci_ref *row)
{
	char what[OCI_MAX_DIGEST + 16], err[1024] = "";
	struct oci_ref_want q;
	int rc;

	memset(&q, 0, sizeof(q));
	q.ref = ref;
	q.accept = accept;
	q.immutable = by_digest;
	q.head_check = !by_digest;
	q.manifest = 1;
	q.expect = by_digest ? ref + 7 : "";
	snprintf(what, sizeof(what), "manifests/%s", ref);
	if (oci_up_url(&x->up, what, q.url, sizeof(q.url))) {
		oci_fail(r, 400, "NAME_INVALID", "name too long");
		return -1;
	}
	rc = oci_ref_get(w, x->reg, &x->up, &q, row, &r->cache, err,
	                 sizeof(err));
	if (rc) {
		fail_rc(r, rc, "MANIFEST_UNKNOWN", err);
		return -1;
	}
	return 0;
}

/* Answers a manifest request of a client that accepts client (its
 * Accept lines, joined). */
static void manifest_for(struct worker *w, struct req *r, struct oci_ctx *x,
                         const char *client)
{
	char accept[2048], err[1024] = "", child[OCI_MAX_DIGEST + 1];
	struct db_oci_ref row;
	struct oci_manifest m;
	enum oci_media media;
	struct buf body;
	int rc, i, is_index;

	if (x->rt.by_digest && strncmp(x->rt.ref, "sha256:", 7) != 0) {
		oci_fail(r, 400, "UNSUPPORTED", "only sha256 digests are cached");
		return;
	}
	snprintf(accept, sizeof(accept), "%s%s%.1024s", manifest_accept,
	         *client ? ", " : "", client);
	if (get_manifest(w, r, x, x->rt.ref, x->rt.by_digest, accept, &row))
		return;
	/* a digest names these bytes and no others; a tag may stand for
	 * the child a client can take */
	media = oci_media_of(row.media_type);
	is_index = media == OCI_MEDIA_IMAGE_INDEX ||
	           media == OCI_MEDIA_DOCKER_LIST;
	if (x->rt.by_digest || !is_index || oci_media_accepted(client, media)) {
		/* by tag, the same for every client unless it is an index
		 * (which another client may not take) or a virtual
		 * registry's (a push to its hosted layer moves the name
		 * there at once) */
		send_row(w, r, x->reg, &row,
		         (x->rt.by_digest ? ROW_BY_DIGEST | ROW_SHARED : 0) |
		         (!is_index && x->named_ri == x->ri ? ROW_SHARED : 0) |
		         ROW_DIGEST);
		return;
	}
	/* a client that cannot take an index gets linux/amd64 */
	rc = read_blob(w, row.sha256, OCI_MAX_MANIFEST, &body);
	if (!rc)
		rc = oci_manifest_parse(body.data, body.len, row.media_type, &m,
		                        err, sizeof(err));
	buf_free(&body);
	if (rc) {
		oci_fail(r, 502, "UNKNOWN", "cannot read the stored index");
		return;
	}
	i = oci_index_pick(&m, "linux", "amd64", "");
	if (i >= 0)
		snprintf(child, sizeof(child), "%s", m.desc[i].digest);
	oci_manifest_free(&m);
	if (i < 0 || strncmp(child, "sha256:", 7) != 0) {
		oci_fail(r, 404, "MANIFEST_UNKNOWN",
		     "the index has no linux/amd64 manifest, and the client "
		     "does not accept an index");
		return;
	}
	if (!get_manifest(w, r, x, child, 1, accept, &row))
		send_row(w, r, x->reg, &row, ROW_DIGEST); /* this client's */
}

static void manifest(struct worker *w, struct req *r, struct oci_ctx *x)
{
	struct buf accept;

	buf_init(&accept, 8192);
	if (req_env_joined(r, "HTTP_ACCEPT", &accept))
		oci_fail(r, 400, "UNSUPPORTED", "Accept header too long");
	else
		manifest_for(w, r, x, buf_str(&accept));
	buf_free(&accept);
}

/* Answers a page of the stored tag list row: the n tags after last, with
 * a Link to the next page when more follow. */
static void tags_page(struct worker *w, struct req *r, struct oci_ctx *x,
                      const struct db_oci_ref *row, const char *last, long n)
{
	char err[200], next[OCI_MAX_TAG + 1];
	struct oci_tags t = {0};
	struct buf body, out;
	int rc;

	rc = read_blob(w, row->sha256, 64 << 20, &body);
	if (!rc)
		rc = oci_tags_add(&t, body.data, body.len, err, sizeof(err));
	if (!rc)
		oci_gate_tags(w, x->named_ri, x->ri, x->up.name, &t);
	buf_free(&body);
	buf_init(&out, 64 << 20);
	if (!rc)
		rc = oci_tags_render(&t, last, n, &out, next);
	oci_tags_free(&t);
	if (rc) {
		buf_free(&out);
		oci_fail(r, 500, "UNKNOWN", "cannot read the stored tag list");
		return;
	}
	if (*next)
		req_header(r, "Link", "</v2/%s/tags/list?n=%ld&last=%s>; "
		           "rel=\"next\"", x->name, n, next);
	req_header(r, "Cache-Control", "no-cache");
	req_reply(r, 200, OCI_JSON_TYPE, out.data, out.len);
	buf_free(&out);
}

static void tags(struct worker *w, struct req *r, struct oci_ctx *x)
{
	char last[OCI_MAX_TAG + 1], err[1024] = "";
	struct db_oci_ref row;
	struct oci_ref_want q;
	long n;
	int rc;

	if (oci_tags_query(r->query, &n, last)) {
		oci_fail(r, 400, "PAGINATION_NUMBER_INVALID",
		     "n must be a number and last a tag");
		return;
	}
	/* one row for the whole list, however the upstream pages it, and
	 * every client's page cut from it */
	memset(&q, 0, sizeof(q));
	q.ref = "/tags/list";
	q.expect = "";
	q.accept = OCI_JSON_TYPE;
	q.media_type = OCI_JSON_TYPE;
	q.tag_list = 1;
	if (oci_up_url(&x->up, "tags/list", q.url, sizeof(q.url))) {
		oci_fail(r, 400, "NAME_INVALID", "name too long");
		return;
	}
	rc = oci_ref_get(w, x->reg, &x->up, &q, &row, &r->cache, err,
	                 sizeof(err));
	if (rc) {
		fail_rc(r, rc, "NAME_UNKNOWN", err);
		return;
	}
	/* under a policy the list is read, to leave its denied tags out
	 * (and answered no-cache: nginx keeps no copy) */
	if (n >= 0 || *last || oci_gate_any(w, x->named_ri) ||
	    oci_gate_any(w, x->ri))
		tags_page(w, r, x, &row, last, n);
	else /* (a virtual registry's moves at a push, as a tag does) */
		send_row(w, r, x->reg, &row,
		         x->named_ri == x->ri ? ROW_SHARED : 0);
}

static void referrers(struct worker *w, struct req *r, struct oci_ctx *x)
{
	char type[OCI_MAX_MEDIA_TYPE + 1], esc[3 * OCI_MAX_MEDIA_TYPE + 1];
	char ref[OCI_MAX_DIGEST + OCI_MAX_MEDIA_TYPE + 16];
	char what[sizeof(esc) + OCI_MAX_DIGEST + 32], tag[96], err[1024] = "";
	struct db_oci_ref row;
	struct oci_ref_want q;
	int rc;

	if (strncmp(x->rt.ref, "sha256:", 7) != 0) {
		oci_fail(r, 400, "UNSUPPORTED", "only sha256 digests are cached");
		return;
	}
	if (oci_referrers_query(r->query, type)) {
		oci_fail(r, 400, "UNSUPPORTED",
		     "artifactType must be a media type");
		return;
	}
	memset(&q, 0, sizeof(q));
	snprintf(ref, sizeof(ref), "/referrers/%s?%s", x->rt.ref, type);
	oci_query_escape(type, esc, sizeof(esc));
	snprintf(what, sizeof(what), "referrers/%s%s%s", x->rt.ref,
	         *type ? "?artifactType=" : "", esc);
	q.ref = ref;
	q.expect = "";
	q.accept = OCI_INDEX_TYPE;
	q.media_type = OCI_INDEX_TYPE;
	q.artifact_type = type;
	snprintf(tag, sizeof(tag), "manifests/sha256-%s", x->rt.ref + 7);
	if (oci_up_url(&x->up, what, q.url, sizeof(q.url)) ||
	    oci_up_url(&x->up, tag, q.fallback, sizeof(q.fallback))) {
		oci_fail(r, 400, "NAME_INVALID", "name too long");
		return;
	}
	rc = oci_ref_get(w, x->reg, &x->up, &q, &row, &r->cache, err,
	                 sizeof(err));
	if (rc) {
		fail_rc(r, rc, "MANIFEST_UNKNOWN", err);
		return;
	}
	if (*type) /* larder applies it, whatever the upstream did */
		req_header(r, "OCI-Filters-Applied", "artifactType");
	send_row(w, r, x->reg, &row, ROW_SHARED);
}

/* Asks the upstream (a HEAD) whether the repository holds blob hex, and
 * records it when it does. Returns 0, ENODATA when it does not, or an
 * errno with the reason in err. */
static int confirm(struct worker *w, struct oci_ctx *x, const char *url,
                   const char *hex, char *err, size_t errlen)
{
	long long size = -1;
	int rc = oci_up_ready(w, &x->up, url, 0, err, errlen);

	if (!rc)
		rc = fetch_head(&x->up.o, url, &size, err, errlen);
	if (!rc)
		db_oci_blob_put(w->db, x->reg->name, x->up.name, hex, size);
	return rc;
}

/* Answers a HEAD for a blob the store does not have from an upstream
 * HEAD: nothing is downloaded. */
static void blob_head(struct worker *w, struct req *r, struct oci_ctx *x,
                      const char *url, const char *hex)
{
	long long size = -1;
	char err[1024] = "";
	int rc;

	if (db_oci_blob_get(w->db, x->reg->name, x->up.name, hex, &size) ||
	    size < 0) {
		rc = confirm(w, x, url, hex, err, sizeof(err));
		if (!rc)
			db_oci_blob_get(w->db, x->reg->name, x->up.name, hex,
			                &size);
	} else {
		rc = 0;
	}
	if (rc == ENODATA) {
		oci_fail(r, 404, "BLOB_UNKNOWN", "the upstream has no such blob");
		return;
	}
	if (rc) {
		fail_rc(r, rc == EACCES || rc == ENETDOWN ? rc : EREMOTEIO,
		        "BLOB_UNKNOWN", err);
		return;
	}
	r->cache = "MISS";
	req_header(r, "Content-Type", "application/octet-stream");
	req_header(r, "Docker-Content-Digest", "sha256:%s", hex);
	if (size >= 0)
		req_header(r, "Content-Length", "%lld", size);
	req_header(r, "ETag", "\"%s\"", hex);
	req_start(r, 200);
}

/* Records, in the process that fetched it, that the repository holds the
 * blob (fsck counts the row as the blob's reference). */
static void blob_stored(struct db *db, const char *sha256, long long size,
                        void *ctx)
{
	const struct oci_ctx *x = ctx;

	db_oci_blob_put(db, x->reg->name, x->up.name, sha256, size);
}

static void blob(struct worker *w, struct req *r, struct oci_ctx *x)
{
	/* a warm blob's HEAD from larder itself, its GET from the web server */
	struct send_opts so = {.content_type = "application/octet-stream",
	                       .cache_control = SEND_IMMUTABLE,
	                       .inline_under = 1};
	const char *hex = x->rt.ref + 7;
	char key[FLIGHT_KEY_MAX + 1], url[2400], what[300], sha[65];
	char err[1024] = "";
	struct fetcher_want want;
	size_t mark;
	int rc, known;

	if (strncmp(x->rt.ref, "sha256:", 7) != 0) {
		oci_fail(r, 400, "UNSUPPORTED", "only sha256 digests are cached");
		return;
	}
	snprintf(what, sizeof(what), "blobs/%s", x->rt.ref);
	if (oci_up_url(&x->up, what, url, sizeof(url))) {
		oci_fail(r, 400, "NAME_INVALID", "name too long");
		return;
	}
	/* only what this registry was seen to hold: the store also keeps
	 * uploaded packages and page renderings, which a digest must not
	 * reach from here. Bytes it holds for something else are served
	 * once the upstream says this repository has them (a HEAD). */
	known = db_oci_blob_known(w->db, x->reg->name, hex) == 0;
	if (!known && send_stored(w, hex)) {
		rc = confirm(w, x, url, hex, err, sizeof(err));
		if (rc == ENODATA) {
			oci_fail(r, 404, "BLOB_UNKNOWN",
			     "the upstream has no such blob");
			return;
		}
		if (rc) {
			fail_rc(r, rc == EACCES ? EACCES : EREMOTEIO,
			        "BLOB_UNKNOWN", err);
			return;
		}
		known = db_oci_blob_known(w->db, x->reg->name, hex) == 0;
	}
	/* (a warm blob: one look in the database, not two) */
	if (known && send_stored(w, hex)) {
		/* behind nginx's cache of them (conf/nginx.conf), a warm
		 * blob's HEAD, and a small one's GET, are the same for every
		 * client allowed to read it: kept there for the registry's
		 * cache_ttl, as a tag is. A HEAD's answer only where the
		 * web server says its key holds the method (another
		 * location's cache would hand the empty answer to a GET) */
		if (req_env_on(r, "LARDER_PAGE_CACHE")) {
			so.front_small = 1;
			so.front_head = req_env_on(r, "LARDER_HEAD_KEYED");
			so.front_until = (long long)time(NULL) +
					 x->reg->cache_ttl - 1;
		}
		mark = req_header_mark(r);
		r->cache = "HIT";
		req_header(r, "Docker-Content-Digest", "%s", x->rt.ref);
		rc = send_blob(w, r, hex, &so);
		if (rc != ENOENT) {
			if (rc)
				oci_fail(r, 500, "UNKNOWN",
				     "cannot read the stored blob");
			return;
		}
		/* evicted between the look and the open: a miss after all */
		req_header_rewind(r, mark);
		r->cache = NULL;
	}
	if (r->head) {
		blob_head(w, r, x, url, hex);
		return;
	}
	memset(&want, 0, sizeof(want));
	flight_key(key, "blob:%s", hex);
	want.key = key;
	want.url = url;
	want.expect = hex;
	want.opts = &x->up.o;
	want.content_type = "application/octet-stream";
	known = db_oci_blob_get(w->db, x->reg->name, x->up.name, hex,
	                        &want.size) == 0;
	if (!known)
		want.size = -1;
	want.stored = known ? NULL : blob_stored;
	want.ctx = x;
	for (int attempt = 0; attempt < 2; attempt++) {
		rc = oci_up_ready(w, &x->up, url, attempt, err, sizeof(err));
		if (rc)
			break;
		mark = req_header_mark(r);
		req_header(r, "Docker-Content-Digest", "%s", x->rt.ref);
		rc = fetcher_serve(w, r, &want, sha, err, sizeof(err));
		if (rc) /* the error goes out without it */
			req_header_rewind(r, mark);
		if (rc != EACCES)
			break;
	}
	if (rc == EEXIST) {
		r->cache = "HIT";
		req_header(r, "Docker-Content-Digest", "%s", x->rt.ref);
		if (send_blob(w, r, hex, &so))
			oci_fail(r, 500, "UNKNOWN", "cannot read the stored blob");
		rc = 0;
	}
	if (!rc)
		return;
	if (rc == ENODATA)
		oci_fail(r, 404, "BLOB_UNKNOWN", "the upstream has no such blob");
	else if (rc == EAGAIN)
		oci_fail(r, 503, "UNKNOWN", err);
	else
		fail_rc(r, rc == EACCES || rc == ENETDOWN ? rc : EREMOTEIO,
		        "BLOB_UNKNOWN", err);
}

/* Picks the registry for the route's name: its first component when a
 * registry has that name and more follows, else the default registry. */
static int pick_registry(struct worker *w, struct oci_ctx *x, const char **rest)
{
	const char *name = x->rt.name, *slash = strchr(name, '/');
	int ri = -1;

	if (slash)
		ri = conf_registry_find(w->conf, name, (size_t)(slash - name));
	if (ri >= 0) {
		*rest = slash + 1;
		return ri;
	}
	*rest = name;
	return conf_registry_default(w->conf);
}

/* Counts a manifest request towards its image's place among the most
 * requested ("registry/name"). */
static void count_image(const struct oci_ctx *x, const char *rest)
{
	char image[STATS_TOP_NAME];

	/* a name too long for the table is counted cut short */
	if (snprintf(image, sizeof(image), "%s/%s", x->reg->name, rest) < 0)
		return;
	stats_top_add(STATS_TOP_IMAGES, image);
}

void oci_serve(struct worker *w, struct req *r)
{
	static const char base[] = "{}";
	struct oci_ctx x;
	const char *rest;
	int ri;

	memset(&x, 0, sizeof(x));
	req_header(r, "Docker-Distribution-API-Version", "registry/2.0");
	if (!strcmp(r->path, OCI_BEARER_PATH)) {
		oci_bearer_serve(w, r);
		return;
	}
	/* uploads, and any method but GET and HEAD: the push side */
	if (oci_push_claims(r->method, r->path)) {
		oci_push_serve(w, r);
		return;
	}
	oci_route_parse(r->method, r->path, &x.rt);
	switch (x.rt.kind) {
	case OCI_ERROR:
		if (x.rt.status == 405)
			req_header(r, "Allow", "GET, HEAD");
		oci_fail(r, x.rt.status, x.rt.code, x.rt.reason);
		return;
	case OCI_BASE:
		if (oci_access_base(w, r))
			return;
		req_header(r, "Cache-Control", "no-store");
		req_reply(r, 200, OCI_JSON_TYPE, base, sizeof(base) - 1);
		return;
	default:
		break;
	}
	ri = pick_registry(w, &x, &rest);
	if (ri < 0) {
		oci_fail(r, 404, "NAME_UNKNOWN", "no registry serves that name");
		return;
	}
	x.reg = &w->conf->registry[ri];
	x.name = x.rt.name;
	if (oci_access_allow(w, r, ri, rest, TOKEN_PULL))
		return;
	if (x.reg->read == CONF_READ_TOKEN)
		r->private_index = 1; /* no shared cache keeps its answers */
	/* a virtual registry: the layer that serves this name */
	x.named_ri = ri;
	ri = oci_virtual_pick(w, ri, rest, 0);
	if (ri < 0) {
		oci_fail(r, 404, "NAME_UNKNOWN", "no layer serves that name");
		return;
	}
	x.reg = &w->conf->registry[ri];
	x.ri = ri;
	if (x.reg->type == CONF_REGISTRY_HOSTED) {
		if (x.rt.kind == OCI_MANIFEST &&
		    oci_gate_manifest(w, r, x.named_ri, ri, rest, x.rt.ref))
			return;
		oci_hosted_pull(w, r, x.named_ri, ri, rest, &x.rt);
		return;
	}
	if (oci_up_open(w, ri, rest, &x.up)) {
		oci_fail(r, 400, "NAME_INVALID", "name too long");
		return;
	}
	switch (x.rt.kind) {
	case OCI_MANIFEST:
		r->stat_kind = STATS_MANIFEST;
		count_image(&x, rest);
		/* a denied one is neither fetched nor stored */
		if (oci_gate_manifest(w, r, x.named_ri, ri, x.up.name,
		                      x.rt.ref))
			break;
		manifest(w, r, &x);
		break;
	case OCI_BLOB:
		r->stat_kind = STATS_BLOB;
		blob(w, r, &x);
		break;
	case OCI_TAGS:
		tags(w, r, &x);
		break;
	case OCI_REFERRERS:
		referrers(w, r, &x);
		break;
	default:
		oci_fail(r, 404, "UNSUPPORTED", "no such endpoint");
		break;
	}
}
