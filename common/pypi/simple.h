/* simple: the model of a PEP 503/691 "simple" page, and its parsers and
 * renderers: JSON in simple_json.c (a streaming parse: memory for what is
 * kept, not a tree), HTML rendering in simple.c, the HTML parser in
 * html.h. I/O-free.
 *
 * Rendered pages link files relative to the page, as
 *   ../../files/{sha256}/{filename}
 * which a client resolves against /{index}/simple/{project}/ to
 * /{index}/files/{sha256}/{filename}. So the bytes do not depend on the host,
 * scheme or mount point larder is reached through.
 */
#ifndef LARDER_SIMPLE_H
#define LARDER_SIMPLE_H

#include <stddef.h>

#include "common/buf.h"

struct simple_hash {
	char *name;   /* "sha256", "md5", ... */
	char *value;  /* lowercase hex */
};

struct simple_file {
	char *filename;
	char *url;              /* absolute upstream URL, no fragment */
	char sha256[65];
	struct simple_hash *hashes;  /* every hash upstream gave, sha256 too */
	size_t nhashes;
	char *requires_python;  /* NULL when absent */
	int yanked;             /* 1 when yanked */
	char *yanked_reason;    /* NULL, or the reason (may be "") */
	int core_metadata;      /* 1 when a .metadata sibling is advertised */
	char meta_sha256[65];   /* its sha256, "" when advertised without one */
	int made_metadata;      /* core_metadata is larder's to make: the
	                           upstream advertises none */
	long long size;         /* bytes, -1 when unknown */
	char *upload_time;      /* ISO 8601 as upstream gave it, or NULL */
	char *provenance;       /* PEP 740: absolute upstream URL of its
	                           .provenance, NULL when none was listed */
};

/* PEP 792 project statuses; "" stands for active (the default, which a
 * page may leave unsaid). */
#define SIMPLE_STATUS_MAX 16

struct simple_page {
	int is_list;               /* 1: the project list; 0: a project page */
	char api_version[16];      /* what upstream claimed, "1.0" at least */
	char *name;                /* project name as upstream spells it */
	struct simple_file *files;
	size_t nfiles;
	char **versions;           /* api 1.1 "versions", or NULL */
	size_t nversions;
	char **projects;           /* the project list's names */
	size_t nprojects;
	size_t dropped;            /* entries left out: unsafe, no sha256, ... */
	char status[SIMPLE_STATUS_MAX]; /* PEP 792: "", "active", "archived",
	                              "quarantined" or "deprecated" */
	char *status_reason;       /* PEP 792 reason, or NULL */
};

/* The newest api-version minor larder renders: 1.4 (PEP 792). */
#define SIMPLE_MINOR_MAX 4

/* What simple_opts.max_files 0 stands for. */
#define SIMPLE_DEFAULT_MAX_FILES 1000000

struct simple_opts {
	const char *base_url;  /* the URL the page was fetched from */
	const char *trusted;   /* hosts files may live on besides base_url's;
	                          space-separated, may be NULL */
	size_t max_files;      /* more entries than this is EINVAL; 0: 1000000 */
};

/* Parses a PEP 691 JSON project page (is_list 0) or project list (1) into
 * p. File URLs are resolved against o->base_url; a file whose URL is not
 * http(s) on a trusted host, whose name is unsafe (names_is_filename) or
 * which has no valid sha256 is left out and counted in p->dropped. A
 * top-level PEP 792 "project-status" object is kept (simple_status_set):
 * a quarantined page keeps no files. A PEP 740 "provenance" URL on a file
 * is kept when it is http(s) on a trusted host, else left out (the file
 * stays). Returns 0, or EINVAL with a one-line reason in err (errlen bytes), or
 * ENOMEM. On error p holds nothing to free; on success free with
 * simple_page_free(). */
int simple_parse_json(const char *data, size_t len, const struct simple_opts *o,
		      int is_list, struct simple_page *p, char *err,
		      size_t errlen);

/* Renders p as PEP 691 JSON to out: meta.api-version as p claims (size,
 * upload-time and versions only when it is 1.1 or later; a file's
 * provenance, as ../../files/{sha256}/{filename}.provenance, from 1.3;
 * the "project-status" object from 1.4), every file with
 * its url rewritten relative to the page, hashes, requires-python, yanked
 * and core-metadata (false when not advertised). Not the legacy
 * dist-info-metadata key: PEP 714 says
 * servers should not emit it in JSON, as pip 22.3 to 23.1 fail on it
 * (and, given metadata, download every wheel twice: pip #11847).
 * Returns 0 or an errno from buf. */
int simple_render_json(const struct simple_page *p, struct buf *out);

/* Renders p as a PEP 503 HTML page (with PEP 592 data-yanked, PEP 658/714
 * data-core-metadata and data-dist-info-metadata, data-requires-python,
 * escaped; from api-version 1.3 PEP 740 data-provenance, from 1.4 the PEP
 * 792 pypi:project-status and pypi:project-status-reason meta tags). PEP
 * 700 changes nothing in HTML: sizes, upload times and versions are
 * JSON-only. Returns 0 or an errno from buf. */
int simple_render_html(const struct simple_page *p, struct buf *out);

/* Reads an api-version (PEP 691) or pypi:repository-version (PEP 629)
 * claim, NULL when there is none, into out: "1.0" to "1.4", the claim
 * capped at the newest version whose fields larder understands (1.1 PEP
 * 700, 1.2 PEP 708 whose keys are optional and not kept, 1.3 PEP 740, 1.4
 * PEP 792). Returns 0,
 * or EINVAL when the claim is malformed or its major version is not 1. */
int simple_api_version(const char *claimed, char out[16]);

/* The one decision, shared by both parsers, whether a file a page lists
 * is kept. On entry f holds what the page said (filename, NULL to take the
 * URL's last path segment; hashes with lowercase hex values; the optional
 * fields) and f->url is NULL. href, as the page wrote it, is resolved
 * against base (o->base_url when NULL) into f->url without its fragment; a
 * "name=hex" pair in the fragment adds a hash the page did not otherwise
 * give, and f->sha256 is taken from the "sha256" hash. Returns 0 to keep
 * f; EINVAL to drop it (unsafe filename, no valid sha256, a URL that is not
 * http(s) on a host url_host_trusted() accepts for o->base_url and
 * o->trusted, a string that is not UTF-8); or ENOMEM. f->provenance, when
 * set, is the PEP 740 URL as the page wrote it: it is resolved the same
 * way, and dropped (the file kept) when it is not on a trusted host. On a
 * non-zero return
 * what f held is freed and f is zeroed. */
int simple_file_accept(struct simple_file *f, const char *href,
		       const char *base, const struct simple_opts *o);

/* Adds the hash name[0..nlen) = value[0..vlen) to f, both lowercased,
 * unless f has one of that name already. A name that is not a short
 * [A-Za-z0-9_-] word or a value that is not hex is skipped, and so is any
 * hash but sha256 past 16. Returns 0 or ENOMEM. */
int simple_hash_add(struct simple_file *f, const char *name, size_t nlen,
		    const char *value, size_t vlen);

/* Whether a file of a page is fit to be linked (a safe file name, a valid
 * sha256): a page built by hand may hold anything, and what it holds ends
 * up in a path. */
int simple_renderable(const struct simple_file *f);

/* The api-version a rendering of p claims: p's ("1.0" to "1.4"), "1.0"
 * when p has none. */
const char *simple_rendered_version(const struct simple_page *p);

/* The minor number of an api-version simple_api_version() gave ("1.3": 3). */
int simple_minor(const char *version);

/* Sets p's PEP 792 status to status[0..slen) when it is one of the four
 * the PEP names (compared without case, kept lowercase), and its reason
 * to reason[0..rlen) (NULL: none) when that is UTF-8 with no NUL and at
 * most 4096 bytes; a status that is none of the four leaves p as it was.
 * Returns 0 or ENOMEM. */
int simple_status_set(struct simple_page *p, const char *status, size_t slen,
		      const char *reason, size_t rlen);

/* Whether p's project is quarantined (PEP 792): its files must not be
 * offered. */
int simple_quarantined(const struct simple_page *p);

/* Drops every file of a quarantined page: the PEP has a quarantined
 * project's page list none, and larder then records none of them. */
void simple_status_apply(struct simple_page *p);

/* The file whose PEP 658 metadata an installer most likely asks for next
 * after reading page p: the universal wheel (py3-none-any or
 * py2.py3-none-any) of the highest final release (a version of digits and
 * dots only: no pre-, post-, dev or local release), not yanked, with its
 * metadata advertised. Returns its position in p->files, or -1 when there
 * is none (a project of platform wheels or sdists only). */
int simple_likely_metadata(const struct simple_page *p);

/* The file an installer most likely downloads after reading page p, as
 * simple_likely_metadata() picks it but whether or not its metadata is
 * advertised (pip before 23.1 downloads the wheel to read it). Returns
 * its position in p->files, or -1. */
int simple_likely_wheel(const struct simple_page *p);

/* Gives a project page that has no versions list (an HTML page, or a
 * JSON one below 1.1) the versions of its files' names, each once in
 * order of appearance, so that its JSON rendering at 1.1 or later has the
 * list PEP 700 requires. A name that reads as no wheel or sdist adds
 * none. Returns 0 or ENOMEM. */
int simple_derive_versions(struct simple_page *p);

/* Names project page p by the normalised name of the project it was
 * fetched for (PEP 691 requires the normalised name; an HTML page may have
 * no <title>, or one that names another spelling or another project).
 * project must already be normalised. Returns 0, EINVAL for a project
 * that is not a normalised name, or ENOMEM. */
int simple_name_set(struct simple_page *p, const char *project);

/* Frees what f owns and zeroes it. */
void simple_file_free(struct simple_file *f);

/* Frees what p owns and zeroes it. */
void simple_page_free(struct simple_page *p);

#endif
