/* oci_gate: the [policy] sections a registry names, applied to its
 * manifest requests, tag lists and pushes (docs/policy.md, "Registries").
 * The policies are compiled once per process (a reload starts new
 * workers), never per request; a decision is a few glob matches, and a
 * manifest by digest reads the tags pointing at it only when a deny rule
 * with a tag part names its repository. */
#ifndef LARDER_OCI_GATE_H
#define LARDER_OCI_GATE_H

#include "common/oci/tags.h"
#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* Whether registry ri names any policy. Returns 1 or 0. */
int oci_gate_any(struct worker *w, int ri);

/* Decides the manifest ref (a tag, or a "sha256:" digest) of repository
 * repo (as registry ri's policies match it and its rows key it) under
 * ri's policies, and under those of the registry the client named,
 * named_ri (a virtual one; -1 or ri: none more). When one denies it,
 * answers r with 403 DENIED naming the policy and the rule, counts it,
 * and returns -1 (-1 too, with a 500, when the policies did not compile:
 * nothing is let through unchecked); else 0. */
int oci_gate_manifest(struct worker *w, struct req *r, int named_ri, int ri,
                      const char *repo, const char *ref);

/* Leaves out of t the tags of repo that the policies of ri or named_ri
 * deny. */
void oci_gate_tags(struct worker *w, int named_ri, int ri, const char *repo,
                   struct oci_tags *t);

#endif
