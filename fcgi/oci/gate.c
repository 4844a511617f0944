/* oci_gate: a registry's policies on its manifests (gate.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/oci/policy.h"
#include "fcgi/oci/gate.h"
#include "fcgi/oci/oci.h"
#include "storage/db/db.h"
#include "storage/stats.h"

/* Each registry's policies, compiled for the config this process
 * serves. */
static const struct conf *compiled_for;
static struct {
	struct oci_policy *pols;
	size_t n;
	int err;        /* they did not compile (ENOMEM): every manifest of
	                   the registry is refused, none let through */
} compiled[CONF_MAX_REGISTRIES];

/* The policies of registry ri, compiled on first use; *err set when
 * they did not compile. */
static const struct oci_policy *policies(struct worker *w, int ri, size_t *n,
                                         int *err)
{
	*n = 0;
	*err = 0;
	if (ri < 0 || (size_t)ri >= w->conf->nregistry)
		return NULL;
	if (compiled_for != w->conf) {
		for (size_t i = 0; i < CONF_MAX_REGISTRIES; i++) {
			free(compiled[i].pols);
			compiled[i].pols = NULL;
			compiled[i].n = 0;
			compiled[i].err = 0;
		}
		for (size_t i = 0; i < w->conf->nregistry; i++) {
			/* the config check took these rules already */
			compiled[i].err = oci_policy_of(w->conf,
			                                &w->conf->registry[i],
			                                &compiled[i].pols,
			                                &compiled[i].n);
			if (compiled[i].err)
				log_error(compiled[i].err, "policy",
				          "registry %s: cannot compile its "
				          "policies", w->conf->registry[i].name);
		}
		compiled_for = w->conf;
	}
	*n = compiled[ri].n;
	*err = compiled[ri].err;
	return compiled[ri].pols;
}

int oci_gate_any(struct worker *w, int ri)
{
	size_t n;
	int err;

	policies(w, ri, &n, &err);
	return n > 0 || err;
}

struct digest_tags {
	const struct oci_policy *pols;
	size_t n;
	const char *repo;
	struct oci_policy_verdict *v;
	int denied;
};

static int digest_tag(const char *tag, void *ctx)
{
	struct digest_tags *d = ctx;

	d->denied = oci_policy_denies(d->pols, d->n, d->repo, tag, d->v);
	return d->denied;
}

/* Whether pols deny ref of repo (rows under registry rname): 1 or 0, or
 * -1 when the tags that point at a digest could not be read (never
 * taken for an allow). */
static int denies(struct worker *w, const char *rname,
                  const struct oci_policy *pols, size_t n, const char *repo,
                  const char *ref, struct oci_policy_verdict *v)
{
	struct digest_tags d = {pols, n, repo, v, 0};

	if (strncmp(ref, "sha256:", 7) != 0 && strchr(ref, ':') == NULL)
		return oci_policy_denies(pols, n, repo, ref, v);
	/* by digest: denied when a denied tag of the repository points at
	 * it (larder's tag rows); else the rules that need no tag decide */
	if (oci_policy_tags_matter(pols, n, repo) &&
	    strncmp(ref, "sha256:", 7) == 0) {
		if (db_oci_tags_of(w->db, rname, repo, ref + 7, digest_tag,
		                   &d))
			return -1;
		if (d.denied)
			return 1;
	}
	return oci_policy_denies(pols, n, repo, NULL, v);
}

int oci_gate_manifest(struct worker *w, struct req *r, int named_ri, int ri,
                      const char *repo, const char *ref)
{
	const struct oci_policy *pols;
	struct oci_policy_verdict v;
	int at[2] = {named_ri, ri}, err, no;
	size_t n;

	for (size_t i = 0; i < 2; i++) {
		if (i == 1 && ri == named_ri)
			break;
		pols = policies(w, at[i], &n, &err);
		if (err) {
			oci_fail(r, 500, "UNKNOWN", "the registry's policies "
			         "did not compile (see the log)");
			return -1;
		}
		if (!n)
			continue;
		no = denies(w, w->conf->registry[ri].name, pols, n, repo, ref,
		            &v);
		if (no < 0) {
			oci_fail(r, 503, "UNAVAILABLE", "the tags that point at "
			         "this digest could not be read to apply the "
			         "registry's policies");
			return -1;
		}
		if (!no)
			continue;
		stats_add(STATS_POLICY_MANIFESTS, 1);
		oci_fail(r, 403, "DENIED", v.reason);
		return -1;
	}
	return 0;
}

void oci_gate_tags(struct worker *w, int named_ri, int ri, const char *repo,
                   struct oci_tags *t)
{
	const struct oci_policy *a, *b;
	struct oci_policy_verdict v;
	size_t na, nb = 0, k = 0;
	int ea, eb = 0;

	a = policies(w, named_ri, &na, &ea);
	b = ri == named_ri ? NULL : policies(w, ri, &nb, &eb);
	if (!na && !nb && !ea && !eb)
		return;
	for (size_t i = 0; i < t->n; i++) {
		/* policies that did not compile: no tag is listed */
		if (ea || eb ||
		    (na && oci_policy_denies(a, na, repo, t->tag[i], &v)) ||
		    (nb && oci_policy_denies(b, nb, repo, t->tag[i], &v))) {
			free(t->tag[i]);
			continue;
		}
		t->tag[k++] = t->tag[i];
	}
	t->n = k;
}
