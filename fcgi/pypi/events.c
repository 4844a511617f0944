/* events: the webhook events a stored page of a cache index raises
 * (events.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/dist/distname.h"
#include "common/json.h"
#include "fcgi/pypi/events.h"
#include "storage/db/db.h"
#include "storage/webhook.h"

/* The canonical version of file sf in *v (DISTNAME_VERSION_MAX bytes), or
 * "" when its name is no distribution's. */
static void file_version(const struct simple_file *sf, char *v)
{
	struct distname d;

	v[0] = '\0';
	if (distname_parse(sf->filename, &d) == 0 &&
	    distname_version_canon(d.version, v, DISTNAME_VERSION_MAX) != 0)
		snprintf(v, DISTNAME_VERSION_MAX, "%s", d.version);
}

/* Whether version v is among the n versions in vs. */
static int has_version(char (*vs)[DISTNAME_VERSION_MAX], size_t n,
		       const char *v)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(vs[i], v))
			return 1;
	return 0;
}

/* events_new_releases (events.h) */
int events_new_releases(struct worker *w, const struct conf_index *ix,
			const char *project, const struct simple_page *page,
			const struct simple_page *held)
{
	size_t n = page->nfiles + held->nfiles, nknown = 0, nnew = 0;
	char (*known)[DISTNAME_VERSION_MAX], (*fresh)[DISTNAME_VERSION_MAX];
	char v[DISTNAME_VERSION_MAX];
	struct db_file row;
	int rc = 0;

	if (!n || !webhook_wanted(w->conf, "new-release"))
		return 0;
	known = calloc(n, sizeof(*known));
	fresh = calloc(n, sizeof(*fresh));
	if (!known || !fresh) {
		free(known);
		free(fresh);
		return ENOMEM;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		const struct simple_file *sf = i < page->nfiles ?
			&page->files[i] : &held->files[i - page->nfiles];

		file_version(sf, v);
		if (!v[0])
			continue;
		rc = db_file_get(w->db, ix->name, sf->sha256, sf->filename,
				 &row);
		if (rc == 0 && !has_version(known, nknown, v))
			snprintf(known[nknown++], sizeof(*known), "%s", v);
		else if (rc == ENOENT && !has_version(fresh, nnew, v))
			snprintf(fresh[nnew++], sizeof(*fresh), "%s", v);
		if (rc == ENOENT)
			rc = 0;
	}
	for (size_t i = 0; i < nnew && !rc; i++)
		if (!has_version(known, nknown, fresh[i]))
			rc = webhook_enqueue(w->db, w->conf, "new-release", 0,
					     ix->name, project, fresh[i], NULL);
	free(known);
	free(fresh);
	return rc;
}

/* events_denied (events.h) */
int events_denied(struct worker *w, const struct conf_index *ix,
		  const char *project, const struct simple_file *sf,
		  const char *reason)
{
	char version[DISTNAME_VERSION_MAX];
	struct db_file row;
	struct buf data;
	int rc;

	if (!webhook_wanted(w->conf, "policy-denied"))
		return 0;
	rc = db_file_get(w->db, ix->name, sf->sha256, sf->filename, &row);
	if (rc == 0 && !strcmp(row.denied, reason))
		return 0;
	if (rc && rc != ENOENT)
		return rc;
	file_version(sf, version);
	buf_init(&data, 1 << 16);
	rc = buf_adds(&data, "{\"filename\":");
	rc = rc ? rc : json_put_string(&data, sf->filename);
	rc = rc ? rc : buf_addf(&data, ",\"sha256\":\"%s\",\"reason\":",
				sf->sha256);
	rc = rc ? rc : json_put_string(&data, reason);
	rc = rc ? rc : buf_adds(&data, "}");
	rc = rc ? rc : webhook_enqueue(w->db, w->conf, "policy-denied", 0,
				       ix->name, project, version, data.data);
	buf_free(&data);
	return rc;
}
