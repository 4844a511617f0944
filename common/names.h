/* names: PEP 503 project-name normalisation and the checks on the names
 * larder puts into paths. I/O-free. */
#ifndef LARDER_NAMES_H
#define LARDER_NAMES_H

#include <stddef.h>

#define NAMES_MAX_PROJECT 200
#define NAMES_MAX_FILENAME 255

/* Writes the PEP 503 normalised form of name (lowercase, each run of '-',
 * '_', '.' made one '-') to out (outlen bytes). Returns 0, or EINVAL when
 * name is empty, longer than NAMES_MAX_PROJECT, holds a character outside
 * [A-Za-z0-9._-], or does not start and end with a letter or digit;
 * ENAMETOOLONG when out is too small. */
int names_normalize(const char *name, char *out, size_t outlen);

/* Returns 1 when s is exactly 64 lowercase hex digits, else 0. */
int names_is_sha256(const char *s);

/* Returns 1 when s is a safe distribution file name: 1..NAMES_MAX_FILENAME
 * bytes of [A-Za-z0-9._+!~-], not starting with '.', else 0. */
int names_is_filename(const char *s);

/* Returns 1 when the normalised name matches one of the space-separated
 * globs ('*' any run, '?' one character), else 0; NULL or "" globs match
 * nothing. Linear space, at most glob-length times name-length steps: no
 * glob is exponential. (Project globs of tokens and protected_names.) */
int names_globs_match(const char *globs, const char *name);

/* Returns 1 when the glob of gn bytes matches all of name ('*' any run,
 * '/' too; '?' one byte), else 0. Linear space, at most gn times
 * strlen(name) steps. (One glob of names_globs_match(); image rules of
 * common/oci/policy.c.) */
int names_glob_match(const char *g, size_t gn, const char *name);

/* The longest glob list names_globs_normalize() makes. */
#define NAMES_MAX_GLOBS 511

/* Normalises a glob list as names are (PEP 503: lowercase, each run of
 * '-', '_', '.' one '-'; '*' and '?' kept) with single spaces between
 * globs, into out. Returns 0, or EINVAL with a reason in err: an empty
 * list, a byte a project name cannot hold, or a list longer than
 * NAMES_MAX_GLOBS (or than out). */
int names_globs_normalize(const char *in, char *out, size_t len, char *err,
			  size_t errlen);

#endif
