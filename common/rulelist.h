/* rulelist: the ','-separated rule lists of a [policy] section's allow
 * and deny keys, split one rule at a time for the grammar that reads
 * them (common/pypi/policy.c, common/oci/policy.c). I/O-free. */
#ifndef LARDER_RULELIST_H
#define LARDER_RULELIST_H

#include <stddef.h>

/* Calls fn(rule, n, ctx) with each rule of rules (n bytes, blanks kept),
 * in order; a ',' whose next byte that is not a blank is one that
 * continues(byte) says 1 of (NULL: none) joins the rules on either side.
 * NULL or "" rules: no call. Returns NULL, or the first non-NULL fn
 * returned (then no further call). */
const char *rulelist_each(const char *rules, int (*continues)(int ch),
                          const char *(*fn)(const char *rule, size_t n,
                                            void *ctx),
                          void *ctx);

#endif
