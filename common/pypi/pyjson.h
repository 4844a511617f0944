/* pyjson: the JSON API of a project and of one of its releases, laid out
 * as pypi.org lays out /pypi/{project}/json and
 * /pypi/{project}/{version}/json, made from the project's simple page and
 * the core metadata of one file of the release. I/O-free.
 *
 * Releases are the versions the page's file names give (wheels, sdists,
 * eggs; a file whose name gives no PEP 440 version is left out), keyed by
 * their normal form, plus the page's PEP 700 "versions" that have no file.
 * "info" is read from the metadata: every header pypi.org shows, null
 * when absent; with no metadata, what the page says (name, version,
 * requires_python). Unlike pypi.org there is no last_serial and no
 * vulnerabilities list: a client that checks for vulnerabilities should
 * fail rather than read "none" from a cache that does not know.
 */
#ifndef LARDER_PYJSON_H
#define LARDER_PYJSON_H

#include <stddef.h>

#include "common/buf.h"
#include "common/dist/distname.h"
#include "common/dist/pep440.h"
#include "common/pypi/simple.h"

struct pyjson_release {
	char version[DISTNAME_VERSION_MAX]; /* normal form */
	struct pep440 v;
	size_t *files;     /* positions in the page's files, by file name */
	size_t nfiles;
	int yanked;        /* every file is yanked (and there is one) */
};

struct pyjson {
	struct pyjson_release *rel; /* lowest version first */
	size_t nrel;
	size_t dropped;             /* files whose name gives no version */
};

/* Groups the files of page p of project (normalised) into releases.
 * Returns 0 or ENOMEM; j is the caller's to free with pyjson_free() in
 * either case. */
int pyjson_group(const struct simple_page *p, const char *project,
		 struct pyjson *j);

void pyjson_free(struct pyjson *j);

/* The release a JSON document is about: the one equal to version under
 * PEP 440 when version is not NULL; else the project's latest as
 * pypi.org picks it (the highest final release not yanked, then the
 * highest pre-release not yanked, then the highest yanked one), among the
 * releases that have files. Returns its position in j->rel, or -1. */
long pyjson_pick(const struct pyjson *j, const char *version);

/* The file of release r whose core metadata "info" comes from: a wheel
 * with metadata advertised, else any file with it. Returns its position
 * in p->files, or -1 when none has metadata. */
long pyjson_meta_file(const struct simple_page *p, const struct pyjson *j,
		      long r);

struct pyjson_opts {
	const char *files_url;   /* absolute, ends in '/': each file's url is
	                            this, then {sha256}/{filename} */
	const char *project_url; /* absolute: package_url and project_url */
	const char *api_url;     /* absolute, ends in '/': release_url is
	                            this, then {version}/json */
	const char *metadata;    /* the release's core metadata, or NULL */
	size_t metalen;
	int all_releases;        /* the project document: with "releases" */
};

/* Renders the JSON document of release r of page p (project normalised)
 * into out: "info", "urls" (r's files) and, with o->all_releases,
 * "releases". Strings that are not UTF-8 in the metadata are read as
 * Latin-1. Returns 0 or an errno from buf. */
int pyjson_render(const struct simple_page *p, const char *project,
		  const struct pyjson *j, long r, const struct pyjson_opts *o,
		  struct buf *out);

/* What a file of that name is: "bdist_wheel", "sdist", "bdist_egg", ...,
 * and into py (pylen bytes) its python_version as pypi.org says it (a
 * wheel's python tag, "source" for an sdist). Returns NULL when the name
 * is none of those. */
const char *pyjson_packagetype(const char *filename, char *py, size_t pylen);

#endif
