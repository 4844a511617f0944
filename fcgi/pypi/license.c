#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/dist/distname.h"
#include "common/pypi/policy.h"
#include "fcgi/pypi/license.h"
#include "fcgi/pypi/metadata.h"
#include "fcgi/server/send.h"
#include "storage/blob.h"

int license_of(struct worker *w, int from, const char *sha256,
               const char *filename, const char *meta_sha, char *out,
               size_t len)
{
	const struct conf *c = w->conf;
	struct db_file f;
	struct distname d;
	uint8_t *bytes = NULL;
	size_t n = 0;
	struct buf b;
	int rc = -1;

	*out = '\0';
	if ((!meta_sha || !*meta_sha) &&
	    db_file_get(w->db, c->index[from].name, sha256, filename, &f) == 0 &&
	    !f.meta_prov)
		meta_sha = f.meta_sha;
	if (meta_sha && *meta_sha && send_stored(w, meta_sha)) {
		buf_init(&b, COREMETA_MAX_HEADERS);
		rc = blob_read(c->data_dir, meta_sha, &b);
		if (rc == EFBIG) {
			/* a long description: the headers come first, so the
			 * prefix read, cut after its last whole line */
			while (b.len && b.data[b.len - 1] != '\n')
				b.len--;
			rc = 0;
		}
		if (rc == 0)
			rc = coremeta_license(b.data, b.len, out, len);
		buf_free(&b);
	} else if (distname_parse(filename, &d) == 0 &&
	           d.kind == DISTNAME_WHEEL &&
	           blob_exists(c->data_dir, sha256)) {
		char err[256];

		/* a wheel is stored only once its sha256 is checked */
		if (metadata_read_stored(w, sha256, filename, &bytes, &n, err,
		                         sizeof(err)) == 0)
			rc = coremeta_license((const char *)bytes, n, out, len);
		free(bytes);
	}
	if (rc)
		*out = '\0';
	return *out != '\0';
}

char **license_of_page(struct worker *w, int from,
                       const struct simple_page *page)
{
	char **out = calloc(page->nfiles ? page->nfiles : 1, sizeof(*out));
	char text[COREMETA_MAX_LICENSE];

	for (size_t i = 0; out && i < page->nfiles; i++) {
		const struct simple_file *f = &page->files[i];

		if (license_of(w, from, f->sha256, f->filename,
		               f->made_metadata ? NULL : f->meta_sha256, text,
		               sizeof(text)))
			out[i] = strdup(text); /* (NULL: not known) */
	}
	return out;
}

void license_free(char **licenses, size_t n)
{
	for (size_t i = 0; licenses && i < n; i++)
		free(licenses[i]);
	free(licenses);
}

/* license_of(), and, as fetch allows, for a file not stored yet whose
 * verified metadata larder does not hold either: that metadata fetched
 * first (metadata_ensure(): the upstream's small .metadata, one round
 * trip) and read again, so that a cold file is judged before its bytes go
 * out; where no verified metadata can be had that way (an upstream
 * .metadata its page gives no hash for, range reads), with
 * LICENSE_FETCH_FILE the whole wheel, verified, which the request was
 * about to fetch anyway, and its own METADATA read. */
static int known(struct worker *w, int from, const char *sha256,
                 const char *filename, const struct db_file *f,
                 enum license_fetch fetch, char *out, size_t len)
{
	char meta_sha[65], err[256];
	struct distname d;

	if (license_of(w, from, sha256, filename, NULL, out, len))
		return 1;
	if (fetch == LICENSE_LOCAL || blob_exists(w->conf->data_dir, sha256))
		return 0;
	if (metadata_ensure(w, from, sha256, filename, meta_sha, err,
	                    sizeof(err)) == 0 &&
	    license_of(w, from, sha256, filename, NULL, out, len))
		return 1;
	if (fetch != LICENSE_FETCH_FILE || distname_parse(filename, &d) ||
	    d.kind != DISTNAME_WHEEL ||
	    metadata_fetch_file(w, from, f, sha256, err, sizeof(err)))
		return 0;
	return license_of(w, from, sha256, filename, NULL, out, len);
}

/* Whether a [policy] that index ix names has a license= rule, read off
 * the rules as written (no compile: this is on every file request of an
 * index with policies). */
static int wants_license(const struct conf *c, const struct conf_index *ix)
{
	const char *s = ix->policies;

	while (s && *s) {
		size_t n = strcspn(s, " ");
		int at = conf_policy_find(c, s, n);

		if (at >= 0 && (strstr(c->policy[at].allow, "license=") ||
		                strstr(c->policy[at].deny, "license=")))
			return 1;
		s += n;
		s += *s == ' ';
	}
	return 0;
}

int license_judge(struct worker *w, int from, const char *sha256,
                  const char *filename, const struct db_file *f,
                  enum license_fetch fetch, char *reason, size_t len)
{
	const struct conf_index *ix = &w->conf->index[from];
	char license[COREMETA_MAX_LICENSE];
	struct policy_file pf = {.project = f->project, .filename = filename,
	                         .yanked = f->yanked};
	struct policy_vuln *vulns = NULL;
	struct policy_verdict v;
	struct policy *pols = NULL;
	size_t n = 0;
	int deny = -1;

	if (!*f->project || !wants_license(w->conf, ix) ||
	    policy_of(w->conf, ix, &pols, &n))
		return -1;
	if (policy_wants_vulns(pols, n) &&
	    db_osv_get(w->db, f->project, &vulns, &pf.nvulns))
		goto out; /* (the page's decision stands) */
	pf.vulns = vulns;
	if (known(w, from, sha256, filename, f, fetch, license,
	          sizeof(license)))
		pf.license = license;
	deny = policy_denied(pols, n, &pf, &v);
	if (deny)
		snprintf(reason, len, "%s", v.reason);
out:
	free(vulns);
	free(pols);
	return deny;
}
