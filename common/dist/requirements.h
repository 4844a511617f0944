/* requirements: pip requirements files as lock tools write them
 * (pip-compile, pip freeze, uv export), and PEP 508 environment markers.
 * I/O-free: includes (-r, -c) are handed back for the caller to read.
 *
 * Lines are joined at a trailing backslash; a '#' at the start or after
 * white space starts a comment. Each logical line is one entry:
 *
 *   name[extras]==version [; marker] [--hash=sha256:HEX ...]  REQ_PIN
 *   name===version ...                                         REQ_PIN
 *   -r FILE, --requirement FILE                                REQ_INCLUDE
 *   -c FILE, --constraint FILE                                 REQ_CONSTRAINT
 *   any other option line (-i, --extra-index-url, -f, ...)     REQ_OPTION
 *   anything else a requirement may be (>=, a URL, -e, ...)    REQ_UNPINNED
 */
#ifndef LARDER_REQUIREMENTS_H
#define LARDER_REQUIREMENTS_H

#include <stddef.h>

#include "common/names.h"

#define REQ_MAX_HASHES 256
#define REQ_MAX_LINES  100000

enum req_kind {
	REQ_PIN,
	REQ_INCLUDE,
	REQ_CONSTRAINT,
	REQ_OPTION,
	REQ_UNPINNED,
};

struct req_entry {
	enum req_kind kind;
	int line;                         /* where the logical line starts */
	char name[NAMES_MAX_PROJECT + 1]; /* REQ_PIN: normalised */
	char version[128];                /* REQ_PIN */
	char *marker;                     /* REQ_PIN: after ';', or NULL */
	char (*hashes)[65];               /* REQ_PIN: sha256 hex, lowercase */
	size_t nhashes;
	char *text; /* the include's path, or the line (options, unpinned) */
};

struct requirements {
	struct req_entry *v;
	size_t n;
};

/* Reads len bytes of a requirements file into out. Returns 0, EINVAL
 * with "line N: reason" in err (a --hash that is not sha256:HEX, an
 * include without a path, a NUL byte, a bad name before ==), E2BIG past
 * REQ_MAX_LINES entries or REQ_MAX_HASHES hashes on a line, or ENOMEM;
 * out is the caller's to free with requirements_free() in every case. */
int requirements_parse(const char *data, size_t len, struct requirements *out,
                       char *err, size_t errlen);

void requirements_free(struct requirements *r);

/* The values markers are evaluated against; NULL is unknown. */
struct req_env {
	const char *python_version;      /* "3.12" */
	const char *python_full_version; /* "3.12.0" */
	const char *sys_platform;        /* "linux", "darwin", "win32" */
	const char *platform_system;     /* "Linux", "Darwin", "Windows" */
	const char *platform_machine;    /* "x86_64", "arm64", "AMD64" */
	const char *implementation_name; /* "cpython" */
	const char *os_name;             /* "posix", "nt" */
};

/* Evaluates PEP 508 marker text against env. Returns 1 (true) or 0. A
 * marker that names an unknown variable, compares what cannot be compared
 * or does not parse counts as true, as far as it decides the result. */
int requirements_marker(const char *marker, const struct req_env *env);

#endif
