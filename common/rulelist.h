/* rulelist: the ','-separated rule lists of a [policy] section's allow
 * and deny keys, split one rule at a time for the grammar that reads
 * them (common/pypi/policy.c, common/oci/policy.c). I/O-free. */
#ifndef LARDER_RULELIST_H
#define LARDER_RULELIST_H

#include <stddef.h>

/* Where a grammar's rules go: an array of max rules of size bytes each,
 * *n of them used. */
struct rulelist_into {
	void *rules;
	size_t size, max, *n;
	/* parses rule (n bytes, blanks kept) into slot; NULL or why not */
	const char *(*parse)(const char *rule, size_t n, int allow,
	                     void *slot);
	/* 1 for a byte that, first after a ',' and its blanks, says the
	 * ',' joins the rules on either side (NULL: none does) */
	int (*continues)(int ch);
};

/* Parses each rule of rules (NULL or "": none), in order, into the next
 * slot of into, as allow (1) or deny (0) rules. Returns NULL, or why the
 * first that failed did ("at most 64 rules in a policy" when max are
 * there already), the rules parsed by this call then dropped. */
const char *rulelist_parse(const char *rules, int allow,
                           const struct rulelist_into *into);

#endif
