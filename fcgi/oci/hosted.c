/* oci hosted: a hosted registry's content served to pulls (manifests,
 * blobs, tag lists, referrers) from what was pushed (fcgi/oci/push.c),
 * with the same serving code as cached content (fcgi/server/send.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/json.h"
#include "common/oci/manifest.h"
#include "common/oci/tags.h"
#include "fcgi/oci/gate.h"
#include "fcgi/oci/hosted.h"
#include "fcgi/oci/oci.h"
#include "fcgi/oci/refs.h"
#include "fcgi/server/send.h"
#include "storage/blob.h"
#include "storage/db/db.h"

/* GET/HEAD of a pushed manifest. */
static void pull_manifest(struct worker *w, struct req *r,
                          const struct conf_registry *reg, const char *repo,
                          const struct oci_route *rt)
{
	struct send_opts o = {.inline_under = 64 * 1024};
	struct db_oci_ref row;

	if (db_oci_ref_get(w->db, reg->name, repo, rt->ref, &row) ||
	    row.status != 200 || !send_stored(w, row.sha256)) {
		oci_fail(r, 404, "MANIFEST_UNKNOWN", "unknown to the registry");
		return;
	}
	o.content_type = row.media_type;
	o.cache_control = rt->by_digest ? send_immutable(r) : "no-cache";
	/* nginx keeps a manifest by digest under its URL whatever the
	 * method (conf/nginx.conf): never a HEAD's answer, which has no
	 * body, for the GETs after it; a GET's only as the Cache-Control
	 * allows (not a private registry's). Never one by tag: a push
	 * moves it at once. */
	if (r->head || !rt->by_digest)
		req_header(r, "X-Accel-Expires", "0");
	/* ... and by digest for cache_ttl at most, not the year the client
	 * may keep it: a policy added by a reload denies it that soon */
	else if (rt->by_digest && !r->private_index)
		req_header(r, "X-Accel-Expires", "%ld", reg->cache_ttl);
	req_header(r, "Docker-Content-Digest", "sha256:%s", row.sha256);
	if (send_blob(w, r, row.sha256, &o))
		oci_fail(r, 500, "UNKNOWN", "the stored manifest is missing");
}

static void pull_blob(struct worker *w, struct req *r,
                      const struct conf_registry *reg, const char *repo,
                      const struct oci_route *rt)
{
	struct send_opts o = {.content_type = "application/octet-stream",
	                      .inline_under = 1};
	long long size;

	if (strncmp(rt->ref, "sha256:", 7) != 0 ||
	    db_oci_blob_get(w->db, reg->name, repo, rt->ref + 7, &size) ||
	    !send_stored(w, rt->ref + 7)) {
		oci_fail(r, 404, "BLOB_UNKNOWN", "unknown to the registry");
		return;
	}
	o.cache_control = send_immutable(r);
	o.size = size;
	o.have_size = 1;
	r->cache = "HIT";
	req_header(r, "Docker-Content-Digest", "%s", rt->ref);
	if (send_blob(w, r, rt->ref + 7, &o))
		oci_fail(r, 500, "UNKNOWN", "cannot read the stored blob");
}

static void pull_tags(struct worker *w, struct req *r, int named_ri, int ri,
                      const char *repo, const struct oci_route *rt)
{
	const struct conf_registry *reg = &w->conf->registry[ri];
	/* under a policy the list is read, to leave its denied tags out */
	int gate = oci_gate_any(w, named_ri) || oci_gate_any(w, ri);
	char last[OCI_MAX_TAG + 1], err[200], next[OCI_MAX_TAG + 1];
	struct oci_tags t = {0};
	struct buf body, out;
	long n;
	int rc;

	if (oci_tags_query(r->query, &n, last)) {
		oci_fail(r, 400, "PAGINATION_NUMBER_INVALID",
		     "n must be a number and last a tag");
		return;
	}
	buf_init(&body, 64 << 20);
	buf_init(&out, 64 << 20);
	rc = buf_adds(&body, "{\"name\":") || json_put_string(&body, rt->name) ||
	     buf_adds(&body, ",\"tags\":") ? ENOMEM : 0;
	if (!rc)
		rc = db_oci_tags(w->db, reg->name, repo, &body);
	if (!rc)
		rc = buf_adds(&body, "}") ? ENOMEM : 0;
	if (!rc && (n >= 0 || *last || gate)) {
		rc = oci_tags_add(&t, body.data, body.len, err, sizeof(err));
		if (!rc)
			oci_gate_tags(w, named_ri, ri, repo, &t);
		if (!rc)
			rc = oci_tags_render(&t, last, n, &out, next);
		oci_tags_free(&t);
		if (!rc && *next)
			req_header(r, "Link", "</v2/%s/tags/list?n=%ld&last=%s>; "
			           "rel=\"next\"", rt->name, n, next);
	} else if (!rc) {
		rc = buf_add(&out, body.data, body.len) ? ENOMEM : 0;
	}
	buf_free(&body);
	if (rc) {
		buf_free(&out);
		oci_fail(r, 500, "UNKNOWN", "cannot list the tags");
		return;
	}
	req_header(r, "Cache-Control", "no-cache");
	req_reply(r, 200, OCI_JSON_TYPE, out.data, out.len);
	buf_free(&out);
}

/* Builds the referrers index, one descriptor at a time. */
struct refers_ctx {
	struct worker *w;
	const char *type;       /* the artifactType filter, "" none */
	struct buf *out;
	int n, err;
};

static void refers_one(const char *sha256, const char *media_type,
                       const char *artifact_type, void *ctx)
{
	struct refers_ctx *c = ctx;
	struct buf m, notes;
	char path[4096];
	struct stat st;
	int rc;

	if ((*c->type && strcmp(c->type, artifact_type) != 0) || c->err)
		return;
	if (blob_path(c->w->conf->data_dir, sha256, path, sizeof(path)) ||
	    stat(path, &st))
		return; /* gone: not listed */
	/* the spec: the descriptor carries the referrer's annotations */
	buf_init(&m, OCI_MAX_MANIFEST);
	buf_init(&notes, OCI_MAX_MANIFEST);
	rc = blob_read(c->w->conf->data_dir, sha256, &m);
	if (rc == ENOENT) {
		buf_free(&m);
		buf_free(&notes);
		return; /* gone since */
	}
	if (!rc)
		rc = oci_manifest_annotations(m.data, m.len, &notes);
	buf_free(&m);
	if (rc ||
	    (c->n++ && buf_adds(c->out, ",")) ||
	    buf_adds(c->out, "{\"mediaType\":") ||
	    json_put_string(c->out, media_type) ||
	    buf_addf(c->out, ",\"digest\":\"sha256:%s\",\"size\":%lld", sha256,
	             (long long)st.st_size) ||
	    (*artifact_type && (buf_adds(c->out, ",\"artifactType\":") ||
	                        json_put_string(c->out, artifact_type))) ||
	    (notes.len && (buf_adds(c->out, ",\"annotations\":") ||
	                   buf_add(c->out, notes.data, notes.len))) ||
	    buf_adds(c->out, "}"))
		c->err = rc ? rc : ENOMEM;
	buf_free(&notes);
}

static void pull_referrers(struct worker *w, struct req *r,
                           const struct conf_registry *reg, const char *repo,
                           const struct oci_route *rt)
{
	char type[OCI_MAX_MEDIA_TYPE + 1], prefix[OCI_MAX_DIGEST + 16];
	struct refers_ctx c = {.w = w, .type = type};
	struct buf out;
	int rc;

	if (oci_referrers_query(r->query, type)) {
		oci_fail(r, 400, "UNSUPPORTED", "artifactType must be a media type");
		return;
	}
	snprintf(prefix, sizeof(prefix), "/refers/%s/", rt->ref);
	buf_init(&out, 16 << 20);
	c.out = &out;
	rc = buf_adds(&out, "{\"schemaVersion\":2,\"mediaType\":"
	                    "\"" OCI_INDEX_TYPE "\",\"manifests\":[")
	         ? ENOMEM
	         : 0;
	if (!rc)
		rc = db_oci_refers(w->db, reg->name, repo, prefix, refers_one,
		                   &c);
	if (!rc)
		rc = c.err ? c.err : buf_adds(&out, "]}") ? ENOMEM : 0;
	if (rc) {
		buf_free(&out);
		oci_fail(r, 500, "UNKNOWN", "cannot list the referrers");
		return;
	}
	if (*type)
		req_header(r, "OCI-Filters-Applied", "artifactType");
	req_header(r, "Cache-Control", "no-cache");
	req_reply(r, 200, OCI_INDEX_TYPE, out.data, out.len);
	buf_free(&out);
}

void oci_hosted_pull(struct worker *w, struct req *r, int named_ri, int ri,
                     const char *repo, const struct oci_route *rt)
{
	const struct conf_registry *reg = &w->conf->registry[ri];

	switch (rt->kind) {
	case OCI_MANIFEST:
		pull_manifest(w, r, reg, repo, rt);
		break;
	case OCI_BLOB:
		pull_blob(w, r, reg, repo, rt);
		break;
	case OCI_TAGS:
		pull_tags(w, r, named_ri, ri, repo, rt);
		break;
	case OCI_REFERRERS:
		pull_referrers(w, r, reg, repo, rt);
		break;
	default:
		oci_fail(r, 404, "UNSUPPORTED", "no such endpoint");
		break;
	}
}
