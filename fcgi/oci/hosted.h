/* oci hosted: pulls of what was pushed to a hosted registry. */
#ifndef LARDER_OCI_HOSTED_H
#define LARDER_OCI_HOSTED_H

#include "common/oci/ref.h"
#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* Answers a pull (manifest, blob, tag list, referrers: rt) of repository
 * repo of hosted registry ri from what was pushed, once access (and a
 * manifest's policies) is checked; the tags the policies of ri and of
 * named_ri (the registry the client named) deny are left out of lists. */
void oci_hosted_pull(struct worker *w, struct req *r, int named_ri, int ri,
                     const char *repo, const struct oci_route *rt);

#endif
