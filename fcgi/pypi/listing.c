#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/http/token.h"
#include "common/names.h"
#include "fcgi/pypi/listing.h"
#include "fcgi/pypi/pages.h"
#include "fcgi/pypi/proc.h"
#include "fcgi/pypi/pypi.h"

/* Layers deeper than this are not looked into (the config check refuses
 * cycles; this only bounds the walk). */
#define MAX_DEPTH 8

/* Makes the page of project that each cache index under idx holds stale
 * when it is fresh but LISTING_RECHECK old, so that pages_get() asks
 * upstream whether it changed (a conditional request: a 304 renews it as
 * it is). A hosted index's page is always current. */
static void recheck(struct worker *w, int idx, const char *project,
		    time_t now, int depth)
{
	const struct conf_index *ix = &w->conf->index[idx];
	struct db_page p;

	if (ix->type == CONF_INDEX_VIRTUAL) {
		for (size_t i = 0; depth < MAX_DEPTH && i < ix->nlayers; i++)
			recheck(w, (int)ix->layer[i], project, now, depth + 1);
		return;
	}
	/* an offline index asks no one: its page stays as it is */
	if (ix->type != CONF_INDEX_CACHE ||
	    conf_inherit(ix->offline, w->conf->offline) > 0 ||
	    db_page_get(w->db, ix->name, project, &p) != 0)
		return;
	if (now < p.fetched_at + p.ttl &&
	    now >= p.fetched_at + LISTING_RECHECK)
		db_page_touch(w->db, ix->name, project, p.fetched_at, 0);
}

int listing_fetch(struct worker *w, int idx, const char *sha256,
		  const char *filename, struct db_file *f, int *from,
		  char *err, size_t errlen)
{
	char project[NAMES_MAX_PROJECT + 1];
	const char *cache;
	struct db_page p;
	int rc;

	/* a hosted index's rows are the truth: nothing to fetch */
	if (w->conf->index[idx].type == CONF_INDEX_HOSTED) {
		snprintf(err, errlen, "%s: not uploaded here", filename);
		return ENOENT;
	}
	if (token_file_project(filename, project, sizeof(project))) {
		snprintf(err, errlen, "%s: the name says no project", filename);
		return ENOENT;
	}
	recheck(w, idx, project, time(NULL), 0);
	rc = pages_get(w, idx, project, &p, &cache, err, errlen);
	/* the file request answers nothing of the page: no prefetch for it */
	pypi_proc()->hint.index = -1;
	/* offline without that page: no page here lists the file, as before */
	if (rc == ENETDOWN)
		rc = ENOENT;
	if (rc)
		return rc;
	*from = pypi_find_file(w, idx, sha256, filename, f);
	/* a row another page wrote meanwhile is not of the project a read
	 * token was checked against */
	if (*from < 0 || (*f->project && strcmp(f->project, project) != 0)) {
		snprintf(err, errlen, "%s: the page of %s does not list it",
			 filename, project);
		return ENOENT;
	}
	return 0;
}
